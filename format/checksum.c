/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checksum.h"

#define ADLER_MOD 65521u
/* Largest n such that 255n(n+1)/2 + (n+1)(MOD-1) fits in 32 bits. */
#define ADLER_NMAX 5552

/* Bytes go in 16 at a time, in 16 lanes: lane i sums the bytes at
 * offset i of every 16-byte group (s1[i]), and ps[i] adds up s1[i] as it
 * stood before each group, so the running sum 'b' of the byte-at-a-time
 * definition is recovered at the end of a span from the lane sums (a byte
 * at lane i of group k of m groups counts 16 (m - 1 - k) + 16 - i times).
 * The lanes are independent, so the compiler can use vector registers.
 * Every partial sum is part of b's value at the end of the span, which
 * fits in 32 bits for spans of ADLER_NMAX bytes: the modulo is taken once
 * per span, as before. */
static void adler_groups(uint32_t *pa, uint32_t *pb, const uint8_t *p,
			 size_t m)
{
	uint32_t s1[16] = { 0 }, ps[16] = { 0 }, ta = 0, tb = 0;

	for (size_t k = 0; k < m; k++, p += 16)
		for (unsigned i = 0; i < 16; i++) {
			ps[i] += s1[i];
			s1[i] += p[i];
		}
	for (unsigned i = 0; i < 16; i++) {
		ta += s1[i];
		tb += 16 * ps[i] + (16 - i) * s1[i];
	}
	*pb += (uint32_t)(m * 16) * *pa + tb;
	*pa += ta;
}

uint32_t fmt_adler32_update(uint32_t adler, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t a = adler & 0xffff, b = adler >> 16;

	while (len > 0) {
		size_t n = len < ADLER_NMAX ? len : ADLER_NMAX;

		len -= n;
		if (n >= 16) {
			adler_groups(&a, &b, p, n / 16);
			p += n / 16 * 16;
			n %= 16;
		}
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
