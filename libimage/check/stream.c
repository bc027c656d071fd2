/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the object pass of r4_check over sorted runs instead of the
 * tables. The walk hands stat data, entries and bodies to sorters
 * (runs.c), which spill to a temporary file past their budget; the pass
 * then joins sorted sequences:
 *   A. stat data by key with entries by target key: each entry gets its
 *      target (the object a binary search of the sorted table would
 *      find, also among objects with one key), each object its count of
 *      names; directories go to an in-memory table (the one thing that
 *      grows with the volume: one row per directory);
 *   B. stat data by object id: the second and later of one id, and the
 *      first of each id (the directory an entry belongs to);
 *   then the phases of semantic.c in its order, so the problems come out
 *   the same and in the same order: objects (key order), entries (by
 *   directory, in the order found), directories, reachability (a walk
 *   over the directories from the root, then entries by target), link
 *   counts, bodies, sizes, counters (stream_phases.c). */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/check/stream_int.h"
#include "libimage/check/sort.h"
#include "r4/util.h"
#include "format/item.h"
#include "format/super.h"

/* An object in id order, with its rank in key order (pass B). */
struct byoid {
	uint64_t oid;
	uint32_t rank;
	struct chk_obj o;
};

int chk_stream_key_cmp(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return chk_cmp3(x[0], x[1], x[2], y[0], y[1], y[2]);
}

/* Objects by key, then where they were found. */
static int obj_cmp(const void *a, const void *b)
{
	const struct chk_obj *x = a, *y = b;
	int r = chk_stream_key_cmp(a, b);

	return r ? r : chk_cmp3(x->blk, x->item, 0, y->blk, y->item, 0);
}

/* Bodies by key, then where they were found. */
static int body_cmp(const void *a, const void *b)
{
	const struct chk_body *x = a, *y = b;
	int r = chk_stream_key_cmp(a, b);

	return r ? r : chk_cmp3(x->blk, x->item, 0, y->blk, y->item, 0);
}

/* Entries by the key they name, then in the order found. */
static int ent_target_cmp(const void *a, const void *b)
{
	const struct chk_ent *x = a, *y = b;
	int r = chk_cmp3(x->t0, x->t1, x->t2, y->t0, y->t1, y->t2);

	return r ? r : chk_cmp3(x->seq, 0, 0, y->seq, 0, 0);
}

/* Entries by directory, then in the order found. */
static int tent_cmp(const void *a, const void *b)
{
	const struct tent *x = a, *y = b;

	return chk_cmp3(x->e.dir, x->e.seq, 0, y->e.dir, y->e.seq, 0);
}

/* Objects by id, then by rank. */
static int byoid_cmp(const void *a, const void *b)
{
	const struct byoid *x = a, *y = b;

	return chk_cmp3(x->oid, x->rank, 0, y->oid, y->rank, 0);
}

/* Names by target, then by directory. */
static int reach_cmp(const void *a, const void *b)
{
	const struct reach *x = a, *y = b;

	return chk_cmp3(x->t, x->dir, 0, y->t, y->dir, 0);
}

/* The sorters of the runs: each comparison inlined (check/sort.h). */
#define SORTER(name, type, cmp) \
	static void name(void *base, size_t n) \
	{ \
		chk_sort_inline(base, n, sizeof(type), cmp); \
	}
SORTER(obj_sort, struct chk_obj, obj_cmp)
SORTER(body_sort, struct chk_body, body_cmp)
SORTER(ent_target_sort, struct chk_ent, ent_target_cmp)
SORTER(tent_sort, struct tent, tent_cmp)
SORTER(byoid_sort, struct byoid, byoid_cmp)
SORTER(reach_sort, struct reach, reach_cmp)

/* ---- the walk's side ---- */

int chk_stream_start(struct chk *c)
{
	struct chk_stream *st = calloc(1, sizeof(*st));

	if (!st)
		return -ENOMEM;
	st->budget = c->opts && c->opts->run_bytes ? c->opts->run_bytes :
		     CHK_RUN_BUDGET;
	chk_runs_init(&st->objs, sizeof(struct chk_obj), obj_cmp, st->budget);
	chk_runs_init(&st->ents, sizeof(struct chk_ent), ent_target_cmp,
		      st->budget);
	chk_runs_init(&st->bodies, sizeof(struct chk_body), body_cmp,
		      st->budget);
	chk_runs_set_sort(&st->objs, obj_sort);
	chk_runs_set_sort(&st->ents, ent_target_sort);
	chk_runs_set_sort(&st->bodies, body_sort);
	c->st = st;
	return 0;
}

static int put(struct chk_stream *st, struct chk_runs *r, const void *rec)
{
	int rc = st->rc ? st->rc : chk_runs_put(r, rec);

	if (rc && rc != -ENOMEM)
		st->rc = rc;	/* the spill file's, reported as such */
	return rc;
}

struct chk_obj *chk_stream_obj(struct chk *c)
{
	struct chk_stream *st = c->st;

	if (st->has_obj && put(st, &st->objs, &st->sobj))
		return NULL;
	memset(&st->sobj, 0, sizeof(st->sobj));
	st->sobj.parent = CHK_NONE;
	st->sobj.dotdot = CHK_NONE;
	st->has_obj = 1;
	return &st->sobj;
}

struct chk_ent *chk_stream_ent(struct chk *c)
{
	struct chk_stream *st = c->st;

	if (st->seq == UINT32_MAX - 1)
		return NULL;
	if (st->has_ent && put(st, &st->ents, &st->sent))
		return NULL;
	memset(&st->sent, 0, sizeof(st->sent));
	st->sent.seq = st->seq++;
	st->has_ent = 1;
	return &st->sent;
}

struct chk_body *chk_stream_body_last(struct chk *c)
{
	return c->st->has_body ? &c->st->sbody : NULL;
}

struct chk_body *chk_stream_body_new(struct chk *c)
{
	struct chk_stream *st = c->st;

	if (st->has_body && put(st, &st->bodies, &st->sbody))
		return NULL;
	memset(&st->sbody, 0, sizeof(st->sbody));
	st->has_body = 1;
	return &st->sbody;
}

int chk_stream_error(const struct chk *c)
{
	return c->st ? c->st->rc : 0;
}

void chk_stream_free(struct chk *c)
{
	struct chk_stream *st = c->st;

	if (!st)
		return;
	chk_runs_free(&st->objs);
	chk_runs_free(&st->ents);
	chk_runs_free(&st->bodies);
	free(st);
	c->st = NULL;
}

/* ---- the pass ---- */

uint64_t chk_stream_pick(uint64_t n, uint64_t a, uint64_t b)
{
	uint64_t lo = 0, hi = n;

	if (a == b)	/* most groups: one record, the search's answer */
		return a;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (mid >= a && mid <= b)
			return mid;
		if (mid < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return a;
}

int chk_stream_group_init(struct group *g, struct chk_runs *r)
{
	int rc;

	memset(g, 0, sizeof(*g));
	g->r = r;
	g->rsz = r->rsz;
	g->next = malloc(g->rsz);
	if (!g->next)
		return -ENOMEM;
	rc = chk_runs_rewind(r);
	if (!rc)
		rc = chk_runs_next(r, g->next);
	if (rc < 0)
		return rc;
	g->has_next = rc;
	return 0;
}

void chk_stream_group_fini(struct group *g)
{
	free(g->rec);
	free(g->next);
}

int chk_stream_group_next(struct group *g)
{
	int rc;

	g->first += g->m;
	g->m = 0;
	if (!g->has_next)
		return 0;
	do {
		if (r4_reserve(&g->rec, &g->cap, g->m + 1, g->rsz, 4))
			return -ENOMEM;
		memcpy(g->rec + g->m * g->rsz, g->next, g->rsz);
		g->m++;
		rc = chk_runs_next(g->r, g->next);
		if (rc < 0)
			return rc;
		g->has_next = rc;
	} while (g->has_next && !chk_stream_key_cmp(g->rec, g->next));
	return 1;
}

/* Whether o is the root directory's stat data. */
static int is_root_key(const struct chk_obj *o)
{
	return !chk_cmp3(o->el0, o->el1, o->el2,
		     (FMT_ROOT_LOCALITY << 4) | FMT_KEY_SD, 0, FMT_ROOT_OID);
}

/* The entries read from e on whose target key sorts up to o's go to
 * p->tents: those naming o's key get target t (rank k) and count as one
 * of its links, the others name nothing. o NULL: every entry left. */
static int join_ents(struct pass *p, struct chk_ent *e, int *has_e,
		     const struct chk_obj *o, uint32_t k, struct chk_obj *t)
{
	struct tent te;
	int rc;

	memset(&te, 0, sizeof(te));
	while (*has_e) {
		int r = o ? chk_cmp3(e->t0, e->t1, e->t2, o->el0, o->el1,
				     o->el2) : -1;

		if (r > 0)
			return 0;
		te.e = *e;
		te.t = r ? CHK_NONE : k;
		te.tdir = !r && chk_is_dir(t);
		if (!r && t->links < UINT32_MAX)
			t->links++;
		if (!r && !e->flags)
			t->flags |= CHK_OBJ_NAMED;
		rc = chk_runs_put(&p->tents, &te);
		if (!rc)
			rc = chk_runs_next(&p->st->ents, e);
		if (rc < 0)
			return rc;
		*has_e = rc;
	}
	return 0;
}

/* The objects of one key (their links counted) go to the key-ordered
 * and id-ordered runs, the directories among them to p->dirs too. */
static int keep_group(struct pass *p, const struct group *g)
{
	const struct chk_obj *o = (const struct chk_obj *)g->rec;
	int rc;

	for (size_t i = 0; i < g->m; i++) {
		struct byoid b;
		uint32_t rank = (uint32_t)(g->first + i);

		rc = chk_runs_put(&p->ranked, &o[i]);
		memset(&b, 0, sizeof(b));
		b.oid = o[i].el2 & CHK_OID_MASK;
		b.rank = rank;
		b.o = o[i];
		if (!rc)
			rc = chk_runs_put(&p->byoid, &b);
		if (rc)
			return rc;
		if (!chk_is_dir(&o[i]))
			continue;
		if (R4_RESERVE(p->dirs, p->capdirs, p->ndirs + 1, 64))
			return -ENOMEM;
		memset(&p->dirs[p->ndirs], 0, sizeof(*p->dirs));
		p->dirs[p->ndirs].o = o[i];
		p->dirs[p->ndirs++].rank = rank;
	}
	return 0;
}

/* A: objects by key joined with entries by target. */
static int pass_targets(struct pass *p)
{
	struct chk_stream *st = p->st;
	struct group g;
	struct chk_ent e;
	int has_e = 0, rc;

	p->n = st->objs.total;
	rc = chk_stream_group_init(&g, &st->objs);
	if (!rc)
		rc = has_e = chk_runs_next(&st->ents, &e);
	while (rc >= 0 && (rc = chk_stream_group_next(&g)) > 0) {
		struct chk_obj *o = (struct chk_obj *)g.rec;
		uint64_t k = chk_stream_pick(p->n, g.first, g.first + g.m - 1);
		struct chk_obj *t = &o[k - g.first];

		rc = join_ents(p, &e, &has_e, o, (uint32_t)k, t);
		if (!rc && is_root_key(o)) {
			p->root = (uint32_t)k;
			p->rootobj = *t;
		}
		if (!rc)
			rc = keep_group(p, &g);
	}
	if (!rc)
		rc = join_ents(p, &e, &has_e, NULL, CHK_NONE, NULL);
	chk_stream_group_fini(&g);
	chk_runs_free(&st->objs);
	chk_runs_free(&st->ents);
	return rc;
}

/* B: objects by id: the seconds of one id (in that order), the first
 * of each id. */
static int pass_ids(struct pass *p)
{
	struct byoid b;
	uint64_t prev = 0, pos = 0;
	int rc;

	rc = chk_runs_finish(&p->byoid);
	while (!rc && (rc = chk_runs_next(&p->byoid, &b)) > 0) {
		if (pos && b.oid == prev) {
			struct dup d;

			memset(&d, 0, sizeof(d));
			d.p = pos;
			d.o = b.o;
			rc = chk_runs_put(&p->dups, &d);
		} else {
			struct first f;

			memset(&f, 0, sizeof(f));
			f.oid = b.oid;
			f.rank = b.rank;
			f.dir = (uint8_t)chk_is_dir(&b.o);
			rc = chk_runs_put(&p->firsts, &f);
		}
		prev = b.oid;
		pos++;
		if (rc)
			break;
	}
	chk_runs_free(&p->byoid);
	if (rc < 0)
		return rc;
	rc = chk_runs_finish(&p->dups);
	return rc ? rc : chk_runs_finish(&p->firsts);
}

/* The pass's start: the records staged last go to their sorters, the
 * pass's own runs are made empty, the walk's three are sorted. */
static int pass_open(struct pass *p, struct chk *c)
{
	struct chk_stream *st = c->st;
	int rc;

	memset(p, 0, sizeof(*p));
	p->c = c;
	p->st = st;
	p->root = CHK_NONE;
	rc = st->rc;
	if (!rc && st->has_obj)
		rc = chk_runs_put(&st->objs, &st->sobj);
	if (!rc && st->has_ent)
		rc = chk_runs_put(&st->ents, &st->sent);
	if (!rc && st->has_body)
		rc = chk_runs_put(&st->bodies, &st->sbody);
	st->has_obj = st->has_ent = st->has_body = 0;
	chk_runs_init(&p->ranked, sizeof(struct chk_obj), NULL, st->budget);
	chk_runs_init(&p->tents, sizeof(struct tent), tent_cmp, st->budget);
	chk_runs_init(&p->byoid, sizeof(struct byoid), byoid_cmp, st->budget);
	chk_runs_init(&p->dups, sizeof(struct dup), NULL, st->budget);
	chk_runs_init(&p->firsts, sizeof(struct first), NULL, st->budget);
	chk_runs_init(&p->reaches, sizeof(struct reach), reach_cmp,
		      st->budget);
	chk_runs_set_sort(&p->tents, tent_sort);
	chk_runs_set_sort(&p->byoid, byoid_sort);
	chk_runs_set_sort(&p->reaches, reach_sort);
	if (!rc)
		rc = chk_runs_finish(&st->objs);
	if (!rc)
		rc = chk_runs_finish(&st->ents);
	if (!rc)
		rc = chk_runs_finish(&st->bodies);
	return rc;
}

/* Free what the pass built. */
static void pass_close(struct pass *p)
{
	chk_runs_free(&p->ranked);
	chk_runs_free(&p->tents);
	chk_runs_free(&p->byoid);
	chk_runs_free(&p->dups);
	chk_runs_free(&p->firsts);
	chk_runs_free(&p->reaches);
	free(p->dirs);
	free(p->edges);
	free(p->names);
	free(p->nents);
	free(p->reached);
}

int chk_stream_semantic(struct chk *c)
{
	struct chk_stream *st = c->st;
	struct pass p;
	int rc;

	chk_progress(c, "objects", 0, 4);
	rc = pass_open(&p, c);
	if (!rc)
		rc = pass_targets(&p);
	if (!rc)
		rc = chk_runs_finish(&p.ranked);
	if (!rc)
		rc = pass_ids(&p);
	if (!rc)
		rc = chk_stream_phases(&p);
	if (rc && rc != -ENOMEM && !st->rc)
		st->rc = rc;
	if (!rc && c->fixes_want) {	/* the objects kept, read from 0 */
		c->ranked = p.ranked;
		c->has_ranked = 1;
		chk_runs_init(&p.ranked, sizeof(struct chk_obj), NULL, 1);
		rc = chk_runs_rewind(&c->ranked);
	}
	pass_close(&p);
	return rc;
}
