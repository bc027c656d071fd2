/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checksum.h"

#define ADLER_MOD 65521u
/* Largest n such that 255n(n+1)/2 + (n+1)(MOD-1) fits in 32 bits. */
#define ADLER_NMAX 5552

uint32_t fmt_adler32_update(uint32_t adler, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t a = adler & 0xffff, b = adler >> 16;

	while (len > 0) {
		size_t n = len < ADLER_NMAX ? len : ADLER_NMAX;

		len -= n;
		while (n--) {
			a += *p++;
			b += a;
		}
		a %= ADLER_MOD;
		b %= ADLER_MOD;
	}
	return (b << 16) | a;
}

uint32_t fmt_adler32(const void *buf, size_t len)
{
	return fmt_adler32_update(1, buf, len);
}

static uint32_t crc32c_table[8][256];
static int crc32c_ready;

static void crc32c_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
		crc32c_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc32c_table[t][i] = (crc32c_table[t - 1][i] >> 8) ^
				crc32c_table[0][crc32c_table[t - 1][i] & 0xff];
	crc32c_ready = 1;
}

uint32_t fmt_crc32c_raw(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	/* The tables are pure functions of the polynomial: computing them
	 * twice from two threads writes the same values. */
	if (!crc32c_ready)
		crc32c_init();
	while (len >= 8) {
		uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 |
				     (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);

		crc = crc32c_table[7][lo & 0xff] ^
		      crc32c_table[6][(lo >> 8) & 0xff] ^
		      crc32c_table[5][(lo >> 16) & 0xff] ^
		      crc32c_table[4][lo >> 24] ^
		      crc32c_table[3][p[4]] ^ crc32c_table[2][p[5]] ^
		      crc32c_table[1][p[6]] ^ crc32c_table[0][p[7]];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ crc32c_table[0][(crc ^ *p++) & 0xff];
	return crc;
}
