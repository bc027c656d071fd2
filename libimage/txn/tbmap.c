/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: a transaction's block map (txn_int.h): a hash for the blocks
 * with a buffer, a nibble a block in chunks for the others. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "r4/util.h"
#include "libimage/txn/txn_int.h"

/* The scope lives in the padding: a transaction of millions of blocks
 * pays nothing for it. */
_Static_assert(sizeof(struct tb) <= 3 * sizeof(uint64_t),
	       "struct tb grew past 24 bytes");
_Static_assert(TB_FREED < TBC_SPILLED, "a state takes three bits");

/* ---- the chunks ---- */

static unsigned tbc_get(const struct tbmap *m, uint64_t nr)
{
	uint64_t k = nr >> TB_CHUNK_SHIFT;
	size_t i = (size_t)(nr & (TB_CHUNK - 1));

	if (k >= m->nchunk || !m->chunk[k])
		return 0;
	return (m->chunk[k][i >> 1] >> ((i & 1) * 4)) & 15u;
}

/* Room for chunk k: 0 or -ENOMEM. */
static int tbc_room(struct tbmap *m, uint64_t k)
{
	size_t n = m->nchunk;
	uint8_t **c;
	uint32_t *u;

	if (k < n)
		return 0;
	if (k >= SIZE_MAX / 2 / sizeof(*c))
		return -ENOMEM;
	while (n <= k)
		n = n ? n * 2 : 16;
	c = realloc(m->chunk, n * sizeof(*c));
	if (!c)
		return -ENOMEM;
	m->chunk = c;
	u = realloc(m->used, n * sizeof(*u));
	if (!u)
		return -ENOMEM;
	m->used = u;
	memset(c + m->nchunk, 0, (n - m->nchunk) * sizeof(*c));
	memset(u + m->nchunk, 0, (n - m->nchunk) * sizeof(*u));
	m->nchunk = n;
	return 0;
}

static uint32_t tbc_scope(const struct tbmap *m, uint64_t nr)
{
	uint64_t g = nr >> TB_SGROUP_SHIFT;

	if (g >= m->nscope || !m->scope[g])
		return 0;
	return m->scope[g][nr & (TB_SGROUP - 1)];
}

/* Room for block nr's scope: 0 or -ENOMEM. */
static int tbc_scope_room(struct tbmap *m, uint64_t nr)
{
	uint64_t g = nr >> TB_SGROUP_SHIFT;
	size_t n = m->nscope;
	uint32_t **s;

	if (g >= n) {
		if (g >= SIZE_MAX / 2 / sizeof(*s))
			return -ENOMEM;
		while (n <= g)
			n = n ? n * 2 : 64;
		s = realloc(m->scope, n * sizeof(*s));
		if (!s)
			return -ENOMEM;
		memset(s + m->nscope, 0, (n - m->nscope) * sizeof(*s));
		m->scope = s;
		m->nscope = n;
	}
	if (!m->scope[g] &&
	    !(m->scope[g] = calloc(TB_SGROUP, sizeof(**m->scope))))
		return -ENOMEM;
	return 0;
}

/* Block nr's nibble set to v and its scope to scope; setting 0 never
 * fails (a chunk left with no block goes; a group of scopes stays). */
static int tbc_set(struct tbmap *m, uint64_t nr, unsigned v, uint32_t scope)
{
	uint64_t k = nr >> TB_CHUNK_SHIFT;
	size_t i = (size_t)(nr & (TB_CHUNK - 1));
	unsigned old = tbc_get(m, nr), sh = (i & 1) * 4;
	uint64_t g = nr >> TB_SGROUP_SHIFT;
	uint8_t *p;

	if (scope && tbc_scope_room(m, nr))
		return -ENOMEM;
	if (old == v)
		goto scope;
	if (!old) {
		if (tbc_room(m, k))
			return -ENOMEM;
		if (!m->chunk[k] && !(m->chunk[k] = calloc(TB_CHUNK / 2, 1)))
			return -ENOMEM;
		m->used[k]++;
	} else
		m->count[old & 7]--;
	p = &m->chunk[k][i >> 1];
	*p = (uint8_t)((*p & ~(15u << sh)) | (v << sh));
	if (v) {
		m->count[v & 7]++;
	} else if (!--m->used[k]) {
		free(m->chunk[k]);
		m->chunk[k] = NULL;
	}
scope:
	if (g < m->nscope && m->scope[g])
		m->scope[g][nr & (TB_SGROUP - 1)] = v ? scope : 0;
	return 0;
}

int tbc_next(const struct tbmap *m, uint64_t *nr, unsigned states,
	     struct tb *out)
{
	uint64_t b = *nr;

	while ((b >> TB_CHUNK_SHIFT) < m->nchunk) {
		uint64_t k = b >> TB_CHUNK_SHIFT;
		const uint8_t *c = m->chunk[k];

		if (!c || !m->used[k]) {
			b = (k + 1) << TB_CHUNK_SHIFT;
			continue;
		}
		for (size_t i = (size_t)(b & (TB_CHUNK - 1)); i < TB_CHUNK;
		     i++) {
			unsigned v;

			if (!(i & 1) && !c[i >> 1]) {
				i++;	/* two blocks with nothing */
				continue;
			}
			v = (c[i >> 1] >> ((i & 1) * 4)) & 15u;
			if (v && ((states >> (v & 7)) & 1)) {
				*out = (struct tb){
					.nr = (k << TB_CHUNK_SHIFT) + i,
					.state = v & 7,
					.spilled = !!(v & TBC_SPILLED) };
				out->scope = tbc_scope(m, out->nr);
				*nr = out->nr + 1;
				return 1;
			}
		}
		b = (k + 1) << TB_CHUNK_SHIFT;
	}
	*nr = b;
	return 0;
}

/* ---- the map ---- */

void tb_init(struct tbmap *m)
{
	memset(m, 0, sizeof(*m));
	r4_u64map_init(&m->m, sizeof(struct tb));
}

struct tb *tb_find(struct tbmap *m, uint64_t nr)
{
	return r4_u64map_find(&m->m, nr);
}

struct tb *tb_get(struct tbmap *m, uint64_t nr)
{
	unsigned v = tbc_get(m, nr);
	int added;
	struct tb *e = r4_u64map_get(&m->m, nr, &added);

	if (e && added) {
		*e = (struct tb){ .nr = nr, .state = v & 7,
				  .spilled = !!(v & TBC_SPILLED) };
		e->scope = tbc_scope(m, nr);
		tbc_set(m, nr, 0, 0);
	}
	return e;
}

struct tb tb_peek(const struct tbmap *m, uint64_t nr)
{
	const struct tb *e = r4_u64map_find(&m->m, nr);
	struct tb p;
	unsigned v;

	if (e)
		return *e;
	v = tbc_get(m, nr);
	p = (struct tb){ .nr = nr, .state = v & 7,
			 .spilled = !!(v & TBC_SPILLED) };
	p.scope = tbc_scope(m, nr);
	return p;
}

void tb_settle(struct tbmap *m, struct tb *e, uint32_t live_gen)
{
	if (e->b || e->state == TB_CAPTURED ||
	    (live_gen && e->gen && e->gen >= live_gen))
		return;
	if (e->state != TB_DEAD &&
	    tbc_set(m, e->nr, e->state | (e->spilled ? TBC_SPILLED : 0),
		    e->scope))
		return;		/* no memory: it stays where it is */
	r4_u64map_del(&m->m, e->nr);
}

struct tb *tb_next(const struct tbmap *m, size_t *i)
{
	size_t k = r4_u64map_next(&m->m, *i);

	*i = k + 1;
	return k < m->m.cap ? r4_u64map_val(&m->m, k) : NULL;
}

uint64_t tb_count(const struct tbmap *m, unsigned state)
{
	uint64_t n = m->count[state & 7];
	struct tb *e;

	for (size_t i = 0; (e = tb_next(m, &i));)
		n += e->state == state;
	return n;
}

void tb_fini(struct tbmap *m)
{
	r4_u64map_fini(&m->m);
	for (size_t k = 0; k < m->nchunk; k++)
		free(m->chunk[k]);
	free(m->chunk);
	free(m->used);
	for (size_t g = 0; g < m->nscope; g++)
		free(m->scope[g]);
	free(m->scope);
	m->chunk = NULL;
	m->used = NULL;
	m->nchunk = 0;
	m->scope = NULL;
	m->nscope = 0;
	memset(m->count, 0, sizeof(m->count));
}

static int cmp_tb(const void *a, const void *b)
{
	const struct tb *x = *(struct tb *const *)a;
	const struct tb *y = *(struct tb *const *)b;

	return x->nr < y->nr ? -1 : x->nr > y->nr;
}

int tb_list(const struct tbmap *m, unsigned states, struct tb ***out,
	    size_t *n)
{
	size_t k = 0, i = 0;
	struct tb *e;

	*out = NULL;
	*n = 0;

	while ((e = tb_next(m, &i)))
		k += (states >> e->state) & 1;
	if (!k)
		return 0;
	*out = malloc(k * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (i = 0; (e = tb_next(m, &i));)
		if ((states >> e->state) & 1)
			(*out)[(*n)++] = e;
	qsort(*out, *n, sizeof(**out), cmp_tb);
	return 0;
}

/* ---- both parts in block order ---- */

int tb_iter_start(struct tb_iter *it, const struct tbmap *m,
		  unsigned states)
{
	*it = (struct tb_iter){ .m = m, .states = states };
	return tb_list(m, states, &it->h, &it->nh);
}

int tb_iter_next(struct tb_iter *it, struct tb *out)
{
	const struct tb *h = it->ih < it->nh ? it->h[it->ih] : NULL;

	if (!it->have)	/* 1: it->c waits; -1: no more in the chunks */
		it->have = tbc_next(it->m, &it->nr, it->states, &it->c) ?
				   1 : -1;
	if (it->have == 1 && (!h || it->c.nr < h->nr)) {
		*out = it->c;
		it->have = 0;
		return 1;
	}
	if (!h)
		return 0;
	*out = *h;
	it->ih++;
	return 1;
}

void tb_iter_fini(struct tb_iter *it)
{
	free(it->h);
	it->h = NULL;
	it->nh = 0;
}
