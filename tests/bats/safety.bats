#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Never lose a byte: the image lock, a write path that distrusts a bad
# bitmap, outputs that never clobber, signals, names extract must not
# emit, and sources that would include their own output.

load helpers

make_tree() {
	local d=$1 i
	mkdir -p "$d/a/sub" "$d/b"
	for i in 1 2 3; do echo "file $i" >"$d/a/f$i"; done
	head -c 30000 /dev/urandom >"$d/a/big"
	echo deep >"$d/a/sub/leaf"
	ln -s ../a/f1 "$d/b/tof1"
	find "$d" -exec touch -h -d @1600000000 {} +
}

make_image() {
	make_tree "$T/src"
	run r4pack create -q "$T/src" "$T/v.img"
	[ "$status" -eq 0 ]
}

image_clean() {
	run r4fsck --check "$1"
	echo "$output"
	[ "$status" -eq 0 ]
	oracle_fsck "$1"
}

# Start r4debugfs -w on $1 reading its commands from fd 8, and wait
# (bounded) until it holds the image's lock.
hold_image() {
	mkfifo "$T/cmds"
	r4debugfs -w "$1" <"$T/cmds" >"$T/holder.out" 2>&1 &
	HOLDER=$!
	exec 8>"$T/cmds"
	local i
	for i in $(seq 1 500); do
		flock -n "$1" true || return 0
		sleep 0.02
	done
	echo "r4debugfs never took the lock"
	return 1
}

release_image() {
	exec 8>&-
	wait "$HOLDER"
}

@test "lock: a second writer is refused at once, the first completes" {
	make_image
	mkdir "$T/new"
	echo new >"$T/new/newfile"
	hold_image "$T/v.img"
	echo "mkdir /fromdebugfs" >&8
	# A second writer: r4pack add and r4debugfs -w, refused at once.
	run r4pack add "$T/v.img" "$T/new"
	echo "$output"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"$T/v.img"*"in use by another program"* ]]
	run r4debugfs -w -R 'mkdir /second' "$T/v.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"$T/v.img"*"in use"* ]]
	run r4mkfs -q -f "$T/v.img"
	[ "$status" -ne 0 ]
	# A reader is refused too, unless it asks for --no-lock.
	run r4pack extract "$T/v.img" "$T/out.tar"
	[ "$status" -eq 1 ]
	[[ "$output" == *"--no-lock"* ]]
	r4pack extract --no-lock "$T/v.img" "$T/out.tar"
	run r4fsck --check "$T/v.img"
	[ "$status" -eq 8 ]
	# A writer that waits goes on once the first is done.
	r4pack add -q --wait "$T/v.img" "$T/new" 8>&- &
	local waiter=$!
	echo "mkdir /fromdebugfs2" >&8
	release_image
	wait "$waiter"
	r4debugfs -R 'ls /' "$T/v.img" >"$T/ls"
	grep -q fromdebugfs "$T/ls"
	grep -q fromdebugfs2 "$T/ls"
	grep -q newfile "$T/ls"
	! grep -q second "$T/ls"
	image_clean "$T/v.img"
}

@test "lock: two r4pack add at once never lose a change silently" {
	make_image
	local i ok=0
	for i in 1 2 3 4 5 6; do mkdir -p "$T/s$i/d$i"; head -c 200000 /dev/urandom >"$T/s$i/d$i/f"; done
	for i in 1 2 3 4 5 6; do
		r4pack add -q "$T/v.img" "$T/s$i" 2>"$T/err$i" &
		eval "p$i=\$!"
	done
	for i in 1 2 3 4 5 6; do
		if eval "wait \$p$i"; then
			eval "ok$i=1"
		else
			grep -q "in use by another program" "$T/err$i"
			eval "ok$i=0"
		fi
	done
	# Whoever said it added its files did; the refused ones did not.
	for i in 1 2 3 4 5 6; do
		if eval "[ \$ok$i = 1 ]"; then
			ok=$((ok + 1))
			r4debugfs -R "stat /d$i/f" "$T/v.img" >/dev/null
		else
			run r4debugfs -R "stat /d$i/f" "$T/v.img"
			[ "$status" -ne 0 ]
		fi
	done
	[ "$ok" -ge 1 ]
	image_clean "$T/v.img"
}

# Clear the bitmap bit of block $2 in the first bitmap block of image
# $1 (block 18 of a 4096-byte volume); with $3 = fix, store a checksum
# that matches the damaged bits, else leave the old one (stale).
clear_bitmap_bit() {
	python3 - "$1" "$2" "${3:-stale}" <<'PY'
import sys, zlib, struct
path, blk, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(path, 'r+b') as f:
    off = 18 * 4096
    f.seek(off)
    b = bytearray(f.read(4096))
    assert struct.unpack('<I', b[:4])[0] == zlib.adler32(bytes(b[4:])), "bitmap csum"
    assert b[4 + blk // 8] & (1 << (blk % 8)), "block not marked used"
    b[4 + blk // 8] &= ~(1 << (blk % 8)) & 0xff
    if mode == 'fix':
        b[:4] = struct.pack('<I', zlib.adler32(bytes(b[4:])))
    f.seek(off)
    f.write(b)
PY
}

root_block() {
	r4debugfs -R 'print super' "$1" | sed -n 's/^ *root block: *//p'
}

block_sum() {
	dd if="$1" bs=4096 skip="$2" count=1 status=none | sha256sum
}

@test "bitmap: a bit cleared under the root node, stale checksum: writers refuse, nothing written" {
	make_image
	mkdir -p "$T/new/n"; head -c 100000 /dev/urandom >"$T/new/n/data"
	local root; root=$(root_block "$T/v.img")
	[ -n "$root" ]
	clear_bitmap_bit "$T/v.img" "$root"
	local sum; sum=$(sha256sum <"$T/v.img")
	run r4pack add "$T/v.img" "$T/new"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"bitmap block 18"*"r4fsck"* ]]
	[ "$(sha256sum <"$T/v.img")" = "$sum" ]
	run r4debugfs -w -R "write $T/new/n/data /x" "$T/v.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"bitmap block 18"* ]]
	[ "$(sha256sum <"$T/v.img")" = "$sum" ]
	# Every file is still there; the checker names the damage.
	mkdir "$T/out"
	r4debugfs -R "rdump / $T/out" "$T/v.img"
	diff -r "$T/src" "$T/out"
	run r4fsck --check "$T/v.img"
	echo "$output"
	[ "$status" -eq 4 ]
	[[ "$output" == *"bitmap"* ]]
}

@test "bitmap: a bit cleared under the root node, checksum recomputed: the live nodes are never written" {
	make_image
	mkdir -p "$T/new/n"; head -c 100000 /dev/urandom >"$T/new/n/data"
	local root; root=$(root_block "$T/v.img")
	clear_bitmap_bit "$T/v.img" "$root" fix
	local before; before=$(block_sum "$T/v.img" "$root")
	run r4pack add "$T/v.img" "$T/new"
	echo "$output"
	if [ "$status" -ne 0 ]; then
		# A refusal must be true to its word.
		[ "$status" -eq 1 ]
	fi
	[ "$(block_sum "$T/v.img" "$root")" = "$before" ]
	mkdir "$T/out"
	r4debugfs -R "rdump / $T/out" "$T/v.img"
	if [ "$status" -eq 0 ]; then
		cmp "$T/new/n/data" "$T/out/n/data"
		rm -r "$T/out/n"
	fi
	diff -r "$T/src" "$T/out"
	# r4debugfs -w write on a fresh copy of the damage.
	make_tree "$T/src2"
	r4pack create -q "$T/src2" "$T/w.img"
	root=$(root_block "$T/w.img")
	clear_bitmap_bit "$T/w.img" "$root" fix
	before=$(block_sum "$T/w.img" "$root")
	run r4debugfs -w -R "write $T/new/n/data /x" "$T/w.img"
	echo "$output"
	[ "$(block_sum "$T/w.img" "$root")" = "$before" ]
	mkdir "$T/out2"
	r4debugfs -R "rdump / $T/out2" "$T/w.img"
	[ ! -e "$T/out2/x" ] || cmp "$T/new/n/data" "$T/out2/x"
	rm -f "$T/out2/x"
	diff -r "$T/src2" "$T/out2"
	oracle_fsck "$T/v.img"
	oracle_fsck "$T/w.img"
}
