#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Scale: r4pack create of a tarball of N empty files in N/1000
# directories (names d0000000/f0000000), streamed from a generator into
# `r4pack create -` (the tarball is never written to disk), then
# `r4fsck --check` of the image. For each N: peak RSS (/usr/bin/time),
# CPU seconds (user + sys) and elapsed seconds, per file, and the
# generator alone piped into `cat >/dev/null` as the floor.
#   bench/scale.sh [BUILD_DIR] [N...]
# Default N: 100000 1000000; R4_BENCH_HUGE=1 adds 10000000 (needs about
# 6 GiB of free space for the image in $BENCH_TMP, default /dev/shm,
# about 5 GB for r4fsck's temporary file of sorted runs in $TMPDIR,
# default /tmp, and much longer). The generator is a small C program compiled here (cc).
set -euo pipefail
BUILD=${1:-.}
shift || true
if [ $# -gt 0 ]; then
	sizes="$*"
else
	sizes="100000 1000000"
	[ "${R4_BENCH_HUGE:-0}" = 1 ] && sizes="$sizes 10000000"
fi
R4PACK=$BUILD/cmd/r4pack
R4FSCK=$BUILD/cmd/r4fsck
for t in "$R4PACK" "$R4FSCK"; do
	[ -x "$t" ] || { echo "no $t (give the build folder)" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "no /usr/bin/time: apt-get install time" >&2; exit 2; }
command -v cc >/dev/null || { echo "no cc" >&2; exit 2; }

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
for n in $sizes; do
	tm "$TMP/t.gen" sh -c '"$1" "$2" | cat >/dev/null' sh "$TMP/gen" "$n"
	row "$n" "generator|cat" "$TMP/t.gen"
	rm -f "$TMP/img"
	"$TMP/gen" "$n" | tm "$TMP/t.create" "$R4PACK" create -q - "$TMP/img"
	row "$n" "r4pack create" "$TMP/t.create"
	tm "$TMP/t.fsck" "$R4FSCK" --check -q "$TMP/img"
	row "$n" "r4fsck --check" "$TMP/t.fsck"
	rm -f "$TMP/img"
done
