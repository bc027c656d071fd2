/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the checker's map of blocks in use: one bit per volume block,
 * in chunks of one bitmap region each (so a chunk lines up bit for bit
 * with the on-disk bitmap block it is compared with), allocated on the
 * first bit set, so a sparse multi-terabyte volume costs little. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/check/check.h"

int chk_map_init(struct chk_map *m, uint64_t nbits, uint64_t chunk_bits)
{
	memset(m, 0, sizeof(*m));
	if (!chunk_bits || chunk_bits % 8)
		return R4_EINVAL;
	m->nbits = nbits;
	m->chunk_bits = chunk_bits;
	m->nchunks = nbits / chunk_bits + (nbits % chunk_bits != 0);
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
