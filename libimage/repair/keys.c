/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the repair's key pass, over the check's tables: stat data put
 * back under the key their name gives, and two stat data with one
 * object id told apart.
 *
 * A stat data whose own key was damaged (an object id, ordering or
 * locality byte) is named by no entry, while an entry points at a key K
 * no stat data has. The stat data is moved to K when the volume ties
 * the two, and only them: its key differs from K in one element, K's
 * object id is no other stat data's, and either only the object id
 * differs (large keys: locality and ordering, which the name gave, are
 * K's), or body items with K's key exist that its size fits while it
 * has none of its own, or K's object id holds directory entries while
 * its own holds none. One stat data fitting one K: a stat data two K
 * could take, or a K two stat data fit, is left (the object pass then
 * removes the entry and links the stat data into /lost+found).
 *
 * Of stat data that share an object id (object-duplicate), the one the
 * volume agrees with keeps it: named by an entry, named from the
 * directory its locality is, holding body items under its key (first
 * in key order when these tie); every other one is given a fresh
 * object id (the transaction's next one, so the super block's stays
 * above it), its stat data and body items re-keyed and the entries
 * naming it pointed at the new key. One nobody names goes to
 * /lost+found in the object pass. A directory is not re-keyed (its
 * entries' keys hold its object id, shared with the other): left.
 *
 * Every move goes through libimage/txn, R->batch objects a transaction
 * (an item's key changes by a delete and an insert of the same bytes:
 * copy-on-write like any edit). */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/repair/repair.h"
#include "libimage/obj/edit_int.h"
#include "libimage/tree/tree.h"
#include "libimage/txn/txn.h"
#include "libimage/util/err.h"
#include "r4/util.h"
#include "format/item.h"

#define MODE_FMT 0170000u
#define MODE_DIR 0040000u
#define MODE_REG 0100000u

enum { KOP_NAME, KOP_ENTRY, KOP_FRESH };

struct kname {
	struct r4_objref dir;
	char *name;
	size_t len;
};

struct kop {
	int kind;
	uint32_t obj;			/* the stat data moved */
	uint32_t keeper;		/* KOP_FRESH: the one that stays */
	struct fmt_key from, to;	/* stat-data keys (KOP_FRESH: to's
					 * object id chosen when applied) */
	const char *why;
	struct kname *names;		/* KOP_FRESH: entries to repoint */
	size_t nnames, ncap;
	char *entry;			/* KOP_NAME: the entry naming K */
	uint64_t entry_dir;
	/* what the move did (set when applied) */
	uint64_t items, oid;
};

struct kplan {
	struct rep *R;
	struct kop *v;
	size_t n, cap;
	struct chk_oid *byoid;
	uint8_t *fit;		/* per object: FIT_* */
};

enum { FIT_NAMED = 4, FIT_LOC = 2, FIT_BODY = 1, FIT_MOVED = 8 };

static int is_dir(const struct chk_obj *o)
{
	return (o->flags & CHK_OBJ_LW) && (o->mode & MODE_FMT) == MODE_DIR;
}

static int is_reg(const struct chk_obj *o)
{
	return (o->flags & CHK_OBJ_LW) && (o->mode & MODE_FMT) == MODE_REG;
}

static int is_root(const struct chk_obj *o)
{
	return o->el2 == FMT_ROOT_OID &&
	       o->el0 == ((FMT_ROOT_LOCALITY << 4) | FMT_KEY_SD);
}

static void obj_sdkey(const struct chk_obj *o, struct fmt_key *k)
{
	k->el[0] = o->el0;
	k->el[1] = o->el1;
	k->el[2] = o->el2;
	k->el[3] = 0;
}

static struct kop *kop_add(struct kplan *p)
{
	struct kop *o;

	if (R4_RESERVE(p->v, p->cap, p->n + 1, 16))
		return NULL;
	o = &p->v[p->n++];
	memset(o, 0, sizeof(*o));
	return o;
}

static void kplan_free(struct kplan *p)
{
	for (size_t i = 0; i < p->n; i++) {
		for (size_t j = 0; j < p->v[i].nnames; j++)
			free(p->v[i].names[j].name);
		free(p->v[i].names);
		free(p->v[i].entry);
	}
	free(p->v);
	free(p->byoid);
	free(p->fit);
	memset(p, 0, sizeof(*p));
}

/* First index in byoid with this object id (c->nobjs if none). */
static size_t oid_first(const struct chk *c, const struct chk_oid *byoid,
			uint64_t oid)
{
	size_t lo = 0, hi = c->nobjs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (byoid[mid].oid < oid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Whether a stat data other than object s has object id oid. */
static int oid_taken(const struct kplan *p, uint64_t oid, uint32_t s)
{
	const struct chk *c = &p->R->c;

	for (size_t i = oid_first(c, p->byoid, oid);
	     i < c->nobjs && p->byoid[i].oid == oid; i++)
		if (p->byoid[i].idx != s)
			return 1;
	return 0;
}

/* Whether directory entries of directory oid exist. */
static int has_entries(const struct chk *c, uint64_t oid)
{
	size_t j = chk_ent_first(c, oid);

	return j < c->nents && c->ents[j].dir == oid;
}

/* Why stat data s and key K (an entry's target no stat data has) are
 * one object's, or NULL when the volume does not tell. *entry = 1 when
 * the entry's key is the damaged one (the stat data's key agrees with
 * its own body items or entries, K's with nothing): the entry is
 * pointed at the stat data instead of the stat data moved to K. */
static const char *ties(const struct kplan *p, uint32_t s,
			const struct fmt_key *K, int *entry)
{
	const struct chk *c = &p->R->c;
	const struct chk_obj *o = &c->objs[s];
	const struct chk_body *kb = chk_body_find(c, K->el[0], K->el[1],
						  K->el[2]);
	const struct chk_body *ob = chk_body_find(c, o->el0, o->el1, o->el2);
	uint64_t soid = o->el2 & CHK_OID_MASK, koid = K->el[2] & CHK_OID_MASK;
	int d0 = o->el0 != K->el[0], d1 = o->el1 != K->el[1],
	    d2 = o->el2 != K->el[2], own, kown;
	uint64_t end;

	*entry = 0;
	if (d0 + d1 + d2 != 1 || (p->fit[s] & (FIT_NAMED | FIT_MOVED)) ||
	    !(o->flags & CHK_OBJ_LW) || (K->el[2] & ~CHK_OID_MASK) ||
	    (K->el[0] & 0xf) != FMT_KEY_SD || is_root(o))
		return NULL;
	own = ob || (is_dir(o) && has_entries(c, soid));
	kown = kb || (is_dir(o) && d2 && has_entries(c, koid));
	if (own && kown)
		return NULL;	/* both keys hold something: whose? */
	if (own) {
		*entry = 1;
		return ob ? "its body items are under its own key, none under "
			    "the entry's" : "its directory entries are under "
			    "its own object id, none under the entry's";
	}
	if (oid_taken(p, koid, s))
		return NULL;	/* moved there, it would be a duplicate */
	if (kb)
		return is_reg(o) && !(kb->kinds & CHK_BODY_CTAIL) &&
		       !chk_size_wrong(c, o, kb, &end) ? "body items with "
		       "that key exist, and its size fits them" : NULL;
	if (kown)
		return "directory entries with that object id exist";
	if (!d2 || !o->el1)
		return NULL;
	/* Only the object id differs, nothing under either key (an empty
	 * file): the one past the next object id is the damaged one. */
	if (koid >= c->next_oid && soid < c->next_oid) {
		*entry = 1;
		return "only the object id differs, and the entry's is past "
		       "the next object id";
	}
	return "only its object id differs; its locality and ordering are "
	       "the name's";
}

/* The stat data that fit key K: *s the one when exactly one does. */
static int candidates(const struct kplan *p, const struct fmt_key *K,
		      uint32_t *s, const char **why, int *entry)
{
	const struct chk *c = &p->R->c;
	size_t lo = 0, hi = c->nobjs;
	int n = 0;

	/* Same locality and ordering (objects are sorted by key). */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (chk_cmp3(c->objs[mid].el0, c->objs[mid].el1, 0,
			     K->el[0], K->el[1], 0) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < c->nobjs && n < 2 && c->objs[lo].el0 == K->el[0] &&
	       c->objs[lo].el1 == K->el[1]; lo++) {
		int en;
		const char *w = ties(p, (uint32_t)lo, K, &en);

		if (w) {
			*s = (uint32_t)lo;
			*why = w;
			*entry = en;
			n++;
		}
	}
	/* Same object id: the locality or the ordering differs. */
	for (size_t i = oid_first(c, p->byoid, K->el[2] & CHK_OID_MASK);
	     i < c->nobjs && n < 2 &&
	     p->byoid[i].oid == (K->el[2] & CHK_OID_MASK); i++) {
		uint32_t t = p->byoid[i].idx;
		const char *w;
		int en;

		if (c->objs[t].el2 != K->el[2])
			continue;
		w = ties(p, t, K, &en);
		if (w) {
			*s = t;
			*why = w;
			*entry = en;
			n++;
		}
	}
	return n;
}

static int key_cmp3(const void *x, const void *y)
{
	const struct fmt_key *a = x, *b = y;

	return chk_cmp3(a->el[0], a->el[1], a->el[2], b->el[0], b->el[1],
			b->el[2]);
}

/* The entries that name stat-data key k (exactly), into o->names. */
static int names_of(struct kplan *p, struct kop *o, const struct fmt_key *k)
{
	struct chk *c = &p->R->c;

	for (size_t j = 0; j < c->nents; j++) {
		const struct chk_ent *e = &c->ents[j];
		struct kname *nv;
		uint32_t d;
		int rc;

		if (e->flags || e->t0 != k->el[0] || e->t1 != k->el[1] ||
		    e->t2 != k->el[2])
			continue;
		d = chk_oid_find(c, p->byoid, e->dir);
		if (d == CHK_NONE || !is_dir(&c->objs[d]))
			continue;	/* the object pass removes it */
		if (R4_RESERVE(o->names, o->ncap, o->nnames + 1, 4))
			return -ENOMEM;
		nv = &o->names[o->nnames];
		memset(nv, 0, sizeof(*nv));
		rc = rep_entry_name(c, e, &nv->name, &nv->len);
		if (rc == -ENOMEM)
			return rc;
		if (rc)
			continue;
		{
			struct fmt_key dk;

			obj_sdkey(&c->objs[d], &dk);
			obj_ref_from_key(&dk, &nv->dir);
		}
		o->nnames++;
	}
	return 0;
}

/* Whether object t keeps a shared object id rather than keep: the root
 * does; else the one the names and bodies agree with best; of equals
 * the first in key order. */
static int better(const struct kplan *p, uint32_t t, uint32_t keep)
{
	const struct chk *c = &p->R->c;
	unsigned ft = p->fit[t] & 7, fk;

	if (keep == CHK_NONE)
		return 1;
	if (is_root(&c->objs[keep]))
		return 0;
	if (is_root(&c->objs[t]))
		return 1;
	fk = p->fit[keep] & 7;
	return ft != fk ? ft > fk : t < keep;
}

/* Why the keeper keeps the object id rather than t. */
static const char *keep_why(const struct kplan *p, uint32_t keep, uint32_t t)
{
	unsigned fk = p->fit[keep], ft = p->fit[t];

	if (is_root(&p->R->c.objs[keep]))
		return "the root directory";
	if ((fk & FIT_NAMED) && !(ft & FIT_NAMED))
		return "named, the other not";
	if ((fk & FIT_LOC) && !(ft & FIT_LOC))
		return "named from the directory its locality is";
	if ((fk & FIT_BODY) && !(ft & FIT_BODY))
		return "body items under its key";
	return "both fit; the first in key order";
}

/* The keys entries point at that no stat data has, sorted (el[3]: the
 * entry's index); NULL without memory. */
static struct fmt_key *unnamed_keys(const struct chk *c, size_t *ns)
{
	struct fmt_key *seen = malloc((c->nents ? c->nents : 1) * sizeof(*seen));

	*ns = 0;
	if (!seen)
		return NULL;
	for (size_t j = 0; j < c->nents; j++) {
		const struct chk_ent *e = &c->ents[j];

		if (e->flags || chk_obj_find(c, e->t0, e->t1, e->t2) != CHK_NONE)
			continue;
		seen[*ns].el[0] = e->t0;
		seen[*ns].el[1] = e->t1;
		seen[*ns].el[2] = e->t2;
		seen[(*ns)++].el[3] = j;
	}
	if (*ns)
		qsort(seen, *ns, sizeof(*seen), key_cmp3);
	return seen;
}

/* The move that gives stat-data key K, which entry e names, to the one
 * stat data that fits it (none when two keys could take that one: the
 * earlier move is cleared too). */
static int plan_name(struct kplan *p, const struct fmt_key *K,
		     const struct chk_ent *e)
{
	struct chk *c = &p->R->c;
	const char *why = NULL;
	uint32_t s = CHK_NONE;
	struct kop *o;
	size_t len = 0;
	int entry = 0, rc;

	if (candidates(p, K, &s, &why, &entry) != 1)
		return 0;
	for (size_t k = 0; k < p->n; k++)
		if (p->v[k].obj == s) {
			p->v[k].why = NULL;
			s = CHK_NONE;
		}
	if (s == CHK_NONE)
		return 0;
	o = kop_add(p);
	if (!o)
		return -ENOMEM;
	o->kind = entry ? KOP_ENTRY : KOP_NAME;
	o->obj = s;
	obj_sdkey(&c->objs[s], &o->from);
	o->to = *K;
	o->why = why;
	o->entry_dir = e->dir;
	rc = rep_entry_name(c, e, &o->entry, &len);
	if (rc == -ENOMEM)
		return rc;
	return entry ? names_of(p, o, K) : 0;
}

/* The moves found twice (why cleared) dropped; the others' objects
 * marked moved. */
static void drop_cleared(struct kplan *p)
{
	size_t k = 0;

	for (size_t i = 0; i < p->n; i++) {
		if (p->v[i].why) {
			p->v[k++] = p->v[i];
			p->fit[p->v[i].obj] |= FIT_MOVED;
		} else {
			for (size_t j = 0; j < p->v[i].nnames; j++)
				free(p->v[i].names[j].name);
			free(p->v[i].names);
			free(p->v[i].entry);
		}
	}
	p->n = k;
}

/* Stat data put back under the key an entry gives (or the entry
 * pointed at the stat data, when its key is the damaged one). */
static int plan_names(struct kplan *p)
{
	struct chk *c = &p->R->c;
	size_t ns;
	struct fmt_key *seen = unnamed_keys(c, &ns);
	int rc = 0;

	if (!seen)
		return -ENOMEM;
	/* each key once */
	for (size_t i = 0; i < ns && !rc; i++) {
		struct fmt_key K = seen[i];
		const struct chk_ent *e = &c->ents[K.el[3]];

		if (i && !key_cmp3(&seen[i - 1], &K))
			continue;
		K.el[3] = 0;
		rc = plan_name(p, &K, e);
	}
	free(seen);
	if (!rc)
		drop_cleared(p);
	return rc;
}

/* What each object's names and bodies say (FIT_*). */
static void fit_objects(struct kplan *p)
{
	struct chk *c = &p->R->c;

	for (size_t j = 0; j < c->nents; j++) {
		const struct chk_ent *e = &c->ents[j];
		uint32_t t;

		if (e->flags)
			continue;
		t = chk_obj_find(c, e->t0, e->t1, e->t2);
		if (t == CHK_NONE)
			continue;
		p->fit[t] |= FIT_NAMED;
		if ((c->objs[t].el0 >> 4) == e->dir)
			p->fit[t] |= FIT_LOC;
	}
	for (uint32_t i = 0; i < c->nobjs; i++) {
		const struct chk_obj *o = &c->objs[i];

		if (chk_body_find(c, o->el0, o->el1, o->el2))
			p->fit[i] |= FIT_BODY;
	}
}

/* Object ids two stat data have: all but one get a fresh one. */
static int plan_dups(struct kplan *p)
{
	struct chk *c = &p->R->c;
	size_t a = 0;

	while (a < c->nobjs) {
		size_t b = a + 1;
		uint32_t keep = CHK_NONE;
		unsigned n = 0;

		while (b < c->nobjs && p->byoid[b].oid == p->byoid[a].oid)
			b++;
		for (size_t i = a; i < b; i++) {
			uint32_t t = p->byoid[i].idx;

			if (p->fit[t] & FIT_MOVED)
				continue;
			n++;
			if (better(p, t, keep))
				keep = t;
		}
		for (size_t i = a; i < b && n > 1; i++) {
			uint32_t t = p->byoid[i].idx;
			const struct chk_obj *ob = &c->objs[t];
			struct kop *o;
			int rc;

			if (t == keep || (p->fit[t] & FIT_MOVED) ||
			    !(ob->flags & CHK_OBJ_LW) || is_dir(ob) ||
			    (ob->el2 & ~CHK_OID_MASK) ||
			    (ob->el0 & 0xf) != FMT_KEY_SD)
				continue;
			o = kop_add(p);
			if (!o)
				return -ENOMEM;
			o->kind = KOP_FRESH;
			o->obj = t;
			o->keeper = keep;
			obj_sdkey(ob, &o->from);
			o->to = o->from;
			o->why = keep_why(p, keep, t);
			rc = names_of(p, o, &o->from);
			if (rc)
				return rc;
		}
		a = b;
	}
	return 0;
}

static int plan(struct rep *R, struct kplan *p, int dups)
{
	struct chk *c = &R->c;
	int rc;

	memset(p, 0, sizeof(*p));
	p->R = R;
	p->byoid = chk_oid_index(c);
	p->fit = calloc(c->nobjs ? c->nobjs : 1, 1);
	if (!p->byoid || !p->fit)
		return -ENOMEM;
	fit_objects(p);
	rc = plan_names(p);
	if (!rc && dups)
		rc = plan_dups(p);
	return rc;
}

int rep_named_keys(struct rep *R, struct fmt_key **out, size_t *n)
{
	struct kplan p;
	int rc = plan(R, &p, 0);

	*out = NULL;
	*n = 0;
	if (!rc && p.n) {
		*out = malloc(p.n * sizeof(**out));
		if (!*out)
			rc = -ENOMEM;
		for (size_t i = 0; !rc && i < p.n; i++)
			if (p.v[i].kind == KOP_NAME)
				(*out)[(*n)++] = p.v[i].to;
		if (!rc && *n)
			qsort(*out, *n, sizeof(**out), key_cmp3);
	}
	kplan_free(&p);
	return rc;
}

/* ---- the moves ---- */

/* Move item it (its body a copy: next_of) to key 'to': the old item
 * deleted, the same bytes inserted at the same level. */
static int move_item(struct r4_txn *x, const struct tree_item *it,
		     const struct fmt_key *to, struct r4_error *err)
{
	int rc = tree_delete(&x->mod, it->level, &it->key, err);

	return rc ? rc : tree_insert(&x->mod, it->level, to, it->plugin_id,
				     it->body, it->len, err);
}

/* The first item with key >= k whose el[0..2] are k's, into *it with
 * a copy of its body (the caller frees it). R4_ENOTFOUND: none. */
static int next_of(struct r4_txn *x, const struct fmt_key *k,
		   struct tree_item *it, struct r4_error *err)
{
	struct tree_cursor cur;
	int rc;

	tree_cursor_init(&cur, x->vol);
	rc = tree_seek_ge(&cur, k, err);
	if (!rc)
		rc = tree_cur(&cur, it, err);
	if (!rc && (it->key.el[0] != k->el[0] || it->key.el[1] != k->el[1] ||
		    it->key.el[2] != k->el[2]))
		rc = R4_ENOTFOUND;
	if (!rc) {
		uint8_t *b = malloc(it->len ? it->len : 1);

		if (!b)
			rc = r4i_fail(err, -ENOMEM, "out of memory for the "
				      "repair");
		else
			memcpy(b, it->body, it->len);
		it->body = b;
	}
	tree_cursor_fini(&cur);
	return rc;
}

/* Stat data 'from' and its body items to key 'to' (el[3] 0). */
static int move_object(struct r4_txn *x, const struct fmt_key *from,
		       const struct fmt_key *to, uint64_t *items,
		       struct r4_error *err)
{
	struct fmt_key k = *from, nk;
	struct tree_item it;
	int rc = next_of(x, &k, &it, err);

	*items = 0;
	if (!rc && (it.key.el[3] || it.plugin_id != FMT_ITEM_STAT40)) {
		free((void *)it.body);
		rc = R4_ENOTFOUND;
	}
	if (rc == R4_ENOTFOUND) {
		char ks[FMT_KEY_STR_MAX];

		fmt_key_str(from, ks, sizeof(ks));
		return r4i_fail(err, R4_ENOTFOUND, "stat data [%s] is not in "
				"the tree", ks);
	}
	if (rc)
		return rc;
	rc = move_item(x, &it, to, err);
	free((void *)it.body);
	/* Body items: same element 1 and 2, body type. */
	k.el[0] = (from->el[0] & ~0xfULL) | FMT_KEY_BODY;
	k.el[3] = 0;
	while (!rc && !(rc = next_of(x, &k, &it, err))) {
		nk = it.key;
		nk.el[0] = (to->el[0] & ~0xfULL) | FMT_KEY_BODY;
		nk.el[1] = to->el[1];
		nk.el[2] = to->el[2];
		rc = move_item(x, &it, &nk, err);
		free((void *)it.body);
		if (!rc)
			(*items)++;
	}
	return rc == R4_ENOTFOUND ? 0 : rc;
}

static int apply(struct r4_txn *x, struct kop *o, struct r4_error *err)
{
	struct r4_objref ref;
	int rc;

	if (o->kind == KOP_ENTRY) {
		/* The entries point at the stat data: nothing moves. */
		o->oid = o->from.el[2] & CHK_OID_MASK;
		obj_ref_from_key(&o->from, &ref);
		rc = 0;
		goto names;
	}
	if (o->kind == KOP_FRESH) {
		o->oid = txn_next_oid(x->t);
		o->to = o->from;
		o->to.el[2] = (o->from.el[2] & ~CHK_OID_MASK) | o->oid;
	} else {
		o->oid = o->to.el[2] & CHK_OID_MASK;
	}
	rc = move_object(x, &o->from, &o->to, &o->items, err);
	obj_ref_from_key(&o->to, &ref);
names:
	for (size_t i = 0; i < o->nnames && !rc; i++) {
		struct obj_dir d;

		rc = obj_dir_open(x, &o->names[i].dir, &d, err);
		if (!rc)
			rc = obj_entry_set(x, &d, o->names[i].name,
					   o->names[i].len, &ref, err);
	}
	return rc;
}

static void report(struct rep *R, const struct kop *o)
{
	const struct chk *c = &R->c;
	char was[FMT_KEY_STR_MAX], now[FMT_KEY_STR_MAX];
	char keeps[FMT_KEY_STR_MAX];
	struct fmt_key kk;

	fmt_key_str(&o->from, was, sizeof(was));
	fmt_key_str(&o->to, now, sizeof(now));
	if (o->kind == KOP_ENTRY) {
		rep_action(R, R4_CHK_ENTRY, R4_CHECK_NO_BLOCK, o->oid,
			   R4_LOSS_NONE, 0, "entry '%s' of directory %llx "
			   "points at [%s], which no stat data has; stat data "
			   "[%s], which no entry named, is its object (%s): "
			   "%zu entr%s pointed there", o->entry ? o->entry :
			   "?", (unsigned long long)o->entry_dir, now, was,
			   o->why, o->nnames, o->nnames == 1 ? "y" : "ies");
		return;
	}
	if (o->kind == KOP_NAME) {
		rep_action(R, R4_CHK_ENTRY, R4_CHECK_NO_BLOCK, o->oid,
			   R4_LOSS_NONE, 0, "entry '%s' of directory %llx "
			   "points at [%s], which no stat data had; stat data "
			   "[%s], which no entry named, fits it (%s): re-keyed "
			   "there (%llu body items with it)",
			   o->entry ? o->entry : "?",
			   (unsigned long long)o->entry_dir, now, was, o->why,
			   (unsigned long long)o->items);
		return;
	}
	obj_sdkey(&c->objs[o->keeper], &kk);
	fmt_key_str(&kk, keeps, sizeof(keeps));
	rep_action(R, R4_CHK_OBJECT_DUP, R4_CHECK_NO_BLOCK, o->oid,
		   R4_LOSS_NONE, 0, "object id %llx is two stat data's: [%s] "
		   "keeps it (%s); [%s] given the new object id %llx: stat "
		   "data and %llu body items re-keyed to [%s], %zu entr%s "
		   "pointed there%s", (unsigned long long)fmt_key_objectid(
		   &o->from), keeps, o->why, was, (unsigned long long)o->oid,
		   (unsigned long long)o->items, now, o->nnames,
		   o->nnames == 1 ? "y" : "ies", o->nnames ? "" :
		   " (no name: it goes to /lost+found)");
}

/* ops[a..b) in one transaction: 0 when committed. */
static int run_batch(struct rep *R, struct kplan *p, size_t a, size_t b,
		     struct r4_error *err)
{
	struct r4_txn *x = NULL;
	int rc = r4_txn_begin(R->vol, &x, err);

	if (rc)
		return rc;
	for (size_t i = a; i < b && !rc; i++)
		rc = apply(x, &p->v[i], err);
	if (rc) {
		r4_txn_abort(x);
		return rc;
	}
	rc = r4_txn_commit(x, err);
	if (rc)
		return rc;
	R->r->transactions++;
	for (size_t i = a; i < b; i++)
		report(R, &p->v[i]);
	return 0;
}

struct kctx {
	struct rep *R;
	struct kplan *p;
};

static int batch_of(void *ctx, size_t a, size_t b, struct r4_error *err)
{
	struct kctx *k = ctx;

	return run_batch(k->R, k->p, a, b, err);
}

static void who_of(void *ctx, size_t i, int *code, uint64_t *oid)
{
	const struct kctx *k = ctx;

	*code = k->p->v[i].kind == KOP_FRESH ? R4_CHK_OBJECT_DUP :
					       R4_CHK_ENTRY;
	*oid = fmt_key_objectid(&k->p->v[i].from);
}

int rep_fix_keys(struct rep *R, int *changed)
{
	struct kplan p;
	struct kctx k = { R, &p };
	int rc;

	/* a round over the bounded check's list: nothing to move
	 * (repair.c: listed) */
	if (R->c.fixes_want)
		return 0;
	rc = plan(R, &p, 1);

	if (!rc)
		rc = rep_batches(R, p.n, batch_of, who_of, &k, changed);
	if (rc == -ENOMEM)
		rc = r4i_fail(R->err, rc, "out of memory for the repair");
	kplan_free(&p);
	return rc;
}
