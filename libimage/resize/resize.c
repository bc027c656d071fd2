/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: growing and shrinking a volume (include/r4/resize.h), by the
 * rules of doc/format.md §1.9.
 *
 * Both directions end in one transaction (change_size): the bitmap
 * blocks inside the old volume are changed through the journal (the
 * tail bits of the old or new last region, backup copies that come or
 * go), the backup copies inside the old volume are rewritten in place
 * with the new block count, and the super block gets the new count and
 * free count. What lies past the old end (a grow's new bitmap blocks and
 * backup copies) and backup copies on blocks the old volume has free
 * are written and synced before the transaction: the old volume does
 * not use them, so a cut before the commit point leaves it whole. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "r4/resize.h"
#include "r4/repack.h"
#include "libimage/txn/txn.h"
#include "libimage/util/err.h"
#include "format/bitmap.h"
#include "format/super.h"

/* Blocks kept free at the minimum size: the log of the resize
 * transaction (super block, a few bitmaps, the backup copies, records,
 * tx head) and the kernel's RELEASE_RESERVED (doc/format.md §1.9). */
#define MIN_SLACK 64
#define BATCH_DEFAULT 512

void r4_resize_opts_init(struct r4_resize_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->batch = BATCH_DEFAULT;
}

uint64_t r4_resize_max_blocks(uint32_t blksize)
{
	return blksize ? (UINT64_MAX >> 1) / blksize : 0;
}

static int nomem(struct r4_vol *vol, struct r4_error *err)
{
	return r4i_fail(err, -ENOMEM, "%s: out of memory", vol->dev->path);
}

/* The backup positions of a volume of count blocks (malloc'ed). */
static int backups(struct r4_vol *vol, uint64_t count, uint64_t **out,
		   size_t *n, struct r4_error *err)
{
	size_t k = fmt_backup_blocks(count, vol->blksize, NULL, 0);

	*out = malloc((k ? k : 1) * sizeof(**out));
	if (!*out)
		return nomem(vol, err);
	*n = fmt_backup_blocks(count, vol->blksize, *out, k);
	return 0;
}

static int in_set(const uint64_t *v, size_t n, uint64_t b)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid] == b)
			return 1;
		if (v[mid] < b)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* Blocks of a volume of count blocks that hold no tree and no data at
 * or past the first usable block: the bitmap blocks k >= 1 and the
 * backup copies there. */
static uint64_t fixed_past_head(uint64_t count, uint32_t bs)
{
	uint64_t first = fmt_blk_first_usable(bs), n;
	uint64_t bk = fmt_backup_blocks(count, bs, NULL, 0);

	n = fmt_bitmap_count(count, bs) - 1;
	/* every copy but the first (M + 6, below first) is past the head */
	if (bk && fmt_blk_backup0(bs) < first)
		bk--;
	return n + bk;
}

/* Blocks a volume of count blocks offers to the tree and data. */
static uint64_t capacity(uint64_t count, uint32_t bs)
{
	uint64_t first = fmt_blk_first_usable(bs), fx;

	if (count <= first)
		return 0;
	fx = fixed_past_head(count, bs);
	return count - first > fx ? count - first - fx : 0;
}

int r4_resize_min(struct r4_vol *vol, uint64_t *min_blocks,
		  struct r4_error *err)
{
	uint32_t bs = vol->blksize;
	uint64_t count = vol->sb.block_count, used, fixed, need;
	uint64_t lo = fmt_min_block_count(bs), hi = count;

	(void)err;
	fixed = fmt_blk_first_usable(bs) + fixed_past_head(count, bs);
	used = count - vol->sb.free_blocks;
	need = (used > fixed ? used - fixed : 0) + MIN_SLACK;
	if (capacity(hi, bs) < need) {
		*min_blocks = count;
		return 0;
	}
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (capacity(mid, bs) >= need)
			hi = mid;
		else
			lo = mid + 1;
	}
	*min_blocks = lo;
	return 0;
}

/* Used blocks past block n of the volume that are neither bitmap blocks
 * nor backup copies (bk: the current positions), the first of them, and
 * the free blocks there. */
static int scan_past(struct r4_vol *vol, uint64_t n, const uint64_t *bk,
		     size_t nbk, uint64_t *used, uint64_t *first_used,
		     uint64_t *zeros, struct r4_error *err)
{
	struct space *s = &vol->space;
	uint64_t count = vol->sb.block_count;

	*used = *zeros = 0;
	*first_used = 0;
	for (uint64_t k = n / s->bpb; k < s->nregions; k++) {
		uint64_t start = k * s->bpb;
		uint64_t len = fmt_bitmap_region_len(k, count, vol->blksize);
		uint64_t from = n > start ? n - start : 0;
		int rc = space_load(s, k, err);

		if (rc)
			return rc;
		*zeros += fmt_bitmap_count_zero(s->map[k], from, len);
		for (uint64_t b = fmt_bitmap_find_set(s->map[k], from, len);
		     b < len; b = fmt_bitmap_find_set(s->map[k], b + 1, len)) {
			uint64_t blk = start + b;

			if (blk == fmt_bitmap_blk(k, vol->blksize) ||
			    in_set(bk, nbk, blk))
				continue;
			if (!*used)
				*first_used = blk;
			(*used)++;
		}
	}
	return 0;
}

/* ---- the transaction that changes the size ---------------------------- */

struct change {
	struct r4_vol *vol;
	struct txn *t;
	const struct r4_resize_opts *o;
	uint64_t old, n;
	uint64_t *bk_old, *bk_new;
	size_t nbk_old, nbk_new;
	int64_t free_delta;
	uint8_t *bkbuf;		/* the new backup copy */
	uint8_t *buf, *plain;
	uint64_t bitmaps_written;
};

static int load(struct change *c, uint64_t k, struct r4_error *err)
{
	int rc = space_load(&c->vol->space, k, err);

	return rc ? rc : txn_rewrite_bitmap(c->t, k, err);
}

/* Write a block past the old end, or one the old volume has free,
 * straight to the device (before the commit). */
static int put_direct(struct change *c, uint64_t blk, const uint8_t *data,
		      const char *what, struct r4_error *err)
{
	struct r4_vol *vol = c->vol;
	int rc = io_write(vol->dev, data, vol->blksize, blk * vol->blksize,
			  err);

	io_cache_forget(&vol->cache, blk);
	if (rc)
		r4i_fail(err, rc, "%s: cannot write the %s at block %llu",
			      vol->dev->path, what, (unsigned long long)blk);
	return rc;
}

/* The new backup copy: the first copy with the new block count. */
static int make_backup(struct change *c, struct r4_error *err)
{
	struct r4_vol *vol = c->vol;
	uint64_t blk = fmt_blk_backup0(vol->blksize);
	struct fmt_backup b;
	const char *why;
	int rc = vol_read_block(vol, blk, c->bkbuf, "backup block", err);

	if (rc)
		return rc;
	fmt_backup_decode(c->bkbuf, &b);
	why = fmt_backup_verify(&b);
	if (!why && b.block_count != c->old)
		why = "its block count is not the super block's";
	if (why)
		return r4i_fail(err, R4_ECORRUPT, "%s: backup block %llu: %s: "
			       "the volume is not resized; run r4fsck on it "
			       "first", vol->dev->path, (unsigned long long)blk,
			       why);
	b.block_count = c->n;
	memset(c->bkbuf, 0, vol->blksize);
	fmt_backup_encode(&b, c->bkbuf);
	return 0;
}

/* Backup copies: dropped ones freed, new ones inside the old volume
 * taken (they must be free there) and written, kept ones captured. */
static int edit_backups(struct change *c, struct r4_error *err)
{
	struct space *s = &c->vol->space;
	uint64_t lo = c->old < c->n ? c->old : c->n;
	int rc = 0;

	for (size_t i = 0; i < c->nbk_old && !rc; i++) {
		uint64_t b = c->bk_old[i];

		if (b >= lo || in_set(c->bk_new, c->nbk_new, b))
			continue;
		rc = load(c, b / s->bpb, err);
		if (!rc) {
			fmt_bitmap_clear(s->map[b / s->bpb], b % s->bpb);
			c->free_delta++;
		}
	}
	for (size_t i = 0; i < c->nbk_new && !rc; i++) {
		uint64_t b = c->bk_new[i];
		struct io_block *blk;

		if (b >= c->old)
			continue;	/* past the old end: write_past_end */
		if (in_set(c->bk_old, c->nbk_old, b)) {
			rc = txn_capture_fixed(c->t, b, &blk, err);
			if (!rc) {
				memcpy(blk->data, c->bkbuf, c->vol->blksize);
				txn_put(c->t, blk);
			}
			continue;
		}
		rc = load(c, b / s->bpb, err);
		if (rc)
			break;
		if (fmt_bitmap_test(s->map[b / s->bpb], b % s->bpb))
			return r4i_fail(err, R4_ENOSPC, "%s: block %llu, where "
				       "the new size puts a backup copy, is "
				       "still in use after the repack: choose "
				       "another size (the size is unchanged)",
				       c->vol->dev->path,
				       (unsigned long long)b);
		fmt_bitmap_set(s->map[b / s->bpb], b % s->bpb);
		c->free_delta--;
		rc = put_direct(c, b, c->bkbuf, "backup copy", err);
	}
	return rc;
}

/* Grow: the old last region's bits up to the new end (or the region's
 * end) become free, but for new backup copies there. */
static int grow_last_region(struct change *c, struct r4_error *err)
{
	struct space *s = &c->vol->space;
	uint64_t k = (c->old - 1) / s->bpb, start = k * s->bpb;
	uint64_t ol = c->old - start;
	uint64_t nl = c->n - start < s->bpb ? c->n - start : s->bpb;
	int rc = load(c, k, err);

	if (rc || nl <= ol)
		return rc;
	fmt_bitmap_clear_range(s->map[k], ol, nl);
	c->free_delta += (int64_t)(nl - ol);
	for (size_t i = 0; i < c->nbk_new; i++) {
		uint64_t b = c->bk_new[i];

		if (b < c->old || b >= start + nl)
			continue;
		fmt_bitmap_set(s->map[k], b - start);
		c->free_delta--;
	}
	return 0;
}

/* Grow: the bitmap block of every new region, written past the old
 * end; regions without a backup copy and of full length share one
 * image. */
static int write_new_bitmaps(struct change *c, struct r4_error *err)
{
	struct r4_vol *vol = c->vol;
	uint32_t bs = vol->blksize;
	uint64_t bpb = fmt_bitmap_bpb(bs);
	uint64_t k0 = fmt_bitmap_count(c->old, bs), k1 = fmt_bitmap_count(c->n, bs);
	size_t bi = 0;
	int have_plain = 0, rc = 0;

	while (bi < c->nbk_new && c->bk_new[bi] < k0 * bpb)
		bi++;
	for (uint64_t k = k0; k < k1 && !rc; k++) {
		uint64_t start = k * bpb, len = fmt_bitmap_region_len(k, c->n, bs);
		int special = len < bpb ||
			      (bi < c->nbk_new && c->bk_new[bi] < start + len);
		uint8_t *img = special ? c->buf : c->plain;
		uint64_t used = 1;

		if (special || !have_plain) {
			memset(img, 0, bs);
			fmt_bitmap_set(img, 0);
			for (; bi < c->nbk_new && c->bk_new[bi] < start + len;
			     bi++) {
				fmt_bitmap_set(img, c->bk_new[bi] - start);
				used++;
			}
			if (len < bpb)
				fmt_bitmap_set_range(img, len, bpb);
			fmt_bitmap_csum_update(img, bs);
			if (!special)
				have_plain = 1;
		}
		c->free_delta += (int64_t)(len - used);
		rc = put_direct(c, start, img, "bitmap block", err);
		c->bitmaps_written++;
		if (c->o->progress && (c->bitmaps_written % 256 == 0 ||
				       k + 1 == k1))
			c->o->progress(c->o->progress_ctx, "bitmaps",
				       k + 1 - k0, k1 - k0);
	}
	return rc;
}

/* Grow: the new backup copies past the old end. */
static int write_past_end(struct change *c, struct r4_error *err)
{
	int rc = 0;

	for (size_t i = 0; i < c->nbk_new && !rc; i++)
		if (c->bk_new[i] >= c->old)
			rc = put_direct(c, c->bk_new[i], c->bkbuf,
					"backup copy", err);
	return rc;
}

/* Shrink: the new last region's bits from the new end on are set; the
 * free blocks past the new end leave the count. */
static int shrink_tail(struct change *c, uint64_t zeros_past,
		       struct r4_error *err)
{
	struct space *s = &c->vol->space;
	uint64_t k = (c->n - 1) / s->bpb, start = k * s->bpb;
	int rc = load(c, k, err);

	if (rc)
		return rc;
	fmt_bitmap_set_range(s->map[k], c->n - start, s->bpb);
	c->free_delta -= (int64_t)zeros_past;
	return 0;
}

static int change_size(struct change *c, uint64_t zeros_past,
		       struct r4_error *err)
{
	struct r4_vol *vol = c->vol;
	uint32_t bs = vol->blksize;
	uint64_t old_size = vol->dev->size;
	int extended = 0, rc;

	if (c->n > c->old && vol->dev->size / bs < c->n) {
		rc = io_resize(vol->dev, c->n * bs, err);
		if (rc)
			return rc;
		extended = 1;
	}
	rc = txn_begin(vol, &c->t, err);
	if (!rc)
		rc = edit_backups(c, err);
	if (!rc && c->n > c->old) {
		rc = grow_last_region(c, err);
		if (!rc)
			rc = write_new_bitmaps(c, err);
		if (!rc)
			rc = write_past_end(c, err);
	} else if (!rc) {
		rc = shrink_tail(c, zeros_past, err);
	}
	if (!rc)
		rc = io_sync(vol->dev, err);
	if (!rc && (int64_t)vol->sb.free_blocks + c->free_delta < 0)
		rc = r4i_fail(err, R4_ECORRUPT, "%s: the free block count "
			     "would go below zero: run r4fsck on the volume",
			     vol->dev->path);
	if (rc) {
		txn_abort(c->t);
		space_unload(&vol->space);
		if (extended)
			io_resize(vol->dev, old_size, NULL);
		return rc;
	}
	txn_set_counters(c->t, (uint64_t)((int64_t)vol->sb.free_blocks +
					  c->free_delta),
			 vol->sb.file_count, vol->sb.next_oid);
	txn_set_block_count(c->t, c->n);
	rc = txn_commit(c->t, err);
	c->t = NULL;
	if (rc) {
		if (!vol->commit_pending && extended)
			io_resize(vol->dev, old_size, NULL);
		return rc;
	}
	if (c->n < c->old && !vol->dev->fixed &&
	    vol->dev->size > c->n * bs) {
		rc = io_resize(vol->dev, c->n * bs, err);
		if (!rc)
			rc = io_sync(vol->dev, err);
	}
	return rc;
}

/* ---- r4_resize ------------------------------------------------------------ */

static void progress_repack(void *ctx, uint64_t done, uint64_t total)
{
	const struct r4_resize_opts *o = ctx;

	o->progress(o->progress_ctx, "moving", done, total);
}

/* Shrink: move what lies past the new end below it (the repacker lays
 * the tree out from the head of the volume), then check. */
static int evacuate(struct r4_vol *vol, struct change *c,
		    struct r4_resize_result *res, uint64_t *zeros,
		    struct r4_error *err)
{
	struct r4_repack_opts ro;
	struct r4_repack_result rr;
	uint64_t used, first;
	int rc = scan_past(vol, c->n, c->bk_old, c->nbk_old, &used, &first,
			   zeros, err);

	if (rc || !used)
		return rc;
	r4_repack_opts_init(&ro);
	ro.batch = c->o->batch ? c->o->batch : BATCH_DEFAULT;
	if (c->o->progress) {
		ro.progress = progress_repack;
		ro.progress_ctx = (void *)c->o;
	}
	rc = r4_repack(vol, &ro, &rr, err);
	if (rc)
		return rc;
	res->moved += rr.moved;
	res->batches += rr.batches;
	rc = scan_past(vol, c->n, c->bk_old, c->nbk_old, &used, &first,
		       zeros, err);
	if (!rc && used)
		rc = r4i_fail(err, R4_ENOSPC, "%s: block %llu (and %llu more "
			     "past block %llu) still in use after the blocks "
			     "were moved: the volume is not shrunk; try a "
			     "larger size", vol->dev->path,
			     (unsigned long long)first,
			     (unsigned long long)(used - 1),
			     (unsigned long long)c->n);
	return rc;
}

/* Grow: the new backup copies inside the old volume (the second block
 * of the old last region, when the walk of doc/format.md §1.7 now
 * reaches it) go on blocks the volume may use. The repacker's layout
 * keeps every backup position free, so a volume that uses one is
 * repacked first (crash-safe batches); *used says how many were in use
 * before. */
static int used_backup_places(struct r4_vol *vol, const struct change *c,
			      uint64_t *used, struct r4_error *err)
{
	*used = 0;
	for (size_t i = 0; i < c->nbk_new; i++) {
		uint64_t b = c->bk_new[i];
		int rc;

		if (b >= c->old || in_set(c->bk_old, c->nbk_old, b))
			continue;
		rc = space_test(&vol->space, b, err);
		if (rc < 0)
			return rc;
		*used += (uint64_t)rc;
	}
	return 0;
}

static int clear_backup_places(struct r4_vol *vol, struct change *c,
			       struct r4_resize_result *res,
			       struct r4_error *err)
{
	struct r4_repack_opts ro;
	struct r4_repack_result rr;
	uint64_t used;
	int rc = used_backup_places(vol, c, &used, err);

	if (rc || !used)
		return rc;
	r4_repack_opts_init(&ro);
	ro.batch = c->o->batch ? c->o->batch : BATCH_DEFAULT;
	if (c->o->progress) {
		ro.progress = progress_repack;
		ro.progress_ctx = (void *)c->o;
	}
	rc = r4_repack(vol, &ro, &rr, err);
	if (rc) {
		char why[200];
		size_t l = strnlen(err->msg, sizeof(why) - 1);

		memcpy(why, err->msg, l);
		why[l] = '\0';
		return r4i_fail_over(err, rc, "%s: %llu block%s where the new size "
			       "puts backup copies in use, and the repack that "
			       "frees them failed (%.199s): the size is "
			       "unchanged", vol->dev->path,
			       (unsigned long long)used, used == 1 ? "" : "s",
			       why);
	}
	res->moved += rr.moved;
	res->batches += rr.batches;
	return 0;
}

/* The figures of the volume as it is and as n blocks would make it
 * (res), and its minimum size. */
static int figures(struct r4_vol *vol, uint64_t n,
		   struct r4_resize_result *res, struct r4_error *err)
{
	uint32_t bs = vol->blksize;
	uint64_t old = vol->sb.block_count;

	res->blksize = bs;
	res->old_blocks = old;
	res->new_blocks = n;
	res->max_blocks = r4_resize_max_blocks(bs);
	res->device_blocks = vol->dev->size / bs;
	res->free_before = res->free_after = vol->sb.free_blocks;
	res->bitmaps_before = fmt_bitmap_count(old, bs);
	res->bitmaps_after = fmt_bitmap_count(n >= fmt_min_block_count(bs) ?
					      n : old, bs);
	res->backups_before = fmt_backup_blocks(old, bs, NULL, 0);
	return r4_resize_min(vol, &res->min_blocks, err);
}

/* Refuse a size the format cannot address, one below the minimum, or
 * one past the end of a block device: nothing changed. */
static int refuse(struct r4_vol *vol, uint64_t n,
		  const struct r4_resize_result *res, struct r4_error *err)
{
	uint32_t bs = vol->blksize;
	uint64_t old = vol->sb.block_count;

	if (n > res->max_blocks)
		return r4i_fail(err, R4_ERANGE, "%s: %llu blocks is more than "
			       "the format addresses (at most %llu blocks of "
			       "%u bytes): nothing was changed",
			       vol->dev->path, (unsigned long long)n,
			       (unsigned long long)res->max_blocks, bs);
	if (n < old && n < res->min_blocks)
		return r4i_fail(err, R4_ERANGE, "%s: %llu blocks is below the "
			       "minimum size of this volume, %llu blocks "
			       "(%llu KiB): nothing was changed",
			       vol->dev->path, (unsigned long long)n,
			       (unsigned long long)res->min_blocks,
			       (unsigned long long)(res->min_blocks * bs /
						    1024));
	if (n > old && vol->dev->fixed && vol->dev->size / bs < n)
		return r4i_fail(err, R4_ERANGE, "%s: the %s holds %llu "
			       "blocks, fewer than the %llu asked: nothing "
			       "was changed", vol->dev->path, vol->dev->window ?
			       "window (the partition)" : "device",
			       (unsigned long long)(vol->dev->size / bs),
			       (unsigned long long)n);
	return 0;
}

/* Before any write: the buffers, the backup places of both sizes, the
 * new backup copy, and the used blocks to move (res->to_move: past the
 * new end to shrink, on the new backup places to grow; *zeros: the
 * zero blocks past a new end). */
static int survey(struct change *c, struct r4_resize_result *res,
		  uint64_t *zeros, struct r4_error *err)
{
	struct r4_vol *vol = c->vol;
	uint32_t bs = vol->blksize;
	uint64_t first;
	int rc;

	c->bkbuf = malloc(bs);
	c->buf = malloc(bs);
	c->plain = malloc(bs);
	if (!c->bkbuf || !c->buf || !c->plain)
		return nomem(vol, err);
	rc = backups(vol, c->old, &c->bk_old, &c->nbk_old, err);
	if (!rc)
		rc = backups(vol, c->n, &c->bk_new, &c->nbk_new, err);
	if (!rc)
		rc = make_backup(c, err);
	if (!rc && c->n < c->old)
		rc = scan_past(vol, c->n, c->bk_old, c->nbk_old, &res->to_move,
			       &first, zeros, err);
	if (!rc && c->n > c->old)
		rc = used_backup_places(vol, c, &res->to_move, err);
	return rc;
}

/* The change: to grow, clear the new backup places; to shrink, move
 * the blocks past the new end; then the size itself (change_size). */
static int apply(struct change *c, struct r4_resize_result *res,
		 uint64_t zeros, struct r4_error *err)
{
	struct r4_vol *vol = c->vol;
	uint32_t bs = vol->blksize;
	int rc;

	if (c->n > c->old) {
		rc = clear_backup_places(vol, c, res, err);
		if (rc)
			return rc;
	}
	if (c->n < c->old) {
		rc = evacuate(vol, c, res, &zeros, err);
		if (rc)
			return rc;
		c->old = vol->sb.block_count;
	}
	rc = change_size(c, zeros, err);
	/* the cache addresses what the device holds now */
	vol->cache.nblocks = vol->dev->size / bs;
	if (!rc) {
		res->changed = 1;
		res->free_after = vol->sb.free_blocks;
		res->device_blocks = vol->dev->size / bs;
	}
	return rc;
}

int r4_resize(struct r4_vol *vol, uint64_t n, const struct r4_resize_opts *o,
	      struct r4_resize_result *res, struct r4_error *err)
{
	struct r4_resize_result dummy;
	struct r4_resize_opts defaults;
	struct change c;
	uint64_t zeros = 0;
	int rc;

	if (!res)
		res = &dummy;
	if (!o) {
		r4_resize_opts_init(&defaults);
		o = &defaults;
	}
	memset(res, 0, sizeof(*res));
	memset(&c, 0, sizeof(c));
	c.vol = vol;
	c.o = o;
	c.old = vol->sb.block_count;
	c.n = n;
	rc = figures(vol, n, res, err);
	if (!rc)
		rc = refuse(vol, n, res, err);
	if (rc)
		return rc;
	res->backups_after = fmt_backup_blocks(n, vol->blksize, NULL, 0);
	if (n == c.old)
		return 0;
	rc = survey(&c, res, &zeros, err);
	if (!rc && !o->dry_run)
		rc = apply(&c, res, zeros, err);
	free(c.bk_old);
	free(c.bk_new);
	free(c.bkbuf);
	free(c.buf);
	free(c.plain);
	return rc;
}
