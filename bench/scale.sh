#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Scale (issue 29, goal 4): r4pack create of a tarball of N empty files
# in N/1000 directories (names d0000000/f0000000), streamed from a
# generator into `r4pack create -` (the tarball is never written to
# disk), then of that image `r4fsck -n`, `r4repacker -n`, `r4fsck -y`
# (a clean volume: nothing to fix), `r4fsck -y` of a copy whose counters
# and bitmap are damaged (fsck-y-space: the file and free block counts
# in the format40 super block and a bit of bitmap block 0 changed,
# fixed by the space pass) and of a copy grown to twice its blocks with
# one leaf zeroed (fsck-y-leaf: the tree rebuild). For each N and each step: peak RSS
# (/usr/bin/time), CPU seconds (user + sys) and elapsed seconds, per
# file; the generator alone piped into `cat >/dev/null` is the floor.
#   bench/scale.sh [BUILD_DIR] [N...]
# Default N: 1000000 10000000 20000000; R4_BENCH_QUICK=1: 100000
# 1000000. R4_BENCH_OLD=DIR (an older build) makes each image again
# with DIR/cmd/r4pack from the same stream and fails unless the sha256
# are equal (and prints that create's row too). R4_BENCH_STEPS picks
# steps among "create fsck-n repack-n fsck-y fsck-y-space fsck-y-leaf"
# (default all but fsck-y-leaf;
# create always runs). Room: the image (about 600 bytes a file) in
# $BENCH_TMP (default /dev/shm), the temporary files of r4pack (64 bytes
# a file) and of r4fsck (about 500 bytes a file) in $TMPDIR (default
# /tmp). The generator is a small C program compiled here (cc).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-.}
shift || true
if [ $# -gt 0 ]; then
	sizes="$*"
elif [ "${R4_BENCH_QUICK:-0}" = 1 ]; then
	sizes="100000 1000000"
else
	sizes="1000000 10000000 20000000"
fi
steps=${R4_BENCH_STEPS:-"create fsck-n repack-n fsck-y fsck-y-space"}
OLD=${R4_BENCH_OLD:-}
R4PACK=$BUILD/cmd/r4pack
R4FSCK=$BUILD/cmd/r4fsck
R4REPACK=$BUILD/cmd/r4repacker
R4DEBUGFS=$BUILD/cmd/r4debugfs
R4RESIZE=$BUILD/cmd/r4resize
for t in "$R4PACK" "$R4FSCK" "$R4REPACK" "$R4DEBUGFS" "$R4RESIZE" \
	 ${OLD:+"$OLD/cmd/r4pack"}; do
	[ -x "$t" ] || { echo "no $t (give the build folder)" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "no /usr/bin/time: apt-get install time" >&2; exit 2; }
command -v cc >/dev/null || { echo "no cc" >&2; exit 2; }
has() { case " $steps " in *" $1 "*) return 0;; esac; return 1; }

TMP=$(mktemp -d "${BENCH_TMP:-/dev/shm}/r4bench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# The generator (bench/gen-tar.c): a ustar stream of N/1000 directories
# of 1000 empty files each (the last directory takes the rest).
cc -O2 -o "$TMP/gen" "$SRC/bench/gen-tar.c"
# the same volume uuid and times in every build: equal bytes
UUID=5ca1e000-0000-4000-8000-000000000029
export SOURCE_DATE_EPOCH=1700000000

# tm OUT CMD...: run under /usr/bin/time; OUT gets "elapsed user sys rssKiB".
tm() {
	local out=$1; shift
	/usr/bin/time -f '%e %U %S %M' -o "$out" "$@" || {
		echo "failed: $*" >&2; exit 1; }
}

# tmfix OUT CMD...: the same for a repair, which exits 1 when it fixed
# what it found (0 when it found nothing).
tmfix() {
	local out=$1 rc=0; shift
	/usr/bin/time -f '%e %U %S %M' -o "$out" "$@" || rc=$?
	[ "$rc" -le 1 ] || { echo "failed ($rc): $*" >&2; exit 1; }
}
# put64 IMG BYTE VALUE: a little-endian u64 written at byte BYTE.
put64() {
	local v=$3 hex=''
	for _ in 1 2 3 4 5 6 7 8; do
		hex="$hex\\x$(printf %02x $((v & 255)))"
		v=$((v >> 8))
	done
	printf "$hex" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
# get64 IMG BYTE: the little-endian u64 at byte BYTE.
get64() {
	od -An -tu8 --endian=little -j "$2" -N8 "$1" | tr -d ' '
}
# The format40 super block of a 4096-byte block volume is block 17
# (block count at byte 0, free blocks at 8, file count at 32), the first
# bitmap block 18 and bitmap block k > 0 block k * 32736 (a 4-byte
# checksum, then a bit a block, the lowest first: doc/format.md §1.1,
# §1.3). Damage only the space pass mends: the file count, the free
# block count, and the last block (free: the image ends with its free
# space) marked used.
damage_space() {
	local bc fr b k blk off cur
	bc=$(get64 "$1" $((17 * 4096)))
	fr=$(get64 "$1" $((17 * 4096 + 8)))
	put64 "$1" $((17 * 4096 + 32)) 7
	put64 "$1" $((17 * 4096 + 8)) $((fr - 1))
	b=$((bc - 1)) k=$(((bc - 1) / 32736))
	blk=$((k ? k * 32736 : 18))
	off=$((blk * 4096 + 4 + b % 32736 / 8))
	cur=$(od -An -tu1 -j "$off" -N1 "$1" | tr -d ' ')
	printf "\\x$(printf %02x $((cur | 1 << (b % 32736 % 8))))" |
		dd of="$1" bs=1 seek="$off" conv=notrunc status=none
}
# A leaf in the middle of the tree zeroed: from the root (format40 byte
# 16), the middle child of each node down to level 1. The volume is
# grown to twice its blocks first: the rebuild writes a whole new tree
# before it frees the old one, and the auto-sized image has little room.
damage_leaf() {
	local b out
	b=$(get64 "$1" $((17 * 4096)))
	"$R4RESIZE" "$1" $((2 * b)) >/dev/null
	b=$(get64 "$1" $((17 * 4096 + 16)))
	while :; do
		out=$("$R4DEBUGFS" -R "print node $b" "$1")
		case $(head -n 1 <<<"$out") in
		*", level 1,"*) break ;;
		esac
		b=$(awk '$1 == "child" { c[n++] = $2 }
			 END { if (n) print c[int(n / 2)] }' <<<"$out")
		[ -n "$b" ] || { echo "no leaf found" >&2; exit 1; }
	done
	dd if=/dev/zero of="$1" bs=4096 seek="$b" count=1 conv=notrunc \
		status=none
}

printf '%-10s %-16s %9s %9s %10s %11s %11s\n' files what seconds cpu-s \
	"RSS MiB" "us/file" "cpu-us/file"
row() {	# N WHAT TIMEFILE
	# the last line: time puts "Command exited with..." before it
	read -r e u s m < <(tail -n 1 "$3")
	awk -v n="$1" -v w="$2" -v e="$e" -v u="$u" -v s="$s" -v m="$m" 'BEGIN {
		printf "%-10d %-16s %9.2f %9.2f %10.1f %11.2f %11.2f\n",
		       n, w, e, u + s, m / 1024, e * 1e6 / n, (u + s) * 1e6 / n }'
}
echo "# $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
for n in $sizes; do
	tm "$TMP/t.gen" sh -c '"$1" "$2" | cat >/dev/null' sh "$TMP/gen" "$n"
	row "$n" "generator|cat" "$TMP/t.gen"
	rm -f "$TMP/img"
	"$TMP/gen" "$n" | tm "$TMP/t.create" "$R4PACK" create -q -U "$UUID" \
		- "$TMP/img"
	row "$n" "r4pack create" "$TMP/t.create"
	if [ -n "$OLD" ]; then
		"$TMP/gen" "$n" | tm "$TMP/t.old" "$OLD/cmd/r4pack" create -q \
			-U "$UUID" - "$TMP/old.img"
		row "$n" "old create" "$TMP/t.old"
		a=$(sha256sum <"$TMP/img") b=$(sha256sum <"$TMP/old.img")
		rm -f "$TMP/old.img"
		[ "$a" = "$b" ] || { echo "$n: the images differ" >&2; exit 1; }
		echo "# $n: the same sha256 as the old build's image"
	fi
	if has fsck-n; then
		tm "$TMP/t.fsck" "$R4FSCK" -n -q "$TMP/img"
		row "$n" "r4fsck -n" "$TMP/t.fsck"
	fi
	if has repack-n; then
		tm "$TMP/t.rp" "$R4REPACK" -n "$TMP/img" >/dev/null
		row "$n" "r4repacker -n" "$TMP/t.rp"
	fi
	if has fsck-y; then
		tm "$TMP/t.y" "$R4FSCK" -y -q "$TMP/img"
		row "$n" "r4fsck -y" "$TMP/t.y"
	fi
	if has fsck-y-space; then
		cp --sparse=always "$TMP/img" "$TMP/dmg"
		damage_space "$TMP/dmg"
		tmfix "$TMP/t.ys" "$R4FSCK" -y -q "$TMP/dmg"
		row "$n" "r4fsck -y space" "$TMP/t.ys"
		tm "$TMP/t.yn" "$R4FSCK" -n -q "$TMP/dmg"
	fi
	if has fsck-y-leaf; then
		cp --sparse=always "$TMP/img" "$TMP/dmg"
		damage_leaf "$TMP/dmg"
		tmfix "$TMP/t.yl" "$R4FSCK" -y -q "$TMP/dmg"
		row "$n" "r4fsck -y leaf" "$TMP/t.yl"
	fi
	rm -f "$TMP/dmg"
	rm -f "$TMP/img"
done
