/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: what the tree rebuild reads of the check's objects (rebuild.h,
 * rb_objs): their stat-data key, size, mode and compressed flag, in the
 * check's table order, kept in a scratch file in $TMPDIR (40 bytes a
 * file: 400 MB at 10^7 files, not in memory through the rebuild), or
 * in memory when $TMPDIR cannot take them. Only items of nodes the
 * walk mends look an object up (a damaged item offset or plugin id):
 * a look-up searches the file as chk_obj_find searches the table, a
 * read of one record a step until what is left fits one read. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "libimage/repair/rebuild.h"
#include "libimage/util/tmpfiles.h"

/* Records written or searched at once. */
#define OBJS_CHUNK 1024

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

/* The objects into the scratch file: 0, or -errno (no file left). */
static int objs_to_file(struct rb *b, const struct chk *c)
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
	if (rc && b->objs_fd >= 0) {
		close(b->objs_fd);
		b->objs_fd = -1;
	}
	return rc;
}

int rb_objs(struct rb *b)
{
	struct chk *c = &b->R->c;

	b->nobjs = c->nobjs;
	if (b->R->o->rebuild_objs_in_memory || objs_to_file(b, c)) {
		/* $TMPDIR cannot take them: in memory, as before */
		b->objs = malloc((c->nobjs ? c->nobjs : 1) * sizeof(*b->objs));
		if (!b->objs)
			return -ENOMEM;
		for (size_t i = 0; i < c->nobjs; i++)
			obj_rec(&b->objs[i], &c->objs[i]);
	}
	chk_tables_free(c);
	return 0;
}

void rb_objs_free(struct rb *b)
{
	free(b->objs);
	b->objs = NULL;
	if (b->objs_fd >= 0)
		close(b->objs_fd);
	b->objs_fd = -1;
}

/* Records [lo, hi) of the file into buf: 0, else the error is kept
 * (b->objs_err: the rebuild fails after its walk) and -1. */
static int objs_read(struct rb *b, size_t lo, size_t hi, struct rb_obj *buf)
{
	int rc = r4i_pread_all(b->objs_fd, buf, (hi - lo) * sizeof(*buf),
			       (uint64_t)lo * sizeof(*buf));

	if (rc && !b->objs_err)
		b->objs_err = rc;
	return rc ? -1 : 0;
}

/* The same search as chk_obj_find's over the same order: the same one
 * of two objects with one key. */
int rb_obj_find(struct rb *b, uint64_t el0, uint64_t el1, uint64_t el2,
		struct rb_obj *out)
{
	struct rb_obj win[OBJS_CHUNK];
	size_t lo = 0, hi = b->nobjs, base = 0;
	int in_win = b->objs_fd < 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct rb_obj *o;
		int r;

		if (!in_win && hi - lo <= OBJS_CHUNK) {
			if (objs_read(b, lo, hi, win))
				return 0;
			base = lo;
			in_win = 1;
		}
		if (b->objs_fd < 0) {
			o = &b->objs[mid];
		} else if (in_win) {
			o = &win[mid - base];
		} else {
			if (objs_read(b, mid, mid + 1, win))
				return 0;
			o = &win[0];
		}
		r = chk_cmp3(o->el0, o->el1, o->el2, el0, el1, el2);
		if (r == 0) {
			*out = *o;
			return 1;
		}
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}
