/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: fragmentation as measurefs.reiser4 (reiser4progs 1.2.2)
 * defines it, so the figures agree with it on the same image.
 *
 * A run of blocks (start, count) is "bad" when start is more than one
 * block away, either way, from the last block of the run before it.
 *  -T: the runs every node above the leaves points at (node pointers:
 *      one block; extent units: their blocks, holes skipped), node by
 *      node in depth-first order (a node's items, then its children),
 *      starting from the root's block; bad runs / blocks.
 *  -F: the runs of one object's body items in key order: an extent
 *      unit's blocks, else the leaf holding the item (tail, ctail,
 *      directory entry items), the first run never bad; bad / blocks.
 *  -D: the mean of -F over every object that has stat data (objects
 *      without body, symlinks and devices, count as 0), summed in key
 *      order of their stat data. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/repack/repack_int.h"
#include "libimage/tree/tree.h"
#include "libimage/vol/volume.h"
#include "libimage/util/err.h"
#include "r4/read.h"
#include "format/item.h"
#include "format/plugin.h"

#define MODE_FMT 0170000u
#define MODE_DIR 0040000u
#define MODE_REG 0100000u

struct run {
	uint64_t last, bad, total;
};

static void run_add(struct run *r, uint64_t start, uint64_t count,
		    int first_free)
{
	if (first_free ? r->last > 0 : 1) {
		int64_t d = (int64_t)(r->last - start);

		if (d > 1 || d < -1)
			r->bad++;
	}
	r->total += count;
	r->last = start + count - 1;
}

/* ---- -T ------------------------------------------------------------------ */

static int tree_node(struct r4_vol *vol, uint64_t blk, unsigned level,
		     struct run *r, struct r4_error *err)
{
	struct io_block *b;
	unsigned nr;
	uint64_t *kids;
	size_t nk = 0;
	int rc = tree_node_get(vol, blk, level, &b, err);

	if (rc)
		return rc;
	nr = tree_node_nr(b->data);
	kids = malloc((nr + 1) * sizeof(*kids));
	if (!kids)
		rc = r4i_fail(err, -ENOMEM, "out of memory");
	for (unsigned i = 0; !rc && i < nr; i++) {
		struct tree_item it;
		struct fmt_extent40_unit u;
		uint64_t child;

		rc = tree_node_item(vol, b->data, blk, i, &it, err);
		if (rc)
			break;
		if (it.plugin_id == FMT_ITEM_NODEPTR40 &&
		    !fmt_nodeptr40_decode(it.body, it.len, &child)) {
			if (child)
				run_add(r, child, 1, 0);
			kids[nk++] = child;
		} else if (it.plugin_id == FMT_ITEM_EXTENT40) {
			for (unsigned k = 0;
			     !fmt_extent40_unit(it.body, it.len, k, &u); k++)
				if (fmt_extent40_kind(&u) ==
				    FMT_EXTENT_ALLOCATED)
					run_add(r, u.start, u.width, 0);
		}
	}
	io_cache_put(&vol->cache, b);
	for (size_t i = 0; !rc && level > 2 && i < nk; i++)
		rc = tree_node(vol, kids[i], level - 1, r, err);
	free(kids);
	return rc;
}

/* ---- -D, -F -------------------------------------------------------------- */

enum { CL_NAMES = 0, CL_BODY = 1 };

struct orec {
	uint64_t oid;
	int cls;
	struct run r;
};

struct sdrec {
	uint64_t oid;
	int cls;		/* -1: no body counted */
};

struct otab {
	struct orec *v;
	size_t cap, n;
	struct sdrec *sd;
	size_t nsd, capsd;
};

static size_t oslot(const struct otab *t, uint64_t oid, int cls)
{
	return (size_t)(((oid << 1 | (uint64_t)cls) * 0x9E3779B97F4A7C15ULL)
			>> 20) & (t->cap - 1);
}

static int ogrow(struct otab *t)
{
	struct otab n = { NULL, t->cap ? t->cap * 2 : 1024, 0, NULL, 0, 0 };

	n.v = calloc(n.cap, sizeof(*n.v));
	if (!n.v)
		return -ENOMEM;
	for (size_t i = 0; i < n.cap; i++)
		n.v[i].oid = UINT64_MAX;
	for (size_t i = 0; i < t->cap; i++) {
		size_t j;

		if (t->v[i].oid == UINT64_MAX)
			continue;
		j = oslot(&n, t->v[i].oid, t->v[i].cls);
		while (n.v[j].oid != UINT64_MAX)
			j = (j + 1) & (n.cap - 1);
		n.v[j] = t->v[i];
	}
	free(t->v);
	t->v = n.v;
	t->cap = n.cap;
	return 0;
}

static struct orec *oget(struct otab *t, uint64_t oid, int cls, int make)
{
	size_t j;

	if (make && (t->n + 1) * 2 > t->cap && ogrow(t))
		return NULL;
	if (!t->cap)
		return NULL;
	for (j = oslot(t, oid, cls); t->v[j].oid != UINT64_MAX;
	     j = (j + 1) & (t->cap - 1))
		if (t->v[j].oid == oid && t->v[j].cls == cls)
			return &t->v[j];
	if (!make)
		return NULL;
	t->v[j].oid = oid;
	t->v[j].cls = cls;
	memset(&t->v[j].r, 0, sizeof(t->v[j].r));
	t->n++;
	return &t->v[j];
}

static int sd_add(struct otab *t, const struct tree_item *it)
{
	struct fmt_stat st;
	struct sdrec s = { fmt_key_objectid(&it->key), -1 };

	if (fmt_stat_decode(it->body, it->len, &st))
		return 0;	/* libreiser4 cannot open it either */
	if ((st.mode & MODE_FMT) == MODE_DIR)
		s.cls = CL_NAMES;
	else if ((st.mode & MODE_FMT) == MODE_REG)
		s.cls = CL_BODY;
	if (t->nsd == t->capsd) {
		size_t n = t->capsd ? t->capsd * 2 : 1024;
		struct sdrec *v = realloc(t->sd, n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->sd = v;
		t->capsd = n;
	}
	t->sd[t->nsd++] = s;
	return 0;
}

static int item_add(struct otab *t, const struct tree_item *it)
{
	unsigned type = fmt_key_type(&it->key);
	struct fmt_extent40_unit u;
	struct orec *o;

	if (it->plugin_id == FMT_ITEM_STAT40)
		return sd_add(t, it);
	if (type == FMT_KEY_FILE_NAME)
		o = oget(t, fmt_key_locality(&it->key), CL_NAMES, 1);
	else if (type == FMT_KEY_BODY)
		o = oget(t, fmt_key_objectid(&it->key), CL_BODY, 1);
	else
		return 0;
	if (!o)
		return -ENOMEM;
	if (it->plugin_id != FMT_ITEM_EXTENT40) {
		run_add(&o->r, it->blk, 1, 1);
		return 0;
	}
	for (unsigned k = 0; !fmt_extent40_unit(it->body, it->len, k, &u); k++)
		if (fmt_extent40_kind(&u) == FMT_EXTENT_ALLOCATED)
			run_add(&o->r, u.start, u.width, 1);
	return 0;
}

static int scan_items(struct r4_vol *vol, struct otab *t,
		      struct r4_error *err)
{
	struct tree_cursor c;
	struct fmt_key k;
	int rc;

	memset(&k, 0, sizeof(k));
	tree_cursor_init(&c, vol);
	rc = tree_seek_ge(&c, &k, err);
	while (!rc) {
		struct tree_item it;

		rc = tree_cur(&c, &it, err);
		if (!rc && item_add(t, &it))
			rc = r4i_fail(err, -ENOMEM, "out of memory");
		if (!rc)
			rc = tree_next(&c, err);
	}
	tree_cursor_fini(&c);
	if (rc == R4_ENOTFOUND) {
		r4i_error_clear(err);
		rc = 0;
	}
	return rc;
}

static void otab_fini(struct otab *t)
{
	free(t->v);
	free(t->sd);
}

static void sd_ratio(struct otab *t, const struct sdrec *s,
		     struct r4_frag_obj *o)
{
	struct orec *r = s->cls < 0 ? NULL : oget(t, s->oid, s->cls, 0);

	memset(o, 0, sizeof(*o));
	o->oid = s->oid;
	if (r && r->r.total) {
		o->bad = r->r.bad;
		o->total = r->r.total;
		o->ratio = (double)r->r.bad / (double)r->r.total;
	}
}

static int first_path(void *ctx, const char *path)
{
	struct r4_frag_obj *o = ctx;

	snprintf(o->path, sizeof(o->path), "%s", path);
	return 1;
}

static int worse(const struct r4_frag_obj *a, const struct r4_frag_obj *b)
{
	if (a->ratio != b->ratio)
		return a->ratio > b->ratio;
	if (a->bad != b->bad)
		return a->bad > b->bad;
	return a->oid < b->oid;
}

/* Keep the nworst worst (insertion into a short sorted list). */
static void keep_worst(struct r4_frag_obj *w, size_t nworst, size_t *n,
		       const struct r4_frag_obj *o)
{
	size_t i;

	if (!nworst || !o->bad)
		return;
	if (*n == nworst && !worse(o, &w[nworst - 1]))
		return;
	i = *n < nworst ? (*n)++ : nworst - 1;
	while (i > 0 && worse(o, &w[i - 1])) {
		w[i] = w[i - 1];
		i--;
	}
	w[i] = *o;
}

int r4_frag_measure(struct r4_vol *vol, struct r4_frag *out,
		    struct r4_frag_obj *worst, size_t nworst, size_t *nfound,
		    struct r4_error *err)
{
	struct run tr = { vol->sb.root_block, 0, 0 };
	struct otab t = { 0 };
	size_t nw = 0;
	double sum = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = tree_node(vol, vol->sb.root_block, vol->sb.tree_height, &tr, err);
	if (!rc)
		rc = scan_items(vol, &t, err);
	for (size_t i = 0; !rc && i < t.nsd; i++) {
		struct r4_frag_obj o;

		sd_ratio(&t, &t.sd[i], &o);
		sum += o.ratio;
		keep_worst(worst, nworst, &nw, &o);
	}
	if (!rc) {
		out->tree_bad = tr.bad;
		out->tree_total = tr.total;
		out->tree = tr.total ? (double)tr.bad / (double)tr.total : 0;
		out->objects = t.nsd;
		out->data = t.nsd ? sum / (double)t.nsd : 0;
	}
	for (size_t i = 0; !rc && i < nw; i++) {
		rc = r4_oid_paths(vol, worst[i].oid, first_path, &worst[i],
				  err);
		rc = rc > 0 || rc == R4_ERANGE ? 0 : rc;	/* too deep */
	}
	if (nfound)
		*nfound = rc ? 0 : nw;
	otab_fini(&t);
	return rc;
}

int r4_frag_file(struct r4_vol *vol, const char *path,
		 struct r4_frag_obj *out, struct r4_error *err)
{
	struct r4_objref ref;
	struct otab t = { 0 };
	int rc = r4_lookup(vol, path, &ref, err);

	memset(out, 0, sizeof(*out));
	if (!rc)
		rc = scan_items(vol, &t, err);
	for (size_t i = 0; !rc && i < t.nsd; i++)
		if (t.sd[i].oid == ref.oid) {
			sd_ratio(&t, &t.sd[i], out);
			break;
		}
	if (!rc)
		snprintf(out->path, sizeof(out->path), "%s", path);
	otab_fini(&t);
	return rc;
}
