#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Compressed images: r4pack create with each compression plugin
# (--compress=lzo1|gzip1|zstd1, compressMode conv, 64K clusters) against
# the uncompressed r4pack image and, beside each plugin, mksquashfs and
# mkfs.erofs on the same source tree, in the same run: image size (ratio
# to the file data, to the reg40 image and to the r4pack image of the
# plugin the row stands beside), build time and CPU time (user + sys of
# every thread; medians of RUNS, ratios to the reg40 build and to the
# r4pack build of that plugin) and the issue's target: compressed builds
# within 1.5 x the reg40 wall time. Wall times mean something only on an
# otherwise idle machine; on a shared one compare CPU times.
#
#   bench/compress.sh [BUILDDIR] [SOURCE] [RUNS]
#
# SOURCE: a directory, or a tarball (.tar, .tar.xz, ...; default Debian's
# linux-source-6.1, /usr/src/linux-source-6.1.tar.xz). $BENCH_SUBDIR picks
# a subfolder of it (e.g. linux-source-6.1/drivers) to keep runs short.
# Without a source, a generated text corpus is used. Work files go to
# $BENCH_TMP (default /dev/shm, so disk speed does not count). r4pack
# images are made with --free 0 (the smallest size that holds the tree)
# and --threads $BENCH_THREADS (default: the number of CPUs).
# $BENCH_BEFORE: a second build folder (e.g. of main) whose r4pack is
# measured in the same run, interleaved (rows "before-..."), for a
# before/after comparison. $BENCH_PEERS=0 leaves the peers out.
# Peers, each beside the plugin of its class, at the tool's default level
# unless the name gives one (mksquashfs: gzip 9, zstd 15; 128 KiB blocks):
#   none:  mkfs.erofs (uncompressed)
#   lzo1:  mksquashfs lz4 and lzo, mkfs.erofs lz4
#   gzip1: mksquashfs gzip, and gzip at level 1 (gzip1's level)
#   zstd1: mksquashfs zstd, and zstd at $BENCH_ZSTD_LEVEL (3); mkfs.erofs
#          lz4hc, and lzma when this mkfs.erofs has it
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
# the median CPU time (user + sys, every thread) and the size. The peers'
# runs are interleaved with r4pack's: all rows are first declared (decl),
# then run round by round.
declare -A T C S CMD IMG CLASS
names=()
decl() {
	local class=$1 name=$2 img=$3; shift 3
	names+=("$name")
	CLASS[$name]=$class
	IMG[$name]=$img
	CMD[$name]=$(printf '%q ' "$@")
	: >"$TMP/t.$name"
	: >"$TMP/c.$name"
}
run1() {
	local name=$1 w u s
	rm -f "${IMG[$name]}"
	sync
	if ! eval "/usr/bin/time -o \"\$TMP/time\" -f '%e %U %S' ${CMD[$name]}" \
		>/dev/null 2>"$TMP/err"; then
		echo "  $name failed:"; tail -3 "$TMP/err"
		echo fail >"$TMP/t.$name"
		return 0
	fi
	read -r w u s <"$TMP/time"
	echo "$w" >>"$TMP/t.$name"
	echo "$u + $s" | bc -l >>"$TMP/c.$name"
	S[$name]=$(stat -c %s "${IMG[$name]}")
	rm -f "${IMG[$name]}"
}

img=$TMP/img
THR=${BENCH_THREADS:-$(nproc)}
r4rows() {	# PREFIX R4PACK
	decl none "$1reg40" "$img" "$2" create -q --free 0 --threads "$THR" \
		"$TREE" "$img"
	for alg in lzo1 gzip1 zstd1; do
		decl "$alg" "$1$alg" "$img" "$2" create -q --free 0 \
			--threads "$THR" --compress=$alg "$TREE" "$img"
	done
}
r4rows r4pack- "$R4PACK"
if [ -n "${BENCH_BEFORE:-}" ]; then
	[ -x "$BENCH_BEFORE/cmd/r4pack" ] ||
		{ echo "no $BENCH_BEFORE/cmd/r4pack" >&2; exit 2; }
	r4rows before- "$BENCH_BEFORE/cmd/r4pack"
fi
# squashfs's zstd also at this level ($BENCH_ZSTD_LEVEL, default 3: the
# level the kernel compresses zstd1 clusters at)
ZL=${BENCH_ZSTD_LEVEL:-3}
if [ "${BENCH_PEERS:-1}" != 0 ] && command -v mksquashfs >/dev/null; then
	sq() {	# CLASS NAME COMP [OPTIONS]
		local class=$1 name=$2 comp=$3; shift 3
		decl "$class" "$name" "$img" mksquashfs "$TREE" "$img" -noappend \
			-quiet -no-progress -comp "$comp" -processors "$(nproc)" "$@"
	}
	sq lzo1 squashfs-lz4 lz4
	sq lzo1 squashfs-lzo lzo
	sq gzip1 squashfs-gzip gzip
	sq gzip1 squashfs-gzip-1 gzip -Xcompression-level 1
	sq zstd1 squashfs-zstd zstd
	sq zstd1 "squashfs-zstd-$ZL" zstd -Xcompression-level "$ZL"
fi
if [ "${BENCH_PEERS:-1}" != 0 ] && command -v mkfs.erofs >/dev/null; then
	ecomp=$(mkfs.erofs --help 2>&1 | sed -n 's/^Available compressors are: //p')
	decl none erofs-none "$img" mkfs.erofs --quiet "$img" "$TREE"
	for c in lz4 lz4hc lzma; do
		case " ${ecomp//,/ } " in *" $c "*) ;; *) continue ;; esac
		[ "$c" = lz4 ] && class=lzo1 || class=zstd1
		decl "$class" "erofs-$c" "$img" mkfs.erofs --quiet -z$c "$img" "$TREE"
	done
fi

for r in $(seq "$RUNS"); do
	echo "round $r of $RUNS ..."
	for n in "${names[@]}"; do
		run1 "$n"
	done
done
for n in "${names[@]}"; do
	if grep -q fail "$TMP/t.$n"; then
		T[$n]=fail
		continue
	fi
	T[$n]=$(median <"$TMP/t.$n")
	C[$n]=$(median <"$TMP/c.$n")
done

[ "${T[r4pack-reg40]}" != fail ] || { echo "the reg40 build failed" >&2; exit 1; }
base_t=${T[r4pack-reg40]}
base_c=${C[r4pack-reg40]}
base_s=${S[r4pack-reg40]}
r() {	# A / B, 0 when B is 0 (a tree too small for the timer)
	if [ "$(echo "$2 == 0" | bc -l)" = 1 ]; then echo 0; else echo "$1 / $2" | bc -l; fi
}
printf '%-18s %13s %6s %6s %6s %8s %6s %8s %6s %6s\n' tool "image bytes" \
	/data /reg40 /same "wall s" /reg40 "CPU s" /reg40 /same
for class in none lzo1 gzip1 zstd1; do
	[ "$class" = none ] && own=r4pack-reg40 || own=r4pack-$class
	echo "-- $class"
	for n in "${names[@]}"; do
		[ "${CLASS[$n]}" = "$class" ] || continue
		if [ "${T[$n]}" = fail ]; then
			printf '%-18s failed\n' "$n"
			continue
		fi
		if [ "${T[$own]:-fail}" = fail ]; then
			ss=0; sc=0
		else
			ss=$(r "${S[$n]}" "${S[$own]}"); sc=$(r "${C[$n]}" "${C[$own]}")
		fi
		printf '%-18s %13d %6.3f %6.3f %6.3f %8.2f %6.2f %8.2f %6.2f %6.2f\n' \
			"$n" "${S[$n]}" "$(r "${S[$n]}" "$bytes")" \
			"$(r "${S[$n]}" "$base_s")" "$ss" "${T[$n]}" \
			"$(r "${T[$n]}" "$base_t")" "${C[$n]}" \
			"$(r "${C[$n]}" "$base_c")" "$sc"
	done
done
echo "/same: against the r4pack image and CPU time of the plugin the row" \
     "stands beside (reg40 for \"none\")"
echo "target (issue 14): r4pack-lzo1 and r4pack-zstd1 at most 1.50 x the reg40" \
     "wall time ($(echo "1.5 * $base_t" | bc -l | xargs printf '%.2f') s here) on an idle machine"
