#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# r4mkfs against mkfs.reiser4 and fsck.reiser4 (the test oracle).

load helpers

UUID=01234567-89ab-cdef-0123-456789abcdef

# Super block fields debugfs.reiser4 prints, minus the random mkfs id.
supers() {
	oracle debugfs.reiser4 -f -s "$1" 2>/dev/null | sed -n '/^Master/,$p' |
		grep -v '^mkfs id:'
}

# The tree as debugfs.reiser4 prints it, minus time stamps and ids.
tree() {
	oracle debugfs.reiser4 -f -t "$1" 2>/dev/null |
		grep -v 'time:' | sed -e 's/MKFS ID=0x[0-9a-f]*//' -e 's/CSUM=[0-9]*//'
}

# Make the same volume with both tools and compare what the oracle sees.
same_as_mkfs_reiser4() {
	local size=$1; shift
	truncate -s "$size" "$T/ref.img"
	mkfs.reiser4 -f -y "$@" -U $UUID "$T/ref.img" >/dev/null 2>&1
	r4mkfs -q "$@" -U $UUID "$T/ours.img" "$size"
	oracle_fsck "$T/ours.img"
	diff <(supers "$T/ref.img") <(supers "$T/ours.img")
	diff <(tree "$T/ref.img") <(tree "$T/ours.img")
	# The same blocks are in use: every bitmap block equal (block 18,
	# then one every 32,736 blocks), read in one process.
	python3 - "$T/ref.img" "$T/ours.img" <<-'PY'
	import os, sys
	a, b = (open(p, 'rb') for p in sys.argv[1:3])
	n = (os.path.getsize(sys.argv[1]) // 4096 + 32735) // 32736
	for k in range(n):
	    blk = 18 if k == 0 else k * 32736
	    a.seek(blk * 4096); b.seek(blk * 4096)
	    if a.read(4096) != b.read(4096):
	        sys.exit("bitmap block %d differs" % blk)
	PY
}

@test "r4mkfs --help and --version" {
	run r4mkfs --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"--label"* ]]
	run r4mkfs --version
	[ "$status" -eq 0 ]
	[[ "$output" == *"r4kit"* ]]
}

@test "r4mkfs -p prints mkfs.reiser4's default profile" {
	run r4mkfs -p
	[ "$status" -eq 0 ]
	[[ "$output" == *"create"*"ccreg40"* ]]
	[[ "$output" == *"hash"*"r5_hash"* ]]
	[[ "$output" == *"fibration"*"ext_1_fibre"* ]]
	run r4mkfs -p -o hash=tea,node=node41
	[[ "$output" == *"tea_hash"* ]]
	[[ "$output" == *"node41"* ]]
}

@test "smallest volume (128 KiB) is consistent and equal to mkfs.reiser4's" {
	need_oracle
	same_as_mkfs_reiser4 128K -L small
	[ "$(oracle_field "$T/ours.img" 'free blocks')" = 7 ]
}

@test "1 GiB volume, with and without lost+found" {
	need_oracle
	same_as_mkfs_reiser4 1G -L data
	rm -f "$T"/*.img
	same_as_mkfs_reiser4 1G -s -L data
}

@test "100 GiB sparse volume" {
	need_oracle
	same_as_mkfs_reiser4 100G
}

@test "8 TiB sparse volume is consistent and takes only the blocks written" {
	need_oracle
	big_tmp
	r4mkfs -q -U $UUID "$BIG/big.img" 8T
	if once; then
		oracle_fsck "$BIG/big.img"
		[ "$(oracle_field "$BIG/big.img" blocks)" = 2147483648 ]
	fi
	[ "$(r4debugfs -R 'print super' "$BIG/big.img" | sed -n 's/^  blocks: *//p')" = 2147483648 ]
	# 65,601 bitmap blocks + a few others: about 257 MiB on disk.
	used=$(du -k "$BIG/big.img" | cut -f1)
	[ "$used" -lt $((270 * 1024)) ]
}

@test "node41 volume" {
	need_oracle
	same_as_mkfs_reiser4 64M -o node=node41
}

@test "every hash plugin" {
	need_oracle
	for h in rupasov_hash r5_hash tea_hash fnv1_hash deg_hash; do
		rm -f "$T"/*.img
		same_as_mkfs_reiser4 64M -s -o hash=$h
	done
}

@test "every fibration" {
	need_oracle
	for f in lexic_fibre dot_o_fibre ext_1_fibre ext_3_fibre; do
		rm -f "$T"/*.img
		same_as_mkfs_reiser4 64M -s -o fibration=$f
	done
}

@test "other profile overrides (create, formatting, compression)" {
	need_oracle
	same_as_mkfs_reiser4 64M -o create=reg40,formatting=tails,compress=gzip1,compressMode=force,cluster=16K
}

@test "key_short volume: the short-key layout, checked by r4fsck" {
	need_oracle
	# mkfs.reiser4 -o key=key_short crashes, and so does fsck.reiser4 1.2.2
	# on every short-key volume (a NULL read in cde40.h's ha_get_ordering
	# for short keys); with that bug patched it calls ours consistent.
	r4mkfs -q -s -o key=key_short "$T/short.img" 64M
	[ "$(oracle_field "$T/short.img" 'key policy')" = SHORT ]
	run fsck.reiser4 --check -f -y "$T/short.img"
	if [ "$status" -ne 139 ]; then
		[[ "$output" == *"FS is consistent"* ]]
	fi
	if command -v r4fsck >/dev/null; then
		run r4fsck --check "$T/short.img"
		[ "$status" -eq 0 ]
	fi
	# Leaf 24: 4 items with 30-byte headers, bodies end at 340, so 3636
	# bytes are free (4096 - 340 - 4 * 30).
	read -r nr fs fss <<<"$(od -An -tu2 -j $((24 * 4096 + 2)) -N 6 "$T/short.img")"
	[ "$nr" -eq 4 ]
	[ "$fs" -eq 3636 ]
	[ "$fss" -eq 340 ]
	# Root directory item: 3 units of 18-byte headers and 16-byte ids.
	[ "$(od -An -tu2 -j $((24 * 4096 + 4036 + 24)) -N 2 "$T/short.img")" -eq 122 ]
	[ "$(od -An -tu2 -j $((24 * 4096 + 122)) -N 2 "$T/short.img")" -eq 3 ]
}

@test "label and uuid are stored" {
	need_oracle
	r4mkfs -q -L sixteen-chars-ok -U $UUID "$T/l.img" 64M
	[ "$(oracle debugfs.reiser4 -f -s "$T/l.img" 2>/dev/null | sed -n 's/^label:[[:space:]]*//p')" = sixteen-chars-ok ]
	[ "$(oracle debugfs.reiser4 -f -s "$T/l.img" 2>/dev/null | sed -n 's/^uuid:[[:space:]]*//p')" = $UUID ]
}

@test "reproducible with -U and SOURCE_DATE_EPOCH" {
	SOURCE_DATE_EPOCH=1700000000 r4mkfs -q -U $UUID "$T/a.img" 64M
	SOURCE_DATE_EPOCH=1700000000 r4mkfs -q -U $UUID "$T/b.img" 64M
	cmp "$T/a.img" "$T/b.img"
}

@test "an existing image file is extended to the size given" {
	need_oracle
	truncate -s 1M "$T/grow.img"
	r4mkfs -q "$T/grow.img" 32M
	[ "$(stat -c %s "$T/grow.img")" -eq $((32 * 1024 * 1024)) ]
	oracle_fsck "$T/grow.img"
}

@test "without a size the whole file is used, rounded down to 64 KiB" {
	need_oracle
	truncate -s $((140 * 1024)) "$T/odd.img"
	r4mkfs -q "$T/odd.img"
	[ "$(oracle_field "$T/odd.img" blocks)" = 32 ]
}

@test "bad input: a size below the minimum" {
	run r4mkfs "$T/tiny.img" 100K
	[ "$status" -eq 1 ]
	[[ "$output" == *"tiny.img"*"too small"* ]]
	[ "${#lines[@]}" -eq 1 ]
	[ ! -e "$T/tiny.img" ]
}

@test "bad input: a label too long" {
	run r4mkfs -L seventeen-chars-x "$T/l.img" 64M
	[ "$status" -eq 2 ]
	[[ "$output" == *"label"* ]]
	[ ! -e "$T/l.img" ]
}

@test "bad input: an unknown plugin or type" {
	run r4mkfs -o hash=nosuch "$T/p.img" 64M
	[ "$status" -eq 2 ]
	[[ "$output" == *"nosuch"* ]]
	run r4mkfs -o colour=red "$T/p.img" 64M
	[ "$status" -eq 2 ]
	[[ "$output" == *"colour"* ]]
	[ ! -e "$T/p.img" ]
}

@test "bad input: a path that cannot be written" {
	run r4mkfs "$T/no/such/dir/x.img" 64M
	[ "$status" -eq 1 ]
	[[ "$output" == *"x.img"* ]]
	[ "${#lines[@]}" -eq 1 ]
	mkdir "$T/ro" && chmod 500 "$T/ro"
	if [ "$(id -u)" != 0 ]; then
		run r4mkfs "$T/ro/x.img" 64M
		[ "$status" -eq 1 ]
		[ ! -e "$T/ro/x.img" ]
	fi
}

@test "bad input: a target that holds data needs -f" {
	r4mkfs -q -L first "$T/used.img" 64M
	run r4mkfs -L second "$T/used.img"
	[ "$status" -eq 1 ]
	[[ "$output" == *"used.img"*"Reiser4"*"-f"* ]]
	[ "${#lines[@]}" -eq 1 ]
	# Untouched: still the first label.
	grep -q first <(dd if="$T/used.img" bs=4096 skip=16 count=1 2>/dev/null)
	run r4mkfs -f -L second "$T/used.img"
	[ "$status" -eq 0 ]
	grep -q second <(dd if="$T/used.img" bs=4096 skip=16 count=1 2>/dev/null)
}

@test "bad input: no device, bad size, bad uuid, unsupported block size" {
	run r4mkfs
	[ "$status" -eq 2 ]
	run r4mkfs "$T/x.img" 12Q
	[ "$status" -eq 2 ]
	run r4mkfs -U not-a-uuid "$T/x.img" 64M
	[ "$status" -eq 2 ]
	run r4mkfs -b 1024 "$T/x.img" 64M
	[ "$status" -eq 2 ]
	run r4mkfs "$T/missing.img"
	[ "$status" -eq 1 ]
	[[ "$output" == *"missing.img"*"does not exist"* ]]
	[ ! -e "$T/x.img" ]
	[ ! -e "$T/missing.img" ]
}

@test "a new image file: its bytes synced, then the directory that names it" {
	mkdir "$T/out"
	run env R4_SYNC_LOG="$T/sync.log" "$top_builddir/tests/crash/bin/r4mkfs" \
		-q "$T/out/n.img" 1M
	[ "$status" -eq 0 ]
	cat "$T/sync.log"
	local d f
	d=$(realpath "$T/out") f=$(realpath "$T/out/n.img")
	# the last write and sync of the file, then its folder's sync
	[ "$(grep -n -x -F "fsync $d" "$T/sync.log" | cut -d: -f1)" -gt \
	  "$(grep -n -x -e "pwrite $f" -e "fsync $f" "$T/sync.log" | tail -n 1 | cut -d: -f1)" ]
	[ "$(tail -n 1 "$T/sync.log")" = "fsync $d" ]
}

@test "a new image file in a write-only folder (a drop box, 0333): made, its file system synced instead of the folder, exit 0" {
	mkdir "$T/wo"
	chmod 0333 "$T/wo"
	local d
	d=$(realpath "$T/wo")
	run as_nobody env R4_SYNC_LOG="$d/sync.log" \
		"$top_builddir/tests/crash/bin/r4mkfs" -q "$d/n.img" 1M
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	r4fsck -n "$T/wo/n.img"
	cat "$d/sync.log"
	# the folder cannot be opened: the image's file system, after it
	[ "$(tail -n 1 "$d/sync.log")" = "syncfs $d/n.img" ]
	# that sync failing (the image's own fsyncs pass): the whole volume
	# kept in place, exit 1, its name said not durable
	run as_nobody env R4_SYNC_FAIL="$d/m.img" R4_SYNC_FAIL_AFTER=2 \
		"$top_builddir/tests/crash/bin/r4mkfs" -q "$d/m.img" 1M
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"m.img: made and in place, but its folder could not be synced (a power cut may still lose the new name): Input/output error"* ]]
	r4fsck -n "$d/m.img"
}

@test "a new image file whose folder's sync fails: the whole volume kept in place, exit 1, the message says so" {
	mkdir "$T/out"
	local d
	d=$(realpath "$T/out")
	run env R4_SYNC_FAIL="$d" "$top_builddir/tests/crash/bin/r4mkfs" \
		-q "$T/out/n.img" 1M
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"n.img: made and in place, but its folder could not be synced (a power cut may still lose the new name): Input/output error"* ]]
	r4fsck -n "$T/out/n.img"
	# a folder its file system cannot sync (EINVAL, EBADF from fsync):
	# the image's whole file system synced instead (syncfs of the
	# image); a read-only one (EROFS): nothing to sync. Made, exit 0,
	# nothing said.
	local e
	for e in EINVAL EBADF EROFS; do
		rm -f "$T/out/n.img" "$T/sync.log"
		run env R4_SYNC_FAIL="$d" R4_SYNC_FAIL_ERRNO=$e \
			R4_SYNC_LOG="$T/sync.log" \
			"$top_builddir/tests/crash/bin/r4mkfs" -q "$T/out/n.img" 1M
		echo "$e: $output"
		[ "$status" -eq 0 ]
		[ -z "$output" ]
		r4fsck -n "$T/out/n.img"
		cat "$T/sync.log"
		if [ $e = EROFS ]; then
			[ "$(tail -n 1 "$T/sync.log")" = "fsync $d" ]
		else
			[ "$(tail -n 2 "$T/sync.log")" = "fsync $d
syncfs $d/n.img" ]
		fi
	done
	# the image file's own sync failing: nothing is left
	run env R4_SYNC_FAIL="$d/m.img" "$top_builddir/tests/crash/bin/r4mkfs" \
		-q "$T/out/m.img" 1M
	echo "$output"
	[ "$status" -eq 1 ]
	[ ! -e "$T/out/m.img" ]
}
