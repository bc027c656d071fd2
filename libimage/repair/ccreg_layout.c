/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the repair of compressed (ccreg40) files that read right but
 * that the Reiser4 kernel cannot take (doc/compress.md §7, steps 5 to
 * 8). Per file, every change the check named:
 *   - cluster 0 a hole while a later cluster has items (the kernel
 *     panics reading the file): cluster 0 stored as an all-zero cluster
 *     (compressed when the mode and plugin would compress it, §4), the
 *     stat data's bytes one cluster more (§2.3);
 *   - items of one disk cluster side by side in one leaf: one item
 *     (the tree layer joins the items of a leaf it writes that continue
 *     each other inside a cluster, libimage/tree/ilist.c);
 *   - a file longer than one cluster in compression mode conv: lattd
 *     stored in its plugin set, as the kernel does when it ends conv;
 *   - an item that runs across its cluster's end (libreiser4 writes
 *     them): cut at each cluster end it crosses, every piece under the
 *     key of the byte it starts with; no byte moves.
 * And one of ordinary files the kernel reads short (doc/kernel.md
 * §2.2): tail40 items of one file side by side in a leaf, each
 * continuing the one before (older r4kit writers left them): one item,
 * as the tree layer joins them.
 * None loses or changes a byte the file reads; all but the cut of a
 * crossing item are safe for preen, that one only -y does. Every change goes through a
 * transaction, R->batch per transaction. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/repair/repair.h"
#include "libimage/obj/ccreg.h"
#include "libimage/obj/write.h"
#include "libimage/tree/tree.h"
#include "libimage/txn/txn.h"
#include "libimage/util/compress.h"
#include "libimage/util/err.h"
#include "r4/util.h"
#include "format/checksum.h"
#include "format/cluster.h"
#include "format/item.h"
#include "format/plugin.h"

#define MODE_FMT 0170000u
#define MODE_REG 0100000u

enum cl_kind { CL_HOLE0, CL_MERGE, CL_CONV, CL_CROSS, CL_TMERGE };

struct clop {
	int kind, code;
	struct r4_objref ref;
	unsigned shift, compress, cmode;
	uint64_t off;		/* the item's key offset (CL_MERGE,
				 * CL_TMERGE: the first of the run's) */
	uint64_t units;		/* its units (CL_MERGE, CL_TMERGE: the
				 * run's) */
	uint64_t size;		/* the file's size */
	uint64_t blk;		/* the leaf (CL_HOLE0: of the first item) */
	unsigned items;		/* CL_MERGE, CL_TMERGE: items in the run */
	uint64_t stored;	/* CL_HOLE0: bytes stored for cluster 0 */
	char *who;		/* "compressed file /p (object 1f)", or NULL */
};

struct clfix {
	struct rep *R;
	struct clop *v;
	size_t n, cap;
	/* planning one file */
	const struct r4_objref *ref;
	struct obj_ccreg cc;
	uint64_t size;
	int err;
};

static struct clop *op_add(struct clfix *f, int kind, int code,
			   const struct r4_objref *ref)
{
	struct clop *p;

	if (R4_RESERVE(f->v, f->cap, f->n + 1, 32))
		return NULL;
	p = &f->v[f->n++];
	memset(p, 0, sizeof(*p));
	p->kind = kind;
	p->code = code;
	p->ref = *ref;
	return p;
}

static void body_key(const struct r4_vol *vol, const struct r4_objref *ref,
		     uint64_t off, struct fmt_key *k)
{
	fmt_key_body(k, ref->locality, vol->keypol == FMT_KEY_LARGE ?
		     ref->ordering : 0, ref->oid, off);
}

/* ---- planning --------------------------------------------------------- */

static char *who_of_file(struct rep *R, const struct r4_objref *ref)
{
	char path[1024], buf[1100];

	chk_ccreg_path(&R->c, ref, path, sizeof(path));
	if (!path[0])
		return NULL;
	snprintf(buf, sizeof(buf), "compressed file %s (object %llx)", path,
		 (unsigned long long)ref->oid);
	return strdup(buf);
}

static int plan_item(void *ctx, const struct chk_ccreg_flaw *it)
{
	struct clfix *f = ctx;
	struct rep *R = f->R;
	struct clop *p, *last = f->n ? &f->v[f->n - 1] : NULL;

	switch (it->kind) {
	case CHK_CCREG_HOLE0:
		if (!R->codes[R4_CHK_CC_HOLE0])
			return 0;
		p = op_add(f, CL_HOLE0, R4_CHK_CC_HOLE0, f->ref);
		break;
	case CHK_CCREG_UNMERGED:
		if (!R->codes[R4_CHK_CC_UNMERGED])
			return 0;
		/* a run of items, each continuing the one before */
		if (last && last->kind == CL_MERGE && last->blk == it->blk &&
		    !memcmp(&last->ref, f->ref, sizeof(*f->ref)) &&
		    last->off + last->units == it->off) {
			last->units += it->units;
			last->items++;
			return 0;
		}
		p = op_add(f, CL_MERGE, R4_CHK_CC_UNMERGED, f->ref);
		if (p) {
			p->off = it->prev_off;
			p->units = it->prev_units + it->units;
			p->items = 2;
		}
		break;
	case CHK_CCREG_CROSS:
		if (!R->codes[R4_CHK_CC_CROSS] ||
		    R->o->mode != R4_REPAIR_FIX)
			return 0;
		p = op_add(f, CL_CROSS, R4_CHK_CC_CROSS, f->ref);
		if (p) {
			p->off = it->off;
			p->units = it->units;
		}
		break;
	default:
		return 0;
	}
	if (!p)
		return -ENOMEM;
	if (it->kind != CHK_CCREG_UNMERGED)
		p->off = it->off;
	p->blk = it->blk;
	p->shift = f->cc.shift;
	p->compress = f->cc.compress;
	p->cmode = f->cc.cmode;
	p->size = f->size;
	return 0;
}

/* The layout changes of one file with a ctail40 body. */
static int plan_body(struct clfix *f, const struct r4_objref *ref,
		     const struct obj_sd *sd)
{
	struct r4_error e = { 0 };
	size_t before = f->n;
	char *who;
	int rc;

	if (obj_ccreg_params(f->R->vol, ref, sd, &f->cc, &e))
		return 0;	/* left to the compressed-cluster pass */
	f->ref = ref;
	f->size = sd->st.size;
	rc = chk_ccreg_layout(f->R->vol, ref, f->cc.shift, sd->st.size,
			   plan_item, f, &e);
	if (rc == -ENOMEM)
		return rc;
	if (f->n == before)
		return 0;
	who = who_of_file(f->R, ref);
	for (size_t i = before; i < f->n; i++)
		f->v[i].who = i == before ? who : (who ? strdup(who) : NULL);
	return 0;
}

static int plan_conv(struct clfix *f, const struct chk_obj *o)
{
	struct r4_objref ref = { o->el0 >> 4, o->el1, o->el2 };
	struct r4_error e = { 0 };
	struct obj_sd sd;
	struct obj_ccreg cc;
	struct clop *p;
	int rc = 0;

	if (obj_sd_get(f->R->vol, &ref, &sd, &e))
		return 0;
	if (sd.plugin == FMT_OBJ_CCREG40 &&
	    !obj_ccreg_params(f->R->vol, &ref, &sd, &cc, &e) &&
	    cc.cmode == FMT_CMODE_CONV &&
	    sd.st.size > ((uint64_t)1 << cc.shift)) {
		p = op_add(f, CL_CONV, R4_CHK_CC_CONV, &ref);
		if (!p) {
			rc = -ENOMEM;
		} else {
			p->shift = cc.shift;
			p->size = sd.st.size;
			p->blk = sd.blk;
			p->who = who_of_file(f->R, &ref);
		}
	}
	obj_sd_put(&sd);
	return rc;
}

/* tail40 items of one file side by side in a leaf: one op per run of
 * items continuing each other. */
static int plan_tails(struct clfix *f)
{
	struct chk *c = &f->R->c;

	for (size_t i = 0; i < c->ntunm; i++) {
		const struct chk_tpair *t = &c->tunm[i];
		struct clop *last = f->n ? &f->v[f->n - 1] : NULL;
		struct r4_objref ref;
		char path[1024];

		obj_ref_from_key(&t->a, &ref);
		if (last && last->kind == CL_TMERGE && last->blk == t->blk &&
		    !memcmp(&last->ref, &ref, sizeof(ref)) &&
		    last->off + last->units > fmt_key_offset(&t->a)) {
			last->units = t->end - last->off;
			last->items++;
			continue;
		}
		last = op_add(f, CL_TMERGE, R4_CHK_TAIL_UNMERGED, &ref);
		if (!last)
			return -ENOMEM;
		last->off = fmt_key_offset(&t->a);
		last->units = t->end - last->off;
		last->items = 2;
		last->blk = t->blk;
		chk_ccreg_path(c, &ref, path, sizeof(path));
		last->who = path[0] ? strdup(path) : NULL;
	}
	return 0;
}

static int plan(struct clfix *f)
{
	struct rep *R = f->R;
	struct chk *c = &R->c;
	int rc = 0;

	c->paths_named = 0;
	if (R->codes[R4_CHK_CC_HOLE0] || R->codes[R4_CHK_CC_UNMERGED] ||
	    R->codes[R4_CHK_CC_CROSS]) {
		for (size_t i = 0; i < c->nbodies && !rc; i++) {
			const struct chk_body *b = &c->bodies[i];
			struct fmt_key k = { { b->el0, b->el1, b->el2, 0 } };
			uint32_t o = chk_obj_find(c, b->el0, b->el1, b->el2);
			struct r4_error e = { 0 };
			struct r4_objref ref;
			struct obj_sd sd;

			if (b->kinds != CHK_BODY_CTAIL || o == CHK_NONE ||
			    !(c->objs[o].flags & CHK_OBJ_LW) ||
			    (c->objs[o].mode & MODE_FMT) != MODE_REG)
				continue;
			obj_ref_from_key(&k, &ref);
			if (obj_sd_get(R->vol, &ref, &sd, &e))
				continue;
			if (sd.plugin == FMT_OBJ_CCREG40)
				rc = plan_body(f, &ref, &sd);
			obj_sd_put(&sd);
		}
	}
	/* tail40 items of one file side by side in a leaf */
	if (!rc && R->codes[R4_CHK_TAIL_UNMERGED])
		rc = plan_tails(f);
	if (R->codes[R4_CHK_CC_CONV]) {
		for (size_t i = 0; i < c->nobjs && !rc; i++) {
			const struct chk_obj *o = &c->objs[i];

			if ((o->flags & CHK_OBJ_CCREG) &&
			    (o->flags & CHK_OBJ_LW) &&
			    (o->mode & MODE_FMT) == MODE_REG &&
			    o->size > ((uint64_t)1 << FMT_CTAIL40_MIN_SHIFT))
				rc = plan_conv(f, o);
		}
	}
	return rc ? r4i_fail(R->err, rc, "out of memory for the repair") : 0;
}

/* ---- making the changes ----------------------------------------------- */

/* The item with key offset off of p's file: its key, level and a copy of
 * its body (*body malloc'ed). */
static int item_at(struct r4_txn *x, const struct clop *p, uint64_t off,
		   struct fmt_key *key, unsigned *level, uint8_t **body,
		   size_t *len, struct r4_error *err)
{
	struct tree_cursor c;
	struct tree_item it;
	struct fmt_key k;
	int rc;

	*body = NULL;
	body_key(x->vol, &p->ref, off, &k);
	tree_cursor_init(&c, x->vol);
	rc = tree_seek_ge(&c, &k, err);
	if (!rc)
		rc = tree_cur(&c, &it, err);
	if (!rc && (!obj_is_body(&p->ref, &it.key) ||
		    fmt_key_offset(&it.key) != off ||
		    it.plugin_id != FMT_ITEM_CTAIL40 ||
		    it.len <= FMT_CTAIL40_HDR_SIZE))
		rc = R4_ENOTFOUND;
	if (!rc) {
		*key = it.key;
		*level = it.level;
		*len = it.len;
		*body = malloc(it.len);
		if (!*body)
			rc = r4i_fail(err, -ENOMEM, "out of memory");
		else
			memcpy(*body, it.body, it.len);
	}
	tree_cursor_fini(&c);
	if (rc == R4_ENOTFOUND)
		rc = r4i_fail(err, rc, "object %llx: no ctail40 item at "
			     "offset %llu", (unsigned long long)p->ref.oid,
			     (unsigned long long)off);
	return rc;
}

/* The disk cluster of an all-zero logical cluster of lsize bytes, as the
 * kernel would store it (doc/compress.md §3.2, §4): *out points at dc
 * (the packed stream and its Adler-32) or at zero (raw). */
static int zero_cluster(const struct clop *p, const uint8_t *zero,
			size_t lsize, uint8_t *dc, size_t cap,
			const uint8_t **out, size_t *len)
{
	struct r4_codec *cd;
	size_t slen = 0;
	uint32_t sum;
	int rc = 0;

	*out = zero;
	*len = lsize;
	if (p->cmode == FMT_CMODE_NONE ||
	    lsize < fmt_compress_min_size(p->compress))
		return 0;
	cd = r4_codec_new(p->compress, &rc);
	if (!cd)
		return rc == -ENOMEM ? rc : 0;
	rc = r4_codec_compress(cd, zero, lsize, dc, cap - FMT_DC_SUM_SIZE,
			       &slen);
	r4_codec_free(cd);
	if (rc == -ENOMEM)
		return rc;
	if (rc || slen + FMT_DC_SUM_SIZE >= lsize)
		return 0;	/* §4.2: kept only when shorter */
	sum = fmt_adler32(dc, slen);
	for (int i = 0; i < FMT_DC_SUM_SIZE; i++)
		dc[slen + (size_t)i] = (uint8_t)(sum >> (8 * i));
	*out = dc;
	*len = slen + FMT_DC_SUM_SIZE;
	return 0;
}

static int do_hole0(struct r4_txn *x, struct clop *p, struct r4_error *err)
{
	size_t lsize = fmt_cluster_lsize(p->size, 0, p->shift);
	size_t cap = r4_codec_bound(p->compress, lsize) + FMT_DC_SUM_SIZE;
	size_t max = tree_max_item(&x->mod), done = 0, len;
	uint8_t *zero = calloc(1, lsize), *dc = malloc(cap), *item = malloc(max);
	const uint8_t *src;
	struct obj_sd sd;
	int rc;

	if (!zero || !dc || !item || max <= FMT_CTAIL40_HDR_SIZE) {
		rc = r4i_fail(err, -ENOMEM, "out of memory");
		goto out;
	}
	rc = zero_cluster(p, zero, lsize, dc, cap, &src, &len);
	if (rc) {
		rc = r4i_fail(err, rc, "out of memory");
		goto out;
	}
	/* doc/compress.md §3.1: the first item at the cluster start */
	while (!rc && done < len) {
		size_t n = len - done;
		struct fmt_key k;

		if (n > max - FMT_CTAIL40_HDR_SIZE)
			n = max - FMT_CTAIL40_HDR_SIZE;
		item[0] = (uint8_t)p->shift;
		memcpy(item + FMT_CTAIL40_HDR_SIZE, src + done, n);
		body_key(x->vol, &p->ref, done, &k);
		rc = tree_insert(&x->mod, 1, &k, FMT_ITEM_CTAIL40, item,
				 n + FMT_CTAIL40_HDR_SIZE, err);
		done += n;
	}
	p->stored = len;
	if (!rc)
		rc = obj_sd_get(x->vol, &p->ref, &sd, err);
	if (!rc) {
		sd.st.rdev_or_bytes += (uint64_t)1 << p->shift;	/* §2.3 */
		rc = obj_sd_write(x, &p->ref, &sd.st, 0, err);
		obj_sd_put(&sd);
	}
out:
	free(zero);
	free(dc);
	free(item);
	return rc;
}

/* Whether an item with key offset off of p's file still starts there. */
static int item_starts(struct r4_txn *x, const struct clop *p, uint64_t off,
		       struct r4_error *err)
{
	struct tree_cursor c;
	struct tree_item it;
	struct fmt_key k;
	int rc;

	body_key(x->vol, &p->ref, off, &k);
	tree_cursor_init(&c, x->vol);
	rc = tree_seek_ge(&c, &k, err);
	if (!rc)
		rc = tree_cur(&c, &it, err);
	if (!rc)
		rc = obj_is_body(&p->ref, &it.key) &&
		     fmt_key_offset(&it.key) == off;
	tree_cursor_fini(&c);
	return rc == R4_ENOTFOUND ? 0 : rc;
}

/* The run's first item written back as it is: the tree layer joins the
 * items of the leaf it writes that continue it inside its cluster
 * (join_ctail in libimage/tree/ilist.c). Checked: the second item must
 * be gone. */
static int do_merge(struct r4_txn *x, const struct clop *p,
		    struct r4_error *err)
{
	struct fmt_key k;
	unsigned level;
	uint8_t *body;
	size_t len, n;
	int rc = item_at(x, p, p->off, &k, &level, &body, &len, err);

	if (rc)
		return rc;
	n = len - FMT_CTAIL40_HDR_SIZE;
	rc = tree_replace(&x->mod, level, &k, FMT_ITEM_CTAIL40, body, len,
			  err);
	free(body);
	if (!rc)
		rc = item_starts(x, p, p->off + n, err);
	if (rc > 0)
		rc = r4i_fail(err, R4_ECORRUPT, "object %llx: the ctail40 "
			     "items at offsets %llu and %llu were not joined",
			     (unsigned long long)p->ref.oid,
			     (unsigned long long)p->off,
			     (unsigned long long)(p->off + n));
	return rc;
}

/* A run of tail40 items of one file side by side in a leaf: its first
 * item written back as it is, and the tree layer joins the items of the
 * leaf it writes that continue each other (emit() in
 * libimage/tree/modify.c). Checked: no item may start inside the run. */
static int do_tmerge(struct r4_txn *x, const struct clop *p,
		     struct r4_error *err)
{
	struct tree_cursor c;
	struct tree_item it;
	struct fmt_key k;
	uint8_t *body = NULL;
	unsigned level = 0;
	size_t len = 0;
	int rc;

	body_key(x->vol, &p->ref, p->off, &k);
	tree_cursor_init(&c, x->vol);
	rc = tree_seek_ge(&c, &k, err);
	if (!rc)
		rc = tree_cur(&c, &it, err);
	if (!rc && (!obj_is_body(&p->ref, &it.key) ||
		    fmt_key_offset(&it.key) != p->off ||
		    it.plugin_id != FMT_ITEM_TAIL40 || !it.len))
		rc = R4_ENOTFOUND;
	if (!rc) {
		k = it.key;
		level = it.level;
		len = it.len;
		body = malloc(len);
		if (!body)
			rc = r4i_fail(err, -ENOMEM, "out of memory");
		else
			memcpy(body, it.body, len);
	}
	tree_cursor_fini(&c);
	if (rc == R4_ENOTFOUND)
		return r4i_fail(err, rc, "object %llx: no tail40 item at "
			       "offset %llu", (unsigned long long)p->ref.oid,
			       (unsigned long long)p->off);
	if (rc)
		return rc;
	rc = tree_replace(&x->mod, level, &k, FMT_ITEM_TAIL40, body, len,
			  err);
	free(body);
	if (!rc)
		rc = item_starts(x, p, p->off + len, err);
	if (rc > 0)
		rc = r4i_fail(err, R4_ECORRUPT, "object %llx: the tail40 "
			     "items at offsets %llu and %llu were not joined",
			     (unsigned long long)p->ref.oid,
			     (unsigned long long)p->off,
			     (unsigned long long)(p->off + len));
	return rc;
}

static int do_conv(struct r4_txn *x, const struct clop *p,
		   struct r4_error *err)
{
	struct obj_sd sd;
	struct fmt_pset *ps;
	int rc = obj_sd_get(x->vol, &p->ref, &sd, err);
	unsigned i;

	if (rc)
		return rc;
	ps = &sd.st.pset;
	for (i = 0; i < ps->count && ps->member[i] != FMT_PSET_CMODE; i++)
		;
	if (i == ps->count) {
		if (ps->count >= FMT_PSET_MAX_SLOTS) {
			obj_sd_put(&sd);
			return r4i_fail(err, R4_ERANGE, "object %llx: its "
				       "plugin set is full",
				       (unsigned long long)p->ref.oid);
		}
		/* in member order, as the kernel writes them */
		for (i = ps->count; i > 0 &&
		     ps->member[i - 1] > FMT_PSET_CMODE; i--) {
			ps->member[i] = ps->member[i - 1];
			ps->id[i] = ps->id[i - 1];
		}
		ps->count++;
		ps->member[i] = FMT_PSET_CMODE;
	}
	ps->id[i] = FMT_CMODE_LATTD;
	sd.st.mask |= 1u << FMT_SDEXT_PSET;
	rc = obj_sd_write(x, &p->ref, &sd.st, 0, err);
	obj_sd_put(&sd);
	return rc;
}

/* Cut at every cluster end inside the item; the pieces keep its shift
 * byte and its bytes in order. */
static int do_cross(struct r4_txn *x, const struct clop *p,
		    struct r4_error *err)
{
	uint64_t cs = (uint64_t)1 << p->shift;
	struct tree_newitem *w = NULL;
	uint8_t *body, **bufs = NULL;
	struct fmt_key k;
	unsigned level;
	size_t len, units, n = 0, done = 0;
	int rc = item_at(x, p, p->off, &k, &level, &body, &len, err);

	if (rc)
		return rc;
	units = len - FMT_CTAIL40_HDR_SIZE;
	w = calloc(units / cs + 2, sizeof(*w));
	bufs = calloc(units / cs + 2, sizeof(*bufs));
	if (!w || !bufs)
		rc = r4i_fail(err, -ENOMEM, "out of memory");
	while (!rc && done < units) {
		uint64_t at = p->off + done;
		size_t m = (size_t)(cs - (at & (cs - 1)));

		if (m > units - done)
			m = units - done;
		bufs[n] = malloc(m + FMT_CTAIL40_HDR_SIZE);
		if (!bufs[n]) {
			rc = r4i_fail(err, -ENOMEM, "out of memory");
			break;
		}
		bufs[n][0] = body[0];
		memcpy(bufs[n] + FMT_CTAIL40_HDR_SIZE,
		       body + FMT_CTAIL40_HDR_SIZE + done, m);
		body_key(x->vol, &p->ref, at, &w[n].key);
		w[n].pid = FMT_ITEM_CTAIL40;
		w[n].body = bufs[n];
		w[n].len = m + FMT_CTAIL40_HDR_SIZE;
		n++;
		done += m;
	}
	if (!rc)
		rc = tree_put_items(&x->mod, level, &k, 1, w, n, err);
	for (size_t i = 0; bufs && i < n; i++)
		free(bufs[i]);
	free(bufs);
	free(w);
	free(body);
	return rc;
}

static int do_op(struct r4_txn *x, struct clop *p, struct r4_error *err)
{
	switch (p->kind) {
	case CL_HOLE0:
		return do_hole0(x, p, err);
	case CL_MERGE:
		return do_merge(x, p, err);
	case CL_CONV:
		return do_conv(x, p, err);
	case CL_TMERGE:
		return do_tmerge(x, p, err);
	default:
		return do_cross(x, p, err);
	}
}

/* Tail items of one file joined (tail-unmerged). */
static void report_tmerge(struct rep *R, const struct clop *p)
{
	rep_action(R, p->code, p->blk, p->ref.oid, 0, 0,
		   "file %s%s(object %llx), tree node %llu: %u tail40 items "
		   "from offset %llu joined into one of %llu bytes, as the "
		   "Reiser4 kernel keeps a file's tail",
		   p->who ? p->who : "", p->who ? " " : "",
		   (unsigned long long)p->ref.oid, (unsigned long long)p->blk,
		   p->items, (unsigned long long)p->off,
		   (unsigned long long)p->units);
}

static void report_op(struct rep *R, const struct clop *p)
{
	char oid[64];
	const char *who = p->who;
	uint64_t cs = (uint64_t)1 << p->shift;

	if (!who) {
		snprintf(oid, sizeof(oid), "compressed file %llx",
			 (unsigned long long)p->ref.oid);
		who = oid;
	}
	switch (p->kind) {
	case CL_TMERGE:
		report_tmerge(R, p);
		break;
	case CL_HOLE0:
		rep_action(R, p->code, p->blk, p->ref.oid, 0, 0,
			   "%s: cluster 0 stored as an all-zero cluster (%s, "
			   "%llu bytes for %u), so that the Reiser4 kernel "
			   "reads the file; bytes one cluster more", who,
			   p->stored < fmt_cluster_lsize(p->size, 0, p->shift)
			   ? "compressed" : "raw",
			   (unsigned long long)p->stored,
			   fmt_cluster_lsize(p->size, 0, p->shift));
		break;
	case CL_MERGE:
		rep_action(R, p->code, p->blk, p->ref.oid, 0, 0,
			   "%s, cluster %llu, tree node %llu: %u ctail40 "
			   "items from offset %llu joined into one of %llu "
			   "bytes, as the Reiser4 kernel keeps a disk cluster",
			   who, (unsigned long long)(p->off >> p->shift),
			   (unsigned long long)p->blk, p->items,
			   (unsigned long long)p->off,
			   (unsigned long long)p->units);
		break;
	case CL_CONV:
		rep_action(R, p->code, p->blk, p->ref.oid, 0, 0,
			   "%s: compression mode lattd stored in its plugin "
			   "set (was conv, %llu bytes past its first "
			   "cluster), as the Reiser4 kernel stores it",
			   who, (unsigned long long)(p->size - cs));
		break;
	default:
		rep_action(R, p->code, p->blk, p->ref.oid, 0, 0,
			   "%s, tree node %llu: the ctail40 item of %llu bytes "
			   "at offset %llu, which crossed the end of cluster "
			   "%llu, cut at each cluster end (no byte moved)",
			   who, (unsigned long long)p->blk,
			   (unsigned long long)p->units,
			   (unsigned long long)p->off,
			   (unsigned long long)(p->off >> p->shift));
		break;
	}
}

static int run_batch(void *ctx, size_t a, size_t b, struct r4_error *err)
{
	struct clfix *f = ctx;
	struct rep *R = f->R;
	struct r4_txn *x;
	int rc = r4_txn_begin(R->vol, &x, err);

	for (size_t i = a; i < b && !rc; i++)
		rc = do_op(x, &f->v[i], err);
	if (rc) {
		if (x)
			r4_txn_abort(x);
		return rc;
	}
	rc = r4_txn_commit(x, err);
	if (rc)
		return rc;
	R->r->transactions++;
	for (size_t i = a; i < b; i++)
		report_op(R, &f->v[i]);
	return 0;
}

static void who_of(void *ctx, size_t i, int *code, uint64_t *oid)
{
	const struct clfix *f = ctx;

	*code = f->v[i].code;
	*oid = f->v[i].ref.oid;
}

int rep_ccreg_layout_found(const struct rep *R)
{
	return R->codes[R4_CHK_CC_HOLE0] || R->codes[R4_CHK_CC_UNMERGED] ||
	       R->codes[R4_CHK_CC_CONV] || R->codes[R4_CHK_TAIL_UNMERGED] ||
	       (R->codes[R4_CHK_CC_CROSS] && R->o->mode == R4_REPAIR_FIX);
}

int rep_fix_ccreg_layout(struct rep *R, int *changed)
{
	struct clfix f = { .R = R };
	int rc;

	*changed = 0;
	if (!rep_ccreg_layout_found(R))
		return 0;
	rc = plan(&f);
	if (!rc)
		rc = rep_batches(R, f.n, run_batch, who_of, &f, changed);
	for (size_t i = 0; i < f.n; i++)
		free(f.v[i].who);
	free(f.v);
	return rc;
}
