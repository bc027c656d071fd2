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
	# up to five minutes while it runs: a sanitizer build on a loaded
	# machine starts slowly; a holder that ended has failed at once
	# The probe takes no lock of its own (a probing flock(2) once
	# refused the holder as it started): both of the holder's locks,
	# the flock(2) and the OFD lock, are looked up in /proc/locks.
	local ino
	ino=$(stat -c %i "$1")
	for i in $(seq 1 15000); do
		grep -q "FLOCK .* [0-9a-f]*:[0-9a-f]*:$ino " /proc/locks &&
			grep -q "OFDLCK .* [0-9a-f]*:[0-9a-f]*:$ino " \
				/proc/locks && return 0
		kill -0 "$HOLDER" 2>/dev/null || break
		sleep 0.02
	done
	echo "r4debugfs never took the lock:"
	cat "$T/holder.out"
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
	[ "$status" -eq 75 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"$T/v.img: in use: "* ]]
	run r4debugfs -w -R 'mkdir /second' "$T/v.img"
	echo "$output"
	[ "$status" -eq 75 ]
	[[ "$output" == *"$T/v.img"*"in use"* ]]
	run r4mkfs -q -f "$T/v.img"
	[ "$status" -eq 75 ]
	# A reader is refused too, unless it asks for --no-lock.
	run r4pack extract "$T/v.img" "$T/out.tar"
	[ "$status" -eq 75 ]
	[[ "$output" == *"--no-lock"* ]]
	r4pack extract --no-lock "$T/v.img" "$T/out.tar" 2>"$T/nolock.err"
	# ... and says that a writer holds the image
	grep -q "v.img: in use: .*reading it as it is (--no-lock)" \
		"$T/nolock.err"
	run r4fsck --check "$T/v.img"
	[ "$status" -eq 8 ]
	[[ "$output" == *"$T/v.img: in use: "* ]]
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
	! grep -q second "$T/ls" || false
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
			grep -q ": in use: " "$T/err$i"
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

# No temporary file of r4pack is left in folder $1.
no_temp_left() {
	local left
	left=$(find "$1" -maxdepth 1 \( -name '*.r4tmp*' -o -name '.*.r4pack.*' \
		-o -name '.*.r4spool.*' \))
	[ -z "$left" ] || { echo "left behind: $left"; return 1; }
}

@test "outputs: extract onto a device node, a FIFO, a symlink, the image itself" {
	make_image
	# A character device made here, as /dev/null is: written into, kept.
	if [ "$(id -u)" -eq 0 ] && mknod "$T/null" c 1 3 2>/dev/null; then
		r4pack extract "$T/v.img" "$T/null"
		[ -c "$T/null" ]
	else
		echo "# not root or no mknod: the device node case is not run" >&3
	fi
	# A FIFO: its reader gets the whole tarball.
	mkfifo "$T/fifo"
	cat "$T/fifo" >"$T/fromfifo" &
	local reader=$!
	r4pack extract "$T/v.img" "$T/fifo"
	wait "$reader"
	[ -p "$T/fifo" ]
	tar -tf "$T/fromfifo" | grep -q '^\./a/f1$'
	# A symlink: followed, the link stays, the file it names is replaced.
	echo old >"$T/real.tar"
	ln -s real.tar "$T/link.tar"
	r4pack extract "$T/v.img" "$T/link.tar"
	[ -L "$T/link.tar" ]
	tar -tf "$T/real.tar" | grep -q '^\./a/f1$'
	# /dev/stdout-like: a symlink to a FIFO is written into.
	ln -s fifo "$T/tofifo"
	cat "$T/fifo" >"$T/fromfifo2" &
	reader=$!
	r4pack extract "$T/v.img" "$T/tofifo"
	wait "$reader"
	[ -L "$T/tofifo" ]
	[ -p "$T/fifo" ]
	cmp "$T/fromfifo" "$T/fromfifo2"
	# The image itself, directly or through a link: refused, unchanged.
	local sum; sum=$(sha256sum <"$T/v.img")
	run r4pack extract "$T/v.img" "$T/v.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"image being extracted"* ]]
	ln -s v.img "$T/imglink"
	run r4pack extract "$T/v.img" "$T/imglink"
	[ "$status" -eq 1 ]
	[ "$(sha256sum <"$T/v.img")" = "$sum" ]
	[ -L "$T/imglink" ]
	no_temp_left "$T"
}

@test "outputs: create refuses its own source, swapped arguments, a file that is no image, '-' and a FIFO" {
	make_image
	tar -C "$T/src" -cf "$T/s.tar" .
	local sum; sum=$(sha256sum <"$T/s.tar")
	run r4pack create "$T/s.tar" "$T/s.tar"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"source too"* ]]
	# r4pack create image.img rootfs.tar: the tarball is kept.
	run r4pack create "$T/v.img" "$T/s.tar"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"holds data and no Reiser4 volume"*"-f"* ]]
	[ "$(sha256sum <"$T/s.tar")" = "$sum" ]
	echo precious >"$T/notes.txt"
	run r4pack create "$T/src" "$T/notes.txt"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/notes.txt")" = precious ]
	r4pack create -q -f "$T/src" "$T/notes.txt"
	r4fsck --check -q "$T/notes.txt"
	# An image is replaced without -f; a symlink to it is followed.
	r4pack create -q "$T/src" "$T/v.img"
	ln -s v.img "$T/link.img"
	r4pack create -q "$T/src" "$T/link.img"
	[ -L "$T/link.img" ]
	r4fsck --check -q "$T/v.img"
	# '-' cannot hold an image; no file named '-' appears.
	cd "$T"
	run r4pack create "$T/src" -
	echo "$output"
	[ "$status" -eq 2 ]
	[ ! -e "$T/-" ]
	mkfifo "$T/fifo"
	run r4pack create "$T/src" "$T/fifo"
	[ "$status" -eq 1 ]
	[ -p "$T/fifo" ]
	no_temp_left "$T"
}

@test "outputs: create onto the image behind a mounted loop device is refused, even with -f" {
	[ "$(id -u)" -eq 0 ] || skip "needs root to attach a loop device"
	command -v losetup >/dev/null && command -v mkfs.ext2 >/dev/null ||
		skip "needs losetup and mkfs.ext2"
	make_tree "$T/src"
	truncate -s 8M "$T/ext.img"
	mkfs.ext2 -q -F "$T/ext.img"
	mkdir "$T/mnt"
	if ! mount -o loop "$T/ext.img" "$T/mnt" 2>"$T/mount.err"; then
		skip "cannot loop-mount here: $(head -n 1 "$T/mount.err")"
	fi
	echo kept >"$T/mnt/kept"
	local ino; ino=$(stat -c %i "$T/ext.img")
	run r4pack create "$T/src" "$T/ext.img"
	echo "$output"
	[ "$status" -eq 75 ] || { umount "$T/mnt"; false; }
	[ "$(stat -c %i "$T/ext.img")" = "$ino" ] || { umount "$T/mnt"; false; }
	run r4pack create -f "$T/src" "$T/ext.img"
	echo "$output"
	umount "$T/mnt"
	[ "$status" -eq 75 ]
	[[ "$output" == *"mounted"* ]]
	# still the same file, still the mounted file system
	[ "$(stat -c %i "$T/ext.img")" = "$ino" ]
	mount -o loop,ro "$T/ext.img" "$T/mnt"
	local kept; kept=$(cat "$T/mnt/kept")
	umount "$T/mnt"
	[ "$kept" = kept ]
	no_temp_left "$T"
}

# Run "$@" in the background with its stdout into a FIFO that is held
# open but never read: once the listing (-v) fills the pipe, the
# command blocks, so it is still at work when it gets the signal.
start_stalled() {
	mkfifo "$T/stall"
	exec 7<>"$T/stall"
	env --default-signal=INT,TERM,HUP "$@" >"$T/stall" 2>/dev/null 7<&- &
	STALLED=$!
}

# Wait (bounded) until a file matching glob $1 exists.
wait_for() {
	local i
	for i in $(seq 1 1000); do
		compgen -G "$1" >/dev/null && return 0
		sleep 0.02
	done
	echo "never appeared: $1"
	return 1
}

many_files() {
	local d=$1 i
	mkdir -p "$d/a-directory-with-a-rather-long-name"
	for i in $(seq 1 3000); do
		: >"$d/a-directory-with-a-rather-long-name/file-number-$i"
	done
}

@test "signals: SIGTERM, SIGINT and SIGHUP during create and extract leave no temporary file" {
	many_files "$T/src"
	r4pack create -q "$T/src" "$T/v.img"
	mkdir "$T/out"
	local sig rc
	for sig in TERM INT HUP; do
		start_stalled r4pack create -v "$T/src" "$T/out/new.img"
		wait_for "$T/out/.new.img.r4pack.*"
		kill -s "$sig" "$STALLED"
		rc=0; wait "$STALLED" || rc=$?
		exec 7<&-
		rm "$T/stall"
		echo "create, SIG$sig: exit $rc"
		[ "$rc" -gt 128 ]
		no_temp_left "$T/out"
		[ ! -e "$T/out/new.img" ]

		start_stalled r4pack extract -v "$T/v.img" "$T/out/x.tar"
		wait_for "$T/out/x.tar.r4tmp*"
		kill -s "$sig" "$STALLED"
		rc=0; wait "$STALLED" || rc=$?
		exec 7<&-
		rm "$T/stall"
		echo "extract, SIG$sig: exit $rc"
		[ "$rc" -gt 128 ]
		no_temp_left "$T/out"
		[ ! -e "$T/out/x.tar" ]
	done
}

@test "self-inclusion: create DIR DIR/out.img and add IMG DIR leave the image out" {
	make_tree "$T/src"
	export SOURCE_DATE_EPOCH=1700000000
	local U=01234567-89ab-cdef-0123-456789abcdef
	r4pack create -q -U $U "$T/src" "$T/src/out.img"
	r4debugfs -R 'ls /' "$T/src/out.img" >"$T/ls"
	cat "$T/ls"
	! grep -q 'out\.img\|r4pack\|r4spool' "$T/ls" || false
	# The same again (the old out.img is in the source now): same bytes.
	cp "$T/src/out.img" "$T/first.img"
	# (reading the folders moved their access times)
	find "$T/src" -exec touch -h -d @1600000000 {} +
	r4pack create -q -U $U "$T/src" "$T/src/out.img"
	cmp "$T/first.img" "$T/src/out.img"
	# add IMG DIR with IMG inside DIR.
	mkdir "$T/src/more"
	echo more >"$T/src/more/m"
	r4pack add -q "$T/src/out.img" "$T/src"
	r4debugfs -R 'ls /' "$T/src/out.img" >"$T/ls"
	grep -q more "$T/ls"
	! grep -q 'out\.img' "$T/ls" || false
	image_clean "$T/src/out.img"
}

# Rename the entry "y" of the directory whose object id is $2 (hex;
# default 2a, the root) of image $1 to "x" in place: the entry's key
# holds its (short) name, and x sorts before y, so the directory item
# stays in key order with two entries named x.
rename_y_to_x() {
	r4debugfs -R 'print tree' "$1" >"$T/tree.txt"
	python3 - "$1" "$T/tree.txt" "${2:-2a}" <<'PY'
import sys, re, struct
img, tree = sys.argv[1], open(sys.argv[2]).read()
blk = off = None
for line in tree.splitlines():
    m = re.match(r'node (\d+): ', line)
    if m:
        node = int(m.group(1))
    m = re.match(r'#\d+ cde40 \(\d+\) \[%s:0:0:0:0\] offset (\d+)'
                 % sys.argv[3], line)
    if m:
        blk, off = node, int(m.group(1))
        break
assert blk is not None, "no root directory item"
y, x = struct.pack('<Q', 0x79 << 48), struct.pack('<Q', 0x78 << 48)
with open(img, 'r+b') as f:
    f.seek(blk * 4096)
    b = bytearray(f.read(4096))
    n, done = struct.unpack('<H', b[off:off + 2])[0], 0
    for i in range(n):          # large keys: 24-byte entry key + 2
        u = off + 2 + i * 26
        if b[u:u + 8] == y:
            b[u:u + 8] = x
            done += 1
    assert done == 1, "entry y not found"
    f.seek(blk * 4096)
    f.write(b)
PY
}

@test "names: two root entries named x (a symlink out and a folder holding f): r4fsck reports, extract emits one" {
	mkdir -p "$T/s/y" "$T/outside"
	echo data >"$T/s/y/f"
	ln -s "$T/outside" "$T/s/x"
	r4pack create -q "$T/s" "$T/d.img"
	rename_y_to_x "$T/d.img"
	[ "$(r4debugfs -R 'ls /' "$T/d.img" | grep -c '^x$')" -eq 2 ]
	run r4fsck --check "$T/d.img"
	echo "$output"
	[ "$status" -eq 4 ]
	[[ "$output" == *"entry 'x'"*"twice"* ]]
	run r4pack extract "$T/d.img" "$T/d.tar"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"./x: skipping"*"twice"* ]]
	# One member per name, none below a symlink member, and a trusting
	# extractor writes nothing outside its target.
	python3 - "$T/d.tar" "$T/ex" <<'PY'
import sys, tarfile
t = tarfile.open(sys.argv[1])
names = [m.name.rstrip('/') for m in t.getmembers()]
assert len(names) == len(set(names)), names
links = {m.name.rstrip('/') for m in t.getmembers() if m.issym()}
for n in names:
    parts = n.split('/')
    for k in range(1, len(parts)):
        assert '/'.join(parts[:k]) not in links, n
t.extractall(sys.argv[2])
PY
	[ -z "$(ls -A "$T/outside")" ]
}

@test "names: two entries named x in a subdirectory: extract emits one and says so; x in a sibling directory is no twin" {
	mkdir -p "$T/s/sub/y" "$T/s/d2"
	echo data >"$T/s/sub/y/f"
	echo one >"$T/s/sub/x"
	echo two >"$T/s/d2/x"
	r4pack create -q "$T/s" "$T/d.img"
	local oid
	oid=$(r4debugfs --json -R 'stat /sub' "$T/d.img" |
		python3 -c 'import json, sys; print("%x" % json.load(sys.stdin)["oid"])')
	rename_y_to_x "$T/d.img" "$oid"
	[ "$(r4debugfs -R 'ls /sub' "$T/d.img" | grep -c '^x$')" -eq 2 ]
	run r4pack extract "$T/d.img" "$T/d.tar"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"./sub/x: skipping: the name is in the directory twice"* ]]
	[ "$(grep -c twice <<<"$output")" -eq 1 ]
	python3 - "$T/d.tar" <<'PY'
import sys, tarfile
names = [m.name.rstrip('/') for m in tarfile.open(sys.argv[1]).getmembers()]
assert names.count('./sub/x') == 1, names
assert './d2/x' in names and './sub' in names, names
PY
}

@test "names: r4fsck reports a name with '/', extract skips it" {
	mkdir -p "$T/s"
	local long; long=$(printf 'n%.0s' $(seq 1 40))
	echo a >"$T/s/$long"
	echo b >"$T/s/short"
	r4pack create -q "$T/s" "$T/l.img"
	r4fsck --check -q "$T/l.img"
	# The long entry stores its name in the item body: make it 'nn/nn...'
	# (same length, so the key and the order stay).
	python3 - "$T/l.img" "$long" <<'PY'
import sys
img, long = sys.argv[1], sys.argv[2].encode()
data = bytearray(open(img, 'rb').read())
i = data.find(long)
assert i > 0 and data.find(long, i + 1) < 0
data[i + 2:i + 3] = b'/'
open(img, 'wb').write(data)
PY
	run r4fsck --check "$T/l.img"
	echo "$output"
	[ "$status" -eq 4 ]
	[[ "$output" == *"holds a '/'"* ]]
	run r4pack extract "$T/l.img" "$T/l.tar"
	echo "$output"
	[[ "$output" == *"skipping"*"holds a '/'"* ]]
	! tar -tf "$T/l.tar" | grep -q 'nn/' || false
}

@test "rdump: a second name becomes a hard link only to a file this run made" {
	mkdir -p "$T/s"
	echo image-data >"$T/s/f1"
	ln "$T/s/f1" "$T/s/h"
	r4pack create -q "$T/s" "$T/h.img"
	mkdir "$T/out"
	echo mine >"$T/out/f1"
	run r4debugfs -R "rdump / $T/out" "$T/h.img"
	echo "$output"
	[[ "$output" == *"f1"*"exists already"* ]]
	[ "$(cat "$T/out/f1")" = mine ]
	[ "$(cat "$T/out/h")" = image-data ]
	[ "$(stat -c %i "$T/out/f1")" != "$(stat -c %i "$T/out/h")" ]
}

@test "add: 'nothing was changed' only when true (a write fails before, then after the commit point)" {
	make_image
	mkdir -p "$T/new/n"
	echo y >"$T/new/n/g"
	cp "$T/v.img" "$T/c.img"
	R4_FAULT=count R4_FAULT_REPORT="$T/rep" "$top_builddir/tests/crash/bin/r4pack" add -q "$T/c.img" "$T/new"
	local n; n=$(sed -n 's/^writes=\([0-9]*\).*/\1/p' "$T/rep" | tail -n 1)
	[ "$n" -gt 4 ]
	# The first write fails: the volume is as it was, and says so.
	cp "$T/v.img" "$T/e.img"
	run env R4_FAULT=fail-write=1 "$top_builddir/tests/crash/bin/r4pack" add -q "$T/e.img" "$T/new"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"nothing was changed"* ]]
	run r4debugfs -R 'ls /n' "$T/e.img"
	[ "$status" -ne 0 ]
	# A write home after the commit point fails: the change is kept
	# (the next writable open replays it), so no "nothing was changed".
	cp "$T/v.img" "$T/d.img"
	run env R4_FAULT=fail-write=$((n - 1)) "$top_builddir/tests/crash/bin/r4pack" add -q "$T/d.img" "$T/new"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" != *"nothing was changed"* ]]
	[[ "$output" == *"committed in the journal"* ]]
	run r4fsck "$T/d.img"
	[ "$status" -eq 1 ]
	r4debugfs -R 'ls /n' "$T/d.img" | grep -q '^g$'
	image_clean "$T/d.img"
}
