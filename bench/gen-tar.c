/* SPDX-License-Identifier: GPL-2.0-or-later */
/* gen-tar N [bodies]: a ustar stream on stdout of N/1000 directories of
 * 1000 empty files each (the last directory takes the rest), then two
 * zero blocks; with "bodies", the first six files of the first
 * directory get bodies of 100 to 40,000 pseudo-random bytes (tails and
 * extents for bench/fsck-damage.sh). A generator, not a file on disk:
 * bench/scale.sh and bench/fsck-damage.sh build it with cc. */
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

static void header(const char *name, char type, const char *mode, long size)
{
	char h[512];
	unsigned sum = 0;

	memset(h, 0, sizeof(h));
	snprintf(h, 100, "%s", name);
	memcpy(h + 100, mode, 8);
	memcpy(h + 108, "0001750\0", 8);
	memcpy(h + 116, "0001750\0", 8);
	snprintf(h + 124, 12, "%011lo", size);
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
	static const long sz[6] = { 100, 200, 20000, 30000, 300, 40000 };
	long n = argc > 1 ? atol(argv[1]) : 0, per = 1000;
	long nd = n / per ? n / per : 1;
	int bodies = argc > 2 && !strcmp(argv[2], "bodies");
	char name[64], zero[512] = {0}, blk[512];
	unsigned r = 12345;

	for (long d = 0, f = 0; d < nd; d++) {
		long k = d + 1 < nd ? per : n - f;

		snprintf(name, sizeof(name), "d%07ld/", d);
		header(name, '5', "0000755\0", 0);
		for (long i = 0; i < k; i++, f++) {
			long s = bodies && d == 0 && i < 6 ? sz[i] : 0;

			snprintf(name, sizeof(name), "d%07ld/f%07ld", d, f);
			header(name, '0', "0000644\0", s);
			for (long o = 0; o < s; o += 512) {
				for (int j = 0; j < 512; j++) {
					r = r * 1103515245 + 12345;
					blk[j] = (char)(r >> 16);
				}
				put(blk);
			}
		}
	}
	put(zero);
	put(zero);
	fwrite(out, 1, used, stdout);
	return 0;
}
