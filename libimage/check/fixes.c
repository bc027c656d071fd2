/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the object fixes' list of the bounded check (check.h: struct
 * chk_fix). The streaming object pass notes, as it meets them, the
 * changes the repair's object pass makes over the tables
 * (libimage/repair/objects.c: plan_entries, plan_lost, plan_values),
 * under the same conditions, with what each needs: the keys of the
 * object and its target, where an entry is, the counts. A round whose
 * problems the list serves (libimage/repair/repair.c: listed) is then
 * repaired without the whole volume's tables; the list grows with the
 * problems, and with one row more a directory for its first "..". */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "libimage/check/stream_int.h"
#include "r4/util.h"

struct chk_fix *chk_fix_add(struct chk *c, int kind, int code)
{
	struct chk_fix *f;

	if (c->fixes_lost)
		return NULL;
	if (c->nfixes >= UINT32_MAX ||
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

/* The planners' stages: entry changes, "." and ".." added, /lost+found,
 * values; dropped ones last. */
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
	default:
		return 4;
	}
}

static int fix_cmp(const void *a, const void *b)
{
	const struct chk_fix *x = a, *y = b;
	int r = chk_cmp3((uint64_t)stage(x), x->order0, x->order1,
			 (uint64_t)stage(y), y->order0, y->order1);

	return r ? r : chk_cmp3(x->idx, 0, 0, y->idx, 0, 0);
}

void chk_fix_sort(struct chk *c)
{
	if (!c->nfixes)
		return;
	qsort(c->fixes, c->nfixes, sizeof(*c->fixes), fix_cmp);
	while (c->nfixes && stage(&c->fixes[c->nfixes - 1]) == 4)
		c->nfixes--;
}
