/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: forensic reading (include/r4/forensic.h).
 *
 * Reiser4 writes a changed node to a new place (or logs it in the
 * journal) and frees the old one, and frees the blocks of a removed
 * file's extents without clearing them: until they are used again, free
 * blocks keep old leaves and twigs (stat data, directory entries, tails,
 * extent items) and old file data. The scanner reads every free block,
 * keeps the ones that verify as formatted nodes of this volume (node
 * checks of format/node.h, the volume's mkfs id, level leaf or twig),
 * and collects their stat data, entries and body items; an object whose
 * stat data is no longer in the tree is a deleted one. */
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
#include "libimage/txn/txn.h"
#include "r4/util.h"
#include "libimage/forensic/forensic.h"

void fsc_scan_free(struct fscan *s)
{
	free(s->sd);
	free(s->nm);
	free(s->pc);
	s->sd = NULL;
	s->nm = NULL;
	s->pc = NULL;
}

/* The object plugin a stat data names (plugin set member 0), else the
 * one its mode implies. */
static unsigned sd_plugin(const struct fmt_stat *st)
{
	for (unsigned i = 0; i < st->pset.count && i < FMT_PSET_MAX_SLOTS; i++)
		if (st->pset.member[i] == 0)
			return st->pset.id[i];
	if (S_ISDIR(st->mode))
		return FMT_OBJ_DIR40;
	if (S_ISLNK(st->mode))
		return FMT_OBJ_SYM40;
	if (S_ISREG(st->mode))
		return FMT_OBJ_REG40;
	return FMT_OBJ_SPL40;
}

static int take_sd(struct fscan *s, uint64_t blk, unsigned i, uint64_t flush,
		   const struct fmt_key *k, const uint8_t *body, size_t len)
{
	struct fmt_stat st;
	struct fsd *d;
	int isdev;

	if (fmt_stat_decode(body, len, &st) || !fmt_stat_has(&st, 0))
		return 0;	/* not a stat data we can use */
	if (s->only_oid && fmt_key_objectid(k) != s->only_oid)
		return 0;
	if (R4_RESERVE(s->sd, s->capsd, s->nsd + 1, 64))
		return -ENOMEM;
	d = &s->sd[s->nsd++];
	memset(d, 0, sizeof(*d));
	d->oid = fmt_key_objectid(k);
	d->loc = fmt_key_locality(k);
	d->ord = fmt_key_ordering(k);
	d->blk = blk;
	d->item = i;
	d->flush = flush;
	isdev = S_ISCHR(st.mode) || S_ISBLK(st.mode);
	d->st.oid = d->oid;
	d->st.locality = d->loc;
	d->st.ordering = d->ord;
	d->st.mode = st.mode;
	d->st.nlink = st.nlink;
	d->st.uid = st.uid;
	d->st.gid = st.gid;
	d->st.size = st.size;
	d->st.bytes = isdev ? 0 : st.rdev_or_bytes;
	d->st.rdev = isdev ? st.rdev_or_bytes : 0;
	d->st.atime = st.atime;
	d->st.mtime = st.mtime;
	d->st.ctime = st.ctime;
	d->st.atime_ns = st.atime_ns;
	d->st.mtime_ns = st.mtime_ns;
	d->st.ctime_ns = st.ctime_ns;
	d->st.object_plugin = sd_plugin(&st);
	d->st.sd_mask = st.mask;
	d->st.flags = st.flags;
	d->st.hash_id = d->st.fibration_id = d->st.formatting_id = -1;
	d->st.sd_block = blk;
	d->st.sd_item = i;
	d->pset = st.pset;
	return 1;
}

static int take_entries(struct fscan *s, uint64_t flush,
			const struct fmt_key *k, const uint8_t *body,
			size_t len)
{
	int n = fmt_cde40_units(body, len, s->pol), taken = 0;

	for (int u = 0; u < n; u++) {
		struct fmt_cde40_entry e;
		struct fmt_key ek;
		struct fname *f;
		char shortname[32];
		const char *name;
		size_t nlen;

		if (fmt_cde40_entry(body, len, s->pol, (unsigned)u, &e))
			break;
		if (s->only_oid && fmt_key_objectid(&e.target) != s->only_oid)
			continue;
		if (e.name) {
			name = (const char *)e.name;
			nlen = e.name_len;
		} else {
			fmt_cde40_entry_key(k, &e, &ek);
			nlen = fmt_key_entry_name(&ek, s->pol, shortname);
			name = shortname;
		}
		if (!nlen || nlen > 255 ||
		    (nlen == 1 && name[0] == '.') ||
		    (nlen == 2 && name[0] == '.' && name[1] == '.'))
			continue;
		if (R4_RESERVE(s->nm, s->capnm, s->nnm + 1, 64))
			return -ENOMEM;
		f = &s->nm[s->nnm++];
		f->oid = fmt_key_objectid(&e.target);
		f->parent = fmt_key_locality(k);
		f->flush = flush;
		f->len = nlen;
		memcpy(f->name, name, nlen);
		f->name[nlen] = '\0';
		taken++;
	}
	return taken;
}

static int add_piece(struct fscan *s, const struct fpiece *p)
{
	if (R4_RESERVE(s->pc, s->cappc, s->npc + 1, 64))
		return -ENOMEM;
	s->pc[s->npc++] = *p;
	return 1;
}

/* The units of an extent item whose body starts at file offset off: a
 * piece each, p holding what they share. The number taken. */
static int take_extents(struct fscan *s, struct fpiece *p, uint64_t off,
			const uint8_t *body, size_t len)
{
	int n = fmt_extent40_units(body, len), taken = 0;

	for (int u = 0; u < n; u++) {
		struct fmt_extent40_unit x;

		if (fmt_extent40_unit(body, len, (unsigned)u, &x) || !x.width ||
		    x.width > UINT64_MAX / s->blksize)
			break;
		p->off = off;
		p->len = x.width * s->blksize;
		p->blk = x.start;
		p->count = x.width;
		if (p->off > UINT64_MAX - p->len)
			break;
		if (add_piece(s, p) < 0)
			return -ENOMEM;
		taken++;
		off += p->len;
	}
	return taken;
}

/* One body item of key k: a piece for a tail or a compressed tail, one
 * a unit for an extent. The number taken. */
static int take_body(struct fscan *s, uint64_t blk, uint64_t flush,
		     unsigned plugin, const struct fmt_key *k, size_t boff,
		     const uint8_t *body, size_t len)
{
	struct fpiece p = { 0 };
	uint64_t end, off;

	p.oid = fmt_key_objectid(k);
	p.ord = fmt_key_ordering(k);
	p.flush = flush;
	p.raw = s->raw;
	if (s->only_oid && p.oid != s->only_oid)
		return 0;
	off = fmt_key_offset(k);
	if (plugin == FMT_ITEM_CTAIL40) {
		struct fmt_ctail40 ct;

		/* doc/compress.md §3.1: a piece of one disk cluster. */
		if (fmt_ctail40_decode(body, len, &ct) ||
		    ct.shift == FMT_CTAIL40_UNPREPPED || !ct.len ||
		    off > UINT64_MAX - ct.len)
			return 0;
		p.ctail = 1;
		p.shift = ct.shift;
		p.off = off;
		p.len = ct.len;
		p.blk = blk;
		p.boff = (uint32_t)(boff + (size_t)(ct.data - body));
		return add_piece(s, &p);
	}
	if (plugin == FMT_ITEM_TAIL40) {
		if (fmt_tail40_end(off, len, &end))
			return 0;
		p.tail = 1;
		p.off = off;
		p.len = len;
		p.blk = blk;
		p.boff = (uint32_t)boff;
		return add_piece(s, &p);
	}
	return take_extents(s, &p, off, body, len);
}

/* One block: a formatted leaf or twig of this volume, every item
 * taken that can be used. Returns the number of items taken. */
static int scan_node(struct fscan *s, uint64_t blk, const uint8_t *buf)
{
	struct fmt_node_header h;
	int taken = 0, rc;

	if (fmt_node_header_decode(buf, s->blksize, &h) ||
	    h.mkfs_id != s->mkfs_id ||
	    (h.level != FMT_NODE_LEAF_LEVEL &&
	     h.level != FMT_NODE_TWIG_LEVEL) ||
	    fmt_node_verify(buf, s->blksize, s->pol, NULL))
		return 0;
	for (unsigned i = 0; i < h.nr_items; i++) {
		struct fmt_item_header ih;
		size_t off, len;

		if (fmt_node_ih_decode(buf, s->blksize, s->pol, i, &ih) ||
		    fmt_node_item_body(buf, s->blksize, s->pol, i, &off, &len))
			break;
		switch (ih.plugin_id) {
		case FMT_ITEM_STAT40:
			rc = take_sd(s, blk, i, h.flush_id, &ih.key, buf + off,
				     len);
			break;
		case FMT_ITEM_CDE40:
			rc = take_entries(s, h.flush_id, &ih.key, buf + off,
					  len);
			break;
		case FMT_ITEM_TAIL40:
		case FMT_ITEM_CTAIL40:
		case FMT_ITEM_EXTENT40:
			if (fmt_key_type(&ih.key) != FMT_KEY_BODY) {
				rc = 0;
				break;
			}
			rc = take_body(s, blk, h.flush_id, ih.plugin_id,
				       &ih.key, off, buf + off, len);
			break;
		default:
			rc = 0;
		}
		if (rc < 0)
			return rc;
		taken += rc;
	}
	return taken;
}

int r4_lsdel_scan_node(const uint8_t *buf, size_t blksize, uint32_t mkfs_id,
		       int large_keys, struct r4_error *err)
{
	struct fscan s = { 0 };
	int rc;

	if (blksize < FMT_NODE_MIN_BLKSIZE || blksize > FMT_NODE_MAX_BLKSIZE)
		return r4i_fail(err, R4_EINVAL, "block size %zu", blksize);
	s.blksize = blksize;
	s.mkfs_id = mkfs_id;
	s.pol = large_keys ? FMT_KEY_LARGE : FMT_KEY_SHORT;
	rc = scan_node(&s, 0, buf);
	fsc_scan_free(&s);
	if (rc < 0)
		return r4i_fail(err, rc, "out of memory");
	return rc;
}

/* ---- The scan ------------------------------------------------------------ */

/* Block blk: through the journal's overlay, or (raw) as it lies on
 * disk: the home copy of a block a pending transaction overwrites. */
int fsc_read_copy(struct r4_vol *vol, uint64_t blk, int raw, uint8_t *buf,
		     struct r4_error *err)
{
	struct io_dev *dev = vol->dev;
	uint64_t off = blk * vol->blksize;
	int rc;

	if (!raw)
		return r4_vol_read_block(vol, blk, buf, err);
	if (blk >= vol->sb.block_count || off > dev->size ||
	    vol->blksize > dev->size - off)
		return r4i_fail(err, R4_ERANGE, "%s: block %llu is past the "
			       "end of the device", dev->path,
			       (unsigned long long)blk);
	rc = txn_read_under(vol, buf, vol->blksize, off);
	if (rc)
		return r4i_fail(err, rc, "%s: read of block %llu failed: %s",
			       dev->path, (unsigned long long)blk,
			       r4_strerror(rc));
	return 0;
}

/* The journal of a pending transaction (replayed in memory): its
 * wandered blocks hold the new copies of the blocks it overwrites, and
 * those blocks' home locations still hold the old ones. Both are
 * scanned as old nodes (the free scan already covers the blocks of
 * transactions played before: they are free once played). */
static int scan_journal(struct r4_vol *vol, struct fscan *s, uint8_t *buf,
			struct r4_error *err)
{
	const uint64_t *from, *to;
	size_t n = txn_overlay_pairs(vol, &from, &to);
	int rc = 0;

	for (size_t i = 0; i < n && !rc; i++) {
		for (int raw = 0; raw < 2 && !rc; raw++) {
			uint64_t b = raw ? from[i] : to[i];

			if (b < fmt_blk_first_usable(vol->blksize) ||
			    b >= vol->sb.block_count)
				continue;
			rc = fsc_read_copy(vol, b, raw, buf, err);
			if (rc)
				break;
			s->njournal++;
			s->raw = raw;
			rc = scan_node(s, b, buf);
			s->raw = 0;
			if (rc < 0)
				return r4i_fail(err, rc, "%s: out of memory",
					       vol->dev->path);
			rc = 0;
		}
	}
	return rc;
}

int fsc_scan_volume(struct r4_vol *vol, struct fscan *s,
		       struct r4_error *err)
{
	uint8_t *buf = malloc(vol->blksize);
	int rc = 0, cls;

	if (!buf)
		return r4i_fail(err, -ENOMEM, "%s: out of memory",
			       vol->dev->path);
	s->blksize = vol->blksize;
	s->mkfs_id = vol->sb.mkfs_id;
	s->pol = vol->keypol;
	for (uint64_t b = fmt_blk_first_usable(vol->blksize);
	     b < vol->sb.block_count; b++) {
		rc = r4_block_class(vol, b, &cls, err);
		if (rc)
			break;
		if (cls != R4_BC_FREE)
			continue;
		rc = r4_vol_read_block(vol, b, buf, err);
		if (rc)
			break;
		s->nfree++;
		rc = scan_node(s, b, buf);
		if (rc < 0) {
			rc = r4i_fail(err, rc, "%s: out of memory",
				     vol->dev->path);
			break;
		}
		rc = 0;
	}
	if (!rc)
		rc = scan_journal(vol, s, buf, err);
	free(buf);
	return rc;
}

static int cmp_sd(const void *a, const void *b)
{
	const struct fsd *x = a, *y = b;

	if (x->oid != y->oid)
		return x->oid < y->oid ? -1 : 1;
	if (x->flush != y->flush)
		return x->flush > y->flush ? -1 : 1;	/* newest first */
	return x->blk < y->blk ? 1 : x->blk > y->blk ? -1 : 0;
}

static int cmp_piece(const void *a, const void *b);

/* qsort of what was found (qsort takes no NULL, even for 0 items). */
void fsc_sort_scan(struct fscan *s)
{
	if (s->nsd)
		qsort(s->sd, s->nsd, sizeof(*s->sd), cmp_sd);
	if (s->npc)
		qsort(s->pc, s->npc, sizeof(*s->pc), cmp_piece);
}

static int cmp_piece(const void *a, const void *b)
{
	const struct fpiece *x = a, *y = b;

	if (x->oid != y->oid)
		return x->oid < y->oid ? -1 : 1;
	if (x->flush != y->flush)
		return x->flush < y->flush ? -1 : 1;	/* oldest first */
	return x->off < y->off ? -1 : x->off > y->off ? 1 : 0;
}

int fsc_ranges_add(struct ranges *r, uint64_t off, uint64_t end)
{
	if (off >= end)
		return 0;
	if (R4_RESERVE(r->v, r->cap, r->n + 1, 64))
		return -ENOMEM;
	r->v[r->n].off = off;
	r->v[r->n].end = end;
	r->n++;
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off ? 1 : 0;
}

/* Sort and merge; returns the bytes covered. */
uint64_t fsc_ranges_merge(struct ranges *r)
{
	size_t j = 0;
	uint64_t total = 0;

	if (!r->n)
		return 0;
	qsort(r->v, r->n, sizeof(*r->v), cmp_range);
	for (size_t i = 1; i < r->n; i++) {
		if (r->v[i].off <= r->v[j].end) {
			if (r->v[i].end > r->v[j].end)
				r->v[j].end = r->v[i].end;
		} else {
			r->v[++j] = r->v[i];
		}
	}
	r->n = j + 1;
	for (size_t i = 0; i < r->n; i++)
		total += r->v[i].end - r->v[i].off;
	return total;
}

int fsc_piece_runs(struct r4_vol *vol, const struct fpiece *p,
		      uint64_t size, run_fn fn, void *ctx,
		      struct r4_error *err)
{
	uint64_t bs = vol->blksize;
	int rc, cls;

	if (p->off >= size)
		return 0;
	if (p->tail || p->blk == 0) {
		uint64_t end = p->len > size - p->off ? size : p->off + p->len;

		return fn(ctx, p, p->off, end, 0);
	}
	if (p->blk == 1)
		return 0;	/* unallocated: nothing on disk */
	for (uint64_t i = 0; i < p->count; i++) {
		uint64_t off = p->off + i * bs, end;

		if (off >= size)
			break;
		end = size - off < bs ? size : off + bs;
		if (p->blk + i < p->blk || p->blk + i >= vol->sb.block_count)
			break;
		rc = r4_block_class(vol, p->blk + i, &cls, err);
		if (rc)
			return rc;
		if (cls != R4_BC_FREE)
			continue;	/* used again since: not this file's */
		rc = fn(ctx, p, off, end, p->blk + i);
		if (rc)
			return rc;
	}
	return 0;
}

static int run_to_range(void *ctx, const struct fpiece *p, uint64_t off,
			uint64_t end, uint64_t blk)
{
	(void)p;
	(void)blk;
	return fsc_ranges_add(ctx, off, end);
}

int fsc_describe(struct r4_vol *vol, struct fscan *s, size_t i,
		    struct r4_deleted *d, struct r4_error *err)
{
	const struct fsd *sd = &s->sd[i];
	struct ranges all = { 0 }, rec = { 0 };
	uint64_t flush = 0;
	int rc = 0;

	memset(d, 0, sizeof(*d));
	d->st = sd->st;
	for (size_t k = 0; k < s->nnm; k++)
		if (s->nm[k].oid == sd->oid &&
		    (!d->name_len || s->nm[k].flush >= flush)) {
			flush = s->nm[k].flush;
			d->name_len = s->nm[k].len;
			memcpy(d->name, s->nm[k].name, s->nm[k].len + 1);
			d->parent = s->nm[k].parent;
		}
	for (size_t k = 0; k < s->npc && !rc; k++) {
		const struct fpiece *p = &s->pc[k];

		if (p->oid != sd->oid || p->ord != sd->ord ||
		    p->off >= sd->st.size || p->ctail)
			continue;
		rc = fsc_ranges_add(&all, p->off, p->len > sd->st.size - p->off ?
				sd->st.size : p->off + p->len);
		if (!rc)
			rc = fsc_piece_runs(vol, p, sd->st.size, run_to_range, &rec,
					err);
	}
	if (!rc)
		rc = fsc_ccreg_recover(vol, s, sd, fsc_cluster_to_range, &rec,
				fsc_cluster_to_range, &all, err);
	if (rc == -ENOMEM)
		rc = r4i_fail(err, rc, "%s: out of memory", vol->dev->path);
	d->found = fsc_ranges_merge(&all);
	d->recoverable = fsc_ranges_merge(&rec);
	free(all.v);
	free(rec.v);
	return rc;
}

/* Whether the object of a stat data copy is still in the tree: 1 yes,
 * 0 no, or an error. */
int fsc_is_live(struct r4_vol *vol, const struct fsd *sd,
		   struct r4_error *err)
{
	struct r4_objref ref = { sd->loc, sd->ord, sd->oid };
	struct r4_stat st;
	int rc = r4_stat(vol, &ref, &st, err);

	if (rc == R4_ENOTFOUND) {
		r4i_error_clear(err);
		return 0;
	}
	return rc ? rc : 1;
}

static int lsdel_run(struct r4_vol *vol, struct fscan *s, r4_deleted_fn fn,
		     void *ctx, struct r4_error *err)
{
	struct r4_deleted d;
	int rc;

	rc = fsc_scan_volume(vol, s, err);
	if (rc)
		return rc;
	fsc_sort_scan(s);
	for (size_t i = 0; i < s->nsd; i++) {
		if (i && s->sd[i].oid == s->sd[i - 1].oid)
			continue;	/* an older copy */
		rc = fsc_is_live(vol, &s->sd[i], err);
		if (rc < 0)
			return rc;
		if (rc)
			continue;
		rc = fsc_describe(vol, s, i, &d, err);
		if (!rc)
			rc = fn(ctx, &d);
		if (rc)
			return rc;
	}
	return fsc_orphans_report(vol, s, fn, ctx, err);
}

int r4_lsdel_ex(struct r4_vol *vol, r4_deleted_fn fn, void *ctx,
		struct r4_lsdel_stats *st, struct r4_error *err)
{
	struct fscan s = { 0 };
	int rc = lsdel_run(vol, &s, fn, ctx, err);

	if (st) {
		st->free_blocks = s.nfree;
		st->journal_blocks = s.njournal;
	}
	fsc_scan_free(&s);
	return rc;
}

int r4_lsdel(struct r4_vol *vol, r4_deleted_fn fn, void *ctx,
	     struct r4_error *err)
{
	return r4_lsdel_ex(vol, fn, ctx, NULL, err);
}
