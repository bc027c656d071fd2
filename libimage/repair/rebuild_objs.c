/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: what the tree rebuild reads of the check's objects (rebuild.h,
 * rb_objs): their stat-data key, size, mode and compressed flag, in the
 * check's table order, kept in a scratch file in $TMPDIR (40 bytes a
 * file: 400 MB at 10^7 files, not in memory through the rebuild), or
 * in memory when $TMPDIR cannot take them. Only items of nodes the
 * walk mends look an object up (a damaged item offset or plugin id):
 * a look-up searches as chk_obj_find searches the table, its first 16
 * steps' records kept in memory (the same for every look-up: 2.6 MB),
 * then one read of the at most nobjs / 2^16 records left. A table no
 * larger than those 2^16 - 1 records stays in memory, no file. When
 * the repair built no tables for the rebuild (repair.c:
 * rebuild_listed), the records come from the objects the bounded check
 * kept in the tables' order (chk.ranked: sorted runs in $TMPDIR), read
 * once, the first steps' records taken as they pass. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "libimage/repair/rebuild.h"
#include "libimage/util/tmpfiles.h"

/* Records written at once. */
#define OBJS_CHUNK 1024
/* Steps of the search whose records stay in memory (objs_levels 0). */
#define OBJS_LEVELS 16
#define OBJS_LEVELS_MAX 30

static void obj_rec(struct rb_obj *r, const struct chk_obj *o)
{
	memset(r, 0, sizeof(*r));	/* the padding written too */
	r->el0 = o->el0;
	r->el1 = o->el1;
	r->el2 = o->el2;
	r->size = o->size;
	r->mode = o->mode;
	r->ccreg = !!(o->flags & CHK_OBJ_CCREG);
}

/* Records [lo, hi)'s midpoint at heap index i, and its children's
 * below, down to objs_levels steps: what the search visits first. */
static void top_fill(struct rb *b, const struct chk *c, size_t i,
		     size_t lo, size_t hi, unsigned depth)
{
	size_t mid = lo + (hi - lo) / 2;

	if (lo >= hi || depth >= b->objs_levels)
		return;
	obj_rec(&b->objs_top[i - 1], &c->objs[mid]);
	top_fill(b, c, 2 * i, lo, mid, depth + 1);
	top_fill(b, c, 2 * i + 1, mid + 1, hi, depth + 1);
}

static void objs_file_free(struct rb *b)
{
	free(b->objs_top);
	free(b->objs_win);
	b->objs_top = b->objs_win = NULL;
	if (b->objs_fd >= 0)
		close(b->objs_fd);
	b->objs_fd = -1;
}

/* The objects into the scratch file: 0, or -errno. */
static int objs_write(struct rb *b, const struct chk *c)
{
	struct rb_obj *buf = malloc(OBJS_CHUNK * sizeof(*buf));
	int rc = buf ? r4i_scratch_open("r4fsck-objects", &b->objs_fd)
		     : -ENOMEM;

	for (size_t i = 0; !rc && i < c->nobjs; i += OBJS_CHUNK) {
		size_t n = c->nobjs - i < OBJS_CHUNK ? c->nobjs - i
						     : OBJS_CHUNK;

		for (size_t k = 0; k < n; k++)
			obj_rec(&buf[k], &c->objs[i + k]);
		rc = r4i_pwrite_all(b->objs_fd, buf, n * sizeof(*buf),
				    (uint64_t)i * sizeof(*buf));
	}
	free(buf);
	return rc;
}

/* Where the records the search's first objs_levels steps visit go in
 * objs_top (heap index slot), by ascending record index: the heap
 * walked in order, the same midpoints as top_fill's. */
struct top_at {
	size_t idx, slot;
};

static void top_order(const struct rb *b, struct top_at *t, size_t *nt,
		      size_t i, size_t lo, size_t hi, unsigned depth)
{
	size_t mid = lo + (hi - lo) / 2;

	if (lo >= hi || depth >= b->objs_levels)
		return;
	top_order(b, t, nt, 2 * i, lo, mid, depth + 1);
	t[*nt].idx = mid;
	t[(*nt)++].slot = i;
	top_order(b, t, nt, 2 * i + 1, mid + 1, hi, depth + 1);
}

/* The next of the objects the bounded check kept (chk.ranked), as a
 * record: 0, or -errno (-EIO: fewer than it counted). */
static int ranked_next(struct chk_runs *r, struct rb_obj *out)
{
	struct chk_obj o;
	int rc = chk_runs_next(r, &o);

	if (rc <= 0)
		return rc ? rc : -EIO;
	obj_rec(out, &o);
	return 0;
}

/* The kept objects into the scratch file, in their order (the tables'),
 * each record the first steps visit into objs_top as it passes: 0, or
 * -errno. */
static int ranked_write(struct rb *b, struct chk_runs *r,
			const struct top_at *t, size_t nt)
{
	struct rb_obj *buf = malloc(OBJS_CHUNK * sizeof(*buf));
	int rc = buf ? r4i_scratch_open("r4fsck-objects", &b->objs_fd)
		     : -ENOMEM;
	size_t k = 0;

	for (size_t i = 0; !rc && i < b->nobjs; i += OBJS_CHUNK) {
		size_t n = b->nobjs - i < OBJS_CHUNK ? b->nobjs - i
						     : OBJS_CHUNK;

		for (size_t j = 0; !rc && j < n; j++) {
			rc = ranked_next(r, &buf[j]);
			if (!rc && k < nt && t[k].idx == i + j)
				b->objs_top[t[k++].slot - 1] = buf[j];
		}
		if (!rc)
			rc = r4i_pwrite_all(b->objs_fd, buf, n * sizeof(*buf),
					    (uint64_t)i * sizeof(*buf));
	}
	free(buf);
	return rc;
}

/* The file, the first steps' records and room for the window left
 * after them (at most nobjs >> objs_levels records), from the tables
 * or from the kept objects r: 0, or -errno (no file left). */
static int objs_to_file(struct rb *b, const struct chk *c,
			struct chk_runs *r)
{
	size_t ntop = ((size_t)1 << b->objs_levels) - 1, nt = 0;
	size_t nwin = (b->nobjs >> b->objs_levels) + 1;
	struct top_at *t = r ? malloc(ntop * sizeof(*t)) : NULL;
	int rc = -ENOMEM;

	b->objs_top = malloc(ntop * sizeof(*b->objs_top));
	b->objs_win = malloc(nwin * sizeof(*b->objs_win));
	if (b->objs_top && b->objs_win && r && t) {
		top_order(b, t, &nt, 1, 0, b->nobjs, 0);
		rc = ranked_write(b, r, t, nt);
	} else if (b->objs_top && b->objs_win && !r) {
		rc = objs_write(b, c);
	}
	free(t);
	if (rc)
		objs_file_free(b);
	else if (!r)
		top_fill(b, c, 1, 0, c->nobjs, 0);
	return rc;
}

/* The records in memory, from the tables or the kept objects r (read
 * again from their start): 0, or -errno. */
static int objs_in_memory(struct rb *b, const struct chk *c,
			  struct chk_runs *r)
{
	int rc = r ? chk_runs_rewind(r) : 0;

	b->objs = malloc((b->nobjs ? b->nobjs : 1) * sizeof(*b->objs));
	if (!b->objs)
		return -ENOMEM;
	for (size_t i = 0; !rc && i < b->nobjs; i++) {
		if (r)
			rc = ranked_next(r, &b->objs[i]);
		else
			obj_rec(&b->objs[i], &c->objs[i]);
	}
	return rc;
}

int rb_objs(struct rb *b)
{
	struct chk *c = &b->R->c;
	/* a rebuild from the bounded check (repair.c: rebuild_listed):
	 * its objects in the tables' order, no tables */
	struct chk_runs *r = c->has_ranked ? &c->ranked : NULL;
	int rc = r ? chk_runs_rewind(r) : 0;

	if (rc)
		return rc;
	rc = -1;
	b->nobjs = r ? (size_t)r->total : c->nobjs;
	if (!b->objs_levels || b->objs_levels > OBJS_LEVELS_MAX)
		b->objs_levels = OBJS_LEVELS;
	/* a table no larger than the first steps' records stays whole */
	if (!b->R->o->rebuild_objs_in_memory &&
	    b->nobjs >= ((size_t)1 << b->objs_levels))
		rc = objs_to_file(b, c, r);
	/* or $TMPDIR cannot take them: in memory */
	if (rc && (rc = objs_in_memory(b, c, r)))
		return rc;
	chk_tables_free(c);
	return 0;
}

void rb_objs_free(struct rb *b)
{
	free(b->objs);
	b->objs = NULL;
	objs_file_free(b);
}

/* Records [lo, hi) of the file into the window: 0, else the error is
 * kept (b->objs_err: the rebuild fails after its walk) and -1. */
static int objs_read(struct rb *b, size_t lo, size_t hi)
{
	int rc = r4i_pread_all(b->objs_fd, b->objs_win,
			       (hi - lo) * sizeof(*b->objs_win),
			       (uint64_t)lo * sizeof(*b->objs_win));

	if (rc && !b->objs_err)
		b->objs_err = rc;
	return rc ? -1 : 0;
}

/* The same search as chk_obj_find's over the same order: the same one
 * of two objects with one key. With the file, its first objs_levels
 * midpoints are objs_top's, then one read of what is left. */
int rb_obj_find(struct rb *b, uint64_t el0, uint64_t el1, uint64_t el2,
		struct rb_obj *out)
{
	const struct rb_obj *tab = b->objs_fd < 0 ? b->objs : NULL;
	size_t lo = 0, hi = b->nobjs, base = 0, i = 1;

	if (b->objs_err)
		return 0;
	for (unsigned depth = 0; lo < hi; depth++) {
		size_t mid = lo + (hi - lo) / 2;
		const struct rb_obj *o;
		int r;

		if (!tab && depth < b->objs_levels) {
			o = &b->objs_top[i - 1];
		} else {
			if (!tab) {
				if (objs_read(b, lo, hi))
					return 0;
				tab = b->objs_win;
				base = lo;
			}
			o = &tab[mid - base];
		}
		r = chk_cmp3(o->el0, o->el1, o->el2, el0, el1, el2);
		if (r == 0) {
			*out = *o;
			return 1;
		}
		if (r < 0) {
			lo = mid + 1;
			i = 2 * i + 1;
		} else {
			hi = mid;
			i = 2 * i;
		}
	}
	return 0;
}

int rb_named(struct rb *b)
{
	const struct chk *c = &b->R->c;

	b->named = NULL;
	b->nnamed = 0;
	if (!c->has_ranked)
		return rep_named_keys(b->R, &b->named, &b->nnamed);
	/* kept objects, no tables: only when the list was whole and named
	 * no stat data a key could go back to (repair.c: rebuild_listed),
	 * where plan_names would find no move */
	return c->fixes_want && !c->fixes_lost && !c->fixes_keys ? 0
								  : -EINVAL;
}
