#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# r4fsck -z / --undo (libimage/io/undo.c): an undo file records which
# volume and which state it belongs to (uuid, super blocks, every block
# it restores as the repair left it; a checksum of the header, of each
# record and of the closing record); --undo refuses another volume's
# file, a volume changed since, a damaged, truncated or old-format file
# with one line, exit 8 and nothing changed, and puts a good one back.

load helpers

U1=11111111-2222-3333-4444-555555555555
U2=66666666-7777-8888-9999-aaaaaaaaaaaa

# vol IMAGE UUID: a 16 MiB volume with a few files, its first backup
# copy's label damaged (the repair rewrites the backup through the
# journal: super block, journal blocks and the log).
vol() {
	mkdir -p "$T/src/d"
	for i in 1 2 3; do head -c $((i * 3000)) /dev/urandom >"$T/src/f$i"; done
	echo leaf >"$T/src/d/leaf"
	r4mkfs -q -U "$2" "$1" 16M
	r4pack add -q "$1" "$T/src"
	printf 'two' | dd of="$1" bs=1 seek=$((22 * 4096 + 1 + 36)) \
		conv=notrunc status=none
}

# A damaged volume repaired with -z: $T/v.img (repaired), $T/before.img
# (as it was), $T/u.bin (the undo file), $T/after.img (as repaired).
repaired_z() {
	vol "$T/v.img" $U1
	cp "$T/v.img" "$T/before.img"
	run r4fsck -y -z "$T/u.bin" "$T/v.img"
	echo "$output"
	[ "$status" -eq 1 ]
	! cmp -s "$T/v.img" "$T/before.img" || false
	cp "$T/v.img" "$T/after.img"
}

# refused IMAGE WORDS: --undo of $T/u.bin exits 8 with one line holding
# WORDS, and IMAGE is not changed.
refused() {
	local img=$1 sum
	sum=$(sha256sum <"$img")
	run r4fsck --undo "$T/u.bin" "$img"
	echo "$output"
	[ "$status" -eq 8 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"$2"* ]]
	[ "$(sha256sum <"$img")" = "$sum" ]
}

@test "undo: a good file puts the volume back exactly" {
	repaired_z
	run r4fsck --undo "$T/u.bin" "$T/v.img"
	echo "$output"
	[ "$status" -eq 0 ]
	cmp "$T/v.img" "$T/before.img"
}

@test "undo: refused after r4pack add changed the volume (exit 8, image unchanged)" {
	repaired_z
	mkdir -p "$T/more"
	echo added >"$T/more/new"
	r4pack add -q "$T/v.img" "$T/more"
	refused "$T/v.img" "changed since the repair"
	run r4debugfs -R 'cat /new' "$T/v.img"
	[ "$output" = added ]
}

@test "undo: refused after a change of one block it would restore" {
	repaired_z
	# the journal footer: written by the repair, restored by the undo
	printf 'X' | dd of="$T/v.img" bs=1 seek=$((20 * 4096 + 100)) \
		conv=notrunc status=none
	refused "$T/v.img" "block 20 no longer holds what the repair left"
}

@test "undo: another volume's file is refused" {
	repaired_z
	vol "$T/w.img" $U2
	run r4fsck -y "$T/w.img"
	[ "$status" -eq 1 ]
	refused "$T/w.img" "belongs to another volume"
}

@test "undo: a header claiming 0 bytes never cuts the image" {
	repaired_z
	cp "$T/u.bin" "$T/good.bin"
	# the size field alone: the header checksum catches it
	printf '\0\0\0\0\0\0\0\0' | dd of="$T/u.bin" bs=1 seek=8 conv=notrunc status=none
	refused "$T/v.img" "header is damaged"
	[ "$(stat -c %s "$T/v.img")" -eq $((16 * 1024 * 1024)) ]
	# with its checksum made right: an impossible size
	python3 - "$T/u.bin" <<'PY' || skip "python3 needed to forge the checksum"
import sys, struct
def crc32c(b, crc=0):
    crc ^= 0xffffffff
    for x in b:
        crc ^= x
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82f63b78 if crc & 1 else 0)
    return crc ^ 0xffffffff
p = sys.argv[1]; d = bytearray(open(p, 'rb').read())
d[28:32] = struct.pack('<I', crc32c(bytes(d[:28])))
open(p, 'wb').write(d)
PY
	refused "$T/v.img" "size is impossible"
	[ "$(stat -c %s "$T/v.img")" -eq $((16 * 1024 * 1024)) ]
	cmp "$T/v.img" "$T/after.img"
}

@test "undo: a damaged record, a truncated file, a foreign file are refused" {
	repaired_z
	cp "$T/u.bin" "$T/good.bin"
	# a byte of the first record's old bytes (header 32, record head 16)
	printf 'Z' | dd of="$T/u.bin" bs=1 seek=$((32 + 16 + 200)) conv=notrunc status=none
	refused "$T/v.img" "record 0 is damaged"
	head -c $(($(stat -c %s "$T/good.bin") - 100)) "$T/good.bin" >"$T/u.bin"
	refused "$T/v.img" "incomplete"
	head -c 100 "$T/good.bin" >"$T/u.bin"
	refused "$T/v.img" "incomplete"
	printf 'nonsense' >"$T/u.bin"
	refused "$T/v.img" "not an r4fsck undo file"
	cmp "$T/v.img" "$T/after.img"
	# the good one still works
	cp "$T/good.bin" "$T/u.bin"
	run r4fsck --undo "$T/u.bin" "$T/v.img"
	[ "$status" -eq 0 ]
	cmp "$T/v.img" "$T/before.img"
}

@test "undo: a file of the old format (R4UNDO01) is refused with a clear message" {
	repaired_z
	{ printf 'R4UNDO01'; printf '\0\0\0\1\0\0\0\0'; } >"$T/u.bin"
	refused "$T/v.img" "format 1"
}

@test "undo: -z makes the new undo file and its name durable before the volume changes" {
	vol "$T/v.img" $U1
	mkdir "$T/ud"
	run env R4_SYNC_LOG="$T/sync.log" "$top_builddir/tests/crash/bin/r4fsck" \
		-y -z "$T/ud/u.bin" "$T/v.img"
	[ "$status" -eq 1 ]
	cat "$T/sync.log"
	local d u v dl ul vl
	d=$(realpath "$T/ud") u=$(realpath "$T/ud/u.bin") v=$(realpath "$T/v.img")
	dl=$(grep -n -x -F "fsync $d" "$T/sync.log" | head -n 1 | cut -d: -f1)
	ul=$(grep -n -x -F "fsync $u" "$T/sync.log" | head -n 1 | cut -d: -f1)
	vl=$(grep -n -x -F "pwrite $v" "$T/sync.log" | head -n 1 | cut -d: -f1)
	[ -n "$dl" ]
	[ -n "$ul" ]
	[ -n "$vl" ]
	[ "$ul" -lt "$vl" ]
	[ "$dl" -lt "$vl" ]
}

@test "undo: -z cut at every write: each unit the cut left changed is in the undo file with its old bytes" {
	vol "$T/v.img" $U1
	cp "$T/v.img" "$T/before.img"
	R4_FAULT=count R4_FAULT_REPORT="$T/rep" \
		"$top_builddir/tests/crash/bin/r4fsck" -y -z "$T/u.bin" "$T/v.img" || true
	local W k
	W=$(awk -F'[= ]' '$1 == "writes" { s += $2 } END { print s + 0 }' "$T/rep")
	[ "$W" -ge 2 ]
	for ((k = 1; k <= W; k++)); do
		cp "$T/before.img" "$T/v.img"
		rm -f "$T/u.bin"
		R4_FAULT=cut-after=$k "$top_builddir/tests/crash/bin/r4fsck" \
			-y -z "$T/u.bin" "$T/v.img" >/dev/null 2>&1 || true
		python3 - "$T/u.bin" "$T/before.img" "$T/v.img" <<'PY' ||
import struct, sys
u = open(sys.argv[1], 'rb').read()
old = open(sys.argv[2], 'rb').read()
new = open(sys.argv[3], 'rb').read()
assert u[:8] == b'R4UNDO02', 'no header'
saved, at = {}, 32
while at + 16 <= len(u):
    off, n = struct.unpack_from('<QI', u, at)
    saved[off] = u[at + 16:at + 16 + n]
    at += 16 + n
assert at == len(u), 'a closing record or a cut record: the power was off'
for off in range(0, len(new), 4096):
    if new[off:off + 4096] != old[off:off + 4096]:
        assert off in saved, 'unit at %d changed, not in the undo file' % off
for off, b in saved.items():
    assert b == old[off:off + len(b)], 'unit at %d: not its old bytes' % off
PY
		{ echo "cut-after=$k"; false; }
	done
}

@test "undo: -z never writes the image itself, nor a link to it" {
	vol "$T/v.img" $U1
	cp "$T/v.img" "$T/before.img"
	run r4fsck -y -z "$T/v.img" "$T/v.img"
	echo "$output"
	[ "$status" -eq 8 ]
	cmp "$T/v.img" "$T/before.img"
	ln -s v.img "$T/link"
	run r4fsck -y -z "$T/link" "$T/v.img"
	[ "$status" -eq 8 ]
	cmp "$T/v.img" "$T/before.img"
}

# problems IMAGE: the problems r4fsck -n finds, without the summary and
# the note of a transaction still to replay.
problems() {
	r4fsck -n "$1" 2>&1 | grep '^block ' | grep -v 'committed transaction' || true
}

# side IMAGE: "repaired" when every block the repair changed (but the
# journal header and footer) holds the repaired bytes, "undone" when
# every one holds the old bytes, else "mixed: ...".
side() {
	local b nr=0 nu=0 n=0
	for b in $D; do
		n=$((n + 1))
		cmp -s -n 4096 -i $((b * 4096)) "$1" "$T/after.img" &&
			nr=$((nr + 1))
		cmp -s -n 4096 -i $((b * 4096)) "$1" "$T/before.img" &&
			nu=$((nu + 1))
	done
	if [ "$nr" -eq "$n" ]; then echo repaired
	elif [ "$nu" -eq "$n" ]; then echo undone
	else echo "mixed: $nr of $n blocks repaired, $nu undone"
	fi
}

@test "undo: cut at every write of --undo: repaired or undone at each cut, a replay and a rerun finish" {
	repaired_z
	local k W s
	cp "$T/u.bin" "$T/good.bin"
	R4_FAULT=count R4_FAULT_REPORT="$T/rep" \
		"$top_builddir/tests/crash/bin/r4fsck" --undo "$T/u.bin" "$T/v.img"
	W=$(sed -n 's/^writes=\([0-9]*\) .*/\1/p' "$T/rep" | tail -n 1)
	[ -n "$W" ]
	[ "$W" -ge 2 ]
	cmp "$T/v.img" "$T/before.img"
	D=$(cmp -l "$T/before.img" "$T/after.img" |
		awk '{ b = int(($1 - 1) / 4096); if (b != 19 && b != 20 && !s[b]++) print b }')
	[ -n "$D" ]
	problems "$T/before.img" >"$T/p.undone"
	[ -s "$T/p.undone" ]
	for ((k = 1; k <= W; k++)); do
		cp "$T/after.img" "$T/v.img"
		cp "$T/good.bin" "$T/u.bin"
		R4_FAULT=cut-after=$k "$top_builddir/tests/crash/bin/r4fsck" \
			--undo "$T/u.bin" "$T/v.img" >/dev/null 2>&1 || true
		# -n: the problems of the repaired volume (none) or of the
		# undone one, read through the journal
		problems "$T/v.img" >"$T/p.cut"
		[ ! -s "$T/p.cut" ] || cmp -s "$T/p.cut" "$T/p.undone" ||
			{ echo "cut-after=$k: -n finds:"; cat "$T/p.cut"; false; }
		# replayed (r4fsck without a mode: no fix), repaired or undone
		# block for block
		cp "$T/v.img" "$T/p.img"
		run r4fsck "$T/p.img"
		[ "$status" -le 4 ] || { echo "cut-after=$k: replay: $output"; false; }
		# (the problems of that state were those -n found above:
		# tests/crash/undo.sh checks them again after the replay)
		s=$(side "$T/p.img")
		case $s in
		repaired|undone) ;;
		*) echo "cut-after=$k: $s"; false ;;
		esac
		# a rerun of --undo finishes the job, byte for byte
		run r4fsck --undo "$T/u.bin" "$T/v.img"
		[ "$status" -eq 0 ] || { echo "cut-after=$k: $output"; false; }
		cmp "$T/v.img" "$T/before.img" || { echo "cut-after=$k"; false; }
	done
}

@test "undo: a volume that had a transaction to replay before the repair: put back block by block, says so" {
	local w
	mkdir -p "$T/more"
	for i in 1 2 3 4 5; do echo "$i" >"$T/more/m$i"; done
	r4mkfs -q -U $U1 "$T/c.img" 16M
	cp "$T/c.img" "$T/v.img"
	R4_FAULT=count R4_FAULT_REPORT="$T/rep" \
		"$top_builddir/tests/crash/bin/r4pack" add -q "$T/c.img" "$T/more"
	w=$(sed -n 's/^writes=\([0-9]*\) .*/\1/p' "$T/rep" | tail -n 1)
	# cut past the commit point: a transaction waits for replay
	R4_FAULT=cut-after=$((w - 2)) "$top_builddir/tests/crash/bin/r4pack" \
		add -q "$T/v.img" "$T/more" || true
	r4debugfs -R 'print journal' "$T/v.img" | grep -q '^transactions to replay'
	cp "$T/v.img" "$T/before.img"
	run r4fsck -y -z "$T/u.bin" "$T/v.img"
	[ "$status" -eq 1 ]
	run r4fsck --undo "$T/u.bin" "$T/v.img"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"committed transaction not yet written home: so not as one step through the journal"* ]]
	cmp "$T/v.img" "$T/before.img"
}
