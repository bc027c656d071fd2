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
#include "libimage/obj/cluster.h"
#include "libimage/tree/tree.h"
#include "r4/util.h"

/* A stat data found in an old node. */
struct fsd {
	uint64_t oid, loc, ord, blk, flush;
	unsigned item;
	struct r4_stat st;
	struct fmt_pset pset;	/* for a compressed file's plugins */
};
/* A directory entry found in an old node. */
struct fname {
	uint64_t oid, parent, flush;
	size_t len;
	char name[256];
};
/* A body item: a tail (bytes at boff of node blk), a ctail (len bytes
 * of a disk cluster of 1 << shift at boff of node blk) or one extent
 * unit (count blocks from blk; blk 0 a hole, 1 unallocated). */
struct fpiece {
	uint64_t oid, ord, off, len, flush, blk, count;
	uint32_t boff;
	int tail;
	int ctail;
	unsigned shift;
	int raw;	/* node read as on disk, under the journal's overlay */
};

struct fscan {
	size_t blksize;
	uint32_t mkfs_id;
	enum fmt_key_policy pol;
	uint64_t only_oid;	/* 0: every object */
	struct fsd *sd;
	size_t nsd, capsd;
	struct fname *nm;
	size_t nnm, capnm;
	struct fpiece *pc;
	size_t npc, cappc;
	int raw;		/* the node being scanned was read raw */
	uint64_t nfree, njournal;	/* blocks read */
};

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
	void *p;
	size_t c;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 64;
	p = realloc(*v, c * size);
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = c;
	return 0;
}

static void scan_free(struct fscan *s)
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
	if (grow((void **)&s->sd, &s->capsd, s->nsd, sizeof(*s->sd)))
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
		if (grow((void **)&s->nm, &s->capnm, s->nnm, sizeof(*s->nm)))
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
	if (grow((void **)&s->pc, &s->cappc, s->npc, sizeof(*s->pc)))
		return -ENOMEM;
	s->pc[s->npc++] = *p;
	return 1;
}

static int take_body(struct fscan *s, uint64_t blk, uint64_t flush,
		     unsigned plugin, const struct fmt_key *k, size_t boff,
		     const uint8_t *body, size_t len)
{
	struct fpiece p = { 0 };
	uint64_t end, off;
	int n, taken = 0;

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
	n = fmt_extent40_units(body, len);
	for (int u = 0; u < n; u++) {
		struct fmt_extent40_unit x;

		if (fmt_extent40_unit(body, len, (unsigned)u, &x) || !x.width ||
		    x.width > UINT64_MAX / s->blksize)
			break;
		p.off = off;
		p.len = x.width * s->blksize;
		p.blk = x.start;
		p.count = x.width;
		if (p.off > UINT64_MAX - p.len)
			break;
		if (add_piece(s, &p) < 0)
			return -ENOMEM;
		taken++;
		off += p.len;
	}
	return taken;
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
	scan_free(&s);
	if (rc < 0)
		return r4i_fail(err, rc, "out of memory");
	return rc;
}

/* ---- Block classes ----------------------------------------------------- */

/* Whether blk holds a backup of the super block (doc/format.md §1.7):
 * progs places them; the kernel leaves them as they are. */
static int is_backup(struct r4_vol *vol, uint64_t blk)
{
	uint64_t v[64];
	size_t n = fmt_backup_blocks(vol->sb.block_count, vol->blksize, v,
				     64);

	for (size_t i = 0; i < n && i < 64; i++)
		if (v[i] == blk)
			return 1;
	return 0;
}

int r4_block_class(struct r4_vol *vol, uint64_t blk, int *cls,
		   struct r4_error *err)
{
	uint64_t bpb = fmt_bitmap_bpb(vol->blksize);
	int rc;

	if (blk >= vol->sb.block_count)
		return r4i_fail(err, R4_ERANGE, "%s: block %llu is past the end "
			       "of the volume (%llu blocks)", vol->dev->path,
			       (unsigned long long)blk,
			       (unsigned long long)vol->sb.block_count);
	if (is_backup(vol, blk)) {
		*cls = R4_BC_BACKUP;
		return 0;
	}
	if (blk < fmt_blk_first_usable(vol->blksize) ||
	    blk == fmt_blk_bitmap0(vol->blksize) || (blk && blk % bpb == 0)) {
		*cls = R4_BC_FIXED;
		return 0;
	}
	for (size_t i = 0; i < vol->dev->nremap; i++)
		if (vol->dev->remap_to[i] == blk) {
			*cls = R4_BC_JOURNAL;
			return 0;
		}
	rc = space_test(&vol->space, blk, err);
	if (rc < 0)
		return rc;
	*cls = rc ? R4_BC_USED : R4_BC_FREE;
	return 0;
}

const char *r4_block_class_name(int cls)
{
	switch (cls) {
	case R4_BC_FIXED: return "fixed";
	case R4_BC_JOURNAL: return "journal";
	case R4_BC_FREE: return "free";
	case R4_BC_USED: return "used";
	case R4_BC_BACKUP: return "backup";
	}
	return "?";
}

/* ---- The scan ------------------------------------------------------------ */

/* Block blk: through the journal's overlay, or (raw) as it lies on
 * disk: the home copy of a block a pending transaction overwrites. */
static int read_copy(struct r4_vol *vol, uint64_t blk, int raw, uint8_t *buf,
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
	rc = dev->ops->pread(dev, buf, vol->blksize, off);
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
	const struct io_dev *dev = vol->dev;
	int rc = 0;

	for (size_t i = 0; i < dev->nremap && !rc; i++) {
		for (int raw = 0; raw < 2 && !rc; raw++) {
			uint64_t b = raw ? dev->remap_from[i] :
				     dev->remap_to[i];

			if (b < fmt_blk_first_usable(vol->blksize) ||
			    b >= vol->sb.block_count)
				continue;
			rc = read_copy(vol, b, raw, buf, err);
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

static int scan_volume(struct r4_vol *vol, struct fscan *s,
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
static void sort_scan(struct fscan *s)
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

/* Ranges [off, end) of a file. */
struct range {
	uint64_t off, end;
};
struct ranges {
	struct range *v;
	size_t n, cap;
};

static int ranges_add(struct ranges *r, uint64_t off, uint64_t end)
{
	if (off >= end)
		return 0;
	if (grow((void **)&r->v, &r->cap, r->n, sizeof(*r->v)))
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
static uint64_t ranges_merge(struct ranges *r)
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

/* Call fn(ctx, off, end) for every run of a piece whose bytes are still
 * in free blocks (tails: the whole piece, their node is free; holes
 * too); clipped to size. */
typedef int (*run_fn)(void *ctx, const struct fpiece *p, uint64_t off,
		      uint64_t end, uint64_t blk);
static int piece_runs(struct r4_vol *vol, const struct fpiece *p,
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
	return ranges_add(ctx, off, end);
}

/* ---- Compressed bodies ---------------------------------------------------- */

/* A ccreg40 file's body is ctail items, each a piece of one disk
 * cluster (doc/compress.md §3.1). Old copies of a cluster's pieces may
 * lie in several free nodes (one per flush that relocated the leaf);
 * a cluster is recovered when a chain of pieces from its start, one
 * copy at each offset, makes a disk cluster that decodes to the logical
 * cluster (doc/compress.md §3.2: raw, or checksum plus a stream that
 * gives exactly its bytes). Newest copies are tried first, and a bounded
 * number of pieces per cluster, since a hostile image may offer many. */
#define CC_BUDGET 256

typedef int (*cluster_fn)(void *ctx, uint64_t off, const uint8_t *buf,
			  size_t len);

struct ccwork {
	struct r4_vol *vol;
	const struct fpiece **v;	/* by offset, newest first */
	size_t n;
	uint8_t *node, *dc, *plain;
	struct r4_codec *codec;
	unsigned shift;
	size_t lsize;
	uint64_t start;
	unsigned budget;
	struct r4_error *err;
};

static int cmp_cpiece(const void *a, const void *b)
{
	const struct fpiece *x = *(const struct fpiece *const *)a;
	const struct fpiece *y = *(const struct fpiece *const *)b;

	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	if (x->flush != y->flush)
		return x->flush > y->flush ? -1 : 1;
	return x->blk < y->blk ? 1 : x->blk > y->blk ? -1 : 0;
}

/* The bytes of a ctail piece, read again from its node and checked as
 * at scan time: 0, 1 when the node no longer holds them, or an error. */
static int cc_piece_bytes(struct ccwork *w, const struct fpiece *p,
			  uint8_t *dst)
{
	size_t bs = w->vol->blksize;
	int rc = read_copy(w->vol, p->blk, p->raw, w->node, w->err);

	if (rc)
		return rc;
	if (fmt_node_verify(w->node, bs, w->vol->keypol, NULL) ||
	    p->boff > bs || p->len > bs - p->boff)
		return 1;
	memcpy(dst, w->node + p->boff, (size_t)p->len);
	return 0;
}

/* First piece at or after offset 'at'. */
static size_t cc_lower(const struct ccwork *w, uint64_t at)
{
	size_t lo = 0, hi = w->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (w->v[mid]->off < at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Extend the disk cluster gathered in w->dc[0, pos): 1 with *out the
 * logical cluster, 0 when no chain decodes, or an error. */
static int cc_chain(struct ccwork *w, size_t pos, const uint8_t **out)
{
	uint64_t at = w->start + pos;

	for (size_t i = cc_lower(w, at); i < w->n && w->v[i]->off == at;
	     i++) {
		const struct fpiece *p = w->v[i];
		enum fmt_dc_form form;
		const char *why;
		size_t end, slen;
		int rc;

		if (p->shift != w->shift || p->len > w->lsize - pos)
			continue;
		if (!w->budget)
			return 0;
		w->budget--;
		rc = cc_piece_bytes(w, p, w->dc + pos);
		if (rc < 0)
			return rc;
		if (rc)
			continue;
		end = pos + (size_t)p->len;
		if (end == w->lsize) {
			*out = w->dc;	/* stored raw */
			return 1;
		}
		if (!fmt_dc_open(w->dc, end, w->lsize, &form, &slen, NULL) &&
		    form == FMT_DC_PACKED) {
			rc = r4_codec_decompress(w->codec, w->dc, slen,
						 w->plain, w->lsize, &why);
			if (rc == -ENOMEM)
				return rc;
			if (!rc) {
				*out = w->plain;
				return 1;
			}
		}
		rc = cc_chain(w, end, out);
		if (rc)
			return rc;
	}
	return 0;
}

/* The object's ctail pieces below size, sorted for cc_chain. */
static int cc_pieces(const struct fscan *s, const struct fsd *sd,
		     const struct fpiece ***out, size_t *n)
{
	const struct fpiece **v;
	size_t k, m = 0;

	*out = NULL;
	*n = 0;
	for (k = 0; k < s->npc; k++)
		if (s->pc[k].ctail && s->pc[k].oid == sd->oid &&
		    s->pc[k].ord == sd->ord && s->pc[k].off < sd->st.size)
			m++;
	if (!m)
		return 0;
	v = malloc(m * sizeof(*v));
	if (!v)
		return -ENOMEM;
	m = 0;
	for (k = 0; k < s->npc; k++)
		if (s->pc[k].ctail && s->pc[k].oid == sd->oid &&
		    s->pc[k].ord == sd->ord && s->pc[k].off < sd->st.size)
			v[m++] = &s->pc[k];
	qsort(v, m, sizeof(*v), cmp_cpiece);
	*out = v;
	*n = m;
	return 0;
}

/* The compression plugin of a deleted ccreg40 file: its own stat data's
 * plugin set, else the root's, else the default (doc/compress.md §5).
 * 0 and *id, or 1 when it names one we do not know. */
static int cc_compress_of(struct r4_vol *vol, const struct fsd *sd,
			  unsigned *id)
{
	struct r4_objref ref = { sd->loc, sd->ord, sd->oid };
	struct r4_error tmp = { 0, "", 0 };
	struct obj_sd fake;
	struct obj_cc cc;

	memset(&fake, 0, sizeof(fake));
	fake.st.pset = sd->pset;
	if (obj_cc_params(vol, &ref, &fake, &cc, &tmp))
		return 1;
	*id = cc.compress;
	return 0;
}

/* fn(ctx, off, bytes, len) for every logical cluster of the object of
 * sd that decodes from surviving pieces; found(ctx, off, len) (may be
 * NULL) for every cluster some piece of which survives. */
static int cc_recover(struct r4_vol *vol, const struct fscan *s,
		      const struct fsd *sd, cluster_fn fn, void *ctx,
		      cluster_fn found, void *fctx, struct r4_error *err)
{
	struct ccwork w = { 0 };
	unsigned id;
	int rc;

	w.vol = vol;
	w.err = err;
	rc = cc_pieces(s, sd, &w.v, &w.n);
	if (rc || !w.n)
		return rc;
	if (cc_compress_of(vol, sd, &id)) {
		free(w.v);
		return 0;	/* nothing decodes */
	}
	w.node = malloc(vol->blksize);
	w.dc = malloc((size_t)1 << 16);
	w.plain = malloc((size_t)1 << 16);
	w.codec = r4_codec_new(id, &rc);
	if (!w.node || !w.dc || !w.plain || !w.codec) {
		rc = rc && rc != -ENOMEM ? 0 : -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < w.n && !rc; i++) {
		const struct fpiece *p = w.v[i];
		const uint8_t *bytes;

		if (i && p->off == w.v[i - 1]->off)
			continue;	/* one try per cluster start */
		if (p->shift < 12 || p->shift > 16 ||
		    p->off & (((uint64_t)1 << p->shift) - 1))
			continue;	/* not the start of a cluster */
		w.shift = p->shift;
		w.start = p->off;
		w.lsize = fmt_cluster_lsize(sd->st.size, p->off >> p->shift,
					    p->shift);
		if (!w.lsize)
			continue;
		if (found)
			rc = found(fctx, w.start, NULL, w.lsize);
		w.budget = CC_BUDGET;
		if (!rc)
			rc = cc_chain(&w, 0, &bytes);
		if (rc == 1)
			rc = fn(ctx, w.start, bytes, w.lsize);
	}
out:
	free(w.v);
	free(w.node);
	free(w.dc);
	free(w.plain);
	r4_codec_free(w.codec);
	return rc;
}

static int cluster_to_range(void *ctx, uint64_t off, const uint8_t *buf,
			    size_t len)
{
	(void)buf;
	return ranges_add(ctx, off, off + len);
}

/* Fill d from the scan for the object of s->sd[i] (the newest copy). */
static int describe(struct r4_vol *vol, struct fscan *s, size_t i,
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
		rc = ranges_add(&all, p->off, p->len > sd->st.size - p->off ?
				sd->st.size : p->off + p->len);
		if (!rc)
			rc = piece_runs(vol, p, sd->st.size, run_to_range, &rec,
					err);
	}
	if (!rc)
		rc = cc_recover(vol, s, sd, cluster_to_range, &rec,
				cluster_to_range, &all, err);
	if (rc == -ENOMEM)
		rc = r4i_fail(err, rc, "%s: out of memory", vol->dev->path);
	d->found = ranges_merge(&all);
	d->recoverable = ranges_merge(&rec);
	free(all.v);
	free(rec.v);
	return rc;
}

/* Whether the object of a stat data copy is still in the tree: 1 yes,
 * 0 no, or an error. */
static int is_live(struct r4_vol *vol, const struct fsd *sd,
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

/* ---- Orphans ------------------------------------------------------------- */

/* A walk of the live tree: every stat data, every name (entries other
 * than "." and ".."), every safe link. An orphan is an object with a
 * stat data that no entry names (the root excepted). */
struct oref {
	uint64_t loc, ord, oid;
};
struct orphans {
	struct r4_vol *vol;
	uint64_t only_oid;	/* 0: every object */
	struct oref *v;
	size_t n, cap;
	struct r4_u64map named;
	struct r4_u64map links;	/* oid -> safe link type + 1 */
};

static int entry_is_dot(const struct fmt_key *k,
			const struct fmt_cde40_entry *e,
			enum fmt_key_policy pol)
{
	struct fmt_key ek;
	char shortname[32];
	size_t n;

	if (e->name)
		return 0;	/* "." and ".." are short names */
	fmt_cde40_entry_key(k, e, &ek);
	n = fmt_key_entry_name(&ek, pol, shortname);
	return (n == 1 && shortname[0] == '.') ||
	       (n == 2 && shortname[0] == '.' && shortname[1] == '.');
}

static int orph_leaf(struct orphans *o, uint64_t blk, const uint8_t *node,
		     struct r4_error *err)
{
	struct r4_vol *vol = o->vol;
	unsigned n = tree_node_nr(node);

	for (unsigned i = 0; i < n; i++) {
		struct tree_item it;
		int rc = tree_node_item(vol, node, blk, i, &it, err);

		if (rc)
			return rc;
		if (it.plugin_id == FMT_ITEM_STAT40) {
			uint64_t oid = fmt_key_objectid(&it.key);

			if (oid == FMT_ROOT_OID ||
			    (o->only_oid && oid != o->only_oid))
				continue;
			if (grow((void **)&o->v, &o->cap, o->n, sizeof(*o->v)))
				return -ENOMEM;
			o->v[o->n].loc = fmt_key_locality(&it.key);
			o->v[o->n].ord = fmt_key_ordering(&it.key);
			o->v[o->n++].oid = oid;
		} else if (it.plugin_id == FMT_ITEM_CDE40) {
			int u, m = fmt_cde40_units(it.body, it.len,
						   vol->keypol);

			for (u = 0; u < m; u++) {
				struct fmt_cde40_entry e;
				uint64_t t;

				if (fmt_cde40_entry(it.body, it.len,
						    vol->keypol, (unsigned)u,
						    &e))
					break;
				t = fmt_key_objectid(&e.target);
				/* "." and ".." name the directory itself
				 * and its parent, not their target. */
				if (entry_is_dot(&it.key, &e, vol->keypol))
					continue;
				if (r4_u64set_add(&o->named, t) < 0)
					return -ENOMEM;
			}
		} else if (it.plugin_id == FMT_ITEM_BBOX40) {
			struct fmt_bbox40 bb;
			unsigned *v;

			if (fmt_bbox40_decode(it.body, it.len, vol->keypol,
					      &bb))
				continue;
			v = r4_u64map_get(&o->links,
					  fmt_key_objectid(&bb.sdkey), NULL);
			if (!v)
				return -ENOMEM;
			*v = (unsigned)fmt_key_offset(&it.key) + 1;
		}
	}
	return 0;
}

struct orph_walk {
	struct orphans *o;
	struct r4_error *err;
};

static int orph_node(void *ctx, uint64_t blk, unsigned level,
		     const uint8_t *node)
{
	struct orph_walk *w = ctx;

	if (level != FMT_NODE_LEAF_LEVEL)
		return 0;
	return orph_leaf(w->o, blk, node, w->err);
}

static void orphans_fini(struct orphans *o)
{
	free(o->v);
	r4_u64map_fini(&o->named);
	r4_u64map_fini(&o->links);
}

static int orphans_find(struct r4_vol *vol, struct orphans *o,
			struct r4_error *err)
{
	struct orph_walk w = { o, err };
	int rc;

	o->vol = vol;
	r4_u64map_init(&o->named, 0);
	r4_u64map_init(&o->links, sizeof(unsigned));
	rc = tree_walk(vol, orph_node, &w, err);
	if (rc == -ENOMEM)
		rc = r4i_fail(err, rc, "%s: out of memory", vol->dev->path);
	return rc;
}

/* Describe orphan v (its stat data read through the tree). */
static int orphan_describe(struct r4_vol *vol, struct orphans *o,
			   const struct oref *v, const struct fscan *s,
			   struct r4_deleted *d, struct r4_error *err)
{
	struct r4_objref ref = { v->loc, v->ord, v->oid };
	uint64_t flush = 0;
	unsigned *link;
	int rc;

	memset(d, 0, sizeof(*d));
	rc = r4_stat(vol, &ref, &d->st, err);
	if (rc)
		return rc;
	d->orphan = 1;
	link = r4_u64map_find(&o->links, v->oid);
	d->safe_link = link ? (int)*link - 1 : -1;
	d->found = d->recoverable = d->st.size;
	for (size_t k = 0; s && k < s->nnm; k++)
		if (s->nm[k].oid == v->oid &&
		    (!d->name_len || s->nm[k].flush >= flush)) {
			flush = s->nm[k].flush;
			d->name_len = s->nm[k].len;
			memcpy(d->name, s->nm[k].name, s->nm[k].len + 1);
			d->parent = s->nm[k].parent;
		}
	return 0;
}

static int orphans_report(struct r4_vol *vol, const struct fscan *s,
			  r4_deleted_fn fn, void *ctx, struct r4_error *err)
{
	struct orphans o = { 0 };
	struct r4_deleted d;
	int rc = orphans_find(vol, &o, err);

	for (size_t i = 0; i < o.n && !rc; i++) {
		if (r4_u64map_find(&o.named, o.v[i].oid))
			continue;
		rc = orphan_describe(vol, &o, &o.v[i], s, &d, err);
		if (!rc)
			rc = fn(ctx, &d);
	}
	orphans_fini(&o);
	return rc;
}

static int lsdel_run(struct r4_vol *vol, struct fscan *s, r4_deleted_fn fn,
		     void *ctx, struct r4_error *err)
{
	struct r4_deleted d;
	int rc;

	rc = scan_volume(vol, s, err);
	if (rc)
		return rc;
	sort_scan(s);
	for (size_t i = 0; i < s->nsd; i++) {
		if (i && s->sd[i].oid == s->sd[i - 1].oid)
			continue;	/* an older copy */
		rc = is_live(vol, &s->sd[i], err);
		if (rc < 0)
			return rc;
		if (rc)
			continue;
		rc = describe(vol, s, i, &d, err);
		if (!rc)
			rc = fn(ctx, &d);
		if (rc)
			return rc;
	}
	return orphans_report(vol, s, fn, ctx, err);
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
	scan_free(&s);
	return rc;
}

int r4_lsdel(struct r4_vol *vol, r4_deleted_fn fn, void *ctx,
	     struct r4_error *err)
{
	return r4_lsdel_ex(vol, fn, ctx, NULL, err);
}

/* ---- undel --------------------------------------------------------------- */

struct undel_ctx {
	struct r4_vol *vol;
	r4_undel_data_fn data;
	void *ctx;
	uint8_t *buf;
	struct ranges got;
	struct r4_error *err;
};

static int undel_run(void *ctx, const struct fpiece *p, uint64_t off,
		     uint64_t end, uint64_t blk)
{
	struct undel_ctx *u = ctx;
	size_t boff, blen;
	int rc;

	if (p->tail) {
		/* The node is read again and verified as at scan time. */
		rc = read_copy(u->vol, p->blk, p->raw, u->buf, u->err);
		if (rc)
			return rc;
		if (fmt_node_verify(u->buf, u->vol->blksize, u->vol->keypol,
				    NULL) ||
		    p->boff > u->vol->blksize ||
		    end - off > u->vol->blksize - p->boff)
			return 0;
		boff = p->boff;
		blen = (size_t)(end - off);
		rc = u->data(u->ctx, off, u->buf + boff, blen);
	} else if (!blk) {
		rc = 0;		/* a hole: zeros */
	} else {
		rc = r4_vol_read_block(u->vol, blk, u->buf, u->err);
		if (!rc)
			rc = u->data(u->ctx, off, u->buf, (size_t)(end - off));
	}
	return rc ? rc : ranges_add(&u->got, off, end);
}

static int undel_cluster(void *ctx, uint64_t off, const uint8_t *buf,
			 size_t len)
{
	struct undel_ctx *u = ctx;
	int rc = u->data(u->ctx, off, buf, len);

	return rc ? rc : ranges_add(&u->got, off, off + len);
}

static int undel_go(struct r4_vol *vol, struct fscan *s, uint64_t oid,
		    struct r4_deleted *out, struct undel_ctx *u,
		    r4_undel_gap_fn missing, struct r4_error *err)
{
	struct r4_deleted d;
	uint64_t at = 0;
	int rc;

	s->only_oid = oid;
	rc = scan_volume(vol, s, err);
	if (rc)
		return rc;
	if (!s->nsd)
		return r4i_fail(err, R4_ENOTFOUND, "%s: no stat data of object "
			       "%llu survives in a free block", vol->dev->path,
			       (unsigned long long)oid);
	sort_scan(s);
	rc = is_live(vol, &s->sd[0], err);
	if (rc < 0)
		return rc;
	if (rc)
		return r4i_fail(err, R4_EEXIST, "%s: object %llu is still in "
			       "the tree", vol->dev->path,
			       (unsigned long long)oid);
	rc = describe(vol, s, 0, &d, err);
	if (rc)
		return rc;
	if (out)
		*out = d;
	for (size_t k = 0; k < s->npc && !rc; k++)
		if (s->pc[k].ord == s->sd[0].ord && !s->pc[k].ctail)
			rc = piece_runs(vol, &s->pc[k], d.st.size, undel_run, u,
					err);
	if (!rc)
		rc = cc_recover(vol, s, &s->sd[0], undel_cluster, u, NULL, NULL,
				err);
	if (rc) {
		if (rc == -ENOMEM || !err->code)
			rc = r4i_fail(err, rc, "%s: object %llu: cannot write "
				     "what survives", vol->dev->path,
				     (unsigned long long)oid);
		return rc;
	}
	ranges_merge(&u->got);
	for (size_t k = 0; k < u->got.n && !rc; k++) {
		if (u->got.v[k].off > at && missing)
			rc = missing(u->ctx, at, u->got.v[k].off - at);
		at = u->got.v[k].end;
	}
	if (!rc && at < d.st.size && missing)
		rc = missing(u->ctx, at, d.st.size - at);
	return rc;
}

/* An orphan's body through the tree: R4_ENOTFOUND when oid is not an
 * orphan. */
static int undel_orphan(struct r4_vol *vol, uint64_t oid,
			struct r4_deleted *out, r4_undel_data_fn data,
			r4_undel_gap_fn missing, void *ctx,
			struct r4_error *err)
{
	struct orphans o = { 0 };
	struct r4_deleted d;
	struct r4_objref ref;
	uint8_t *buf = NULL;
	uint64_t off = 0;
	size_t got;
	int rc;

	o.only_oid = oid;
	rc = orphans_find(vol, &o, err);
	if (rc && rc != -ENOMEM) {
		/* a tree we cannot walk: look in free blocks only */
		r4i_error_clear(err);
		rc = R4_ENOTFOUND;
	}
	if (!rc && !o.n)
		rc = R4_ENOTFOUND;
	else if (!rc && r4_u64map_find(&o.named, oid))
		rc = r4i_fail(err, R4_EEXIST, "%s: object %llu is still in "
			      "the tree", vol->dev->path,
			      (unsigned long long)oid);
	if (!rc)
		rc = orphan_describe(vol, &o, &o.v[0], NULL, &d, err);
	if (!rc && out)
		*out = d;
	ref = (struct r4_objref){ o.v ? o.v[0].loc : 0, o.v ? o.v[0].ord : 0,
				  oid };
	if (!rc && S_ISREG(d.st.mode) && !(buf = malloc(1u << 20)))
		rc = r4i_fail(err, -ENOMEM, "%s: out of memory",
			      vol->dev->path);
	while (!rc && buf && off < d.st.size) {
		rc = r4_read(vol, &ref, off, buf, 1u << 20, &got, err);
		if (rc || !got)
			break;
		rc = data(ctx, off, buf, got);
		off += got;
	}
	if (!rc && off < d.st.size && missing && S_ISREG(d.st.mode))
		rc = missing(ctx, off, d.st.size - off);
	free(buf);
	orphans_fini(&o);
	return rc;
}

int r4_undel(struct r4_vol *vol, uint64_t oid, struct r4_deleted *out,
	     r4_undel_data_fn data, r4_undel_gap_fn missing, void *ctx,
	     struct r4_error *err)
{
	struct fscan s = { 0 };
	struct undel_ctx u = { vol, data, ctx, NULL, { 0 }, err };
	int rc;

	if (!oid)
		return r4i_fail(err, R4_EINVAL, "object id 0");
	rc = undel_orphan(vol, oid, out, data, missing, ctx, err);
	if (rc != R4_ENOTFOUND)
		return rc;
	u.buf = malloc(vol->blksize);
	if (!u.buf)
		return r4i_fail(err, -ENOMEM, "%s: out of memory",
			       vol->dev->path);
	rc = undel_go(vol, &s, oid, out, &u, missing, err);
	free(u.buf);
	free(u.got.v);
	scan_free(&s);
	return rc;
}
