#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# r4fsck repair, e2fsck's run-twice convention: each damage, made here
# from a good image with dd/printf at computed offsets, is repaired by
# r4fsck -y with exit 1 and the expected problem codes; a second run
# exits 0 and prints nothing; fsck.reiser4 --check calls the result
# consistent; the files outside the damage are kept exactly (manifest).
# Tree damage is repaired by a rebuild of the tree from the items that
# pass the checks (reachable nodes, then a scan of unreachable ones).

load helpers

. "$top_srcdir/tests/surgery.sh"

fresh() {
	r4mkfs -q "$@" "$T/good.img" 64M
	cp "$T/good.img" "$T/bad.img"
}

# A populated volume (r4pack), its manifest in $T/good.man.
populated() {
	local s=$T/src i
	mkdir -p "$s/d/e" "$s/many"
	for i in $(seq 1 40); do head -c $((i * 397)) /dev/urandom >"$s/f$i"; done
	head -c 100000 /dev/urandom >"$s/d/large"
	echo hello >"$s/a"
	ln "$s/a" "$s/d/hard"
	ln -s f2 "$s/sym"
	mkfifo "$s/fifo"
	for i in $(seq 1 300); do echo $i >"$s/many/entry_$i"; done
	echo deep >"$s/d/e/leaf"
	r4pack create -q "$s" "$T/good.img"
	r4manifest "$T/good.img" >"$T/good.man"
	cp "$T/good.img" "$T/bad.img"
}

# repaired IMAGE CODE...: r4fsck -y exits 1 naming every CODE in its
# JSON problem list (its output stays in $first); a second run exits 0 silently; -n calls it clean;
# fsck.reiser4 calls it consistent. A copy repaired with the tables from
# the first check (R4_CHECK_TABLES: no fix taken from the bounded
# check's list, libimage/check/fixes.c) gets the same report and bytes.
repaired() {
	local img=$1 c tabled
	shift
	export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(date +%s)}
	cp --sparse=always "$img" "$T/tab.img"
	run r4fsck -y --json "$img"
	echo "$output"
	first=$output
	[ "$status" -eq 1 ]
	run env R4_CHECK_TABLES=1 r4fsck -y --json "$T/tab.img"
	tabled=${output//"$T/tab.img"/"$img"}
	[ "$status" -eq 1 ]
	[ "$tabled" = "$first" ] || { echo "tables: $tabled"; false; }
	cmp "$img" "$T/tab.img"
	rm -f "$T/tab.img"
	for c in "$@"; do
		grep -q "\"code\":\"$c\"" <<<"$first"
	done
	[[ "$output" == *'"clean":true'* ]]
	run r4fsck -y "$img"
	echo "second run: $output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	run r4fsck -n "$img"
	[ "$status" -eq 0 ]
	if command -v fsck.reiser4 >/dev/null; then
		oracle_fsck "$img"
	fi
}

# no_tables IMAGE: a copy of IMAGE repaired by r4fsck -y builds none of
# the whole volume's tables (R4_FSCK_STATS: 0 table checks): its fixes
# come from the bounded check (libimage/repair/repair.c: tables_needed).
no_tables() {
	cp --sparse=always "$1" "$T/nt.img"
	run env R4_FSCK_STATS=1 r4fsck -y "$T/nt.img"
	rm -f "$T/nt.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"r4fsck: stats: "*" rounds, 0 table checks"* ]]
}

# rebuilt IMAGE CODE...: repaired, by a tree rebuild; and a copy
# repaired with the rebuild's items spilled to sorted runs in $TMPDIR (a
# run and a body buffer of one byte: R4_REBUILD_RUN_BYTES) gets the same
# report, and the same bytes as another copy repaired with them in
# memory (the image itself goes on to fsck.reiser4, which writes its
# journal header), and as a fourth copy whose new nodes past two wait in
# a temporary file until the commit (R4_REBUILD_SPILL_BYTES, as on a
# volume without room to spare), and as a fifth whose check's objects
# the rebuild looks up wait in a scratch file in $TMPDIR, only a look-
# up's first step's record in memory (R4_REBUILD_OBJS_LEVELS=1: these
# volumes' objects are few enough to stay in memory otherwise). One
# clock for all.
rebuilt() {
	local img=$1 spilled sst nodes nst objs ost
	export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(date +%s)}
	mkdir -p "$T/spill" "$T/nspill"
	cp --sparse=always "$img" "$T/spill.img"
	cp --sparse=always "$img" "$T/mem.img"
	cp --sparse=always "$img" "$T/nodes.img"
	cp --sparse=always "$img" "$T/objs.img"
	run env TMPDIR="$T/spill" R4_REBUILD_RUN_BYTES=1 \
		r4fsck -y --json "$T/spill.img"
	spilled=${output//"$T/spill.img"/"$img"}
	sst=$status
	run env TMPDIR="$T/nspill" R4_REBUILD_SPILL_BYTES=1 \
		r4fsck -y --json "$T/nodes.img"
	nodes=${output//"$T/nodes.img"/"$img"}
	nst=$status
	run env R4_REBUILD_OBJS_LEVELS=1 r4fsck -y --json "$T/objs.img"
	objs=${output//"$T/objs.img"/"$img"}
	ost=$status
	r4fsck -y -q "$T/mem.img" || true
	repaired "$@"
	[[ "$first" == *'"rebuilt":true'* ]]
	[ "$sst" -eq 1 ]
	[ "$spilled" = "$first" ]
	[ "$nst" -eq 1 ]
	# the same report but for its count of nodes spilled (none when
	# the new tree has two nodes or fewer)
	nodes=$(sed 's/"nodes_spilled":[0-9]*/"nodes_spilled":0/' <<<"$nodes")
	[ "$nodes" = "$first" ]
	[ "$ost" -eq 1 ]
	[ "$objs" = "$first" ]
	cmp "$T/mem.img" "$T/spill.img"
	cmp "$T/mem.img" "$T/nodes.img"
	cmp "$T/mem.img" "$T/objs.img"
	rm -f "$T/spill.img" "$T/mem.img" "$T/nodes.img" "$T/objs.img"
}

# kept IMAGE [ERE...]: every file (not directory) of the good image's
# manifest, outside the paths given, is in the repaired image's manifest
# with the same type, mode, owner, size, mtime, nlink, target and content
# hash (the last column, a label of traversal order, is left out).
kept() {
	local img=$1 lost p
	shift
	r4manifest "$img" | awk -F '\t' '$2 != "d"' | cut -f 1-11 >"$T/now.man" || true
	awk -F '\t' '$2 != "d"' "$T/good.man" | cut -f 1-11 >"$T/want.man"
	for p in "$@"; do grep -Ev "^$p" "$T/want.man" >"$T/w2" || true; mv "$T/w2" "$T/want.man"; done
	lost=$(grep -cvxFf "$T/now.man" "$T/want.man" || true)
	echo "kept $(($(wc -l <"$T/want.man") - lost)) of $(wc -l <"$T/want.man")"
	[ "$lost" -eq 0 ]
}

# ---- command line ----

@test "repair modes: usage errors (16)" {
	fresh
	run r4fsck -n -y "$T/bad.img"
	[ "$status" -eq 16 ]
	run r4fsck -p --fix "$T/bad.img"
	[ "$status" -eq 16 ]
	run r4fsck -z "$T/u" "$T/bad.img"
	[ "$status" -eq 16 ]
	run r4fsck --undo "$T/u" -y "$T/bad.img"
	[ "$status" -eq 16 ]
	run r4fsck --help
	[[ "$output" == *"--build-sb"* ]]
	[[ "$output" == *"--preen"* ]]
}

@test "repair of a missing file or a non-Reiser4 file: 8" {
	run r4fsck -y "$T/nothing.img"
	[ "$status" -eq 8 ]
	head -c 1M /dev/zero >"$T/zero.img"
	run r4fsck -y "$T/zero.img"
	[ "$status" -eq 8 ]
	run r4fsck -p "$T/zero.img"
	[ "$status" -eq 8 ]
}

@test "clean volumes: -y and -p exit 0 and print nothing, change nothing" {
	fresh
	for m in -y -p --fix --build-fs; do
		run r4fsck $m "$T/bad.img"
		[ "$status" -eq 0 ]
		[ -z "$output" ]
	done
	cmp "$T/good.img" "$T/bad.img"
	run r4fsck -y -v "$T/bad.img"
	[[ "$output" == *"no problems found"* ]]
}

@test "r4ref and r4pack volumes with every kind of object are clean to -y" {
	need_r4ref
	populated
	run r4fsck -y "$T/bad.img"
	echo "$output"
	[ "$status" -eq 0 ]
	cmp "$T/good.img" "$T/bad.img"
	mkdir -p "$T/s2/x"
	head -c 20000 /dev/urandom >"$T/s2/big"
	for i in $(seq 1 50); do echo $i >"$T/s2/x/$i"; done
	: >"$T/s2/empty"
	truncate -s 64M "$T/r.img"
	r4ref mkfs -o formatting=tails "$T/r.img" "$T/s2"
	run r4fsck -y "$T/r.img"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "--json of a repair: actions, by_code, loss; valid JSON" {
	fresh
	poke "$T/bad.img" $((17 * 4096 + 8)) 1000 8
	run r4fsck -y --json "$T/bad.img"
	[ "$status" -eq 1 ]
	[[ "$output" == *'"code":"free-count","block":17'*'"fix":"preen"'* ]]
	[[ "$output" == *'"actions":['*'"done":"free block count set to 16359'* ]]
	[[ "$output" == *'"free-count":{"found":1,"left":0,"fix":"preen"}'* ]]
	[[ "$output" == *'"loss":{"entries_removed":0'* ]]
	if command -v python3 >/dev/null; then
		cp "$T/good.img" "$T/bad.img"
		poke "$T/bad.img" $((17 * 4096 + 8)) 1000 8
		r4fsck -y --json "$T/bad.img" | python3 -c 'import json,sys; json.load(sys.stdin)'
		r4fsck -y --json "$T/bad.img" | python3 -c 'import json,sys; json.load(sys.stdin)'
	fi
}

# ---- the damage cases of fsck-check.bats ----

@test "wrong master magic: restored from the backup (-y)" {
	fresh
	printf 'X' | dd of="$T/bad.img" bs=1 seek=65536 conv=notrunc status=none
	run r4fsck -p "$T/bad.img"
	[ "$status" -eq 8 ]
	run r4fsck -y "$T/bad.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"fixed (master): master super block (block 16) restored from the backup copy in block 22"* ]]
	cmp "$T/good.img" "$T/bad.img"
	repaired_clean "$T/bad.img"
}

repaired_clean() {
	run r4fsck -y "$1"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	if command -v fsck.reiser4 >/dev/null; then
		oracle_fsck "$1"
	fi
}

@test "wrong format40 magic: restored from the backup (-y)" {
	fresh
	printf 'X' | dd of="$T/bad.img" bs=1 seek=$((17 * 4096 + 52)) \
		conv=notrunc status=none
	run r4fsck -y "$T/bad.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"fixed (format40): format40 super block (block 17) restored"* ]]
	cmp "$T/good.img" "$T/bad.img"
	repaired_clean "$T/bad.img"
}

@test "format40 root pointer and tree height lost (not in the backups): the root found by a scan of the used blocks, every file kept" {
	populated
	local root height s2=$T/src2 i
	# an add first, so that earlier roots lie in blocks now free
	mkdir -p "$s2/added"
	for i in $(seq 1 200); do echo "new $i" >"$s2/added/n$i"; done
	r4pack add -q "$T/bad.img" "$s2"
	r4manifest "$T/bad.img" >"$T/good.man"
	cp "$T/bad.img" "$T/good.img"
	root=$(peek "$T/bad.img" $((17 * 4096 + 16)) 8)
	height=$(peek "$T/bad.img" $((17 * 4096 + 68)) 2)
	[ "$height" -ge 3 ]
	same_root() {
		[ "$(peek "$T/bad.img" $((17 * 4096 + 16)) 8)" -eq "$root" ]
		[ "$(peek "$T/bad.img" $((17 * 4096 + 68)) 2)" -eq "$height" ]
	}
	# the height alone: taken from the root node
	poke "$T/bad.img" $((17 * 4096 + 68)) 0 2
	run r4fsck -n "$T/bad.img"
	echo "$output"
	[ "$status" -eq 4 ]
	[[ "$output" == *"the tree height taken from the root node (block $root, level $height)"* ]]
	repaired "$T/bad.img" format40
	same_root
	# the root and the height: the scan finds the root
	poke "$T/bad.img" $((17 * 4096 + 16)) 0 8
	poke "$T/bad.img" $((17 * 4096 + 68)) 0 2
	run r4fsck -p "$T/bad.img"
	[ "$status" -eq 8 ]
	[ "$(peek "$T/bad.img" $((17 * 4096 + 16)) 8)" -eq 0 ]
	repaired "$T/bad.img" format40
	[[ "$first" == *"the root found by a scan of the used blocks: block $root, level $height"* ]]
	[[ "$first" != *'"rebuilt":true'* ]]
	same_root
	kept "$T/bad.img"
	# the root alone, pointing past the volume
	poke "$T/bad.img" $((17 * 4096 + 16)) 99999999 8
	repaired "$T/bad.img" format40
	same_root
	kept "$T/bad.img"
}

@test "--json lists the fixes made before the open: super blocks, journal header" {
	fresh
	printf 'X' | dd of="$T/bad.img" bs=1 seek=65536 conv=notrunc status=none
	printf 'X' | dd of="$T/bad.img" bs=1 seek=$((17 * 4096 + 52)) conv=notrunc status=none
	run r4fsck -n --json "$T/bad.img"
	echo "$output"
	[ "$status" -eq 4 ]
	[[ "$output" == *'"code":"format40","block":17,"item":-1,"key":"","fix":"yes","message":"format40 super block (block 17) is damaged; the backup copy in block 22 is intact'* ]]
	[[ "$output" == *'"code":"master","block":16,'* ]]
	[[ "$output" == *'"problems":2,'* ]]
	run r4fsck -y --json "$T/bad.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *'"problem_list":['*'"code":"format40","block":17'*'"code":"master","block":16'*'"actions":['* ]]
	[[ "$output" == *'"actions":['*'{"code":"format40","block":17,"oid":0,"loss":"none","amount":0,"done":"format40 super block (block 17) restored from the backup copy in block 22"}'* ]]
	[[ "$output" == *'{"code":"master","block":16,"oid":0,"loss":"none","amount":0,"done":"master super block (block 16) restored from the backup copy in block 22"}'* ]]
	[[ "$output" == *'"found":2,'*'"master":{"found":1,"left":0'*'"format40":{"found":1,"left":0'*'"actions_done":2,'* ]]
	cmp "$T/good.img" "$T/bad.img"
	# --build-sb: a master label that merely differs.
	printf 'two' | dd of="$T/bad.img" bs=1 seek=$((65536 + 36)) conv=notrunc status=none
	run r4fsck --build-sb --json "$T/bad.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *'"code":"master","block":16,"item":-1,"key":"","fix":"yes","message":"master super block (block 16) is different from the backup copy'* ]]
	[[ "$output" == *'"done":"master super block (block 16) restored from the backup copy in block 22"'* ]]
	cmp "$T/good.img" "$T/bad.img"
	# The journal header naming a transaction that cannot be replayed.
	poke "$T/bad.img" $((19 * 4096)) 1000 8
	run r4fsck -y --json "$T/bad.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *'"code":"journal","block":19,"item":-1,"key":"","fix":"preen","message":"journal header (block 19) names a transaction that cannot be replayed (tx head 1000, last flushed 0): '* ]]
	[[ "$output" == *'"actions":['*'"code":"journal","block":19,'*'"done":"journal header (block 19) named a transaction that cannot be replayed (tx head 1000): dropped'* ]]
	[[ "$output" == *'"journal":{"found":1,"left":0'* ]]
	if command -v python3 >/dev/null; then
		cp "$T/good.img" "$T/bad.img"
		printf 'X' | dd of="$T/bad.img" bs=1 seek=65536 conv=notrunc status=none
		poke "$T/bad.img" $((19 * 4096)) 1000 8
		r4fsck -y --json "$T/bad.img" | python3 -c 'import json,sys; d = json.load(sys.stdin); assert [a["code"] for a in d["actions"]] == ["master", "journal"], d'
	fi
	repaired_clean "$T/bad.img"
}

@test "--build-sb rewrites a master that differs from the backup" {
	fresh -L one
	printf 'two' | dd of="$T/bad.img" bs=1 seek=$((65536 + 36)) conv=notrunc status=none
	run r4fsck --build-sb "$T/bad.img"
	echo "$output"
	[ "$status" -eq 1 ]
	cmp "$T/good.img" "$T/bad.img"
}

# tail_paths IMAGE CUT: the paths (files and directories) with an item
# or an extent block at or past block CUT.
tail_paths() {
	r4manifest "$1" | cut -f 1 | sed 's/^/print file /' >"$T/cmds"
	r4debugfs -f "$T/cmds" "$1" 2>&1 | awk -v cut="$2" '
		/^r4debugfs: print file / { p = substr($0, 23); next }
		/^block [0-9]+ / { if ($2 + 0 >= cut) print p }
		/ start [0-9]+ width [0-9]+/ {
			for (i = 1; i < NF; i++)
				if ($i == "start" && $(i + 1) + $(i + 3) > cut)
					print p
		}' | sort -u
}

@test "truncated image: -y extends it, the tail is lost, files outside it kept" {
	populated
	local cut blocks p ex=()
	cut=$(r4debugfs --json -R "stat /many/entry_150" "$T/bad.img" | sed -n 's/.*"sd_block":\([0-9]*\).*/\1/p')
	blocks=$(( $(stat -c %s "$T/good.img") / 4096 ))
	[ "$cut" -gt 30 ]
	while read -r p; do ex+=("$p[/	]"); done < <(tail_paths "$T/good.img" "$cut")
	echo "cut at block $cut of $blocks; in the tail: ${ex[*]}"
	[ "${#ex[@]}" -gt 0 ]
	[[ " ${ex[*]} " != *" /[/	] "* ]]
	truncate -s $((cut * 4096)) "$T/bad.img"
	cp "$T/bad.img" "$T/before.img"
	# -n, the default mode and preen call it damage and leave it (4);
	# each names the image and both sizes.
	run r4fsck -n "$T/bad.img"
	[ "$status" -eq 4 ]
	[[ "$output" == *"bad.img: image holds $cut blocks, the format40 super block (block 17) counts $blocks: $((blocks - cut)) blocks missing"* ]]
	run r4fsck "$T/bad.img"
	[ "$status" -eq 4 ]
	run r4fsck -p "$T/bad.img"
	echo "$output"
	[ "$status" -eq 4 ]
	[[ "$output" == *"bad.img: image holds $cut blocks, the format40 super block (block 17) counts $blocks: $((blocks - cut)) blocks missing"* ]]
	cmp "$T/bad.img" "$T/before.img"
	# -y: extended with zeros to the full size, then repaired.
	repaired "$T/bad.img" truncated
	[[ "$first" == *'"code":"truncated","block":17,"item":-1'*'"message":"image holds '"$cut"' blocks'* ]]
	[[ "$first" == *'"actions":['*'"code":"truncated","block":17'*'"done":"image extended with zeros from '"$cut to $blocks"' blocks'* ]]
	[[ "$first" == *'"truncated":{"found":1,"left":0,"fix":"yes"}'* ]]
	[ "$(stat -c %s "$T/bad.img")" -eq $((blocks * 4096)) ]
	kept "$T/bad.img" "${ex[@]}"
	# -z saves what the repair overwrote; --undo puts the truncated
	# image back, size and all.
	cp "$T/before.img" "$T/bad.img"
	run r4fsck -y -z "$T/undo" "$T/bad.img"
	[ "$status" -eq 1 ]
	run r4fsck --undo "$T/undo" "$T/bad.img"
	echo "$output"
	[ "$status" -eq 0 ]
	cmp "$T/bad.img" "$T/before.img"
}

@test "backup block differing: rewritten (preen)" {
	fresh -L one
	printf 'two' | dd of="$T/bad.img" bs=1 seek=$((22 * 4096 + 1 + 36)) \
		conv=notrunc status=none
	run r4fsck -p "$T/bad.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"fixed (backup): backup copy 0 (block 22) rewritten"* ]]
	repaired_clean "$T/bad.img"
	cmp <(dd if="$T/good.img" bs=4096 skip=22 count=1 status=none) \
	    <(dd if="$T/bad.img" bs=4096 skip=22 count=1 status=none)
}

@test "unreplayable journal transaction: dropped (-y); -p leaves it (4)" {
	fresh
	poke "$T/bad.img" $((19 * 4096)) 1000 8
	run r4fsck -p "$T/bad.img"
	[ "$status" -eq 4 ]
	run r4fsck -y "$T/bad.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"fixed (journal): journal header (block 19) named a transaction that cannot be replayed (tx head 1000)"* ]]
	repaired_clean "$T/bad.img"
}

@test "journal header naming a block past the device's end: found by -n (4), named by -p (4), dropped by -y" {
	fresh
	poke "$T/bad.img" $((19 * 4096)) 99999999 8
	run r4fsck -n "$T/bad.img"
	echo "$output"
	[ "$status" -eq 4 ]
	[[ "$output" == *"block 19: journal holds an unreplayed transaction (last committed tx head at block 99999999"* ]]
	run r4fsck -p "$T/bad.img"
	[ "$status" -eq 4 ]
	[[ "$output" == *"block 19: journal"* ]]
	run r4fsck -y "$T/bad.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"fixed (journal): journal header (block 19) named a transaction that cannot be replayed (tx head 99999999)"* ]]
	repaired_clean "$T/bad.img"
}

@test "a used block marked free: marked used (preen)" {
	fresh
	setbit "$T/bad.img" 24 0
	csum_fix "$T/bad.img" 18
	run r4fsck -p "$T/bad.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"fixed (space-marked-free): bitmap block 18 (blocks 0..16383) rewritten from the blocks in use: 1 marked used, 0 marked free"* ]]
	cmp "$T/good.img" "$T/bad.img" || true
	repaired_clean "$T/bad.img"
	[ "$(peek "$T/bad.img" $((17 * 4096 + 8)) 8)" = 16359 ]
}

@test "a free block marked used: marked free, counted as space freed" {
	fresh
	setbit "$T/bad.img" 1000 1
	csum_fix "$T/bad.img" 18
	repaired "$T/bad.img" space-unreferenced
	[[ "$first" == *'"blocks_freed":1'* ]]
	r4fsck -n --json "$T/bad.img" | grep -q '"free_blocks":16359'
}

@test "bitmap checksum wrong: rewritten (preen)" {
	fresh
	poke "$T/bad.img" $((18 * 4096)) 12345 4
	run r4fsck -a "$T/bad.img"
	[ "$status" -eq 1 ]
	[[ "$output" == *"fixed (bitmap-checksum)"* ]]
	repaired_clean "$T/bad.img"
}

@test "free block count wrong: set (preen and -y)" {
	fresh
	poke "$T/bad.img" $((17 * 4096 + 8)) 1000 8
	repaired "$T/bad.img" free-count
	[ "$(peek "$T/bad.img" $((17 * 4096 + 8)) 8)" = 16359 ]
}

# After an edit the journal footer holds the counters too (a writable
# open lays them over the super block's): a wrong count in the super
# block alone is still what -n reports, and -p and -y fix it.
@test "after an edit, the super block's free and file counts wrong, the footer's right: -n, -p and -y agree" {
	local mode want_free want_files
	fresh
	r4debugfs -w -R "mkdir /d" "$T/bad.img"
	[ "$(peek "$T/bad.img" $((20 * 4096)) 8)" != 0 ]	# footer in use
	want_free=$(peek "$T/bad.img" $((17 * 4096 + 8)) 8)
	want_files=$(peek "$T/bad.img" $((17 * 4096 + 32)) 8)
	poke "$T/bad.img" $((17 * 4096 + 8)) $((want_free + 5)) 8
	poke "$T/bad.img" $((17 * 4096 + 32)) $((want_files + 3)) 8
	cp "$T/bad.img" "$T/bad2.img"
	for mode in -p -y; do
		cp "$T/bad2.img" "$T/bad.img"
		run r4fsck -n "$T/bad.img"
		echo "$output"
		[ "$status" -eq 4 ]
		[[ "$output" == *"free block count is $((want_free + 5))"* ]]
		run r4fsck "$mode" "$T/bad.img"
		echo "$mode: $output"
		[ "$status" -eq 1 ]
		[[ "$output" == *"fixed (free-count): free block count set to $want_free"* ]]
		[[ "$output" == *"fixed (file-count): file count set to $want_files"* ]]
		[ "$(peek "$T/bad.img" $((17 * 4096 + 8)) 8)" = "$want_free" ]
		[ "$(peek "$T/bad.img" $((17 * 4096 + 32)) 8)" = "$want_files" ]
		repaired_clean "$T/bad.img"
	done
}

@test "zeroed root node: the tree rebuilt from the leaf a scan finds" {
	fresh
	dd if=/dev/zero of="$T/bad.img" bs=4096 seek=23 count=1 conv=notrunc status=none
	run r4fsck -p "$T/bad.img"
	[ "$status" -eq 4 ]
	rebuilt "$T/bad.img" node
	[[ "$first" == *"1 found by a scan of unreachable used blocks"* ]]
	[[ "$first" == *'"items_dropped":0'* ]]
	r4debugfs -R "stat /" "$T/bad.img" | grep -q "nlink: *3"
}

@test "two items swapped out of key order: rebuilt, the root made anew" {
	fresh
	dd if="$T/good.img" of="$T/bad.img" bs=1 skip=$((24 * 4096 + 4058)) \
		seek=$((24 * 4096 + 4020)) count=32 conv=notrunc status=none
	dd if="$T/good.img" of="$T/bad.img" bs=1 skip=$((24 * 4096 + 4020)) \
		seek=$((24 * 4096 + 4058)) count=32 conv=notrunc status=none
	rebuilt "$T/bad.img" node
	[[ "$first" == *"the root directory's stat data was lost: made anew (mode 0755, plugin set from the backup copy)"* ]]
}

@test "item offset past the node: rebuilt item by item" {
	fresh
	poke "$T/bad.img" $((24 * 4096 + 4020 + 32)) 65000 2
	rebuilt "$T/bad.img" node
	[[ "$first" == *"1 damaged ones taken item by item"* ]]
}

@test "wrong mkfs id, wrong level: rebuilt" {
	fresh
	poke "$T/bad.img" $((24 * 4096 + 12)) 305419896 4
	rebuilt "$T/bad.img" node-mkfs-id
	[[ "$first" == *'"items_dropped":0'* ]]
	cp "$T/good.img" "$T/bad.img"
	poke "$T/bad.img" $((24 * 4096 + 26)) 3 1
	rebuilt "$T/bad.img" node-level
}

@test "pointer cycles: rebuilt, no hang; deep in a populated tree every file kept" {
	fresh
	poke "$T/bad.img" $((23 * 4096 + 28)) 23 8
	rebuilt "$T/bad.img" block-twice
	populated
	local root child
	root=$(peek "$T/bad.img" $((17 * 4096 + 16)) 8)
	[ "$(peek "$T/bad.img" $((17 * 4096 + 68)) 2)" -ge 3 ]
	child=$(peek "$T/bad.img" $((root * 4096 + 28)) 8)
	poke "$T/bad.img" $((child * 4096 + 28)) "$root" 8
	rebuilt "$T/bad.img" block-twice
	kept "$T/bad.img"
}

@test "a populated leaf zeroed: rebuilt, entries to lost objects removed, the rest kept" {
	populated
	local blk
	blk=$(r4debugfs --json -R "stat /many/entry_150" "$T/bad.img" | sed -n 's/.*"sd_block":\([0-9]*\).*/\1/p')
	dd if=/dev/zero of="$T/bad.img" bs=4096 seek="$blk" count=1 conv=notrunc status=none
	rebuilt "$T/bad.img" node
	r4manifest "$T/bad.img" >"$T/after.man" || true
	# Files whose stat data lived elsewhere are kept; count the others.
	kept "$T/bad.img" "/many/" || true
	local lost
	lost=$(grep -c "^/many/entry_" "$T/after.man" || true)
	echo "many: $lost of 300 entries kept"
	[ "$lost" -gt 0 ]
	[ "$lost" -lt 300 ]
}

# The leaf holding PATH's stat data.
sd_block() {
	r4debugfs --json -R "stat $2" "$1" | sed -n 's/.*"sd_block":\([0-9]*\).*/\1/p'
}

@test "a leaf's damaged header (magic, count, free space, level, plugin): mended, every item kept" {
	populated
	local blk d
	blk=$(sd_block "$T/good.img" /f3)
	# offset in the node header, value, bytes, the code the check gives
	for d in "8 0 4 node" "2 999 2 node" "6 65000 2 node" "4 9 2 node" \
		 "26 5 1 node-level" "0 7 2 node"; do
		set -- $d
		echo "node $blk: $d"
		cp "$T/good.img" "$T/bad.img"
		poke "$T/bad.img" $((blk * 4096 + $1)) "$2" "$3"
		rebuilt "$T/bad.img" "$4"
		[[ "$first" == *"1 damaged ones taken item by item); 0 nodes and 0 items dropped"* ]]
		kept "$T/bad.img"
	done
}

@test "an unreachable leaf with a damaged magic: found by the scan, mended, kept" {
	populated
	local blk twig off
	blk=$(sd_block "$T/good.img" /f3)
	# The twig's pointer to the leaf, pointed at a free block instead.
	for twig in $(r4debugfs -R "print tree" "$T/good.img" | sed -n 's/^node \([0-9]*\): node40, level 2,.*/\1/p'); do
		off=$(r4debugfs -R "print node $twig" "$T/good.img" | awk -v b="$blk" '
			/ nodeptr40 / { for (i = 1; i < NF; i++) if ($i == "offset") o = $(i + 1) }
			$1 == "child" && $2 == b { print o; exit }')
		[ -n "$off" ] && break
	done
	[ -n "$off" ]
	poke "$T/bad.img" $((twig * 4096 + off)) 4000 8
	poke "$T/bad.img" $((blk * 4096 + 8)) 0 4
	rebuilt "$T/bad.img"
	[[ "$first" == *"(1 found by a scan of unreachable used blocks"* ]]
	kept "$T/bad.img"
}

@test "the root's stat data with a mode that is not a directory's: made anew" {
	fresh
	poke "$T/bad.img" $((24 * 4096 + 28 + 2)) $((0170755)) 2
	rebuilt "$T/bad.img" stat-data
	[[ "$first" == *"the root directory's stat data was not a directory's: made anew"* ]]
	r4debugfs -R "stat /" "$T/bad.img" | grep -q "nlink: *3"
}

@test "entry '..' pointing to a missing object: pointed back (-y)" {
	fresh
	poke "$T/bad.img" $((24 * 4096 + 200 + 16)) $((0x99)) 8
	run r4fsck -p "$T/bad.img"
	[ "$status" -eq 4 ]
	[[ "$output" == *"UNEXPECTED INCONSISTENCY"* ]]
	repaired "$T/bad.img" entry dot-entry nlink
	[[ "$first" == *"entry '..' pointed at 2a"* ]]
	cmp "$T/good.img" "$T/bad.img" || true
}

@test "wrong nlink of the root: set (-y); preen refuses and changes nothing" {
	fresh
	poke "$T/bad.img" $((24 * 4096 + 32)) 5 4
	cp "$T/bad.img" "$T/before.img"
	run r4fsck -p "$T/bad.img"
	[ "$status" -eq 4 ]
	cmp "$T/bad.img" "$T/before.img"
	repaired "$T/bad.img" nlink
	[ "$(peek "$T/bad.img" $((24 * 4096 + 32)) 4)" = 3 ] ||
		r4debugfs -R "stat /" "$T/bad.img" | grep -q "nlink: *3"
}

@test "wrong directory size: set (-y)" {
	fresh
	poke "$T/bad.img" $((24 * 4096 + 36)) 7 8
	repaired "$T/bad.img" dir-size
	r4debugfs -R "stat /" "$T/bad.img" | grep -q "size: *2$"
}

# long_name IMAGE NAME: the stored name NAME of a directory, the entry
# before its last one, made to run to its item's end: the last entry's
# unit header is dropped (the bodies move up by its size) and NAME's NUL,
# the last entry's body and the freed bytes become 'x', the item's last
# byte NUL: a name of over 255 bytes, the item still well formed (the
# entries a read of the directory cannot get past, obj_dir_iter).
long_name() {
	python3 - "$1" "$2" <<'PY'
import struct, sys
img, name = sys.argv[1], sys.argv[2].encode()
bs, ihs, uhs, obs = 4096, 38, 26, 24
data = bytearray(open(img, 'rb').read())
i = data.find(name)
assert i > 0 and data.find(name, i + 1) < 0, "name not unique"
blk = i // bs
node = data[blk * bs:(blk + 1) * bs]
nr, fs, fss = struct.unpack_from('<HHH', node, 2)
offs = [struct.unpack_from('<H', node, bs - (k + 1) * ihs + 32)[0] for k in range(nr)]
ends = offs[1:] + [fss]
k = next(k for k in range(nr) if offs[k] <= i - blk * bs < ends[k])
start, L = offs[k], ends[k] - offs[k]
body = bytes(node[start:start + L])
units = struct.unpack_from('<H', body, 0)[0]
uoff = [struct.unpack_from('<H', body, 2 + u * uhs + 24)[0] for u in range(units)]
a = next(u for u in range(units) if body[uoff[u] + obs:uoff[u] + obs + len(name)] == name)
assert a == units - 2, "the stored name must be the second last entry"
# drop the last unit's header: the others' bodies move up by its size,
# and the name of unit a runs to the item's end (its NUL, the last
# unit's body, the freed bytes: 'x', the item's last byte NUL)
hdrs = bytearray(body[2:2 + (units - 1) * uhs])
for u in range(units - 1):
    struct.pack_into('<H', hdrs, u * uhs + 24, uoff[u] - uhs)
bodies = bytearray(body[2 + units * uhs:]) + bytearray(uhs)
nameend = uoff[a] - uhs + obs + len(name) - (2 + (units - 1) * uhs)
for j in range(nameend, len(bodies) - 1):
    bodies[j] = ord('x')
bodies[-1] = 0
new = struct.pack('<H', units - 1) + bytes(hdrs) + bytes(bodies)
assert len(new) == L
data[blk * bs + start:blk * bs + start + L] = new
open(img, 'wb').write(data)
assert L - (uoff[a] - uhs) - obs - 1 > 255
PY
}

@test "a directory with a stored name of over 255 bytes: size, bytes and nlink set as the tables set them (a read of it stops at the name)" {
	mkdir -p "$T/s/d"
	local a b
	a=$(printf 'a%.0s' $(seq 200)) b=$(printf 'b%.0s' $(seq 200))
	echo data >"$T/s/d/$a"
	ln "$T/s/d/$a" "$T/s/d/$b"
	r4pack create -q "$T/s" "$T/bad.img"
	# the second name goes: /d's size and bytes, the file's nlink wrong
	long_name "$T/bad.img" "$a"
	export SOURCE_DATE_EPOCH=1700000000
	cp "$T/bad.img" "$T/tab.img"
	run r4fsck -y --json "$T/bad.img"
	echo "$output"
	[ "$status" -eq 4 ]	# the long name stays (no fix renames it)
	local first=$output
	[[ "$first" == *'"code":"dir-size"'*'"code":"nlink"'* ]]
	[[ "$first" == *"the name is longer than 255 bytes"* ]]
	# the bounded check's list meets the name reading /d for its bytes
	# and repairs from the tables instead: the same report and bytes
	run env R4_CHECK_TABLES=1 r4fsck -y --json "$T/tab.img"
	[ "$status" -eq 4 ]
	[ "${output//"$T/tab.img"/"$T/bad.img"}" = "$first" ]
	cmp "$T/bad.img" "$T/tab.img"
	# the name counted in /d's bytes: 2 entries of 50 bytes, and 50 +
	# the name and its NUL
	r4debugfs -R "stat /d" "$T/bad.img" | grep -q "^bytes: *602$"
	run r4fsck -n "$T/bad.img"
	[ "$status" -eq 4 ]
	[ "$(grep -c "problem found" <<<"$output")" -eq 1 ]
}

@test "unallocated extents (never written data): rebuilt without them" {
	need_r4ref
	mkdir -p "$T/s2"
	head -c 20000 /dev/urandom >"$T/s2/big1"
	echo small >"$T/s2/small"
	truncate -s 64M "$T/ext.img"
	r4ref mkfs "$T/ext.img" "$T/s2" 2>/dev/null
	cp "$T/ext.img" "$T/bad.img"
	rebuilt "$T/bad.img" extent
	[[ "$first" == *"size set to 0 (was 20000)"* ]]
	r4debugfs -R "cat /small" "$T/bad.img" | grep -qx small
}

@test "a node pointer to a bitmap block of a 1 GiB volume: rebuilt" {
	r4mkfs -q "$T/bad.img" 1G
	poke "$T/bad.img" $((23 * 4096 + 28)) 32736 8
	rebuilt "$T/bad.img" block-twice
	r4fsck -n "$T/bad.img"
}

# ---- beyond fsck-check.bats ----

# Two extent files and a third file after them: twig 25 holds a nodeptr
# to leaf 26, a's extent (27..31), b's extent (32..39), a nodeptr to
# leaf 40 (what r4pack writes for this source; checked here).
twice_volume() {
	mkdir -p "$T/s3"
	head -c 20000 /dev/urandom >"$T/s3/a"
	head -c 30000 /dev/urandom >"$T/s3/b"
	echo hi >"$T/s3/c"
	r4pack create -q "$T/s3" "$T/good.img"
	r4manifest "$T/good.img" >"$T/good.man"
	r4debugfs -R "print node 25" "$T/good.img" >"$T/twig"
	grep -q "^#0 nodeptr40" "$T/twig"
	grep -q "child 26$" "$T/twig"
	grep -q "^#1 extent40 .*:10000:0\] offset 36 " "$T/twig"
	grep -q "start 27 width 5 (allocated)" "$T/twig"
	grep -q "^#2 extent40 .*:10001:0\] offset 52 " "$T/twig"
	grep -q "start 32 width 8 (allocated)" "$T/twig"
	grep -q "child 40$" "$T/twig"
	cp "$T/good.img" "$T/bad.img"
}

# b's unit moved to start at leaf 26: block 26 stays the leaf's, 27..31
# stay a's (first in key order), b gets copies of all six; its last two
# blocks (32, 33) are its own. Both files read what the blocks held.
@test "blocks claimed twice: a node and an earlier extent keep them, b gets copies" {
	twice_volume
	poke "$T/bad.img" $((25 * 4096 + 52)) 26 8
	run r4fsck -n "$T/bad.img"
	[ "$status" -eq 4 ]
	[[ "$output" == *"extent unit 0: block 26 is already a tree node"* ]]
	run r4fsck -p "$T/bad.img"
	[ "$status" -eq 4 ]
	no_tables "$T/bad.img"
	repaired "$T/bad.img" block-shared
	[[ "$first" == *'"rebuilt":false'* ]]
	[[ "$first" == *'"blocks_copied":6'* ]]
	[[ "$first" == *'"loss":{"entries_removed":0,"lost_found":0,"zeroed_ranges":0,"zeroed_bytes":0'* ]]
	[[ "$first" == *'"items_dropped":0'* ]]
	[[ "$first" == *'"done":"block 26 is file data of object 10001 [2a:4:62000000000000:10001:0] at file offset 0 and also a tree node, which keeps it'* ]]
	[[ "$first" == *'"done":"blocks 27..31 are file data of object 10001 [2a:4:62000000000000:10001:0] at file offset 4096 and also file data of object 10000 [2a:4:61000000000000:10000:0], first in key order, which keeps them'* ]]
	cmp <(r4debugfs -R "cat /b" "$T/bad.img") \
	    <(dd if="$T/good.img" bs=4096 skip=26 count=8 status=none | head -c 30000)
	cmp <(r4debugfs -R "cat /a" "$T/bad.img") "$T/s3/a"
	kept "$T/bad.img" "/b	"
	# b reads copies: none of its blocks is a's or the leaf's now.
	r4debugfs -R "blocks /b" "$T/bad.img" >"$T/bb"
	cat "$T/bb"
	! grep -Ew "2[6-9]|3[01]" "$T/bb" || false
}

# b's unit moved to 36..43: leaf 40 (found after b in the walk) keeps
# its block, b reads a copy of it; the rest of b's blocks are its own.
@test "blocks claimed twice: a node found after the extent keeps its block" {
	twice_volume
	poke "$T/bad.img" $((25 * 4096 + 52)) 36 8
	run r4fsck -n "$T/bad.img"
	[ "$status" -eq 4 ]
	[[ "$output" == *"block 40: block is a level-1 node (from block 25 item 3) and also file data of an extent found before it: the node keeps it"* ]]
	repaired "$T/bad.img" block-shared
	[[ "$first" == *'"blocks_copied":1,'* ]]
	[[ "$first" == *'"zeroed_ranges":0'* ]]
	cmp <(r4debugfs -R "cat /b" "$T/bad.img") \
	    <(dd if="$T/good.img" bs=4096 skip=36 count=8 status=none | head -c 30000)
	kept "$T/bad.img" "/b	"
}

# Two parents pointing at one node: not copied (a node cannot be), the
# tree is rebuilt as before (block-twice); b and a extent sharing blocks
# after the rebuild still get copies.
@test "blocks claimed twice: a node with two parents is rebuilt, shared data then copied" {
	twice_volume
	poke "$T/bad.img" $((25 * 4096 + 68)) 26 8
	poke "$T/bad.img" $((25 * 4096 + 52)) 29 8
	rebuilt "$T/bad.img" block-twice block-shared
	[[ "$first" == *'"blocks_copied":3,'* ]]
	cmp <(r4debugfs -R "cat /a" "$T/bad.img") "$T/s3/a"
	cmp <(r4debugfs -R "cat /b" "$T/bad.img") \
	    <(dd if="$T/good.img" bs=4096 skip=29 count=8 status=none | head -c 30000)
}

# body_ih IMAGE PATH: offset of the item header of PATH's first body
# item (tail or extent) in its node.
body_ih() {
	local line blk item
	line=$(r4debugfs -R "print file $2" "$1" | grep -E '^block [0-9]+ \(level [12]\), #[0-9]+ (plain40|tail40|extent40)' | head -n 1)
	blk=$(sed 's/^block \([0-9]*\) .*/\1/' <<<"$line")
	item=$(sed 's/.*, #\([0-9]*\) .*/\1/' <<<"$line")
	[ -n "$blk" ]
	[ -n "$item" ]
	echo $((blk * 4096 + 4096 - (item + 1) * 38))
}

# A body item's key with a damaged byte (ordering, then locality) names
# no stat data; its object id is one object's, which misses exactly that
# body: the rebuild mends the key instead of making the body a second
# object with that id (object-duplicate, left before).
@test "populated: a body item's key damaged: mended, every file kept" {
	populated
	local ih v
	ih=$(body_ih "$T/bad.img" /f3)
	v=$(peek "$T/bad.img" $((ih + 11)) 1)
	poke "$T/bad.img" $((ih + 11)) $((v ^ 5)) 1
	run r4fsck -n "$T/bad.img"
	[[ "$output" == *"of an object without stat data"* ]]
	rebuilt "$T/bad.img" body
	[[ "$first" == *"names no stat data; the only object "*" has no body there: its key mended to ["* ]]
	[[ "$first" != *'"object-duplicate"'* ]]
	[[ "$first" == *'"items_dropped":0'* ]]
	kept "$T/bad.img"
	cp "$T/good.img" "$T/bad.img"
	ih=$(body_ih "$T/bad.img" /f4)
	v=$(peek "$T/bad.img" $((ih + 4)) 1)
	poke "$T/bad.img" $((ih + 4)) $((v ^ 0x38)) 1
	rebuilt "$T/bad.img" body
	[[ "$first" == *"its key mended to ["* ]]
	kept "$T/bad.img"
}

# fsck.reiser4 calls a directory item whose key differs from its first
# entry's broken: the checker does too, and the rebuild drops it.
@test "a directory item's key damaged: found, rebuilt, clean to both checkers" {
	fresh
	poke "$T/bad.img" $((24 * 4096 + 4020 + 15)) 10 1
	run r4fsck -n "$T/bad.img"
	[ "$status" -eq 4 ]
	[[ "$output" == *"directory item: its key differs from its first entry's [2a:0:0:0:0]"* ]]
	rebuilt "$T/bad.img" item dot-entry
}

@test "status block marking the volume damaged: cleared (preen)" {
	fresh
	poke "$T/bad.img" $((21 * 4096 + 16)) 2 8
	run r4fsck -n "$T/bad.img"
	[ "$status" -eq 4 ]
	[[ "$output" == *"status block marks the volume damaged"* ]]
	run r4fsck -p "$T/bad.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"fixed (status): status block cleared (was 0x2)"* ]]
	repaired_clean "$T/bad.img"
	[ "$(peek "$T/bad.img" $((21 * 4096 + 16)) 8)" = 0 ]
}

@test "status block of garbage, or a status word of garbage: found by -n, fixed by -p and -y" {
	local mode
	fresh
	head -c 4096 /dev/urandom | dd of="$T/bad.img" bs=4096 seek=21 conv=notrunc status=none
	cp "$T/bad.img" "$T/bad2.img"
	run r4fsck -n "$T/bad.img"
	echo "$output"
	[ "$status" -eq 4 ]
	[[ "$output" == *"block 21: status block holds garbage: no status magic"* ]]
	run r4fsck -p "$T/bad.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"fixed (status): status block held garbage: written afresh"* ]]
	repaired_clean "$T/bad.img"
	cmp <(dd if="$T/bad.img" bs=4096 skip=21 count=1 status=none) \
	    <(dd if="$T/good.img" bs=4096 skip=21 count=1 status=none)
	for mode in -p -y; do
		cp "$T/good.img" "$T/bad.img"
		poke "$T/bad.img" $((21 * 4096 + 16)) $((0xdeadbeef00)) 8
		run r4fsck -n "$T/bad.img"
		echo "$output"
		[ "$status" -eq 4 ]
		[[ "$output" == *"status word 0xdeadbeef00 has bits no writer sets"* ]]
		run r4fsck "$mode" "$T/bad.img"
		echo "$output"
		[ "$status" -eq 1 ]
		[[ "$output" == *"fixed (status): status block cleared (was 0xdeadbeef00)"* ]]
		repaired_clean "$T/bad.img"
	done
}

@test "status block without its magic is clean, as the kernel takes it" {
	fresh
	dd if=/dev/zero of="$T/bad.img" bs=1 seek=$((21 * 4096)) count=16 conv=notrunc status=none
	poke "$T/bad.img" $((21 * 4096 + 16)) 2 8
	run r4fsck -n "$T/bad.img"
	echo "$output"
	[ "$status" -eq 0 ]
	run r4fsck -y "$T/bad.img"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "file count and next object id wrong: set (preen)" {
	fresh
	poke "$T/bad.img" $((17 * 4096 + 32)) 7 8
	poke "$T/bad.img" $((17 * 4096 + 24)) $((0x10000)) 8
	populated
	poke "$T/bad.img" $((17 * 4096 + 32)) 7 8
	poke "$T/bad.img" $((17 * 4096 + 24)) $((0x10001)) 8
	run r4fsck -p --json "$T/bad.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *'"code":"file-count"'* ]]
	[[ "$output" == *'"code":"oid"'* ]]
	repaired_clean "$T/bad.img"
	kept "$T/bad.img"
}

@test "populated: wrong nlink and size of a file, size past the body" {
	populated
	local a big
	a=$(sd_off "$T/bad.img" /a)
	big=$(sd_off "$T/bad.img" /f3)
	[ "$(peek "$T/bad.img" $((a + 4)) 4)" = 2 ]
	poke "$T/bad.img" $((a + 4)) 9 4
	poke "$T/bad.img" $((big + 8)) 500000 8
	no_tables "$T/bad.img"
	repaired "$T/bad.img" nlink file-size
	[[ "$first" == *"size 500000 is past the end of its body items"* ]]
	kept "$T/bad.img"
}

@test "populated: body past the size of a file (extent)" {
	populated
	local off
	off=$(sd_off "$T/bad.img" /d/large)
	poke "$T/bad.img" $((off + 8)) 4000 8
	no_tables "$T/bad.img"
	repaired "$T/bad.img" file-size
	# The size goes to the end of the body (blocks): the bytes stay.
	r4debugfs -R "stat /d/large" "$T/bad.img" | grep -q "size: *102400"
	kept "$T/bad.img" "/d/large	"
}

# The entry's ordering and object id both damaged: no stat data differs
# from its key in one element, nothing ties the two (keys.c).
@test "populated: an entry to a missing object removed, the object into /lost+found" {
	populated
	local off
	off=$(entry_off "$T/bad.img" / f5)
	poke "$T/bad.img" $((off + 8)) 12345 8
	poke "$T/bad.img" $((off + 16)) $((0x99999)) 8
	repaired "$T/bad.img" entry unreachable nlink
	[[ "$first" == *'"loss":{"entries_removed":1,"lost_found":1'* ]]
	[[ "$first" == *"entry 'f5' removed"* ]]
	[[ "$first" == *"linked as /lost+found/#"* ]]
	kept "$T/bad.img" "/f5	"
	# f5's bytes are in lost+found under its object id.
	local want
	want=$(grep "^/f5	" "$T/good.man" | cut -f 2-10)
	r4manifest "$T/bad.img" | grep "^/lost+found/#" | cut -f 2-10 | grep -qxF "$want"
}

@test "populated: a directory's entry removed: the subtree into /lost+found" {
	populated
	local off
	off=$(entry_off "$T/bad.img" / d)
	poke "$T/bad.img" $((off + 8)) 12345 8
	poke "$T/bad.img" $((off + 16)) $((0x99999)) 8
	repaired "$T/bad.img" entry unreachable
	kept "$T/bad.img" "/d[/	]"
	r4manifest "$T/bad.img" | grep -q "^/lost+found/#[0-9a-f]*/e/leaf	"
}

@test "SOURCE_DATE_EPOCH: what a repair stamps (/lost+found) has its time, two repairs give identical images" {
	populated
	local off
	off=$(entry_off "$T/bad.img" / f5)
	poke "$T/bad.img" $((off + 8)) 12345 8
	poke "$T/bad.img" $((off + 16)) $((0x99999)) 8
	cp "$T/bad.img" "$T/bad2.img"
	SOURCE_DATE_EPOCH=1234567890 run r4fsck -y "$T/bad.img"
	[ "$status" -eq 1 ]
	run r4debugfs -R "stat /lost+found" "$T/bad.img"
	echo "$output"
	[[ "$output" == *"mtime:       1234567890.000000000 "* ]]
	[[ "$output" == *"ctime:       1234567890.000000000 "* ]]
	SOURCE_DATE_EPOCH=1234567890 run r4fsck -y "$T/bad2.img"
	[ "$status" -eq 1 ]
	cmp "$T/bad.img" "$T/bad2.img"
}

# Only an entry's object id damaged: the stat data that differs in that
# element alone, which nobody names, has its body items (a file) or its
# entries (a directory) under its own key: the entry is the damaged one
# and is pointed back at it (nothing moves, nothing into /lost+found).
@test "entry: an entry's object id damaged: pointed back at its file and at its directory" {
	populated
	local off
	off=$(entry_off "$T/bad.img" / f5)
	poke "$T/bad.img" $((off + 16)) $((0x99999)) 8
	off=$(entry_off "$T/bad.img" / d)
	poke "$T/bad.img" $((off + 16)) $((0x99998)) 8
	repaired "$T/bad.img" entry unreachable nlink
	[[ "$first" == *"entry 'f5' of directory 2a points at [2a:1:66350000000000:99999:0], which no stat data has; stat data [2a:1:66350000000000:10025:0], which no entry named, is its object (its body items are under its own key, none under the entry's): 1 entry pointed there"* ]]
	[[ "$first" == *"entry 'd' of directory 2a points at [2a:1:64000000000000:99998:0], which no stat data has; stat data [2a:1:64000000000000:10001:0], which no entry named, is its object (its directory entries are under its own object id, none under the entry's)"* ]]
	[[ "$first" == *'"loss":{"entries_removed":0,"lost_found":0'* ]]
	# No object id was raised to the damaged one.
	[[ "$first" != *'"code":"oid"'* ]]
	kept "$T/bad.img"
}

@test "populated: a second name of a directory removed" {
	populated
	local off oid
	off=$(entry_off "$T/bad.img" / a)
	oid=$(r4debugfs --json -R "stat /many" "$T/bad.img" | sed -n 's/.*"oid":\([0-9]*\).*/\1/p')
	# Point /a at /many: many gets a second name, a is unreachable.
	local ord
	ord=$(r4debugfs --json -R "stat /many" "$T/bad.img" | sed -n 's/.*"ordering":"\{0,1\}\([0-9]*\).*/\1/p')
	poke "$T/bad.img" $((off + 8)) "$ord" 8
	poke "$T/bad.img" $((off + 16)) "$oid" 8
	run r4fsck -n "$T/bad.img"
	[[ "$output" == *"second name of the directory"* ]]
	repaired "$T/bad.img" dir-hard-link
	kept "$T/bad.img" "/a	" "/d/hard	"
	r4manifest "$T/bad.img" | grep -q "^/many/entry_1	"
}

@test "-n writes nothing: a pending transaction stays pending" {
	populated
	R4_FAULT=cut-after=1000000 r4debugfs -w -R "rm /f1" "$T/bad.img" >/dev/null
	cp "$T/bad.img" "$T/before.img"
	run r4fsck -n "$T/bad.img"
	[ "$status" -eq 0 ]
	cmp "$T/bad.img" "$T/before.img"
}

@test "-z saves the old blocks, --undo puts them back" {
	populated
	local a
	a=$(sd_off "$T/bad.img" /a)
	poke "$T/bad.img" $((a + 4)) 9 4
	poke "$T/bad.img" $((17 * 4096 + 8)) 1000 8
	cp "$T/bad.img" "$T/before.img"
	run r4fsck -y -z "$T/undo" "$T/bad.img"
	echo "$output"
	[ "$status" -eq 1 ]
	! cmp -s "$T/bad.img" "$T/before.img" || false
	run r4fsck -y -z "$T/undo" "$T/bad.img"
	[ "$status" -eq 8 ]	# the undo file exists: refused
	run r4fsck --undo "$T/undo" "$T/bad.img"
	echo "$output"
	[ "$status" -eq 0 ]
	cmp "$T/bad.img" "$T/before.img"
	# A damaged undo file is refused with 8.
	head -c 100 "$T/undo" >"$T/undo2"
	run r4fsck --undo "$T/undo2" "$T/bad.img"
	[ "$status" -eq 8 ]
	printf 'nonsense' >"$T/undo3"
	run r4fsck --undo "$T/undo3" "$T/bad.img"
	[ "$status" -eq 8 ]
}

@test "every problem code is in the man page (the table rows: test_repair)" {
	for c in master format40 status backup journal node node-block \
		 block-twice node-mkfs-id node-level node-empty delimiting-key \
		 item extent bitmap-checksum bitmap-tail space-unreferenced \
		 space-marked-free free-count stat-data object-duplicate oid \
		 file-count entry dot-entry nlink dir-size file-size body \
		 unreachable dir-hard-link file-gap truncated block-shared \
		 compressed-cluster journal-unreplayed \
		 ccreg-leading-hole ccreg-unmerged ccreg-conv ccreg-crossing; do
		grep -q -- "$(sed 's/-/\\\\-/g' <<<"$c")" "$top_srcdir/man/r4fsck.8"
	done
}

# ---- a test for every problem code not met above ----

# Offset of the item header of item I of block B (node40, large keys).
ih_at() { echo $(($1 * 4096 + 4096 - ($2 + 1) * 38)); }
# Offset of the item header of PATH's stat data, or of its first tail.
sd_ih() {
	local js
	js=$(r4debugfs --json -R "stat $2" "$1")
	ih_at "$(sed -n 's/.*"sd_block":\([0-9]*\).*/\1/p' <<<"$js")" \
	      "$(sed -n 's/.*"sd_item":\([0-9]*\).*/\1/p' <<<"$js")"
}
tail_ih() {
	r4debugfs -R "print file $2" "$1" | awk '/ plain40 / {
		i = $5; sub("#", "", i); print $2 * 4096 + 4096 - (i + 1) * 38; exit }'
}

@test "node-block: a pointer past the end of the volume: rebuilt" {
	fresh
	poke "$T/bad.img" $((23 * 4096 + 28)) 1000000000 8
	rebuilt "$T/bad.img" node-block
}

@test "node-empty: a leaf with no items: rebuilt, the root made anew" {
	fresh
	poke "$T/bad.img" $((24 * 4096 + 2)) 0 2
	poke "$T/bad.img" $((24 * 4096 + 4)) 4068 2
	poke "$T/bad.img" $((24 * 4096 + 6)) 28 2
	rebuilt "$T/bad.img" node-empty
	[[ "$first" == *"the root directory's stat data was lost: made anew"* ]]
}

@test "item: a directory item's entry count past its body: rebuilt" {
	fresh
	poke "$T/bad.img" $((24 * 4096 + 122)) 200 2
	rebuilt "$T/bad.img" item
}

@test "bitmap-tail: a bit past the end of the volume clear: set (preen)" {
	fresh
	setbit "$T/bad.img" 20000 0
	csum_fix "$T/bad.img" 18
	run r4fsck -p --json "$T/bad.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *'"code":"bitmap-tail","block":18'* ]]
	repaired_clean "$T/bad.img"
	cmp <(dd if="$T/good.img" bs=4096 skip=18 count=1 status=none) \
	    <(dd if="$T/bad.img" bs=4096 skip=18 count=1 status=none)
}

@test "delimiting-key: a key past the right delimiting key: rebuilt, the other files kept" {
	populated
	local blk n oid path
	blk=$(r4debugfs -R "print file /f3" "$T/good.img" | awk '/ plain40 / { print $2; exit }')
	n=$(peek "$T/good.img" $((blk * 4096 + 2)) 2)
	# The leaf's last item: its ordering made the largest there is.
	oid=$(peek "$T/good.img" $(( $(ih_at "$blk" $((n - 1))) + 16 )) 8)
	path=$(r4debugfs -R "ncheck $oid" "$T/good.img" | awk '{ print $NF; exit }')
	echo "block $blk item $((n - 1)): object $oid ($path)"
	[ -n "$path" ]
	poke "$T/bad.img" $(( $(ih_at "$blk" $((n - 1))) + 8 )) $((0x7fffffffffffffff)) 8
	rebuilt "$T/bad.img" delimiting-key
	kept "$T/bad.img" "$path	"
}

@test "file-gap: a file's body starting past offset 0: the break zeroed" {
	populated
	poke "$T/bad.img" $(( $(tail_ih "$T/good.img" /f3) + 24 )) 100 8
	rebuilt "$T/bad.img" file-gap file-size
	[[ "$first" == *"no body item held bytes 0..99: filled with zeros"* ]]
	[[ "$first" == *'"zeroed_ranges":1,"zeroed_bytes":100'* ]]
	kept "$T/bad.img" "/f3	"
	cmp <(r4debugfs -R "cat /f3" "$T/bad.img" | tail -c +101) <(head -c 1191 "$T/src/f3")
}

# ---- compressed files (ccreg40, doc/compress.md §7) ----

# A compressed volume (r4pack --compress): /big spans four clusters over
# many leaves, /small is one raw cluster, /d/text one packed cluster;
# its manifest in $T/good.man.
compressed() {
	local s=$T/src i
	mkdir -p "$s/d"
	seq 1 40000 >"$s/big"
	head -c 100 /dev/urandom >"$s/small"
	seq 1 2000 >"$s/d/text"
	head -c 30000 /dev/urandom >"$s/rnd"
	for i in $(seq 1 20); do echo "file $i" >"$s/d/f$i"; done
	r4pack create -q --compress "$s" "$T/good.img"
	r4manifest "$T/good.img" >"$T/good.man"
	cp "$T/good.img" "$T/bad.img"
	[[ "$(r4debugfs -R "stat /big" "$T/good.img")" == *ccreg40* ]]
}
# Absolute offset of the body of the first item of the second leaf that
# holds bytes of /big's cluster 1 (a leaf of that cluster alone).
big_item() {
	local blk off
	blk=$(r4debugfs -R "blocks /big" "$1" |
		sed -n 's/^  file offset 65536, .*tail block \([0-9]*\)$/\1/p' | sed -n 2p)
	off=$(r4debugfs -R "print node $blk" "$1" |
		sed -n 's/^#0 ctail40 .* offset \([0-9]*\) len .*/\1/p')
	[ -n "$blk" ] && [ -n "$off" ] && echo $((blk * 4096 + off))
}

@test "compressed-cluster: a byte of a packed cluster: its items removed, it reads as zeros (a zeroed range)" {
	compressed
	local o
	o=$(( $(big_item "$T/good.img") + 2000 ))
	poke "$T/bad.img" $o $(( $(peek "$T/bad.img" $o 1) ^ 0x5a )) 1
	repaired "$T/bad.img" compressed-cluster
	[[ "$first" == *"cluster 1 (tree node "*") unreadable: its ctail40 items removed, bytes 65536..131071 now read as zeros"* ]]
	[[ "$first" == *'"zeroed_ranges":1,"zeroed_bytes":65536'* ]]
	kept "$T/bad.img" "/big	"
	r4debugfs -R "cat /big" "$T/bad.img" >"$T/big"
	cmp -n 65536 "$T/big" "$T/src/big"
	cmp -i 65536 -n 65536 "$T/big" /dev/zero
	cmp -i 131072 "$T/big" "$T/src/big"
}

@test "compressed-cluster: a size past the last cluster's bytes: set from them (no byte lost)" {
	compressed
	poke "$T/bad.img" $(( $(sd_off "$T/good.img" /small) + 8 )) 1000000 8
	repaired "$T/bad.img" compressed-cluster
	[[ "$first" == *"size set to 100 (was 1000000), where its last cluster's bytes end"* ]]
	kept "$T/bad.img"
}

@test "compressed-cluster: a cluster shift byte changed in one item of a cluster: set back (no byte lost)" {
	compressed
	poke "$T/bad.img" "$(big_item "$T/good.img")" 14 1
	repaired "$T/bad.img" compressed-cluster
	[[ "$first" == *"has cluster shift 14, the file's other items 16: set to 16"* ]]
	kept "$T/bad.img"
}

@test "body: a compressed file's plugin id damaged: its plugin set mended from its clusters (no byte lost)" {
	compressed
	local o
	o=$(sd_off "$T/good.img" /d/text)
	# The plugin set's first id: after the mask (2), the light weight
	# (14), unix (28) and, when the mask has it, large times (12)
	# extensions, the set's count (2) and the member's type (2); r4pack
	# leaves out large times when every time is whole seconds
	# (SOURCE_DATE_EPOCH).
	o=$((o + 44 + ($(peek "$T/bad.img" $o 2) & 4 ? 12 : 0) + 4))
	[ "$(peek "$T/bad.img" $o 2)" -eq 4 ]	# pset: ccreg40
	poke "$T/bad.img" $o $((0x77)) 2
	repaired "$T/bad.img" body
	[[ "$first" == *"plugin set mended from its clusters: ccreg40 (was unknown)"* ]]
	kept "$T/bad.img"
}

@test "body: a compressed body whose stat data was lost: a ccreg40 stat data made for it, every byte read back" {
	compressed
	poke "$T/bad.img" "$(sd_off "$T/good.img" /d/text)" $((0xffff)) 2
	rebuilt "$T/bad.img" body
	[[ "$first" == *"made anew for its compressed body (ccreg40, 65536-byte clusters, zstd1, size 8893"* ]]
	kept "$T/bad.img" "/d/text	"
	r4debugfs -R "cat /d/text" "$T/bad.img" | cmp - "$T/src/d/text"
}

# ---- compressed files the Reiser4 kernel cannot take (doc/compress.md §6, §7) ----

# A compressed volume (zstd1, lattd) whose /f (200,000 bytes of one
# repeated line, four clusters) has one small ctail40 item a cluster,
# in a leaf with other files' items; its manifest in $T/good.man.
cclayout() {
	local s=$T/src i
	mkdir -p "$s"
	yes hello | head -c 200000 >"$s/f"
	for i in $(seq 1 30); do echo "small $i" >"$s/g$i"; done
	r4pack create -q --compress=zstd1 -o compressMode=lattd "$@" "$s" "$T/good.img"
	r4manifest "$T/good.img" >"$T/good.man"
	cp "$T/good.img" "$T/bad.img"
	run r4fsck -n "$T/good.img"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
}
# ctail_items IMAGE PATH: "BLOCK ITEM OFFSET" (offset in hex) of each of
# PATH's ctail40 items, in key order.
ctail_items() {
	r4debugfs -R "print file $2" "$1" |
		sed -n 's/^block \([0-9]*\) (level 1), #\([0-9]*\) ctail40 .*:\([0-9a-f]*\)\] offset .*/\1 \2 \3/p'
}
# fsck_n_reports IMAGE CODE TEXT: r4fsck -n finds CODE (--json) with TEXT
# in its message, and nothing else but ALSO (codes, optional).
fsck_n_reports() {
	run r4fsck -n --json "$1"
	echo "$output"
	[ "$status" -eq 4 ]
	[[ "$output" == *"\"code\":\"$2\""* ]]
	[[ "$output" == *"$3"* ]]
}
# mended IMAGE: a second check is clean, fsck.reiser4 calls it
# consistent, and every file reads as before ($T/good.man; /f as $T/want).
mended() {
	run r4fsck -n "$1"
	echo "$output"
	[ "$status" -eq 0 ]
	oracle_fsck "$1"
	kept "$1" "/f	"
	r4debugfs -R "cat /f" "$1" | cmp - "$T/want"
}

@test "ccreg-leading-hole: cluster 0 a hole before data: -n names the path and the kernel panic, -p stores cluster 0 as zeros (compressed), bytes one cluster more" {
	cclayout
	local at
	at=$(ctail_items "$T/good.img" /f | awk '$3 == "0" { print $1, $2 }')
	[ -n "$at" ]
	node_drop "$T/bad.img" $at
	# the kernel's bytes for three clusters with items (doc/compress.md §2.3)
	poke "$T/bad.img" $(( $(sd_off "$T/bad.img" /f) + 36 )) $((3 * 65536)) 8
	{ head -c 65536 /dev/zero; tail -c +65537 "$T/src/f"; } >"$T/want"
	r4debugfs -R "cat /f" "$T/bad.img" | cmp - "$T/want"
	cp "$T/bad.img" "$T/bad2.img"
	fsck_n_reports "$T/bad.img" ccreg-leading-hole \
		"compressed file /f (object 10000): cluster 0 is a hole (no ctail40 item) while cluster 1 has items (tree node "
	[[ "$output" == *"the Reiser4 kernel panics reading this file"* ]]
	[ "$(grep -o '"code"' <<<"$output" | wc -l)" -eq 1 ]
	run r4fsck -p "$T/bad.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"fixed (ccreg-leading-hole): compressed file /f (object 10000): cluster 0 stored as an all-zero cluster (compressed, "*" bytes for 65536)"* ]]
	mended "$T/bad.img"
	[ "$(ctail_items "$T/bad.img" /f | awk '{ print $3 }' | tr '\n' ' ')" = "0 10000 20000 30000 " ]
	r4debugfs -R "stat /f" "$T/bad.img" | grep -q "bytes: *262144$"
	# -y does the same
	repaired "$T/bad2.img" ccreg-leading-hole
	cmp <(r4debugfs -R "cat /f" "$T/bad2.img") "$T/want"
}

@test "ccreg-leading-hole: in compression mode none cluster 0 is stored as raw zeros (two items of 4K clusters)" {
	cclayout -o compressMode=none -o cluster=4K
	local b i
	# cluster 0's items, from the last (item numbers stay valid)
	ctail_items "$T/good.img" /f | awk 'length($3) <= 3' |
		sort -k1,1n -k2,2nr >"$T/c0"
	[ -s "$T/c0" ]
	while read -r b i _; do node_drop "$T/bad.img" "$b" "$i"; done <"$T/c0"
	poke "$T/bad.img" $(( $(sd_off "$T/bad.img" /f) + 36 )) $((48 * 4096)) 8
	{ head -c 4096 /dev/zero; tail -c +4097 "$T/src/f"; } >"$T/want"
	fsck_n_reports "$T/bad.img" ccreg-leading-hole "the Reiser4 kernel panics reading this file"
	run r4fsck -p "$T/bad.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"cluster 0 stored as an all-zero cluster (raw, 4096 bytes for 4096)"* ]]
	mended "$T/bad.img"
	r4debugfs -R "stat /f" "$T/bad.img" | grep -q "bytes: *200704$"
}

@test "ccreg-unmerged: two ctail40 items of one disk cluster side by side in a leaf: -n reports them, -p joins them (bytes unchanged)" {
	cclayout
	local b i
	read -r b i _ < <(ctail_items "$T/good.img" /f | awk '$3 == "10000"')
	[ -n "$i" ]
	node_split "$T/bad.img" "$b" "$i" 10
	cp "$T/src/f" "$T/want"
	[ "$(ctail_items "$T/bad.img" /f | awk '{ print $3 }' | tr '\n' ' ')" = "0 10000 1000a 20000 30000 " ]
	r4debugfs -R "cat /f" "$T/bad.img" | cmp - "$T/want"
	cp "$T/bad.img" "$T/bad2.img"
	fsck_n_reports "$T/bad.img" ccreg-unmerged \
		"compressed file /f (object 10000), cluster 1, tree node $b: ctail40 items $i and $((i + 1)) (offsets 65536 and 65546) hold one disk cluster side by side, unmerged"
	[ "$(grep -o '"code"' <<<"$output" | wc -l)" -eq 1 ]
	run r4fsck -p "$T/bad.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"fixed (ccreg-unmerged): compressed file /f (object 10000), cluster 1, tree node $b: 2 ctail40 items from offset 65536 joined into one of "*" bytes"* ]]
	mended "$T/bad.img"
	[ "$(ctail_items "$T/bad.img" /f | awk '{ print $3 }' | tr '\n' ' ')" = "0 10000 20000 30000 " ]
	repaired "$T/bad2.img" ccreg-unmerged
}

@test "ccreg-conv: a compressed file past its first cluster in compression mode conv: -n reports it, -p stores lattd in its plugin set" {
	cclayout
	# conv in the file's own plugin set, else in the root's (which the
	# file then takes; the backups say otherwise: preen rewrites them)
	pset_set "$T/bad.img" /f 11 4 || pset_set "$T/bad.img" / 11 4
	cp "$T/src/f" "$T/want"
	fsck_n_reports "$T/bad.img" ccreg-conv \
		"compressed file /f (object 10000): 200000 bytes, longer than its 65536-byte first cluster, in compression mode conv"
	[[ "$output" == *"a write into it hits a BUG"* ]]
	cp "$T/bad.img" "$T/bad2.img"
	run r4fsck -p "$T/bad.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"fixed (ccreg-conv): compressed file /f (object 10000): compression mode lattd stored in its plugin set (was conv, 134464 bytes past its first cluster)"* ]]
	mended "$T/bad.img"
	r4debugfs -R "print file /f" "$T/bad.img" | grep -q "plugin set: object=4 compressMode=1"
	repaired "$T/bad2.img" ccreg-conv
}

@test "ccreg-crossing: libreiser4's ctail40 items across a cluster end (65,537 and 1,048,579 bytes): -p leaves them, -y cuts them, every byte kept" {
	need_oracle
	need_r4ref
	local s=$T/lsrc
	mkdir -p "$s"
	head -c 65537 /dev/urandom >"$s/a65537"
	seq 1 200000 | head -c 1048579 >"$s/b1048579"
	echo small >"$s/s"
	truncate -s 64M "$T/l.img"
	R4REF_CCREG=1 r4ref mkfs -o compressMode=none -o compress=gzip1 "$T/l.img" "$s"
	fsck_n_reports "$T/l.img" ccreg-crossing \
		"compressed file /a65537 (object 10000), cluster 0, tree node "
	[[ "$output" == *"ctail40 item of 1483 bytes at offset 64054 crosses the cluster end"* ]]
	[[ "$output" == *"compressed file /b1048579 (object 10001), cluster 15, tree node "*"crosses the cluster end"* ]]
	[ "$(grep -o '"code"' <<<"$output" | wc -l)" -eq 2 ]
	run r4fsck -p "$T/l.img"
	[ "$status" -eq 4 ]
	run r4fsck -y "$T/l.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"fixed (ccreg-crossing): compressed file /a65537 (object 10000), tree node "*": the ctail40 item of 1483 bytes at offset 64054, which crossed the end of cluster 0, cut at each cluster end (no byte moved)"* ]]
	run r4fsck -n "$T/l.img"
	[ "$status" -eq 0 ]
	oracle_fsck "$T/l.img"
	for f in a65537 b1048579 s; do
		r4debugfs -R "cat /$f" "$T/l.img" | cmp - "$s/$f"
	done
	# libreiser4 reads the same bytes
	[ "$(oracle r4ref cat "$T/l.img" /a65537 | sha256sum)" = "$(sha256sum <"$s/a65537")" ]
}

# sha_of IMAGE PATH: the sha256 of a file of the volume.
sha_of() { r4debugfs -R "cat $2" "$1" | sha256sum | cut -d ' ' -f 1; }

# A stat data's object id damaged: the entry points at a key no stat
# data has, under which body items lie that the stat data's size fits;
# its key differs from the entry's in the object id only: it is put back
# there, not moved to /lost+found (nothing else moves).
@test "entry: a file's stat data keyed to another object id: put back under its name" {
	populated
	poke "$T/bad.img" $(( $(sd_ih "$T/good.img" /f3) + 16 )) $((0x20000)) 8
	repaired "$T/bad.img" entry unreachable body
	[[ "$first" == *'"rebuilt":false'* ]]
	[[ "$first" == *"entry 'f3' of directory 2a points at [2a:1:66330000000000:"*"], which no stat data had; stat data [2a:1:66330000000000:20000:0], which no entry named, fits it (body items with that key exist, and its size fits them): re-keyed there (0 body items with it)"* ]]
	[[ "$first" == *'"loss":{"entries_removed":0,"lost_found":0'* ]]
	[ "$(sha_of "$T/bad.img" /f3)" = "$(sha256sum <"$T/src/f3" | cut -d ' ' -f 1)" ]
	kept "$T/bad.img"
}

# The ordering of a stat data's key damaged (the key stays in order in
# its leaf): the body items with the key the entry names tie it there.
@test "entry: a file's stat data ordering damaged: its body ties it back under its name" {
	populated
	local o v
	o=$(( $(sd_ih "$T/good.img" /f3) + 8 ))
	v=$(peek "$T/bad.img" $o 1)
	poke "$T/bad.img" $o $((v ^ 1)) 1
	repaired "$T/bad.img" entry unreachable body
	[[ "$first" == *"fits it (body items with that key exist, and its size fits them): re-keyed there"* ]]
	[ "$(sha_of "$T/bad.img" /f3)" = "$(sha256sum <"$T/src/f3" | cut -d ' ' -f 1)" ]
	kept "$T/bad.img"
}

# The same with a leaf's level byte damaged too: the tree rebuild leaves
# the body items under the key the entry gives (they are not mended to
# the stat data's damaged key): the stat data goes back there, and the
# file keeps its object id.
@test "entry: a stat data's object id damaged and a tree rebuilt: the file keeps its object id" {
	populated
	local oid blk
	oid=$(r4debugfs --json -R "stat /f3" "$T/good.img" | sed -n 's/.*"oid":\([0-9]*\).*/\1/p')
	poke "$T/bad.img" $(( $(sd_ih "$T/good.img" /f3) + 16 )) $((0x20000)) 8
	blk=$(r4debugfs --json -R "stat /many/entry_100" "$T/good.img" | sed -n 's/.*"sd_block":\([0-9]*\).*/\1/p')
	poke "$T/bad.img" $((blk * 4096 + 26)) 0 1
	rebuilt "$T/bad.img" node-level entry unreachable
	[[ "$first" == *"stat data [2a:1:66330000000000:20000:0], which no entry named, fits it (body items with that key exist, and its size fits them): re-keyed there"* ]]
	[ "$(r4debugfs --json -R "stat /f3" "$T/bad.img" | sed -n 's/.*"oid":\([0-9]*\).*/\1/p')" = "$oid" ]
	kept "$T/bad.img"
}

# Never a guess: a stat data two missing keys fit stays where it is (the
# entries go, the objects into /lost+found, as before).
@test "entry: a stat data two entries' keys fit is not re-keyed" {
	populated
	local off ord
	poke "$T/bad.img" $(( $(sd_ih "$T/good.img" /f3) + 16 )) $((0x20000)) 8
	ord=$(r4debugfs --json -R "stat /f3" "$T/good.img" | sed -n 's/.*"ordering":"\{0,1\}\([0-9]*\).*/\1/p')
	off=$(entry_off "$T/bad.img" / f5)
	poke "$T/bad.img" $((off + 8)) "$ord" 8
	poke "$T/bad.img" $((off + 16)) $((0x30000)) 8
	repaired "$T/bad.img" entry unreachable
	[[ "$first" != *"re-keyed there"* ]]
	[[ "$first" == *'"loss":{"entries_removed":2,"lost_found":2'* ]]
	[[ "$first" == *"linked as /lost+found/#20000"* ]]
	kept "$T/bad.img" "/f3	" "/f5	"
}

# f4's stat data keyed to f3's object id: two stat data with one id; the
# one no entry names fits the key f4's entry gives: put back there.
@test "object-duplicate: a stat data keyed to another file's object id: put back under its name" {
	populated
	local oid
	oid=$(r4debugfs --json -R "stat /f3" "$T/good.img" | sed -n 's/.*"oid":\([0-9]*\).*/\1/p')
	poke "$T/bad.img" $(( $(sd_ih "$T/good.img" /f4) + 16 )) "$oid" 8
	run r4fsck -n --json "$T/bad.img"
	echo "$output"
	[ "$status" -eq 4 ]
	[[ "$output" == *'"code":"object-duplicate"'*'a second stat data with this object id'* ]]
	repaired "$T/bad.img" object-duplicate entry unreachable body
	[[ "$first" == *"entry 'f4' of directory 2a points at [2a:1:66340000000000:10023:0], which no stat data had; stat data [2a:1:66340000000000:10018:0]"* ]]
	[ "$(sha_of "$T/bad.img" /f4)" = "$(sha256sum <"$T/src/f4" | cut -d ' ' -f 1)" ]
	kept "$T/bad.img"
}

# dup_volume: a populated volume whose next object id went back to f3's
# before /zz was written (how a duplicate comes about): /zz has f3's
# object id, with its own stat data, body and entry.
dup_volume() {
	populated
	local oid
	oid=$(r4debugfs --json -R "stat /f3" "$T/good.img" | sed -n 's/.*"oid":\([0-9]*\).*/\1/p')
	poke "$T/bad.img" $((17 * 4096 + 24)) "$oid" 8
	head -c 5000 /dev/urandom >"$T/zz"
	r4debugfs -w -R "write $T/zz /zz" "$T/bad.img"
	[ "$(r4debugfs --json -R "stat /zz" "$T/bad.img" | sed -n 's/.*"oid":\([0-9]*\).*/\1/p')" = "$oid" ]
	r4manifest "$T/bad.img" >"$T/good.man"
}

# Both fit (named from their locality, bodies under their keys): f3,
# first in key order, keeps the id; /zz gets a fresh one (the next
# object id, which the super block then passes), every byte kept.
@test "object-duplicate: two named files with one object id: the second gets a fresh one" {
	dup_volume
	local oid
	oid=$(r4debugfs --json -R "stat /f3" "$T/good.img" | sed -n 's/.*"oid":\([0-9]*\).*/\1/p')
	repaired "$T/bad.img" object-duplicate oid
	# (how many body items /zz has depends on how its cluster was cut:
	# items of one cluster side by side in a leaf are joined first,
	# ccreg-unmerged; the sha256 below shows that every byte moved)
	[[ "$first" == *"object id 10018 is two stat data's: [2a:1:66330000000000:10018:0] keeps it (both fit; the first in key order); [2a:1:7a7a0000000000:10018:0] given the new object id "*": stat data and "*" body items re-keyed to [2a:1:7a7a0000000000:"*"], 1 entry pointed there"* ]]
	[[ "$first" == *'"loss":{"entries_removed":0,"lost_found":0'* ]]
	# The entry was pointed at the new key in the same transaction: no
	# later round found it pointing nowhere.
	[[ "$first" != *'"code":"entry"'* ]]
	[ "$(sha_of "$T/bad.img" /zz)" = "$(sha256sum <"$T/zz" | cut -d ' ' -f 1)" ]
	[ "$(r4debugfs --json -R "stat /f3" "$T/bad.img" | sed -n 's/.*"oid":\([0-9]*\).*/\1/p')" = "$oid" ]
	[ "$(r4debugfs --json -R "stat /zz" "$T/bad.img" | sed -n 's/.*"oid":\([0-9]*\).*/\1/p')" != "$oid" ]
	kept "$T/bad.img"
}

# /zz's entry damaged too (ordering and object id: nothing ties it to a
# stat data): no name points at the second stat data; the entry goes,
# the second stat data gets a fresh id and goes to /lost+found under it,
# every byte kept.
@test "object-duplicate: the second stat data nobody names: a fresh object id, into /lost+found" {
	dup_volume
	local off
	off=$(entry_off "$T/bad.img" / zz)
	poke "$T/bad.img" $((off + 8)) 12345 8
	poke "$T/bad.img" $((off + 16)) $((0x99999)) 8
	repaired "$T/bad.img" object-duplicate entry unreachable
	[[ "$first" == *"keeps it (named, the other not); [2a:1:7a7a0000000000:10018:0] given the new object id "*" (no name: it goes to /lost+found)"* ]]
	[[ "$first" == *'"loss":{"entries_removed":1,"lost_found":1'* ]]
	local n
	n=$(r4debugfs -R "ls /lost+found" "$T/bad.img" | grep '^#')
	[ -n "$n" ]
	[ "$(sha_of "$T/bad.img" "/lost+found/$n")" = "$(sha256sum <"$T/zz" | cut -d ' ' -f 1)" ]
	kept "$T/bad.img" "/zz	"
}

@test "a repair whose check cannot spill to \$TMPDIR checks with the tables in memory: the same output and image" {
	populated
	local a
	a=$(sd_off "$T/bad.img" /a)
	poke "$T/bad.img" $((a + 4)) 9 4
	cp "$T/bad.img" "$T/bad2.img"
	# one time for both repairs, whatever they stamp
	export SOURCE_DATE_EPOCH=1700000000
	run r4fsck -y "$T/bad.img"
	[ "$status" -eq 1 ]
	want=$output
	TMPDIR=$T/none R4_CHECK_RUN_BYTES=1 run r4fsck -y "$T/bad2.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[ "${output//bad2.img/bad.img}" = "$want" ]
	[ "$(sha256sum <"$T/bad.img")" = "$(sha256sum <"$T/bad2.img")" ]
	TMPDIR=$T/none R4_CHECK_RUN_BYTES=1 run r4fsck -y "$T/bad2.img"
	[ "$status" -eq 0 ]
}

@test "a tree rebuild whose items cannot spill to \$TMPDIR: a clear error, the volume as it was; kept in memory it repairs" {
	populated
	local blk sum
	blk=$(sd_block "$T/good.img" /many/entry_150)
	dd if=/dev/zero of="$T/bad.img" bs=4096 seek="$blk" count=1 conv=notrunc status=none
	sum=$(sha256sum <"$T/bad.img")
	# runs of one byte: the first item goes to a temporary file; the
	# check, which cannot spill either, keeps its tables in memory
	TMPDIR=$T/none R4_REBUILD_RUN_BYTES=1 run r4fsck -y "$T/bad.img"
	echo "$output"
	[ "$status" -eq 8 ]
	[[ "$output" == *"bad.img: cannot keep the tree rebuild's items in temporary files (in \$TMPDIR, else /tmp): No such file or directory"* ]]
	[ "$(sha256sum <"$T/bad.img")" = "$sum" ]
	# the default budget holds these items in memory: no file needed;
	# one time for both repairs (lost+found's and the folders' times)
	export SOURCE_DATE_EPOCH=1700000000
	cp --sparse=always "$T/bad.img" "$T/objs.img"
	TMPDIR=$T/none run r4fsck -y "$T/bad.img"
	echo "$output"
	[ "$status" -eq 1 ]
	run r4fsck -n "$T/bad.img"
	[ "$status" -eq 0 ]
	# the check's objects too large for memory (one level cached) and
	# no file for them: the rebuild keeps them in memory, same bytes
	TMPDIR=$T/none R4_REBUILD_OBJS_LEVELS=1 run r4fsck -y "$T/objs.img"
	echo "$output"
	[ "$status" -eq 1 ]
	cmp "$T/bad.img" "$T/objs.img"
}

@test "a tree rebuild whose new nodes cannot wait in \$TMPDIR (none, or full): one line naming the folder, exit 8, the volume as it was" {
	populated
	local blk sum
	blk=$(sd_block "$T/good.img" /many/entry_150)
	dd if=/dev/zero of="$T/bad.img" bs=4096 seek="$blk" count=1 conv=notrunc status=none
	sum=$(sha256sum <"$T/bad.img")
	TMPDIR=$T/none R4_REBUILD_SPILL_BYTES=1 run r4fsck -y "$T/bad.img"
	echo "$output"
	[ "$status" -eq 8 ]
	[[ "$output" == *"bad.img: cannot make the transaction's temporary file in $T/none: No such file or directory"* ]]
	[ "$(grep -c "temporary file" <<<"$output")" -eq 1 ]
	[ "$(sha256sum <"$T/bad.img")" = "$sum" ]
	# a file that cannot grow past 8 KiB (the nodes go at their block's
	# place in it: past that at once; SIGXFSZ ignored, the write fails)
	mkdir -p "$T/small"
	run bash -c 'trap "" XFSZ; ulimit -f 8; TMPDIR=$1 R4_REBUILD_SPILL_BYTES=1 r4fsck -y "$2"' _ "$T/small" "$T/bad.img"
	echo "$output"
	[ "$status" -eq 8 ]
	[[ "$output" == *"$T/small/r4txn: write of "*" bytes at byte "*" failed: File too large"* ]]
	[ "$(sha256sum <"$T/bad.img")" = "$sum" ]
	# with room for it, it repairs
	TMPDIR=$T/small R4_REBUILD_SPILL_BYTES=1 run r4fsck -y "$T/bad.img"
	[ "$status" -eq 1 ]
	run r4fsck -n "$T/bad.img"
	[ "$status" -eq 0 ]
}

# Run "$@" in a mount namespace of its own (as root, else as a user
# mapped to root): a mount made there goes with it. 1 when there is
# none to be had here.
in_mount_ns() {
	command -v unshare >/dev/null || return 1
	if [ "$(id -u)" -eq 0 ]; then
		unshare -m "$@"
	else
		unshare -rm "$@"
	fi
}

@test "a tree rebuild whose new nodes find \$TMPDIR full (ENOSPC, the test hook): one line naming the folder, exit 8, the volume as it was" {
	populated
	local blk sum full
	blk=$(sd_block "$T/good.img" /many/entry_150)
	dd if=/dev/zero of="$T/bad.img" bs=4096 seek="$blk" count=1 conv=notrunc status=none
	sum=$(sha256sum <"$T/bad.img")
	mkdir -p "$T/full"
	full=$(realpath "$T/full")
	# writes under the folder fail with ENOSPC after 12 KiB (the first
	# nodes fit, a later one does not), as on a full file system
	TMPDIR=$full R4_REBUILD_SPILL_BYTES=1 R4_ENOSPC_DIR=$full \
		R4_ENOSPC_AFTER=12288 run "$top_builddir/tests/crash/bin/r4fsck" -y "$T/bad.img"
	echo "$output"
	[ "$status" -eq 8 ]
	[[ "$output" == *"$full/r4txn: write of "*" bytes at byte "*" failed: No space left on device"* ]]
	[ "$(grep -c "$full" <<<"$output")" -eq 1 ]
	[ "$(sha256sum <"$T/bad.img")" = "$sum" ]
	# the same build with room: it repairs (the hook let it be)
	TMPDIR=$full R4_REBUILD_SPILL_BYTES=1 run "$top_builddir/tests/crash/bin/r4fsck" -y "$T/bad.img"
	[ "$status" -eq 1 ]
}

@test "a tree rebuild whose new nodes find \$TMPDIR full (ENOSPC, a real tmpfs): one line naming the folder, exit 8, the volume as it was" {
	mkdir -p "$T/full"
	# a mount namespace is what a container may deny (unshare -m: EPERM
	# without CAP_SYS_ADMIN); the test above covers ENOSPC without one
	in_mount_ns true || skip "no mount namespace here (unshare -m refused)"
	in_mount_ns sh -c 'mount -t tmpfs -o size=64k r4full "$1"' sh "$T/full"
	populated
	local blk sum
	blk=$(sd_block "$T/good.img" /many/entry_150)
	dd if=/dev/zero of="$T/bad.img" bs=4096 seek="$blk" count=1 conv=notrunc status=none
	sum=$(sha256sum <"$T/bad.img")
	# a tmpfs of 64 KiB filled to the last page, then the repair
	run in_mount_ns sh -c 'mount -t tmpfs -o size=64k r4full "$1" &&
		{ dd if=/dev/zero of="$1/fill" bs=4096 2>/dev/null;
		  [ "$(df -P "$1" | awk "NR == 2 { print \$4 }")" -eq 0 ] ||
			exit 99;
		  TMPDIR=$1 R4_REBUILD_SPILL_BYTES=1 r4fsck -y "$2"; }' \
		sh "$T/full" "$T/bad.img"
	echo "$output"
	[ "$status" -eq 8 ]
	[[ "$output" == *"$T/full/r4txn: write of "*" bytes at byte "*" failed: No space left on device"* ]]
	[ "$(grep -c "$T/full" <<<"$output")" -eq 1 ]
	[ "$(sha256sum <"$T/bad.img")" = "$sum" ]
}

# ---- a full volume: no room for a new tree ----

# An auto-sized volume with 128K to spare (about 38 blocks free, a tree
# of ~750 nodes: a new tree cannot fit before the old one is freed), of
# 20 directories of 30 files (tails and extents); its hashes in
# $T/good.hash. FREE: --free (128K).
full_volume() {
	local s=$T/src d i
	for d in $(seq 10 29); do
		mkdir -p "$s/d$d"
		for i in $(seq 10 39); do
			head -c $(((d * 31 + i * 397) % 9000)) /dev/urandom >"$s/d$d/f$i"
		done
	done
	r4pack create -q --size auto --free "${FREE:-128K}" "$s" "$T/good.img"
	r4debugfs -R "hash /" "$T/good.img" >"$T/good.hash"
	cp "$T/good.img" "$T/bad.img"
}

# The leaf in the middle of IMAGE's tree: from the root, the middle
# child of each node down to level 1.
middle_leaf() {
	local b out
	b=$(peek "$1" $((17 * 4096 + 16)) 8)
	while :; do
		out=$(r4debugfs -R "print node $b" "$1")
		case $(head -n 1 <<<"$out") in
		*", level 1,"*) echo "$b"; return 0 ;;
		esac
		b=$(awk '$1 == "child" { c[n++] = $2 }
			 END { if (n) print c[int(n / 2)] }' <<<"$out")
		[ -n "$b" ] || return 1
	done
}

# leaf_gone IMAGE BLK...: $T/gone, the paths of the objects with items
# in leaves BLK... of IMAGE and everything under a directory whose
# stat data is there; $T/want.hash, $T/good.hash without them, and with
# the objects whose names only were there (directory entries but "."
# and "..": their keys carry the directory, not the object) under
# /lost+found/#OID,
# where the repair links them, bytes and all.
leaf_gone() {
	local img=$1 b oid p
	shift
	: >"$T/leaf"
	for b in "$@"; do
		r4debugfs -R "print node $b" "$img" >>"$T/leaf"
	done
	sed -n 's/^#[0-9]* [^[]*\[[0-9a-f]*:[0-9a-f]*:[0-9a-f]*:\([0-9a-f]*\):.*/\1/p' "$T/leaf" |
		grep -vx 0 | sort -u >"$T/oids" || true
	: >"$T/gone"
	for oid in $(cat "$T/oids"); do
		r4debugfs -R "ncheck 0x$oid" "$img" | cut -f 2 >>"$T/gone"
	done
	echo "the leaves ($*) hold: $(tr '\n' ' ' <"$T/gone")"
	[ -s "$T/gone" ]
	# the files of a directory whose stat data is there would be left
	# out of the comparison below: such a test must name them itself
	r4manifest "$T/good.img" | awk -F '\t' '$2 == "d" { print $1 }' >"$T/dirs"
	if grep -xFf "$T/gone" "$T/dirs"; then
		echo "a directory's stat data is in a dead leaf: its files are not followed"
		return 1
	fi
	: >"$T/moved"
	for oid in $(sed -n '/^ *\[[0-9]*\] "\.\.\?" /d
			     s/.*" -> \[[0-9a-f]*:[0-9a-f]*:[0-9a-f]*:\([0-9a-f]*\):.*/\1/p' "$T/leaf" |
		     sort -u | grep -vxFf "$T/oids"); do
		printf '%s\t/lost+found/#%s\n' "$(r4debugfs -R "ncheck 0x$oid" "$img" | cut -f 2)" "$oid" >>"$T/moved"
	done
	echo "names only there: $(tr '\t\n' '> ' <"$T/moved")"
	awk -F '\t' 'FILENAME == ARGV[1] { gone[++ng] = $1; next }
		FILENAME == ARGV[2] { from[++nm] = $1; to[nm] = $2; next }
		{ p = substr($0, index($0, "  ") + 2)
		  for (i = 1; i <= ng; i++)
			if (p == gone[i] || index(p, gone[i] "/") == 1) next
		  for (i = 1; i <= nm; i++)
			if (p == from[i] || index(p, from[i] "/") == 1) {
				p = to[i] substr(p, length(from[i]) + 1); break
			}
		  print substr($0, 1, index($0, "  ") + 1) p }' \
		"$T/gone" "$T/moved" "$T/good.hash" >"$T/want.hash"
}

# kept_outside IMAGE: every file of $T/want.hash hashes the same in IMAGE.
kept_outside() {
	r4debugfs -R "hash /" "$1" >"$T/bad.hash"
	echo "files outside the leaf: $(wc -l <"$T/want.hash") of $(wc -l <"$T/good.hash")"
	[ "$(wc -l <"$T/want.hash")" -gt 500 ]
	run grep -cvxFf "$T/bad.hash" "$T/want.hash"
	echo "changed: $output"
	[ "$output" = 0 ]
}

@test "a leaf zeroed on a full auto-sized volume: the tree mended in place, every file outside the leaf keeps its bytes" {
	full_volume
	local blk free nodes
	free=$(peek "$T/good.img" $((17 * 4096 + 8)) 8)
	nodes=$(r4debugfs -R "print tree" "$T/good.img" | grep -c "^node ")
	echo "free blocks: $free, tree nodes: $nodes"
	[ "$free" -lt "$nodes" ]
	# The leaf of a stat data in the middle: files and names lost.
	blk=$(sd_block "$T/good.img" /d20/f25)
	leaf_gone "$T/good.img" "$blk"
	dd if=/dev/zero of="$T/bad.img" bs=4096 seek="$blk" count=1 conv=notrunc status=none
	rebuilt "$T/bad.img" node
	[[ "$first" == *"storage tree mended in place (no room for a new tree): 1 pointers to leaves that do not verify cut"* ]]
	kept_outside "$T/bad.img"
}

@test "a leaf zeroed on a full volume whose bitmap calls live leaves free: the mend writes none of them" {
	full_volume
	local blk twig kids b
	blk=$(sd_block "$T/good.img" /d20/f25)
	leaf_gone "$T/good.img" "$blk"
	# The last twig that is not the dead leaf's parent: the mend never
	# reads it (only the walk knows its children live), and the
	# allocator looks on from the nodes it copies.
	r4debugfs -R "print tree" "$T/good.img" >"$T/tree"
	twig=$(awk -v d="$blk" '/^node / { t = ($5 == "2,") ? $2 : ""; sub(":", "", t) }
		t != "" && $1 == "child" { if ($2 == d) bad[t] = 1; else ok[t] = 1 }
		END { for (k in ok) if (!(k in bad) && k + 0 > m) m = k + 0; print m }' "$T/tree")
	kids=$(r4debugfs -R "print node $twig" "$T/good.img" | awk '$1 == "child" { print $2 }' | head -n 5)
	echo "twig $twig, its first children: $(echo $kids)"
	[ -n "$kids" ]
	dd if=/dev/zero of="$T/bad.img" bs=4096 seek="$blk" count=1 conv=notrunc status=none
	for b in $kids; do setbit "$T/bad.img" "$b" 0; done
	csum_fix "$T/bad.img" 18
	rebuilt "$T/bad.img" node space-marked-free
	[[ "$first" == *"storage tree mended in place"* ]]
	kept_outside "$T/bad.img"
}

@test "tree damage on a full volume that only a new tree mends: exit 4, how many blocks it needs, the volume as it was" {
	FREE=0 full_volume
	local blk sum
	blk=$(middle_leaf "$T/good.img")
	# A damaged magic: the rebuild mends the header of its copy; the
	# old tree cannot keep the node as it lies.
	poke "$T/bad.img" $((blk * 4096 + 8)) 0 4
	sum=$(sha256sum <"$T/bad.img")
	cp "$T/bad.img" "$T/bad2.img"
	run r4fsck -y "$T/bad.img"
	echo "$output"
	[ "$status" -eq 4 ]
	[[ "$output" == *"no room for the tree rebuild: a new tree needs about "*" free blocks, the volume has "*"; the tree rebuild changed nothing"* ]]
	[[ "$output" != *"kept:"* ]]
	[ "$(sha256sum <"$T/bad.img")" = "$sum" ]
	# the same with the rebuild's items spilled: the same estimate
	want=$output
	mkdir -p "$T/spill"
	TMPDIR=$T/spill R4_REBUILD_RUN_BYTES=1 run r4fsck -y "$T/bad2.img"
	[ "$status" -eq 4 ]
	[ "${output//bad2.img/bad.img}" = "$want" ]
	[ "$(sha256sum <"$T/bad2.img")" = "$sum" ]
}

@test "no room for the tree rebuild after the master super block was restored: exit 4, the rebuild changed nothing, the earlier fix said and kept" {
	FREE=0 full_volume
	local blk
	blk=$(middle_leaf "$T/good.img")
	poke "$T/bad.img" $((blk * 4096 + 8)) 0 4
	printf 'X' | dd of="$T/bad.img" bs=1 seek=65536 conv=notrunc status=none
	run r4fsck -y "$T/bad.img"
	echo "$output"
	[ "$status" -eq 4 ]
	[[ "$output" == *"fixed (master): master super block (block 16) restored"* ]]
	[[ "$output" == *"the tree rebuild changed nothing"* ]]
	[[ "$output" != *"nothing was changed"* ]]
	[[ "$output" == *"kept: 1 fixes before the open, 0 transactions replayed"* ]]
	cmp -n 65537 "$T/good.img" "$T/bad.img"
}

@test "a leaf zeroed on a full volume, another leaf with another volume's mkfs id: not mended in place (exit 4, the volume as it was)" {
	full_volume
	local blk other sum
	blk=$(sd_block "$T/good.img" /d20/f25)
	other=$(sd_block "$T/good.img" /d12/f15)
	echo "dead $blk, foreign $other"
	[ "$other" != "$blk" ]
	dd if=/dev/zero of="$T/bad.img" bs=4096 seek="$blk" count=1 conv=notrunc status=none
	poke "$T/bad.img" $((other * 4096 + 12)) 305419896 4
	sum=$(sha256sum <"$T/bad.img")
	run r4fsck -y "$T/bad.img"
	echo "$output"
	[ "$status" -eq 4 ]
	[[ "$output" != *"mended in place"* ]]
	[[ "$output" == *"the tree rebuild changed nothing"* ]]
	[ "$(sha256sum <"$T/bad.img")" = "$sum" ]
}

@test "a leaf moved to a free block on a full volume, the old one zeroed: the scan's items put back in place, its node freed, every file kept" {
	full_volume
	local blk last byte
	blk=$(sd_block "$T/good.img" /d20/f25)
	last=$(($(peek "$T/good.img" $((17 * 4096)) 8) - 1))
	byte=$(peek "$T/good.img" $((18 * 4096 + 4 + last / 8)) 1)
	echo "leaf $blk copied to $last (bitmap byte $byte)"
	[ $((byte & (1 << (last % 8)))) -eq 0 ]
	dd if="$T/good.img" of="$T/bad.img" bs=4096 skip="$blk" seek="$last" count=1 conv=notrunc status=none
	dd if=/dev/zero of="$T/bad.img" bs=4096 seek="$blk" count=1 conv=notrunc status=none
	setbit "$T/bad.img" "$last" 1
	csum_fix "$T/bad.img" 18
	rebuilt "$T/bad.img" node
	[[ "$first" == *"storage tree mended in place (no room for a new tree): 1 pointers to leaves that do not verify cut, "*" items put back ("*" found by a scan of unreachable used blocks)"* ]]
	[[ "$first" == *"the nodes the scan took freed (1)"* ]]
	[[ "$first" != *"cut, 0 items put back"* ]]
	r4debugfs -R "hash /" "$T/bad.img" >"$T/bad.hash"
	run diff "$T/good.hash" "$T/bad.hash"
	echo "$output"
	[ "$status" -eq 0 ]
}

# twig_of IMAGE BLK: the twig whose pointer names leaf BLK.
twig_of() {
	r4debugfs -R "print tree" "$1" |
		awk -v d="$2" '/^node / { t = $2; sub(":", "", t) }
			       $1 == "child" && $2 == d { print t; exit }'
}

# zero_mended IMAGE BLK...: leaves BLK... of IMAGE zeroed, the volume
# mended in place (one pointer cut each), every file outside them kept
# byte for byte, -n clean after (rebuilt).
zero_mended() {
	local img=$1 b
	shift
	leaf_gone "$T/good.img" "$@"
	for b in "$@"; do
		dd if=/dev/zero of="$img" bs=4096 seek="$b" count=1 conv=notrunc status=none
	done
	rebuilt "$img" node
	[[ "$first" == *"storage tree mended in place (no room for a new tree): $# pointers to leaves that do not verify cut"* ]]
	kept_outside "$img"
}

# Two zeroed leaves used to be refused: a file outside both "changed".
# It had not: only its name was in the second leaf (the directory
# entries of /d25), and the repair linked it, bytes intact, in
# /lost+found, as it does with that leaf alone.
@test "two leaves zeroed on a full volume, in different twigs: mended in place, every file outside them byte for byte (names lost there: in /lost+found)" {
	full_volume
	local b1 b2
	b1=$(sd_block "$T/good.img" /d20/f25)
	b2=$(sd_block "$T/good.img" /d25/f25)
	echo "leaves $b1 $b2, twigs $(twig_of "$T/good.img" "$b1") $(twig_of "$T/good.img" "$b2")"
	[ "$(twig_of "$T/good.img" "$b1")" != "$(twig_of "$T/good.img" "$b2")" ]
	zero_mended "$T/bad.img" "$b1" "$b2"
	[ -s "$T/moved" ]
}

@test "three leaves zeroed on a full volume, each in another twig: mended in place, every file outside them byte for byte" {
	full_volume
	local b t
	for b in $(sd_block "$T/good.img" /d13/f20) $(sd_block "$T/good.img" /d20/f25) \
		 $(sd_block "$T/good.img" /d25/f25); do
		t+=" $(twig_of "$T/good.img" "$b")"
		set -- "$@" "$b"
	done
	echo "leaves $*, twigs$t"
	[ "$(tr ' ' '\n' <<<"$t" | sort -u | grep -c .)" -eq 3 ]
	zero_mended "$T/bad.img" "$@"
}

@test "three neighbouring leaves zeroed on a full volume, a twig's first among them: mended in place, every file outside them byte for byte" {
	full_volume
	local twig root
	twig=$(twig_of "$T/good.img" "$(sd_block "$T/good.img" /d20/f25)")
	set -- $(r4debugfs -R "print node $twig" "$T/good.img" | awk '$1 == "child" { print $2 }' | head -n 3)
	root=$(sd_block "$T/good.img" /)
	echo "twig $twig, its first leaves $*; the root's stat data in $root"
	[ "$#" -eq 3 ]
	[[ " $* " != *" $root "* ]]
	zero_mended "$T/bad.img" "$@"
}

# ---- the new tree's blocks on a volume with room ----

# Ten directories of 20 small files (tails) and one of 37..100 KiB
# (extents), auto-sized with room for a new tree; hashes in $T/good.hash.
roomy_volume() {
	local s=$T/src d i
	for d in $(seq 10 19); do
		mkdir -p "$s/d$d"
		for i in $(seq 10 29); do
			head -c $(((d * 31 + i * 397) % 9000)) /dev/urandom >"$s/d$d/f$i"
		done
		head -c $((d * 7000 + 30000)) /dev/urandom >"$s/d$d/big"
	done
	r4pack create -q --size auto "$s" "$T/good.img"
	r4debugfs -R "hash /" "$T/good.img" >"$T/good.hash"
	cp "$T/good.img" "$T/bad.img"
}

@test "a twig cut off on a volume with room, the bitmap calling its extents' blocks and walked leaves free: the new tree is written over none of them, every file byte for byte" {
	roomy_volume
	local root twig at last r s w b
	root=$(peek "$T/good.img" $((17 * 4096 + 16)) 8)
	r4debugfs -R "print node $root" "$T/good.img" >"$T/root"
	twig=$(awk '$1 == "child" { n++; if (n == 2) print $2 }' "$T/root")
	at=$(awk '$1 == "#1" { for (i = 1; i < NF; i++) if ($i == "offset") print $(i + 1) }' "$T/root")
	last=$(($(peek "$T/good.img" $((17 * 4096)) 8) - 1))
	r4debugfs -R "print node $twig" "$T/good.img" >"$T/twig"
	echo "root $root: its pointer to twig $twig (at $at) set to free block $last"
	[ -n "$twig" ]
	[ -n "$at" ]
	# The scan takes the twig back (its bit is set); the blocks of its
	# extents, read by no one, are marked free, as are the first leaves
	# of the first twig (walked).
	poke "$T/bad.img" $((root * 4096 + at)) "$last" 8
	for r in $(awk '$2 == "start" && /allocated/ { print $3 ":" $5 }' "$T/twig"); do
		s=${r%:*} w=${r#*:}
		for ((b = s; b < s + w; b++)); do setbit "$T/bad.img" "$b" 0; done
	done
	echo "extents marked free: $(awk '$2 == "start" && /allocated/ { print $3 "+" $5 }' "$T/twig" | tr '\n' ' ')"
	[ "$(grep -c 'allocated' "$T/twig")" -ge 2 ]
	# every walked node but the root: the twigs the root still names and
	# all their leaves, wherever the new tree's allocation starts
	for w in $(awk -v cut="$twig" '$1 == "child" && $2 != cut { print $2 }' "$T/root"); do
		setbit "$T/bad.img" "$w" 0
		for b in $(r4debugfs -R "print node $w" "$T/good.img" |
			   awk '$1 == "child" { print $2 }'); do
			setbit "$T/bad.img" "$b" 0
		done
	done
	csum_fix "$T/bad.img" 18
	rebuilt "$T/bad.img" node space-marked-free
	[[ "$first" == *"storage tree rebuilt"* ]]
	[[ "$first" != *"block-shared"* ]]
	r4debugfs -R "hash /" "$T/bad.img" >"$T/bad.hash"
	run diff "$T/good.hash" "$T/bad.hash"
	echo "$output"
	[ "$status" -eq 0 ]
}

# ---- tight volumes whose bitmap calls live nodes free ----

# The room for a commit's journal is counted without the blocks pinned
# as live (the bitmap calls them free, the allocator never hands them
# out): the mend's commit found none left and failed (exit 8) where its
# transaction must be aborted, the volume as it was.
@test "a leaf zeroed on a full volume whose bitmap calls live leaves free, no room to mend: exit 4, the volume as it was" {
	FREE=0 full_volume
	local blk twig kids b sum
	blk=$(sd_block "$T/good.img" /d20/f25)
	r4debugfs -R "print tree" "$T/good.img" >"$T/tree"
	twig=$(awk -v d="$blk" '/^node / { t = ($5 == "2,") ? $2 : ""; sub(":", "", t) }
		t != "" && $1 == "child" { if ($2 == d) bad[t] = 1; else ok[t] = 1 }
		END { for (k in ok) if (!(k in bad) && k + 0 > m) m = k + 0; print m }' "$T/tree")
	kids=$(r4debugfs -R "print node $twig" "$T/good.img" | awk '$1 == "child" { print $2 }' | head -n 5)
	echo "free $(peek "$T/good.img" $((17 * 4096 + 8)) 8), leaves marked free: $(echo $kids)"
	[ -n "$kids" ]
	dd if=/dev/zero of="$T/bad.img" bs=4096 seek="$blk" count=1 conv=notrunc status=none
	for b in $kids; do setbit "$T/bad.img" "$b" 0; done
	csum_fix "$T/bad.img" 18
	sum=$(sha256sum <"$T/bad.img")
	run r4fsck -y "$T/bad.img"
	echo "$output"
	[ "$status" -eq 4 ]
	[[ "$output" == *"the tree rebuild changed nothing"* ]]
	[[ "$output" != *"no free block left for the journal"* ]]
	[ "$(sha256sum <"$T/bad.img")" = "$sum" ]
}

# The super block's free count far above the bitmap's on a nearly full
# volume: the rebuild's room for writing nodes ahead of its commit was
# read from that count, so a new tree that then did not fit had written
# over every free block although it reported that it changed nothing.
@test "a leaf zeroed on a nearly full volume whose super block counts far more free blocks than the bitmap: nothing written ahead, exit 4 leaves the volume byte for byte" {
	FREE=1400K full_volume
	local blk n sum
	blk=$(middle_leaf "$T/good.img")
	n=$(peek "$T/good.img" $((17 * 4096)) 8)
	poke "$T/bad.img" $((blk * 4096 + 8)) 0 4
	poke "$T/bad.img" $((17 * 4096 + 8)) $((n - 100)) 8
	sum=$(sha256sum <"$T/bad.img")
	# the rebuild's items spilled at once, its nodes written ahead
	# whenever it thinks there is room
	R4_REBUILD_RUN_BYTES=1 run r4fsck -y "$T/bad.img"
	echo "$output"
	case $status in
	1)	# repaired: every file outside the dead leaf kept
		[[ "$output" == *"0 problems left"* ]]
		r4fsck -n "$T/bad.img" >/dev/null ;;
	4)	[[ "$output" == *"the tree rebuild changed nothing"* ]]
		[ "$(sha256sum <"$T/bad.img")" = "$sum" ] ;;
	*)	return 1 ;;
	esac
}

# A full volume grown by EXTRA blocks ($T/g.img), then the leaf of
# /d20/f25 zeroed and every node of the tree but the root marked free
# in the bitmap ($T/lying: the bytes of the bitmap for the volume as
# made, so that each size is one r4resize and one copy).
grown_lying() {
	local n=$1 extra=$2
	cp "$T/good.img" "$T/g.img"
	r4resize "$T/g.img" $((n + extra)) >/dev/null
	dd if="$T/lying" of="$T/g.img" bs=1 seek=$((18 * 4096 + 4)) conv=notrunc status=none
	dd if=/dev/zero of="$T/g.img" bs=4096 seek="$LEAF" count=1 conv=notrunc status=none
	csum_fix "$T/g.img" 18
}

# After a new tree's commit, the pins of the old tree's nodes (taken
# because the bitmap called them free) and of the dead leaf were kept
# for the rest of the run: on a volume with room for the new tree and
# little more, a later pass found no free block for its journal
# (exit 8). At every size from the new tree's to a little more than
# that: everything fixed, or nothing changed (no room), never a
# failed commit.
@test "a full volume grown to about a new tree's size, its bitmap calling every node but the root free, a leaf zeroed: at each size repaired or unchanged, never a failed commit" {
	FREE=0 full_volume
	local n nodes extra b sum out rebuilt=0 mended=0 none=0
	n=$(peek "$T/good.img" $((17 * 4096)) 8)
	LEAF=$(sd_block "$T/good.img" /d20/f25)
	leaf_gone "$T/good.img" "$LEAF"
	r4debugfs -R "print tree" "$T/good.img" >"$T/tree"
	nodes=$(grep -c "^node " "$T/tree")
	# the bitmap's whole bytes for the volume as made, nodes cleared
	cp "$T/good.img" "$T/l.img"
	for b in $(awk -v d="$LEAF" '$1 == "child" && $2 != d { print $2 }' "$T/tree"); do
		setbit "$T/l.img" "$b" 0
	done
	dd if="$T/l.img" of="$T/lying" bs=1 skip=$((18 * 4096 + 4)) count=$((n / 8)) status=none
	echo "$n blocks, $nodes nodes, free $(peek "$T/good.img" $((17 * 4096 + 8)) 8)"
	# every size from a mend to past the first new tree (without the
	# room check the mends at nodes - 4 to nodes - 2 failed, without the
	# pins let go the new trees at nodes - 1 to nodes + 7); in the
	# sanitizer pass (not once) only the four around the edge between
	# the two
	local lo=$((nodes - 4)) hi=$((nodes + 7))
	once || { lo=$((nodes - 3)); hi=$((nodes)); }
	for ((extra = lo; extra <= hi; extra++)); do
		grown_lying "$n" "$extra"
		sum=$(sha256sum <"$T/g.img")
		run r4fsck -y "$T/g.img"
		out=$output
		echo "grown by $extra: exit $status: $(grep -E '^fixed \(node\)|no room|no free' <<<"$out" | cut -c 1-90 | tr '\n' ' ')"
		case $status in
		1)
			[[ "$out" == *"0 problems left"* ]]
			r4fsck -n "$T/g.img" >/dev/null
			kept_outside "$T/g.img" >/dev/null
			case $out in
			*"storage tree rebuilt"*) rebuilt=$((rebuilt + 1)) ;;
			*"mended in place"*) mended=$((mended + 1)) ;;
			esac ;;
		4)
			[[ "$out" == *"the tree rebuild changed nothing"* ]]
			[ "$(sha256sum <"$T/g.img")" = "$sum" ]
			none=$((none + 1)) ;;
		*)
			return 1 ;;
		esac
	done
	echo "new trees $rebuilt, mended in place $mended, unchanged $none"
	# the sizes cross the edge between a mend and a new tree
	[ "$rebuilt" -gt 0 ]
	[ "$mended" -gt 0 ]
}
