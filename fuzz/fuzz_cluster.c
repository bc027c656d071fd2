/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit fuzz target for the compressed-cluster decoder (doc/compress.md
 * §3.2-3.3): input byte 0 picks the compression plugin, bytes 1-2 the
 * logical cluster size (little-endian, plus one), the rest is the disk
 * cluster. The decoder must classify it, check its Adler-32 and
 * decompress into a buffer of exactly the logical size, and never read
 * or write outside its buffers.
 *
 * Built for libFuzzer with --enable-fuzzing. Without it (make check),
 * main() below builds seeds itself (text and noise compressed by each
 * plugin, with the right and wrong sizes) and runs N seeded mutations
 * of each: fuzz_cluster_standalone [-n N]. */
#include "config.h"
#include "fuzz/xorshift.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "format/cluster.h"
#include "format/errors.h"
#include "libimage/util/compress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct r4_codec *c;
	enum fmt_dc_form form;
	const char *why;
	size_t lsize, slen;
	uint8_t *dc, *out;
	int rc;

	if (size < 3)
		return 0;
	lsize = (size_t)(data[1] | data[2] << 8) + 1;
	c = r4_codec_new(data[0] % 3, &rc);
	/* exact-size copies so that any overrun is an ASan error */
	dc = malloc(size - 3 ? size - 3 : 1);
	out = malloc(lsize);
	if (c && dc && out) {
		memcpy(dc, data + 3, size - 3);
		rc = fmt_dc_open(dc, size - 3, lsize, &form, &slen, &why);
		if (!rc && form == FMT_DC_PACKED)
			(void)r4_codec_decompress(c, dc, slen, out, lsize,
						  &why);
		/* also without the checksum gate: the raw stream */
		if (size > 3)
			(void)r4_codec_decompress(c, dc, size - 3, out, lsize,
						  &why);
	}
	free(out);
	free(dc);
	r4_codec_free(c);
	return 0;
}

#ifndef R4_FUZZ_LIBFUZZER
static uint64_t rng = 0x2545F4914F6CDD1DULL;

static uint64_t next(void)
{
	return fuzz_xorshift(&rng);
}

/* One seed: header + the disk cluster the writer would store. */
static size_t make_seed(uint8_t *in, unsigned alg, size_t lsize, int text)
{
	uint8_t *plain = malloc(lsize);
	struct r4_codec *c;
	size_t sl = 0, len;
	int rc;

	for (size_t i = 0; i < lsize; i++)
		plain[i] = text ? (uint8_t)("reiser4 ctail cluster\n"[
				  (i * 7 + i / 13) % 22]) : (uint8_t)next();
	c = r4_codec_new(alg, &rc);
	in[0] = (uint8_t)alg;
	in[1] = (uint8_t)((lsize - 1) & 0xff);
	in[2] = (uint8_t)((lsize - 1) >> 8);
	if (c && !r4_codec_compress(c, plain, lsize, in + 3,
				   r4_codec_bound(alg, lsize) - 4, &sl) &&
	    fmt_dc_keep(lsize, sl)) {
		len = fmt_dc_seal(in + 3, sl);
	} else {
		memcpy(in + 3, plain, lsize);
		len = lsize;
	}
	r4_codec_free(c);
	free(plain);
	return len + 3;
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 64, 300, 4096, 16384, 65536 };
	long n = argc > 2 && !strcmp(argv[1], "-n") ? strtol(argv[2], NULL, 10)
						     : 200;
	size_t cap = 3 + r4_codec_bound(2, 65536) + 65536;
	uint8_t *seed = malloc(cap), *p = malloc(cap);
	int runs = 0;

	for (unsigned alg = 0; alg < 3; alg++)
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
			for (int text = 0; text < 2; text++) {
				size_t len = make_seed(seed, alg, sizes[s],
						       text);

				LLVMFuzzerTestOneInput(seed, len);
				runs++;
				for (long k = 0; k < n; k++) {
					size_t l = len;
					int flips = 1 + (int)(next() % 6);

					memcpy(p, seed, len);
					for (int f = 0; f < flips; f++)
						p[next() % l] ^=
							(uint8_t)(1u << (next() % 8));
					if (next() % 4 == 0)
						l = 3 + next() % (l - 2);
					if (next() % 8 == 0)
						p[1] ^= (uint8_t)next();
					LLVMFuzzerTestOneInput(p, l);
					runs++;
				}
			}
	free(seed);
	free(p);
	printf("ok 1 - %d cluster inputs ran without a crash\n1..1\n", runs);
	return 0;
}
#endif
