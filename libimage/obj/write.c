/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: stat data and directory entries changed inside a transaction. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/obj/write.h"
#include "libimage/obj/encode.h"
#include "libimage/vol/volume.h"
#include "libimage/util/err.h"
#include "libimage/tree/tree.h"
#include "format/node.h"
#include "format/plugin.h"

int obj_dir_open(struct r4_txn *x, const struct r4_objref *ref,
		 struct obj_dir *d, struct r4_error *err)
{
	struct obj_plugins pl;
	struct obj_sd sd;
	int rc = obj_sd_get(x->vol, ref, &sd, err);

	if (rc)
		return rc;
	if (sd.plugin != FMT_OBJ_DIR40) {
		obj_sd_put(&sd);
		return r4i_fail(err, -ENOTDIR, "%s: object %llx is not a "
			       "directory", obj_vol_name(x->vol),
			       (unsigned long long)ref->oid);
	}
	rc = obj_plugins_get(x->vol, ref, &sd, &pl, err);
	obj_sd_put(&sd);
	d->ref = *ref;
	d->hash = pl.hash;
	d->fibre = pl.fibre;
	return rc;
}

int obj_sd_write(struct r4_txn *x, const struct r4_objref *ref,
		 const struct fmt_stat *st, int insert, struct r4_error *err)
{
	struct fmt_key k;
	uint8_t *buf;
	size_t len;
	int rc = fmt_stat_size(st, &len);

	if (rc)
		return r4i_fail(err, rc, "object %llx: cannot encode its stat "
			       "data: %s", (unsigned long long)ref->oid,
			       r4_strerror(rc));
	if (len > tree_max_item(&x->mod))
		return r4i_fail(err, R4_EINVAL, "object %llx: stat data of "
			       "%zu bytes does not fit in a node",
			       (unsigned long long)ref->oid, len);
	obj_new_plan_sd(x, ref->oid, st);
	buf = malloc(len);
	if (!buf)
		return r4i_fail(err, -ENOMEM, "out of memory");
	rc = fmt_stat_encode(st, buf, len);
	obj_sd_key(x->vol, ref, &k);
	if (!rc)
		rc = insert ? tree_insert(&x->mod, 1, &k, FMT_ITEM_STAT40, buf,
					  len, err) :
			      tree_replace(&x->mod, 1, &k, FMT_ITEM_STAT40, buf,
					   len, err);
	else
		rc = r4i_fail(err, rc, "cannot encode a stat data");
	free(buf);
	return rc;
}

int obj_sd_delete(struct r4_txn *x, const struct r4_objref *ref,
		  struct r4_error *err)
{
	struct fmt_key k;

	obj_new_plan_sd(x, ref->oid, NULL);
	obj_sd_key(x->vol, ref, &k);
	return tree_delete(&x->mod, 1, &k, err);
}

/* The leaf item tree_mod_peek found, its body in body. */
static void peek_item(struct tree_item *it, const struct tree_peek *pk,
		      const uint8_t *body)
{
	memset(it, 0, sizeof(*it));
	it->blk = pk->blk;
	it->level = FMT_NODE_LEAF_LEVEL;
	it->pos = pk->pos;
	it->plugin_id = pk->pid;
	it->key = pk->key;
	it->body = body;
	it->len = pk->len;
}

/* obj_sd_get through tree_mod_peek: a deferred leaf is read, not
 * written; anything but the item itself is left to obj_sd_get. */
int obj_sd_get_txn(struct r4_txn *x, const struct r4_objref *ref,
		      struct obj_sd *sd, struct r4_error *err)
{
	struct tree_peek pk;
	struct tree_item it;
	struct fmt_key k;
	int rc;

	obj_sd_key(x->vol, ref, &k);
	rc = tree_mod_peek(&x->mod, &k, &pk, &x->find_in, &x->find_incap,
			   err);
	if (rc < 0)
		return rc;
	if (rc || fmt_key_cmp(&pk.key, &k) || pk.pid != FMT_ITEM_STAT40)
		return obj_sd_get(x->vol, ref, sd, err);
	peek_item(&it, &pk, x->find_in);
	return obj_sd_from_item(x->vol, &it, sd, err);
}

/* ---- entries ---------------------------------------------------------- */

/* The cde40 item of the directory whose key is the largest <= k. body
 * and e are the transaction's scratch buffers (x->cde_in, x->cde_e):
 * one struct cde at a time. */
struct cde {
	struct fmt_key key;
	uint8_t *body;
	size_t len;
	struct fmt_cde40_entry *e;
	int n;
	int checked;	/* from a cached item marked checked (tree_peek) */
};

static void cde_free(struct cde *c)
{
	memset(c, 0, sizeof(*c));
}

void obj_txn_scratch_free(struct r4_txn *x)
{
	obj_dsd_free(x);
	free(x->cde_e);
	free(x->cde_in);
	free(x->cde_out[0]);
	free(x->cde_out[1]);
	free(x->tail_buf);
	x->tail_buf = NULL;
	x->tail_bufcap = 0;
	free(x->find_in);
	x->find_in = NULL;
	x->find_incap = 0;
	x->cde_e = NULL;
	x->cde_in = x->cde_out[0] = x->cde_out[1] = NULL;
	x->cde_ecap = x->cde_incap = x->cde_outcap[0] = x->cde_outcap[1] = 0;
}

/* Item c is a sound cde40 item (fmt_cde40_verify), or an error. */
static int cde_check(struct r4_txn *x, const struct cde *c,
		     struct r4_error *err)
{
	int bad = -1;
	const char *why = fmt_cde40_verify(c->body, c->len, x->vol->keypol,
					   &bad);

	if (why)
		return r4i_fail(err, R4_ECORRUPT, "%s: directory item: entry "
			       "%d: %s", obj_vol_name(x->vol), bad, why);
	return 0;
}

/* The entries of checked item c into c->e (room for one more). */
static int cde_entries(struct r4_txn *x, struct cde *c, struct r4_error *err)
{
	enum fmt_key_policy pol = x->vol->keypol;
	int rc = 0;

	c->n = fmt_cde40_units(c->body, c->len, pol);
	/* room for one more: obj_entry_add inserts in place */
	if (R4_RESERVE(x->cde_e, x->cde_ecap, (size_t)c->n + 1, 64))
		return r4i_fail(err, -ENOMEM, "out of memory");
	c->e = x->cde_e;
	memset(c->e, 0, ((size_t)c->n + 1) * sizeof(*c->e));
	for (int i = 0; !rc && i < c->n; i++)
		rc = fmt_cde40_entry(c->body, c->len, pol, (unsigned)i,
				     &c->e[i]);
	return rc ? r4i_fail(err, rc, "bad directory entry") : 0;
}

/* 0 when the item with key and plugin pid (block blk, item pos) is a
 * cde40 item of directory dir, R4_ENOTFOUND when it is not dir's, else
 * an error. */
static int cde_item_ok(struct r4_txn *x, uint64_t dir,
		       const struct fmt_key *key, unsigned pid, uint64_t blk,
		       unsigned pos, struct r4_error *err)
{
	if (fmt_key_type(key) != FMT_KEY_FILE_NAME ||
	    fmt_key_locality(key) != dir)
		return R4_ENOTFOUND;
	if (pid != FMT_ITEM_CDE40)
		return r4i_fail(err, R4_EUNSUPP, "%s: tree node %llu, item "
			       "%u: directory item plugin %u (only cde40)",
			       obj_vol_name(x->vol), (unsigned long long)blk,
			       pos, pid);
	return 0;
}

/* The directory item at or before k read from the volume's tree (the
 * transaction's deferred leaves are not for it), its body copied into
 * x->cde_in. */
static int cde_from_tree(struct r4_txn *x, uint64_t dir,
			 const struct fmt_key *k, struct cde *c,
			 struct r4_error *err)
{
	struct tree_cursor cur;
	struct tree_item it;
	int rc;

	tree_cursor_init(&cur, x->vol);
	rc = tree_seek_le(&cur, k, err);
	if (!rc)
		rc = tree_cur(&cur, &it, err);
	if (!rc)
		rc = cde_item_ok(x, dir, &it.key, it.plugin_id, it.blk, it.pos,
				 err);
	if (!rc) {
		c->key = it.key;
		c->len = it.len;
		if (!R4_RESERVE(x->cde_in, x->cde_incap, it.len ? it.len : 1,
				1024)) {
			c->body = x->cde_in;
			memcpy(c->body, it.body, it.len);
		} else {
			rc = r4i_fail(err, -ENOMEM, "out of memory");
		}
	}
	tree_cursor_fini(&cur);
	return rc;
}

/* Directory dir's item at or before key k into c, not decoded: from the
 * transaction's own leaves first, else from the tree. */
static int cde_get(struct r4_txn *x, uint64_t dir, const struct fmt_key *k,
		   struct cde *c, struct r4_error *err)
{
	struct tree_peek pk;
	int rc;

	memset(c, 0, sizeof(*c));
	/* from the transaction's own (deferred) leaves when the path ends
	 * on the item: no leaf is written for a look */
	rc = tree_mod_peek(&x->mod, k, &pk, &x->cde_in, &x->cde_incap, err);
	if (rc < 0)
		return rc;
	if (!rc) {
		rc = cde_item_ok(x, dir, &pk.key, pk.pid, pk.blk, pk.pos, err);
		c->checked = pk.checked;
		c->key = pk.key;
		c->body = x->cde_in;
		c->len = pk.len;
	} else {
		rc = cde_from_tree(x, dir, k, c, err);
	}
	return rc;
}

/* Directory dir's item at or before key k, checked and decoded into c. */
static int cde_find(struct r4_txn *x, uint64_t dir, const struct fmt_key *k,
		    struct cde *c, struct r4_error *err)
{
	int rc = cde_get(x, dir, k, c, err);

	if (!rc && !c->checked)
		rc = cde_check(x, c, err);
	if (!rc)
		rc = cde_entries(x, c, err);
	if (rc)
		cde_free(c);
	return rc;
}

int obj_find_in_txn(struct r4_txn *x, const struct obj_dir *d,
		    const char *name, size_t len, struct r4_objref *out,
		    struct r4_error *err)
{
	struct tree_peek pk;
	struct tree_item it;
	struct fmt_key k;
	int rc = fmt_key_entry(&k, x->vol->keypol, d->ref.oid, name, len,
			       (unsigned)d->hash, (unsigned)d->fibre);

	if (rc)
		return 1;	/* obj_dir_find says why */
	rc = tree_mod_peek(&x->mod, &k, &pk, &x->find_in, &x->find_incap,
			   err);
	if (rc)
		return rc;
	if (fmt_key_type(&pk.key) != FMT_KEY_FILE_NAME ||
	    fmt_key_locality(&pk.key) != d->ref.oid ||
	    pk.pid != FMT_ITEM_CDE40)
		return 1;
	peek_item(&it, &pk, x->find_in);
	if (!pk.checked) {
		/* verified once while its bytes stay as they are: the add
		 * that follows a lookup finds it marked */
		rc = obj_dir_item_count(x->vol, &it, err);
		if (rc < 0)
			return rc;
		tree_mod_mark_checked(&x->mod, &pk, x->find_in);
	}
	rc = obj_dir_item_find(x->vol, &it, &k, name, len, 1, out, err);
	/* every entry is below the key: obj_dir_find would go on to the
	 * next items while they are the directory's; the key after the
	 * item (tree_mod_peek) tells whether there are any */
	if (rc == 1 && (pk.next_at < 0 ||
			fmt_key_type(&pk.next) != FMT_KEY_FILE_NAME ||
			fmt_key_locality(&pk.next) != d->ref.oid))
		rc = R4_ENOTFOUND;
	return rc;
}

static int ent_cmp_key(const struct fmt_cde40_entry *e, const struct fmt_key *k)
{
	if (e->ordering != k->el[1])
		return e->ordering < k->el[1] ? -1 : 1;
	if (e->objectid != k->el[2])
		return e->objectid < k->el[2] ? -1 : 1;
	if (e->offset != k->el[3])
		return e->offset < k->el[3] ? -1 : 1;
	return 0;
}

/* Index of the entry for (k, name), or -1; *ins = where it would go. */
/* Entry e (of key k) is the one named name: a short name is its key,
 * a long one is stored in it. */
static int ent_names(const struct fmt_cde40_entry *e, const char *name,
		     size_t len, enum fmt_key_policy pol)
{
	return !fmt_cde40_entry_is_long(e, pol) ||
	       (e->name_len == len && !memcmp(e->name, name, len));
}

static int cde_lookup(const struct cde *c, const struct fmt_key *k,
		      const char *name, size_t len, enum fmt_key_policy pol,
		      int *ins)
{
	int i = 0;

	while (i < c->n && ent_cmp_key(&c->e[i], k) < 0)
		i++;
	*ins = i;
	for (; i < c->n && !ent_cmp_key(&c->e[i], k); i++) {
		if (ent_names(&c->e[i], name, len, pol))
			return i;
		*ins = i + 1;
	}
	return -1;
}

/* Store entries e[0..n) in place of item c (n == 0: delete it), as one
 * item or two when one would not fit. */
static int cde_store(struct r4_txn *x, const struct cde *c,
		     const struct fmt_cde40_entry *e, size_t n, int insert,
		     struct r4_error *err)
{
	enum fmt_key_policy pol = x->vol->keypol;
	struct tree_newitem it[2];
	uint8_t *buf[2] = { NULL, NULL };
	size_t parts = 1, cut[3] = { 0, n, n }, size = 0;
	int rc = 0;

	if (!n)
		return tree_delete(&x->mod, 1, &c->key, err);
	rc = fmt_cde40_size(e, n, pol, &size);
	if (!rc && size > tree_max_item(&x->mod)) {
		parts = 2;
		cut[1] = n / 2;
	}
	for (size_t p = 0; !rc && p < parts; p++) {
		size_t k = cut[p + 1] - cut[p];

		rc = fmt_cde40_size(e + cut[p], k, pol, &size);
		if (!rc && R4_RESERVE(x->cde_out[p], x->cde_outcap[p], size,
				      1024))
			rc = -ENOMEM;
		buf[p] = rc ? NULL : x->cde_out[p];
		if (!rc)
			rc = fmt_cde40_encode(e + cut[p], k, pol, buf[p], size);
		fmt_cde40_entry_key(&c->key, &e[cut[p]], &it[p].key);
		it[p].pid = FMT_ITEM_CDE40;
		it[p].body = buf[p];
		it[p].len = size;
	}
	if (rc)
		rc = r4i_fail(err, rc, "cannot encode a directory item: %s",
			     r4_strerror(rc));
	else
		rc = tree_put_items(&x->mod, 1, insert ? &it[0].key : &c->key,
				    !insert, it, parts, err);
	return rc;
}

static int entry_key(struct r4_txn *x, const struct obj_dir *d,
		     const char *name, size_t len, struct fmt_key *k,
		     struct r4_error *err)
{
	int rc = fmt_key_entry(k, x->vol->keypol, d->ref.oid, name, len,
			       (unsigned)d->hash, (unsigned)d->fibre);

	if (rc)
		return r4i_fail(err, rc, "directory %llx: hash %d or fibration "
			       "%d unknown", (unsigned long long)d->ref.oid,
			       d->hash, d->fibre);
	return 0;
}

static void entry_fill(struct r4_txn *x, struct fmt_cde40_entry *e,
		       const struct fmt_key *k, const char *name, size_t len,
		       const struct r4_objref *target)
{
	struct fmt_key sd;

	obj_sd_key(x->vol, target, &sd);
	enc_cde_entry(e, x->vol->keypol, k, &sd, name, len);
}

/* Item it in place of checked item c, spliced from c's bytes (one entry
 * in, entry_splice, or out, entry_cut), and marked checked where the
 * writer's cache holds it as put: the lookup of the next name does not
 * verify it again. Sound because c's bytes were verified (marked, or
 * cde_check) and a splice keeps an item sound: the headers stay in key
 * order (an entry goes in where fmt_cde40_seek puts its key, none of
 * the item has that key), each body stays right after the one before
 * and as long as its header says (fmt_cde40_size refused a new entry's
 * name with a NUL in it); what fmt_cde40_verify checks of c holds of
 * it. */
static int put_marked(struct r4_txn *x, const struct cde *c,
		      const struct tree_newitem *it, struct r4_error *err)
{
	int rc = tree_put_items(&x->mod, 1, &c->key, 1, it, 1, err);

	if (!rc)
		tree_mod_mark_put(&x->mod, &it->key, it->pid, it->body,
				  it->len);
	return rc;
}

/* Entry ne (key k) into checked item c as one more unit, the item's
 * bytes spliced, not decoded and encoded again (the same bytes: a
 * checked item is laid out as fmt_cde40_encode lays it out). 1 when
 * that does not apply: an entry of c has key k (a name exists, or a
 * long name shares the hash), the item must split, or ne does not
 * encode; the caller then goes the whole-item way. */
static int entry_splice(struct r4_txn *x, const struct cde *c,
			const struct fmt_cde40_entry *ne,
			const struct fmt_key *k, struct r4_error *err)
{
	enum fmt_key_policy pol = x->vol->keypol;
	struct fmt_cde40_entry e0;
	struct tree_newitem it;
	int n = fmt_cde40_units(c->body, c->len, pol);
	int i = fmt_cde40_seek(c->body, c->len, pol, k);
	size_t one, size;

	if (n <= 0 || i < 0 || fmt_cde40_size(ne, 1, pol, &one))
		return 1;
	if (i < n && (fmt_cde40_entry(c->body, c->len, pol, (unsigned)i,
				      &e0) || !ent_cmp_key(&e0, k)))
		return 1;
	size = c->len + one - FMT_CDE40_UNITS_SIZE;
	if (size > tree_max_item(&x->mod))
		return 1;
	if (R4_RESERVE(x->cde_out[0], x->cde_outcap[0], size, 1024))
		return r4i_fail(err, -ENOMEM, "out of memory");
	if (fmt_cde40_insert(c->body, c->len, pol, (unsigned)i, ne,
			     x->cde_out[0], size))
		return 1;
	if (i && fmt_cde40_entry(c->body, c->len, pol, 0, &e0))
		return 1;
	fmt_cde40_entry_key(&c->key, i ? &e0 : ne, &it.key);
	it.pid = FMT_ITEM_CDE40;
	it.body = x->cde_out[0];
	it.len = size;
	return put_marked(x, c, &it, err);
}

/* The whole-item way: entry ne (key k) into checked item c, decoded,
 * inserted and encoded again (split in two when it must). */
static int entry_insert(struct r4_txn *x, const struct obj_dir *d,
			struct cde *c, const struct fmt_cde40_entry *ne,
			const struct fmt_key *k, const char *name,
			size_t len, struct r4_error *err)
{
	int rc = cde_entries(x, c, err), ins;

	if (rc)
		return rc;
	if (cde_lookup(c, k, name, len, x->vol->keypol, &ins) >= 0 ||
	    (ins < c->n && !ent_cmp_key(&c->e[ins], k)))
		return r4i_fail(err, R4_EEXIST, "directory %llx: \"%.*s\" "
			       "exists (or has the key of another name)",
			       (unsigned long long)d->ref.oid, (int)len, name);
	memmove(c->e + ins + 1, c->e + ins,
		(size_t)(c->n - ins) * sizeof(*c->e));
	c->e[ins] = *ne;
	return cde_store(x, c, c->e, (size_t)c->n + 1, 0, err);
}

int obj_entry_add(struct r4_txn *x, const struct obj_dir *d,
		  const char *name, size_t len, const struct r4_objref *target,
		  struct r4_error *err)
{
	struct fmt_cde40_entry ne;
	struct fmt_key k;
	struct cde c;
	int rc = entry_key(x, d, name, len, &k, err);

	if (rc)
		return rc;
	entry_fill(x, &ne, &k, name, len, target);
	rc = cde_get(x, d->ref.oid, &k, &c, err);
	if (rc == R4_ENOTFOUND) {
		c.key = k;
		return cde_store(x, &c, &ne, 1, 1, err);
	}
	/* the lookup before the add (obj_find_in_txn) verified and marked
	 * the item when it came from the writer's cache and did not change
	 * since */
	if (!rc && !c.checked)
		rc = cde_check(x, &c, err);
	if (!rc)
		rc = entry_splice(x, &c, &ne, &k, err);
	if (rc == 1)
		rc = entry_insert(x, d, &c, &ne, &k, name, len, err);
	cde_free(&c);
	return rc;
}

/* Find the entry (name) of d: c filled, *idx its index. */
static int entry_at(struct r4_txn *x, const struct obj_dir *d,
		    const char *name, size_t len, struct cde *c, int *idx,
		    struct r4_error *err)
{
	struct fmt_key k;
	int rc = entry_key(x, d, name, len, &k, err), ins;

	if (!rc)
		rc = cde_find(x, d->ref.oid, &k, c, err);
	if (!rc && (*idx = cde_lookup(c, &k, name, len, x->vol->keypol,
				      &ins)) < 0) {
		cde_free(c);
		rc = R4_ENOTFOUND;
	}
	if (rc == R4_ENOTFOUND)
		return r4i_fail(err, R4_ENOTFOUND, "directory %llx: no entry "
			       "\"%.*s\"", (unsigned long long)d->ref.oid,
			       (int)len, name);
	return rc;
}

/* An entry goes or changes: the directory r4_txn_add_entry reached by
 * a path may no longer be there (x->pd_path). */
static void forget_dir(struct r4_txn *x)
{
	free(x->pd_path);
	x->pd_path = NULL;
	x->pd_len = 0;
}

/* Index of the entry for (k, name) in checked item c, found from its
 * unit headers (only the units of key k decoded), as cde_lookup;
 * R4_ENOTFOUND (nothing said) when there is none. */
static int cde_index(struct r4_txn *x, const struct cde *c,
		     const struct fmt_key *k, const char *name, size_t len,
		     struct r4_error *err)
{
	enum fmt_key_policy pol = x->vol->keypol;
	struct fmt_cde40_entry e;
	int n = fmt_cde40_units(c->body, c->len, pol);
	int i = fmt_cde40_seek(c->body, c->len, pol, k), rc;

	if (n < 0 || i < 0)
		return r4i_fail(err, R4_ECORRUPT, "bad directory entry");
	for (; i < n; i++) {
		rc = fmt_cde40_entry(c->body, c->len, pol, (unsigned)i, &e);
		if (rc)
			return r4i_fail(err, rc, "bad directory entry");
		if (ent_cmp_key(&e, k))
			break;
		if (ent_names(&e, name, len, pol))
			return i;
	}
	return R4_ENOTFOUND;
}

/* Unit idx out of checked item c, the item's bytes spliced as
 * entry_splice splices one in (the bytes cde_store would write of the
 * other entries); the item goes when it was its only one. 1 when the
 * rest is too big for one item (only an item larger than this tree
 * makes them: cde_store splits it). */
static int entry_cut(struct r4_txn *x, const struct cde *c, int idx,
		     struct r4_error *err)
{
	enum fmt_key_policy pol = x->vol->keypol;
	struct fmt_cde40_entry e0;
	struct tree_newitem it;
	int n = fmt_cde40_units(c->body, c->len, pol), rc;

	if (n == 1)
		return tree_delete(&x->mod, 1, &c->key, err);
	if (R4_RESERVE(x->cde_out[0], x->cde_outcap[0], c->len, 1024))
		return r4i_fail(err, -ENOMEM, "out of memory");
	rc = fmt_cde40_remove(c->body, c->len, pol, (unsigned)idx,
			      x->cde_out[0], c->len, &it.len);
	if (!rc)
		rc = fmt_cde40_entry(x->cde_out[0], it.len, pol, 0, &e0);
	if (rc)
		return r4i_fail(err, rc, "cannot take an entry out of a "
			       "directory item: %s", r4_strerror(rc));
	if (it.len > tree_max_item(&x->mod))
		return 1;	/* cde_store splits it */
	fmt_cde40_entry_key(&c->key, &e0, &it.key);
	it.pid = FMT_ITEM_CDE40;
	it.body = x->cde_out[0];
	return put_marked(x, c, &it, err);
}

int obj_entry_del(struct r4_txn *x, const struct obj_dir *d,
		  const char *name, size_t len, struct r4_error *err)
{
	struct fmt_key k;
	struct cde c;
	int idx = -1, rc;

	forget_dir(x);
	memset(&c, 0, sizeof(c));
	rc = entry_key(x, d, name, len, &k, err);
	if (!rc)
		rc = cde_get(x, d->ref.oid, &k, &c, err);
	/* as the add: the lookup before marked the item when it did not
	 * change since */
	if (!rc && !c.checked)
		rc = cde_check(x, &c, err);
	if (!rc && (idx = cde_index(x, &c, &k, name, len, err)) < 0)
		rc = idx;
	if (rc == R4_ENOTFOUND)
		rc = r4i_fail(err, R4_ENOTFOUND, "directory %llx: no entry "
			      "\"%.*s\"", (unsigned long long)d->ref.oid,
			      (int)len, name);
	if (!rc)
		rc = entry_cut(x, &c, idx, err);
	if (rc == 1) {
		rc = cde_entries(x, &c, err);
		if (!rc) {
			memmove(c.e + idx, c.e + idx + 1,
				(size_t)(c.n - idx - 1) * sizeof(*c.e));
			rc = cde_store(x, &c, c.e, (size_t)c.n - 1, 0, err);
		}
	}
	cde_free(&c);
	return rc;
}

int obj_entry_set(struct r4_txn *x, const struct obj_dir *d,
		  const char *name, size_t len, const struct r4_objref *target,
		  struct r4_error *err)
{
	struct cde c;
	int idx = 0, rc;

	forget_dir(x);
	rc = entry_at(x, d, name, len, &c, &idx, err);

	if (rc)
		return rc;
	obj_sd_key(x->vol, target, &c.e[idx].target);
	rc = cde_store(x, &c, c.e, (size_t)c.n, 0, err);
	cde_free(&c);
	return rc;
}

int obj_dir_body(struct r4_txn *x, const struct obj_dir *d,
		 const struct r4_objref *parent, struct r4_error *err)
{
	struct fmt_cde40_entry e[2];
	struct fmt_key k0, k1;
	struct cde c;
	int rc = entry_key(x, d, ".", 1, &k0, err);

	if (!rc)
		rc = entry_key(x, d, "..", 2, &k1, err);
	if (rc)
		return rc;
	entry_fill(x, &e[0], &k0, ".", 1, &d->ref);
	entry_fill(x, &e[1], &k1, "..", 2, parent);
	if (fmt_key_cmp(&k1, &k0) < 0) {
		struct fmt_cde40_entry t = e[0];

		e[0] = e[1];
		e[1] = t;
		k0 = k1;
	}
	memset(&c, 0, sizeof(c));
	c.key = k0;
	return cde_store(x, &c, e, 2, 1, err);
}

int obj_dir_kill(struct r4_txn *x, uint64_t dir_oid, struct r4_error *err)
{
	struct fmt_key k = { { dir_oid << 4 | FMT_KEY_FILE_NAME, ~0ULL, ~0ULL,
			       ~0ULL } };
	struct cde c;
	int rc;

	while (!(rc = cde_find(x, dir_oid, &k, &c, err))) {
		rc = tree_delete(&x->mod, 1, &c.key, err);
		cde_free(&c);
		if (rc)
			return rc;
	}
	return rc == R4_ENOTFOUND ? 0 : rc;
}
