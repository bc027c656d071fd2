#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The small truths of issue 13, item 8: what r4fsck, r4debugfs and
# r4pack say and do in the corners.

load helpers

vol() {
	r4mkfs -q "$1" 16M
}

@test "r4fsck -q prints nothing on a clean volume" {
	vol "$T/a.img"
	for m in "" -n -p -y; do
		run r4fsck -q $m "$T/a.img"
		[ "$status" -eq 0 ]
		[ -z "$output" ] || { echo "r4fsck -q $m: $output"; return 1; }
	done
}

@test "r4fsck (default mode) checks a read-only image with nothing to replay" {
	mkdir -p "$T/ro"
	vol "$T/ro/a.img"
	if [ "$(id -u)" -ne 0 ]; then
		chmod 444 "$T/ro/a.img"
		run r4fsck "$T/ro/a.img"
	else
		# root writes through file modes: a read-only bind mount
		command -v unshare >/dev/null || skip "unshare not installed"
		unshare -m true 2>/dev/null || skip "no mount namespace here"
		run unshare -m sh -c 'mount --bind "$1" "$1" &&
			mount -o remount,bind,ro "$1" &&
			! touch "$1/probe" 2>/dev/null && r4fsck "$1/a.img"' \
			sh "$T/ro"
	fi
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"no problems found"* ]]
}

@test "damaged master or format40 super block with a good backup: named, exit 4" {
	vol "$T/a.img"
	cp "$T/a.img" "$T/f.img"
	# master magic (byte 65536), then the format40 block count (block 17)
	printf 'XXXX' | dd of="$T/a.img" bs=1 seek=65536 conv=notrunc 2>/dev/null
	printf 'XXXX' | dd of="$T/f.img" bs=1 seek=$((17 * 4096)) conv=notrunc 2>/dev/null
	for m in -n ""; do
		run r4fsck $m "$T/a.img"
		[ "$status" -eq 4 ]
		[[ "$output" == *"master super block (block 16) is damaged; the backup copy in block "*" is intact"* ]]
		run r4fsck $m "$T/f.img"
		[ "$status" -eq 4 ]
		[[ "$output" == *"format40 super block (block 17) is damaged; the backup copy in block "*" is intact"* ]]
	done
	# nothing was written; -y restores both
	run r4fsck -y "$T/a.img"
	[ "$status" -eq 1 ]
	run r4fsck -y "$T/f.img"
	[ "$status" -eq 1 ]
	r4fsck -n "$T/a.img"
	r4fsck -n "$T/f.img"
}

@test "r4debugfs: print node on a data block says it is not a formatted node; icheck tells metadata from free" {
	mkdir -p "$T/src"
	head -c 20000 /dev/urandom >"$T/src/f"
	r4pack create -q "$T/src" "$T/a.img"
	blk=$(r4debugfs -R 'blocks /f' "$T/a.img" | sed -n 's/.*blocks* \([0-9]*\).*/\1/p' | head -1)
	[ -n "$blk" ]
	run r4debugfs -R "print node $blk" "$T/a.img"
	[ "$status" -eq 1 ]
	[[ "$output" == *"block $blk is not a formatted node"* ]]
	[[ "$output" != *"unsupported"* ]]
	run r4debugfs -R 'icheck 16 4000' "$T/a.img"
	[[ "$output" == *"16	not used by the tree: fixed metadata"* ]]
	[[ "$output" == *"4000	not used by the tree: free"* ]]
}

@test "r4debugfs man page says read-only opens replay the journal in memory" {
	grep -q 'replayed in memory' "$BATS_TEST_DIRNAME/../../man/r4debugfs.8"
}

@test "r4pack: a missing output folder is named, not the temporary file" {
	mkdir -p "$T/src"
	echo x >"$T/src/f"
	run r4pack create "$T/src" "$T/nodir/sub/a.img"
	[ "$status" -ne 0 ]
	[[ "$output" == *"the folder $T/nodir/sub/ does not exist"* ]]
	[[ "$output" != *".r4pack."* ]]
}

@test "r4pack: 'the volume is full' says the size it had and how far it got" {
	mkdir -p "$T/src"
	head -c 3000000 /dev/urandom >"$T/src/big"
	run r4pack create --size 1M "$T/src" "$T/a.img"
	[ "$status" -ne 0 ]
	[[ "$output" == *"the volume is full: its 256 blocks (1024 KiB) hold "*" of 3000000 bytes of file data"* ]]
	tar -C "$T/src" -cf "$T/s.tar" .
	run r4pack create --size 1M "$T/s.tar" "$T/b.img"
	[ "$status" -ne 0 ]
	[[ "$output" == *"the volume is full: its 256 blocks (1024 KiB) are too few"* ]]
	# from a pipe the data waits in the spool: refused at the block that
	# overflows the size, nothing left behind (no image, no spool)
	run bash -c "r4pack create --size 1M - '$T/c.img' <'$T/s.tar'"
	[ "$status" -ne 0 ]
	[[ "$output" == *"the volume is full: its 256 blocks (1024 KiB) are too few"* ]]
	[ ! -e "$T/c.img" ]
	[ -z "$(find "$T" -maxdepth 1 -name '.c.img.*')" ]
}

@test "pax output: hdrcharset=BINARY only for names that are not UTF-8 (C locale)" {
	mkdir -p "$T/src"
	echo a >"$T/src/$(printf 'caf\303\251')"
	echo b >"$T/src/$(printf 'bad\377')"
	r4pack create -q "$T/src" "$T/a.img"
	LC_ALL=C r4pack extract "$T/a.img" "$T/a.tar"
	# one BINARY header, for the bad name
	[ "$(grep -a -c 'hdrcharset=BINARY' "$T/a.tar")" -eq 1 ]
	python3 - "$T/a.tar" <<'EOF'
import sys, tarfile
t = tarfile.open(sys.argv[1], encoding='utf-8', errors='surrogateescape')
for m in t.getmembers():
    if m.pax_headers.get('hdrcharset') == 'BINARY':
        assert m.name.endswith('bad\udcff'), m.name
    elif 'caf' in m.name:
        assert m.name == './caf\u00e9', m.name
EOF
}
