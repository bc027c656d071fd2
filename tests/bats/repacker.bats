#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# r4repacker on an image aged by tests/age.sh (1,500 files, 20 rounds of
# r4pack add and r4debugfs -w): fragmentation before and after against
# measurefs.reiser4, content by manifest (ours and libreiser4's) and
# stat data (object ids, keys), fsck.reiser4 and r4fsck, idempotence,
# the time limit, the dry run, too little space.

load helpers

setup_file() {
	AGED=$BATS_FILE_TMPDIR/aged.img
	export AGED
	bash "$top_srcdir/tests/age.sh" "$AGED" >"$BATS_FILE_TMPDIR/age.log" 2>&1 ||
		{ cat "$BATS_FILE_TMPDIR/age.log"; return 1; }
}

# measurefs.reiser4's figure: mfrag -T|-D IMAGE, or mfrag -F PATH IMAGE.
mfrag() {
	measurefs.reiser4 -f -y "$@" 2>/dev/null | tail -n 1 | sed 's/.* //'
}

# A field of the JSON report: jfield SECTION FIELD (SECTION "" = top).
jfield() {
	python3 -c 'import json, sys
o = json.loads(sys.argv[1])
if sys.argv[2]:
    o = o[sys.argv[2]]
print(o[sys.argv[3]])' "$output" "$1" "$2"
}

# The stat data of every object (oid, key, plugin, fields), not where
# it is stored.
stats() {
	r4manifest "$1" | cut -f1 | sed 's/^/stat /' >"$T/stat.cmds"
	r4debugfs -f "$T/stat.cmds" "$1" | grep -v '^stat data:'
}

same_float() {	# same_float A B: |A - B| <= 1e-6
	awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; exit !(d <= 1e-6 && d >= -1e-6) }'
}

# An old and a new build are compared on one aged image (bench/repack.sh
# with R4_BENCH_OLD): tests/age.sh must give the same bytes on every run,
# wherever the image is (the files named their absolute path in their
# bytes; the UUID and the mkfs id were random).
@test "repack: tests/age.sh gives the same bytes wherever the image is" {
	mkdir -p "$T/x" "$T/y/z"
	bash "$top_srcdir/tests/age.sh" "$T/x/a.img" 311 3
	(cd "$T/y/z" && bash "$top_srcdir/tests/age.sh" b.img 311 3)
	cmp "$T/x/a.img" "$T/y/z/b.img"
}

@test "repack: the aged image is fragmented (measurefs.reiser4)" {
	need_oracle
	t=$(mfrag -T "$AGED")
	d=$(mfrag -D "$AGED")
	echo "T=$t D=$d"
	awk -v t="$t" -v d="$d" 'BEGIN { exit !(t > 0.1 && d > 0.05) }'
	oracle_fsck "$AGED"
}

@test "repack: the dry run reports measurefs's -T, -D and -F and changes nothing" {
	need_oracle
	cp "$AGED" "$T/a.img"
	sum=$(sha256sum <"$T/a.img")
	run r4repacker -n --json -F /d3 "$T/a.img"
	echo "$output"
	[ "$status" -eq 0 ]
	same_float "$(jfield before tree)" "$(mfrag -T "$T/a.img")"
	same_float "$(jfield before data)" "$(mfrag -D "$T/a.img")"
	same_float "$(jfield file fragmentation)" "$(mfrag -F /d3 "$T/a.img")"
	[ "$(jfield plan blocks_to_move)" -gt 0 ]
	[ "$(jfield "" outcome)" = planned ]
	# the worst file's figure is measurefs's -F of it
	p=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["worst"][0]["path"])' "$output")
	f=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["worst"][0]["fragmentation"])' "$output")
	same_float "$f" "$(mfrag -F "$p" "$T/a.img")"
	run r4repacker -n "$T/a.img"
	[ "$status" -eq 0 ]
	[[ "$output" == *"blocks to move"* ]]
	[ "$(sha256sum <"$T/a.img")" = "$sum" ]
}

@test "repack: a full run packs the aged image, content unchanged, both checkers clean" {
	need_oracle; need_r4ref
	cp "$AGED" "$T/a.img"
	r4ref manifest "$T/a.img" >"$T/ref.before"
	r4manifest "$T/a.img" >"$T/our.before"
	stats "$T/a.img" >"$T/stat.before"
	run r4repacker --json "$T/a.img"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(jfield "" outcome)" = packed ]
	# the schedule is deterministic: these moves, no others (a change
	# to the scheduler that changes them must say so here)
	[ "$(jfield "" blocks_moved)" -eq 5602 ]
	[ "$(jfield "" blocks_evicted)" -eq 524 ]
	[ "$(jfield "" transactions)" -eq 22 ]
	[ "$(mfrag -T "$T/a.img")" = 0.000000 ]
	[ "$(mfrag -D "$T/a.img")" = 0.000000 ]
	same_float "$(jfield after tree)" 0
	oracle_fsck "$T/a.img"
	run r4fsck --check "$T/a.img"
	echo "$output"
	[ "$status" -eq 0 ]
	r4ref manifest "$T/a.img" | diff "$T/ref.before" -
	r4manifest "$T/a.img" | diff "$T/our.before" -
	stats "$T/a.img" | diff "$T/stat.before" -
	# the same figures as r4pack create of the same content
	mkdir "$T/tree"
	r4debugfs -R "rdump / $T/tree" "$T/a.img" >/dev/null
	r4pack create -q "$T/tree" "$T/c.img"
	[ "$(mfrag -T "$T/c.img")" = "$(mfrag -T "$T/a.img")" ]
	[ "$(mfrag -D "$T/c.img")" = "$(mfrag -D "$T/a.img")" ]
}

@test "repack: a packed volume is left byte for byte alone (exit 0, nothing to do)" {
	cp "$AGED" "$T/a.img"
	r4repacker -q "$T/a.img"
	sum=$(sha256sum <"$T/a.img")
	run r4repacker "$T/a.img"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"nothing to do"* ]]
	[ "$(sha256sum <"$T/a.img")" = "$sum" ]
	# and so is what r4pack create just made
	mkdir "$T/tree"
	r4debugfs -R "rdump / $T/tree" "$T/a.img" >/dev/null
	r4pack create -q "$T/tree" "$T/c.img"
	sum=$(sha256sum <"$T/c.img")
	run r4repacker "$T/c.img"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"nothing to do"* ]]
	[ "$(sha256sum <"$T/c.img")" = "$sum" ]
}

@test "repack: --time-limit 0 stops after each batch (exit 3); the runs end as one run does" {
	cp "$AGED" "$T/one.img"
	cp "$AGED" "$T/k.img"
	run r4repacker --json --batch 1024 "$T/one.img"
	[ "$status" -eq 0 ]
	one=$(jfield "" blocks_moved)
	total=0 runs=0
	while :; do
		run r4repacker --json --batch 1024 --time-limit 0 "$T/k.img"
		runs=$((runs + 1))
		[ "$status" -eq 0 ] || [ "$status" -eq 3 ]
		total=$((total + $(jfield "" blocks_moved)))
		[ "$status" -eq 0 ] && break
		[ "$(jfield "" transactions)" -eq 1 ]
		[ "$runs" -lt 1000 ]
	done
	echo "one run moved $one blocks; $runs runs moved $total"
	[ "$runs" -gt 2 ]
	[ "$total" -le $((one * 105 / 100)) ]
	r4manifest "$T/one.img" >"$T/m1"
	r4manifest "$T/k.img" | diff "$T/m1" -
	# the same layout: every block of every file at the same place
	r4manifest "$T/one.img" | awk -F'\t' '$2 == "f" { print "blocks " $1 }' >"$T/b.cmds"
	diff <(r4debugfs -f "$T/b.cmds" "$T/one.img") \
		<(r4debugfs -f "$T/b.cmds" "$T/k.img")
	[ "$(r4debugfs -R 'print super' "$T/one.img" | grep -i 'root')" = \
	  "$(r4debugfs -R 'print super' "$T/k.img" | grep -i 'root')" ]
}

@test "repack: a run cut by a power loss is finished by the next run" {
	cp "$AGED" "$T/one.img"
	cp "$AGED" "$T/cut.img"
	r4repacker -q --batch 128 "$T/one.img"
	R4_FAULT=cut-after=700 "$top_builddir/tests/crash/bin/r4repacker" -q --batch 128 "$T/cut.img" || true
	run r4fsck --check "$T/cut.img"
	echo "$output"
	# clean, or a committed batch left to replay and nothing else (a
	# batch that moved the root: --check says the kernel's replay would
	# lose the root pointer; the next run replays it itself)
	[ "$status" -eq 0 ] || {
		[ "$status" -eq 4 ] &&
		[[ "$output" == *"1 committed transaction not replayed"* ]] &&
		[[ "$output" == *": 1 problem found"* ]]
	}
	run r4repacker --batch 128 "$T/cut.img"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *packed* ]]
	r4manifest "$T/one.img" >"$T/m1"
	r4manifest "$T/cut.img" | diff "$T/m1" -
	r4manifest "$T/one.img" | awk -F'\t' '$2 == "f" { print "blocks " $1 }' >"$T/b.cmds"
	diff <(r4debugfs -f "$T/b.cmds" "$T/one.img") \
		<(r4debugfs -f "$T/b.cmds" "$T/cut.img")
}

@test "repack: with little free space, small batches slide into it" {
	need_oracle
	cp "$AGED" "$T/a.img"
	free=$(r4repacker -n --json "$T/a.img" | grep '"plan"' |
		sed 's/.*"free_blocks":\([0-9]*\).*/\1/')
	# leave about 500 free blocks
	head -c $(( (free - 500) * 4096 )) /dev/zero >"$T/fill"
	r4debugfs -w -R "write $T/fill /fill" "$T/a.img" >/dev/null
	run r4repacker --batch 128 "$T/a.img"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(mfrag -T "$T/a.img")" = 0.000000 ]
	[ "$(mfrag -D "$T/a.img")" = 0.000000 ]
	oracle_fsck "$T/a.img"
}

# A nearly full volume: the aged image's free space filled with 20-200 KB
# files of noise by r4pack add (into the holes and past them), 600 blocks
# left free; every block of the tree is out of place. Elements parked
# short of their own targets were pushed ahead of the frontier again and
# again, and units cut to make room split twigs, which shifts every
# target after the upper nodes: 333,923 blocks moved for 24,057 out of
# place (13.9x) in 8,912 transactions. Each block must move about once.
@test "repack: a nearly full volume: blocks moved stay within 2x the blocks out of place" {
	cp "$AGED" "$T/a.img"
	free=$(r4repacker -n --json "$T/a.img" | grep '"plan"' |
		sed 's/.*"free_blocks":\([0-9]*\).*/\1/')
	mkdir -p "$T/fill/a"
	python3 "$top_srcdir/tests/noise.py" "$T/fill/a" $(( (free - 600) * 4096 ))
	r4pack add -q "$T/a.img" "$T/fill"
	r4manifest "$T/a.img" >"$T/m1"
	run r4repacker --json "$T/a.img"
	echo "$output"
	[ "$status" -eq 0 ]
	out=$(jfield plan blocks_to_move)
	moved=$(jfield "" blocks_moved)
	echo "out of place $out, moved $moved"
	[ "$out" -gt 20000 ]
	[ "$moved" -le $((2 * out)) ]
	r4manifest "$T/a.img" | diff "$T/m1" -
	r4fsck --check -q "$T/a.img"
	run r4repacker -n --json "$T/a.img"
	[ "$(jfield plan blocks_to_move)" -eq 0 ]
}

# The same volume in batches of 32 blocks: wide units are cut to fit a
# batch, which changes the tree's shape (the levels' node counts the
# targets follow are walked again after such a batch), and the run must
# still end packed.
@test "repack: a nearly full volume in batches of 32 blocks ends packed, content unchanged" {
	cp "$AGED" "$T/a.img"
	free=$(r4repacker -n --json "$T/a.img" | grep '"plan"' |
		sed 's/.*"free_blocks":\([0-9]*\).*/\1/')
	[ "$free" -gt 600 ]
	mkdir -p "$T/fill/a"
	python3 "$top_srcdir/tests/noise.py" "$T/fill/a" $(( (free - 600) * 4096 ))
	r4pack add -q "$T/a.img" "$T/fill"
	r4manifest "$T/a.img" >"$T/m1"
	run r4repacker -q --batch 32 "$T/a.img"
	echo "$output"
	[ "$status" -eq 0 ]
	r4manifest "$T/a.img" | diff "$T/m1" -
	r4fsck --check -q "$T/a.img"
	run r4repacker -n --json "$T/a.img"
	[ "$(jfield plan blocks_to_move)" -eq 0 ]
}

@test "repack: too little free space is refused up front, nothing written" {
	cp "$AGED" "$T/a.img"
	free=$(r4repacker -n --json "$T/a.img" | grep '"plan"' |
		sed 's/.*"free_blocks":\([0-9]*\).*/\1/')
	# noise: on this volume (root create=ccreg40) zeros would be compressed
	head -c $(( (free - 40) * 4096 )) /dev/urandom >"$T/fill"
	r4debugfs -w -R "write $T/fill /fill" "$T/a.img" >/dev/null
	sum=$(sha256sum <"$T/a.img")
	run r4repacker "$T/a.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"free blocks"*"nothing was changed"* ]]
	[ "$(sha256sum <"$T/a.img")" = "$sum" ]
}

# The cron form (-q) must refuse what the plain run and -n refuse: every
# mode checks the volume as r4fsck -n does before anything is moved.
@test "repack: a damaged volume is refused alike by -n, the plain run, -q and --json; nothing written" {
	. "$top_srcdir/tests/surgery.sh"
	cp "$AGED" "$T/a.img"
	poke "$T/a.img" "$(sd_off "$T/a.img" /d7)" $((0xffff)) 2	# sd mask
	run r4fsck -n "$T/a.img"
	[ "$status" -eq 4 ]
	sum=$(sha256sum <"$T/a.img")
	for mode in -n "" -q --json "-q --batch 64"; do
		# shellcheck disable=SC2086
		run r4repacker $mode "$T/a.img"
		echo "[$mode] $output"
		[ "$status" -eq 1 ]
		[[ "$output" == *"problems found"*"not repacked; run r4fsck"* ]]
		[ "$(sha256sum <"$T/a.img")" = "$sum" ]
	done
}

# A batch whose moves, log and room out of the window cannot fit the
# free space is cut to what fits (the window of a larger one covers the
# free space: every run failed); the answer says so, text and --json.
@test "repack: --batch larger than the free space allows is cut to what fits and said; the run finishes" {
	cp "$AGED" "$T/a.img"
	r4repacker -q "$T/a.img"
	printf 'rm -r /r4\n' >"$T/cmds"
	for i in $(seq 1 30); do
		head -c $((i * 1000)) /dev/urandom >"$T/n$i"
		echo "write $T/n$i /d1/new$i" >>"$T/cmds"
	done
	r4debugfs -w -f "$T/cmds" "$T/a.img" >/dev/null
	free=$(r4repacker -n --json "$T/a.img" | grep '"plan"' |
		sed 's/.*"free_blocks":\([0-9]*\).*/\1/')
	head -c $(( (free - 3714) * 4096 )) /dev/urandom >"$T/fill"
	r4debugfs -w -R "write $T/fill /fill" "$T/a.img" >/dev/null
	r4manifest "$T/a.img" >"$T/m1"
	run r4repacker -n --json --batch 2500 "$T/a.img"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *'"free_blocks":3714,'*'"batch_asked":2500,"batch":1851,"batch_cut":true,"enough_space":true'* ]]
	run r4repacker -n --batch 2500 "$T/a.img"
	[[ "$output" == *"batch of 2500 blocks cut to 1851: 3714 free blocks hold no larger batch"* ]]
	run r4repacker --batch 2500 "$T/a.img"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"cut to 1851"*"packed: moved"* ]]
	run r4repacker --batch 2500 "$T/a.img"
	[[ "$output" == *"nothing to do"* ]]
	r4manifest "$T/a.img" | diff "$T/m1" -
	run r4fsck -n "$T/a.img"
	[ "$status" -eq 0 ]
}

# A full volume (auto-sized, no free space left): the dry run reports
# and exits 0; a real run is refused up front saying how much it needs.
@test "repack: a full volume: the dry run reports, the run says how much free space it needs" {
	mkdir -p "$T/src"
	for i in $(seq 1 200); do head -c $((i * 700)) /dev/urandom >"$T/src/f$i"; done
	mkdir -p "$T/add"
	echo hi >"$T/add/x"
	tar -cf "$T/t.tar" -C "$T" src
	tar -cf "$T/a.tar" -C "$T" add
	# a fresh create has nothing to move (from a pipe too); one add
	# onto it, with the few blocks left, puts its leaf out of order
	r4pack create -q --free 0 - "$T/a.img" <"$T/t.tar"
	r4pack add -q "$T/a.img" "$T/a.tar"
	run r4repacker -n "$T/a.img"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"too little free space: "*" free blocks, a batch of 64 blocks and its log need up to "*" more; r4resize can grow the volume): a run would be refused"* ]]
	run r4repacker -n --json "$T/a.img"
	[ "$status" -eq 0 ]
	[[ "$output" == *'"enough_space":false'* ]]
	sum=$(sha256sum <"$T/a.img")
	for mode in "" -q; do
		# shellcheck disable=SC2086
		run r4repacker $mode "$T/a.img"
		echo "$output"
		[ "$status" -eq 1 ]
		[[ "$output" == *"free blocks, a batch of 64 blocks and its log need up to "*" more): nothing was changed; r4resize can grow"* ]]
		[ "$(sha256sum <"$T/a.img")" = "$sum" ]
	done
}

@test "repack: --min-gain above the gain writes nothing" {
	cp "$AGED" "$T/a.img"
	sum=$(sha256sum <"$T/a.img")
	run r4repacker --min-gain 1 "$T/a.img"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"below --min-gain"* ]]
	[ "$(sha256sum <"$T/a.img")" = "$sum" ]
}

@test "repack: a mounted image is refused, nothing written (test build, a made-up mount table)" {
	cp "$AGED" "$T/a.img"
	sum=$(sha256sum <"$T/a.img")
	# a loop device backed by the image, mounted on $T/mnt
	mkdir -p "$T/sys/loop7/loop" "$T/sys/ram0"
	realpath "$T/a.img" >"$T/sys/loop7/loop/backing_file"
	echo 7:7 >"$T/sys/loop7/dev"
	echo 1:0 >"$T/sys/ram0/dev"
	printf '22 1 0:21 / /proc rw - proc proc rw\n' >"$T/free"
	cat "$T/free" >"$T/mounted"
	printf '36 25 7:7 / %s/mnt rw,relatime - reiser4 /dev/loop7 rw\n' \
		"$T" >>"$T/mounted"
	rp="$top_builddir/tests/crash/bin/r4repacker"
	for opt in "" -n --json "--time-limit 0"; do
		R4_MOUNTINFO="$T/mounted" R4_SYSBLOCK="$T/sys" run "$rp" $opt "$T/a.img"
		echo "$opt: $output"
		[ "$status" -eq 75 ]
		[[ "$output" == *"in use: it is mounted on $T/mnt"* ]]
		[ "$(sha256sum <"$T/a.img")" = "$sum" ]
	done
	# attached to the loop device but not mounted: -n reads it, a
	# repack is refused (whoever uses the device may write it)
	R4_MOUNTINFO="$T/free" R4_SYSBLOCK="$T/sys" run "$rp" -n "$T/a.img"
	echo "$output"
	[ "$status" -eq 0 ]
	R4_MOUNTINFO="$T/free" R4_SYSBLOCK="$T/sys" run "$rp" -q "$T/a.img"
	echo "$output"
	[ "$status" -eq 75 ]
	[[ "$output" == *"$T/a.img: in use: attached to the loop device /dev/loop7"* ]]
	[ "$(sha256sum <"$T/a.img")" = "$sum" ]
	# detached: repacked
	rm -r "$T/sys/loop7/loop"
	R4_MOUNTINFO="$T/free" R4_SYSBLOCK="$T/sys" run "$rp" -q "$T/a.img"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(sha256sum <"$T/a.img")" != "$sum" ]
	r4fsck --check -q "$T/a.img"
	# the installed command reads the real table, never these variables
	cp "$AGED" "$T/b.img"
	mkdir "$T/sys/loop7/loop"
	realpath "$T/b.img" >"$T/sys/loop7/loop/backing_file"
	R4_MOUNTINFO="$T/mounted" R4_SYSBLOCK="$T/sys" run r4repacker -q "$T/b.img"
	[ "$status" -eq 0 ]
}

@test "repack: the image behind a mounted loop device, and that device, are refused (the real mount table)" {
	[ "$(id -u)" -eq 0 ] || skip "needs root to attach a loop device"
	command -v losetup >/dev/null && command -v mkfs.ext2 >/dev/null ||
		skip "needs losetup and mkfs.ext2"
	# no kernel here mounts Reiser4: an ext2 volume is mounted, and the
	# refusal must come before the repacker looks for a Reiser4 one
	truncate -s 8M "$T/ext.img"
	mkfs.ext2 -q -F "$T/ext.img"
	mkdir "$T/mnt"
	if ! mount -o loop "$T/ext.img" "$T/mnt" 2>"$T/mount.err"; then
		skip "cannot loop-mount here: $(head -n 1 "$T/mount.err")"
	fi
	dev=$(losetup -j "$T/ext.img" | head -n 1 | cut -d: -f1)
	# (the kernel writes the image at mount and umount: compare while
	# mounted, after its writes have gone out)
	sync
	sum=$(sha256sum <"$T/ext.img")
	out=
	for target in "$T/ext.img" "$dev"; do
		for opt in "" -n "--time-limit 0"; do
			run r4repacker $opt "$target"
			out="$out
$target $opt: $status $output"
		done
	done
	sync
	sum2=$(sha256sum <"$T/ext.img")
	umount "$T/mnt"
	echo "$out"
	[ -n "$dev" ]
	[ "$(echo "$out" | grep -c ': 75 .*is mounted on ')" -eq 6 ]
	[ "$sum2" = "$sum" ]
	# unmounted, the same image is looked at: not a Reiser4 volume
	run r4repacker "$T/ext.img"
	[ "$status" -eq 1 ]
	[[ "$output" != *"mounted"* ]]
}

@test "repack: bad command lines exit 2" {
	run r4repacker
	[ "$status" -eq 2 ]
	run r4repacker --batch 0 "$T/x.img"
	[ "$status" -eq 2 ]
	run r4repacker --time-limit -1 "$T/x.img"
	[ "$status" -eq 2 ]
	run r4repacker --min-gain 2 "$T/x.img"
	[ "$status" -eq 2 ]
	run r4repacker --bogus "$T/x.img"
	[ "$status" -eq 2 ]
	run r4repacker a b
	[ "$status" -eq 2 ]
	run r4repacker --version
	[ "$status" -eq 0 ]
	run r4repacker --help
	[ "$status" -eq 0 ]
	[[ "$output" == *--time-limit* ]]
}

@test "repack: the crash workload (12 sampled cut points, torn and unsynced writes)" {
	full_later
	PATH="$top_builddir/tests/crash/bin:$PATH" run "$top_srcdir/tests/crash/run.sh" quick repack
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"all before/after"* ]]
}

@test "repack: node41 (checksummed nodes) volumes stay clean" {
	need_oracle
	mkdir -p "$T/src/a" "$T/add/a" "$T/add/b"
	for i in $(seq 1 120); do
		head -c $((i * 97 % 20000)) /dev/urandom >"$T/src/a/f$i"
	done
	r4pack create -q -o node=node41 --size 32M "$T/src" "$T/x.img"
	for i in $(seq 1 60); do
		head -c $((i * 301 % 30000)) /dev/urandom >"$T/add/b/g$i"
	done
	for i in $(seq 1 30); do head -c 9000 /dev/urandom >"$T/add/a/f$((i * 3))"; done
	r4pack add -q "$T/x.img" "$T/add"
	printf 'rm /a/f%d\n' $(seq 2 7 120) >"$T/s"
	r4debugfs -w --atomic -f "$T/s" "$T/x.img" >/dev/null
	r4manifest "$T/x.img" >"$T/m1"
	run r4repacker "$T/x.img"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *packed* ]]
	r4manifest "$T/x.img" | diff "$T/m1" -
	oracle_fsck "$T/x.img"
	run r4fsck --check "$T/x.img"
	[ "$status" -eq 0 ]
	[ "$(mfrag -T "$T/x.img")" = 0.000000 ]
}
