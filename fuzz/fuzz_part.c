/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit fuzz target for the partition table decoder (format/part.c):
 * the input is the start of a disk; bytes 0-1 (little-endian) say how
 * many 512-byte sectors longer than the input the disk is (those read
 * as zeros). The decoder must return a table whose every partition
 * lies inside the disk, or an error with a one-line reason, and never
 * read outside what it asked for.
 *
 * Built for libFuzzer with --enable-fuzzing. Without it (make check),
 * main() below encodes an MBR and a GPT seed and runs N seeded
 * mutations of each: fuzz_part_standalone [-n N]. */
#include "config.h"
#include "fuzz/xorshift.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "format/part.h"

struct disk {
	const uint8_t *data;
	size_t size;
	uint64_t bytes;
};

static int rd(void *ctx, uint64_t off, void *buf, size_t len)
{
	const struct disk *d = ctx;

	if (off > d->bytes || len > d->bytes - off)
		abort();	/* the decoder read past the disk it was given */
	memset(buf, 0, len);
	if (off < d->size)
		memcpy(buf, d->data + off, len < d->size - off ? len :
		       d->size - off);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fmt_part_table t;
	struct disk d;
	char why[256];

	if (size < 2)
		return 0;
	d.data = data + 2;
	d.size = size - 2;
	d.bytes = d.size + (uint64_t)(data[0] | data[1] << 8) * 512;
	if (fmt_part_decode(rd, &d, d.bytes, 0, &t, why, sizeof(why))) {
		if (!why[0] || strchr(why, '\n'))
			abort();
		return 0;
	}
	for (size_t i = 0; i < t.n; i++)
		if (!t.p[i].start || t.p[i].start >= t.disk_sectors ||
		    t.p[i].sectors > t.disk_sectors - t.p[i].start)
			abort();
	return 0;
}

#ifndef R4_FUZZ_LIBFUZZER
#define SEED_SECTORS 4096u

static uint64_t rng = 0x9E3779B97F4A7C15ULL;

static uint64_t next(void)
{
	return fuzz_xorshift(&rng);
}

/* Make the GPT's CRCs match again after a mutation, so that the
 * entries behind them are decoded too. */
static void reseal(uint8_t *disk)
{
	uint8_t *h = disk + 512;
	uint32_t c = fmt_crc32(disk + 1024, 128 * 128);

	for (int i = 0; i < 4; i++)
		h[88 + i] = (uint8_t)(c >> (8 * i));
	memset(h + 16, 0, 4);
	c = fmt_crc32(h, 92);
	for (int i = 0; i < 4; i++)
		h[16 + i] = (uint8_t)(c >> (8 * i));
}

static void seed(uint8_t *buf, int gpt)
{
	static struct fmt_part_table t;
	static const unsigned nums[] = { 1, 2, 5, 6 };

	memset(&t, 0, sizeof(t));
	t.kind = gpt ? FMT_PT_GPT : FMT_PT_MBR;
	t.disk_sectors = SEED_SECTORS;
	for (unsigned i = 0; i < 4; i++) {
		struct fmt_part *p = &t.p[t.n++];

		p->number = gpt ? i + 1 : nums[i];
		p->start = gpt ? 64 + 512 * i : (i < 2 ? 64 + 512 * i : 1600 +
						 512 * (i - 2));
		p->sectors = 400;
		p->type = 0x83;
		p->type_guid[0] = 1;
		p->logical = !gpt && i >= 2;
	}
	if (!gpt) {
		struct fmt_part *e = &t.p[t.n++];

		memset(e, 0, sizeof(*e));
		e->number = 3;
		e->start = 1500;
		e->sectors = 1500;
		e->type = 0x05;
		e->extended = 1;
	}
	buf[0] = buf[1] = 0;
	if (fmt_part_encode(&t, buf + 2, SEED_SECTORS * 512))
		abort();
}

int main(int argc, char **argv)
{
	size_t len = 2 + SEED_SECTORS * 512;
	uint8_t *buf = malloc(len), *mut = malloc(len);
	unsigned long n = 1000;

	if (argc == 3 && !strcmp(argv[1], "-n"))
		n = strtoul(argv[2], NULL, 10);
	if (!buf || !mut)
		return 1;
	for (int gpt = 0; gpt < 2; gpt++) {
		seed(buf, gpt);
		LLVMFuzzerTestOneInput(buf, len);
		for (unsigned long i = 0; i < n; i++) {
			size_t cut = len;

			memcpy(mut, buf, len);
			for (int k = 0; k < 1 + (int)(next() % 8); k++) {
				size_t at = 2 + next() % (gpt ? 34 * 512 : 512);

				if (!gpt && next() % 4 == 0)
					at = 2 + 1499 * 512 + next() % 2048;
				mut[at] = (uint8_t)next();
			}
			if (gpt && next() % 2)
				reseal(mut + 2);
			if (next() % 8 == 0)
				cut = 2 + next() % (len - 2);
			mut[0] = (uint8_t)next();
			mut[1] = (uint8_t)(next() % 4);
			LLVMFuzzerTestOneInput(mut, cut);
		}
	}
	printf("1..1\nok 1 - fuzz_part: %lu mutations of an MBR and a GPT "
	       "seed\n", n);
	free(buf);
	free(mut);
	return 0;
}
#endif
