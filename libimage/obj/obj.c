/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: stat data and the plugins in effect for an object. */
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

const char *obj_vol_name(const struct r4_vol *vol)
{
	return vol->dev && vol->dev->path ? vol->dev->path : "volume";
}

void obj_sd_key(struct r4_vol *vol, const struct r4_objref *obj,
		struct fmt_key *k)
{
	fmt_key_sd(k, obj->locality, vol->keypol == FMT_KEY_LARGE ?
		   obj->ordering : 0, obj->oid);
}

void obj_ref_from_key(const struct fmt_key *k, struct r4_objref *out)
{
	out->locality = fmt_key_locality(k);
	out->ordering = fmt_key_ordering(k);
	out->oid = fmt_key_objectid(k);
}

int obj_is_body(const struct r4_objref *obj, const struct fmt_key *k)
{
	return fmt_key_type(k) == FMT_KEY_BODY &&
	       fmt_key_locality(k) == obj->locality &&
	       fmt_key_ordering(k) == obj->ordering &&
	       fmt_key_objectid(k) == obj->oid;
}

int obj_pset_find(const struct fmt_pset *ps, unsigned m)
{
	for (unsigned i = 0; i < ps->count && i < FMT_PSET_MAX_SLOTS; i++)
		if (ps->member[i] == m)
			return ps->id[i];
	return -1;
}

int obj_pset_set(struct fmt_pset *ps, unsigned m, unsigned id)
{
	unsigned i = 0, n = ps->count < FMT_PSET_MAX_SLOTS ? ps->count :
		     FMT_PSET_MAX_SLOTS;

	while (i < n && ps->member[i] < m)
		i++;
	if (i < n && ps->member[i] == m) {
		ps->id[i] = (uint16_t)id;
		return 0;
	}
	if (n >= FMT_PSET_MAX_SLOTS)
		return -1;
	memmove(ps->member + i + 1, ps->member + i,
		(n - i) * sizeof(ps->member[0]));
	memmove(ps->id + i + 1, ps->id + i, (n - i) * sizeof(ps->id[0]));
	ps->member[i] = (uint16_t)m;
	ps->id[i] = (uint16_t)id;
	ps->count = (uint16_t)(n + 1);
	return 0;
}

static unsigned plugin_from_mode(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFDIR: return FMT_OBJ_DIR40;
	case S_IFLNK: return FMT_OBJ_SYM40;
	case S_IFREG: return FMT_OBJ_REG40;
	default: return FMT_OBJ_SPL40;
	}
}

static int sd_decode(struct r4_vol *vol, const struct tree_item *it,
		     struct obj_sd *sd, struct r4_error *err)
{
	const char *why;
	char ks[FMT_KEY_STR_MAX];
	int rc, p;

	sd->raw = malloc(it->len);
	if (!sd->raw)
		return r4i_fail(err, -ENOMEM, "out of memory");
	memcpy(sd->raw, it->body, it->len);
	sd->len = it->len;
	sd->blk = it->blk;
	sd->pos = it->pos;
	rc = fmt_stat_decode(sd->raw, sd->len, &sd->st);
	why = rc ? r4_strerror(rc) : fmt_stat_verify(&sd->st);
	if (!rc && why)
		rc = R4_ECORRUPT;
	if (!rc && !fmt_stat_has(&sd->st, FMT_SDEXT_LW)) {
		why = "no light-weight extension (mode, nlink, size)";
		rc = R4_ECORRUPT;
	}
	if (rc) {
		fmt_key_str(&it->key, ks, sizeof(ks));
		obj_sd_put(sd);
		return r4i_fail(err, rc, "%s: tree node %llu, item %u: stat "
			       "data [%s]: %s", obj_vol_name(vol),
			       (unsigned long long)it->blk, it->pos, ks, why);
	}
	p = obj_pset_find(&sd->st.pset, FMT_PSET_FILE);
	sd->plugin = p >= 0 ? (unsigned)p : plugin_from_mode(sd->st.mode);
	return 0;
}

int obj_sd_get(struct r4_vol *vol, const struct r4_objref *obj,
	       struct obj_sd *sd, struct r4_error *err)
{
	struct tree_cursor c;
	struct tree_item it;
	struct fmt_key k;
	int rc;

	memset(sd, 0, sizeof(*sd));
	obj_sd_key(vol, obj, &k);
	tree_cursor_init(&c, vol);
	rc = tree_seek_le(&c, &k, err);
	if (!rc)
		rc = tree_cur(&c, &it, err);
	if (rc == R4_ENOTFOUND || (!rc && fmt_key_cmp(&it.key, &k) != 0))
		rc = r4i_fail(err, R4_ENOTFOUND, "%s: object %llx:%llx:%llx "
			     "has no stat data", obj_vol_name(vol),
			     (unsigned long long)obj->locality,
			     (unsigned long long)obj->ordering,
			     (unsigned long long)obj->oid);
	else if (!rc && it.plugin_id != FMT_ITEM_STAT40)
		rc = r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu, item %u: "
			     "stat-data key on an item of plugin %u",
			     obj_vol_name(vol), (unsigned long long)it.blk,
			     it.pos, it.plugin_id);
	else if (!rc)
		rc = sd_decode(vol, &it, sd, err);
	tree_cursor_fini(&c);
	return rc;
}

int obj_sd_from_item(struct r4_vol *vol, const struct tree_item *it,
		     struct obj_sd *sd, struct r4_error *err)
{
	memset(sd, 0, sizeof(*sd));
	return sd_decode(vol, it, sd, err);
}

void obj_sd_put(struct obj_sd *sd)
{
	if (!sd)
		return;
	free(sd->raw);
	sd->raw = NULL;
}

/* Take members still unknown (-2) from a set. */
static void merge(struct obj_plugins *pl, const struct fmt_pset *ps)
{
	if (pl->hash == -2)
		pl->hash = obj_pset_find(ps, FMT_PSET_HASH) >= 0 ?
			   obj_pset_find(ps, FMT_PSET_HASH) : -2;
	if (pl->fibre == -2)
		pl->fibre = obj_pset_find(ps, FMT_PSET_FIBRATION) >= 0 ?
			    obj_pset_find(ps, FMT_PSET_FIBRATION) : -2;
	if (pl->formatting == -2)
		pl->formatting = obj_pset_find(ps, FMT_PSET_FORMATTING) >= 0 ?
				 obj_pset_find(ps, FMT_PSET_FORMATTING) : -2;
}

static int done(const struct obj_plugins *pl)
{
	return pl->hash != -2 && pl->fibre != -2 && pl->formatting != -2;
}

static void merge_pl(struct obj_plugins *pl, const struct obj_plugins *from)
{
	if (pl->hash == -2)
		pl->hash = from->hash;
	if (pl->fibre == -2)
		pl->fibre = from->fibre;
	if (pl->formatting == -2)
		pl->formatting = from->formatting;
}

/* What directory 'dir' inherits: its ancestors' hset then pset, nearest
 * first, below the root (-2 where none says). On a read-only handle the
 * answer is kept per directory, so a walk from the root climbs one level
 * a directory instead of to the root each time (a path 40,000 folders
 * deep costs linear time, not quadratic). */
static int inherited(struct r4_vol *vol, struct r4_objref dir,
		     struct obj_plugins *a, struct r4_error *err)
{
	struct r4_u64map *memo = vol->dev->readonly ? &vol->dir_inherit : NULL;
	struct r4_objref cur = dir, up;
	struct obj_sd sd;
	/* A loop of ".." entries that never reaches the root (a damaged or
	 * crafted volume) ends the climb: the mark is moved to where the
	 * climb is after 1, 2, 4, ... steps, and meeting it again is the
	 * loop (Brent), in time linear in the loop and no memory. */
	uint64_t mark = dir.oid, power = 1, lam = 0;
	int rc;

	a->hash = a->fibre = a->formatting = -2;
	if (memo && !memo->vsize)
		r4_u64map_init(memo, sizeof(*a));
	for (unsigned depth = 0; !done(a); depth++) {
		const struct obj_plugins *known;

		if (cur.oid == FMT_ROOT_OID)
			break;
		known = memo ? r4_u64map_find(memo, cur.oid) : NULL;
		if (known) {
			merge_pl(a, known);
			break;
		}
		if (!memo && depth >= OBJ_MAX_DEPTH)
			break;
		rc = obj_dir_find(vol, cur.oid, "..", 2, OBJ_DEFAULT_HASH, 0,
				  &up, err);
		if (rc)
			return rc;
		if (up.oid == cur.oid || up.oid == mark)
			break;
		if (++lam == power) {
			mark = up.oid;
			power *= 2;
			lam = 0;
		}
		rc = obj_sd_get(vol, &up, &sd, err);
		if (rc)
			return rc;
		merge(a, &sd.st.hset);
		merge(a, &sd.st.pset);
		obj_sd_put(&sd);
		cur = up;
	}
	if (memo) {
		struct obj_plugins *slot;

		if (memo->n >= (1u << 20))
			r4_u64map_fini(memo);	/* bounded: start again */
		if (!memo->vsize)
			r4_u64map_init(memo, sizeof(*a));
		slot = r4_u64map_get(memo, dir.oid, NULL);
		if (slot)
			*slot = *a;
	}
	return 0;
}

int obj_plugins_get(struct r4_vol *vol, const struct r4_objref *obj,
		    const struct obj_sd *sd, struct obj_plugins *out,
		    struct r4_error *err)
{
	struct r4_objref root = { FMT_ROOT_LOCALITY, 0, FMT_ROOT_OID };
	struct obj_sd rsd;
	struct r4_error tmp = { 0, "", 0 };

	out->hash = out->fibre = out->formatting = -2;
	merge(out, &sd->st.pset);
	/* A broken parent chain is not fatal: fall back to the root. */
	if (sd->plugin == FMT_OBJ_DIR40) {
		struct obj_plugins up;

		/* a broken parent chain is not fatal: what was found
		 * below the break still counts */
		(void)inherited(vol, *obj, &up, &tmp);
		merge_pl(out, &up);
	}
	if (!done(out) && obj->oid != FMT_ROOT_OID &&
	    !obj_sd_get(vol, &root, &rsd, &tmp)) {
		merge(out, &rsd.st.pset);
		obj_sd_put(&rsd);
	}
	if (out->hash == -2)
		out->hash = OBJ_DEFAULT_HASH;
	if (out->fibre == -2)
		out->fibre = OBJ_DEFAULT_FIBRE;
	if (out->formatting == -2)
		out->formatting = OBJ_DEFAULT_FORMATTING;
	(void)err;
	return 0;
}

void obj_stat_fill(const struct r4_objref *obj, const struct obj_sd *sd,
		   const struct obj_plugins *pl, struct r4_stat *out)
{
	const struct fmt_stat *st = &sd->st;
	int isdev = S_ISCHR(st->mode) || S_ISBLK(st->mode);

	memset(out, 0, sizeof(*out));
	out->oid = obj->oid;
	out->locality = obj->locality;
	out->ordering = obj->ordering;
	out->mode = st->mode;
	out->nlink = st->nlink;
	out->uid = st->uid;
	out->gid = st->gid;
	out->size = st->size;
	out->bytes = isdev ? 0 : st->rdev_or_bytes;
	out->rdev = isdev ? st->rdev_or_bytes : 0;
	out->atime = st->atime;
	out->mtime = st->mtime;
	out->ctime = st->ctime;
	out->atime_ns = st->atime_ns;
	out->mtime_ns = st->mtime_ns;
	out->ctime_ns = st->ctime_ns;
	out->object_plugin = sd->plugin;
	out->sd_mask = st->mask;
	out->flags = st->flags;
	out->hash_id = out->fibration_id = out->formatting_id = -1;
	if (sd->plugin == FMT_OBJ_DIR40) {
		out->hash_id = pl->hash;
		out->fibration_id = pl->fibre;
	} else if (sd->plugin == FMT_OBJ_REG40) {
		out->formatting_id = pl->formatting;
	}
	out->sd_block = sd->blk;
	out->sd_item = sd->pos;
}

int r4_root(struct r4_vol *vol, struct r4_objref *out, struct r4_error *err)
{
	(void)vol;
	(void)err;
	out->locality = FMT_ROOT_LOCALITY;
	out->ordering = 0;
	out->oid = FMT_ROOT_OID;
	return 0;
}

int r4_stat(struct r4_vol *vol, const struct r4_objref *obj,
	    struct r4_stat *st, struct r4_error *err)
{
	struct obj_plugins pl;
	struct obj_sd sd;
	int rc = obj_sd_get(vol, obj, &sd, err);

	if (rc)
		return rc;
	rc = obj_plugins_get(vol, obj, &sd, &pl, err);
	if (!rc)
		obj_stat_fill(obj, &sd, &pl, st);
	obj_sd_put(&sd);
	return rc;
}
