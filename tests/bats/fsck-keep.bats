#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# r4fsck -y keeps every intact byte (issue 24): a damaged key or body
# offset of a body item (extent, tail, ctail40) is mended from what the
# other items, the stat data and the cluster layout say, never by
# dropping the item; an item that cannot be placed goes to /lost+found
# with its bytes. Each case: -y exits 1, every byte of every file reads
# back (sha256), a second -y prints nothing and -n calls it clean,
# fsck.reiser4 --check calls it consistent.

load helpers

. "$top_srcdir/tests/surgery.sh"

# mended IMAGE: -y exits 1 (its output in $first), a second -y exits 0
# silently (nothing rebuilt again), -n exits 0, fsck.reiser4 agrees. A
# copy repaired with the check's objects the rebuild looks up in a
# scratch file in $TMPDIR (R4_REBUILD_OBJS_LEVELS=1; in memory else, so
# few), and a copy repaired with the whole volume's tables built for
# every check (R4_CHECK_TABLES=1: the rebuild reads them, where it takes
# the bounded check's objects otherwise): the same output and bytes.
mended() {
	local objs tabled
	export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(date +%s)}
	cp --sparse=always "$1" "$T/objs.img"
	cp --sparse=always "$1" "$T/tab.img"
	run env R4_REBUILD_OBJS_LEVELS=1 r4fsck -y "$T/objs.img"
	objs=${output//"$T/objs.img"/"$1"}
	run env R4_CHECK_TABLES=1 r4fsck -y "$T/tab.img"
	tabled=${output//"$T/tab.img"/"$1"}
	run r4fsck -y "$1"
	echo "$output"
	first=$output
	[ "$status" -eq 1 ]
	[ "$objs" = "$first" ]
	[ "$tabled" = "$first" ] || { echo "tables: $tabled"; false; }
	cmp "$1" "$T/objs.img"
	cmp "$1" "$T/tab.img"
	rm -f "$T/objs.img" "$T/tab.img"
	run r4fsck -y "$1"
	echo "second run: $output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	run r4fsck -n "$1"
	[ "$status" -eq 0 ]
	if command -v fsck.reiser4 >/dev/null; then
		oracle_fsck "$1"
	fi
}

# all_kept IMAGE SRC: every file of directory SRC reads back from IMAGE
# byte for byte (extracted; /lost+found left out).
all_kept() {
	rm -rf "$T/out"
	mkdir "$T/out"
	r4pack extract "$1" "$T/out.tar"
	tar -xf "$T/out.tar" -C "$T/out"
	diff -r -x lost+found "$2" "$T/out"
}

# same IMAGE PATH FILE: PATH in IMAGE has FILE's sha256.
same() {
	[ "$(r4debugfs -R "cat $2" "$1" | sha256sum)" = "$(sha256sum <"$3")" ]
}

@test "keep: an extent item's key offset 0 -> 65536: put back where the body breaks off, every byte kept" {
	mkdir "$T/s"
	head -c 33000 /dev/urandom >"$T/s/f"
	echo a >"$T/s/a"
	r4pack create -q "$T/s" "$T/i.img"
	local ih
	ih=$(item_ih "$T/i.img" /f extent40)
	[ "$(peek "$T/i.img" $((ih + 24)) 8)" -eq 0 ]
	poke "$T/i.img" $((ih + 26)) 1 1
	run r4fsck -n "$T/i.img"
	[ "$status" -eq 4 ]
	mended "$T/i.img"
	[[ "$first" == *"(36864 bytes) starts past the size 33000 of its file, whose body breaks off at 0: moved there"* ]]
	[[ "$first" != *"size set to"* ]]
	[[ "$first" == *"0 items dropped (0 body bytes), 36864 body bytes moved"* ]]
	same "$T/i.img" /f "$T/s/f"
	all_kept "$T/i.img" "$T/s"
}

@test "keep: an extent item that fits nowhere in its file: into /lost+found with its bytes, counted" {
	mkdir "$T/s"
	head -c 33000 /dev/urandom >"$T/s/f"
	echo a >"$T/s/a"
	r4pack create -q "$T/s" "$T/i.img"
	local ih o lf
	ih=$(item_ih "$T/i.img" /f extent40)
	poke "$T/i.img" $((ih + 26)) 1 1
	o=$(sd_off "$T/i.img" /f)
	poke "$T/i.img" $((o + 8)) 100 8	# the size too: 100
	mended "$T/i.img"
	[[ "$first" == *"does not fit where its body breaks off: given the new object id"* ]]
	[[ "$first" == *"1 object moved to /lost+found"* ]]
	[[ "$first" == *"36864 body bytes moved"* ]]
	lf=$(r4debugfs -R "ls /lost+found" "$T/i.img" | grep -v '^\.' | head -n 1)
	[ -n "$lf" ]
	r4debugfs -R "cat /lost+found/$lf" "$T/i.img" >"$T/lf"
	cmp -n 33000 "$T/lf" "$T/s/f"
	same "$T/i.img" /a "$T/s/a"
}

# A 60,000-byte lzo1 file: one cluster over many ctail40 items, most of
# them alone in their leaf.
lzo() {
	mkdir "$T/s"
	seq 1 100000 | head -c 60000 >"$T/s/z"
	echo one >"$T/s/s1"
	echo two >"$T/s/s2"
	r4pack create -q --compress=lzo1 "$T/s" "$T/i.img"
	[[ "$(r4debugfs -R "stat /z" "$T/i.img")" == *ccreg40* ]]
	ih=$(item_ih "$T/i.img" /z ctail40 3)
}

@test "keep: one ordering byte of a ctail40 item's key: mended from its object, the cluster kept" {
	local ih
	lzo
	poke "$T/i.img" $((ih + 14)) $(( $(peek "$T/i.img" $((ih + 14)) 1) ^ 1 )) 1
	run r4fsck -n "$T/i.img"
	[ "$status" -eq 4 ]
	mended "$T/i.img"
	[[ "$first" == *"its key mended to ["* ]]
	[[ "$first" != *"zeroed"* ]]
	same "$T/i.img" /z "$T/s/z"
	all_kept "$T/i.img" "$T/s"
}

@test "keep: a ctail40 key offset off by one: put back on its cluster's line, once" {
	local ih
	lzo
	poke "$T/i.img" $((ih + 24)) $(( $(peek "$T/i.img" $((ih + 24)) 1) + 1 )) 1
	run r4fsck -n "$T/i.img"
	[ "$status" -eq 4 ]
	mended "$T/i.img"
	[[ "$first" == *"where its cluster's bytes go on at"*"its key offset mended (no byte lost)"* ]]
	same "$T/i.img" /z "$T/s/z"
	all_kept "$T/i.img" "$T/s"
}

# Tail items of six files in one leaf: a12 .. a7 and the first part of
# m. The byte counts the tests expect are those of stat data with the
# large-times extension, which SOURCE_DATE_EPOCH (whole seconds) leaves
# out: packed without it.
tails() {
	local i
	mkdir "$T/s"
	for i in $(seq 1 12); do head -c $((i * 100)) /dev/urandom >"$T/s/a$i"; done
	head -c 2600 /dev/urandom >"$T/s/m"
	for i in $(seq 1 6); do head -c 300 /dev/urandom >"$T/s/z$i"; done
	env -u SOURCE_DATE_EPOCH r4pack create -q "$T/s" "$T/good.img"
}

# flip IMAGE IH BIT: flip bit BIT of the body offset in item header IH.
flip() {
	local o=$(($2 + 32))
	poke "$1" $o $(( $(peek "$1" $o 2) ^ (1 << $3) )) 2
}

@test "keep: a flipped bit in an item's body offset: no file cut or padded" {
	local ih blk bit
	tails
	ih=$(item_ih "$T/good.img" /a8 plain40)
	blk=$((ih / 4096))
	[ $((ih % 4096)) -lt $((4096 - 2 * 38)) ]	# not the node's first item
	for bit in 2 5 10 11; do
		cp "$T/good.img" "$T/i.img"
		flip "$T/i.img" "$ih" $bit
		run r4fsck -n "$T/i.img"
		[ "$status" -eq 4 ]
		mended "$T/i.img"
		[[ "$first" != *"size set to"* ]]
		all_kept "$T/i.img" "$T/s"
	done
	# the node's first item
	cp "$T/good.img" "$T/i.img"
	flip "$T/i.img" $((blk * 4096 + 4096 - 38)) 4
	mended "$T/i.img"
	[[ "$first" == *"1 item body offsets and"* ]]
	all_kept "$T/i.img" "$T/s"
}

@test "keep: a tail item's plugin id damaged: set back from its file's stat data, no byte dropped" {
	local ih
	tails
	ih=$(item_ih "$T/good.img" /m plain40 2)
	cp "$T/good.img" "$T/i.img"
	poke "$T/i.img" $((ih + 36)) 77 2
	run r4fsck -n "$T/i.img"
	[ "$status" -eq 4 ]
	mended "$T/i.img"
	[[ "$first" == *"0 items dropped"*"1 item plugin ids set back"* ]]
	[[ "$first" != *"size set to"* ]]
	all_kept "$T/i.img" "$T/s"
}

@test "keep: a leaf lost: every file size cut is counted as a loss (action and summary)" {
	local ih blk
	tails
	ih=$(item_ih "$T/good.img" /m plain40 2)	# with z1 .. z6
	blk=$((ih / 4096))
	cp "$T/good.img" "$T/i.img"
	dd if=/dev/zero of="$T/i.img" bs=4096 seek=$blk count=1 conv=notrunc status=none
	cp "$T/i.img" "$T/j.img"
	mended "$T/i.img"
	[[ "$first" == *"size set to 814 (was 2600): 1786 bytes past the end of its body cut"* ]]
	[[ "$first" == *"7 files cut (3586 bytes)"* ]]
	run r4fsck -y --json "$T/j.img"
	[ "$status" -eq 1 ]
	[[ "$output" == *'"loss":"size-cut","amount":1786,"done":"object '* ]]
	[[ "$output" == *'"cut_files":7,"cut_bytes":3586}'* ]]
	same "$T/i.img" /a8 "$T/s/a8"
}

# no_write MODE IMAGE: r4fsck MODE on IMAGE exits 0, prints nothing,
# makes no write at all (the fault hook counts them) and leaves the
# image byte for byte as it was.
no_write() {
	rm -f "$T/rep"
	cp "$2" "$T/before.img"
	R4_FAULT=count R4_FAULT_REPORT="$T/rep" run \
		"$top_builddir/tests/crash/bin/r4fsck" "$1" "$2"
	echo "$1: $output; $(cat "$T/rep")"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ "$(cat "$T/rep")" = "writes=0 syncs=0 cut=0" ]
	cmp "$T/before.img" "$2"
}

@test "keep: a repair that would change nothing writes nothing (a clean volume; run two after each kind of repair)" {
	local ih o
	tails
	cp "$T/good.img" "$T/i.img"
	no_write -y "$T/i.img"
	no_write -p "$T/i.img"
	cmp "$T/good.img" "$T/i.img"
	ih=$(item_ih "$T/good.img" /m plain40 2)
	o=$(sd_off "$T/good.img" /a3)
	# a leaf lost (tree rebuilt, sizes cut); an item plugin id (set
	# back); nlink, a size, a bitmap bit, the free count (object and
	# space passes)
	cp "$T/good.img" "$T/1.img"
	dd if=/dev/zero of="$T/1.img" bs=4096 seek=$((ih / 4096)) count=1 conv=notrunc status=none
	cp "$T/good.img" "$T/2.img"
	poke "$T/2.img" $((ih + 36)) 77 2
	cp "$T/good.img" "$T/3.img"
	poke "$T/3.img" $((o + 4)) 9 4
	poke "$T/3.img" $((o + 8)) 99999 8
	poke "$T/3.img" $((18 * 4096 + 4 + 3)) 255 1
	poke "$T/3.img" $((17 * 4096 + 8)) 12345 8
	for i in 1 2 3; do
		run r4fsck -y "$T/$i.img"
		[ "$status" -eq 1 ]
		no_write -y "$T/$i.img"
		no_write -p "$T/$i.img"
	done
}

@test "tail-unmerged: tail40 items of one file side by side in a leaf (older writers): named by -n, joined by -p, every byte kept" {
	local ih blk
	tails
	ih=$(item_ih "$T/good.img" /z1 plain40)
	blk=$((ih / 4096))
	cp "$T/good.img" "$T/i.img"
	# z1 in three items, the second part of m in two: the layout an
	# older r4pack add left (doc/kernel.md §2.2)
	node_split "$T/i.img" $blk $(((4096 - 38 - ih % 4096) / 38)) 100
	node_split "$T/i.img" $blk $(((4096 - 38 - ih % 4096) / 38 + 1)) 50
	[ "$(r4debugfs -R "print file /z1" "$T/i.img" | grep -c " plain40 ")" -eq 3 ]
	ih=$(item_ih "$T/i.img" /m plain40 2)
	[ $((ih / 4096)) -eq $blk ]
	node_split "$T/i.img" $blk $(((4096 - 38 - ih % 4096) / 38)) 1000
	all_kept "$T/i.img" "$T/s"
	cp "$T/i.img" "$T/j.img"
	run r4fsck -n "$T/i.img"
	echo "$output"
	[ "$status" -eq 4 ]
	[[ "$output" == *"file /z1 (object "*"tail40 items "*" continue each other side by side, unmerged: the Reiser4 kernel reads the file short (its read ends at offset 100)"* ]]
	[ "$(grep -c 'side by side, unmerged' <<<"$output")" -eq 3 ]
	run r4fsck -n --json "$T/i.img"
	[[ "$output" == *'"code":"tail-unmerged"'*'"fix":"preen"'* ]]
	run r4fsck -p "$T/i.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"fixed (tail-unmerged): file /z1 (object "*"3 tail40 items from offset 0 joined into one of 300 bytes"* ]]
	[[ "$output" == *"fixed (tail-unmerged): file /m (object "*"2 tail40 items from offset 814 joined into one of 1786 bytes"* ]]
	[ "$(r4debugfs -R "print file /z1" "$T/i.img" | grep -c " plain40 ")" -eq 1 ]
	no_write -p "$T/i.img"
	no_write -y "$T/i.img"
	all_kept "$T/i.img" "$T/s"
	oracle_fsck "$T/i.img"
	# -y joins them too
	run r4fsck -y "$T/j.img"
	[ "$status" -eq 1 ]
	no_write -y "$T/j.img"
	all_kept "$T/j.img" "$T/s"
}
