/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the checker's tables of stat data, directory entries and body
 * ranges, filled by the walk in tree order, sorted and searched by the
 * object checks. */
#include "config.h"
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/check/check.h"
#include "r4/util.h"

/* Room for one more element: the tables are indexed by u32. */
#define TABLE_ROOM(arr, cap, n) \
	((n) < UINT32_MAX - 1 && !R4_RESERVE(arr, cap, (n) + 1, 1024))

struct chk_obj *chk_obj_add(struct chk *c)
{
	struct chk_obj *p;

	if (c->st)
		return chk_stream_obj(c);
	if (c->items_only)
		c->nobjs = 0;
	if (!TABLE_ROOM(c->objs, c->capobjs, c->nobjs))
		return NULL;
	p = &c->objs[c->nobjs++];
	memset(p, 0, sizeof(*p));
	p->parent = CHK_NONE;
	p->dotdot = CHK_NONE;
	return p;
}

struct chk_ent *chk_ent_add(struct chk *c)
{
	struct chk_ent *p;

	if (c->st)
		return chk_stream_ent(c);
	if (c->items_only)
		c->nents = 0;
	if (!TABLE_ROOM(c->ents, c->capents, c->nents))
		return NULL;
	p = &c->ents[c->nents];
	memset(p, 0, sizeof(*p));
	p->seq = (uint32_t)c->nents++;
	return p;
}

int chk_body_add(struct chk *c, const struct fmt_key *k, uint64_t end,
		 unsigned kind, uint64_t blk, unsigned item)
{
	uint64_t el0 = (fmt_key_locality(k) << 4) | FMT_KEY_SD;
	struct chk_body *p;

	uint64_t start = fmt_key_offset(k);

	if (c->st)
		p = chk_stream_body_last(c);
	else
		p = c->nbodies ? &c->bodies[c->nbodies - 1] : NULL;
	if (p && p->el0 == el0 && p->el1 == k->el[1] && p->el2 == k->el[2]) {
		if (start > p->end && !p->gap_end && kind != CHK_BODY_CTAIL) {
			p->gap_at = p->end;
			p->gap_end = start;
		}
		if (end > p->end)
			p->end = end;
		p->kinds |= (uint8_t)kind;
		return 0;
	}
	if (c->st) {
		p = chk_stream_body_new(c);
		if (!p)
			return -ENOMEM;
	} else {
		if (c->items_only)
			c->nbodies = 0;
		if (!TABLE_ROOM(c->bodies, c->capbodies, c->nbodies))
			return -ENOMEM;
		p = &c->bodies[c->nbodies++];
	}
	p->el0 = el0;
	p->el1 = k->el[1];
	p->el2 = k->el[2];
	p->end = end;
	p->blk = blk;
	p->item = (uint16_t)item;
	p->kinds = (uint8_t)kind;
	p->gap_at = 0;
	p->gap_end = kind != CHK_BODY_CTAIL ? start : 0;
	return 0;
}

static int obj_cmp(const void *a, const void *b)
{
	const struct chk_obj *x = a, *y = b;
	int r = chk_cmp3(x->el0, x->el1, x->el2, y->el0, y->el1, y->el2);

	if (r)
		return r;
	return chk_cmp3(x->blk, x->item, 0, y->blk, y->item, 0);
}

static int ent_cmp(const void *a, const void *b)
{
	const struct chk_ent *x = a, *y = b;

	if (x->dir != y->dir)
		return x->dir < y->dir ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int body_cmp(const void *a, const void *b)
{
	const struct chk_body *x = a, *y = b;

	return chk_cmp3(x->el0, x->el1, x->el2, y->el0, y->el1, y->el2);
}

void chk_tables_sort(struct chk *c)
{
	if (c->nobjs)
		qsort(c->objs, c->nobjs, sizeof(*c->objs), obj_cmp);
	if (c->nents)
		qsort(c->ents, c->nents, sizeof(*c->ents), ent_cmp);
	if (c->nbodies)
		qsort(c->bodies, c->nbodies, sizeof(*c->bodies), body_cmp);
}

uint32_t chk_obj_find(const struct chk *c, uint64_t el0, uint64_t el1,
		      uint64_t el2)
{
	size_t lo = 0, hi = c->nobjs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct chk_obj *o = &c->objs[mid];
		int r = chk_cmp3(o->el0, o->el1, o->el2, el0, el1, el2);

		if (r == 0)
			return (uint32_t)mid;
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return CHK_NONE;
}

static int oid_cmp(const void *a, const void *b)
{
	const struct chk_oid *x = a, *y = b;

	if (x->oid != y->oid)
		return x->oid < y->oid ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

struct chk_oid *chk_oid_index(const struct chk *c)
{
	struct chk_oid *idx = malloc((c->nobjs ? c->nobjs : 1) * sizeof(*idx));

	if (!idx)
		return NULL;
	for (size_t i = 0; i < c->nobjs; i++) {
		idx[i].oid = c->objs[i].el2 & CHK_OID_MASK;
		idx[i].idx = (uint32_t)i;
	}
	if (c->nobjs)
		qsort(idx, c->nobjs, sizeof(*idx), oid_cmp);
	return idx;
}

uint32_t chk_oid_find(const struct chk *c, const struct chk_oid *idx,
		      uint64_t oid)
{
	size_t lo = 0, hi = c->nobjs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (idx[mid].oid < oid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < c->nobjs && idx[lo].oid == oid)
		return idx[lo].idx;
	return CHK_NONE;
}

size_t chk_ent_first(const struct chk *c, uint64_t dir)
{
	size_t lo = 0, hi = c->nents;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->ents[mid].dir < dir)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct chk_body *chk_body_find(const struct chk *c, uint64_t el0,
				     uint64_t el1, uint64_t el2)
{
	size_t lo = 0, hi = c->nbodies;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct chk_body *b = &c->bodies[mid];
		int r = chk_cmp3(b->el0, b->el1, b->el2, el0, el1, el2);

		if (r == 0)
			return b;
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}
