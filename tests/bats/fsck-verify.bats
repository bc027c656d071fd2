#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# r4pack --manifest=FILE and r4fsck --verify=FILE (cmd/common/manifest.c,
# cmd/fsck/verify.c): Reiser4 keeps no checksum of file data, so a data
# block zeroed leaves r4fsck -n clean; a manifest made with the image
# finds it.

load helpers

src() {
	mkdir -p "$T/s/d" "$T/s/e"
	local i
	for i in $(seq 1 20); do head -c $((i * 5000)) /dev/urandom >"$T/s/d/f$i"; done
	printf 'x' >"$T/s/e/back\\slash"
	printf 'y' >"$T/s/e/new
line"
	echo small >"$T/s/small"
}

@test "create --manifest: sha256sum's format, checked by sha256sum -c on the source; --verify clean (0)" {
	src
	r4pack create -q --manifest="$T/m.txt" "$T/s" "$T/v.img"
	[ "$(wc -l <"$T/m.txt")" -eq 23 ]
	(cd "$T/s" && sha256sum -c --quiet "$T/m.txt")
	run r4fsck --verify="$T/m.txt" "$T/v.img"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"23 files compared"*"0 differ, 0 missing, 0 new, 0 unreadable"* ]]
	# compressed files are read decompressed
	r4pack create -q --compress=lzo1 --manifest="$T/c.txt" "$T/s" "$T/c.img"
	cmp "$T/m.txt" "$T/c.txt"
	run r4fsck --verify="$T/m.txt" "$T/c.img"
	[ "$status" -eq 0 ]
}

@test "--verify finds a zeroed data block that r4fsck -n calls clean (exit 64), and missing and new files" {
	src
	r4pack create -q --manifest="$T/m.txt" "$T/s" "$T/v.img"
	local blk
	blk=$(r4debugfs -R 'print file /d/f15' "$T/v.img" | sed -n 's/.* start \([0-9]*\) width.*/\1/p' | head -n 1)
	[ -n "$blk" ]
	dd if=/dev/zero of="$T/v.img" bs=4096 seek="$blk" count=1 conv=notrunc status=none
	run r4fsck -n "$T/v.img"
	[ "$status" -eq 0 ]
	run r4fsck --verify="$T/m.txt" "$T/v.img"
	echo "$output"
	[ "$status" -eq 64 ]
	[[ "$output" == *"v.img: /d/f15: contents differ"* ]]
	[[ "$output" == *"1 differ, 0 missing, 0 new"* ]]
	r4debugfs -w -R 'rm /small' -R "write $T/s/d/f1 /extra" "$T/v.img"
	run r4fsck --json --verify="$T/m.txt" "$T/v.img"
	echo "$output"
	[ "$status" -eq 64 ]
	python3 -c '
import json, sys
ls = [json.loads(l) for l in sys.stdin.read().splitlines()]
assert len(ls) == 1, ls
o = ls[0]
kinds = sorted((f["status"], f["path"]) for f in o["findings"])
assert kinds == [("contents differ", "/d/f15"), ("missing", "/small"), ("new", "/extra")], kinds
assert o["differ"] == 1 and o["missing"] == 1 and o["new"] == 1 and o["clean"] is False
assert o["schema"] == 2 and o["program"] == "r4fsck" and o["kind"] == "verify"
' <<<"$output"
}

@test "add --manifest covers the whole volume after the add; a bad manifest line or file is an operational error (8)" {
	src
	r4pack create -q "$T/s" "$T/v.img"
	mkdir -p "$T/more"
	echo more >"$T/more/m"
	r4pack add -q --manifest="$T/m.txt" "$T/v.img" "$T/more"
	grep -q '  \./m$' "$T/m.txt"
	grep -q '  \./d/f3$' "$T/m.txt"
	run r4fsck --verify="$T/m.txt" "$T/v.img"
	[ "$status" -eq 0 ]
	printf 'nonsense\n' >"$T/bad.txt"
	run r4fsck --verify="$T/bad.txt" "$T/v.img"
	[ "$status" -eq 8 ]
	[[ "$output" == *"bad.txt: line 1: not a sha256sum line"* ]]
	run r4fsck --verify="$T/none.txt" "$T/v.img"
	[ "$status" -eq 8 ]
	run r4fsck -y --verify="$T/m.txt" "$T/v.img"
	[ "$status" -eq 16 ]
	# the manifest is never written over the image
	run r4pack add -q --manifest="$T/v.img" "$T/v.img" "$T/more"
	[ "$status" -eq 1 ]
	r4fsck -n "$T/v.img"
}
