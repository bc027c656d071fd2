/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: orphans: objects of the live tree whose stat data no entry
 * names (reported by lsdel, recovered by undel). */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "r4/forensic.h"
#include "libimage/util/err.h"
#include "libimage/vol/volume.h"
#include "libimage/alloc/space.h"
#include "format/super.h"
#include "format/node.h"
#include "format/item.h"
#include "format/plugin.h"
#include "format/bitmap.h"
#include "format/cluster.h"
#include "libimage/util/compress.h"
#include "libimage/obj/obj.h"
#include "libimage/obj/ccreg.h"
#include "libimage/tree/tree.h"
#include "r4/util.h"
#include "libimage/forensic/forensic.h"

/* ---- Orphans ------------------------------------------------------------- */

static int entry_is_dot(const struct fmt_key *k,
			const struct fmt_cde40_entry *e,
			enum fmt_key_policy pol)
{
	struct fmt_key ek;
	char shortname[32];
	size_t n;

	if (e->name)
		return 0;	/* "." and ".." are short names */
	fmt_cde40_entry_key(k, e, &ek);
	n = fmt_key_entry_name(&ek, pol, shortname);
	return (n == 1 && shortname[0] == '.') ||
	       (n == 2 && shortname[0] == '.' && shortname[1] == '.');
}

static int orph_leaf(struct orphans *o, uint64_t blk, const uint8_t *node,
		     struct r4_error *err)
{
	struct r4_vol *vol = o->vol;
	unsigned n = tree_node_nr(node);

	for (unsigned i = 0; i < n; i++) {
		struct tree_item it;
		int rc = tree_node_item(vol, node, blk, i, &it, err);

		if (rc)
			return rc;
		if (it.plugin_id == FMT_ITEM_STAT40) {
			uint64_t oid = fmt_key_objectid(&it.key);

			if (oid == FMT_ROOT_OID ||
			    (o->only_oid && oid != o->only_oid))
				continue;
			if (R4_RESERVE(o->v, o->cap, o->n + 1, 64))
				return -ENOMEM;
			o->v[o->n].loc = fmt_key_locality(&it.key);
			o->v[o->n].ord = fmt_key_ordering(&it.key);
			o->v[o->n++].oid = oid;
		} else if (it.plugin_id == FMT_ITEM_CDE40) {
			int u, m = fmt_cde40_units(it.body, it.len,
						   vol->keypol);

			for (u = 0; u < m; u++) {
				struct fmt_cde40_entry e;
				uint64_t t;

				if (fmt_cde40_entry(it.body, it.len,
						    vol->keypol, (unsigned)u,
						    &e))
					break;
				t = fmt_key_objectid(&e.target);
				/* "." and ".." name the directory itself
				 * and its parent, not their target. */
				if (entry_is_dot(&it.key, &e, vol->keypol))
					continue;
				if (r4_u64set_add(&o->named, t) < 0)
					return -ENOMEM;
			}
		} else if (it.plugin_id == FMT_ITEM_BBOX40) {
			struct fmt_bbox40 bb;
			unsigned *v;

			if (fmt_bbox40_decode(it.body, it.len, vol->keypol,
					      &bb))
				continue;
			v = r4_u64map_get(&o->links,
					  fmt_key_objectid(&bb.sdkey), NULL);
			if (!v)
				return -ENOMEM;
			*v = (unsigned)fmt_key_offset(&it.key) + 1;
		}
	}
	return 0;
}

struct orph_walk {
	struct orphans *o;
	struct r4_error *err;
};

static int orph_node(void *ctx, uint64_t blk, unsigned level,
		     const uint8_t *node)
{
	struct orph_walk *w = ctx;

	if (level != FMT_NODE_LEAF_LEVEL)
		return 0;
	return orph_leaf(w->o, blk, node, w->err);
}

void fsc_orphans_fini(struct orphans *o)
{
	free(o->v);
	r4_u64map_fini(&o->named);
	r4_u64map_fini(&o->links);
}

int fsc_orphans_find(struct r4_vol *vol, struct orphans *o,
			struct r4_error *err)
{
	struct orph_walk w = { o, err };
	int rc;

	o->vol = vol;
	r4_u64map_init(&o->named, 0);
	r4_u64map_init(&o->links, sizeof(unsigned));
	rc = tree_walk(vol, orph_node, &w, err);
	if (rc == -ENOMEM)
		rc = r4i_fail(err, rc, "%s: out of memory", vol->dev->path);
	return rc;
}

/* Describe orphan v (its stat data read through the tree). */
int fsc_orphan_describe(struct r4_vol *vol, struct orphans *o,
			   const struct oref *v, const struct fscan *s,
			   struct r4_deleted *d, struct r4_error *err)
{
	struct r4_objref ref = { v->loc, v->ord, v->oid };
	uint64_t flush = 0;
	unsigned *link;
	int rc;

	memset(d, 0, sizeof(*d));
	rc = r4_stat(vol, &ref, &d->st, err);
	if (rc)
		return rc;
	d->orphan = 1;
	link = r4_u64map_find(&o->links, v->oid);
	d->safe_link = link ? (int)*link - 1 : -1;
	d->found = d->recoverable = d->st.size;
	for (size_t k = 0; s && k < s->nnm; k++)
		if (s->nm[k].oid == v->oid &&
		    (!d->name_len || s->nm[k].flush >= flush)) {
			flush = s->nm[k].flush;
			d->name_len = s->nm[k].len;
			memcpy(d->name, s->nm[k].name, s->nm[k].len + 1);
			d->parent = s->nm[k].parent;
		}
	return 0;
}

int fsc_orphans_report(struct r4_vol *vol, const struct fscan *s,
			  r4_deleted_fn fn, void *ctx, struct r4_error *err)
{
	struct orphans o = { 0 };
	struct r4_deleted d;
	int rc = fsc_orphans_find(vol, &o, err);

	for (size_t i = 0; i < o.n && !rc; i++) {
		if (r4_u64map_find(&o.named, o.v[i].oid))
			continue;
		rc = fsc_orphan_describe(vol, &o, &o.v[i], s, &d, err);
		if (!rc)
			rc = fn(ctx, &d);
	}
	fsc_orphans_fini(&o);
	return rc;
}
