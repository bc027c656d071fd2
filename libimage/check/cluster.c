/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the checker's pass over compressed (ccreg40) files: every disk
 * cluster is gathered, its layout, stored form and checksum checked and
 * its stream test-decompressed; and what reads right but the Reiser4
 * kernel cannot take: cluster 0 a hole before data, two items of one
 * disk cluster unmerged in a leaf, an item across its cluster's end, a
 * file past its first cluster in compression mode conv
 * (doc/compress.md §6). */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/check/check.h"
#include "libimage/obj/obj.h"
#include "libimage/obj/ccreg.h"
#include "libimage/tree/tree.h"
#include "libimage/util/err.h"
#include "format/item.h"
#include "format/plugin.h"

/* ---- what the kernel cannot take (doc/compress.md §6) ---- */

#define PATHS_NAMED_MAX 64	/* path look-ups per check: bounded work */
#define PATH_DEPTH_MAX 256

struct up {
	uint64_t oid;		/* the entry wanted */
	const struct r4_objref *ref;	/* its whole key, when known */
	size_t len;
	char buf[CHK_NAME_MAX + 1];
	uint64_t dotdot;	/* the directory's parent, 0 unknown */
	int found;
};

static int up_fn(void *ctx, const char *name, size_t len,
		 const struct fmt_key *key, const struct r4_objref *t)
{
	struct up *u = ctx;

	(void)key;
	if (len == 2 && name[0] == '.' && name[1] == '.') {
		u->dotdot = t->oid;
		return 0;
	}
	if ((len == 1 && name[0] == '.') || u->found || t->oid != u->oid ||
	    (u->ref && (t->locality != u->ref->locality ||
			t->ordering != u->ref->ordering)) ||
	    len > CHK_NAME_MAX)
		return 0;
	memcpy(u->buf, name, len);
	u->len = len;
	u->found = 1;
	return 0;
}

/* A path of ref for a message, found upwards from the directory its
 * locality names (where the kernel creates an object) through "..":
 * "" when it does not lead to the root that way. Names escaped. */
void chk_ccreg_path(struct chk *c, const struct r4_objref *ref, char *out,
		 size_t n)
{
	uint64_t oid = ref->oid, dir = ref->locality;
	char *tmp;
	size_t at;

	if (!n)
		return;
	out[0] = '\0';
	if (c->paths_named >= PATHS_NAMED_MAX)
		return;
	c->paths_named++;
	at = n - 1;
	tmp = malloc(n);
	if (!tmp)
		return;
	tmp[at] = '\0';
	for (unsigned d = 0; d < PATH_DEPTH_MAX; d++) {
		struct up u = { .oid = oid, .ref = d ? NULL : ref };
		struct r4_error e = { 0 };
		char shown[4 * CHK_NAME_MAX + 4];
		size_t sl;

		if (obj_dir_iter(c->vol, dir, up_fn, &u, &e) || !u.found)
			break;
		chk_name_str((const uint8_t *)u.buf, u.len, shown,
			     sizeof(shown));
		sl = strlen(shown);
		if (sl + 1 > at)
			break;
		at -= sl;
		memcpy(tmp + at, shown, sl);
		tmp[--at] = '/';
		if (dir == FMT_ROOT_OID) {
			snprintf(out, n, "%s", tmp + at);
			break;
		}
		if (!u.dotdot || u.dotdot == dir)
			break;
		oid = dir;
		dir = u.dotdot;
	}
	free(tmp);
}

/* "compressed file /a/b (object 1f)" or "compressed file 1f". */
int chk_ccreg_layout(struct r4_vol *vol, const struct r4_objref *ref,
		     unsigned shift, uint64_t size, chk_ccreg_flaw_fn fn,
		     void *ctx, struct r4_error *err)
{
	uint64_t mask = ((uint64_t)1 << shift) - 1;
	struct chk_ccreg_flaw f, prev = { 0 };
	struct tree_cursor cur;
	struct tree_item it;
	struct fmt_key k;
	int rc, first = 1, have_prev = 0;

	fmt_key_body(&k, ref->locality, vol->keypol == FMT_KEY_LARGE ?
		     ref->ordering : 0, ref->oid, 0);
	tree_cursor_init(&cur, vol);
	rc = tree_seek_ge(&cur, &k, err);
	while (!rc) {
		rc = tree_cur(&cur, &it, err);
		if (rc || !obj_is_body(ref, &it.key) ||
		    it.plugin_id != FMT_ITEM_CTAIL40 ||
		    it.len <= FMT_CTAIL40_HDR_SIZE)
			break;
		memset(&f, 0, sizeof(f));
		f.off = fmt_key_offset(&it.key);
		f.units = it.len - FMT_CTAIL40_HDR_SIZE;
		f.blk = it.blk;
		f.pos = it.pos;
		f.shift = it.body[0];
		if (first && size && f.off > mask) {
			f.kind = CHK_CCREG_HOLE0;
			rc = fn(ctx, &f);
		}
		first = 0;
		/* (after an item across its cluster end: once it is cut) */
		if (!rc && have_prev && prev.blk == f.blk &&
		    prev.pos + 1 == f.pos && prev.shift == f.shift &&
		    (f.off & mask) && prev.off + prev.units == f.off &&
		    (prev.off & mask) + prev.units <= mask + 1) {
			f.kind = CHK_CCREG_UNMERGED;
			f.prev_off = prev.off;
			f.prev_units = prev.units;
			rc = fn(ctx, &f);
		}
		if (!rc && (f.off & mask) + f.units > mask + 1) {
			f.kind = CHK_CCREG_CROSS;
			rc = fn(ctx, &f);
		}
		prev = f;
		have_prev = 1;
		if (!rc)
			rc = tree_next(&cur, err);
	}
	tree_cursor_fini(&cur);
	return rc == R4_ENOTFOUND ? 0 : rc;
}

/* The first finding of each kind and how many there are. */
struct ccreg_flaw_sum {
	struct chk_ccreg_flaw first[CHK_CCREG_CROSS + 1];
	uint64_t count[CHK_CCREG_CROSS + 1];
};

static int ccreg_flaw_count(void *ctx, const struct chk_ccreg_flaw *f)
{
	struct ccreg_flaw_sum *s = ctx;

	if (!s->count[f->kind]++)
		s->first[f->kind] = *f;
	return 0;
}

/* doc/compress.md §6: the layouts of the items the kernel cannot take. */
static void report_layout(struct chk *c, const struct r4_objref *ref,
			  unsigned shift, const struct ccreg_flaw_sum *s)
{
	const struct chk_ccreg_flaw *f;
	struct fmt_key k;
	char w[1024];

	if (!s->count[CHK_CCREG_HOLE0] && !s->count[CHK_CCREG_UNMERGED] &&
	    !s->count[CHK_CCREG_CROSS])
		return;
	chk_ccreg_path(c, ref, w, sizeof(w));
	if (s->count[CHK_CCREG_HOLE0]) {
		f = &s->first[CHK_CCREG_HOLE0];
		fmt_key_body(&k, ref->locality, c->vol->keypol ==
			     FMT_KEY_LARGE ? ref->ordering : 0, ref->oid,
			     f->off);
		CHK_SAY(c, CHK_M_CC_HOLE0, f->blk, (int)f->pos, &k,
			CHK_S(path, w), CHK_U(oid, ref->oid),
			CHK_U(cluster, f->off >> shift), CHK_U(at, f->blk));
	}
	if (s->count[CHK_CCREG_UNMERGED]) {
		f = &s->first[CHK_CCREG_UNMERGED];
		fmt_key_body(&k, ref->locality, c->vol->keypol ==
			     FMT_KEY_LARGE ? ref->ordering : 0, ref->oid,
			     f->off);
		CHK_SAY(c, CHK_M_CC_UNMERGED, f->blk, (int)f->pos, &k,
			CHK_S(path, w), CHK_U(oid, ref->oid),
			CHK_U(cluster, f->off >> shift), CHK_U(at, f->blk),
			CHK_U(prev, f->pos - 1), CHK_U(pos, f->pos),
			CHK_U(prevoff, f->prev_off), CHK_U(off, f->off),
			CHK_U(count, s->count[CHK_CCREG_UNMERGED]));
	}
	if (s->count[CHK_CCREG_CROSS]) {
		f = &s->first[CHK_CCREG_CROSS];
		fmt_key_body(&k, ref->locality, c->vol->keypol ==
			     FMT_KEY_LARGE ? ref->ordering : 0, ref->oid,
			     f->off);
		CHK_SAY(c, CHK_M_CC_CROSS, f->blk, (int)f->pos, &k,
			CHK_S(path, w), CHK_U(oid, ref->oid),
			CHK_U(cluster, f->off >> shift), CHK_U(at, f->blk),
			CHK_U(pos, f->pos), CHK_U(len, f->units),
			CHK_U(off, f->off),
			CHK_U(count, s->count[CHK_CCREG_CROSS]));
	}
}

void chk_ccreg_body(struct chk *c, const struct chk_body *b)
{
	struct r4_objref ref = { b->el0 >> 4, b->el1, b->el2 };
	struct fmt_key k = { { b->el0, b->el1, b->el2, 0 } };
	struct r4_error e = { 0, "", 0 };
	struct ccreg_flaw_sum s;
	struct obj_sd sd;
	struct obj_ccreg cc;
	uint64_t n = 0;

	if (b->kinds != CHK_BODY_CTAIL) {
		CHK_SAY(c, CHK_M_CC_MIXED, b->blk, b->item, &k,
			CHK_U(oid, b->el2 & CHK_OID_MASK));
		return;
	}
	if (obj_sd_get(c->vol, &ref, &sd, &e))
		return;		/* the stat data was reported already */
	memset(&s, 0, sizeof(s));
	if (sd.plugin == FMT_OBJ_CCREG40 &&
	    !obj_ccreg_params(c->vol, &ref, &sd, &cc, &e) &&
	    chk_ccreg_layout(c->vol, &ref, cc.shift, sd.st.size,
			     ccreg_flaw_count, &s, &e) == -ENOMEM) {
		CHK_SAY(c, CHK_M_CC_NO_MEMORY, b->blk, b->item, &k,
			CHK_S(what, r4_strerror(-ENOMEM)));
		obj_sd_put(&sd);
		return;
	}
	e.code = 0;
	e.msg[0] = '\0';
	if (sd.plugin != FMT_OBJ_CCREG40) {
		CHK_SAY(c, CHK_M_CC_NOT_CCREG, b->blk, b->item, &k,
			CHK_U(oid, b->el2 & CHK_OID_MASK),
			CHK_S(pname, fmt_object_name(sd.plugin) ?
			      fmt_object_name(sd.plugin) : "unknown"));
	} else {
		report_layout(c, &ref, cc.shift, &s);
		/* an item across a cluster end is its own problem: the
		 * clusters it joins are read once it is cut */
		if (!s.count[CHK_CCREG_CROSS] &&
		    obj_ccreg_verify(c->vol, &ref, &sd, &n, &e))
			CHK_SAY(c, e.code == -ENOMEM ? CHK_M_CC_NO_MEMORY :
				CHK_M_CC_CLUSTER, b->blk, b->item, &k,
				CHK_S(what, e.msg[0] ? e.msg :
				      r4_strerror(e.code)));
	}
	obj_sd_put(&sd);
}

void chk_ccreg_conv(struct chk *c, const struct chk_obj *o)
{
	struct r4_objref ref = { o->el0 >> 4, o->el1, o->el2 };
	struct fmt_key k = { { o->el0, o->el1, o->el2, 0 } };
	struct r4_error e = { 0 };
	struct obj_sd sd;
	struct obj_ccreg cc;
	char w[1024];

	if (obj_sd_get(c->vol, &ref, &sd, &e))
		return;
	if (sd.plugin == FMT_OBJ_CCREG40 &&
	    !obj_ccreg_params(c->vol, &ref, &sd, &cc, &e) &&
	    cc.cmode == FMT_CMODE_CONV &&
	    sd.st.size > ((uint64_t)1 << cc.shift)) {
		chk_ccreg_path(c, &ref, w, sizeof(w));
		CHK_SAY(c, CHK_M_CC_CONV, o->blk, o->item, &k,
			CHK_S(path, w), CHK_U(oid, ref.oid),
			CHK_U(size, sd.st.size), CHK_U(len, 1u << cc.shift),
			CHK_U(own, obj_pset_find(&sd.st.pset,
						 FMT_PSET_CMODE) >= 0));
	}
	obj_sd_put(&sd);
}

/* 1 when the object is a compressed (ccreg40) file: its holes are
 * clusters without items, so a size past its items is no problem
 * (doc/compress.md §3.4). */
int chk_obj_is_ccreg(const struct chk *c, const struct chk_obj *o)
{
	struct r4_objref ref = { o->el0 >> 4, o->el1, o->el2 };
	struct r4_error e = { 0, "", 0 };
	struct obj_sd sd;
	int yes;

	if (obj_sd_get(c->vol, &ref, &sd, &e))
		return 0;
	yes = sd.plugin == FMT_OBJ_CCREG40;
	obj_sd_put(&sd);
	return yes;
}
