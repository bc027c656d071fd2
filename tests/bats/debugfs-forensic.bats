#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# r4debugfs forensic commands: lsdel, undel, bodyfile (mactime),
# dumpblock, icheck classes, hash / rdump --manifest, --no-replay. Every
# read-only command leaves the image byte for byte as it was.

load helpers

oid_of() {
	r4debugfs -R "stat $2" "$1" | sed -n 's/^object: *oid \(0x[0-9a-f]*\),.*/\1/p'
}

# A volume with small files (tails) and large ones (extents), some in a
# sub-directory; prints nothing.
make_img() {
	mkdir -p "$T/src/d/e"
	printf 'small file\n' >"$T/src/d/small.txt"
	head -c 3000 /dev/urandom >"$T/src/tail.bin"
	head -c 200000 /dev/urandom >"$T/src/d/large.bin"
	head -c 1000000 /dev/urandom >"$T/src/d/e/huge.bin"
	printf 'stays\n' >"$T/src/keep"
	head -c 50000 /dev/urandom >"$T/src/d/keep.bin"
	r4pack create -q "$T/src" "$T/a.img"
}

@test "lsdel lists files removed by r4debugfs -w, undel gives them back byte for byte, image unchanged" {
	make_img
	declare -A oid
	for f in /d/small.txt /tail.bin /d/large.bin /d/e/huge.bin; do
		oid[$f]=$(oid_of "$T/a.img" $f)
		[ -n "${oid[$f]}" ]
	done
	r4debugfs -w -R 'rm /d/small.txt' -R 'rm /tail.bin' \
		-R 'rm /d/large.bin' -R 'rm /d/e/huge.bin' "$T/a.img"
	sum=$(sha256sum <"$T/a.img")
	run r4debugfs -R lsdel "$T/a.img"
	echo "$output"
	[ "$status" -eq 0 ]
	for f in /d/small.txt /tail.bin /d/large.bin /d/e/huge.bin; do
		grep -q "^${oid[$f]}	" <<<"$output"
	done
	[[ "$output" == *"4 deleted object(s)"* ]]
	[[ "$output" == *"large.bin"* ]]
	[[ "$output" == *"huge.bin"* ]]
	# nothing alive is listed
	! grep -q "keep" <<<"$output" || false
	r4debugfs --json -R lsdel "$T/a.img" | python3 -c '
import json, sys
v = json.load(sys.stdin)["deleted"]
assert len(v) == 4, v
for o in v:
    assert o["recoverable"] == o["size"] == o["found"], o
'
	for f in /d/small.txt /tail.bin /d/large.bin /d/e/huge.bin; do
		run r4debugfs -R "undel ${oid[$f]} $T/out" "$T/a.img"
		echo "$output"
		[ "$status" -eq 0 ]
		[[ "$output" != *"did not survive"* ]]
		cmp "$T/src$f" "$T/out"
	done
	[ "$(sha256sum <"$T/a.img")" = "$sum" ]
	# a live object or one never seen: refused, nothing left behind
	run r4debugfs -R "undel $(oid_of "$T/a.img" /keep) $T/live" "$T/a.img"
	[ "$status" -eq 1 ]
	[[ "$output" == *"still in the tree"* ]]
	[ ! -e "$T/live" ]
	run r4debugfs -R "undel 0x7777777 $T/none" "$T/a.img"
	[ "$status" -eq 1 ]
	[ ! -e "$T/none" ]
	[ "$(sha256sum <"$T/a.img")" = "$sum" ]
}

@test "a block used again is not recovered: lsdel counts it out, undel names the range" {
	make_img
	o=$(oid_of "$T/a.img" /d/e/huge.bin)
	first=$(r4debugfs -R 'blocks /d/e/huge.bin' "$T/a.img" |
		sed -n 's/.*data blocks \([0-9]*\)-.*/\1/p' | head -n 1)
	[ -n "$first" ]
	r4debugfs -w -R 'rm /d/e/huge.bin' "$T/a.img"
	# Mark the file's third block used again in the bitmap (bitmap 0 is
	# block 18; its bits start after the 4-byte checksum), as if a new
	# file had taken it.
	b=$((first + 2)); byte=$((18 * 4096 + 4 + b / 8))
	old=$(dd if="$T/a.img" bs=1 skip=$byte count=1 status=none | od -An -tu1 | tr -d ' ')
	new=$((old | (1 << (b % 8))))
	printf "$(printf '\\%03o' $new)" | dd of="$T/a.img" bs=1 seek=$byte conv=notrunc status=none
	run r4debugfs -R "icheck $b" "$T/a.img"
	[[ "$output" == *"used, not referenced"* ]]
	rec=$(r4debugfs --json -R lsdel "$T/a.img" | python3 -c "
import json, sys
print([o for o in json.load(sys.stdin)['deleted'] if o['oid'] == $o][0]['recoverable'])")
	[ "$rec" -eq $((1000000 - 4096)) ]
	run r4debugfs -R "undel $o $T/out" "$T/a.img"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"bytes 8192..12287 (4096 bytes) did not survive"* ]]
	[ "$(stat -c %s "$T/out")" -eq 1000000 ]
	cmp -n 8192 "$T/src/d/e/huge.bin" "$T/out"
	cmp -i 12288 "$T/src/d/e/huge.bin" "$T/out"
}

# Free nodes holding a ctail40 item of object OID (hex, no 0x) at
# body offset OFF: "BLOCK ITEM-OFFSET" lines.
ctail_nodes() {
	local n b
	n=$(( $(stat -c %s "$1") / 4096 ))
	for ((b = 17; b < n; b++)); do echo "print node $b"; done >"$T/cmds"
	r4debugfs -f "$T/cmds" "$1" 2>/dev/null | awk -v oid="$2" -v off="$3" '
		/^node [0-9]+:/ { blk = $2; sub(":", "", blk) }
		/ ctail40 \(7\) \[/ {
			split($4, k, ":"); sub("\\]", "", k[5])
			if (k[4] == oid && k[5] == off) print blk, $(NF - 4)
		}'
}

@test "undel of compressed (ccreg40) files: every cluster decoded, a damaged one named as missing" {
	mkdir -p "$T/src/d"
	seq 1 30000 >"$T/src/d/text.txt"
	# a compressible first cluster, then clusters stored raw
	{ seq 1 20000; head -c 140000 /dev/urandom; } >"$T/src/d/mixed"
	seq 1 100 >"$T/src/small"
	printf 'stays\n' >"$T/src/keep"
	r4pack create -q --compress=zstd1 "$T/src" "$T/c.img"
	declare -A oid
	for f in /d/text.txt /d/mixed /small; do
		run r4debugfs -R "stat $f" "$T/c.img"
		[[ "$output" == *"ccreg40 (4)"* ]]
		oid[$f]=$(oid_of "$T/c.img" $f)
	done
	r4debugfs -w -R 'rm /d/text.txt' -R 'rm /d/mixed' -R 'rm /small' "$T/c.img"
	sum=$(sha256sum <"$T/c.img")
	r4debugfs --json -R lsdel "$T/c.img" | python3 -c '
import json, sys
v = json.load(sys.stdin)["deleted"]
assert len(v) == 3, v
for o in v:
    assert o["plugin"] == 4 and o["recoverable"] == o["size"] == o["found"], o
'
	for f in /d/text.txt /d/mixed /small; do
		run r4debugfs -R "undel ${oid[$f]} $T/out" "$T/c.img"
		echo "$output"
		[ "$status" -eq 0 ]
		[[ "$output" != *"did not survive"* ]]
		cmp "$T/src$f" "$T/out"
	done
	[ "$(sha256sum <"$T/c.img")" = "$sum" ]
	# Damage the compressed stream of text.txt's first cluster in every
	# free node that holds it: that cluster is missing, the rest decodes.
	o=${oid[/d/text.txt]#0x}
	ctail_nodes "$T/c.img" "$o" 0 >"$T/where"
	cat "$T/where"
	[ -s "$T/where" ]
	while read -r b at; do
		printf '\377\000\377' | dd of="$T/c.img" bs=1 seek=$((b * 4096 + at + 40)) conv=notrunc status=none
	done <"$T/where"
	rec=$(r4debugfs --json -R lsdel "$T/c.img" | python3 -c "
import json, sys
print([o for o in json.load(sys.stdin)['deleted'] if o['oid'] == ${oid[/d/text.txt]}][0]['recoverable'])")
	[ "$rec" -eq $((168894 - 65536)) ]
	run r4debugfs -R "undel ${oid[/d/text.txt]} $T/out" "$T/c.img"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"bytes 0..65535 (65536 bytes) did not survive"* ]]
	[ "$(stat -c %s "$T/out")" -eq 168894 ]
	cmp -i 65536 "$T/src/d/text.txt" "$T/out"
}

@test "orphans: a stat data in the tree that no name reaches is listed as such and undeleted" {
	. "$top_srcdir/tests/surgery.sh"
	mkdir -p "$T/src"
	head -c 30000 /dev/urandom >"$T/src/a.bin"
	printf 'file b\n' >"$T/src/b.txt"
	r4pack create -q "$T/src" "$T/o.img"
	o=$(oid_of "$T/o.img" /a.bin)
	# Point the entry "a.bin" at b.txt: a.bin's stat data and body stay
	# in the tree, but no name reaches them.
	a=$(entry_off "$T/o.img" / a.bin)
	b=$(entry_off "$T/o.img" / b.txt)
	dd if="$T/o.img" of="$T/o.img" bs=1 skip="$b" seek="$a" count=24 conv=notrunc status=none
	[ "$(oid_of "$T/o.img" /a.bin)" != "$o" ]
	sum=$(sha256sum <"$T/o.img")
	run r4debugfs -R lsdel "$T/o.img"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -q "^$o	.*(orphan: in the tree, no name)" <<<"$output"
	[[ "$output" == *"1 deleted object(s), 1 of them orphans"* ]]
	r4debugfs --json -R lsdel "$T/o.img" | python3 -c "
import json, sys
v = json.load(sys.stdin)['deleted']
assert len(v) == 1 and v[0]['oid'] == $o and v[0]['orphan'] is True, v
assert v[0]['safe_link'] is None and v[0]['recoverable'] == 30000, v
"
	run r4debugfs -R "undel $o $T/out" "$T/o.img"
	echo "$output"
	[ "$status" -eq 0 ]
	cmp "$T/src/a.bin" "$T/out"
	# b.txt has a name: refused
	run r4debugfs -R "undel $(oid_of "$T/o.img" /b.txt) $T/live" "$T/o.img"
	[ "$status" -eq 1 ]
	[[ "$output" == *"still in the tree"* ]]
	[ "$(sha256sum <"$T/o.img")" = "$sum" ]
}

@test "bodyfile: TSK 3 body lines, deleted ones marked, mactime -b reads it" {
	command -v mactime >/dev/null 2>&1 || { echo "mactime (Debian sleuthkit) not installed"; return 1; }
	make_img
	r4debugfs -w -R 'rm /d/large.bin' "$T/a.img"
	sum=$(sha256sum <"$T/a.img")
	r4debugfs -R bodyfile "$T/a.img" >"$T/body"
	cat "$T/body"
	# 11 fields, MD5|name|inode|mode|UID|GID|size|atime|mtime|ctime|crtime
	awk -F'|' 'NF != 11 { exit 1 }' "$T/body"
	grep -q '^0|/keep|[0-9]*|r/rrw-r--r--|0|0|6|' "$T/body"
	grep -q '^0|/d/large.bin (deleted)|[0-9]*|r/r[-rwx]*|[0-9]*|[0-9]*|200000|' "$T/body"
	mactime -b "$T/body" -d >"$T/timeline"
	grep -q '"/keep"' "$T/timeline"
	grep -q 'large.bin (deleted)' "$T/timeline"
	# a sub-tree: its objects only
	r4debugfs -R 'bodyfile /d' "$T/a.img" >"$T/body.d"
	! grep -q '/keep|' "$T/body.d" || false
	grep -q '^0|/d/keep.bin|' "$T/body.d"
	[ "$(sha256sum <"$T/a.img")" = "$sum" ]
}

@test "hash and rdump --manifest: the sha256 of every file" {
	make_img
	(cd "$T/src" && find . -type f | sort | xargs sha256sum | sed 's|  \./|  /|') >"$T/want"
	r4debugfs -R 'hash /' "$T/a.img" | sort -k2 >"$T/got"
	diff <(sort -k2 "$T/want") "$T/got"
	mkdir "$T/out"
	r4debugfs -R "rdump --manifest /d $T/out" "$T/a.img" | sort -k2 >"$T/m"
	diff <(grep '  /d/' "$T/want" | sort -k2) "$T/m"
	cmp "$T/src/d/large.bin" "$T/out/d/large.bin"
	r4debugfs --json -R 'hash /d/large.bin' "$T/a.img" |
		grep -q "\"sha256\":\"$(sha256sum <"$T/src/d/large.bin" | cut -c1-64)\""
}

@test "dumpblock over an existing host file: the new bytes synced before they replace it" {
	make_img
	mkdir -p "$T/out"
	echo old >"$T/out/b16"
	run env R4_SYNC_LOG="$T/sync.log" "$top_builddir/tests/crash/bin/r4debugfs" \
		-R "dumpblock 16 $T/out/b16" "$T/a.img"
	[ "$status" -eq 0 ]
	cat "$T/sync.log" 2>/dev/null || true
	cmp "$T/out/b16" <(dd if="$T/a.img" bs=4096 skip=16 count=1 status=none)
	# the temporary file beside it (renamed over it after the sync),
	# then the folder that names it
	grep -q "^fsync $(realpath "$T/out")/." "$T/sync.log"
	[ "$(tail -n 1 "$T/sync.log")" = "fsync $(realpath "$T/out")" ]
}

# r4debugfs with the sync log of the test build: $1 the commands;
# LOG the log.
synced_run() {
	LOG=$T/sync.log
	rm -f "$LOG"
	run env R4_SYNC_LOG="$LOG" "$top_builddir/tests/crash/bin/r4debugfs" \
		-R "$1" "$T/a.img"
	echo "$output"
	cat "$LOG" 2>/dev/null || true
	[ "$status" -eq 0 ]
}

@test "outputs: what dump, undel, undel --all and rdump say they wrote is durable (bytes, then names)" {
	del_img
	mkdir "$T/out"
	local d
	d=$(realpath "$T/out")
	# one new file: its bytes under the temporary name, then the folder
	synced_run "dump /d/keep.bin $T/out/k"
	cmp "$T/src/d/keep.bin" "$T/out/k"
	grep -q "^fsync $d/k\.r4tmp" "$LOG"
	[ "$(tail -n 1 "$LOG")" = "fsync $d" ]
	synced_run "undel $DEL $T/out/u"
	cmp "$T/src/d/large.bin" "$T/out/u"
	grep -q "^fsync $d/u\.r4tmp" "$LOG"
	[ "$(tail -n 1 "$LOG")" = "fsync $d" ]
	# a tree of files: one sync of their file system at the end
	synced_run "undel --all $T/out/all"
	cmp "$T/src/d/large.bin" "$T/out/all/d/large.bin"
	[ "$(tail -n 1 "$LOG")" = "syncfs $d/all" ]
	# (and not one fsync a file)
	[ -z "$(grep "^fsync $d/all/" "$LOG")" ]
	mkdir "$T/out/rd"
	synced_run "rdump /d $T/out/rd"
	cmp "$T/src/d/keep.bin" "$T/out/rd/d/keep.bin"
	[ "$(tail -n 1 "$LOG")" = "syncfs $d/rd" ]
}

@test "dumpblock and icheck: raw bytes, block classes" {
	make_img
	sum=$(sha256sum <"$T/a.img")
	r4debugfs -R "dumpblock 16 $T/b16" "$T/a.img"
	cmp "$T/b16" <(dd if="$T/a.img" bs=4096 skip=16 count=1 status=none)
	r4debugfs -R "dumpblock 17" "$T/a.img" | cmp - <(dd if="$T/a.img" bs=4096 skip=17 count=1 status=none)
	r4debugfs --json -R "dumpblock 16" "$T/a.img" | grep -q '"class":"fixed"'
	run r4debugfs -R 'icheck 16 20' "$T/a.img"
	[ "$(grep -c 'fixed metadata' <<<"$output")" -eq 2 ]
	last=$(( $(stat -c %s "$T/a.img") / 4096 - 1 ))
	run r4debugfs -R "icheck $((last - 1))" "$T/a.img"
	[[ "$output" == *"free"* ]]
	sdblk=$(r4debugfs -R 'stat /keep' "$T/a.img" | sed -n 's/^stat data: *block \([0-9]*\),.*/\1/p')
	run r4debugfs --json -R "icheck $sdblk $((last - 1))" "$T/a.img"
	[[ "$output" == *'"class":"owned"'* ]]
	[[ "$output" == *'"class":"free"'* ]]
	run r4debugfs -R "dumpblock $((last + 10))" "$T/a.img"
	[ "$status" -ne 0 ]
	[ "$(sha256sum <"$T/a.img")" = "$sum" ]
}

@test "icheck names the backup super blocks where doc/format.md puts them (1 GiB: 22, 32737, 65473, 130945, 196417)" {
	r4mkfs -q "$T/g.img" 1G
	run r4debugfs -R 'icheck 22 32737 65473 130945 196417 32738 23' "$T/g.img"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -c 'not used by the tree: backup super block$' <<<"$output")" -eq 5 ]
	grep -q '^32738	not used by the tree: free$' <<<"$output"
	run r4debugfs --json -R 'icheck 32737 16' "$T/g.img"
	[[ "$output" == *'{"block":32737,"class":"backup","owner":null}'* ]]
	[[ "$output" == *'{"block":16,"class":"fixed","owner":null}'* ]]
}

@test "--no-replay: a pending transaction is read through only without it, and said on stderr" {
	command -v r4txn >/dev/null 2>&1 || skip "r4txn not built"
	r4mkfs -q "$T/j.img" 16M
	cp --sparse=always "$T/j.img" "$T/count.img"
	h=$(r4txn relocate "$T/count.img" | sed -n 's/.*header_write=\([0-9]*\).*/\1/p')
	[ -n "$h" ]
	R4_FAULT=cut-after=$h r4txn relocate "$T/j.img" >/dev/null || true
	sum=$(sha256sum <"$T/j.img")
	run r4debugfs -R 'ls /' "$T/j.img"
	echo "$output"
	[[ "$output" == *"replayed in memory"* ]]
	run r4debugfs --no-replay -R 'ls /' "$T/j.img"
	[[ "$output" != *"replayed"* ]]
	[ "$(sha256sum <"$T/j.img")" = "$sum" ]
	run r4debugfs -w --no-replay -R 'ls /' "$T/j.img"
	[ "$status" -eq 2 ]
}

@test "lsdel reads a pending transaction's wandered copies and the home copies they overwrite" {
	command -v r4txn >/dev/null 2>&1 || skip "r4txn not built"
	r4mkfs -q "$T/j.img" 16M
	cp --sparse=always "$T/j.img" "$T/count.img"
	# one leaf changed in place: journalled (wandered copy + home copy)
	h=$(r4txn inplace "$T/count.img" | sed -n 's/.*header_write=\([0-9]*\).*/\1/p')
	[ -n "$h" ]
	R4_FAULT=cut-after=$h r4txn inplace "$T/j.img" >/dev/null || true
	sum=$(sha256sum <"$T/j.img")
	run r4debugfs -R lsdel "$T/j.img"
	echo "$output"
	[ "$status" -eq 0 ]
	# wandered leaf and super block, the leaf's home copy (the super
	# block's home is fixed metadata, not a node)
	[[ "$output" == *"and 3 block(s) of a pending transaction"* ]]
	run r4debugfs --no-replay -R lsdel "$T/j.img"
	[ "$status" -eq 0 ]
	[[ "$output" == *"and 0 block(s) of a pending transaction"* ]]
	[ "$(sha256sum <"$T/j.img")" = "$sum" ]
}

# The kernel's own deletions (tests/data/kernel/deleted.img.xz).
# Every file the kernel removed there (2 reg40, 50 ccreg40) still has its
# nodes and blocks in free space: all 52 must come back byte for byte.
@test "lsdel on the kernel's deleted.img lists every removed file; undel gives each back by its sha256" {
	k=$top_srcdir/tests/data/kernel
	[ -f "$k/deleted.img.xz" ] || skip "no $k/deleted.img.xz"
	xz -dc "$k/deleted.img.xz" | cp --sparse=always /dev/stdin "$T/del.img"
	sum=$(sha256sum <"$T/del.img")
	r4debugfs --json -R lsdel "$T/del.img" >"$T/lsdel.json"
	python3 - "$T/lsdel.json" "$k/deleted.deleted.sha256" >"$T/plan" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))["deleted"]
byname = {o["name"]: o for o in v if o["name"]}
for line in open(sys.argv[2]):
    h, path = line.split()
    base = path.rsplit("/", 1)[-1]
    assert base in byname, "not listed: " + path
    o = byname[base]
    # claimed whole: must match below
    if o["recoverable"] == o["size"]:
        print(o["oid"], h, path)
PY
	cat "$T/plan"
	# all 52 (text_131072 and rand_300000 reg40, many/small_* ccreg40)
	[ "$(wc -l <"$T/plan")" -ge 52 ]
	n=0
	while read -r o h p; do
		run r4debugfs -R "undel $o $T/out" "$T/del.img"
		[ "$status" -eq 0 ]
		[[ "$output" != *"did not survive"* ]]
		[ "$(sha256sum <"$T/out" | cut -c1-64)" = "$h" ] || { echo "$p differs"; return 1; }
		n=$((n + 1))
	done <"$T/plan"
	[ "$n" -ge 52 ]
	[ "$(sha256sum <"$T/del.img")" = "$sum" ]
}

# ---- Outputs: what undel, dump, dumpblock and rdump write into --------

# make_img, then remove /d/large.bin: DEL is its object id (a deleted
# object every read of which succeeds) and SUM the image's checksum.
del_img() {
	make_img
	DEL=$(oid_of "$T/a.img" /d/large.bin)
	[ -n "$DEL" ]
	r4debugfs -w -R 'rm /d/large.bin' "$T/a.img"
	SUM=$(sha256sum <"$T/a.img")
}

# No temporary output file left in folder $1.
no_tmp_left() {
	local left
	left=$(find "$1" -name '*.r4tmp*')
	[ -z "$left" ] || { echo "left behind: $left"; return 1; }
}

@test "outputs: an undel that fails leaves an existing HOSTFILE as it was; one that succeeds replaces it" {
	del_img
	printf 'mine\n' >"$T/keep.txt"
	# an object that survives nowhere, one still in the tree
	for o in 0x1 0x7777777 "$(oid_of "$T/a.img" /keep)"; do
		run r4debugfs -R "undel $o $T/keep.txt" "$T/a.img"
		echo "$output"
		[ "$status" -eq 1 ]
		[ "$(cat "$T/keep.txt")" = mine ]
	done
	# a good one: the file is replaced (as r4pack extract replaces a
	# tarball), through a symbolic link the file it names
	ln -s keep.txt "$T/via"
	r4debugfs -R "undel $DEL $T/via" "$T/a.img"
	[ -L "$T/via" ]
	cmp "$T/src/d/large.bin" "$T/keep.txt"
	r4debugfs -R "dumpblock 16 $T/keep.txt" "$T/a.img"
	cmp "$T/keep.txt" <(dd if="$T/a.img" bs=4096 skip=16 count=1 status=none)
	no_tmp_left "$T"
	[ "$(sha256sum <"$T/a.img")" = "$SUM" ]
}

@test "outputs: undel, dump and dumpblock onto the image, a hard or symbolic link to it: refused, image byte for byte" {
	del_img
	ln "$T/a.img" "$T/hard"
	ln -s a.img "$T/soft"
	# not even opened for writing (an O_TRUNC open that writes the same
	# bytes back would change the modification time)
	touch -d @1000000000 "$T/a.img"
	stamp=$(stat -c %Y "$T/a.img")
	for out in "$T/a.img" "$T/hard" "$T/soft"; do
		for c in "undel $DEL" "dumpblock 30" "dump /keep"; do
			run r4debugfs -R "$c $out" "$T/a.img"
			echo "$c $out: $output"
			[ "$status" -eq 1 ]
			[ "${#lines[@]}" -eq 1 ]
			[[ "$output" == *"$out: "* ]]
			[ "$(sha256sum <"$T/a.img")" = "$SUM" ]
		done
		[[ "$output" == *"image"* ]] || [[ "$c" == dump* ]]
	done
	# also through the image's name given another way
	run r4debugfs -R "dumpblock 30 $T/./a.img" "$T/a.img"
	[ "$status" -eq 1 ]
	# standard output sent into the image
	run sh -c 'r4debugfs -R "dumpblock 30" "$1" >>"$1"' sh "$T/a.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"image"* ]]
	[ "$(sha256sum <"$T/a.img")" = "$SUM" ]
	[ "$(sha256sum <"$T/hard")" = "$SUM" ]
	[ "$(stat -c %Y "$T/a.img")" = "$stamp" ]
	[ -L "$T/soft" ]
	no_tmp_left "$T"
}

@test "outputs: a FIFO (no hang), a device node, a socket, a dangling symlink, a directory: refused, left as they were" {
	del_img
	mkfifo "$T/fifo"
	ln -s /dev/null "$T/devlink"
	python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$T/sock"
	ln -s "$T/nowhere" "$T/dangling"
	mkdir "$T/dir"
	outs="fifo devlink sock dangling dir"
	if [ "$(id -u)" = 0 ]; then
		mknod "$T/nul" c 1 3
		outs="$outs nul"
	fi
	for o in $outs; do
		for c in "undel $DEL" "dumpblock 30" "dump /keep"; do
			run timeout 20 r4debugfs -R "$c $T/$o" "$T/a.img"
			echo "$c $o: $output"
			[ "$status" -eq 1 ]
			[ "${#lines[@]}" -eq 1 ]
			[[ "$output" == *"$T/$o: "* ]]
		done
	done
	[ -p "$T/fifo" ]
	[ -L "$T/devlink" ]
	[ -S "$T/sock" ]
	[ -L "$T/dangling" ]
	[ ! -e "$T/nowhere" ]
	[ -d "$T/dir" ]
	[ -z "$(ls -A "$T/dir")" ]
	[ "$(id -u)" != 0 ] || [ -c "$T/nul" ]
	[ "$(sha256sum <"$T/a.img")" = "$SUM" ]
	no_tmp_left "$T"
}

@test "outputs: dump never overwrites and leaves nothing for a file it cannot read" {
	del_img
	printf 'mine\n' >"$T/have"
	run r4debugfs -R "dump /keep $T/have" "$T/a.img"
	[ "$status" -eq 1 ]
	[[ "$output" == *"exists already"* ]]
	[ "$(cat "$T/have")" = mine ]
	run r4debugfs -R "dump /d $T/new" "$T/a.img"
	[ "$status" -eq 1 ]
	[ ! -e "$T/new" ]
	r4debugfs -R "dump /d/keep.bin $T/new" "$T/a.img"
	cmp "$T/src/d/keep.bin" "$T/new"
	no_tmp_left "$T"
	[ "$(sha256sum <"$T/a.img")" = "$SUM" ]
}

@test "outputs: rdump into a folder keeps what is there (the image included) and copies the rest" {
	make_img
	mkdir "$T/out"
	cp "$T/a.img" "$T/out/tail.bin"	# the image, under a name it holds
	sum=$(sha256sum <"$T/out/tail.bin")
	mkfifo "$T/out/keep"
	ln -s "$T/nowhere" "$T/out/d"	# a dangling link where a folder goes
	run timeout 20 r4debugfs -R "rdump / $T/out" "$T/out/tail.bin"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"tail.bin: exists already"* ]]
	[[ "$output" == *"keep: exists already"* ]]
	[ "$(sha256sum <"$T/out/tail.bin")" = "$sum" ]
	[[ "$output" == *"d: cannot make the directory"* ]]
	[ -p "$T/out/keep" ]
	[ -L "$T/out/d" ]
	[ ! -e "$T/nowhere" ]
	cmp "$T/src/tail.bin" "$T/out/tail.bin" && return 1
	no_tmp_left "$T/out"
	# copied into a fresh folder: all of it
	mkdir "$T/out2"
	r4debugfs -R "rdump / $T/out2" "$T/out/tail.bin"
	cmp "$T/src/d/e/huge.bin" "$T/out2/d/e/huge.bin"
	# HOSTDIR a FIFO or the image: refused at once, nothing changed
	mkfifo "$T/fifo"
	for h in "$T/fifo" "$T/out/tail.bin"; do
		run timeout 20 r4debugfs -R "rdump / $h" "$T/out/tail.bin"
		[ "$status" -eq 1 ]
		[[ "$output" == *"$h: Not a directory"* ]]
	done
	[ "$(sha256sum <"$T/out/tail.bin")" = "$sum" ]
}

@test "undel --all: every file of the kernel's deleted.img in one scan, under its former path, exact; MANIFEST; lsdel shows former paths and UTC times" {
	k=$top_srcdir/tests/data/kernel
	[ -f "$k/deleted.img.xz" ] || skip "no $k/deleted.img.xz"
	xz -dc "$k/deleted.img.xz" | cp --sparse=always /dev/stdin "$T/del.img"
	sum=$(sha256sum <"$T/del.img")
	run r4debugfs -R lsdel "$T/del.img"
	[ "$status" -eq 0 ]
	[[ "$output" == *"mtime (UTC)"$'\t'"former path"* ]]
	echo "$output" | grep -qE $'\t20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-5][0-9]Z\t/many/small_000$'
	r4debugfs --json -R lsdel "$T/del.img" | grep -q '"name":"small_000","path":"/many/small_000"'
	run r4debugfs -R "undel --all $T/rec" "$T/del.img"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == "52 deleted file(s) recovered into $T/rec"* ]]
	(cd "$T/rec" && sha256sum -c --quiet "$k/deleted.deleted.sha256")
	[ "$(sed 1d "$T/rec/MANIFEST" | wc -l)" -eq 52 ]
	grep -q $'^0x[0-9a-f]*\t8530/8530\t[0-9a-f]\{64\}\t/many/small_000\tmany/small_000$' "$T/rec/MANIFEST"
	[ "$(sha256sum <"$T/del.img")" = "$sum" ]
	# never over an earlier recovery
	run r4debugfs -R "undel --all $T/rec" "$T/del.img"
	[ "$status" -ne 0 ]
	[[ "$output" == *"MANIFEST"*"give another folder"* ]]
}

@test "undel --all: two deleted files of one former path are both kept, apart" {
	mkdir -p "$T/s/d"
	echo keep >"$T/s/d/k"
	r4pack create -q "$T/s" "$T/a.img"
	seq 1 3000 >"$T/one"
	seq 5 9000 >"$T/two"
	r4debugfs -w -R "write $T/one /d/x" "$T/a.img"
	r4debugfs -w -R "rm /d/x" "$T/a.img"
	r4debugfs -w -R "write $T/two /d/x" "$T/a.img"
	r4debugfs -w -R "rm /d/x" "$T/a.img"
	run r4debugfs -R "undel --all $T/rec" "$T/a.img"
	echo "$output"
	[ "$status" -eq 0 ]
	ls -R "$T/rec"
	[ "$(ls "$T/rec/d" | grep -c '^x')" -eq 2 ]
	sha256sum "$T/rec/d/"x* | cut -c1-64 | sort >"$T/got"
	sha256sum "$T/one" "$T/two" | cut -c1-64 | sort | diff - "$T/got"
}

@test "--json bodyfile: names that are not UTF-8 keep their bytes (line_b64), lsdel too (name_b64)" {
	mkdir -p "$T/src"
	printf a >"$T/src/bad"$'\xff'
	printf b >"$T/src/bad"$'\xfe'
	printf c >"$T/src/ok"
	r4pack create -q "$T/src" "$T/a.img"
	r4debugfs --json -R bodyfile "$T/a.img" >"$T/b.json"
	r4debugfs -w -R "rm /bad"$'\xff' "$T/a.img"
	r4debugfs --json -R bodyfile "$T/a.img" >"$T/d.json"
	r4debugfs --json -R lsdel "$T/a.img" >"$T/l.json"
	python3 - "$T/b.json" "$T/d.json" "$T/l.json" <<'PY'
import base64, json, sys
def lines(p):
    out = []
    for l in json.load(open(p))["lines"]:
        if isinstance(l, dict):
            raw = base64.b64decode(l["line_b64"])
            assert l["line"] == raw.decode("utf-8", "replace"), l
            out.append(raw)
        else:
            out.append(l.encode())
    return out
b = lines(sys.argv[1])
names = sorted(l.split(b"|")[1] for l in b)
assert names == [b"/", b"/bad\xfe", b"/bad\xff", b"/ok"], names
d = lines(sys.argv[2])
assert any(l.split(b"|")[1] == b"/bad\xff (deleted)" for l in d), d
assert any(l.split(b"|")[1] == b"/bad\xfe" for l in d), d
v = json.load(open(sys.argv[3]))["deleted"]
assert [base64.b64decode(o["name_b64"]) for o in v] == [b"bad\xff"], v
PY
}

@test "dumpblock into a write-only folder (a drop box, 0333): written, its file system synced instead of the folder, exit 0" {
	make_img
	chmod 0644 "$T/a.img"
	mkdir "$T/wo"
	chmod 0333 "$T/wo"
	local d
	d=$(realpath "$T/wo")
	run as_nobody env R4_SYNC_LOG="$d/sync.log" \
		"$top_builddir/tests/crash/bin/r4debugfs" -R "dumpblock 16 $d/b16" "$T/a.img"
	echo "$output"
	[ "$status" -eq 0 ]
	cmp "$T/wo/b16" <(dd if="$T/a.img" bs=4096 skip=16 count=1 status=none)
	cat "$d/sync.log"
	[ "$(tail -n 1 "$d/sync.log")" = "syncfs $d/b16" ]
}

@test "outputs whose folder's sync fails: dump's file in place, exit 1; undel --all prints its summary, then the failure" {
	del_img
	mkdir "$T/out"
	local d
	d=$(realpath "$T/out")
	run env R4_SYNC_FAIL="$d" "$top_builddir/tests/crash/bin/r4debugfs" \
		-R "dump /d/keep.bin $T/out/k" "$T/a.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"$T/out/k: written and in place, but its folder could not be synced (a power cut may still lose it): Input/output error"* ]]
	cmp "$T/src/d/keep.bin" "$T/out/k"
	no_tmp_left "$T/out"
	# undel --all: every file written, the summary on standard output,
	# then one line for the failed sync of the folder's file system
	run env R4_SYNC_FAIL="$d/all" "$top_builddir/tests/crash/bin/r4debugfs" \
		-R "undel --all $T/out/all" "$T/a.img"
	echo "$output"
	[ "$status" -eq 1 ]
	cmp "$T/src/d/large.bin" "$T/out/all/d/large.bin"
	[[ "${lines[-1]}" == *"undel: $T/out/all: what was written could not be synced (a power cut may lose it): Input/output error" ]]
	[ "${#lines[@]}" -ge 2 ]
	[[ "$output" == *MANIFEST* ]]
	# rdump: every file written, then the failed sync, exit 1
	mkdir "$T/out/rd"
	run env R4_SYNC_FAIL="$d/rd" "$top_builddir/tests/crash/bin/r4debugfs" \
		-R "rdump /d $T/out/rd" "$T/a.img"
	echo "$output"
	[ "$status" -eq 1 ]
	cmp "$T/src/d/keep.bin" "$T/out/rd/d/keep.bin"
	[[ "${lines[-1]}" == *"rdump: $T/out/rd: what was written could not be synced (a power cut may lose it): Input/output error" ]]
	[ "$(sha256sum <"$T/a.img")" = "$SUM" ]
}
