#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Reading a whole tree through r4mount vs the same tree on tmpfs and
# through squashfuse (a squashfs image of it, lz4), every file read with
# tar (tar -cf - | cat, since GNU tar skips reading the data when it
# writes to /dev/null itself). Each FUSE run mounts afresh, so no run
# reads from the page cache of an earlier one; the images themselves lie
# on tmpfs. Medians of RUNS runs (default 3).
#   bench/mount.sh [BUILD_DIR] [RUNS] [TARBALL]
# TARBALL defaults to Debian's linux-source-6.1 (the Linux tree);
# needs fuse3, squashfuse and squashfs-tools, /dev/fuse, and about 4x
# the unpacked tree in /dev/shm.
set -eu
build=${1:-.}
runs=${2:-3}
src=${3:-/usr/src/linux-source-6.1.tar.xz}
for t in squashfuse mksquashfs fusermount3 bc; do
	command -v $t >/dev/null || { echo "$t not installed" >&2; exit 2; }
done
[ -r "$src" ] || { echo "no $src (apt-get install linux-source-6.1)" >&2; exit 2; }
[ -w /dev/fuse ] || { echo "/dev/fuse is not usable" >&2; exit 2; }
dir=$(mktemp -d "${TMPDIR_SHM:-/dev/shm}/r4bench.XXXXXX")
cleanup() {
	for m in "$dir/r4" "$dir/sq"; do
		mountpoint -q "$m" 2>/dev/null && timeout 30 fusermount3 -u "$m"
	done
	rm -rf "$dir"
}
trap cleanup EXIT
now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
readall() { local t0 t1; t0=$(now); tar -C "$1" -cf - . | cat >/dev/null; t1=$(now); echo "$t1 - $t0" | bc -l; }

echo "unpacking $src ..."
mkdir "$dir/tree" "$dir/r4" "$dir/sq"
tar -C "$dir/tree" -xf "$src"
"$build/cmd/r4pack" create -q --size auto "$dir/tree" "$dir/img"
mksquashfs "$dir/tree" "$dir/sqfs" -comp lz4 -quiet -no-progress >/dev/null
echo "tree: $(du -sh "$dir/tree" | cut -f1), $(find "$dir/tree" | wc -l) entries;" \
	"r4 image $(du -h "$dir/img" | cut -f1), squashfs $(du -h "$dir/sqfs" | cut -f1)"

: >"$dir/t.tmpfs"; : >"$dir/t.r4"; : >"$dir/t.sq"
for i in $(seq "$runs"); do
	readall "$dir/tree" >>"$dir/t.tmpfs"
	"$build/cmd/r4mount" "$dir/img" "$dir/r4"
	readall "$dir/r4" >>"$dir/t.r4"
	timeout 30 fusermount3 -u "$dir/r4"
	squashfuse "$dir/sqfs" "$dir/sq"
	readall "$dir/sq" >>"$dir/t.sq"
	timeout 30 fusermount3 -u "$dir/sq"
done
tm=$(median <"$dir/t.tmpfs"); r4=$(median <"$dir/t.r4"); sq=$(median <"$dir/t.sq")
printf 'read the whole tree (tar), median of %d: tmpfs %.2f s, r4mount %.2f s, squashfuse %.2f s\n' \
	"$runs" "$tm" "$r4" "$sq"
printf 'r4mount / tmpfs = %.1fx, r4mount / squashfuse = %.2fx\n' \
	"$(echo "$r4 / $tm" | bc -l)" "$(echo "$r4 / $sq" | bc -l)"
