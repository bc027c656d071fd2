/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: r4_walk, the one walk of the namespace: depth first, each
 * directory's entries in key order, each directory entered once, with
 * no recursion and no limit of its own.
 *
 * A frame is kept for each directory on the way down: where its walk
 * stands (the item it was in, by key, block and position, and the next
 * entry of that item) and how long its path is. The tree is not held
 * between two entries (no pinned blocks per level): a frame finds its
 * item again by its key when the walk comes back up, and fails, naming
 * the directory, when the item is not where it was (items out of key
 * order), rather than loop or skip.
 *
 * By name (r4_walk_by_name), a frame instead holds its directory's
 * entries, read whole when it is entered (as r4_readdir reads them) and
 * sorted by name: memory in proportion to the widest directory on the
 * way down. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/obj/obj.h"
#include "libimage/vol/volume.h"
#include "libimage/util/err.h"
#include "libimage/tree/tree.h"
#include "format/plugin.h"

/* An entry of a directory read whole (by name). */
struct named {
	char *name;
	size_t len;
	struct r4_objref target;
};

struct frame {
	uint64_t dir;
	struct r4_walk_entry e;	/* the entry that entered it (leave) */
	size_t nameoff;
	struct fmt_key key;	/* the item the walk stands in */
	uint64_t blk;
	unsigned pos;
	int next;		/* its next entry; -1: not started */
	size_t plen;		/* the path's length at this directory */
	struct named *v;	/* by name: its entries, sorted (nv of them) */
	size_t nv, cap;
};

struct walk {
	struct r4_vol *vol;
	unsigned max_depth;
	int by_name;
	r4_walk_fn fn;
	void *ctx;
	struct r4_error *err;
	struct frame *st;	/* st[0 .. n - 1], st[n - 1] the deepest */
	size_t n, cap;
	char *path;
	size_t pcap;
	struct r4_u64map seen;	/* directories entered */
	int readerr;		/* entry(): the directory did not decode */
	char name[OBJ_NAME_MAX + 1];
};

static int path_set(struct walk *w, size_t at, const char *s, size_t len)
{
	if (R4_RESERVE(w->path, w->pcap, at + len + 2, 256))
		return r4i_fail(w->err, -ENOMEM, "out of memory for a path of "
			       "%zu bytes", at + len + 2);
	memcpy(w->path + at, s, len);
	w->path[at + len] = '\0';
	return 0;
}

static int push(struct walk *w, uint64_t dir, size_t plen,
		const struct r4_walk_entry *e)
{
	struct frame *f;
	int rc = r4_u64set_add(&w->seen, dir);

	if (rc < 0 || R4_RESERVE(w->st, w->cap, w->n + 1, 64))
		return r4i_fail(w->err, -ENOMEM, "out of memory for the walk");
	f = &w->st[w->n++];
	memset(f, 0, sizeof(*f));
	f->dir = dir;
	f->next = -1;
	f->plen = plen;
	if (e) {
		f->e = *e;
		f->nameoff = (size_t)(e->name - e->path);
	}
	return 0;
}

/* Frame f's list of entries (by name) freed. */
static void named_free(struct frame *f)
{
	for (size_t i = 0; i < f->nv; i++)
		free(f->v[i].name);
	free(f->v);
	f->v = NULL;
	f->nv = f->cap = 0;
}

/* obj_dir_iter's callback (by name): one more entry of the frame. */
static int named_add(void *ctx, const char *name, size_t len,
		     const struct fmt_key *key, const struct r4_objref *target)
{
	struct frame *f = ctx;
	struct named *n;

	(void)key;
	if (R4_RESERVE(f->v, f->cap, f->nv + 1, 16))
		return -ENOMEM;
	n = &f->v[f->nv];
	if (!(n->name = malloc(len + 1)))
		return -ENOMEM;
	memcpy(n->name, name, len);
	n->name[len] = '\0';
	n->len = len;
	n->target = *target;
	f->nv++;
	return 0;
}

/* Two entries by the bytes of their names, a shorter name first when
 * one begins the other. */
static int named_cmp(const void *a, const void *b)
{
	const struct named *x = a, *y = b;
	int c = memcmp(x->name, y->name, x->len < y->len ? x->len : y->len);

	return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* The cursor at frame f's first item, or at the item it stood in. */
static int seek(struct walk *w, struct frame *f, struct tree_cursor *c)
{
	struct fmt_key k = { { f->dir << 4 | FMT_KEY_FILE_NAME, 0, 0, 0 } };
	struct tree_item it;
	int rc;

	if (f->next < 0)
		return tree_seek_ge(c, &k, w->err);
	rc = tree_seek_ge(c, &f->key, w->err);
	while (!rc) {
		rc = tree_cur(c, &it, w->err);
		if (rc || fmt_key_cmp(&it.key, &f->key) != 0)
			break;
		if (it.blk == f->blk && it.pos == f->pos)
			return 0;
		rc = tree_next(c, w->err);
	}
	if (rc && rc != R4_ENOTFOUND)
		return rc;
	return r4i_fail(w->err, R4_ECORRUPT, "%s: directory %llx: its item "
		       "in node %llu, item %u, is not found again by its key "
		       "(items out of key order): the walk stops there",
		       obj_vol_name(w->vol), (unsigned long long)f->dir,
		       (unsigned long long)f->blk, f->pos);
}

/* 1 when target's stat data is a directory's; by name, *out = st
 * filled as r4_stat fills it (NULL when it cannot be). */
static int stat_of(struct walk *w, const struct r4_objref *target,
		   struct r4_stat *st, const struct r4_stat **out)
{
	struct obj_plugins pl;
	struct obj_sd sd;
	int is_dir;

	*out = NULL;
	if (obj_sd_get(w->vol, target, &sd, NULL))
		return 0;
	is_dir = sd.plugin == FMT_OBJ_DIR40;
	if (w->by_name && !obj_plugins_get(w->vol, target, &sd, &pl, NULL)) {
		obj_stat_fill(target, &sd, &pl, st);
		*out = st;
	}
	obj_sd_put(&sd);
	return is_dir;
}

/* The entry name[0..len) to target of the deepest frame: to fn, and 1
 * when it is a directory to enter (pushed: the frame's next entry set
 * first by the caller), 0 to go on, < 0 or fn's value to stop. */
static int meet(struct walk *w, const char *name, size_t len,
		const struct r4_objref *target, int same_name)
{
	struct frame *f = &w->st[w->n - 1];
	struct r4_walk_entry e;
	struct r4_stat st;
	int rc;

	e.target = *target;
	if ((len == 1 && name[0] == '.') ||
	    (len == 2 && name[0] == '.' && name[1] == '.'))
		return 0;
	w->path[f->plen] = '/';
	rc = path_set(w, f->plen + 1, name, len);
	if (rc)
		return rc;
	e.path = w->path;
	e.path_len = f->plen + 1 + len;
	e.name = w->path + f->plen + 1;
	e.name_len = len;
	e.dir = f->dir;
	e.depth = (unsigned)w->n;
	e.is_dir = stat_of(w, &e.target, &st, &e.st);
	e.same_name = same_name;
	e.again = e.is_dir && r4_u64map_find(&w->seen, e.target.oid) != NULL;
	e.leave = 0;
	e.error = 0;
	rc = w->fn(w->ctx, &e);
	if (rc == R4_WALK_SKIP || (!rc && (!e.is_dir || e.again)))
		return 0;
	if (rc)
		return rc;
	if (w->max_depth && w->n >= w->max_depth)
		return r4i_fail(w->err, R4_ERANGE, "%s: %s: directory %llx: "
			       "its entries lie deeper than %u folders: not "
			       "entered",
			       obj_vol_name(w->vol), e.path,
			       (unsigned long long)e.target.oid,
			       w->max_depth);
	rc = push(w, e.target.oid, e.path_len, &e);
	return rc ? rc : 1;
}

/* Entry u of item it of the deepest frame, as meet() says. */
static int entry(struct walk *w, const struct tree_item *it, int u)
{
	struct frame *f = &w->st[w->n - 1];
	struct r4_objref target;
	struct fmt_key ek;
	size_t len;
	int rc = obj_dir_item_entry(w->vol, it, u, w->name, &len, &ek,
				    &target, w->err);

	if (rc) {
		w->readerr = 1;
		return rc;
	}
	f->key = it->key;
	f->blk = it->blk;
	f->pos = it->pos;
	f->next = u + 1;	/* kept only when a directory is entered */
	return meet(w, w->name, len, &target, 0);
}

/* The deepest frame is done (rc 0) or its directory failed (rc): popped,
 * and fn told, unless it was the start directory's. */
static int leave(struct walk *w, int rc)
{
	struct frame *f;
	int er;

	if (rc && w->n == 1)
		return rc;		/* the start directory */
	named_free(&w->st[w->n - 1]);
	w->n--;
	if (!w->n)
		return 0;
	f = &w->st[w->n];
	w->path[f->plen] = '\0';
	f->e.path = w->path;
	f->e.name = w->path + f->nameoff;
	f->e.leave = 1;
	f->e.error = rc;
	f->e.st = NULL;		/* it lived during the entry's call */
	er = w->fn(w->ctx, &f->e);
	if (rc && (!er || er == R4_WALK_SKIP))
		r4i_error_clear(w->err);	/* said, and passed over */
	return er == R4_WALK_SKIP ? 0 : er;
}

/* By name: the deepest frame's entries, read whole and sorted when it
 * is entered, from where it stands, until it is done (popped) or a
 * directory is entered (pushed). */
static int step_by_name(struct walk *w)
{
	struct frame *f = &w->st[w->n - 1];
	int rc = 0, er = 0;

	if (f->next < 0) {
		f->next = 0;
		rc = obj_dir_iter(w->vol, f->dir, named_add, f, w->err);
		if (rc == -ENOMEM)
			rc = r4i_fail(w->err, rc, "%s: out of memory for the "
				      "entries of directory %llx",
				      obj_vol_name(w->vol),
				      (unsigned long long)f->dir);
		if (!rc && f->nv)
			qsort(f->v, f->nv, sizeof(*f->v), named_cmp);
	}
	while (!rc && !er && (size_t)f->next < f->nv) {
		const struct named *n = &f->v[f->next++];
		const struct named *p = n > f->v ? n - 1 : NULL;

		er = meet(w, n->name, n->len, &n->target, p &&
			  p->len == n->len && !memcmp(p->name, n->name,
						     n->len));
	}
	if (er)
		return er == 1 ? 0 : er;	/* 1: entered a directory */
	return leave(w, rc);
}

/* The deepest frame's entries from where it stands, until it is done
 * (popped) or a directory is entered (pushed). */
static int step(struct walk *w)
{
	struct frame *f = &w->st[w->n - 1];
	uint64_t dir = f->dir;
	struct tree_cursor c;
	struct tree_item it;
	int rc, n, er = 0, u = f->next < 0 ? 0 : f->next;

	tree_cursor_init(&c, w->vol);
	rc = seek(w, f, &c);
	while (!rc && !er) {
		rc = tree_cur(&c, &it, w->err);
		if (rc || fmt_key_type(&it.key) != FMT_KEY_FILE_NAME ||
		    fmt_key_locality(&it.key) != dir)
			break;
		if (it.plugin_id != FMT_ITEM_CDE40) {
			rc = r4i_fail(w->err, R4_EUNSUPP, "%s: tree node %llu, "
				      "item %u: directory item plugin %u is "
				      "not supported (only cde40)",
				      obj_vol_name(w->vol),
				      (unsigned long long)it.blk, it.pos,
				      it.plugin_id);
			break;
		}
		n = obj_dir_item_count(w->vol, &it, w->err);
		if (n < 0) {
			rc = n;
			break;
		}
		for (; !er && u < n; u++)
			er = entry(w, &it, u);
		if (!er) {
			u = 0;
			rc = tree_next(&c, w->err);
		}
	}
	tree_cursor_fini(&c);
	if (er && w->readerr) {
		rc = er;		/* the directory, not fn, failed */
		er = w->readerr = 0;
	}
	if (er)
		return er == 1 ? 0 : er;	/* 1: entered a directory */
	return leave(w, rc == R4_ENOTFOUND ? 0 : rc);
}

/* r4_walk and r4_walk_by_name. */
static int walk_run(struct r4_vol *vol, const struct r4_objref *start,
		    const char *start_path, unsigned max_depth, int by_name,
		    r4_walk_fn fn, void *ctx, struct r4_error *err)
{
	struct walk w;
	size_t slen = start_path ? strlen(start_path) : 0;
	int rc;

	memset(&w, 0, sizeof(w));
	w.vol = vol;
	w.max_depth = max_depth;
	w.by_name = by_name;
	w.fn = fn;
	w.ctx = ctx;
	w.err = err;
	if (slen && start_path[slen - 1] == '/')
		slen--;			/* "/" is the root's: no "//a" */
	rc = path_set(&w, 0, start_path ? start_path : "", slen);
	if (!rc)
		rc = push(&w, start->oid, slen, NULL);
	while (!rc && w.n)
		rc = by_name ? step_by_name(&w) : step(&w);
	while (w.n)
		named_free(&w.st[--w.n]);
	r4_u64map_fini(&w.seen);
	free(w.st);
	free(w.path);
	return rc;
}

int r4_walk(struct r4_vol *vol, const struct r4_objref *start,
	    const char *start_path, unsigned max_depth, r4_walk_fn fn,
	    void *ctx, struct r4_error *err)
{
	return walk_run(vol, start, start_path, max_depth, 0, fn, ctx, err);
}

int r4_walk_by_name(struct r4_vol *vol, const struct r4_objref *start,
		    const char *start_path, unsigned max_depth, r4_walk_fn fn,
		    void *ctx, struct r4_error *err)
{
	return walk_run(vol, start, start_path, max_depth, 1, fn, ctx, err);
}
