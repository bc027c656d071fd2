#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Regenerate the fuzz seed corpus: small volumes made by r4mkfs and, with
# files in them, by the oracle helper r4ref (libreiser4).
#   fuzz/make-corpus.sh BUILD_DIR
set -eu
b=${1:?build dir}
out=$(dirname "$0")/corpus
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
mkdir -p "$out" "$src/d/sub"
echo hello > "$src/small"
head -c 5000 /dev/zero | tr '\0' x > "$src/d/five-k"
ln -s ../small "$src/d/link"
ln "$src/small" "$src/d/hard"
echo a-name > "$src/d/sub/a-file-name-longer-than-23-bytes"
mkfifo "$src/d/fifo"
export SOURCE_DATE_EPOCH=1700000000
U=01234567-89ab-cdef-0123-456789abcdef
rm -f "$out"/*
"$b/cmd/r4mkfs" -q -U $U "$out/empty-128k.img" 128K
"$b/cmd/r4mkfs" -q -s -U $U -o node=node41 "$out/node41-lf.img" 128K
"$b/cmd/r4mkfs" -q -s -U $U -o key=key_short "$out/short-lf.img" 128K
truncate -s 256K "$out/files-r5.img" "$out/files-tea.img"
"$b/tests/helpers/r4ref" mkfs -o formatting=tails -U $U -I 1 \
	"$out/files-r5.img" "$src" >/dev/null
"$b/tests/helpers/r4ref" mkfs -o formatting=tails -o hash=tea_hash \
	-o fibration=lexic_fibre -U $U -I 2 "$out/files-tea.img" "$src" >/dev/null
# A bitmap that calls the root node free (the write path must not
# believe it): files-r5.img with the root's bit cleared in bitmap block
# 18, the checksum left stale or made to match.
root=$("$b/cmd/r4debugfs" -R 'print super' "$out/files-r5.img" |
	sed -n 's/^ *root block: *//p')
for m in stale fixed; do
	cp "$out/files-r5.img" "$out/badbitmap-$m.img"
	python3 - "$out/badbitmap-$m.img" "$root" $m <<'PY'
import sys, zlib, struct
path, blk, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(path, 'r+b') as f:
    f.seek(18 * 4096)
    b = bytearray(f.read(4096))
    b[4 + blk // 8] &= ~(1 << (blk % 8)) & 0xff
    if mode == 'fixed':
        b[:4] = struct.pack('<I', zlib.adler32(bytes(b[4:])))
    f.seek(18 * 4096)
    f.write(b)
PY
done
# Extent files, and the same volume with blocks claimed twice (b's
# extent unit moved onto a's last blocks): the repair's copy pass
# (libimage/repair/twice.c).
mkdir -p "$src/x"
seq 1 4000 >"$src/x/a"
seq 1 6000 | head -c 30000 >"$src/x/b"
echo hi >"$src/x/c"
"$b/cmd/r4pack" create -q -s 256K -U $U "$src/x" "$out/extents-256k.img"
cp "$out/extents-256k.img" "$out/shared-256k.img"
"$b/cmd/r4debugfs" -R 'print tree' "$out/extents-256k.img" | awk '
	/^node [0-9]*: node40, level 2/ { twig = $2 + 0 }
	/^#[0-9]* extent40 .*:62000000000000:/ { print twig * 4096 + $(NF - 4) + 0; exit }' >"$src/at"
python3 - "$out/shared-256k.img" "$(cat "$src/at")" <<'PY'
import sys, struct
path, at = sys.argv[1], int(sys.argv[2])
with open(path, 'r+b') as f:
    f.seek(at)
    start = struct.unpack('<Q', f.read(8))[0]
    f.seek(at)
    f.write(struct.pack('<Q', start - 3))
PY
ls -la "$out"
# For the lsdel scanner: files removed, their old nodes and data in free
# blocks.
"$b/cmd/r4mkfs" -q -U $U "$out/deleted-256k.img" 256K
"$b/cmd/r4debugfs" -w -R 'mkdir /d' -R "write $src/small /d/small" \
	-R "write $src/d/five-k /five-k" -R "write $src/d/five-k /d/keep" \
	"$out/deleted-256k.img"
"$b/cmd/r4debugfs" -w -R 'rm /d/small' -R 'rm /five-k' "$out/deleted-256k.img"
