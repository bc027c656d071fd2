/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: directories: entries in key order, name lookup, paths. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "libimage/obj/obj.h"
#include "libimage/vol/volume.h"
#include "libimage/util/err.h"
#include "libimage/tree/tree.h"
#include "format/plugin.h"

#define NAME_MAX_BYTES 255

/* Name of entry e of an item: stored, or recovered from the key. */
static int entry_name(struct r4_vol *vol, const struct tree_item *it,
		      const struct fmt_cde40_entry *e, unsigned u,
		      const struct fmt_key *ek, char *buf, size_t *len,
		      struct r4_error *err)
{
	if (fmt_cde40_entry_is_long(e, vol->keypol)) {
		if (!e->name || e->name_len == 0 ||
		    e->name_len > NAME_MAX_BYTES)
			return r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu, "
				       "item %u, entry %u: long name missing "
				       "or over %d bytes", obj_vol_name(vol),
				       (unsigned long long)it->blk, it->pos,
				       u, NAME_MAX_BYTES);
		memcpy(buf, e->name, e->name_len);
		*len = e->name_len;
	} else {
		*len = fmt_key_entry_name(ek, vol->keypol, buf);
		if (*len == 0)
			return r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu, "
				       "item %u, entry %u: empty name",
				       obj_vol_name(vol),
				       (unsigned long long)it->blk, it->pos,
				       u);
	}
	buf[*len] = '\0';
	return 0;
}

/* Entry u of a cde40 item and its key. */
static int entry_at(struct r4_vol *vol, const struct tree_item *it, int u,
		    struct fmt_cde40_entry *e, struct fmt_key *ek,
		    struct r4_error *err)
{
	int rc = fmt_cde40_entry(it->body, it->len, vol->keypol, (unsigned)u,
				 e);

	if (rc)
		return r4i_fail(err, rc, "%s: tree node %llu, item %u, "
			       "entry %d: %s", obj_vol_name(vol),
			       (unsigned long long)it->blk, it->pos, u,
			       r4_strerror(rc));
	fmt_cde40_entry_key(&it->key, e, ek);
	return 0;
}

int obj_dir_item_entry(struct r4_vol *vol, const struct tree_item *it,
		       int u, char *name, size_t *len, struct fmt_key *key,
		       struct r4_objref *target, struct r4_error *err)
{
	struct fmt_cde40_entry e;
	int rc = entry_at(vol, it, u, &e, key, err);

	if (!rc)
		rc = entry_name(vol, it, &e, (unsigned)u, key, name, len, err);
	if (!rc)
		obj_ref_from_key(&e.target, target);
	return rc;
}

int obj_dir_item_count(struct r4_vol *vol, const struct tree_item *it,
		       struct r4_error *err)
{
	int bad = -1;
	const char *why = fmt_cde40_verify(it->body, it->len, vol->keypol,
					   &bad);

	if (why)
		return r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu, item %u "
			       "(cde40), entry %d: %s", obj_vol_name(vol),
			       (unsigned long long)it->blk, it->pos, bad, why);
	return fmt_cde40_units(it->body, it->len, vol->keypol);
}

/* Call fn for each entry of a cde40 item. */
static int item_entries(struct r4_vol *vol, const struct tree_item *it,
			obj_entry_fn fn, void *ctx, struct r4_error *err)
{
	struct fmt_cde40_entry e;
	struct r4_objref target;
	struct fmt_key ek;
	char name[NAME_MAX_BYTES + 1];
	size_t len = 0;
	int n, rc, bad = -1;
	const char *why;

	why = fmt_cde40_verify(it->body, it->len, vol->keypol, &bad);
	if (why)
		return r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu, item %u "
			       "(cde40), entry %d: %s", obj_vol_name(vol),
			       (unsigned long long)it->blk, it->pos, bad, why);
	n = fmt_cde40_units(it->body, it->len, vol->keypol);
	for (int u = 0; u < n; u++) {
		rc = entry_at(vol, it, u, &e, &ek, err);
		if (rc)
			return rc;
		rc = entry_name(vol, it, &e, (unsigned)u, &ek, name, &len,
				err);
		if (rc)
			return rc;
		obj_ref_from_key(&e.target, &target);
		rc = fn(ctx, name, len, &ek, &target);
		if (rc)
			return rc;
	}
	return 0;
}

/* Entries from the cursor's item on, while they belong to the dir. */
static int iter_from(struct r4_vol *vol, struct tree_cursor *c,
		     uint64_t dir_oid, obj_entry_fn fn, void *ctx,
		     struct r4_error *err)
{
	struct tree_item it;
	int rc = 0;

	while (!rc) {
		rc = tree_cur(c, &it, err);
		if (rc)
			break;
		if (fmt_key_type(&it.key) != FMT_KEY_FILE_NAME ||
		    fmt_key_locality(&it.key) != dir_oid)
			break;
		if (it.plugin_id != FMT_ITEM_CDE40)
			return r4i_fail(err, R4_EUNSUPP, "%s: tree node %llu, "
				       "item %u: directory item plugin %u is "
				       "not supported (only cde40)",
				       obj_vol_name(vol),
				       (unsigned long long)it.blk, it.pos,
				       it.plugin_id);
		rc = item_entries(vol, &it, fn, ctx, err);
		if (!rc)
			rc = tree_next(c, err);
	}
	return rc == R4_ENOTFOUND ? 0 : rc;
}

int obj_dir_iter(struct r4_vol *vol, uint64_t dir_oid, obj_entry_fn fn,
		 void *ctx, struct r4_error *err)
{
	struct tree_cursor c;
	struct fmt_key k = { { dir_oid << 4 | FMT_KEY_FILE_NAME, 0, 0, 0 } };
	int rc;

	tree_cursor_init(&c, vol);
	rc = tree_seek_ge(&c, &k, err);
	if (!rc)
		rc = iter_from(vol, &c, dir_oid, fn, ctx, err);
	else if (rc == R4_ENOTFOUND)
		rc = 0;
	tree_cursor_fini(&c);
	return rc;
}

struct find {
	const struct fmt_key *key;
	const char *name;
	size_t len;
	int stored;
	struct r4_objref *out;
	int verified;	/* the item was verified (fmt_cde40_verify) */
};

enum { FIND_FOUND = 1, FIND_PAST = 2 };

static int find_fn(void *ctx, const char *name, size_t len,
		   const struct fmt_key *key, const struct r4_objref *target)
{
	struct find *f = ctx;
	int cmp = fmt_key_cmp(key, f->key);

	if (cmp > 0)
		return FIND_PAST;
	if (cmp < 0)
		return 0;
	if (f->stored && (len != f->len || memcmp(name, f->name, len)))
		return 0;	/* same hash, another long name */
	*f->out = *target;
	return FIND_FOUND;
}

/* find_fn over the entries of cde40 item it from the first whose key is
 * >= f->key (found by halving: a directory item holds its entries in key
 * order): FIND_FOUND, FIND_PAST, 0 when every entry is below the key
 * (the next item may hold it), or an error. */
static int item_find(struct r4_vol *vol, const struct tree_item *it,
		     struct find *f, struct r4_error *err)
{
	struct fmt_cde40_entry e;
	struct r4_objref target;
	struct fmt_key ek;
	char name[NAME_MAX_BYTES + 1];
	size_t len = 0;
	int n, lo = 0, hi, rc, bad = -1;
	const char *why = f->verified ? NULL :
			  fmt_cde40_verify(it->body, it->len, vol->keypol,
					   &bad);

	if (why)
		return r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu, item %u "
			       "(cde40), entry %d: %s", obj_vol_name(vol),
			       (unsigned long long)it->blk, it->pos, bad, why);
	n = fmt_cde40_units(it->body, it->len, vol->keypol);
	for (hi = n; lo < hi;) {
		int mid = lo + (hi - lo) / 2;

		rc = entry_at(vol, it, mid, &e, &ek, err);
		if (rc)
			return rc;
		if (fmt_key_cmp(&ek, f->key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (int u = lo; u < n; u++) {
		rc = entry_at(vol, it, u, &e, &ek, err);
		if (rc)
			return rc;
		if (fmt_key_cmp(&ek, f->key) > 0)
			return FIND_PAST;
		rc = entry_name(vol, it, &e, (unsigned)u, &ek, name, &len,
				err);
		if (rc)
			return rc;
		obj_ref_from_key(&e.target, &target);
		rc = find_fn(f, name, len, &ek, &target);
		if (rc)
			return rc;
	}
	return 0;
}

int obj_dir_find(struct r4_vol *vol, uint64_t dir_oid, const char *name,
		 size_t len, int hash, int fibre, struct r4_objref *out,
		 struct r4_error *err)
{
	struct find f = { NULL, name, len, 0, out, 0 };
	struct tree_cursor c;
	struct tree_item it;
	struct fmt_key k;
	int rc;

	rc = fmt_key_entry(&k, vol->keypol, dir_oid, name, len,
			   (unsigned)hash, (unsigned)fibre);
	if (rc)
		return r4i_fail(err, rc, "%s: directory %llx: hash %d or "
			       "fibration %d is unknown", obj_vol_name(vol),
			       (unsigned long long)dir_oid, hash, fibre);
	f.key = &k;
	f.stored = fmt_entry_name_stored(vol->keypol, len);
	tree_cursor_init(&c, vol);
	rc = tree_seek_le(&c, &k, err);
	if (!rc) {
		rc = tree_cur(&c, &it, err);
		if (!rc && (fmt_key_type(&it.key) != FMT_KEY_FILE_NAME ||
			    fmt_key_locality(&it.key) != dir_oid)) {
			rc = tree_next(&c, err);
		} else if (!rc && it.plugin_id == FMT_ITEM_CDE40) {
			/* the item that may hold the key: halve it, go on
			 * to the next ones only when the key is past it */
			rc = item_find(vol, &it, &f, err);
			if (!rc)
				rc = tree_next(&c, err);
			else if (rc == FIND_FOUND || rc == FIND_PAST)
				goto done;
		}
	} else if (rc == R4_ENOTFOUND) {
		rc = tree_seek_ge(&c, &k, err);
	}
	if (!rc)
		rc = iter_from(vol, &c, dir_oid, find_fn, &f, err);
done:
	tree_cursor_fini(&c);
	if (rc == FIND_FOUND)
		return 0;
	if (rc == FIND_PAST || rc == 0 || rc == R4_ENOTFOUND)
		return r4i_fail(err, R4_ENOTFOUND, "%s: directory %llx: no "
			       "entry \"%.*s\"", obj_vol_name(vol),
			       (unsigned long long)dir_oid,
			       (int)(len > 255 ? 255 : len), name);
	return rc;
}

int obj_dir_item_find(struct r4_vol *vol, const struct tree_item *it,
		      const struct fmt_key *k, const char *name, size_t len,
		      int verified, struct r4_objref *out,
		      struct r4_error *err)
{
	struct find f = { k, name, len, fmt_entry_name_stored(vol->keypol,
							      len), out,
			  verified };
	int rc = item_find(vol, it, &f, err);

	if (rc == FIND_FOUND)
		return 0;
	if (rc == FIND_PAST)
		return R4_ENOTFOUND;
	return rc ? rc : 1;
}

/* ---- public ---------------------------------------------------------- */

static int dir_sd(struct r4_vol *vol, const struct r4_objref *dir,
		  struct obj_sd *sd, struct r4_error *err)
{
	int rc = obj_sd_get(vol, dir, sd, err);

	if (!rc && sd->plugin != FMT_OBJ_DIR40) {
		obj_sd_put(sd);
		return r4i_fail(err, -ENOTDIR, "%s: object %llx is not a "
			       "directory", obj_vol_name(vol),
			       (unsigned long long)dir->oid);
	}
	return rc;
}

struct rd {
	r4_dirent_fn fn;
	void *ctx;
};

static int rd_fn(void *ctx, const char *name, size_t len,
		 const struct fmt_key *key, const struct r4_objref *target)
{
	struct rd *r = ctx;

	(void)key;
	return r->fn(r->ctx, name, len, target);
}

int r4_readdir(struct r4_vol *vol, const struct r4_objref *dir,
	       r4_dirent_fn fn, void *ctx, struct r4_error *err)
{
	struct rd r = { fn, ctx };
	struct obj_sd sd;
	int rc = dir_sd(vol, dir, &sd, err);

	if (rc)
		return rc;
	obj_sd_put(&sd);
	return obj_dir_iter(vol, dir->oid, rd_fn, &r, err);
}

int r4_lookup_at(struct r4_vol *vol, const struct r4_objref *dir,
		 const char *name, size_t len, struct r4_objref *out,
		 struct r4_error *err)
{
	struct obj_plugins pl;
	struct obj_sd sd;
	int rc;

	if (len == 0 || len > NAME_MAX_BYTES || memchr(name, '/', len))
		return r4i_fail(err, R4_EINVAL, "bad name \"%.*s\"",
			       (int)(len > 255 ? 255 : len), name);
	rc = dir_sd(vol, dir, &sd, err);
	if (rc)
		return rc;
	rc = obj_plugins_get(vol, dir, &sd, &pl, err);
	obj_sd_put(&sd);
	if (rc)
		return rc;
	return obj_dir_find(vol, dir->oid, name, len, pl.hash, pl.fibre, out,
			    err);
}

int r4_lookup(struct r4_vol *vol, const char *path, struct r4_objref *out,
	      struct r4_error *err)
{
	struct r4_objref cur;
	const char *p = path, *q;
	int rc;

	if (!path || path[0] != '/')
		return r4i_fail(err, R4_EINVAL, "path \"%s\" is not absolute",
			       path ? path : "(null)");
	r4_root(vol, &cur, err);
	for (;;) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		q = strchr(p, '/');
		if (!q)
			q = p + strlen(p);
		rc = r4_lookup_at(vol, &cur, p, (size_t)(q - p), &cur, err);
		if (rc)
			return rc;
		p = q;
	}
	*out = cur;
	return 0;
}
