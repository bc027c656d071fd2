#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Compressed images: r4pack create with each compression plugin
# (--compress=lzo1|gzip1|zstd1, compressMode conv, 64K clusters) against
# the uncompressed r4pack image and against mksquashfs and mkfs.erofs on
# the same source tree, in the same run: image size (ratio to the file
# data and to the reg40 image), build time and CPU time (user + sys of
# every thread; medians of RUNS, ratios to the reg40 build) and the
# issue's target: compressed builds within 1.5 x the reg40 wall time.
# Wall times mean something only on an otherwise idle machine.
#
#   bench/compress.sh [BUILDDIR] [SOURCE] [RUNS]
#
# SOURCE: a directory, or a tarball (.tar, .tar.xz, ...; default Debian's
# linux-source-6.1, /usr/src/linux-source-6.1.tar.xz). $BENCH_SUBDIR picks
# a subfolder of it (e.g. linux-source-6.1/drivers) to keep runs short.
# Without a source, a generated text corpus is used. Work files go to
# $BENCH_TMP (default /dev/shm, so disk speed does not count). r4pack
# images are made with --free 0 (the smallest size that holds the tree).
# Needs: mksquashfs (squashfs-tools), mkfs.erofs (erofs-utils); either
# may be missing (its rows are left out).
set -euo pipefail

BUILD=${1:-.}
SRC=${2:-/usr/src/linux-source-6.1.tar.xz}
RUNS=${3:-3}
R4PACK=$BUILD/cmd/r4pack
[ -x "$R4PACK" ] || { echo "no $R4PACK (give the build folder)" >&2; exit 2; }

TMP=$(mktemp -d "${BENCH_TMP:-/dev/shm}/r4bench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
TREE=$TMP/tree
mkdir "$TREE"

if [ -d "$SRC" ]; then
	cp -a "$SRC/." "$TREE/"
elif [ -r "$SRC" ]; then
	echo "unpacking $SRC ..."
	tar -C "$TREE" -xf "$SRC"
else
	echo "no $SRC: a generated text corpus instead" \
	     "(apt-get install linux-source-6.1 for the kernel source)"
	python3 - "$TREE" <<'PY'
import os, random, sys
root = sys.argv[1]
random.seed(14)
words = [w.strip() for w in open("/usr/share/dict/words")] \
    if os.path.exists("/usr/share/dict/words") else \
    ["static", "int", "return", "struct", "void", "const", "unsigned",
     "if", "else", "for", "while", "err", "buf", "len", "size", "node",
     "key", "item", "cluster", "compress", "block", "tree", "leaf"]
for d in range(40):
    for f in range(150):
        n = random.choice([300, 2000, 6000, 20000, 90000])
        text = []
        while sum(map(len, text)) < n:
            text.append(" ".join(random.choice(words)
                                 for _ in range(random.randint(3, 12))) +
                        (";\n" if random.random() < .7 else " {\n"))
        os.makedirs(os.path.join(root, "d%02d" % d), exist_ok=True)
        with open(os.path.join(root, "d%02d" % d, "f%03d.c" % f), "w") as h:
            h.write("".join(text)[:n])
PY
fi
if [ -n "${BENCH_SUBDIR:-}" ]; then
	mv "$TREE/$BENCH_SUBDIR" "$TMP/sub"
	rm -rf "$TREE"
	mv "$TMP/sub" "$TREE"
fi
files=$(find "$TREE" -type f | wc -l)
bytes=$(find "$TREE" -type f -printf '%s\n' | awk '{s+=$1} END {print s+0}')
echo "tree: $files files, $bytes bytes of file data; $RUNS runs each;" \
     "$(nproc) CPUs"

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (GNU time)" >&2; exit 2; }

# row NAME IMAGE CMD...: build RUNS times, keep the median wall time,
# the median CPU time (user + sys, every thread) and the size.
declare -A T C S
names=()
row() {
	local name=$1 img=$2 w u s; shift 2
	: >"$TMP/t.$name"
	: >"$TMP/c.$name"
	for _ in $(seq "$RUNS"); do
		rm -f "$img"
		sync
		/usr/bin/time -o "$TMP/time" -f '%e %U %S' "$@" >/dev/null \
			2>"$TMP/err" || { echo "$name failed:"; tail -3 "$TMP/err"; return 0; }
		read -r w u s <"$TMP/time"
		echo "$w" >>"$TMP/t.$name"
		echo "$u + $s" | bc -l >>"$TMP/c.$name"
	done
	T[$name]=$(median <"$TMP/t.$name")
	C[$name]=$(median <"$TMP/c.$name")
	S[$name]=$(stat -c %s "$img")
	names+=("$name")
	rm -f "$img"
	echo "  $name: ${S[$name]} bytes, ${T[$name]} s wall, ${C[$name]} s CPU"
}

img=$TMP/img
row r4pack-reg40 "$img" "$R4PACK" create -q --free 0 "$TREE" "$img"
for alg in lzo1 gzip1 zstd1; do
	row "r4pack-$alg" "$img" "$R4PACK" create -q --free 0 \
		--compress=$alg "$TREE" "$img"
done
if command -v mksquashfs >/dev/null; then
	for c in gzip zstd; do
		row "squashfs-$c" "$img" mksquashfs "$TREE" "$img" -noappend \
			-quiet -no-progress -comp $c -processors "$(nproc)"
	done
fi
if command -v mkfs.erofs >/dev/null; then
	row erofs-none "$img" mkfs.erofs --quiet "$img" "$TREE"
	for c in lz4 lz4hc; do
		row "erofs-$c" "$img" mkfs.erofs --quiet -z$c "$img" "$TREE"
	done
fi

base_t=${T[r4pack-reg40]}
base_c=${C[r4pack-reg40]}
base_s=${S[r4pack-reg40]}
printf '%-16s %14s %8s %9s %10s %9s %10s %9s\n' tool "image bytes" "/data" "/reg40" \
	"seconds" "/reg40" "CPU s" "/reg40"
for n in "${names[@]}"; do
	printf '%-16s %14d %8.3f %9.3f %10.2f %9.2f %10.2f %9.2f\n' "$n" "${S[$n]}" \
		"$(echo "${S[$n]} / $bytes" | bc -l)" \
		"$(echo "${S[$n]} / $base_s" | bc -l)" "${T[$n]}" \
		"$(echo "${T[$n]} / $base_t" | bc -l)" "${C[$n]}" \
		"$(echo "${C[$n]} / $base_c" | bc -l)"
done
echo "target (issue 14): r4pack-lzo1 and r4pack-zstd1 at most 1.50 x the reg40" \
     "wall time ($(echo "1.5 * $base_t" | bc -l | xargs printf '%.2f') s here) on an idle machine"
