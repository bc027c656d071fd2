#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# r4pack create on the Linux kernel source tarball vs its peers, in the
# same run, medians of 3:
#   r4pack create --size auto linux.tar IMAGE
#   cat linux.tar >FILE on tmpfs (the copy floor)
#   tar -xf linux.tar into a tmpfs folder (/dev/shm)
#   mke2fs -t ext4 -d TREE on a sparse image file
# and the other way:
#   r4pack extract IMAGE TARBALL
#   tar -cf TARBALL of the unpacked tree on tmpfs
# Prints times, CPU seconds (user + sys: the machine may be shared),
# ratios, peak RSS (/usr/bin/time -f %M) and the image size against the
# sum of the file sizes.
#
# Needs: Debian's linux-source-6.1 (/usr/src/linux-source-6.1.tar.xz),
# /usr/bin/time, mke2fs. Usage: bench/pack-kernel.sh [BUILDDIR] [TARBALL.xz]
# Work files go to $BENCH_TMP (default: a folder under /dev/shm, so disk
# speed does not count; it needs about 4x the tarball's unpacked size).
set -euo pipefail

BUILD=${1:-.}
SRC=${2:-/usr/src/linux-source-6.1.tar.xz}
R4PACK=$BUILD/cmd/r4pack
RUNS=${R4_BENCH_RUNS:-3}

[ -x "$R4PACK" ] || { echo "no $R4PACK (give the build folder)" >&2; exit 2; }
[ -r "$SRC" ] || { echo "no $SRC: apt-get install linux-source-6.1" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "no /usr/bin/time: apt-get install time" >&2; exit 2; }
command -v mke2fs >/dev/null || { echo "no mke2fs" >&2; exit 2; }

TMP=$(mktemp -d "${BENCH_TMP:-/dev/shm}/r4bench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
echo "work folder: $TMP"

echo "decompressing $SRC once..."
xz -dc "$SRC" >"$TMP/linux.tar"
mkdir "$TMP/tree"
tar -C "$TMP/tree" -xf "$TMP/linux.tar"
files=$(find "$TMP/tree" -type f | wc -l)
entries=$(find "$TMP/tree" | wc -l)
bytes=$(find "$TMP/tree" -type f -printf '%s\n' | awk '{s+=$1} END {print s}')
echo "tarball: $(stat -c %s "$TMP/linux.tar") bytes, $entries entries," \
     "$files files, $bytes bytes of file data"

# run NAME CMD...: time one run, record seconds, peak RSS (KiB) and CPU
# seconds (user + sys).
run() {
	local name=$1; shift
	sync
	/usr/bin/time -f '%e %M %U %S' -o "$TMP/time.$name" "$@" >/dev/null 2>"$TMP/err.$name" || {
		echo "$name failed:" >&2; tail -5 "$TMP/err.$name" >&2; exit 1; }
	read -r secs rss usr sys <"$TMP/time.$name"
	echo "$secs $rss $(awk -v u="$usr" -v s="$sys" 'BEGIN { print u + s }')" >>"$TMP/res.$name"
}

median() {	# median of column $2 of file $1
	cut -d' ' -f"$2" "$1" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'
}

# ext4 image size: file data plus 50% and 256 MiB for metadata.
ext4_size=$(( (bytes * 3 / 2 + (256 << 20)) / 4096 * 4096 ))

for i in $(seq $RUNS); do
	echo "run $i of $RUNS"
	rm -f "$TMP/r4.img"
	run r4pack "$R4PACK" create -q --size auto "$TMP/linux.tar" "$TMP/r4.img"
	rm -f "$TMP/cat.out"
	run cat sh -c 'cat "$1" >"$2"' sh "$TMP/linux.tar" "$TMP/cat.out"
	rm -f "$TMP/cat.out" "$TMP/ex.tar"
	run extract "$R4PACK" extract -q "$TMP/r4.img" "$TMP/ex.tar"
	rm -f "$TMP/ex.tar"
	run tarc tar -C "$TMP/tree" -cf "$TMP/ex.tar" .
	rm -f "$TMP/ex.tar"
	rm -rf "$TMP/x"; mkdir "$TMP/x"
	run tar tar -C "$TMP/x" -xf "$TMP/linux.tar"
	rm -f "$TMP/e4.img"; truncate -s "$ext4_size" "$TMP/e4.img"
	run mke2fs mke2fs -q -F -t ext4 -d "$TMP/tree" "$TMP/e4.img"
done

r4t=$(median "$TMP/res.r4pack" 1); r4m=$(median "$TMP/res.r4pack" 2)
tt=$(median "$TMP/res.tar" 1); tm=$(median "$TMP/res.tar" 2)
et=$(median "$TMP/res.mke2fs" 1); em=$(median "$TMP/res.mke2fs" 2)
ct=$(median "$TMP/res.cat" 1); cm=$(median "$TMP/res.cat" 2)
xt=$(median "$TMP/res.extract" 1); xm=$(median "$TMP/res.extract" 2)
tct=$(median "$TMP/res.tarc" 1); tcm=$(median "$TMP/res.tarc" 2)
img=$(stat -c %s "$TMP/r4.img")
used=$(( $(stat -c %b "$TMP/r4.img") * $(stat -c %B "$TMP/r4.img") ))

cpu() { median "$TMP/res.$1" 3; }
printf '\n%-34s %10s %12s %12s\n' "median of $RUNS" "seconds" "peak RSS KiB" "CPU seconds"
printf '%-34s %10s %12s %12s\n' "r4pack create --size auto" "$r4t" "$r4m" "$(cpu r4pack)"
printf '%-34s %10s %12s %12s\n' "tar -xf into tmpfs" "$tt" "$tm" "$(cpu tar)"
printf '%-34s %10s %12s %12s\n' "mke2fs -t ext4 -d" "$et" "$em" "$(cpu mke2fs)"
printf '%-34s %10s %12s %12s\n' "cat linux.tar >tmpfs (floor)" "$ct" "$cm" "$(cpu cat)"
printf '%-34s %10s %12s %12s\n' "r4pack extract IMAGE TARBALL" "$xt" "$xm" "$(cpu extract)"
printf '%-34s %10s %12s %12s\n' "tar -cf of the tree on tmpfs" "$tct" "$tcm" "$(cpu tarc)"
awk -v a="$r4t" -v b="$tt" -v c="$et" -v f="$ct" 'BEGIN {
	printf "r4pack / cat (floor): %.2f   r4pack / tar -x: %.2f   r4pack / mke2fs -d: %.2f\n",
	       a / (f ? f : 0.001), a / (b ? b : 0.001), a / (c ? c : 0.001) }'
awk -v x="$xt" -v t="$tct" 'BEGIN {
	printf "r4pack extract / tar -cf: %.2f\n", x / (t ? t : 0.001) }'
awk -v i="$img" -v u="$used" -v s="$bytes" 'BEGIN {
	printf "r4pack image: %d bytes (%d allocated) for %d bytes of files: %.3f x (%.3f x allocated)\n",
	       i, u, s, i / s, u / s }'
