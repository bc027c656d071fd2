/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "tap.h"
#include "format/checksum.h"

/* Adler-32 by its definition: one byte at a time, reduced every byte. */
static uint32_t adler_ref(uint32_t adler, const uint8_t *p, size_t len)
{
	uint64_t a = adler & 0xffff, b = adler >> 16;

	while (len--) {
		a = (a + *p++) % 65521;
		b = (b + a) % 65521;
	}
	return (uint32_t)(b << 16 | a);
}

/* fmt_adler32_update sums 16 bytes at a time and reduces once per 5552
 * bytes: every length around those steps, at every alignment, from the
 * largest start values (where a wrong span would overflow), and random
 * pieces, against the definition. */
static void adler_spans(void)
{
	static uint8_t big[3 * 5552 + 64];
	static const size_t lens[] = { 0, 1, 15, 16, 17, 31, 32, 33, 255,
		5535, 5536, 5551, 5552, 5553, 5568, 2 * 5552 - 1, 2 * 5552,
		2 * 5552 + 1, 3 * 5552 };
	static const uint32_t starts[] = { 1, 0, 0xfff0fff0, 0x12345678 };
	unsigned seed = 14, bad = 0, runs = 0;

	memset(big, 0xff, sizeof(big));
	for (size_t s = 0; s < sizeof(starts) / sizeof(*starts); s++)
		for (size_t l = 0; l < sizeof(lens) / sizeof(*lens); l++)
			for (size_t al = 0; al < 17; al++, runs++)
				bad += fmt_adler32_update(starts[s], big + al,
							  lens[l]) !=
				       adler_ref(starts[s], big + al, lens[l]);
	is_u64(bad, 0, "adler32 of 0xff bytes, %u lengths x alignments x "
	       "start values, equals the definition", runs);
	for (size_t i = 0; i < sizeof(big); i++) {
		seed = seed * 1103515245u + 12345u;
		big[i] = (uint8_t)(seed >> 16);
	}
	bad = 0;
	for (runs = 0; runs < 400; runs++) {
		size_t al, len, cut;
		uint32_t start;

		seed = seed * 1103515245u + 12345u;
		al = (seed >> 8) % 64;
		seed = seed * 1103515245u + 12345u;
		len = (seed >> 4) % (sizeof(big) - al);
		seed = seed * 1103515245u + 12345u;
		cut = len ? (seed >> 4) % len : 0;
		start = runs % 2 ? 1 : seed % 65521 << 16 | (seed >> 7) % 65521;
		bad += fmt_adler32_update(fmt_adler32_update(start, big + al,
							     cut),
					  big + al + cut, len - cut) !=
		       adler_ref(start, big + al, len);
	}
	is_u64(bad, 0, "adler32 of %u random pieces (lengths, alignments, "
	       "a cut) equals the definition", runs);
}

int main(void)
{
	uint8_t buf[4092];

	is_u64(fmt_crc32c_raw(~0u, "123456789", 9), 0x1cf96d7c,
	       "crc32c raw of 123456789");
	is_u64(~fmt_crc32c_raw(~0u, "123456789", 9), 0xe3069283,
	       "standard crc32c of 123456789");
	is_u64(fmt_crc32c_raw(fmt_crc32c_raw(~0u, "1234", 4), "56789", 5),
	       0x1cf96d7c, "crc32c raw continues over pieces");
	memset(buf, 0, sizeof(buf));
	is_u64(fmt_adler32(buf, sizeof(buf)), 0x0ffc0001, "adler32 of 4092 zeros");
	memset(buf, 0xff, sizeof(buf));
	is_u64(fmt_adler32(buf, sizeof(buf)), 0xc397ece6, "adler32 of 4092 0xff");
	is_u64(fmt_adler32("Wikipedia", 9), 0x11E60398, "adler32 of Wikipedia");
	is_u64(fmt_adler32_update(fmt_adler32("Wiki", 4), "pedia", 5),
	       0x11E60398, "adler32 continues over pieces");
	adler_spans();
	return tap_done();
}
