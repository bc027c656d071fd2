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
 *   counts, bodies, sizes, counters. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/check/check.h"
#include "r4/util.h"
#include "format/item.h"
#include "format/super.h"

/* An entry with its target: rank in key order (CHK_NONE: no object has
 * the key) and whether it is a directory. */
struct tent {
	struct chk_ent e;
	uint32_t t;
	uint8_t tdir;
};

struct byoid {
	uint64_t oid;
	uint32_t rank;
	struct chk_obj o;
};

struct dup {			/* a second stat data of an id, at p */
	uint64_t p;
	struct chk_obj o;
};

struct first {			/* the first object of an id */
	uint64_t oid;
	uint32_t rank;
	uint8_t dir;
};

struct reach {			/* a name of t in directory dir */
	uint32_t t;
	uint64_t dir;
};

struct dirrow {
	struct chk_obj o;	/* nentries, ndot, ndotdot, parent, dotdot */
	uint32_t rank;
	uint64_t dotdot_oid, parent_oid;
};

struct edge {			/* a directory named in directory dir */
	uint64_t dir;
	uint32_t t;
};

struct chk_stream {
	size_t budget;
	int rc;				/* first spill error */
	struct chk_runs objs, ents, bodies;
	struct chk_obj sobj;
	struct chk_ent sent;
	struct chk_body sbody;
	int has_obj, has_ent, has_body;
	uint32_t seq;
};

/* What the pass builds. */
struct pass {
	struct chk *c;
	struct chk_stream *st;
	uint64_t n;			/* objects */
	uint32_t root;
	struct chk_obj rootobj;
	struct chk_runs ranked;		/* objects in key order, links set */
	struct chk_runs tents;		/* entries by directory */
	struct chk_runs byoid, dups, firsts, reaches;
	struct dirrow *dirs;
	size_t ndirs, capdirs;
	struct edge *edges;
	size_t nedges, capedges;
	struct chk_dedge *names;	/* entries naming a directory */
	struct chk_ent *nents;		/* and those entries */
	size_t nnames, capnames, capnents;
	uint64_t *reached;		/* oids of the reached directories */
	size_t nreached, capreached;
};

/* Objects and bodies begin with their key el[0..2]. */
static int key_cmp(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return chk_cmp3(x[0], x[1], x[2], y[0], y[1], y[2]);
}

static int obj_cmp(const void *a, const void *b)
{
	const struct chk_obj *x = a, *y = b;
	int r = key_cmp(a, b);

	return r ? r : chk_cmp3(x->blk, x->item, 0, y->blk, y->item, 0);
}

static int body_cmp(const void *a, const void *b)
{
	const struct chk_body *x = a, *y = b;
	int r = key_cmp(a, b);

	return r ? r : chk_cmp3(x->blk, x->item, 0, y->blk, y->item, 0);
}

static int ent_target_cmp(const void *a, const void *b)
{
	const struct chk_ent *x = a, *y = b;
	int r = chk_cmp3(x->t0, x->t1, x->t2, y->t0, y->t1, y->t2);

	return r ? r : chk_cmp3(x->seq, 0, 0, y->seq, 0, 0);
}

static int tent_cmp(const void *a, const void *b)
{
	const struct tent *x = a, *y = b;

	return chk_cmp3(x->e.dir, x->e.seq, 0, y->e.dir, y->e.seq, 0);
}

static int byoid_cmp(const void *a, const void *b)
{
	const struct byoid *x = a, *y = b;

	return chk_cmp3(x->oid, x->rank, 0, y->oid, y->rank, 0);
}

static int reach_cmp(const void *a, const void *b)
{
	const struct reach *x = a, *y = b;

	return chk_cmp3(x->t, x->dir, 0, y->t, y->dir, 0);
}

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

/* Where the tables' binary search over n sorted rows lands when rows
 * a..b hold the key sought (chk_obj_find, chk_body_find). */
static uint64_t pick(uint64_t n, uint64_t a, uint64_t b)
{
	uint64_t lo = 0, hi = n;

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

/* Runs of records with one key (objects or bodies) from a sequence. */
struct group {
	struct chk_runs *r;
	size_t rsz;
	uint8_t *rec;		/* m records */
	size_t m, cap;
	uint8_t *next;		/* the record after the group */
	int has_next;
	uint64_t first;		/* index of rec[0] in the sequence */
};

static int group_init(struct group *g, struct chk_runs *r)
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

static void group_fini(struct group *g)
{
	free(g->rec);
	free(g->next);
}

/* The next group: 1, 0 at the end, or -errno. */
static int group_next(struct group *g)
{
	int rc;

	g->first += g->m;
	g->m = 0;
	if (!g->has_next)
		return 0;
	do {
		if (g->m == g->cap) {
			size_t cap = g->cap ? 2 * g->cap : 4;
			uint8_t *p = realloc(g->rec, cap * g->rsz);

			if (!p)
				return -ENOMEM;
			g->rec = p;
			g->cap = cap;
		}
		memcpy(g->rec + g->m * g->rsz, g->next, g->rsz);
		g->m++;
		rc = chk_runs_next(g->r, g->next);
		if (rc < 0)
			return rc;
		g->has_next = rc;
	} while (g->has_next && !key_cmp(g->rec, g->next));
	return 1;
}

static struct dirrow *dir_find(struct pass *p, uint32_t rank)
{
	size_t lo = 0, hi = p->ndirs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->dirs[mid].rank < rank)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < p->ndirs && p->dirs[lo].rank == rank ? &p->dirs[lo] : NULL;
}

static int is_root_key(const struct chk_obj *o)
{
	return !chk_cmp3(o->el0, o->el1, o->el2,
		     (FMT_ROOT_LOCALITY << 4) | FMT_KEY_SD, 0, FMT_ROOT_OID);
}

/* A: objects by key joined with entries by target. */
static int pass_targets(struct pass *p)
{
	struct chk_stream *st = p->st;
	struct group g;
	struct chk_ent e;
	struct tent te;
	int has_e, rc;

	p->n = st->objs.total;
	rc = group_init(&g, &st->objs);
	if (rc)
		goto out;
	rc = chk_runs_next(&st->ents, &e);
	if (rc < 0)
		goto out;
	has_e = rc;
	memset(&te, 0, sizeof(te));
	while ((rc = group_next(&g)) > 0) {
		struct chk_obj *o = (struct chk_obj *)g.rec;
		uint64_t k = pick(p->n, g.first, g.first + g.m - 1);
		struct chk_obj *t = &o[k - g.first];

		for (; has_e; has_e = rc) {
			int r = chk_cmp3(e.t0, e.t1, e.t2, o->el0, o->el1, o->el2);

			if (r > 0)
				break;
			te.e = e;
			te.t = r ? CHK_NONE : (uint32_t)k;
			te.tdir = !r && chk_is_dir(t);
			if (!r && t->links < UINT32_MAX)
				t->links++;
			rc = chk_runs_put(&p->tents, &te);
			if (!rc)
				rc = chk_runs_next(&st->ents, &e);
			if (rc < 0)
				goto out;
		}
		if (is_root_key(o)) {
			p->root = (uint32_t)k;
			p->rootobj = *t;
		}
		for (size_t i = 0; i < g.m; i++) {
			struct byoid b;
			uint32_t rank = (uint32_t)(g.first + i);

			rc = chk_runs_put(&p->ranked, &o[i]);
			memset(&b, 0, sizeof(b));
			b.oid = o[i].el2 & CHK_OID_MASK;
			b.rank = rank;
			b.o = o[i];
			if (!rc)
				rc = chk_runs_put(&p->byoid, &b);
			if (rc)
				goto out;
			if (!chk_is_dir(&o[i]))
				continue;
			if (R4_RESERVE(p->dirs, p->capdirs, p->ndirs + 1, 64)) {
				rc = -ENOMEM;
				goto out;
			}
			memset(&p->dirs[p->ndirs], 0, sizeof(*p->dirs));
			p->dirs[p->ndirs].o = o[i];
			p->dirs[p->ndirs++].rank = rank;
		}
	}
	if (rc < 0)
		goto out;
	for (; has_e; has_e = rc) {
		te.e = e;
		te.t = CHK_NONE;
		te.tdir = 0;
		rc = chk_runs_put(&p->tents, &te);
		if (!rc)
			rc = chk_runs_next(&st->ents, &e);
		if (rc < 0)
			goto out;
	}
	rc = 0;
out:
	group_fini(&g);
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

/* Phase 1: every object, in key order. */
static int phase_objects(struct pass *p)
{
	struct chk_obj o;
	struct dup d;
	uint64_t r = 0;
	int has_d, rc;

	rc = chk_runs_rewind(&p->ranked);
	if (rc)
		return rc;
	has_d = chk_runs_next(&p->dups, &d);
	while ((rc = chk_runs_next(&p->ranked, &o)) > 0) {
		if (has_d < 0)
			return has_d;
		if (has_d && d.p == r) {
			chk_sem_dup(p->c, &d.o);
			has_d = chk_runs_next(&p->dups, &d);
		}
		chk_sem_object(p->c, &o);
		r++;
	}
	return rc;
}

/* Phase 2: every entry, by directory in the order found. */
static int resolve(struct pass *p, const struct tent *te, uint32_t d,
		   int ddir)
{
	struct chk *c = p->c;
	const struct chk_ent *e = &te->e;
	struct dirrow *dr, *tr;
	struct reach rr;
	int rc;

	if (te->t == CHK_NONE)
		CHK_ENT_SAY0(c, e, CHK_M_ENTRY_MISSING);
	if (te->t != CHK_NONE && !e->flags) {
		memset(&rr, 0, sizeof(rr));
		rr.t = te->t;
		rr.dir = e->dir;
		rc = chk_runs_put(&p->reaches, &rr);
		if (rc)
			return rc;
		if (te->tdir) {
			if (R4_RESERVE(p->edges, p->capedges, p->nedges + 1,
				       64))
				return -ENOMEM;
			p->edges[p->nedges].dir = e->dir;
			p->edges[p->nedges++].t = te->t;
		}
	}
	if (d == CHK_NONE || !ddir) {
		CHK_ENT_SAY0(c, e, d == CHK_NONE ? CHK_M_ENTRY_NO_DIR :
			     CHK_M_ENTRY_NOT_DIR);
		return 0;
	}
	dr = dir_find(p, d);
	if (!dr)
		return -EIO;	/* the first pass listed every directory */
	dr->o.nentries++;
	if (te->t == CHK_NONE)
		return 0;
	if (e->flags & CHK_ENT_DOT) {
		dr->o.ndot++;
		if (te->t != d)
			CHK_ENT_SAY0(c, e, CHK_M_DOT_ELSEWHERE);
		return 0;
	}
	if (e->flags) {
		dr->o.ndotdot++;
		dr->o.dotdot = te->t;
		dr->dotdot_oid = e->t2 & CHK_OID_MASK;
		return 0;
	}
	if (!te->tdir)
		return 0;
	tr = dir_find(p, te->t);
	if (!tr)
		return -EIO;
	if (R4_RESERVE(p->names, p->capnames, p->nnames + 1, 64) ||
	    R4_RESERVE(p->nents, p->capnents, p->nnames + 1, 64))
		return -ENOMEM;
	p->names[p->nnames].d = (uint32_t)(dr - p->dirs);
	p->names[p->nnames].t = (uint32_t)(tr - p->dirs);
	p->nents[p->nnames++] = *e;
	return 0;
}

static int phase_entries(struct pass *p)
{
	struct tent te;
	struct first f;
	int has_f, rc;

	rc = chk_runs_finish(&p->tents);
	if (rc)
		return rc;
	has_f = chk_runs_next(&p->firsts, &f);
	while ((rc = chk_runs_next(&p->tents, &te)) > 0) {
		while (has_f > 0 && f.oid < te.e.dir)
			has_f = chk_runs_next(&p->firsts, &f);
		if (has_f < 0)
			return has_f;
		if (has_f && f.oid == te.e.dir)
			rc = resolve(p, &te, f.rank, f.dir);
		else
			rc = resolve(p, &te, CHK_NONE, 0);
		if (rc)
			return rc;
	}
	chk_runs_free(&p->tents);
	chk_runs_free(&p->firsts);
	return rc ? rc : chk_runs_finish(&p->reaches);
}

static int pass_own(void *ctx, size_t i)
{
	struct pass *p = ctx;

	return chk_ent_own_name(p->c, &p->nents[i],
				&p->dirs[p->names[i].t].o);
}

/* The one name of every directory (dirgraph.c), as semantic.c does
 * over the tables: directories are rows of p->dirs here. */
static int phase_names(struct pass *p)
{
	uint32_t n = (uint32_t)p->ndirs, root = CHK_NONE;
	uint32_t *dotdot = malloc((n ? n : 1) * sizeof(*dotdot));
	uint32_t *first = malloc((n ? n : 1) * sizeof(*first));
	struct dirrow *r;
	int rc = -ENOMEM;

	if (!dotdot || !first)
		goto out;
	for (uint32_t v = 0; v < n; v++) {
		r = p->dirs[v].o.dotdot == CHK_NONE ? NULL :
		    dir_find(p, p->dirs[v].o.dotdot);
		dotdot[v] = r ? (uint32_t)(r - p->dirs) : CHK_NONE;
	}
	r = p->root == CHK_NONE ? NULL : dir_find(p, p->root);
	if (r)
		root = (uint32_t)(r - p->dirs);
	rc = chk_dir_names(n, root, dotdot, p->names, p->nnames, pass_own, p,
			   first);
	if (rc)
		goto out;
	for (uint32_t v = 0; v < n; v++) {
		struct dirrow *d;

		if (first[v] == CHK_NONE)
			continue;
		d = &p->dirs[p->names[first[v]].d];
		p->dirs[v].o.parent = d->rank;
		p->dirs[v].parent_oid = d->o.el2 & CHK_OID_MASK;
		p->dirs[v].o.flags |= CHK_OBJ_HAS_PARENT;
	}
	for (size_t i = 0; i < p->nnames; i++) {
		const struct chk_dedge *e = &p->names[i];

		if (first[e->t] != i)
			chk_second_name(p->c, &p->nents[i], e->t == root,
					chk_dir_above(n, first, p->names,
						      e->t, e->d));
	}
out:
	free(dotdot);
	free(first);
	return rc;
}

/* Phase 3: every directory, in key order. */
static void phase_dirs(struct pass *p)
{
	for (size_t i = 0; i < p->ndirs; i++) {
		const struct dirrow *d = &p->dirs[i];
		int root = d->rank == p->root;
		uint32_t want = root ? d->rank : d->o.parent;

		chk_sem_dir(p->c, &d->o, want != CHK_NONE &&
			    d->o.dotdot != want, d->o.dotdot == CHK_NONE ? 0 :
			    d->dotdot_oid, want == CHK_NONE ? 0 : root ?
			    d->o.el2 & CHK_OID_MASK : d->parent_oid);
	}
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int reached_oid(const struct pass *p, uint64_t oid)
{
	if (p->nreached == 0)	/* bsearch wants a table, even an empty one */
		return 0;
	return bsearch(&oid, p->reached, p->nreached, sizeof(oid),
		       u64_cmp) != NULL;
}

/* The directories reached from the root (the names of a directory are
 * the entries of its object id), in memory: one row per directory. */
static int walk_dirs(struct pass *p)
{
	uint64_t *queue = NULL;
	size_t head = 0, tail = 0, cap = 0;
	int rc = 0;

	if (p->root == CHK_NONE)
		return 0;
	if (R4_RESERVE(queue, cap, 1, 64) || !queue)
		return -ENOMEM;
	queue[tail++] = p->rootobj.el2 & CHK_OID_MASK;
	while (head < tail) {
		uint64_t oid = queue[head++];
		size_t lo = 0, hi = p->nedges;

		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (p->edges[mid].dir < oid)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (; lo < p->nedges && p->edges[lo].dir == oid; lo++) {
			struct dirrow *t = dir_find(p, p->edges[lo].t);

			if (!t || t->rank == p->root ||
			    (t->o.flags & CHK_OBJ_REACHED))
				continue;
			t->o.flags |= CHK_OBJ_REACHED;
			if (R4_RESERVE(queue, cap, tail + 1, 64)) {
				rc = -ENOMEM;
				goto out;
			}
			queue[tail++] = t->o.el2 & CHK_OID_MASK;
		}
	}
	qsort(queue, tail, sizeof(*queue), u64_cmp);
	p->reached = queue;
	p->nreached = tail;
	queue = NULL;
out:
	free(queue);
	return rc;
}

/* Phase 4: link counts and reachability, in key order. An object is
 * reached when it is the root or a reached directory names it. */
static int phase_links(struct pass *p)
{
	struct chk_obj o;
	struct reach rr;
	uint32_t r = 0;
	int has_r, rc;

	rc = chk_runs_rewind(&p->ranked);
	if (rc)
		return rc;
	has_r = chk_runs_next(&p->reaches, &rr);
	while ((rc = chk_runs_next(&p->ranked, &o)) > 0) {
		int reached = r == p->root;

		for (; has_r > 0 && rr.t <= r;
		     has_r = chk_runs_next(&p->reaches, &rr))
			if (rr.t == r && reached_oid(p, rr.dir))
				reached = 1;
		if (has_r < 0)
			return has_r;
		if (reached)
			o.flags |= CHK_OBJ_REACHED;
		chk_sem_links(p->c, &o, r == p->root);
		r++;
	}
	chk_runs_free(&p->reaches);
	return rc;
}

/* Phases 5 and 6: bodies (key order) against their objects, then the
 * size of each object against its body. */
static int phase_bodies(struct pass *p)
{
	struct chk_runs *br = &p->st->bodies;
	struct group g;
	struct chk_body b;
	int has_b, rc;

	rc = group_init(&g, &p->ranked);
	if (rc)
		goto out;
	rc = chk_runs_rewind(br);
	if (rc)
		goto out;
	has_b = chk_runs_next(br, &b);
	rc = group_next(&g);
	while (rc >= 0 && has_b > 0) {
		int r = rc ? key_cmp(&b, g.rec) : -1;

		if (r > 0) {
			rc = group_next(&g);
			continue;
		}
		if (r < 0) {
			chk_sem_body(p->c, &b, NULL);
		} else {
			uint64_t k = pick(p->n, g.first, g.first + g.m - 1);

			chk_sem_body(p->c, &b, (const struct chk_obj *)
				     (g.rec + (k - g.first) * g.rsz));
		}
		has_b = chk_runs_next(br, &b);
	}
	if (rc >= 0)
		rc = has_b;
	group_fini(&g);
	if (rc < 0)
		return rc;

	/* sizes: objects in key order, bodies grouped by key */
	rc = group_init(&g, br);
	if (rc)
		goto out;
	rc = chk_runs_rewind(&p->ranked);
	if (rc)
		goto out;
	rc = group_next(&g);
	if (rc < 0)
		goto out;
	for (;;) {
		struct chk_obj o;
		const struct chk_body *bb = NULL;
		int got = chk_runs_next(&p->ranked, &o);

		if (got <= 0) {
			rc = got;
			break;
		}
		while (rc > 0 && key_cmp(g.rec, &o) < 0)
			rc = group_next(&g);
		if (rc < 0)
			break;
		if (rc > 0 && !key_cmp(g.rec, &o))
			bb = (const struct chk_body *)(g.rec +
				(pick(br->total, g.first, g.first + g.m - 1) -
				 g.first) * g.rsz);
		chk_sem_size(p->c, &o, bb);
	}
out:
	group_fini(&g);
	return rc;
}

int chk_stream_semantic(struct chk *c)
{
	struct chk_stream *st = c->st;
	struct pass p;
	int rc;

	memset(&p, 0, sizeof(p));
	p.c = c;
	p.st = st;
	p.root = CHK_NONE;
	chk_progress(c, "objects", 0, 4);
	rc = st->rc;
	if (!rc && st->has_obj)
		rc = chk_runs_put(&st->objs, &st->sobj);
	if (!rc && st->has_ent)
		rc = chk_runs_put(&st->ents, &st->sent);
	if (!rc && st->has_body)
		rc = chk_runs_put(&st->bodies, &st->sbody);
	st->has_obj = st->has_ent = st->has_body = 0;
	chk_runs_init(&p.ranked, sizeof(struct chk_obj), NULL, st->budget);
	chk_runs_init(&p.tents, sizeof(struct tent), tent_cmp, st->budget);
	chk_runs_init(&p.byoid, sizeof(struct byoid), byoid_cmp, st->budget);
	chk_runs_init(&p.dups, sizeof(struct dup), NULL, st->budget);
	chk_runs_init(&p.firsts, sizeof(struct first), NULL, st->budget);
	chk_runs_init(&p.reaches, sizeof(struct reach), reach_cmp,
		      st->budget);
	if (!rc)
		rc = chk_runs_finish(&st->objs);
	if (!rc)
		rc = chk_runs_finish(&st->ents);
	if (!rc)
		rc = chk_runs_finish(&st->bodies);
	if (!rc)
		rc = pass_targets(&p);
	if (!rc)
		rc = chk_runs_finish(&p.ranked);
	if (!rc)
		rc = pass_ids(&p);
	if (!rc)
		rc = phase_objects(&p);
	if (!rc)
		chk_progress(c, "objects", 1, 4);
	if (!rc)
		rc = phase_entries(&p);
	if (!rc)
		rc = phase_names(&p);
	if (!rc) {
		phase_dirs(&p);
		chk_progress(c, "objects", 2, 4);
		rc = walk_dirs(&p);
	}
	if (!rc)
		rc = phase_links(&p);
	if (!rc) {
		chk_progress(c, "objects", 3, 4);
		rc = phase_bodies(&p);
	}
	if (!rc) {
		chk_sem_counts(c, p.n, p.root == CHK_NONE ? NULL : &p.rootobj);
		chk_progress(c, "objects", 4, 4);
	}
	if (rc && rc != -ENOMEM && !st->rc)
		st->rc = rc;
	chk_runs_free(&p.ranked);
	chk_runs_free(&p.tents);
	chk_runs_free(&p.byoid);
	chk_runs_free(&p.dups);
	chk_runs_free(&p.firsts);
	chk_runs_free(&p.reaches);
	free(p.dirs);
	free(p.edges);
	free(p.names);
	free(p.nents);
	free(p.reached);
	return rc;
}
