/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: inspection: raw tree walks, item lookups, block owners and the
 * paths of an object. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/obj/obj.h"
#include "libimage/vol/volume.h"
#include "libimage/util/err.h"
#include "libimage/tree/tree.h"
#include "format/plugin.h"
#include "format/node.h"
#include "r4/util.h"

int r4_tree_walk(struct r4_vol *vol, r4_node_fn fn, void *ctx,
		 struct r4_error *err)
{
	return tree_walk(vol, fn, ctx, err);
}

static void loc_fill(const struct tree_item *it, struct r4_item_loc *out)
{
	out->blk = it->blk;
	out->level = it->level;
	out->pos = it->pos;
	out->plugin_id = it->plugin_id;
	memcpy(out->key, it->key.el, sizeof(out->key));
	out->body_off = (uint32_t)it->off;
	out->body_len = (uint32_t)it->len;
}

/* Items from key 'from' on while match() says they belong. */
static int items_range(struct r4_vol *vol, const struct fmt_key *from,
		       int (*match)(const struct fmt_key *, const void *),
		       const void *arg, r4_item_fn fn, void *ctx,
		       struct r4_error *err)
{
	struct r4_item_loc loc;
	struct tree_cursor c;
	struct tree_item it;
	int rc;

	tree_cursor_init(&c, vol);
	rc = tree_seek_ge(&c, from, err);
	while (!rc) {
		rc = tree_cur(&c, &it, err);
		if (rc || !match(&it.key, arg))
			break;
		loc_fill(&it, &loc);
		rc = fn(ctx, &loc);
		if (!rc)
			rc = tree_next(&c, err);
	}
	tree_cursor_fini(&c);
	return rc == R4_ENOTFOUND ? 0 : rc;
}

static int match_sd(const struct fmt_key *k, const void *arg)
{
	return fmt_key_cmp(k, arg) == 0;
}

static int match_dir(const struct fmt_key *k, const void *arg)
{
	const struct r4_objref *o = arg;

	return fmt_key_type(k) == FMT_KEY_FILE_NAME &&
	       fmt_key_locality(k) == o->oid;
}

static int match_body(const struct fmt_key *k, const void *arg)
{
	return obj_is_body(arg, k);
}

int r4_obj_items(struct r4_vol *vol, const struct r4_objref *obj,
		 r4_item_fn fn, void *ctx, struct r4_error *err)
{
	struct r4_objref o = *obj;
	struct fmt_key k;
	int rc;

	if (vol->keypol == FMT_KEY_SHORT)
		o.ordering = 0;
	obj_sd_key(vol, &o, &k);
	rc = items_range(vol, &k, match_sd, &k, fn, ctx, err);
	if (rc)
		return rc;
	fmt_key_min(&k);
	k.el[0] = o.oid << 4 | FMT_KEY_FILE_NAME;
	rc = items_range(vol, &k, match_dir, &o, fn, ctx, err);
	if (rc)
		return rc;
	fmt_key_body(&k, o.locality, o.ordering, o.oid, 0);
	return items_range(vol, &k, match_body, &o, fn, ctx, err);
}

/* ---- block owner ------------------------------------------------------- */

struct owner {
	struct r4_vol *vol;
	uint64_t blk;
	struct r4_objref *out;
	int *kind;
	struct r4_error *err;
};

enum { OWNER_FOUND = 1 };

static int owner_extent(struct owner *o, const struct tree_item *it)
{
	struct fmt_extent40_unit u;
	int n = fmt_extent40_units(it->body, it->len);

	for (int i = 0; i < n; i++) {
		fmt_extent40_unit(it->body, it->len, (unsigned)i, &u);
		if (fmt_extent40_kind(&u) == FMT_EXTENT_ALLOCATED &&
		    o->blk >= u.start && o->blk - u.start < u.width) {
			obj_ref_from_key(&it->key, o->out);
			*o->kind = R4_BLK_DATA;
			return OWNER_FOUND;
		}
	}
	return 0;
}

static int owner_node(void *ctx, uint64_t blk, unsigned level,
		      const uint8_t *node)
{
	struct owner *o = ctx;
	struct tree_item it;
	unsigned nr = tree_node_nr(node);
	int rc;

	if (blk == o->blk) {
		memset(o->out, 0, sizeof(*o->out));
		if (nr && !tree_node_item(o->vol, node, blk, 0, &it, o->err))
			obj_ref_from_key(&it.key, o->out);
		*o->kind = R4_BLK_NODE;
		return OWNER_FOUND;
	}
	if (level != FMT_NODE_TWIG_LEVEL)
		return 0;
	for (unsigned i = 0; i < nr; i++) {
		if (tree_node_item(o->vol, node, blk, i, &it, o->err))
			return R4_ECORRUPT;
		if (it.plugin_id != FMT_ITEM_EXTENT40)
			continue;
		rc = owner_extent(o, &it);
		if (rc)
			return rc;
	}
	return 0;
}

int r4_block_owner(struct r4_vol *vol, uint64_t blk, struct r4_objref *owner,
		   int *kind, struct r4_error *err)
{
	struct owner o = { vol, blk, owner, kind, err };
	int rc = tree_walk(vol, owner_node, &o, err);

	if (rc == OWNER_FOUND)
		return 0;
	if (rc)
		return rc;
	return r4i_fail(err, R4_ENOTFOUND, "%s: block %llu: nothing in the "
		       "tree points at it", obj_vol_name(vol),
		       (unsigned long long)blk);
}

/* ---- paths of an oid ------------------------------------------------- */

struct paths {
	uint64_t oid;
	r4_path_fn fn;
	void *ctx;
};

static int paths_fn(void *ctx, const struct r4_walk_entry *e)
{
	struct paths *p = ctx;

	if (e->leave)
		return e->error;
	return e->target.oid == p->oid ? p->fn(p->ctx, e->path) : 0;
}

int r4_oid_paths(struct r4_vol *vol, uint64_t oid, r4_path_fn fn, void *ctx,
		 struct r4_error *err)
{
	struct paths p = { oid, fn, ctx };
	struct r4_objref root;
	int rc = r4_root(vol, &root, err);

	if (!rc && oid == FMT_ROOT_OID)
		rc = fn(ctx, "/");
	if (!rc)
		rc = r4_walk(vol, &root, "", 0, paths_fn, &p, err);
	return rc;
}
