/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the checker's look at one item: its body structure (the format
 * layer's decoders and verifiers), its key type, the largest key it
 * covers, extent units against the volume and the map of used blocks,
 * and what the object checks need (stat data, entries, body ranges). */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "libimage/check/check.h"
#include "format/item.h"

struct item_ctx {
	struct chk *c;
	uint64_t blk;
	unsigned i;
	const struct fmt_item_header *ih;
	const uint8_t *body;
	size_t len;
	struct fmt_key *last;
};

static int want_type(struct item_ctx *x, unsigned type, const char *what)
{
	if (fmt_key_type(&x->ih->key) == type)
		return 1;
	CHK_SAY(x->c, CHK_M_ITEM_KEY_TYPE, x->blk, (int)x->i, &x->ih->key,
		CHK_S(kind, what), CHK_U(n, fmt_key_type(&x->ih->key)));
	return 0;
}

static void root_pset(struct chk *c, const struct fmt_stat *st)
{
	memset(c->root_pset, 0, sizeof(c->root_pset));
	c->root_pset[FMT_PSET_FILE] = FMT_OBJ_DIR40;
	for (unsigned k = 0; k < st->pset.count; k++)
		if (st->pset.member[k] < FMT_PSET_COUNT)
			c->root_pset[st->pset.member[k]] = st->pset.id[k];
	c->root_pset_found = 1;
}

static int item_stat(struct item_ctx *x)
{
	const struct fmt_key *k = &x->ih->key;
	struct chk_obj *o;
	struct fmt_stat st;
	const char *why;
	int rc;

	if (!want_type(x, FMT_KEY_SD, "stat40"))
		return 0;
	rc = fmt_stat_decode(x->body, x->len, &st);
	if (rc) {
		CHK_SAY(x->c, CHK_M_SD_DECODE, x->blk, (int)x->i, k,
			CHK_S(what, r4_strerror(rc)));
		return 0;
	}
	why = fmt_stat_verify(&st);
	if (why)
		CHK_SAY(x->c, CHK_M_SD_FIELD, x->blk, (int)x->i, k,
			CHK_S(what, why));
	if (fmt_key_offset(k) != 0)
		CHK_SAY0(x->c, CHK_M_SD_KEY_OFFSET, x->blk, (int)x->i, k);
	o = chk_obj_add(x->c);
	if (!o)
		return -ENOMEM;
	o->el0 = k->el[0];
	o->el1 = k->el[1];
	o->el2 = k->el[2];
	o->blk = x->blk;
	o->item = (uint16_t)x->i;
	o->mode = st.mode;
	o->nlink = st.nlink;
	o->size = st.size;
	o->flags = (fmt_stat_has(&st, FMT_SDEXT_LW) ? CHK_OBJ_LW : 0) |
		   (fmt_stat_has(&st, FMT_SDEXT_SYMLINK) ? CHK_OBJ_SYMLINK : 0);
	for (unsigned m = 0; m < st.pset.count; m++)
		if (st.pset.member[m] == FMT_PSET_FILE &&
		    st.pset.id[m] == FMT_OBJ_CCREG40)
			o->flags |= CHK_OBJ_CCREG;
	if (fmt_key_locality(k) == FMT_ROOT_LOCALITY &&
	    fmt_key_objectid(k) == FMT_ROOT_OID)
		root_pset(x->c, &st);
	return 0;
}

/* Names no directory may hold: empty, with a '/' or a NUL, longer than
 * a name can be (extract would write a member below another, or one a
 * host cannot create), or the name of the entry before. */
static void check_name(struct item_ctx *x, const struct fmt_key *full,
		       const uint8_t *name, size_t len)
{
	struct chk *c = x->c;
	uint64_t dir = fmt_key_locality(&x->ih->key);
	char shown[300];
	const char *why = NULL;

	chk_name_str(name, len > 256 ? 256 : len, shown, sizeof(shown));
	if (!len)
		why = "is empty";
	else if (memchr(name, '/', len))
		why = "holds a '/'";
	else if (memchr(name, '\0', len))
		why = "holds a NUL byte";
	else if (len > CHK_NAME_MAX)
		why = "is longer than 255 bytes";
	else if (c->prev_len == len && c->prev_dir == dir &&
		 !memcmp(c->prev_name, name, len))
		why = "is there twice";
	if (why)
		CHK_SAY(c, CHK_M_ENTRY_NAME, x->blk, (int)x->i, full,
			CHK_S(name, shown), CHK_U(cut, len > 256),
			CHK_U(dir, dir), CHK_S(what, why));
	c->prev_dir = dir;
	c->prev_len = len <= CHK_NAME_MAX ? len : 0;
	memcpy(c->prev_name, name, c->prev_len);
}

static int add_entry(struct item_ctx *x, const struct fmt_cde40_entry *e,
		     unsigned u)
{
	struct chk_ent *n = chk_ent_add(x->c);
	struct fmt_key full;
	char name[32];
	size_t nl;

	if (!n)
		return -ENOMEM;
	fmt_cde40_entry_key(&x->ih->key, e, &full);
	nl = fmt_key_entry_name(&full, x->c->pol, name);
	n->dir = fmt_key_locality(&x->ih->key);
	n->t0 = e->target.el[0];
	n->t1 = e->target.el[1];
	n->t2 = e->target.el[2];
	n->blk = x->blk;
	n->item = (uint16_t)x->i;
	n->unit = (uint16_t)u;
	if (!e->name && nl == 1 && name[0] == '.')
		n->flags = CHK_ENT_DOT;
	else if (!e->name && nl == 2 && !memcmp(name, "..", 2))
		n->flags = CHK_ENT_DOTDOT;
	if (e->name)
		check_name(x, &full, e->name, e->name_len);
	else
		check_name(x, &full, (const uint8_t *)name, nl);
	*x->last = full;
	x->c->rep->entries++;
	return 0;
}

static int item_cde(struct item_ctx *x)
{
	struct fmt_cde40_entry e;
	const char *why;
	int units, bad = -1, rc;

	if (!want_type(x, FMT_KEY_FILE_NAME, "cde40"))
		return 0;
	why = fmt_cde40_verify(x->body, x->len, x->c->pol, &bad);
	if (why) {
		if (bad >= 0)
			CHK_SAY(x->c, CHK_M_CDE_UNIT, x->blk, (int)x->i,
				&x->ih->key, CHK_U(unit, bad),
				CHK_S(what, why));
		else
			CHK_SAY(x->c, CHK_M_CDE_BAD, x->blk, (int)x->i,
				&x->ih->key, CHK_S(what, why));
		return 0;
	}
	units = fmt_cde40_units(x->body, x->len, x->c->pol);
	/* The item's key is its first entry's (fsck.reiser4 calls an item
	 * whose key differs broken: a damaged key). */
	if (units > 0 && !fmt_cde40_entry(x->body, x->len, x->c->pol, 0, &e)) {
		struct fmt_key full;
		char ks[FMT_KEY_STR_MAX];

		fmt_cde40_entry_key(&x->ih->key, &e, &full);
		if (fmt_key_cmp(&full, &x->ih->key)) {
			fmt_key_str(&full, ks, sizeof(ks));
			CHK_SAY(x->c, CHK_M_CDE_KEY, x->blk, (int)x->i,
				&x->ih->key, CHK_S(tkey, ks));
			return 0;
		}
	}
	for (int u = 0; u < units; u++) {
		if (fmt_cde40_entry(x->body, x->len, x->c->pol, (unsigned)u,
				    &e))
			continue;
		rc = add_entry(x, &e, (unsigned)u);
		if (rc)
			return rc;
	}
	return 0;
}

static int body_end(struct item_ctx *x, uint64_t end, unsigned kind)
{
	if (end > fmt_key_offset(&x->ih->key))
		x->last->el[3] = end - 1;
	return chk_body_add(x->c, &x->ih->key, end, kind, x->blk, x->i);
}

static int item_tail(struct item_ctx *x)
{
	uint64_t end;

	if (!want_type(x, FMT_KEY_BODY, "tail40"))
		return 0;
	if (fmt_tail40_end(fmt_key_offset(&x->ih->key), x->len, &end)) {
		CHK_SAY0(x->c, CHK_M_TAIL_PAST_MAX, x->blk, (int)x->i,
			 &x->ih->key);
		return 0;
	}
	return body_end(x, end, CHK_BODY_TAIL);
}

static int item_ctail(struct item_ctx *x)
{
	struct fmt_ctail40 ct;
	uint64_t off = fmt_key_offset(&x->ih->key);

	if (!want_type(x, FMT_KEY_BODY, "ctail40"))
		return 0;
	if (fmt_ctail40_decode(x->body, x->len, &ct)) {
		CHK_SAY(x->c, CHK_M_CTAIL_BAD, x->blk, (int)x->i, &x->ih->key,
			CHK_U(n, x->len ? x->body[0] : 0), CHK_U(len, x->len));
		return 0;
	}
	if (off > UINT64_MAX - ct.len) {
		CHK_SAY0(x->c, CHK_M_CTAIL_PAST_MAX, x->blk, (int)x->i,
			 &x->ih->key);
		return 0;
	}
	return body_end(x, off + ct.len, CHK_BODY_CTAIL);
}

static int item_nodeptr(struct item_ctx *x, uint64_t *child)
{
	if (fmt_nodeptr40_decode(x->body, x->len, child)) {
		CHK_SAY(x->c, CHK_M_NODEPTR_SIZE, x->blk, (int)x->i,
			&x->ih->key, CHK_U(len, x->len));
		*child = 0;
	}
	return 0;
}

static int item_bbox(struct item_ctx *x)
{
	struct fmt_bbox40 bb;

	if (fmt_bbox40_decode(x->body, x->len, x->c->pol, &bb))
		CHK_SAY(x->c, CHK_M_SAFELINK_BAD, x->blk, (int)x->i,
			&x->ih->key, CHK_U(len, x->len));
	return 0;
}

int chk_item(struct chk *c, uint64_t blk, unsigned i,
	     const struct fmt_item_header *ih, const uint8_t *body,
	     size_t len, uint64_t *child, struct fmt_key *last)
{
	struct item_ctx x = { c, blk, i, ih, body, len, last };
	uint64_t end = 0;

	*child = 0;
	*last = ih->key;
	switch (ih->plugin_id) {
	case FMT_ITEM_STAT40:
		return item_stat(&x);
	case FMT_ITEM_CDE40:
		return item_cde(&x);
	case FMT_ITEM_TAIL40:
		return item_tail(&x);
	case FMT_ITEM_CTAIL40:
		return item_ctail(&x);
	case FMT_ITEM_NODEPTR40:
		return item_nodeptr(&x, child);
	case FMT_ITEM_BBOX40:
		return item_bbox(&x);
	case FMT_ITEM_EXTENT40:
		if (!want_type(&x, FMT_KEY_BODY, "extent40"))
			return 0;
		if (chk_extent_item(c, blk, i, &ih->key, body, len, &end))
			return -ENOMEM;
		return end ? body_end(&x, end, CHK_BODY_EXTENT) : 0;
	default:
		CHK_SAY(c, CHK_M_ITEM_PLUGIN, blk, (int)i, &ih->key,
			CHK_U(plugin, ih->plugin_id),
			CHK_S(pname, fmt_item_name(ih->plugin_id) ?
			      fmt_item_name(ih->plugin_id) : "unknown"));
		return 0;
	}
}
