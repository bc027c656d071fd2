/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the object fixes' list of the bounded check (check.h: struct
 * chk_fix). The streaming object pass notes, as it meets them, the
 * changes the repair's object pass makes over the tables
 * (libimage/repair/objects.c: plan_entries, plan_lost, plan_values),
 * under the same conditions, with what each needs: the keys of the
 * object and its target, where an entry is, the counts. A round whose
 * problems the list serves (libimage/repair/repair.c: listed) is then
 * repaired without the whole volume's tables; the list grows with the
 * problems (each directory's row in the pass holds its first ".."
 * until the parents are known: 24 bytes more a directory). Entries
 * that name no stat data are served only when no stat data nobody
 * names could be theirs (the key pass, repair/keys.c, would move it
 * there: chk.fixes_keys); both kinds are listed until that test, and
 * both are problems. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "libimage/check/stream_int.h"
#include "r4/util.h"

#define MODE_FMT 0170000u
#define MODE_REG 0100000u
#define FIX_BYTES ((size_t)16 << 20)	/* the list's default budget */

struct chk_fix *chk_fix_add(struct chk *c, int kind, int code)
{
	size_t budget = c->opts && c->opts->fix_bytes ? c->opts->fix_bytes :
			FIX_BYTES;
	struct chk_fix *f;

	if (c->fixes_lost)
		return NULL;
	/* past the budget, as when memory runs out: the round's fixes
	 * come from the tables */
	if (c->nfixes >= UINT32_MAX ||
	    c->nfixes + 1 > budget / sizeof(*c->fixes) ||
	    R4_RESERVE(c->fixes, c->capfixes, c->nfixes + 1, 64)) {
		c->fixes_lost = 1;
		return NULL;
	}
	f = &c->fixes[c->nfixes];
	memset(f, 0, sizeof(*f));
	f->idx = (uint32_t)c->nfixes++;
	f->kind = (uint8_t)kind;
	f->code = code;
	return f;
}

static void fix_obj(struct chk_fix *f, const struct chk_obj *o)
{
	f->el0 = o->el0;
	f->el1 = o->el1;
	f->el2 = o->el2;
}

static void fix_target(struct chk_fix *f, const struct chk_obj *o)
{
	f->t0 = o->el0;
	f->t1 = o->el1;
	f->t2 = o->el2;
}

/* A change of an entry found at (blk, item, unit), seq-th, of directory
 * dr, pointing at directory t (NULL: removed). */
static struct chk_fix *ent_fix(struct pass *p, const struct dirrow *dr,
			       uint64_t blk, unsigned item, unsigned unit,
			       uint32_t seq, int code, const struct dirrow *t)
{
	struct chk_fix *f = chk_fix_add(p->c, t ? CHK_FIX_ENT_SET :
					CHK_FIX_ENT_DEL, code);

	if (!f)
		return NULL;
	fix_obj(f, &dr->o);
	if (t)
		fix_target(f, &t->o);
	f->blk = blk;
	f->item = (uint16_t)item;
	f->unit = (uint16_t)unit;
	f->order0 = dr->o.el2 & CHK_OID_MASK;
	f->order1 = seq;
	return f;
}

void chk_fix_entry(struct pass *p, const struct tent *te, uint32_t d,
		   struct dirrow *dr)
{
	const struct chk_ent *e = &te->e;
	struct chk_fix *f;

	dr->dots |= e->flags;
	if (e->flags & CHK_ENT_DOT) {
		if (te->t != d)
			ent_fix(p, dr, e->blk, e->item, e->unit, e->seq,
				te->t == CHK_NONE ? R4_CHK_ENTRY : R4_CHK_DOT,
				dr);
		return;
	}
	if (e->flags & CHK_ENT_DOTDOT) {
		/* right or wrong once the parents are known: the first
		 * in the directory's row, any other on the list */
		if (!dr->has_dd) {
			dr->has_dd = 1;
			dr->dd_blk = e->blk;
			dr->dd_item = e->item;
			dr->dd_unit = e->unit;
			dr->dd_seq = e->seq;
			dr->dd_t = te->t;
			return;
		}
		f = ent_fix(p, dr, e->blk, e->item, e->unit, e->seq, 0, dr);
		if (f) {
			f->kind = CHK_FIX_DOTDOT;
			f->rank = d;
			f->t = te->t;
		}
		return;
	}
	if (te->t == CHK_NONE)
		ent_fix(p, dr, e->blk, e->item, e->unit, e->seq, R4_CHK_ENTRY,
			NULL);
}

void chk_fix_second(struct pass *p, const struct chk_ent *e,
		    const struct dirrow *dr)
{
	ent_fix(p, dr, e->blk, e->item, e->unit, e->seq, R4_CHK_DIR_LINK,
		NULL);
}

void chk_fix_missing(struct pass *p, const struct chk_ent *e)
{
	struct chk_fix *f = chk_fix_add(p->c, CHK_FIX_MISSING, R4_CHK_ENTRY);

	if (!f)
		return;
	f->t0 = e->t0;
	f->t1 = e->t1;
	f->t2 = e->t2;
}

/* The directory ".." of directory dr must name: itself for the root,
 * else its parent (NULL: none known). */
static struct dirrow *dotdot_want(struct pass *p, struct dirrow *dr)
{
	if (dr->rank == p->root)
		return dr;
	return dr->o.parent == CHK_NONE ? NULL :
	       chk_stream_dir_find(p, dr->o.parent);
}

/* A ".." entry of dr naming rank t: pointed at the directory it must
 * name when it names another; 0 when it is right. */
static int dotdot_fix(struct pass *p, struct dirrow *dr, uint32_t t,
		      struct chk_fix *f)
{
	struct dirrow *want = dotdot_want(p, dr);

	if (!want || t == want->rank)
		return 0;
	f->kind = CHK_FIX_ENT_SET;
	f->code = t == CHK_NONE ? R4_CHK_ENTRY : R4_CHK_DOT;
	fix_target(f, &want->o);
	return 1;
}

static void dot_add(struct pass *p, const struct dirrow *dr, unsigned dots,
		    const struct dirrow *t)
{
	struct chk_fix *f = chk_fix_add(p->c, CHK_FIX_DOT_ADD, R4_CHK_DOT);

	if (!f)
		return;
	fix_obj(f, &dr->o);
	fix_target(f, &t->o);
	f->val = dots;
	f->order0 = dr->rank;
	f->order1 = (uint32_t)dots;
}

void chk_fix_dirs(struct pass *p)
{
	struct chk *c = p->c;
	struct chk_fix tmp;

	for (size_t i = 0; i < c->nfixes; i++) {
		struct chk_fix *f = &c->fixes[i];
		struct dirrow *dr;

		if (f->kind != CHK_FIX_DOTDOT)
			continue;
		dr = chk_stream_dir_find(p, f->rank);
		if (!dr || !dotdot_fix(p, dr, f->t, f))
			f->kind = 0;	/* dropped by chk_fix_sort */
	}
	for (size_t i = 0; i < p->ndirs; i++) {
		struct dirrow *dr = &p->dirs[i], *want = dotdot_want(p, dr);

		memset(&tmp, 0, sizeof(tmp));
		if (dr->has_dd && dotdot_fix(p, dr, dr->dd_t, &tmp)) {
			ent_fix(p, dr, dr->dd_blk, dr->dd_item, dr->dd_unit,
				dr->dd_seq, tmp.code, want);
		}
		if (!(dr->dots & CHK_ENT_DOT))
			dot_add(p, dr, 0, dr);
		if (!(dr->dots & CHK_ENT_DOTDOT) && want)
			dot_add(p, dr, 1, want);
	}
}

void chk_fix_links(struct pass *p, const struct chk_obj *o, uint32_t r,
		   const struct dirrow *d)
{
	uint64_t want = (uint64_t)o->links + (r == p->root);
	struct chk_fix *f;

	if (!(o->flags & CHK_OBJ_LW))
		return;
	if (!(o->flags & CHK_OBJ_NAMED) && r != p->root) {
		f = chk_fix_add(p->c, CHK_FIX_UNNAMED, R4_CHK_ENTRY);
		if (f)
			fix_obj(f, o);
	}
	if (!(o->flags & CHK_OBJ_REACHED) && p->root != CHK_NONE &&
	    (chk_is_dir(o) ? !d || d->o.parent == CHK_NONE : !o->links)) {
		f = chk_fix_add(p->c, CHK_FIX_LOST, R4_CHK_UNREACHABLE);
		if (f) {
			fix_obj(f, o);
			f->isdir = (uint8_t)chk_is_dir(o);
			f->order0 = r;
		}
	}
	if (o->nlink != want && (o->flags & CHK_OBJ_REACHED)) {
		f = chk_fix_add(p->c, CHK_FIX_NLINK, R4_CHK_NLINK);
		if (f) {
			fix_obj(f, o);
			f->val = want;
			f->old = o->nlink;
			f->order0 = r;
		}
	}
	if (chk_is_dir(o) && d && o->size != d->o.nentries) {
		f = chk_fix_add(p->c, CHK_FIX_DIR_SIZE, R4_CHK_DIR_SIZE);
		if (f) {
			fix_obj(f, o);
			f->val = d->o.nentries;
			f->old = o->size;
			f->order0 = r;
			f->order1 = 1;
		}
	}
}

void chk_fix_size(struct chk *c, const struct chk_obj *o,
		  const struct chk_body *b)
{
	struct chk_fix *f;
	uint64_t end;

	if (!(o->flags & CHK_OBJ_LW) || (o->mode & MODE_FMT) != MODE_REG ||
	    !chk_size_wrong(c, o, b, &end))
		return;
	f = chk_fix_add(c, CHK_FIX_FILE_SIZE, R4_CHK_FILE_SIZE);
	if (!f)
		return;
	fix_obj(f, o);
	f->val = end;
	f->old = o->size;
	f->kinds = b ? b->kinds : 0;
}

/* The planners' stages: entry changes, "." and ".." added, /lost+found,
 * values (file sizes after the others); last the dropped ones and the
 * key pass's keys. */
static int stage(const struct chk_fix *f)
{
	switch (f->kind) {
	case CHK_FIX_ENT_SET:
	case CHK_FIX_ENT_DEL:
		return 0;
	case CHK_FIX_DOT_ADD:
		return 1;
	case CHK_FIX_LOST:
		return 2;
	case CHK_FIX_NLINK:
	case CHK_FIX_DIR_SIZE:
		return 3;
	case CHK_FIX_FILE_SIZE:
		return 4;
	default:
		return 5;
	}
}

static int fix_cmp(const void *a, const void *b)
{
	const struct chk_fix *x = a, *y = b;
	int r = chk_cmp3((uint64_t)stage(x), x->order0, x->order1,
			 (uint64_t)stage(y), y->order0, y->order1);

	return r ? r : chk_cmp3(x->idx, 0, 0, y->idx, 0, 0);
}

/* Keys (el[0..2]) by el[2], then el[0] and el[1]. */
static int by_oid(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return chk_cmp3(x[2], x[0], x[1], y[2], y[0], y[1]);
}

/* The first of the n keys k (three words each, sorted by cmp) at or
 * past want. */
static size_t lower(const uint64_t *k, size_t n, const uint64_t *want,
		    int (*cmp)(const void *, const void *))
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cmp(&k[3 * mid], want) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Whether one of the u unnamed keys (sorted by key in byk, by object id
 * in byo) differs in one element from key m, among those the key pass
 * looks at (keys.c: candidates): the same locality and ordering, or
 * the same object id. */
static int fits(const uint64_t *byk, const uint64_t *byo, size_t u,
		const uint64_t *m)
{
	uint64_t w[3] = { m[0], m[1], 0 }, wo[3] = { 0, 0, m[2] };

	for (size_t i = lower(byk, u, w, chk_stream_key_cmp);
	     i < u && byk[3 * i] == m[0] && byk[3 * i + 1] == m[1]; i++)
		if (byk[3 * i + 2] != m[2])
			return 1;
	for (size_t i = lower(byo, u, wo, by_oid);
	     i < u && byo[3 * i + 2] == m[2]; i++)
		if ((byo[3 * i] != m[0]) + (byo[3 * i + 1] != m[1]) == 1)
			return 1;
	return 0;
}

/* c->fixes_keys from the list's keys (from: its unnamed and missing
 * ones, after the others). */
static void keys_test(struct chk *c, size_t from)
{
	size_t n = c->nfixes - from, u = 0;
	uint64_t *byk = malloc((n ? n : 1) * 3 * sizeof(*byk));
	uint64_t *byo = malloc((n ? n : 1) * 3 * sizeof(*byo));

	if (!byk || !byo) {
		c->fixes_lost = 1;
		goto out;
	}
	for (size_t i = from; i < c->nfixes; i++) {
		const struct chk_fix *f = &c->fixes[i];

		if (f->kind != CHK_FIX_UNNAMED)
			continue;
		byk[3 * u] = f->el0;
		byk[3 * u + 1] = f->el1;
		byk[3 * u++ + 2] = f->el2;
	}
	memcpy(byo, byk, u * 3 * sizeof(*byk));
	qsort(byk, u, 3 * sizeof(*byk), chk_stream_key_cmp);
	qsort(byo, u, 3 * sizeof(*byo), by_oid);
	for (size_t i = from; i < c->nfixes && u && !c->fixes_keys; i++) {
		const struct chk_fix *f = &c->fixes[i];
		uint64_t m[3] = { f->t0, f->t1, f->t2 };

		if (f->kind == CHK_FIX_MISSING && fits(byk, byo, u, m))
			c->fixes_keys = 1;
	}
out:
	free(byk);
	free(byo);
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* c->fixes_shift from the list's file sizes: what a tail body holds
 * past its size (its end less its size, modulo 2^64) against what
 * another's misses; a superset of the pairs rep_bounds_shifted looks
 * for (it also wants the two bodies side by side in one node). */
static void shift_test(struct chk *c)
{
	size_t u = 0;
	uint64_t *d = malloc((c->nfixes ? c->nfixes : 1) * sizeof(*d));

	if (!d) {
		c->fixes_lost = 1;
		return;
	}
	for (size_t i = 0; i < c->nfixes; i++) {
		const struct chk_fix *f = &c->fixes[i];

		if (f->kind == CHK_FIX_FILE_SIZE && f->kinds == CHK_BODY_TAIL)
			d[u++] = f->val - f->old;
	}
	qsort(d, u, sizeof(*d), u64_cmp);
	for (size_t i = 0; i < u && !c->fixes_shift; i++) {
		uint64_t want = 0 - d[i];
		const uint64_t *at = bsearch(&want, d, u, sizeof(*d), u64_cmp);

		/* 2^63 is its own opposite: another of it */
		if (at && (want != d[i] || (i + 1 < u && d[i + 1] == want) ||
			   (i && d[i - 1] == want)))
			c->fixes_shift = 1;
	}
	free(d);
}

void chk_fix_sort(struct chk *c)
{
	size_t n;

	if (!c->nfixes)
		return;
	qsort(c->fixes, c->nfixes, sizeof(*c->fixes), fix_cmp);
	for (n = c->nfixes; n && stage(&c->fixes[n - 1]) == 5; n--)
		;
	keys_test(c, n);
	c->nfixes = n;
	shift_test(c);
}
