#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# r4resize (doc/format.md §1.9): grow an r4pack image to 1 GiB (both
# checkers, every file exact, sparse) and to 8 TiB; grow to the file's
# length; shrink after removing files and of an aged volume (blocks
# moved by the repacker); -P, -n, --json; bad input: one line each,
# nothing changed.

load helpers

# A 64 MiB image of a small tree: files of 0..200 KiB (tails and
# extents), a symlink, a hard link.
mkimg() {
	local d=$T/src.${1##*/} i
	mkdir -p "$d/a" "$d/b"
	for i in $(seq 1 40); do
		head -c $((i * 5000)) /dev/urandom >"$d/a/f$i"
	done
	echo small >"$d/b/s"
	ln -s ../a/f1 "$d/b/l"
	ln "$d/a/f2" "$d/b/h"
	r4pack create -q --size 64M "$d" "$1"
}

blocks() {
	r4debugfs -R 'print super' "$1" | sed -n 's/^ *blocks: *//p'
}

# Both checkers clean, the content as recorded in $T/m1.
checked() {
	run r4fsck -n "$1"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"no problems found"* ]]
	r4manifest "$1" | diff "$T/m1" -
	if command -v fsck.reiser4 >/dev/null 2>&1; then
		cp --sparse=always "$1" "$T/oracle.img"
		oracle_fsck "$T/oracle.img"
		rm -f "$T/oracle.img"
	fi
}

@test "resize: grow a 64 MiB image to 1 GiB: sparse, both checkers clean, every file exact" {
	mkimg "$T/a.img"
	r4manifest "$T/a.img" >"$T/m1"
	run r4resize "$T/a.img" 1G
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"grown from 16384 to 262144 blocks"* ]]
	[ "$(blocks "$T/a.img")" = 262144 ]
	[ "$(stat -c %s "$T/a.img")" = 1073741824 ]
	# sparse: the data, the heads of 9 regions, 5 backups
	[ "$(du -k "$T/a.img" | cut -f1)" -lt 16384 ]
	checked "$T/a.img"
	# the kernel's count of bitmap blocks: 9, and fsck.reiser4 read them
	run r4debugfs -R 'print super' "$T/a.img"
	[[ "$output" == *"free blocks:"* ]]
	# again: nothing to do, nothing written
	cp "$T/a.img" "$T/copy.img"
	run r4resize "$T/a.img" 262144
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"nothing to do"* ]]
	cmp "$T/a.img" "$T/copy.img"
}

@test "resize: grow to 8 TiB: sparse, r4fsck clean, every file exact" {
	# in a tmpfs when there is one (deleting it is quick there)
	big_tmp
	mkimg "$BIG/a.img"
	r4manifest "$BIG/a.img" >"$T/m1"
	run r4resize -q "$BIG/a.img" 8T
	[ "$status" -eq 0 ]
	[ "$(blocks "$BIG/a.img")" = 2147483648 ]
	# 65,536 bitmap blocks (256 MiB) and the data: far below 8 TiB
	[ "$(du -k "$BIG/a.img" | cut -f1)" -lt 300000 ]
	run r4fsck -n "$BIG/a.img"
	echo "$output"
	[ "$status" -eq 0 ]
	r4manifest "$BIG/a.img" | diff "$T/m1" -
}

@test "resize: without SIZE an image file keeps its length; shrink after removing half the files, then -M" {
	mkimg "$T/a.img"
	truncate -s 300M "$T/a.img"
	run r4resize "$T/a.img"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(blocks "$T/a.img")" = 76800 ]
	r4debugfs -w -R 'rm -r /a' "$T/a.img"
	r4manifest "$T/a.img" >"$T/m1"
	checked "$T/a.img"
	run r4resize "$T/a.img" 100M
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(blocks "$T/a.img")" = 25600 ]
	[ "$(stat -c %s "$T/a.img")" = 104857600 ]
	checked "$T/a.img"
	min=$(r4resize -P "$T/a.img" | sed -n 's/.*minimum size: \([0-9]*\) blocks.*/\1/p')
	[ -n "$min" ]
	run r4resize -M "$T/a.img"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(blocks "$T/a.img")" -le $((min + 64)) ]
	checked "$T/a.img"
}

@test "resize: shrink an aged volume: used blocks past the new end are moved (crash-safe batches), every file exact" {
	AGE_SIZE=4M bash "$top_srcdir/tests/age.sh" "$T/aged.img" 90 3 >"$T/age.log" 2>&1 ||
		{ cat "$T/age.log"; false; }
	r4manifest "$T/aged.img" >"$T/m1"
	run r4resize -n "$T/aged.img" 600
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"used blocks to move below the new end"* ]]
	run r4resize --batch 64 "$T/aged.img" 600
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"moved "*" blocks in "*" transactions"* ]]
	[ "$(blocks "$T/aged.img")" = 600 ]
	[ "$(stat -c %s "$T/aged.img")" = $((600 * 4096)) ]
	checked "$T/aged.img"
}

@test "resize: -P, -n and --json change nothing; --json reports the sizes" {
	mkimg "$T/a.img"
	cp "$T/a.img" "$T/copy.img"
	run r4resize -P "$T/a.img"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"minimum size: "*" blocks"* ]]
	run r4resize -n "$T/a.img" 2G
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"would grow from 16384 to 524288 blocks"*"bitmap blocks 1 -> 17"* ]]
	run r4resize -n --json "$T/a.img" 2G
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *'"outcome":"grow"'* ]]
	[[ "$output" == *'"new_blocks":524288'* ]]
	cmp "$T/a.img" "$T/copy.img"
	run r4resize --json "$T/a.img" 128M
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *'"old_blocks":16384'* ]]
	[[ "$output" == *'"new_blocks":32768'* ]]
	[ "$(blocks "$T/a.img")" = 32768 ]
}

@test "resize: bad input: one line each, exit code as documented, nothing changed" {
	mkimg "$T/a.img"
	cp "$T/a.img" "$T/copy.img"
	# below the minimum: the minimum in the message
	run r4resize "$T/a.img" 40
	echo "$output"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"below the minimum size of this volume, "*" blocks"* ]]
	# more than the format addresses (2^53 blocks)
	run r4resize "$T/a.img" 9007199254740992
	echo "$output"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"more than the format addresses"* ]]
	# not a size
	run r4resize "$T/a.img" 12Q
	[ "$status" -eq 2 ]
	[[ "$output" == *"is not a size"* ]]
	run r4resize
	[ "$status" -eq 2 ]
	run r4resize -M "$T/a.img" 100M
	[ "$status" -eq 2 ]
	cmp "$T/a.img" "$T/copy.img"
	# not a multiple of the block size: rounded down, and said
	run r4resize "$T/a.img" 100001K
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"not a multiple of the block size"*"rounded down to 25000 blocks"* ]]
	[ "$(blocks "$T/a.img")" = 25000 ]
	# a damaged volume: refused, pointing at r4fsck, nothing changed
	mkimg "$T/d.img"
	leaf=$(r4debugfs -R 'print super' "$T/d.img" | sed -n 's/^ *root block: *//p')
	printf '\377\377' | dd of="$T/d.img" bs=1 seek=$((leaf * 4096 + 2)) conv=notrunc 2>/dev/null
	cp "$T/d.img" "$T/dcopy.img"
	run r4resize "$T/d.img" 1G
	echo "$output"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"not resized; run r4fsck"* ]]
	cmp "$T/d.img" "$T/dcopy.img"
}

@test "resize: a busy image: exit 75, --wait waits" {
	mkimg "$T/a.img"
	flock -x "$T/a.img" sh -c ': >"$1"; sleep 2' sh "$T/held" &
	for i in $(seq 1 100); do [ -e "$T/held" ] && break; sleep 0.05; done
	[ -e "$T/held" ]
	run r4resize "$T/a.img" 100M
	echo "$output"
	[ "$status" -eq 75 ]
	run r4resize --wait=5 "$T/a.img" 100M
	echo "$output"
	[ "$status" -eq 0 ]
	wait
	[ "$(blocks "$T/a.img")" = 25600 ]
}

@test "resize: a block device: a size past its end is refused (the device's size said, nothing changed); without SIZE the volume fills it" {
	[ "$(id -u)" -eq 0 ] || skip "needs root to attach a loop device"
	command -v losetup >/dev/null || skip "needs losetup"
	mkimg "$T/v.img"
	r4manifest "$T/v.img" >"$T/m1"
	truncate -s 96M "$T/v.img"
	dev=$(losetup -f --show "$T/v.img" 2>"$T/losetup.err") ||
		skip "cannot attach a loop device here: $(head -n 1 "$T/losetup.err")"
	sum=$(sha256sum <"$T/v.img")
	run r4resize "$dev" 128M
	r1=$status o1=$output
	s1=$(sha256sum <"$T/v.img")
	run r4resize -p "$dev"
	r2=$status o2=$output
	b2=$(blocks "$dev")
	losetup -d "$dev"
	echo "$o1"; echo "$o2"
	[ "$r1" -eq 1 ]
	[ "${#o1}" -gt 0 ]
	[ "$(grep -c . <<<"$o1")" -le 2 ]
	[[ "$o1" == *"$dev: the device holds 24576 blocks"* ]]
	[ "$s1" = "$sum" ]
	[ "$r2" -eq 0 ]
	[ "$b2" = 24576 ]
	checked "$T/v.img"
}

@test "resize: --help and --version" {
	run r4resize --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"--print-minimum"* ]]
	run r4resize --version
	[ "$status" -eq 0 ]
	[[ "$output" == *"r4kit"* ]]
}

@test "resize: a failed add never says 'nothing was changed' when it wrote free blocks; on an uncompressed volume a plainly too big directory writes nothing" {
	mkdir -p "$T/s" "$T/add"
	echo hi >"$T/s/x"
	head -c 30M /dev/urandom >"$T/add/big"
	# the default profile compresses (ccreg40, conv): no lower bound on
	# what the add needs, so it writes before it knows; it says so
	r4pack create -q "$T/s" "$T/c.img"
	cp "$T/c.img" "$T/c0.img"
	run r4pack add "$T/c.img" "$T/add"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" != *"nothing was changed"* ]]
	[[ "$output" == *"contents are unchanged (its files and free space are as before; "*" of its free blocks hold bytes of the dropped add)"* ]]
	r4manifest "$T/c.img" >"$T/m1"
	r4manifest "$T/c0.img" >"$T/m0"
	cmp "$T/m0" "$T/m1"
	checked "$T/c.img"
	# reg40: the directory holds more blocks of data than are free: it
	# fails before a write, the image byte-identical
	r4pack create -q -o create=reg40 "$T/s" "$T/r.img"
	cp "$T/r.img" "$T/r0.img"
	run r4pack add "$T/r.img" "$T/add"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"add: no free block left for it: its files hold at least "*" blocks of data"* ]]
	[[ "$output" == *"nothing was changed"* ]]
	cmp "$T/r.img" "$T/r0.img"
	# --grow grows first, then adds
	run r4pack add --grow "$T/r.img" "$T/add"
	[ "$status" -eq 0 ]
	r4debugfs -R "dump /big $T/big.out" "$T/r.img"
	cmp "$T/big.out" "$T/add/big"
	r4manifest "$T/r.img" >"$T/m1"
	checked "$T/r.img"
}

@test "resize: r4pack add that does not fit: the message says how much more and names --grow and r4resize; --grow grows and adds; --grow=MAX bounds it" {
	mkdir -p "$T/s" "$T/add"
	echo hi >"$T/s/x"
	head -c 30M /dev/urandom >"$T/add/big"
	r4pack create -q "$T/s" "$T/a.img"
	cp "$T/a.img" "$T/b.img"
	old=$(blocks "$T/a.img")
	run r4pack add "$T/a.img" "$T/add"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"needs about "*" blocks"*" more than the "*" free: run it again with --grow, or grow the image with r4resize first (r4resize "*"M)"* ]]
	[ "$(blocks "$T/a.img")" = "$old" ]
	run r4pack add --grow "$T/a.img" "$T/add"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"grown from $old to "*" blocks for the add"* ]]
	r4debugfs -R "dump /big $T/big.out" "$T/a.img"
	cmp "$T/big.out" "$T/add/big"
	r4manifest "$T/a.img" >"$T/m1"
	checked "$T/a.img"
	# a bound too small: grown to it, the contents unchanged
	r4manifest "$T/b.img" >"$T/m1"
	run r4pack add --grow=20M "$T/b.img" "$T/add"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"does not fit even in 5120 blocks"* ]]
	[[ "$output" == *"contents are unchanged"* ]]
	checked "$T/b.img"
}
