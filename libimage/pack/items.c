/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: every item of the volume, in key order.
 *
 * Object ids: the root is 0x2a (locality 0x29); the others get 0x10000,
 * 0x10001, ... directory by directory (breadth first, each directory's
 * names in key order). An object is placed (locality, ordering) by the
 * first of its names met that way, so directory oids grow in the order
 * their items come in the tree.
 *
 * Key order (doc/format.md §2.4) is then: the root's SD, and for each
 * directory D by increasing oid: D's entries (locality D, type 0), the
 * SDs of the objects placed in D (type 1), their bodies (type 4) -- each
 * group in the order of D's sorted names. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/pack/packer.h"
#include "libimage/pack/ccreg.h"
#include "libimage/util/err.h"
#include "format/plugin.h"
#include "format/bitmap.h"
#include "r4/util.h"

/* A name's entry key (el[1..3]) while its directory is sorted: kept
 * here, not in every struct bent, and made again when entries are
 * emitted. */
struct skey {
	uint64_t k1, k2, k3;
	struct bent *e;
};

static int ent_cmp(const void *pa, const void *pb)
{
	const struct skey *a = pa, *b = pb;

	if (a->k1 != b->k1)
		return a->k1 < b->k1 ? -1 : 1;
	if (a->k2 != b->k2)
		return a->k2 < b->k2 ? -1 : 1;
	if (a->k3 != b->k3)
		return a->k3 < b->k3 ? -1 : 1;
	return 0;
}

static int name_key(struct r4_pack *b, uint64_t dir, const char *name,
		    size_t len, struct fmt_key *k)
{
	return fmt_key_entry(k, b->pol, dir, name, len,
			     b->m.pset[FMT_PSET_HASH],
			     b->m.pset[FMT_PSET_FIBRATION]);
}

uint64_t pack_obj_ordering(struct r4_pack *b, const struct bobj *o)
{
	struct fmt_key k;

	if (o == b->root ||
	    name_key(b, ent_dir(b, o->primary)->oid, o->primary->name,
		     o->primary->len, &k))
		return 0;	/* the name was keyed when sorted: no error */
	return k.el[1];
}

/* Sort d's names by key; *keys (nkids, the caller frees) gets the
 * keys in that order. */
static int sort_dir(struct r4_pack *b, struct bobj *d, struct skey **keys,
		    struct r4_error *err)
{
	char p1[4096];
	struct fmt_key k;
	size_t n = d->u.sub->nkids;
	struct skey *s = malloc((n ? n : 1) * sizeof(*s));

	*keys = s;
	if (!s)
		return r4i_fail(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		struct bent *e = d->u.sub->kids[i];
		int rc = name_key(b, d->oid, e->name, e->len, &k);

		if (rc)
			return r4i_fail(err, rc, "%s: cannot make the key of "
				       "'%s': %s", pack_ns_obj_path(b, d, p1,
				       sizeof(p1)), e->name, r4_strerror(rc));
		s[i].k1 = k.el[1];
		s[i].k2 = k.el[2];
		s[i].k3 = k.el[3];
		s[i].e = e;
	}
	if (n > 1)
		qsort(s, n, sizeof(*s), ent_cmp);
	for (size_t i = 0; i < n; i++)
		d->u.sub->kids[i] = s[i].e;
	for (size_t i = 1; i < n; i++)
		if (!ent_cmp(&s[i - 1], &s[i]))
			return r4i_fail(err, R4_EEXIST, "%s: '%s' has the same "
				       "key as '%s' under this hash",
				       pack_ns_path(b, s[i].e, p1, sizeof(p1)),
				       s[i].e->name, s[i - 1].e->name);
	return 0;
}

static uint64_t file_bytes(const struct r4_pack *b, const struct bobj *o)
{
	if (o->ccreg == CCREG_YES)
		return o->size ? pack_ccreg_bytes(b, o) : 0;
	if (o->tails || o->data == BD_NONE)
		return o->size;
	/* dense until read (patched then); BD_ATX stays dense */
	if (o->data == BD_DEFERRED || o->data == BD_ATX)
		return (o->size + b->bs - 1) / b->bs * b->bs;
	return enc_units_bytes(&o->u.reg->ext, b->bs);
}

static void fill_stat(struct r4_pack *b, const struct bobj *o,
		      struct fmt_stat *st)
{
	enc_stat(obj_attr(b, o), st);
	st->nlink = o->nlink;
	st->size = o->size;
	switch (o->type) {
	case R4_ENT_DIR:
		st->nlink = (o == b->root ? 3 : 2) + o->u.sub->nsubdirs;
		st->size = o->u.sub->entries;
		st->rdev_or_bytes = o->u.sub->ebytes;
		if (o == b->root) {
			st->mask |= 1u << FMT_SDEXT_PSET;
			mkfs_root_pset_ext(&b->m, &st->pset);
		}
		break;
	case R4_ENT_SYMLINK:
		enc_stat_symlink(st, o->u.target, o->size);
		break;
	case R4_ENT_CHR: case R4_ENT_BLK:
		st->rdev_or_bytes = o->u.rdev;
		break;
	case R4_ENT_REG:
		st->rdev_or_bytes = file_bytes(b, o);
		if (o->ccreg == CCREG_YES) {	/* doc/compress.md §5 */
			st->mask |= 1u << FMT_SDEXT_PSET;
			st->pset.count = 1;
			st->pset.member[0] = FMT_PSET_FILE;
			st->pset.id[0] = FMT_OBJ_CCREG40;
			/* doc/compress.md §4.4: past its first cluster a
			 * file has lattd stored, as the kernel does when
			 * conv leaves it compressed */
			if (pack_ccreg_lattd(b, o)) {
				st->pset.count = 2;
				st->pset.member[1] = FMT_PSET_CMODE;
				st->pset.id[1] = FMT_CMODE_LATTD;
			}
		}
		break;
	default:
		break;
	}
}

/* ord: the ordering of o's keys (pack_obj_ordering, known here). */
static int emit_sd(struct r4_pack *b, struct bobj *o, uint64_t ord,
		   struct r4_error *err)
{
	struct fmt_stat st;
	struct fmt_key k;
	uint8_t *body;
	size_t len;
	char p[512];
	int rc;

	fill_stat(b, o, &st);
	rc = fmt_stat_size(&st, &len);
	if (rc)
		return r4i_fail(err, rc, "%s: cannot make its stat data: %s",
			       pack_ns_obj_path(b, o, p, sizeof(p)),
			       r4_strerror(rc));
	fmt_key_sd(&k, obj_locality(b, o), ord, o->oid);
	rc = pack_leaf_add(b, &k, FMT_ITEM_STAT40, len, &body, err);
	if (!rc)
		rc = fmt_stat_encode(&st, body, len);
	if (rc)
		return r4i_fail(err, rc, "%s: cannot store its stat data: %s",
			       pack_ns_obj_path(b, o, p, sizeof(p)),
			       r4_strerror(rc));
	if (o->type == R4_ENT_REG && o->data == BD_DEFERRED &&
	    (!o->tails || o->ccreg == CCREG_YES)) {
		o->u.reg->sd_leaf = b->lv[1].count - 1;
		o->u.reg->sd_off = (uint32_t)(body - b->lv[1].node) + 2 +
			    FMT_SDEXT_LW_SIZE + FMT_UNIX_OFF_RDEV;
	}
	return 0;
}

/* e: the name (NULL for "." and ".."); k: its key. */
static void set_entry(struct r4_pack *b, struct fmt_cde40_entry *ce,
		      const struct fmt_key *k, const struct bobj *o,
		      const struct bent *e, const char *name, size_t len)
{
	struct fmt_key sd;
	uint64_t ord = e && o->primary == e ? k->el[1] :
		       pack_obj_ordering(b, o);

	fmt_key_sd(&sd, obj_locality(b, o), ord, o->oid);
	enc_cde_entry(ce, b->pol, k, &sd, name, len);
}

/* The directory's entries, "." and ".." merged in, in key order;
 * ord[i]: the ordering of child i's key. */
static int dir_entries(struct r4_pack *b, struct bobj *d,
		       struct fmt_cde40_entry *ce, uint64_t *ord,
		       struct r4_error *err)
{
	struct bobj *parent = d == b->root ? d : ent_dir(b, d->primary);
	struct fmt_key dot, dotdot, k;
	size_t j = 0, n = 2;
	int rc = name_key(b, d->oid, ".", 1, &dot);

	if (!rc)
		rc = name_key(b, d->oid, "..", 2, &dotdot);
	if (rc)
		return r4i_fail(err, rc, "cannot make the key of '..'");
	set_entry(b, &ce[j++], &dot, d, NULL, ".", 1);
	for (size_t i = 0; i < d->u.sub->nkids; i++) {
		struct bent *e = d->u.sub->kids[i];

		rc = name_key(b, d->oid, e->name, e->len, &k);
		if (rc)
			return r4i_fail(err, rc, "cannot make the key of '%s'",
				       e->name);
		ord[i] = k.el[1];
		if (n == 2 && fmt_key_cmp(&dotdot, &k) < 0) {
			set_entry(b, &ce[j++], &dotdot, parent, NULL, "..",
				  2);
			n = 1;
		}
		set_entry(b, &ce[j++], &k, e->obj, e, e->name, e->len);
	}
	if (n == 2)
		set_entry(b, &ce[j++], &dotdot, parent, NULL, "..", 2);
	return 0;
}

/* Pack the entries into cde40 items, each leaf filled before the next;
 * ord as dir_entries. */
static int emit_entries(struct r4_pack *b, struct bobj *d, uint64_t *ord,
			struct r4_error *err)
{
	size_t n = d->u.sub->nkids + 2, i = 0;
	size_t uh = fmt_cde40_unit_header_size(b->pol);
	size_t idsz = fmt_cde40_objid_size(b->pol);
	struct fmt_cde40_entry *ce;
	int rc;

	if (R4_RESERVE(b->ebuf, b->ebufcap, n, 64))
		return r4i_fail(err, -ENOMEM, "out of memory");
	ce = b->ebuf;	/* every one set by dir_entries */
	rc = dir_entries(b, d, ce, ord, err);

	while (!rc && i < n) {
		size_t room = pack_leaf_room(b), k = 0;
		size_t size = FMT_CDE40_UNITS_SIZE;
		struct fmt_key key = { { d->oid << 4 | FMT_KEY_FILE_NAME,
					 ce[i].ordering, ce[i].objectid,
					 ce[i].offset } };
		uint8_t *body;

		while (i + k < n) {
			size_t one = uh + idsz + (ce[i + k].name ?
					ce[i + k].name_len + 1 : 0);

			if (size + one > room)
				break;
			size += one;
			k++;
		}
		if (!k) {
			rc = pack_leaf_close(b, err);
			continue;
		}
		rc = pack_leaf_add(b, &key, FMT_ITEM_CDE40, size, &body, err);
		if (!rc)
			rc = fmt_cde40_encode(ce + i, k, b->pol, body, size);
		i += k;
	}
	return rc;
}

static int emit_tails(struct r4_pack *b, struct bobj *o, uint64_t ord,
		      const char *path, struct r4_error *err)
{
	struct tailrd t;
	uint64_t off = 0;
	int rc = pack_tail_open(b, o, path, &t, err);

	while (!rc && off < o->size) {
		size_t room = pack_leaf_room(b), n;
		struct fmt_key k;
		uint8_t *body;

		if (!room) {
			rc = pack_leaf_close(b, err);
			continue;
		}
		n = o->size - off < room ? (size_t)(o->size - off) : room;
		fmt_key_body(&k, obj_locality(b, o), ord, o->oid, off);
		/* pack_tail_read writes all n bytes, or fails */
		rc = pack_leaf_add_raw(b, &k, FMT_ITEM_TAIL40, n, &body, err);
		if (!rc)
			rc = pack_tail_read(&t, body, n, err);
		off += n;
	}
	pack_tail_close(&t);
	return rc;
}

/* ord: as emit_sd; p: o's path (for messages). */
static int emit_body(struct r4_pack *b, struct bobj *o, uint64_t ord,
		     const char *p, struct r4_error *err)
{
	struct fmt_key k;
	int rc = 0;

	if (o->ccreg == CCREG_YES)
		return pack_ccreg_emit(b, o, p, err);
	if (o->tails)
		return emit_tails(b, o, ord, p, err);
	if (o->data == BD_ATX) {
		rc = pack_twig_reserve(b, FMT_EXTENT40_UNIT_SIZE, err);
		if (!rc)
			rc = pack_data_atx_extents(b, o, p, err);
	} else if (o->data == BD_SPX) {
		rc = pack_twig_reserve(b, FMT_EXTENT40_UNIT_SIZE, err);
		if (!rc)
			rc = pack_data_spx_extents(b, o, p, err);
	} else if (o->data == BD_DEFERRED) {
		uint64_t dense = file_bytes(b, o), got;

		rc = pack_twig_reserve(b, FMT_EXTENT40_UNIT_SIZE, err);
		if (!rc)
			rc = pack_data_deferred_extents(b, o, p, err);
		got = file_bytes(b, o);
		if (!rc && got != dense)
			rc = pack_leaf_patch_u64(b, o->u.reg->sd_leaf,
						 o->u.reg->sd_off, got, err);
	}
	fmt_key_body(&k, obj_locality(b, o), ord, o->oid, 0);
	return rc ? rc : pack_twig_add_extent(b, &k, o->u.reg->ext.u,
					      o->u.reg->ext.n, err);
}

static int emit_dir_loaded(struct r4_pack *b, struct bobj *d,
			   struct r4_error *err);

/* d's spilled names read back: sorted with the others, and their
 * objects given the oids assign_oids gave them (each placed where its
 * only name is, in key order among the names placing objects). */
static int load_spilled(struct r4_pack *b, struct bobj *d, size_t *nmem,
			struct r4_error *err)
{
	struct skey *keys = NULL;
	uint64_t next = d->u.sub->first_oid;
	int rc = pack_ns_dir_load(b, d, nmem, err);

	if (rc || !b->spill)
		return rc;
	rc = sort_dir(b, d, &keys, err);
	free(keys);
	for (size_t i = 0; !rc && i < d->u.sub->nkids; i++) {
		struct bent *e = d->u.sub->kids[i];
		struct bobj *o = e->obj;

		if (o->spilled) {
			o->oid = next++;
			o->nlink = 1;
			o->primary = e;
		} else if (o->primary == e) {
			next++;
		}
	}
	return rc;
}

static int emit_dir(struct r4_pack *b, struct bobj *d, struct r4_error *err)
{
	size_t nmem;
	int rc = load_spilled(b, d, &nmem, err);

	if (!rc)
		rc = emit_dir_loaded(b, d, err);
	pack_ns_dir_unload(b, d, nmem);
	return rc;
}

/* The path of d's child e into p, after d's own path and a '/' (dlen
 * bytes, kid_prefix), cut as pack_ns_path cuts it. */
static const char *kid_path(char *p, size_t cap, size_t dlen,
			    const struct bent *e)
{
	size_t n = dlen + 1 < cap ? cap - 1 - dlen : 0;

	n = e->len < n ? e->len : n;
	memcpy(p + dlen, e->name, n);
	p[dlen + n] = '\0';
	return p;
}

static size_t kid_prefix(struct r4_pack *b, struct bobj *d, char *p,
			 size_t cap)
{
	size_t dlen;

	if (d == b->root)
		return 0;
	dlen = strlen(pack_ns_obj_path(b, d, p, cap));
	if (dlen && dlen + 1 < cap)
		p[dlen++] = '/';
	return dlen;
}

static int emit_dir_loaded(struct r4_pack *b, struct bobj *d,
			   struct r4_error *err)
{
	struct bent **kids = d->u.sub->kids;
	size_t n = d->u.sub->nkids, dlen;
	char p[4096];
	uint64_t *ord;
	int rc;

	if (R4_RESERVE(b->obuf, b->obufcap, n ? n : 1, 64))
		return r4i_fail(err, -ENOMEM, "out of memory");
	ord = b->obuf;
	rc = emit_entries(b, d, ord, err);
	dlen = kid_prefix(b, d, p, sizeof(p));
	/* conv decides before the stat data says ccreg40 (pack/ccreg.c) */
	for (size_t i = 0; !rc && b->ccreg && i < n; i++)
		if (kids[i]->obj->primary == kids[i])
			rc = pack_ccreg_decide(b, kids[i]->obj,
					    kid_path(p, sizeof(p), dlen,
						     kids[i]), err);
	for (size_t i = 0; !rc && i < n; i++)
		if (kids[i]->obj->primary == kids[i])
			rc = emit_sd(b, kids[i]->obj, ord[i], err);
	for (size_t i = 0; !rc && i < n; i++) {
		struct bobj *o = kids[i]->obj;

		if (!(o->primary == kids[i] && o->type == R4_ENT_REG &&
		      o->size && o->data != BD_NONE))
			continue;
		b->ahead = kids + i + 1;
		b->nahead = n - i - 1;
		rc = emit_body(b, o, ord[i],
			       kid_path(p, sizeof(p), dlen, kids[i]), err);
	}
	b->ahead = NULL;
	b->nahead = 0;
	return rc;
}

void pack_items_fini(struct r4_pack *b)
{
	free(b->ebuf);
	free(b->obuf);
	b->ebuf = NULL;
	b->obuf = NULL;
	b->ebufcap = b->obufcap = 0;
}

/* What one placed object adds to the leaves (leaf, big) and to the
 * twigs (ext), for estimate_upper. */
struct upper_est {
	uint64_t ih, region, nptr;
	uint64_t leaf, big, ext;
};

static void estimate_obj(struct r4_pack *b, const struct bobj *o,
			 struct upper_est *u)
{
	struct fmt_stat st;
	size_t len = 0;

	fill_stat(b, o, &st);
	fmt_stat_size(&st, &len);
	u->leaf += len + u->ih;
	u->big += len > 310 ? len : 0;
	if (o->type == R4_ENT_DIR)
		u->leaf += o->u.sub->ebytes + FMT_CDE40_UNITS_SIZE + u->ih;
	if (o->type == R4_ENT_REG && o->size &&
	    (o->tails || o->ccreg == CCREG_YES))
		u->leaf += o->size + u->ih;
	else if (o->type == R4_ENT_REG && o->data == BD_EXTENTS)
		/* units known: holes cost one */
		u->ext += u->ih + FMT_EXTENT40_UNIT_SIZE *
			  (o->u.reg->ext.n + 4) + u->nptr;
	else if (o->type == R4_ENT_REG && o->data == BD_SPX)
		/* placed as BD_ATX data is, and its holes on top (a file
		 * with none: the estimate BD_ATX data gets) */
		u->ext += u->ih + FMT_EXTENT40_UNIT_SIZE *
			  (4 + o->size / u->region + (o->u.reg->ext.n > 1 ?
						      o->u.reg->ext.n : 0)) +
			  u->nptr;
	else if (o->type == R4_ENT_REG && o->size)
		u->ext += u->ih + FMT_EXTENT40_UNIT_SIZE *
			  (4 + o->size / u->region) + u->nptr;
}

/* Breadth first: keys, sort, oids, link counts, entry counts. */
static int assign_oids(struct r4_pack *b, struct upper_est *u,
		       struct r4_error *err)
{
	struct bobj *d, *tail = b->root;

	b->root->oid = FMT_ROOT_OID;
	b->next_oid = FMT_FIRST_FREE_OID;
	b->files = 1;
	b->dirs = 1;
	for (d = b->root; d; d = d->u.sub->qnext) {
		struct skey *keys = NULL;
		size_t nmem;
		int rc = pack_ns_dir_load(b, d, &nmem, err);

		d->u.sub->first_oid = b->next_oid;
		if (!rc)
			rc = sort_dir(b, d, &keys, err);
		if (rc) {
			free(keys);
			pack_ns_dir_unload(b, d, nmem);
			return rc;
		}
		d->u.sub->entries = d->u.sub->nkids + 2;
		d->u.sub->ebytes = enc_entry_bytes(b->pol, 1) +
			    enc_entry_bytes(b->pol, 2);
		for (size_t i = 0; i < d->u.sub->nkids; i++) {
			struct bent *e = d->u.sub->kids[i];
			struct bobj *o = e->obj;

			d->u.sub->ebytes += enc_entry_bytes(b->pol, e->len);
			o->nlink++;
			d->u.sub->nsubdirs += o->type == R4_ENT_DIR;
			if (o->oid)
				continue;
			o->oid = b->next_oid++;
			o->primary = e;
			b->files++;
			if (o->type == R4_ENT_DIR) {
				b->dirs++;
				tail->u.sub->qnext = o;
				tail = o;
			}
			if (o->data == BD_DEFERRED)
				b->total_bytes += o->size;
			b->bytes += o->type == R4_ENT_REG ? o->size : 0;
			if (o->spilled)	/* not here for estimate_upper */
				estimate_obj(b, o, u);
		}
		free(keys);
		pack_ns_dir_unload(b, d, nmem);
	}
	return 0;
}

/* An upper bound (for all but unusually sparse files) of the nodes
 * above the leaves, so their area can be saved before the first leaf. */
static void estimate_init(struct r4_pack *b, struct upper_est *u)
{
	memset(u, 0, sizeof(*u));
	u->ih = fmt_item_header_size(b->pol);
	u->region = fmt_bitmap_bpb(b->bs) * b->bs;
	u->nptr = u->ih + FMT_NODEPTR40_SIZE;
}

/* u: what the spilled objects add (assign_oids). */
static uint64_t estimate_upper(struct r4_pack *b, struct upper_est *up)
{
	struct upper_est u = *up;
	uint64_t slack, cap = b->bs - fmt_node_header_size(b->m.sb.node_pid);
	uint64_t nleaf, twig, per, n, total;

	slack = 310 + u.ih + 2;
	/* every placed object once: the root, then the objects each
	 * directory places (sums: the order does not matter) */
	estimate_obj(b, b->root, &u);
	for (struct bobj *d = b->root; d; d = d->u.sub->qnext)
		for (size_t i = 0; i < d->u.sub->nkids; i++) {
			const struct bent *e = d->u.sub->kids[i];

			if (e->obj->primary == e)
				estimate_obj(b, e->obj, &u);
		}
	nleaf = (u.leaf + u.big) / (cap - slack) + 1 + u.ext / u.nptr;
	twig = (nleaf * u.nptr + u.ext) / (cap - 2 * u.ih - 16) + 1;
	per = (cap - u.nptr) / u.nptr;
	for (total = twig, n = twig; n > 1; total += n)
		n = n / per + 1;
	return total + total / 50 + 2;
}

/* Leaves and deferred data are written behind, on another thread. */
int pack_items_make(struct r4_pack *b, struct r4_error *err)
{
	struct upper_est u;
	int rc = 0, rc2;

	estimate_init(b, &u);
	pack_ns_seal(b);
	if (b->spill && (rc = pack_spill_seal(b->spill)))
		return r4i_fail(err, rc, "cannot write the spilled names to "
			       "$TMPDIR: %s", r4_strerror(rc));
	b->placing = 1;
	rc = assign_oids(b, &u, err);
	if (!rc)
		pack_ns_release(b);
	if (!rc)
		rc = pack_spool_seal(b, err);
	if (!rc)
		pack_alloc_reserve_area(b, estimate_upper(b, &u));
	if (!rc)
		rc = pack_ccreg_ahead_begin(b, err);
	if (!rc)
		rc = pack_async_begin(b, err);
	if (rc)
		return rc;
	rc = emit_sd(b, b->root, 0, err);
	for (struct bobj *d = b->root; !rc && d; d = d->u.sub->qnext)
		rc = emit_dir(b, d, err);
	if (!rc)
		pack_spx_done(b);
	pack_ccreg_ahead_end(b);
	rc2 = pack_async_end(b, rc ? NULL : err);
	return rc ? rc : rc2;
}
