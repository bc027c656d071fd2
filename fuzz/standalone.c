/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Run the fuzz entry point without libFuzzer: over each file named, and
 * then over N seeded mutations of each (bytes flipped in the metadata
 * blocks), so `make check` and gcc-only machines exercise it too.
 *   fuzz_image_standalone [-n N] FILE... */
#include "config.h"
#include "fuzz/xorshift.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t rng = 0x9E3779B97F4A7C15ULL;

static uint64_t next(void)
{
	return fuzz_xorshift(&rng);
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *p = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (p = malloc((size_t)n)) &&
	    fread(p, 1, (size_t)n, f) != (size_t)n) {
		free(p);
		p = NULL;
	}
	*len = p ? (size_t)n : 0;
	fclose(f);
	return p;
}

/* Flip a few bytes, mostly in the blocks the metadata lives in (16..40:
 * super blocks, bitmap, journal, root and first leaves). */
static void mutate(uint8_t *p, size_t len)
{
	int flips = 1 + (int)(next() % 8);

	for (int i = 0; i < flips; i++) {
		size_t off = (next() & 3) ? 16 * 4096 + next() % (24 * 4096)
					  : next() % len;

		if (off < len)
			p[off] ^= (uint8_t)(1u << (next() % 8));
	}
}

int main(int argc, char **argv)
{
	long n = 0;
	int first = 1, runs = 0;

	if (argc > 2 && !strcmp(argv[1], "-n")) {
		n = strtol(argv[2], NULL, 10);
		first = 3;
	}
	for (int i = first; i < argc; i++) {
		size_t len;
		uint8_t *orig = slurp(argv[i], &len), *p;

		if (!orig) {
			fprintf(stderr, "%s: cannot read\n", argv[i]);
			return 2;
		}
		p = malloc(len);
		LLVMFuzzerTestOneInput(orig, len);
		runs++;
		for (long k = 0; p && k < n; k++) {
			memcpy(p, orig, len);
			mutate(p, len);
			LLVMFuzzerTestOneInput(p, len);
			runs++;
		}
		free(p);
		free(orig);
	}
	printf("ok 1 - %d inputs ran without a crash\n1..1\n", runs);
	return 0;
}
