#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Writing through r4mount -o rw against fuse2fs (e2fsprogs) on an ext4
# image, and tmpfs as the floor: untar of a tree, cp -a of 10,000 small
# files, a 1 GiB sequential write (dd bs=1M) of zeros and one of random
# bytes (which no cluster compresses). Each run starts from a
# fresh image (r4mkfs / mke2fs -t ext4, 2 GiB, on tmpfs) and its time
# ends when the daemon has exited after the unmount (r4mount commits
# then; fuse2fs flushes), both daemons in the foreground with their
# default options. Medians of RUNS runs (default 3), the two file
# systems interleaved in each run.
#   bench/mount-rw.sh [BUILD_DIR] [RUNS] [TARBALL] [WORKLOADS]
# WORKLOADS: some of "untar copy seqw seqrand" (default all).
# TARBALL defaults to Debian's linux-source-6.1 (the Linux tree); needs
# fuse3, fuse2fs, e2fsprogs, /dev/fuse and about 8 GiB in /dev/shm.
set -eu
build=${1:-.}
runs=${2:-3}
src=${3:-/usr/src/linux-source-6.1.tar.xz}
workloads=${4:-untar copy seqw seqrand}
for t in fuse2fs mke2fs fusermount3 bc; do
	command -v $t >/dev/null || { echo "$t not installed" >&2; exit 2; }
done
[ -r "$src" ] || { echo "no $src (apt-get install linux-source-6.1)" >&2; exit 2; }
[ -w /dev/fuse ] || { echo "/dev/fuse is not usable" >&2; exit 2; }
dir=$(mktemp -d "${TMPDIR_SHM:-/dev/shm}/r4bench.XXXXXX")
PID=
cleanup() {
	mountpoint -q "$dir/mnt" 2>/dev/null && timeout 30 fusermount3 -u "$dir/mnt"
	[ -n "$PID" ] && kill "$PID" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# fresh FS: a new image of that kind mounted at $dir/mnt (tmpfs: a
# new directory)
fresh() {
	rm -rf "$dir/img" "$dir/mnt"
	mkdir "$dir/mnt"
	case $1 in
	tmpfs) PID=; return ;;
	r4) "$build/cmd/r4mkfs" -q "$dir/img" 2G
	    "$build/cmd/r4mount" -f -o rw "$dir/img" "$dir/mnt" >&2 & ;;
	ext4) mke2fs -q -F -t ext4 "$dir/img" 2G >&2
	      fuse2fs "$dir/img" "$dir/mnt" -f >&2 & ;;
	esac
	PID=$!
	for _ in $(seq 1 200); do
		mountpoint -q "$dir/mnt" && return 0
		sleep 0.05
	done
	echo "$1 did not mount" >&2
	exit 1
}
# the unmount, and the daemon's exit
finish() {
	[ -n "$PID" ] || return 0
	fusermount3 -u "$dir/mnt"
	wait "$PID"
	PID=
}
# time FS CMD...: seconds from a fresh mount to the daemon's exit
timed() {
	local fs=$1 t0 t1
	shift
	fresh "$fs"
	t0=$(now)
	"$@"
	finish
	t1=$(now)
	echo "$t1 - $t0" | bc -l
}

untar() { tar -C "$dir/mnt" -xf "$src"; }
copy() { cp -a "$dir/small" "$dir/mnt/"; }
seqw() { dd if=/dev/zero of="$dir/mnt/big" bs=1M count=1024 status=none; }
seqrand() { dd if="$dir/random" of="$dir/mnt/big" bs=1M status=none; }

mkdir -p "$dir/small"
for d in $(seq 0 99); do
	mkdir "$dir/small/d$d"
	for f in $(seq 0 99); do
		head -c $(( (d * 100 + f) * 37 % 4000 )) /dev/urandom >"$dir/small/d$d/f$f"
	done
done
head -c 1G /dev/urandom >"$dir/random"
echo "untar source $src ($(du -h "$src" | cut -f1)); 10,000 files of 0..4 KB; 1 GiB of zeros; 1 GiB of random bytes"

for w in $workloads; do
	for fs in tmpfs ext4 r4; do : >"$dir/t.$w.$fs"; done
	for i in $(seq "$runs"); do
		for fs in tmpfs ext4 r4; do
			timed "$fs" "$w" >>"$dir/t.$w.$fs"
		done
	done
	tm=$(median <"$dir/t.$w.tmpfs"); e=$(median <"$dir/t.$w.ext4")
	r=$(median <"$dir/t.$w.r4")
	printf '%s, median of %d: tmpfs %.2f s, fuse2fs %.2f s, r4mount %.2f s: r4mount / fuse2fs = %.2fx\n' \
		"$w" "$runs" "$tm" "$e" "$r" "$(echo "$r / $e" | bc -l)"
done
