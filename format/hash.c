/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the directory-entry hash plugins (doc/format.md §3).
 * All arithmetic is modulo 2^64 on unsigned bytes unless noted. */
#include "format/hash.h"

#include <string.h>

#include "format/errors.h"
#include "format/plugin.h"

/* Length up to the first NUL (the kernel's r5 and fnv1 loops stop there). */
static size_t nul_len(const uint8_t *s, size_t len)
{
	const uint8_t *z = memchr(s, 0, len);

	return z ? (size_t)(z - s) : len;
}

uint64_t fmt_hash_r5(const void *buf, size_t len)
{
	const uint8_t *s = buf;
	uint64_t a = 0;

	for (size_t i = 0; i < len; i++) {
		a += (uint64_t)s[i] << 4;
		a += (uint64_t)(s[i] >> 4);
		a *= 11;
	}
	return a;
}

uint64_t fmt_hash_fnv1(const void *buf, size_t len)
{
	const uint8_t *s = buf;
	uint64_t a = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++) {
		a *= 0x100000001b3ULL;
		a ^= s[i];
	}
	return a;
}

uint64_t fmt_hash_deg(const void *buf, size_t len)
{
	(void)buf;
	(void)len;
	return FMT_HASH_DEG_VALUE;
}

/* A 32-bit value read as a signed int and widened to 64 bits. */
static uint64_t sext32(uint32_t v)
{
	return (uint64_t)v | ((v & 0x80000000u) ? 0xffffffff00000000ULL : 0);
}

/*
 * rupasov reads the name as a decimal number: digit value (c - '0') of
 * character i is weighted by 10^(len-1-i), the weights being 32-bit
 * integers that wrap. Characters 1..len-1 contribute (c - '0'), a signed
 * value widened to 64 bits, times the weight; the implementations differ
 * in how the 32-bit weight is widened (kernel: signed; progs: unsigned)
 * and in the first character, whose product is formed in 32 bits and
 * then widened the same way (for a one-byte input it is just c - '0',
 * widened as signed by both). Then every position i from max(len, 40)
 * to 255 adds i itself (weight 10^0), and the sum is shifted left by 7.
 */
static uint64_t rupasov(const uint8_t *s, size_t len, int kernel)
{
	int64_t c0 = (int64_t)(len ? s[0] : 0) - 48;
	uint32_t pw = 1;
	uint64_t a = 0;
	size_t m;

	for (size_t i = len; i > 1; i--) {
		uint64_t w = kernel ? sext32(pw) : pw;

		a += (uint64_t)((int64_t)s[i - 1] - 48) * w;
		pw *= 10;
	}
	/* pw is now 10^(len-1) mod 2^32 (1 for len 0). */
	if (len == 1)
		a += (uint64_t)c0;
	else if (kernel)
		a += sext32((uint32_t)c0 * pw);
	else
		a += (uint32_t)((uint32_t)c0 * pw);

	/* reiser4progs computes len - 1 in unsigned 32 bits, so for an
	 * empty input these weights are 10^(2^32 - 1 - i) = 0 mod 2^32. */
	m = len > 40 ? len : 40;
	if (m <= 255 && (len || kernel))
		a += (uint64_t)(255 + m) * (256 - m) / 2;
	return a << 7;
}

uint64_t fmt_hash_rupasov(const void *buf, size_t len)
{
	return rupasov(buf, len, 0);
}

uint64_t fmt_hash_rupasov_kernel(const void *buf, size_t len)
{
	return rupasov(buf, len, 1);
}

#define TEA_DELTA 0x9E3779B9ULL

struct tea_state {
	uint64_t h0, h1;
};

/* 'rounds' TEA rounds on the state with message words a..d, widened to
 * 64 bits throughout (nothing is truncated to 32 bits), then the
 * Davies-Meyer feed-forward. */
static void tea_core(struct tea_state *st, int rounds, uint64_t a,
		     uint64_t b, uint64_t c, uint64_t d)
{
	uint64_t sum = 0, b0 = st->h0, b1 = st->h1;

	while (rounds-- > 0) {
		sum += TEA_DELTA;
		b0 += ((b1 << 4) + a) ^ (b1 + sum) ^ ((b1 >> 5) + b);
		b1 += ((b0 << 4) + c) ^ (b0 + sum) ^ ((b0 >> 5) + d);
	}
	st->h0 += b0;
	st->h1 += b1;
}

static uint64_t tea_word(const uint8_t *p)
{
	return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
	       (uint64_t)p[3] << 24;
}

uint64_t fmt_hash_tea(const void *buf, size_t len)
{
	const uint8_t *s = buf;
	struct tea_state st = { 0x9464a485ULL, 0x542e1a94ULL };
	uint64_t pad = (uint64_t)len | ((uint64_t)len << 8);
	uint64_t w[4];
	size_t full, i;

	pad |= pad << 16;
	for (; len >= 16; len -= 16, s += 16)
		tea_core(&st, 6, tea_word(s), tea_word(s + 4),
			 tea_word(s + 8), tea_word(s + 12));
	/* Whole words of the tail, then the pad word that takes the rest
	 * of the bytes shifted in at its low end. */
	full = len / 4;
	for (i = 0; i < 4; i++)
		w[i] = i < full ? tea_word(s + 4 * i) : pad;
	for (i = 4 * full; i < len; i++)
		w[full] = (w[full] << 8) | s[i];
	tea_core(&st, 10, w[0], w[1], w[2], w[3]);
	return st.h0 ^ st.h1;
}

int fmt_hash_known(unsigned hash_id)
{
	return (hash_id & ~FMT_HASH_KERNEL) <= FMT_HASH_DEG;
}

int fmt_hash(unsigned hash_id, const void *buf, size_t len, uint64_t *out)
{
	int kernel = (hash_id & FMT_HASH_KERNEL) != 0;

	switch (hash_id & ~FMT_HASH_KERNEL) {
	case FMT_HASH_RUPASOV:
		*out = kernel ? fmt_hash_rupasov_kernel(buf, len)
			      : fmt_hash_rupasov(buf, len);
		return 0;
	case FMT_HASH_R5:
		*out = fmt_hash_r5(buf, kernel ? nul_len(buf, len) : len);
		return 0;
	case FMT_HASH_TEA:
		*out = fmt_hash_tea(buf, len);
		return 0;
	case FMT_HASH_FNV1:
		*out = fmt_hash_fnv1(buf, kernel ? nul_len(buf, len) : len);
		return 0;
	case FMT_HASH_DEG:
		*out = fmt_hash_deg(buf, len);
		return 0;
	default:
		return R4_EUNSUPP;
	}
}
