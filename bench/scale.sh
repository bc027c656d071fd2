#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Scale (issue 29, goal 4): r4pack create of a tarball of N empty files
# in N/1000 directories (names d0000000/f0000000), streamed from a
# generator into `r4pack create -` (the tarball is never written to
# disk), then of that image `r4fsck -n`, `r4repacker -n` and `r4fsck -y`
# (a clean volume: nothing to fix). For each N and each step: peak RSS
# (/usr/bin/time), CPU seconds (user + sys) and elapsed seconds, per
# file; the generator alone piped into `cat >/dev/null` is the floor.
#   bench/scale.sh [BUILD_DIR] [N...]
# Default N: 1000000 10000000 20000000; R4_BENCH_QUICK=1: 100000
# 1000000. R4_BENCH_OLD=DIR (an older build) makes each image again
# with DIR/cmd/r4pack from the same stream and fails unless the sha256
# are equal (and prints that create's row too). R4_BENCH_STEPS picks
# steps among "create fsck-n repack-n fsck-y" (default all of them;
# create always runs). Room: the image (about 600 bytes a file) in
# $BENCH_TMP (default /dev/shm), the temporary files of r4pack (64 bytes
# a file) and of r4fsck (about 500 bytes a file) in $TMPDIR (default
# /tmp). The generator is a small C program compiled here (cc).
set -euo pipefail
BUILD=${1:-.}
shift || true
if [ $# -gt 0 ]; then
	sizes="$*"
elif [ "${R4_BENCH_QUICK:-0}" = 1 ]; then
	sizes="100000 1000000"
else
	sizes="1000000 10000000 20000000"
fi
steps=${R4_BENCH_STEPS:-"create fsck-n repack-n fsck-y"}
OLD=${R4_BENCH_OLD:-}
R4PACK=$BUILD/cmd/r4pack
R4FSCK=$BUILD/cmd/r4fsck
R4REPACK=$BUILD/cmd/r4repacker
for t in "$R4PACK" "$R4FSCK" "$R4REPACK" ${OLD:+"$OLD/cmd/r4pack"}; do
	[ -x "$t" ] || { echo "no $t (give the build folder)" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "no /usr/bin/time: apt-get install time" >&2; exit 2; }
command -v cc >/dev/null || { echo "no cc" >&2; exit 2; }
has() { case " $steps " in *" $1 "*) return 0;; esac; return 1; }

TMP=$(mktemp -d "${BENCH_TMP:-/dev/shm}/r4bench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# The generator: a ustar stream of N/1000 directories of 1000 empty
# files each (the last directory takes the rest), then two zero blocks.
cat >"$TMP/gen.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static char out[1 << 20];
static size_t used;
static void put(const char *b)
{
	if (used + 512 > sizeof(out)) {
		fwrite(out, 1, used, stdout);
		used = 0;
	}
	memcpy(out + used, b, 512);
	used += 512;
}
static void header(const char *name, char type, const char *mode)
{
	char h[512];
	unsigned sum = 0;
	memset(h, 0, sizeof(h));
	snprintf(h, 100, "%s", name);
	memcpy(h + 100, mode, 8);
	memcpy(h + 108, "0001750\0", 8);
	memcpy(h + 116, "0001750\0", 8);
	memcpy(h + 124, "00000000000\0", 12);
	memcpy(h + 136, "14600000000\0", 12);
	memset(h + 148, ' ', 8);
	h[156] = type;
	memcpy(h + 257, "ustar\0" "00", 8);
	for (int i = 0; i < 512; i++)
		sum += (unsigned char)h[i];
	snprintf(h + 148, 8, "%06o", sum);
	put(h);
}
int main(int argc, char **argv)
{
	long n = atol(argv[1]), per = 1000, nd = n / per ? n / per : 1;
	char name[64], zero[512] = {0};
	for (long d = 0, f = 0; d < nd; d++) {
		long k = d + 1 < nd ? per : n - f;
		snprintf(name, sizeof(name), "d%07ld/", d);
		header(name, '5', "0000755\0");
		for (long i = 0; i < k; i++, f++) {
			snprintf(name, sizeof(name), "d%07ld/f%07ld", d, f);
			header(name, '0', "0000644\0");
		}
	}
	put(zero);
	put(zero);
	fwrite(out, 1, used, stdout);
	return 0;
}
C
cc -O2 -o "$TMP/gen" "$TMP/gen.c"
# the same volume uuid and times in every build: equal bytes
UUID=5ca1e000-0000-4000-8000-000000000029
export SOURCE_DATE_EPOCH=1700000000

# tm OUT CMD...: run under /usr/bin/time; OUT gets "elapsed user sys rssKiB".
tm() {
	local out=$1; shift
	/usr/bin/time -f '%e %U %S %M' -o "$out" "$@" || {
		echo "failed: $*" >&2; exit 1; }
}

printf '%-10s %-16s %9s %9s %10s %11s %11s\n' files what seconds cpu-s \
	"RSS MiB" "us/file" "cpu-us/file"
row() {	# N WHAT TIMEFILE
	read -r e u s m <"$3"
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
	rm -f "$TMP/img"
done
