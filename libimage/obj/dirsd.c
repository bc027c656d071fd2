/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: obj_dir_account, a directory's size, bytes, nlink and times
 * changed by an entry's add or removal. The stat data item changes at
 * once, so every reader and writer sees it as it is; a directory
 * accounted lately (the same directory, entry after entry, in an add)
 * is neither read nor put through the tree again: the new bytes are
 * copied over the cached item (tree_mod_patch) as long as it holds
 * what the last account put, and the tree writer would do no more
 * than that with it. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "libimage/obj/write.h"
#include "libimage/tree/modify.h"
#include "format/item.h"
#include "format/plugin.h"

/* A directory's stat data as obj_dir_account last put it: st encodes
 * to raw (len bytes); st has no pointers (no symlink, no crypto
 * fingerprint). ref.oid 0: a free slot. One slot per object id
 * modulo DSD_SLOTS. */
#define DSD_SLOTS 64u
#define DSD_MAX 256

struct obj_dsd {
	struct r4_objref ref;
	struct fmt_stat st;
	uint8_t raw[DSD_MAX];
	size_t len;
	struct tree_spot spot;
};

static void dsd_apply(const struct r4_txn *x, struct fmt_stat *st,
		      int64_t dsize, int64_t dbytes, int64_t dnlink)
{
	st->size += (uint64_t)dsize;
	st->rdev_or_bytes += (uint64_t)dbytes;
	st->nlink = (uint32_t)((int64_t)st->nlink + dnlink);
	st->mtime = st->ctime = x->now;
	st->mtime_ns = st->ctime_ns = 0;
	st->mask |= 1u << FMT_SDEXT_UNIX;
}

/* dir's slot (direct-mapped by object id), NULL before the first */
static struct obj_dsd *dsd_slot(struct r4_txn *x, const struct r4_objref *dir)
{
	return x->dsd ? &x->dsd[dir->oid % DSD_SLOTS] : NULL;
}

static struct obj_dsd *dsd_find(struct r4_txn *x,
				const struct r4_objref *dir)
{
	struct obj_dsd *e = dsd_slot(x, dir);

	return e && e->ref.oid == dir->oid &&
	       e->ref.locality == dir->locality &&
	       e->ref.ordering == dir->ordering ? e : NULL;
}

/* Stat data st was put for dir: keep it in dir's slot, when it fits
 * one and the tree writer defers leaves (tree_mod_patch patches
 * nothing else: a repair's or r4debugfs's transaction keeps none). */
static void dsd_keep(struct r4_txn *x, const struct r4_objref *dir,
		     const struct fmt_stat *st)
{
	struct obj_dsd *e;
	size_t len;

	if (!x->mod.lazy || x->mod.general)
		return;
	if (!x->dsd)
		x->dsd = calloc(DSD_SLOTS, sizeof(*x->dsd));
	if (!(e = dsd_slot(x, dir)))
		return;	/* out of memory: every account reads */
	memset(e, 0, sizeof(*e));
	if (st->symlink || st->crypto_keyid || fmt_stat_size(st, &len) ||
	    len > DSD_MAX || fmt_stat_encode(st, e->raw, len))
		return;
	e->ref = *dir;
	e->st = *st;
	e->len = len;
}

/* The account of e's directory by patching the item it put: 1 done,
 * 0 not so (e is forgotten; nothing changed), < 0 an error. */
static int dsd_patch(struct r4_txn *x, struct obj_dsd *e, int64_t dsize,
		     int64_t dbytes, int64_t dnlink, struct r4_error *err)
{
	struct fmt_stat st = e->st;
	uint8_t buf[DSD_MAX];
	struct fmt_key k;
	size_t len;
	int rc;

	dsd_apply(x, &st, dsize, dbytes, dnlink);
	if (fmt_stat_size(&st, &len) || len != e->len ||
	    fmt_stat_encode(&st, buf, len)) {
		e->ref.oid = 0;
		return 0;
	}
	obj_sd_key(x->vol, &e->ref, &k);
	rc = tree_mod_patch(&x->mod, &e->spot, &k, FMT_ITEM_STAT40, e->raw,
			    buf, len, err);
	if (rc <= 0) {
		e->ref.oid = 0;
		return rc;
	}
	obj_new_plan_sd(x, e->ref.oid, &st);
	e->st = st;
	memcpy(e->raw, buf, len);
	return 1;
}

int obj_dir_account(struct r4_txn *x, const struct r4_objref *dir,
		    int64_t dsize, int64_t dbytes, int64_t dnlink,
		    struct r4_error *err)
{
	struct obj_dsd *e = dsd_find(x, dir);
	struct obj_sd sd;
	int rc = e ? dsd_patch(x, e, dsize, dbytes, dnlink, err) : 0;

	if (rc)
		return rc < 0 ? rc : 0;
	rc = obj_sd_get_txn(x, dir, &sd, err);
	if (rc)
		return rc;
	dsd_apply(x, &sd.st, dsize, dbytes, dnlink);
	rc = obj_sd_write(x, dir, &sd.st, 0, err);
	if (!rc)
		dsd_keep(x, dir, &sd.st);
	obj_sd_put(&sd);
	return rc;
}

void obj_dsd_free(struct r4_txn *x)
{
	free(x->dsd);
	x->dsd = NULL;
}
