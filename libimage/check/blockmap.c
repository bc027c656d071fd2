/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the checker's map of blocks in use: one bit per volume block,
 * in chunks of one bitmap region each (so a chunk lines up bit for bit
 * with the on-disk bitmap block it is compared with), allocated on the
 * first bit set, so a sparse multi-terabyte volume costs little. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include "libimage/check/check.h"

int chk_map_init(struct chk_map *m, uint64_t nbits, uint64_t chunk_bits)
{
	memset(m, 0, sizeof(*m));
	if (!chunk_bits || chunk_bits % 8)
		return R4_EINVAL;
	m->nbits = nbits;
	m->chunk_bits = chunk_bits;
	m->nchunks = nbits / chunk_bits + (nbits % chunk_bits != 0);
	if (m->nchunks > SIZE_MAX / sizeof(*m->chunk))
		return -ENOMEM;	/* a table no allocator could give */
	m->chunk = calloc(m->nchunks ? m->nchunks : 1, sizeof(*m->chunk));
	return m->chunk ? 0 : -ENOMEM;
}

void chk_map_fini(struct chk_map *m)
{
	if (m->chunk)
		for (uint64_t k = 0; k < m->nchunks; k++)
			free(m->chunk[k]);
	free(m->chunk);
	memset(m, 0, sizeof(*m));
}

int chk_map_test(const struct chk_map *m, uint64_t b)
{
	const uint8_t *ch;
	uint64_t bit;

	if (b >= m->nbits)
		return 0;
	ch = m->chunk[b / m->chunk_bits];
	if (!ch)
		return 0;
	bit = b % m->chunk_bits;
	return (ch[bit >> 3] >> (bit & 7)) & 1;
}

int chk_map_set(struct chk_map *m, uint64_t b)
{
	uint8_t **slot;
	uint64_t bit;
	int old;

	if (b >= m->nbits)
		return R4_EINVAL;
	slot = &m->chunk[b / m->chunk_bits];
	if (!*slot) {
		*slot = calloc(1, m->chunk_bits / 8);
		if (!*slot)
			return -ENOMEM;
	}
	bit = b % m->chunk_bits;
	old = ((*slot)[bit >> 3] >> (bit & 7)) & 1;
	(*slot)[bit >> 3] |= (uint8_t)(1u << (bit & 7));
	return old;
}

void chk_map_clear(struct chk_map *m, uint64_t b)
{
	uint8_t *ch;
	uint64_t bit;

	if (b >= m->nbits || !(ch = m->chunk[b / m->chunk_bits]))
		return;
	bit = b % m->chunk_bits;
	ch[bit >> 3] &= (uint8_t)~(1u << (bit & 7));
}

/* The lowest set bit of chunk ch at or after bit 'at', below 'end'
 * (both within the chunk), or end. */
static uint64_t chunk_next(const uint8_t *ch, uint64_t at, uint64_t end)
{
	uint64_t i = at >> 3;
	unsigned v;

	if (at >= end)
		return end;
	/* the first byte, its bits below 'at' masked off */
	v = ch[i] & (0xffu << (at & 7)) & 0xffu;
	if (v)
		return (i << 3) + (uint64_t)__builtin_ctz(v) < end ?
		       (i << 3) + (uint64_t)__builtin_ctz(v) : end;
	i++;
	/* eight bytes at a time while they are all zero */
	while ((i + 8) << 3 <= end) {
		uint64_t w;

		memcpy(&w, ch + i, sizeof(w));
		if (w)
			break;
		i += 8;
	}
	for (; i << 3 < end; i++)
		if (ch[i]) {
			uint64_t bit = (i << 3) +
				       (uint64_t)__builtin_ctz(ch[i]);

			return bit < end ? bit : end;
		}
	return end;
}

uint64_t chk_map_next(const struct chk_map *m, uint64_t b)
{
	if (!m->chunk || b >= m->nbits)
		return m->nbits;
	for (uint64_t k = b / m->chunk_bits; k < m->nchunks; k++) {
		uint64_t base = k * m->chunk_bits, end, at, bit;

		if (!m->chunk[k])
			continue;
		end = m->nbits - base < m->chunk_bits ? m->nbits - base :
		      m->chunk_bits;
		at = b > base ? b - base : 0;
		bit = chunk_next(m->chunk[k], at, end);
		if (bit < end)
			return base + bit;
	}
	return m->nbits;
}
