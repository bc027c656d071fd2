/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the semantic phases of the streaming object pass (stream.c
 * gathers and joins the records first). Each phase reads the runs and
 * tables the joins built, in the order of semantic.c, so the problems
 * come out the same and in the same order: objects (key order), entries
 * (by directory, in the order found), the names of the directories,
 * directories, reachability (a walk over the directories from the root,
 * then entries by target), link counts, bodies, sizes, counters. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/check/stream_int.h"
#include "r4/util.h"

/* The rows are in rank order: halving. */
struct dirrow *chk_stream_dir_find(struct pass *p, uint32_t rank)
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

/* A name of a found target (not "." nor ".."): a reach record for
 * phase 4, and an edge for the walk when it names a directory. */
static int note_reach(struct pass *p, const struct tent *te)
{
	struct reach rr;
	int rc;

	memset(&rr, 0, sizeof(rr));
	rr.t = te->t;
	rr.dir = te->e.dir;
	rc = chk_runs_put(&p->reaches, &rr);
	if (rc || !te->tdir)
		return rc;
	if (R4_RESERVE(p->edges, p->capedges, p->nedges + 1, 64))
		return -ENOMEM;
	p->edges[p->nedges].dir = te->e.dir;
	p->edges[p->nedges++].t = te->t;
	return 0;
}

/* Entry e of directory dr names directory tr: a candidate for tr's one
 * name (phase_names). */
static int note_name(struct pass *p, const struct dirrow *dr,
		     const struct dirrow *tr, const struct chk_ent *e)
{
	if (R4_RESERVE(p->names, p->capnames, p->nnames + 1, 64) ||
	    R4_RESERVE(p->nents, p->capnents, p->nnames + 1, 64))
		return -ENOMEM;
	p->names[p->nnames].d = (uint32_t)(dr - p->dirs);
	p->names[p->nnames].t = (uint32_t)(tr - p->dirs);
	p->nents[p->nnames++] = *e;
	return 0;
}

/* Phase 2, one entry te of the directory of rank d (CHK_NONE: no object
 * has its id; ddir: that object is a directory): its problems, its
 * directory's counts, what the later phases need of it. */
static int resolve(struct pass *p, const struct tent *te, uint32_t d,
		   int ddir)
{
	struct chk *c = p->c;
	const struct chk_ent *e = &te->e;
	struct dirrow *dr, *tr;
	int rc;

	if (te->t == CHK_NONE)
		CHK_ENT_SAY0(c, e, CHK_M_ENTRY_MISSING);
	if (te->t == CHK_NONE && !e->flags && c->fixes_want)
		chk_fix_missing(p, e);
	if (te->t != CHK_NONE && !e->flags) {
		rc = note_reach(p, te);
		if (rc)
			return rc;
	}
	if (d == CHK_NONE || !ddir) {
		CHK_ENT_SAY0(c, e, d == CHK_NONE ? CHK_M_ENTRY_NO_DIR :
			     CHK_M_ENTRY_NOT_DIR);
		return 0;
	}
	dr = chk_stream_dir_find(p, d);
	if (!dr)
		return -EIO;	/* the first pass listed every directory */
	dr->o.nentries++;
	if (c->fixes_want)
		chk_fix_entry(p, te, d, dr);
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
	tr = chk_stream_dir_find(p, te->t);
	return tr ? note_name(p, dr, tr, e) : -EIO;
}

/* Phase 2: every entry, by directory in the order found. */
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

/* Whether entry i of p->names holds the name its directory was made
 * with (chk_dir_names' "own" test). */
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
		    chk_stream_dir_find(p, p->dirs[v].o.dotdot);
		dotdot[v] = r ? (uint32_t)(r - p->dirs) : CHK_NONE;
	}
	r = p->root == CHK_NONE ? NULL : chk_stream_dir_find(p, p->root);
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

		if (first[e->t] == i)
			continue;
		chk_second_name(p->c, &p->nents[i], e->t == root,
				chk_dir_above(n, first, p->names, e->t, e->d));
		if (p->c->fixes_want)
			chk_fix_second(p, &p->nents[i], &p->dirs[e->d]);
	}
out:
	free(dotdot);
	free(first);
	return rc;
}

/* Phase 3: every directory, in key order. */
static void phase_dirs(struct pass *p)
{
	if (p->c->fixes_want)
		chk_fix_dirs(p);
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

/* Two oids, for qsort and bsearch. */
static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Whether walk_dirs reached the directory of id oid. */
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
			struct dirrow *t = chk_stream_dir_find(p,
							     p->edges[lo].t);

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
		if (p->c->fixes_want)
			chk_fix_links(p, &o, r, chk_is_dir(&o) ?
				      chk_stream_dir_find(p, r) : NULL);
		r++;
	}
	chk_runs_free(&p->reaches);
	return rc;
}

/* Phase 5: every body (key order) against its object. */
static int phase_bodies(struct pass *p)
{
	struct chk_runs *br = &p->st->bodies;
	struct group g;
	struct chk_body b;
	int has_b = 0, rc;

	rc = chk_stream_group_init(&g, &p->ranked);
	if (!rc)
		rc = chk_runs_rewind(br);
	if (rc)
		goto out;
	has_b = chk_runs_next(br, &b);
	rc = chk_stream_group_next(&g);
	while (rc >= 0 && has_b > 0) {
		int r = rc ? chk_stream_key_cmp(&b, g.rec) : -1;

		if (r > 0) {
			rc = chk_stream_group_next(&g);
			continue;
		}
		if (r < 0) {
			chk_sem_body(p->c, &b, NULL);
		} else {
			uint64_t k = chk_stream_pick(p->n, g.first,
						     g.first + g.m - 1);

			chk_sem_body(p->c, &b, (const struct chk_obj *)
				     (g.rec + (k - g.first) * g.rsz));
		}
		has_b = chk_runs_next(br, &b);
	}
	if (rc >= 0)
		rc = has_b;
out:
	chk_stream_group_fini(&g);
	return rc;
}

/* Phase 6: the size of each object (key order) against its body, the
 * bodies grouped by key. */
static int phase_sizes(struct pass *p)
{
	struct chk_runs *br = &p->st->bodies;
	struct group g;
	int rc;

	rc = chk_stream_group_init(&g, br);
	if (!rc)
		rc = chk_runs_rewind(&p->ranked);
	if (!rc)
		rc = chk_stream_group_next(&g);
	while (rc >= 0) {
		struct chk_obj o;
		const struct chk_body *bb = NULL;
		int got = chk_runs_next(&p->ranked, &o);

		if (got <= 0) {
			rc = got;
			break;
		}
		while (rc > 0 && chk_stream_key_cmp(g.rec, &o) < 0)
			rc = chk_stream_group_next(&g);
		if (rc < 0)
			break;
		if (rc > 0 && !chk_stream_key_cmp(g.rec, &o))
			bb = (const struct chk_body *)(g.rec +
				(chk_stream_pick(br->total, g.first,
						 g.first + g.m - 1) -
				 g.first) * g.rsz);
		chk_sem_size(p->c, &o, bb);
		if (p->c->fixes_want)
			chk_fix_size(p->c, &o, bb);
	}
	chk_stream_group_fini(&g);
	return rc;
}

int chk_stream_phases(struct pass *p)
{
	int rc = phase_objects(p);

	if (!rc) {
		chk_progress(p->c, "objects", 1, 4);
		rc = phase_entries(p);
	}
	if (!rc)
		rc = phase_names(p);
	if (!rc) {
		phase_dirs(p);
		chk_progress(p->c, "objects", 2, 4);
		rc = walk_dirs(p);
	}
	if (!rc)
		rc = phase_links(p);
	if (!rc) {
		chk_progress(p->c, "objects", 3, 4);
		rc = phase_bodies(p);
	}
	if (!rc)
		rc = phase_sizes(p);
	if (!rc) {
		chk_sem_counts(p->c, p->n, p->root == CHK_NONE ? NULL :
			       &p->rootobj);
		if (p->c->fixes_want)
			chk_fix_sort(p->c);
		chk_progress(p->c, "objects", 4, 4);
	}
	return rc;
}
