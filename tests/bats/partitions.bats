#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Partitioned disks: GPT and MBR disk images made by sfdisk (util-linux)
# with two Reiser4 partitions (r4mkfs --partition, r4pack create
# --partition) and one that is not; r4debugfs --partitions (text and
# --json) against sfdisk's own listing; every byte outside the built
# partition unchanged; extract, r4fsck, r4debugfs and fsck.reiser4 (on
# the partition cut out with dd) see the files exactly; --offset is
# --partition; r4resize stops at the partition's end; hostile tables
# (an entry past the disk's end, overlapping entries, a bad GPT CRC, a
# huge entry count): one line and the documented exit code each.

load helpers


need_sfdisk() {
	command -v sfdisk >/dev/null 2>&1 || skip "sfdisk (util-linux fdisk) not installed"
}

# mkdisk gpt|dos: $T/disk (16 MiB): partition 1 (4 MiB) made by
# r4mkfs, 2 (6 MiB) random bytes for r4pack create, and a swap
# partition (2 MiB) of random bytes (GPT 3; DOS logical 5 in extended
# 3). Sets OTHER to the number of that one, and $T/parts to sfdisk's
# "NUMBER START SECTORS" lines.
mkdisk() {
	truncate -s 16M "$T/disk"
	if [ "$1" = gpt ]; then
		printf 'label: gpt\n,4M,L\n,6M,L\n,2M,S\n' | sfdisk -q "$T/disk"
		OTHER=3
	else
		printf 'label: dos\n,4M,83\n,6M,83\n,,E\n,2M,82\n' | sfdisk -q "$T/disk"
		OTHER=5
	fi
	sfdisk -J "$T/disk" | python3 -c '
import json, re, sys
for p in json.load(sys.stdin)["partitiontable"]["partitions"]:
    print(re.sub(".*disk", "", p["node"]), p["start"], p["size"])' >"$T/parts"
	fill 2
	fill "$OTHER"
	r4mkfs -q --partition=1 "$T/disk"
	mkdir -p "$T/src/d"
	echo hello >"$T/src/a"
	head -c 200000 /dev/urandom >"$T/src/d/big"
	ln -s a "$T/src/l"
}

# start and size (sectors) of partition $1, as sfdisk says
part() {
	awk -v n="$1" '$1 == n { print $2, $3 }' "$T/parts"
}

fill() {
	local s n
	read -r s n < <(part "$1")
	head -c $((n * 512)) /dev/urandom |
		dd of="$T/disk" bs=512 seek="$s" conv=notrunc status=none
}

# sha256 of the disk with partition $1 left out
outside() {
	local s n
	read -r s n < <(part "$1")
	{ head -c $((s * 512)) "$T/disk"; tail -c +$(((s + n) * 512 + 1)) "$T/disk"; } |
		sha256sum | cut -d' ' -f1
}

built_and_read() {
	local before s n
	need_sfdisk
	mkdisk "$1"
	before=$(outside 2)
	full=$(sha256sum <"$T/disk")
	# random bytes are not a volume: refused without -f, nothing written
	run r4pack create -q --partition=2 "$T/src" "$T/disk"
	[ "$status" -eq 1 ]
	[[ "$output" == *"the partition holds data and no Reiser4 volume; give -f"* ]]
	[ "$(sha256sum <"$T/disk")" = "$full" ]
	r4pack create -q -f --partition=2 "$T/src" "$T/disk"
	[ "$(outside 2)" = "$before" ]
	# a partition never used (zeros, as sfdisk leaves it): no -f needed
	truncate -s 16M "$T/fresh"
	printf 'label: gpt\n,4M,L\n,6M,L\n' | sfdisk -q "$T/fresh"
	r4pack create -q --partition=2 "$T/src" "$T/fresh"
	r4fsck -n -q --partition=2 "$T/fresh"

	# the listing: sfdisk's numbers, starts and lengths; Reiser4 on 1, 2
	run r4debugfs --partitions "$T/disk"
	echo "$output"
	[ "$status" -eq 0 ]
	for p in 1 2 "$OTHER"; do
		read -r s n < <(part "$p")
		grep -Eq "^[0-9]{3}: +$p +0*$s +0*$((s + n - 1)) +0*$n " <<<"$output"
	done
	[ "$(grep -c ' reiser4$' <<<"$output")" -eq 2 ]
	grep -Eq "^[0-9]{3}: +$OTHER .* swap" <<<"$output"
	! grep -Eq "^[0-9]{3}: +$OTHER .*reiser4" <<<"$output" || false
	r4debugfs --partitions --json "$T/disk" >"$T/json"
	python3 - "$T/json" "$OTHER" "$1" <<'EOF'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, lines
o = json.loads(lines[0])
assert o["schema"] == 2 and o["program"] == "r4debugfs", o
assert o["kind"] == "partitions" and o["table"] == sys.argv[3], o
parts = {p["partition"]: p for p in o["partitions"]}
assert parts[1]["reiser4"] and parts[2]["reiser4"], parts
assert not parts[int(sys.argv[2])]["reiser4"]
assert parts[2]["offset"] == parts[2]["start"] * 512
assert parts[2]["size"] == parts[2]["sectors"] * 512
EOF

	# the files exactly: extract, r4debugfs, r4fsck
	r4pack extract --partition=2 "$T/disk" "$T/t.tar"
	mkdir "$T/out"
	tar -xf "$T/t.tar" -C "$T/out"
	diff -r --no-dereference "$T/src" "$T/out"
	r4debugfs --partition=2 -R 'cat /d/big' "$T/disk" | cmp - "$T/src/d/big"
	run r4fsck -n --partition=2 "$T/disk"
	[ "$status" -eq 0 ]
	[[ "$output" == *"no problems found"* ]]
	run r4fsck -n --partition=1 "$T/disk"
	[ "$status" -eq 0 ]

	# --offset=BYTES is --partition=N
	read -r s n < <(part 2)
	r4pack extract --offset=$((s * 512)) "$T/disk" "$T/o.tar"
	cmp "$T/t.tar" "$T/o.tar"

	# the oracle on the partition cut out
	dd if="$T/disk" of="$T/p2.img" bs=512 skip="$s" count="$n" status=none
	r4pack extract "$T/p2.img" "$T/c.tar"
	cmp "$T/t.tar" "$T/c.tar"
	if command -v fsck.reiser4 >/dev/null 2>&1; then
		oracle_fsck "$T/p2.img"
	fi
	[ "$(outside 2)" = "$before" ]
}

@test "partitions: GPT disk by sfdisk: listing, create into partition 2 touches nothing else, read back exactly" {
	built_and_read gpt
}

@test "partitions: MBR disk by sfdisk (logical 5): listing, create into partition 2 touches nothing else, read back exactly" {
	built_and_read dos
}

@test "partitions: r4resize and r4pack add stay inside the partition; the extended one and a missing one are refused" {
	need_sfdisk
	mkdisk dos
	before=$(outside 1)
	run r4resize --partition=1 "$T/disk" 9M
	echo "$output"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"the window (the partition) holds 1024 blocks, fewer than the 2304 asked"* ]]
	r4resize -q --partition=1 "$T/disk" 2M
	r4resize -q --partition=1 "$T/disk"
	r4pack add -q --partition=1 "$T/disk" "$T/src"
	# --grow stops at the partition's end: nothing added, one reason
	mkdir "$T/big"
	head -c 6000000 /dev/urandom >"$T/big/f"
	run r4pack add --partition=1 --grow=100M "$T/disk" "$T/big"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"the window (the partition) holds 1024 blocks"* ]]
	[[ "$output" == *"nothing was added"* ]]
	[ "$(outside 1)" = "$before" ]
	run r4fsck -n --partition=1 "$T/disk"
	[ "$status" -eq 0 ]
	r4debugfs --partition=1 -R 'cat /d/big' "$T/disk" | cmp - "$T/src/d/big"
	run r4fsck -n --partition=3 "$T/disk"
	[ "$status" -eq 8 ]
	[[ "$output" == *"partition 3 is the extended partition"* ]]
	run r4debugfs --partition=9 -R 'ls /' "$T/disk"
	[ "$status" -eq 8 ]
	[ "$output" = "r4debugfs: $T/disk: no partition 9 in its dos partition table" ]
	run r4mkfs --partition=2 --offset=1M "$T/disk"
	[ "$status" -eq 2 ]
	run r4mkfs --partition=0 "$T/disk"
	[ "$status" -eq 2 ]
	[ "$(outside 1)" = "$before" ]
}

@test "partitions: r4mount --partition=2 shows the files of that partition exactly" {
	need_sfdisk
	command -v r4mount >/dev/null 2>&1 || skip "r4mount not built (configure --disable-mount)"
	[ -c /dev/fuse ] || skip "no /dev/fuse on this machine"
	{ exec 9<>/dev/fuse; } 2>/dev/null || skip "/dev/fuse is not usable by $(id -un)"
	exec 9>&-
	command -v fusermount3 >/dev/null 2>&1 || skip "fusermount3 (Debian fuse3) not installed"
	mkdisk gpt
	r4pack create -q -f --partition=2 "$T/src" "$T/disk"
	MNT=$T/mnt
	mkdir -p "$MNT"
	r4mount --partition=2 "$T/disk" "$MNT"
	mountpoint -q "$MNT"
	diff -r --no-dereference "$T/src" "$MNT"
}

# hostile DISK WHAT: one line naming WHAT from --partitions (8) and from
# r4fsck --partition (8), r4pack extract --partition (1)
hostile() {
	run r4debugfs --partitions "$1"
	echo "$output"
	[ "$status" -eq 8 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"$2"* ]]
	run r4fsck -n --partition=1 "$1"
	[ "$status" -eq 8 ]
	[ "${#lines[@]}" -eq 1 ]
	run r4pack extract --partition=1 "$1" "$T/x.tar"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[ ! -e "$T/x.tar" ]
}

@test "partitions: hostile tables (past the end, overlapping, bad CRC, huge count): one line, exit 8" {
	need_sfdisk
	truncate -s 8M "$T/m"
	printf 'label: dos\n,2M,83\n,2M,83\n' | sfdisk -q "$T/m"
	truncate -s 3M "$T/m"
	hostile "$T/m" "ends past the end of the disk"

	truncate -s 8M "$T/o"
	printf 'label: dos\n,2M,83\n,2M,83\n' | sfdisk -q "$T/o"
	# partition 2 starts inside partition 1
	printf '\x00\x10\x00\x00' | dd of="$T/o" bs=1 seek=$((446 + 16 + 8)) conv=notrunc status=none
	hostile "$T/o" "overlap"

	truncate -s 8M "$T/g"
	printf 'label: gpt\n,2M,L\n,2M,L\n' | sfdisk -q "$T/g"
	cp "$T/g" "$T/c"
	# both copies damaged (the backup alone is read, in the next test)
	printf '\x01' | dd of="$T/c" bs=1 seek=$((512 + 40)) conv=notrunc status=none
	printf '\x01' | dd of="$T/c" bs=1 seek=$((8 * 1048576 - 512 + 40)) conv=notrunc status=none
	hostile "$T/c" "GPT header (sector 1): bad CRC"
	[[ "$output" == *"the backup: GPT header (sector 16383): bad CRC"* ]]

	cp "$T/g" "$T/h"
	python3 - "$T/h" <<'EOF'
import struct, sys, zlib
f = open(sys.argv[1], "r+b")
f.seek(512)
h = bytearray(f.read(92))
h[80:84] = struct.pack("<I", 0xFFFFFFFF)
h[16:20] = b"\0\0\0\0"
h[16:20] = struct.pack("<I", zlib.crc32(bytes(h)) & 0xFFFFFFFF)
f.seek(512)
f.write(h)
EOF
	# and no backup (a disk image cut after its table was made)
	dd if=/dev/zero of="$T/h" bs=512 seek=16383 count=1 conv=notrunc status=none
	hostile "$T/h" "GPT header (sector 1) counts 4294967295 entries (at most 4096)"
	# no table at all
	truncate -s 1M "$T/n"
	hostile "$T/n" "no partition table"
}

@test "partitions: a damaged primary GPT is read from its backup, with a warning; both damaged: exit 8" {
	need_sfdisk
	mkdisk gpt
	r4pack create -q -f --partition=2 "$T/src" "$T/disk"
	r4pack extract --partition=2 "$T/disk" "$T/before.tar"
	cp "$T/disk" "$T/good"
	# the primary header wiped, then its entry array damaged
	for what in header array; do
		cp "$T/good" "$T/disk"
		if [ "$what" = header ]; then
			dd if=/dev/zero of="$T/disk" bs=512 seek=1 count=1 conv=notrunc status=none
			why="sector 1 holds no GPT header"
		else
			printf '\x01' | dd of="$T/disk" bs=1 seek=$((1024 + 32)) conv=notrunc status=none
			why="GPT entry array (sector 2): bad CRC"
		fi
		run r4debugfs --partitions "$T/disk"
		echo "$output"
		[ "$status" -eq 0 ]
		[[ "$output" == *"warning"*"$why"*"the backup GPT (sector 32767) was read instead"* ]]
		grep -Eq "^001: +2 .* reiser4$" <<<"$output"
		r4debugfs --partitions --json "$T/disk" 2>/dev/null | python3 -c '
import json, sys
o = json.loads(sys.stdin.read())
assert "backup GPT" in o["warning"], o
assert [p["partition"] for p in o["partitions"]] == [1, 2, 3], o'
		r4pack extract --partition=2 "$T/disk" "$T/after.tar"
		cmp "$T/before.tar" "$T/after.tar"
		r4fsck -n -q --partition=2 "$T/disk"
	done
	# both copies unusable: refused, both named
	dd if=/dev/zero of="$T/disk" bs=512 seek=32767 count=1 conv=notrunc status=none
	run r4fsck -n --partition=2 "$T/disk"
	echo "$output"
	[ "$status" -eq 8 ]
	[[ "$output" == *"$why"*"; the backup: sector 32767 holds no GPT header"* ]]
}

@test "partitions: a GPT disk of 4096-byte sectors (sfdisk on a 4K loop device): found, built into, read back" {
	need_sfdisk
	command -v losetup >/dev/null || skip "needs losetup"
	mkdir -p "$T/src"
	echo hello >"$T/src/a"
	head -c 300000 /dev/urandom >"$T/src/b"
	truncate -s 16M "$T/d4"
	dev=$(losetup -f --show -b 4096 "$T/d4" 2>"$T/losetup.err") ||
		skip "cannot attach a loop device here: $(head -n 1 "$T/losetup.err")"
	printf 'label: gpt\n,4M,L\n,6M,L\n' | sfdisk -q "$dev" 2>/dev/null || true
	sfdisk -J "$dev" >"$T/sf.json"
	run r4debugfs --partitions "$dev"
	losetup -d "$dev"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"sectors of 4096 bytes"* ]]
	read -r s n < <(python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))["partitiontable"]
assert p["sectorsize"] == 4096, p
q = p["partitions"][1]
print(q["start"], q["size"])' "$T/sf.json")
	grep -Eq "^001: +2 +0*$s +0*$((s + n - 1)) +0*$n " <<<"$output"
	# the image file alone: the 4096-byte sectors are found from the GPT
	r4pack create -q --partition=2 "$T/src" "$T/d4"
	r4debugfs --partitions "$T/d4" | grep -Eq "^001: +2 +0*$s .* reiser4$"
	dd if="$T/d4" of="$T/p2.img" bs=4096 skip="$s" count="$n" status=none
	r4pack extract "$T/p2.img" "$T/c.tar"
	r4pack extract --partition=2 "$T/d4" "$T/t.tar"
	cmp "$T/t.tar" "$T/c.tar"
	r4fsck -n -q --partition=2 "$T/d4"
	r4fsck -n -q "$T/p2.img"
}

@test "partitions: layers (--layers=oci) into a partition: built in a file first, then placed; a failing layer leaves the disk as it was" {
	need_sfdisk
	mkdisk gpt
	mkdir -p "$T/base/etc" "$T/l1/etc"
	echo base >"$T/base/etc/os-release"
	echo conf >"$T/base/etc/app.conf"
	touch "$T/l1/etc/.wh.app.conf"
	echo tool >"$T/l1/etc/tool"
	head -c 1000000 /dev/urandom >"$T/l1/blob"
	# a layer that fails part way: an archive cut short
	tar -C "$T/l1" -cf "$T/l1.tar" .
	head -c 20000 "$T/l1.tar" >"$T/cut.tar"
	full=$(sha256sum <"$T/disk")
	run r4pack create -f --layers=oci --partition=2 "$T/base" "$T/cut.tar" "$T/disk"
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$(sha256sum <"$T/disk")" = "$full" ]
	! ls "$T"/disk.layers.* 2>/dev/null || false
	before=$(outside 2)
	r4pack create -q -f --layers=oci --partition=2 "$T/base" "$T/l1" "$T/disk"
	[ "$(outside 2)" = "$before" ]
	! ls "$T"/disk.layers.* 2>/dev/null || false
	r4fsck -n -q --partition=2 "$T/disk"
	[ "$(r4debugfs --partition=2 -R 'ls /etc' "$T/disk" | sort | tr '\n' ' ')" = ". .. os-release tool " ]
	r4debugfs --partition=2 -R 'cat /blob' "$T/disk" | cmp - "$T/l1/blob"
	# sized to the partition, as a one-source create is
	read -r s n < <(part 2)
	r4debugfs --partition=2 -R 'print super' "$T/disk" | grep -Eq "^ +blocks: +$((n * 512 / 4096))$"
	dd if="$T/disk" of="$T/p2.img" bs=512 skip="$s" count="$n" status=none
	if command -v fsck.reiser4 >/dev/null 2>&1; then
		oracle_fsck "$T/p2.img"
	fi
}
