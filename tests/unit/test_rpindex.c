/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the repacker's index of the window by block (bypos,
 * libimage/repack/model.c): after each round of moves, some elements
 * moved twice, the index merged again equals a full sort by block, and
 * rp_owner finds every element on each of its blocks. */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "libimage/repack/repack_int.h"

#define N 300
#define SLOTS (4 * N)		/* an element is at slot * 4, 1-3 wide */

static uint32_t seed = 12345;

static uint32_t rnd(uint32_t n)
{
	seed = seed * 1103515245u + 12345u;
	return (seed >> 8) % n;
}

/* A free slot, taken. */
static uint64_t take_slot(uint8_t *used)
{
	uint32_t s;

	do
		s = rnd(SLOTS);
	while (used[s]);
	used[s] = 1;
	return (uint64_t)s * 4;
}

/* bypos: a permutation, in block order, and rp_owner agrees. */
static int index_ok(const struct rp_model *m)
{
	uint8_t seen[N] = { 0 };

	for (size_t k = 0; k < m->n; k++) {
		size_t i = m->bypos[k];

		if (i >= m->n || seen[i]++)
			return 0;
		if (k && m->el[m->bypos[k - 1]].cur >= m->el[i].cur)
			return 0;
		for (uint64_t b = 0; b < m->el[i].w; b++)
			if (rp_owner(m, m->el[i].cur + b) != (int64_t)i)
				return 0;
		if (rp_owner(m, m->el[i].cur + 3) != -1)
			return 0;
	}
	return 1;
}

int main(void)
{
	static uint8_t used[SLOTS];
	struct rp_model m;
	int good = 1, merged = 0;

	memset(&m, 0, sizeof(m));
	m.el = calloc(N, sizeof(*m.el));
	m.bypos = malloc(N * sizeof(*m.bypos));
	tap_require(m.el && m.bypos, "out of memory");
	m.n = N;
	for (size_t i = 0; i < N; i++) {
		m.el[i].w = 1 + i % 3;
		m.el[i].cur = take_slot(used);
	}
	rp_model_index(&m);
	ok(index_ok(&m), "the first index: a full sort");
	for (int round = 0; round < 50; round++) {
		uint32_t k = 1 + rnd(round % 5 ? 40 : N);

		for (uint32_t j = 0; j < k; j++) {
			size_t i = rnd(N);

			used[m.el[i].cur / 4] = 0;
			m.el[i].cur = take_slot(used);
			rp_model_moved(&m, i);
		}
		/* round 7: as when the moved list could not grow, a full
		 * sort, which must clear every moved mark (an element left
		 * marked would never be listed again when it moves next) */
		if (round == 7)
			m.indexed = 0;
		merged += m.indexed && m.nmoved > 0;
		rp_model_index(&m);
		good &= index_ok(&m);
	}
	ok(merged == 49, "every later index but the full sort merged the "
	   "moved elements in (%d of 49)", merged);
	ok(good, "after each of 50 rounds of moves: in block order, every "
	   "element found on each of its blocks");
	rp_model_fini(&m);
	return tap_done();
}
