#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Compressed builds from a tarball, two r4pack binaries compared (e.g.
# main's and a branch's): r4pack create --compress=ALGO TARBALL, for lzo1
# and zstd1, the two binaries run in turn, medians of RUNS of the wall
# time, the CPU time (user + sys of every thread) and the peak RSS
# (/usr/bin/time). The images of both must be the same, byte for byte
# (two versions that store sparse files differently may differ there).
# Wall times mean something only on an otherwise idle machine.
#
#   bench/cc-tar.sh R4PACK_A R4PACK_B [TARBALL] [RUNS]
#
# TARBALL: an uncompressed .tar (default: Debian's linux-source-6.1,
# decompressed once into $BENCH_TMP). Work files go to $BENCH_TMP
# (default /dev/shm).
set -euo pipefail

A=${1:?give two r4pack binaries}
B=${2:?give two r4pack binaries}
SRC=${3:-}
RUNS=${4:-3}
[ -x /usr/bin/time ] || { echo "no /usr/bin/time" >&2; exit 2; }

TMP=$(mktemp -d "${BENCH_TMP:-/dev/shm}/r4bench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
if [ -z "$SRC" ]; then
	xz -dc /usr/src/linux-source-6.1.tar.xz >"$TMP/linux.tar"
	SRC=$TMP/linux.tar
fi

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

for alg in lzo1 zstd1; do
	for r in $(seq "$RUNS"); do
		for w in A B; do
			bin=$A; [ $w = B ] && bin=$B
			SOURCE_DATE_EPOCH=1700000000 /usr/bin/time \
				-f "%e %U %S %M" -o "$TMP/t" "$bin" create -q \
				-U 0b6e3c6e-5b8e-4a57-9a4b-14c0ffee0014 \
				--compress=$alg "$SRC" "$TMP/$w.img"
			read -r wall u s rss <"$TMP/t"
			echo "$wall" >>"$TMP/$alg.$w.wall"
			echo "$u $s" | awk '{print $1 + $2}' >>"$TMP/$alg.$w.cpu"
			echo "$rss" >>"$TMP/$alg.$w.rss"
		done
		cmp -s "$TMP/A.img" "$TMP/B.img" ||
			{ echo "$alg: the images differ" >&2; exit 1; }
	done
	for w in A B; do
		echo "$alg $w: wall $(median <"$TMP/$alg.$w.wall") s," \
		     "CPU $(median <"$TMP/$alg.$w.cpu") s," \
		     "peak RSS $(median <"$TMP/$alg.$w.rss") KiB"
	done
done
