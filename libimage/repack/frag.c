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

/* The walk is in key order, so nothing is kept per object: at each
 * stat data a second cursor reads the object's body items (they follow
 * the stat data in key order: same locality, ordering and object id,
 * body type) or, for a directory, its entry items (keyed by the
 * directory's object id as their locality). Memory: two cursors and
 * the nworst worst. */

#define KEY_EL0(loc, type) ((uint64_t)(loc) << 4 | (uint64_t)(type))

/* The runs of the items from key k on while el[0..n) equal k's. */
static int obj_runs(struct tree_cursor *c, const struct fmt_key *k,
		    unsigned n, struct run *r, struct r4_error *err)
{
	int rc = tree_seek_ge(c, k, err);

	while (!rc) {
		struct tree_item it;
		struct fmt_extent40_unit u;

		rc = tree_cur(c, &it, err);
		if (rc)
			break;
		if (memcmp(it.key.el, k->el, n * sizeof(k->el[0])))
			break;
		if (it.plugin_id != FMT_ITEM_EXTENT40)
			run_add(r, it.blk, 1, 1);
		else
			for (unsigned j = 0;
			     !fmt_extent40_unit(it.body, it.len, j, &u); j++)
				if (fmt_extent40_kind(&u) ==
				    FMT_EXTENT_ALLOCATED)
					run_add(r, u.start, u.width, 1);
		rc = tree_next(c, err);
	}
	if (rc == R4_ENOTFOUND) {
		r4i_error_clear(err);
		rc = 0;
	}
	return rc;
}

/* The figure of the object whose stat data is item sd (-F); 0 for
 * objects that are neither directories nor regular files. 1 (and
 * nothing counted) for stat data libreiser4 cannot open either. */
static int obj_figure(struct tree_cursor *c, const struct tree_item *sd,
		      struct r4_frag_obj *o, struct r4_error *err)
{
	struct fmt_stat st;
	struct fmt_key k;
	struct run r = { 0, 0, 0 };
	unsigned n;
	int rc;

	memset(o, 0, sizeof(*o));
	o->oid = fmt_key_objectid(&sd->key);
	if (fmt_stat_decode(sd->body, sd->len, &st))
		return 1;
	memset(&k, 0, sizeof(k));
	if ((st.mode & MODE_FMT) == MODE_DIR) {
		k.el[0] = KEY_EL0(o->oid, FMT_KEY_FILE_NAME);
		n = 1;
	} else if ((st.mode & MODE_FMT) == MODE_REG) {
		k = sd->key;
		k.el[0] = KEY_EL0(fmt_key_locality(&sd->key), FMT_KEY_BODY);
		k.el[3] = 0;
		n = 3;
	} else {
		return 0;
	}
	rc = obj_runs(c, &k, n, &r, err);
	if (!rc && r.total) {
		o->bad = r.bad;
		o->total = r.total;
		o->ratio = (double)r.bad / (double)r.total;
	}
	return rc;
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
	struct tree_cursor c, body;
	struct fmt_key k;
	size_t nw = 0;
	uint64_t nsd = 0;
	double sum = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = tree_node(vol, vol->sb.root_block, vol->sb.tree_height, &tr, err);
	if (rc)
		return rc;
	memset(&k, 0, sizeof(k));
	tree_cursor_init(&c, vol);
	tree_cursor_init(&body, vol);
	rc = tree_seek_ge(&c, &k, err);
	while (!rc) {
		struct tree_item it;
		struct r4_frag_obj o;

		rc = tree_cur(&c, &it, err);
		if (!rc && it.plugin_id == FMT_ITEM_STAT40) {
			rc = obj_figure(&body, &it, &o, err);
			if (rc > 0) {
				rc = 0;
			} else if (!rc) {
				sum += o.ratio;
				nsd++;
				keep_worst(worst, nworst, &nw, &o);
			}
		}
		if (!rc)
			rc = tree_next(&c, err);
	}
	tree_cursor_fini(&body);
	tree_cursor_fini(&c);
	if (rc == R4_ENOTFOUND) {
		r4i_error_clear(err);
		rc = 0;
	}
	if (!rc) {
		out->tree_bad = tr.bad;
		out->tree_total = tr.total;
		out->tree = tr.total ? (double)tr.bad / (double)tr.total : 0;
		out->objects = nsd;
		out->data = nsd ? sum / (double)nsd : 0;
	}
	for (size_t i = 0; !rc && i < nw; i++) {
		rc = r4_oid_paths(vol, worst[i].oid, first_path, &worst[i],
				  err);
		rc = rc > 0 || rc == R4_ERANGE ? 0 : rc;	/* too deep */
	}
	if (nfound)
		*nfound = rc ? 0 : nw;
	return rc;
}

int r4_frag_file(struct r4_vol *vol, const char *path,
		 struct r4_frag_obj *out, struct r4_error *err)
{
	struct r4_objref ref;
	struct tree_cursor c, body;
	struct tree_item it;
	struct fmt_key k;
	int rc = r4_lookup(vol, path, &ref, err);

	memset(out, 0, sizeof(*out));
	if (rc)
		return rc;
	out->oid = ref.oid;
	fmt_key_sd(&k, ref.locality, ref.ordering, ref.oid);
	tree_cursor_init(&c, vol);
	tree_cursor_init(&body, vol);
	rc = tree_seek_ge(&c, &k, err);
	if (!rc)
		rc = tree_cur(&c, &it, err);
	if (!rc && it.plugin_id == FMT_ITEM_STAT40 &&
	    !memcmp(it.key.el, k.el, 3 * sizeof(k.el[0])))
		rc = obj_figure(&body, &it, out, err);
	rc = rc > 0 ? 0 : rc;
	tree_cursor_fini(&body);
	tree_cursor_fini(&c);
	if (rc == R4_ENOTFOUND) {
		r4i_error_clear(err);
		rc = 0;
	}
	if (!rc)
		snprintf(out->path, sizeof(out->path), "%s", path);
	return rc;
}
