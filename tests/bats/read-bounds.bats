#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Work in proportion to the data, never to sizes, depths or chain
# lengths: holes, sizes past the body, deep paths, long journal chains.
# The bounds are the harness's (timeout, ulimit), never timings.

load helpers
. "$BATS_TEST_DIRNAME/../surgery.sh"

# bounded SECONDS CMD...: CMD under a time limit and a 1 GiB address
# space; the status is CMD's (124 when it ran out of time).
bounded() {
	local s=$1
	shift
	# The bound is CPU time (ulimit -t), which a loaded machine does not
	# stretch; the wall-clock timeout, ten times longer, only stops a
	# hang. AddressSanitizer reserves terabytes of address space for its
	# shadow and runs several times slower: under it the CPU bound is
	# doubled and the memory bound cannot stay.
	case "${R4_CFLAGS:-}${R4_LDFLAGS:-}" in
	*sanitize=address*)
		(ulimit -t "$((s * 2))" && exec timeout "$((s * 20))" "$@")
		return ;;
	esac
	(ulimit -v 1048576 -t "$s" && exec timeout "$((s * 10))" "$@")
}

# deep_tar OUT N: a pax tarball of one member "d/d/.../f" (N folders
# deep) holding "hi".
deep_tar() {
	python3 - "$1" "$2" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as t:
    i = tarfile.TarInfo("/".join(["d"] * int(sys.argv[2])) + "/f")
    i.size = 2
    t.addfile(i, io.BytesIO(b"hi"))
PY
}

# sparse_tar OUT NAME REALSIZE OFFSET DATA: a pax tarball holding one
# GNU sparse 1.0 member NAME of REALSIZE bytes whose only data is DATA
# at OFFSET (perl, which every Debian system has).
sparse_tar() {
	perl -e '
		my ($out, $name, $real, $off, $data) = @ARGV;
		sub hdr {
			my ($n, $size, $type) = @_;
			my $h = pack("a100 a8 a8 a8 a12 a12 a8 a1 a100 a6 a2 a32 a32 a8 a8 a155 a12",
				$n, "0000644", "0000000", "0000000",
				sprintf("%011o", $size), "00000000000", " " x 8,
				$type, "", "ustar", "00", "", "", "", "", "", "");
			substr($h, 148, 8) = sprintf("%06o\0 ", unpack("%32C*", $h));
			return $h;
		}
		sub pad { my $s = shift; $s . ("\0" x ((512 - length($s) % 512) % 512)) }
		sub rec {
			my $r = " $_[0]=$_[1]\n";
			my $l = length($r) + 1;
			$l = length($r) + length($l) while $l != length($r) + length($l);
			return "$l$r";
		}
		my $x = rec("GNU.sparse.major", 1) . rec("GNU.sparse.minor", 0) .
			rec("GNU.sparse.name", $name) .
			rec("GNU.sparse.realsize", $real);
		my $body = pad("1\n$off\n" . length($data) . "\n") . $data;
		open(my $f, ">", $out) or die "$out: $!";
		binmode $f;
		print $f hdr("PaxHeaders/$name", length($x), "x"), pad($x),
			hdr("GNUSparseFile.0/$name", length($body), "0"), pad($body),
			"\0" x 1024;
		close($f) or die "$out: $!";
	' "$@"
}

# ---- item 1: holes cost nothing ------------------------------------------

@test "a 2^50-byte sparse member packs, checks and extracts as a sparse member" {
	sparse_tar "$T/s.tar" big $((1 << 50)) $((1 << 40)) hello
	[ "$(tar -tvf "$T/s.tar" | awk '{ print $3 }')" = $((1 << 50)) ]
	run bounded 20 r4pack create "$T/s.tar" "$T/a.img"
	echo "$output"
	[ "$status" -eq 0 ]
	run bounded 20 r4fsck --check "$T/a.img"
	echo "$output"
	[ "$status" -eq 0 ]
	if command -v fsck.reiser4 >/dev/null; then
		oracle_fsck "$T/a.img"
	fi
	run bounded 20 r4pack extract "$T/a.img" "$T/out.tar"
	echo "$output"
	[ "$status" -eq 0 ]
	# a GNU sparse member: a few blocks of archive, not a pebibyte
	[ "$(stat -c %s "$T/out.tar")" -lt 65536 ]
	tar -tvf "$T/out.tar" | grep -q " $((1 << 50)) .*\./big$"
	# the data is where it was: pack the output again, read it back
	bounded 20 r4pack create "$T/out.tar" "$T/b.img"
	[ "$(r4debugfs -R 'stat /big' "$T/b.img" | awk '$1 == "size:" { print $2 }')" = $((1 << 50)) ]
	[ "$(r4debugfs -R 'blocks /big' "$T/b.img" | grep -c hole)" -ge 1 ]
}

@test "add, truncate, write, rdump and dump of 4 TiB sparse files stay small and quick" {
	r4mkfs -q "$T/a.img" 32M
	sparse_tar "$T/s.tar" d/big $((1 << 42)) $((1 << 40)) hello
	run bounded 20 r4pack add "$T/a.img" "$T/s.tar"
	echo "$output"
	[ "$status" -eq 0 ]
	run bounded 20 r4debugfs -w -R "truncate 8000000T /d/big" "$T/a.img"
	echo "$output"
	[ "$status" -eq 0 ]
	run bounded 20 r4debugfs -w -R "truncate 4T /d/big" "$T/a.img"
	[ "$status" -eq 0 ]
	truncate -s 1T "$T/host"
	printf 'tail' | dd of="$T/host" bs=1 seek=$(((1 << 40) - 4)) conv=notrunc status=none
	run bounded 20 r4debugfs -w -R "write $T/host /d/host" "$T/a.img"
	echo "$output"
	[ "$status" -eq 0 ]
	run bounded 20 r4fsck --check "$T/a.img"
	echo "$output"
	[ "$status" -eq 0 ]
	mkdir "$T/out"
	run bounded 20 r4debugfs -R "rdump /d $T/out" "$T/a.img"
	echo "$output"
	[ "$status" -eq 0 ]
	run bounded 20 r4debugfs -R "dump /d/host $T/host2" "$T/a.img"
	[ "$status" -eq 0 ]
	[ "$(stat -c %s "$T/out/d/big")" = $((1 << 42)) ]
	[ "$(stat -c %s "$T/host2")" = $((1 << 40)) ]
	# sparse output: kilobytes on disk, not terabytes
	[ "$(du -k "$T/out/d/big" | cut -f1)" -lt 1024 ]
	[ "$(du -k "$T/host2" | cut -f1)" -lt 1024 ]
	[ "$(dd if="$T/out/d/big" bs=1 skip=$((1 << 40)) count=5 status=none)" = hello ]
	[ "$(tail -c 4 "$T/host2")" = tail ]
	cmp <(head -c 1M "$T/out/d/host") /dev/zero -n 1M
}

# ---- item 2: sizes past the body -----------------------------------------

# A 100,000-byte file whose stat-data size is set to $1 (2^63 and
# 2^64 - 1 pass as their two's complement).
past_body() {
	local s=$T/src off
	mkdir -p "$s"
	head -c 100000 /dev/urandom >"$s/large"
	echo small >"$s/small"
	r4pack create -q "$s" "$T/p.img"
	off=$(sd_off "$T/p.img" /large)
	poke "$T/p.img" $((off + 8)) "$1" 8
	r4debugfs -R "stat /large" "$T/p.img" | grep -q "size: *$2$"
}

@test "sizes past the body: flagged by r4fsck, read errors naming the file" {
	local sz want
	for sz in 110000 $((1 << 40)) $((1 << 63)) -1; do
		want=$(printf '%u' "$sz")
		rm -rf "$T/src" "$T/out" "$T/o.tar" "$T/p.img"
		past_body "$sz" "$want"
		run bounded 20 r4fsck --check "$T/p.img"
		echo "$sz: $output"
		[ "$status" -eq 4 ]
		[[ "$output" == *"size $want is past the end of its body items (102400)"* ]]
		# No output of unbounded zeros: a file size limit of 10 MiB
		# and an error naming the file.
		run bash -c "ulimit -f 10240; exec timeout 20 r4pack extract '$T/p.img' '$T/o.tar'"
		echo "$output"
		[ "$status" -eq 1 ]
		[[ "$output" == *"./large: "*"size $want runs past the body"* ]]
		[ ! -e "$T/o.tar" ]
		mkdir "$T/out"
		run bash -c "ulimit -f 10240; exec timeout 20 r4debugfs -R 'rdump / $T/out' '$T/p.img'"
		echo "$output"
		[ "$status" -ne 0 ]
		[[ "$output" == *"large: "*"runs past the body"* ]]
		[ -f "$T/out/small" ]
		[ ! -e "$T/out/large" ]
		run bash -c "ulimit -f 10240; timeout 20 r4debugfs -R 'cat /large' '$T/p.img' | wc -c"
		echo "$output"
		[[ "$output" == *"/large: "*"runs past the body"* ]]
		[ "${lines[-1]}" = 0 ]
	done
}

# ---- item 3: no quadratic walks -------------------------------------------

# tx_chain IMAGE FIRST N: N tx heads at blocks FIRST.. (4 KiB blocks),
# each naming the next as its prev_tx and the last naming the first (a
# cycle); the journal header's last committed tx is the first.
tx_chain() {
	perl -e '
		my ($img, $first, $n) = @ARGV;
		open(my $f, "+<", $img) or die "$img: $!";
		binmode $f;
		for my $i (0 .. $n - 1) {
			my $b = $first + $i;
			my $prev = $i + 1 < $n ? $b + 1 : $first;
			seek($f, $b * 4096, 0) or die;
			print $f pack("a8 Q< L< L< Q< Q< Q<", "TxMagic4",
				      1000 + $i, 1, 0, $prev, $b, 0);
		}
		seek($f, 19 * 4096, 0) or die;
		print $f pack("Q<", $first);
		close($f) or die "$img: $!";
	' "$@"
}

@test "a chain of 20,000 tx heads ending in a cycle: named, in bounded memory" {
	r4mkfs -q "$T/c.img" 200M
	tx_chain "$T/c.img" 1000 20000
	run bounded 20 r4fsck --check "$T/c.img"
	echo "${lines[0]}"
	[ "$status" -eq 4 ]
	[[ "${lines[0]}" == *"journal: cycle in the prev_tx chain of tx heads (block 1000)"* ]]
	# every command opens the volume through the same chain walk
	run bounded 20 r4debugfs -R "ls /" "$T/c.img"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "ncheck of an object 600 folders deep gives its path (r4_walk has no depth limit)" {
	local p oid
	p=$(printf 'd/%.0s' $(seq 600))
	mkdir -p "$T/src/$p"
	echo deep >"$T/src/${p}f"
	r4pack create -q "$T/src" "$T/d.img"
	oid=$(r4debugfs -R "stat /${p}f" "$T/d.img" | awk '$1 == "object:" { sub(/,$/, "", $3); print $3 }')
	[ -n "$oid" ]
	run bounded 20 r4debugfs -R "ncheck $oid" "$T/d.img"
	[ "$status" -eq 0 ]
	[ "$output" = "$oid	/${p}f" ]
	# a shallow one still gets its path
	run r4debugfs -R "ncheck 0x10002" "$T/d.img"
	[ "$status" -eq 0 ]
	[[ "$output" == *"	/d/d/d"* ]]
}

@test "rdump of a chain 405 folders deep (r4_walk): 400 levels dumped, the one below said in one line, the other files dumped" {
	local p
	deep_tar "$T/deep.tar" 405
	printf 'x' >"$T/x"
	tar -C "$T" -rf "$T/deep.tar" x
	r4pack create -q "$T/deep.tar" "$T/deep.img"
	mkdir "$T/out"
	run bounded 20 r4debugfs -R "rdump / $T/out" "$T/deep.img"
	[ "$status" -eq 1 ]
	p=$(printf 'd/%.0s' $(seq 400))
	[ "${#lines[@]}" -eq 1 ]
	# (the message's end, past 512 bytes of path, is cut)
	[[ "${lines[0]}" == "r4debugfs: rdump: d/d/d/d/"* ]]
	[ -d "$T/out/$p" ]
	[ ! -e "$T/out/${p}d" ]
	[ "$(cat "$T/out/x")" = x ]
}

@test "r4debugfs -w rm -r of a chain 4,100 folders deep (past the old 4,096 guard; r4_walk): all removed, the volume clean" {
	deep_tar "$T/deep.tar" 4100
	printf 'x' >"$T/x"
	tar -C "$T" -rf "$T/deep.tar" x
	r4pack create -q "$T/deep.tar" "$T/deep.img"
	run bounded 60 r4debugfs -w -R "rm -r /d" "$T/deep.img"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(r4debugfs -R 'ls /' "$T/deep.img" | tr '\n' ' ')" = ". .. x " ]
	run r4fsck -n "$T/deep.img"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "ncheck, hash and bodyfile reach a file 5,000 folders deep (a 10 KB path), in bounded time and memory" {
	local oid want sum
	deep_tar "$T/deep.tar" 5000
	r4pack create -q "$T/deep.tar" "$T/deep.img"
	want=/$(printf 'd/%.0s' $(seq 5000))f
	oid=$(r4debugfs -R "stat $want" "$T/deep.img" | awk '$1 == "object:" { sub(/,$/, "", $3); print $3 }')
	[ -n "$oid" ]
	run bounded 30 r4debugfs -R "ncheck $oid" "$T/deep.img"
	[ "$status" -eq 0 ]
	[ "$output" = "$oid	$want" ]
	# the walk of hash and bodyfile stopped at 4,096 folders, silently
	sum=$(printf 'hi' | sha256sum | cut -d' ' -f1)
	run bounded 30 r4debugfs -R "hash /" "$T/deep.img"
	[ "$status" -eq 0 ]
	[ "${lines[${#lines[@]} - 1]}" = "$sum  $want" ]
	run bounded 30 r4debugfs -R "bodyfile /" "$T/deep.img"
	[ "$status" -eq 0 ]
	[[ "$output" == *"|$want|"* ]]
}

@test "a member 40,000 folders deep packs in time and memory in proportion to its path" {
	# one pax member whose path has 40,000 components (about 80 KB);
	# each prefix was walked from the root (a minute before the walk
	# cache kept every depth)
	deep_tar "$T/deep.tar" 40000
	run bounded 30 r4pack create -q "$T/deep.tar" "$T/deep.img"
	echo "$output"
	[ "$status" -eq 0 ]
	run bounded 60 r4fsck -n "$T/deep.img"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"40001 directories, 1 files"* ]]
}

@test "a member 9,000 folders deep extracts (past the old 8,192 limit) in linear time" {
	# the walk keeps a stack of directories instead of recursing, and
	# what each directory inherits is kept per directory on a read-only
	# handle instead of climbed to the root (8,300 deep: 102 s before)
	deep_tar "$T/deep.tar" 9000
	run bounded 30 r4pack create -q "$T/deep.tar" "$T/deep.img"
	echo "$output"
	[ "$status" -eq 0 ]
	rm -f "$T/deep.tar"
	run bounded 120 r4pack extract "$T/deep.img" "$T/out.tar"
	echo "${output:0:600}"
	[ "$status" -eq 0 ]
	run python3 - "$T/out.tar" <<'PY'
import sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    m = t.getmembers()
    f = m[-1]
    print(len(m), f.name.count("/"), t.extractfile(f).read())
PY
	echo "$output"
	[ "$output" = "9002 9001 b'hi'" ]
}
