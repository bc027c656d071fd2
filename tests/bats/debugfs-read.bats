#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# r4debugfs: raw structures against debugfs.reiser4 (the oracle), objects
# against the source trees r4ref (libreiser4) copied in, and the
# read-only guarantee.

load helpers

UUID=01234567-89ab-cdef-0123-456789abcdef

# A field of r4debugfs's 'print super' (first occurrence).
ours_field() {
	r4debugfs -R 'print super' "$1" | sed -n "s/^  $2:[[:space:]]*//p" |
		head -n 1
}

# Fail unless the image's bytes are what they were at 'remember'.
remember() { sha256sum "$1" > "$T/sum"; }
unchanged() { sha256sum -c --quiet "$T/sum"; }

# The object commands need the read path (r4/read.h), which is built:
# r4debugfs saying it is not implemented is a failure.
need_read_path() {
	run r4debugfs -R 'ls /' "$1"
	if [[ "$output" == *"not implemented"* ]]; then
		echo "r4debugfs: the object read path is not implemented: $output"
		return 1
	fi
}

# A source tree with every kind of object r4ref can copy.
make_src() {
	local s=$1
	mkdir -p "$s/dir/sub/deeper" "$s/empty" "$s/other"
	printf 'hello\n' > "$s/a.txt"
	: > "$s/zero"
	head -c 1 /dev/urandom > "$s/one"
	head -c 4095 /dev/urandom > "$s/dir/f4095"
	head -c 4096 /dev/urandom > "$s/dir/f4096"
	head -c 4097 /dev/urandom > "$s/dir/f4097"
	head -c 16385 /dev/urandom > "$s/dir/sub/f16385"
	head -c 200000 /dev/urandom > "$s/big.bin"
	printf 'tab' > "$s/with$(printf '\t')tab"
	printf 'long' > "$s/dir/$(printf 'n%.0s' $(seq 1 200))"
	ln -s a.txt "$s/rel-link"
	ln -s /nonexistent/target "$s/dir/abs-link"
	ln -s ../../a.txt "$s/dir/sub/up-link"
	ln -s dir "$s/dir-link"
	ln "$s/a.txt" "$s/dir/hard1"
	ln "$s/a.txt" "$s/other/hard2"
	mkfifo "$s/fifo"
	chmod 4755 "$s/dir/f4095"
	chmod 1777 "$s/other"
	chmod 0700 "$s/dir/sub/deeper"
	touch -d '2001-02-03 04:05:06' "$s/a.txt" "$s/dir/sub"
	if [ "$(id -u)" = 0 ]; then
		mknod "$s/tty" c 4 64
		mknod "$s/disk" b 8 1
		chown 1234:5678 "$s/one"
		chown -h 42:43 "$s/rel-link"
	fi
	touch -d '2010-01-01 00:00:00' "$s/dir"
}

# An r4ref-made volume of make_src's tree (tails only: fsck-clean).
make_ref_volume() {
	need_r4ref
	make_src "$T/src"
	truncate -s 64M "$T/ref.img"
	r4ref mkfs -o formatting=tails -U $UUID "$T/ref.img" "$T/src"
}

# Every regular file under $1 has the same bytes under $2.
same_content() {
	(cd "$1" && find . -type f -print0) |
	while IFS= read -r -d '' f; do
		cmp "$1/$f" "$2/$f" || return 1
	done
}

@test "r4debugfs --help and --version" {
	run r4debugfs --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"--request"* ]]
	[[ "$output" == *"--json"* ]]
	run r4debugfs --version
	[ "$status" -eq 0 ]
	[[ "$output" == *"r4kit"* ]]
}

@test "usage errors exit 2, an image that cannot be opened 8" {
	run r4debugfs
	[ "$status" -eq 2 ]
	run r4debugfs --no-such-option x.img
	[ "$status" -eq 2 ]
	run r4debugfs -R 'print super' "$T/missing.img"
	[ "$status" -eq 8 ]
	[[ "$output" == *"missing.img"* ]]
	truncate -s 1M "$T/zeros.img"
	run r4debugfs -R 'print super' "$T/zeros.img"
	[ "$status" -eq 8 ]
	[[ "$output" == *"zeros.img"* ]]
}

@test "-w with only read commands leaves the image byte-identical" {
	r4mkfs -q "$T/v.img" 64M
	remember "$T/v.img"
	run r4debugfs -w -R 'print super' -R 'ls -l /' "$T/v.img"
	[ "$status" -eq 0 ]
	[[ "$output" == *"ReIsEr4"* ]]
	unchanged
}

@test "print super on an r4mkfs volume matches debugfs.reiser4 -s" {
	need_oracle
	r4mkfs -q -L mylabel -U $UUID "$T/v.img" 256M
	remember "$T/v.img"
	run r4debugfs -R 'print super' "$T/v.img"
	[ "$status" -eq 0 ]
	for f in label uuid blocks 'free blocks' 'root block' 'tree height' \
		 'key policy'; do
		[ "$(ours_field "$T/v.img" "$f")" = "$(oracle_field "$T/v.img" "$f")" ]
	done
	[ "$(ours_field "$T/v.img" label)" = mylabel ]
	[ "$(ours_field "$T/v.img" uuid)" = $UUID ]
	[ "$(ours_field "$T/v.img" 'key policy')" = LARGE ]
	[[ "$output" == *"status:         0x0 (consistent)"* ]]
	[[ "$output" =~ backups:\ +([0-9]+)\ \(first\ at\ block\ 22\),\ ([0-9]+)\ match ]]
	[ "${BASH_REMATCH[1]}" -ge 1 ]
	[ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ]
	unchanged
}

@test "print super on mkfs.reiser4 volumes (large and short keys, node41)" {
	need_oracle
	truncate -s 1G "$T/m.img"
	mkfs.reiser4 -f -y -L progs -U $UUID -o node=node41 "$T/m.img" >/dev/null 2>&1
	remember "$T/m.img"
	for f in label uuid blocks 'free blocks' 'root block' 'tree height' \
		 'key policy'; do
		[ "$(ours_field "$T/m.img" "$f")" = "$(oracle_field "$T/m.img" "$f")" ]
	done
	[ "$(ours_field "$T/m.img" 'node plugin')" = "1 (node41)" ]
	unchanged
	r4mkfs -q -o key=key_short "$T/s.img" 64M
	[ "$(ours_field "$T/s.img" 'key policy')" = SHORT ]
	[ "$(ours_field "$T/s.img" 'key policy')" = "$(oracle_field "$T/s.img" 'key policy')" ]
}

@test "print super --json" {
	command -v python3 >/dev/null || skip "python3 not installed"
	r4mkfs -q -L js -U $UUID "$T/v.img" 64M
	run r4debugfs --json -R 'print super' "$T/v.img"
	[ "$status" -eq 0 ]
	python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["label"]=="js" and d["uuid"]==sys.argv[2] and d["blocks"]==16384 and d["root_block"]==23 and d["key_policy"]=="large", d' "$output" $UUID
}

@test "print node 23 and 24 of a fresh volume" {
	r4mkfs -q -U $UUID "$T/v.img" 64M
	remember "$T/v.img"
	run r4debugfs -R 'print node 23' "$T/v.img"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "node 23: node40, level 2, 1 items,"* ]]
	[[ "${lines[1]}" == "#0 nodeptr40 (3) [29:1:0:2a:0] offset 28 len 8"* ]]
	[ "${lines[2]}" = "    child 24" ]
	run r4debugfs -R 'print node 24' "$T/v.img"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "node 24: node40, level 1, 2 items,"* ]]
	[[ "$output" == *"#0 stat40 (0) [29:1:0:2a:0]"* ]]
	[[ "$output" == *"mode 0040755 (drwxr-xr-x), nlink 3, size 2"* ]]
	[[ "$output" == *"plugin set: "*"hash=1"*"fibration=2"* ]]
	[[ "$output" == *"#1 cde40 (2) [2a:0:0:0:0]"* ]]
	[[ "$output" == *'[0] "." -> [29:1:0:2a:0]'* ]]
	[[ "$output" == *'[1] ".." -> [29:1:0:2a:0]'* ]]
	unchanged
}

@test "bad block numbers: one-line error, exit 1" {
	r4mkfs -q "$T/v.img" 64M
	remember "$T/v.img"
	run r4debugfs -R 'print node 16384' "$T/v.img"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"block 16384 is outside the volume (16384 blocks)"* ]]
	run r4debugfs -R 'print node twelve' "$T/v.img"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"'twelve' is not a block number"* ]]
	run r4debugfs -R 'print node 5' "$T/v.img"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"block 5 is not a formatted node"* ]]
	run r4debugfs -R 'no-such-command' "$T/v.img"
	[ "$status" -eq 1 ]
	unchanged
}

@test "print tree visits the nodes debugfs.reiser4 -t prints" {
	need_oracle
	make_ref_volume
	remember "$T/ref.img"
	run r4debugfs -R 'print tree' "$T/ref.img"
	[ "$status" -eq 0 ]
	# Parents first: the root is the first node printed.
	[[ "${lines[0]}" == "node 23: "* ]]
	diff <(oracle debugfs.reiser4 -f -t "$T/ref.img" 2>/dev/null |
		sed -n 's/^NODE (\([0-9]*\)).*/\1/p' | sort -n) \
	     <(sed -n 's/^node \([0-9]*\):.*/\1/p' <<<"$output" | sort -n)
	[[ "$output" == *"tail"* || "$output" == *"plain40"* ]]
	unchanged
}

@test "print tree stops on a cycle and names the block" {
	r4mkfs -q "$T/v.img" 64M
	# Node 23's only pointer now points at node 23 itself.
	printf '\027\0\0\0\0\0\0\0' |
		dd of="$T/v.img" bs=1 seek=$((23 * 4096 + 28)) conv=notrunc 2>/dev/null
	run r4debugfs -R 'print tree' "$T/v.img"
	[ "$status" -eq 1 ]
	[[ "$output" == *"block 23: reached twice"* ]]
}

@test "print journal and print bitmap" {
	r4mkfs -q "$T/v.img" 64M
	remember "$T/v.img"
	run r4debugfs -R 'print journal' "$T/v.img"
	[ "$status" -eq 0 ]
	[[ "$output" == *"last committed tx 0"* ]]
	[[ "$output" == *"no transactions to replay"* ]]
	run r4debugfs -R 'print bitmap' "$T/v.img"
	[ "$status" -eq 0 ]
	free=$(ours_field "$T/v.img" 'free blocks')
	[[ "$output" == *"region 0 (bitmap block 18): blocks 0-16383, used $((16384 - free)), free $free, checksum ok"* ]]
	[[ "$output" == *"  used: 0-24"* ]]
	run r4debugfs -R 'print bitmap 1' "$T/v.img"
	[ "$status" -eq 1 ]
	# A flipped bit is a bad checksum.
	printf '\377' | dd of="$T/v.img" bs=1 seek=$((18 * 4096 + 1000)) conv=notrunc 2>/dev/null
	run r4debugfs -R 'print bitmap 0' "$T/v.img"
	[ "$status" -eq 1 ]
	[[ "$output" == *"checksum bad"* ]]
}

@test "print journal follows tx heads and wander records" {
	command -v python3 >/dev/null || skip "python3 not installed"
	r4mkfs -q "$T/v.img" 64M
	# One committed, unflushed transaction: tx head 100, wander record
	# 101 saying block 24's new copy is at 102; then a loop 101 -> 101.
	python3 - "$T/v.img" <<'EOF2'
import struct, sys
f = open(sys.argv[1], 'r+b')
def put(blk, data):
    f.seek(blk * 4096); f.write(data)
put(100, b'TxMagic4' + struct.pack('<QIIQQQQQ', 0, 2, 0, 0, 101, 16000, 1, 0x10000))
put(101, b'LogMagc4' + struct.pack('<QIIQ', 0, 2, 1, 100) + struct.pack('<QQ', 24, 102))
put(19, struct.pack('<Q', 100))
EOF2
	remember "$T/v.img"
	run r4debugfs -R 'print journal' "$T/v.img"
	[ "$status" -eq 0 ]
	[[ "$output" == *"last committed tx 100"* ]]
	[[ "$output" == *"tx head (block 100): total 2, prev 0, first record 101"* ]]
	[[ "$output" == *"wander record 1 (block 101): total 2, serial 1, next 100, 1 pairs"* ]]
	[[ "$output" == *"102 -> 24"* ]]
	unchanged
	printf '\145\0\0\0\0\0\0\0' |
		dd of="$T/v.img" bs=1 seek=$((101 * 4096 + 24)) conv=notrunc 2>/dev/null
	run r4debugfs -R 'print journal' "$T/v.img"
	[ "$status" -eq 1 ]
	[[ "$output" == *"tx head 100: wander record chain does not come back"* ]]
}

@test "-f runs a command file; stdin works without a terminal" {
	r4mkfs -q "$T/v.img" 64M
	printf '# a comment\nprint node 23\n\nhelp\n' > "$T/cmds"
	run r4debugfs -f "$T/cmds" "$T/v.img"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "r4debugfs: print node 23" ]
	[[ "$output" == *"child 24"* ]]
	[[ "$output" == *"r4debugfs: help"*"print super"* ]]
	printf 'print node 999999\nprint node 23\n' > "$T/bad"
	run r4debugfs -f "$T/bad" "$T/v.img"
	[ "$status" -eq 1 ]
	[[ "$output" == *"child 24"* ]]
	run r4debugfs "$T/v.img" < "$T/cmds"
	[ "$status" -eq 0 ]
	[[ "$output" == *"child 24"* ]]
}

@test "ls, stat and cat on an r4ref volume" {
	make_ref_volume
	need_read_path "$T/ref.img"
	remember "$T/ref.img"
	run r4debugfs -R 'ls /' "$T/ref.img"
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "${lines[@]}" | grep -v '^\.\.\?$' | sort) \
	     <(ls -A "$T/src" | sed 's/\t/\\x09/' | sort)
	run r4debugfs -R 'ls -l /rel-link' "$T/ref.img"
	[[ "$output" == lrwxrwxrwx*" rel-link -> a.txt" ]] || [[ "$output" == lrwxrwxrwx*"/rel-link -> a.txt" ]]
	run r4debugfs -R 'stat /a.txt' "$T/ref.img"
	[ "$status" -eq 0 ]
	[[ "$output" == *"plugin:      reg40"* ]]
	[[ "$output" == *"nlink:       3"* ]]
	[[ "$output" == *"size:        6"* ]]
	[[ "$output" == *"mtime:       981173106."* ]]
	r4debugfs -R 'cat /big.bin' "$T/ref.img" | cmp - "$T/src/big.bin"
	r4debugfs -R 'cat /zero' "$T/ref.img" | cmp - "$T/src/zero"
	run r4debugfs -R 'cat /dir' "$T/ref.img"
	[ "$status" -eq 1 ]
	[[ "$output" == *"/dir: is a directory"* ]]
	run r4debugfs -R 'stat /no/such' "$T/ref.img"
	[ "$status" -eq 1 ]
	[[ "$output" == *"/no/such"* ]]
	unchanged
}

@test "rdump reproduces the source tree exactly" {
	make_ref_volume
	need_read_path "$T/ref.img"
	remember "$T/ref.img"
	mkdir "$T/out"
	r4debugfs -R 'rdump / '"$T/out" "$T/ref.img"
	diff <(oracle r4ref manifest-dir "$T/src") <(oracle r4ref manifest-dir "$T/out")
	same_content "$T/src" "$T/out"
	unchanged
	# A subtree lands under its own name; existing files are refused.
	mkdir "$T/sub"
	r4debugfs -R 'rdump /dir '"$T/sub" "$T/ref.img"
	diff <(oracle r4ref manifest-dir "$T/src/dir" | cut -f1-7,9-11) \
	     <(oracle r4ref manifest-dir "$T/sub/dir" | cut -f1-7,9-11)
	run r4debugfs -R 'rdump /dir '"$T/sub" "$T/ref.img"
	[ "$status" -eq 1 ]
	[[ "$output" == *"dir"* ]]
	unchanged
}

@test "dump, blocks, print file, icheck, ncheck" {
	make_ref_volume
	need_read_path "$T/ref.img"
	remember "$T/ref.img"
	r4debugfs -R "dump /dir/f4097 $T/f" "$T/ref.img"
	cmp "$T/f" "$T/src/dir/f4097"
	run r4debugfs -R "dump /dir/f4097 $T/f" "$T/ref.img"
	[ "$status" -eq 1 ]
	[[ "$output" == *"never overwrites"* ]]
	run r4debugfs -R 'blocks /big.bin' "$T/ref.img"
	[ "$status" -eq 0 ]
	[[ "$output" == *"file offset 0, "*" tail block "* ]]
	# A node in the middle of the file holds nothing else (icheck names
	# the object of a node's first item).
	blk=$(sed -n 's/.*tail block \([0-9]*\)$/\1/p' <<<"$output" | sed -n 5p)
	run r4debugfs -R "icheck $blk" "$T/ref.img"
	[ "$status" -eq 0 ]
	[[ "$output" == *"/big.bin"* ]]
	run r4debugfs -R 'print file /a.txt' "$T/ref.img"
	[ "$status" -eq 0 ]
	[[ "$output" == *"stat40"*"plain40"* ]]
	oid=$(r4debugfs -R 'stat /a.txt' "$T/ref.img" | sed -n 's/^object: *oid \(0x[0-9a-f]*\),.*/\1/p')
	run r4debugfs -R "ncheck $oid" "$T/ref.img"
	[ "$status" -eq 0 ]
	[[ "$output" == *"/a.txt"*"/dir/hard1"*"/other/hard2"* ]]
	unchanged
}

@test "--json for stat, ls, icheck and ncheck" {
	command -v python3 >/dev/null || skip "python3 not installed"
	make_ref_volume
	need_read_path "$T/ref.img"
	r4debugfs --json -R 'stat /a.txt' -R 'ls -l /' -R 'ls /dir' \
		-R 'icheck 23 16000' -R 'ncheck 42' "$T/ref.img" > "$T/j"
	python3 - "$T/j" <<'EOF'
import json, sys
v = [json.loads(l) for l in open(sys.argv[1])]
assert len(v) == 5, v
assert v[0]["size"] == 6 and v[0]["nlink"] == 3 and v[0]["plugin"] == "reg40"
names = {e["name"] for e in v[1]["entries"]}
assert "with\ttab" in names and "rel-link" in names, names
assert [e for e in v[1]["entries"] if e["name"] == "rel-link"][0]["target"] == "a.txt"
assert v[3]["blocks"][0]["block"] == 23 and v[3]["blocks"][1]["owner"] is None, v[3]
assert v[4]["objects"][0]["paths"] == ["/"], v[4]
EOF
}
