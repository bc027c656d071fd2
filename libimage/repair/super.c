/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: restoring the master and format40 super blocks from the backup
 * copies before the volume is opened (r4_repair_super). A backup holds
 * the master block and the fixed part of the format40 block (magic,
 * block count, mkfs id, policy, flags, version); the counters, the root
 * block and the tree height are not in it, so they are kept as found and
 * the format40 block is restored only when they are plausible, or when
 * a scan of the used blocks finds the root (find_root). */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "r4/repair.h"
#include "libimage/io/dev.h"
#include "libimage/util/err.h"
#include "format/super.h"
#include "format/journal.h"
#include "format/bitmap.h"
#include "format/node.h"

static int read_blk(struct io_dev *dev, uint32_t bs, uint64_t blk,
		    uint8_t *buf, struct r4_error *err)
{
	if ((blk + 1) * bs > dev->size)
		return R4_ERANGE;
	return io_read(dev, buf, bs, blk * bs, err);
}

/* A backup copy that decodes to a good master of block size bs. */
static int find_backup(struct io_dev *dev, uint32_t bs, uint8_t *buf,
		       struct fmt_backup *b, uint64_t *where)
{
	uint64_t blocks = dev->size / bs, list[64];
	size_t n = fmt_backup_blocks(blocks, bs, list, 64);
	struct r4_error e = { 0, "", 0 };

	if (!read_blk(dev, bs, fmt_blk_backup0(bs), buf, &e)) {
		fmt_backup_decode(buf, b);
		if (!fmt_master_verify(&b->master) && b->master.blksize == bs &&
		    !memcmp(b->magic, FMT_FORMAT40_MAGIC,
			    sizeof(FMT_FORMAT40_MAGIC) - 1)) {
			*where = fmt_blk_backup0(bs);
			return 0;
		}
	}
	for (size_t i = 0; i < n && i < 64; i++) {
		if (read_blk(dev, bs, list[i], buf, &e))
			continue;
		fmt_backup_decode(buf, b);
		if (!fmt_master_verify(&b->master) && b->master.blksize == bs &&
		    !memcmp(b->magic, FMT_FORMAT40_MAGIC,
			    sizeof(FMT_FORMAT40_MAGIC) - 1)) {
			*where = list[i];
			return 0;
		}
	}
	return R4_ENOTFOUND;
}

/* A node of this volume (plugin, magic, mkfs id, a sound header and
 * items): its level, else 0. */
static unsigned node_level(const uint8_t *blk, uint32_t bs,
			   const struct fmt_format40 *sb)
{
	struct fmt_node_header h;

	if (fmt_node_header_decode(blk, bs, &h) ||
	    h.magic != fmt_node_magic(h.plugin_id) || h.mkfs_id != sb->mkfs_id ||
	    fmt_node_verify(blk, bs, fmt_format40_key_policy(sb), NULL))
		return 0;
	return h.level;
}

/* doc/format.md §1.3, §1.6, §4.1: the root block and the tree height
 * are not in the backups. When they are lost, the root is the node of
 * this volume at the highest level (at the stored height when that is
 * still in range) among the blocks the bitmap marks used; of several,
 * the one with the most items (the checks that follow adopt the other
 * subtrees as nodes not reachable from the root). A bitmap block that
 * cannot be read counts its blocks as used. R4_ENOTFOUND when no node
 * above the leaves is found. */
static int find_root(struct io_dev *dev, uint32_t bs,
		     const struct fmt_format40 *sb, uint8_t *buf,
		     uint64_t *root, unsigned *level, unsigned *ties)
{
	/* never past the device's end (a hostile count must not make the
	 * scan long) */
	uint64_t nblk = sb->block_count < dev->size / bs ? sb->block_count :
			dev->size / bs;
	uint64_t nbm = fmt_bitmap_count(nblk, bs);
	unsigned want = sb->tree_height >= FMT_TREE_HEIGHT_MIN &&
			sb->tree_height <= FMT_TREE_HEIGHT_MAX ?
			sb->tree_height : 0;
	uint8_t *bm = malloc(bs);
	struct r4_error e = { 0, "", 0 };
	unsigned best = 0, items = 0;

	if (!bm)
		return -ENOMEM;
	*ties = 0;
	for (int pass = 0; pass < 2 && !best; pass++) {
		for (uint64_t k = 0; k < nbm; k++) {
			uint64_t start = fmt_bitmap_region_start(k, bs);
			uint64_t len = fmt_bitmap_region_len(k, nblk, bs);
			int have = !read_blk(dev, bs, fmt_bitmap_blk(k, bs), bm,
					     &e);

			for (uint64_t b = 0; b < len; b++) {
				struct fmt_node_header h;
				uint64_t blk = start + b;
				unsigned lv;

				if ((have && !fmt_bitmap_test(bm, b)) ||
				    blk < fmt_blk_first_usable(bs) ||
				    read_blk(dev, bs, blk, buf, &e))
					continue;
				lv = node_level(buf, bs, sb);
				if (lv < FMT_TREE_HEIGHT_MIN ||
				    lv > FMT_TREE_HEIGHT_MAX ||
				    (pass == 0 && want && lv != want) ||
				    lv < best)
					continue;
				fmt_node_header_decode(buf, bs, &h);
				if (lv > best) {
					best = lv;
					*ties = 0;
					items = 0;
				}
				(*ties)++;
				if (h.nr_items > items || *ties == 1) {
					items = h.nr_items;
					*root = blk;
				}
			}
		}
		if (!want)
			break;
	}
	free(bm);
	if (!best)
		return R4_ENOTFOUND;
	*level = best;
	return 0;
}

/* The root pointer or the tree height fails its checks (doc/format.md
 * §1.3): keep a good root node and take the height from it, else scan
 * for the root. 1 with sb set and what said, 0 when nothing fits. */
static int mend_root(struct io_dev *dev, uint32_t bs, struct fmt_format40 *sb,
		     uint8_t *buf, char *what, size_t wlen)
{
	const char *why = fmt_format40_verify(sb, bs);
	uint64_t root = 0;
	unsigned level = 0, ties = 0;

	if (!why || (!strstr(why, "root_block") && !strstr(why, "tree_height")))
		return 0;
	if (!strstr(why, "root_block") &&
	    !read_blk(dev, bs, sb->root_block, buf, &(struct r4_error){ 0 }) &&
	    (level = node_level(buf, bs, sb)) >= FMT_TREE_HEIGHT_MIN &&
	    level <= FMT_TREE_HEIGHT_MAX) {
		sb->tree_height = (uint16_t)level;
		snprintf(what, wlen, "; the tree height taken from the root "
			 "node (block %llu, level %u)",
			 (unsigned long long)sb->root_block, level);
		return 1;
	}
	if (find_root(dev, bs, sb, buf, &root, &level, &ties))
		return 0;
	sb->root_block = root;
	sb->tree_height = (uint16_t)level;
	snprintf(what, wlen, "; the root found by a scan of the used blocks: "
		 "block %llu, level %u%s", (unsigned long long)root, level,
		 ties > 1 ? " (of several nodes at that level: the others "
		 "are adopted as unreachable nodes)" : "");
	return 1;
}

/* Hand one restored (or, dry, damaged) super block to fn. */
static void tell(r4_repair_action_fn fn, void *ctx, int code, uint64_t blk,
		 const char *what)
{
	struct r4_repair_action a = { 0 };

	if (!fn)
		return;
	a.code = code;
	a.block = blk;
	a.loss = R4_LOSS_NONE;
	a.what = what;
	fn(ctx, &a);
}

/* dry: write nothing; *fixed and fn say what would be restored. */
static int restore(struct io_dev *dev, int rebuild, int dry, int *fixed,
		   r4_repair_action_fn fn, void *ctx, uint8_t *buf,
		   struct r4_error *err)
{
	struct fmt_master m;
	struct fmt_format40 sb, was;
	struct fmt_backup b;
	uint32_t bs = 4096;
	uint64_t where = 0;
	int rc, master_bad, sb_bad;
	char what[R4_ERRMSG_MAX], found[160];

	rc = io_read(dev, buf, FMT_MASTER_SIZE, FMT_MASTER_OFFSET, err);
	if (rc)
		return rc;
	fmt_master_decode(buf, &m);
	master_bad = fmt_master_verify(&m) != NULL;
	if (!master_bad)
		bs = m.blksize;
	rc = find_backup(dev, bs, buf, &b, &where);
	if (rc && master_bad)
		for (uint32_t s = 512; s <= 65536 && rc; s *= 2)
			if (s != 4096 && !(rc = find_backup(dev, s, buf, &b,
							     &where)))
				bs = s;
	if (rc) {
		if (!master_bad && !rebuild)
			return 0;	/* nothing to restore from, nor to do */
		return r4i_fail(err, R4_ENOTFOUND, "%s: no usable backup copy "
			       "of the super blocks", dev->path);
	}
	rc = read_blk(dev, bs, fmt_blk_format40(bs), buf, err);
	if (rc)
		return r4i_fail(err, rc, "%s: cannot read the format40 super "
			       "block", dev->path);
	fmt_format40_decode(buf, &sb);
	was = sb;
	/* A block count past the device's end is damage too (the open
	 * refuses it) when the backup's count fits. */
	sb_bad = fmt_format40_verify(&sb, bs) != NULL ||
		 (sb.block_count > dev->size / bs &&
		  b.block_count <= dev->size / bs);
	if (sb_bad || (rebuild && (sb.block_count != b.block_count ||
				   sb.mkfs_id != b.mkfs_id))) {
		sb.block_count = b.block_count;
		sb.mkfs_id = b.mkfs_id;
		sb.policy = b.policy;
		sb.flags = b.flags;
		sb.version = b.version;
		sb.update_backup = 0;
		memcpy(sb.magic, b.magic, sizeof(sb.magic));
		/* Counters the space pass sets right after the open. */
		if (sb.free_blocks > sb.block_count)
			sb.free_blocks = 0;
		if (sb.next_oid < FMT_FIRST_FREE_OID)
			sb.next_oid = FMT_FIRST_FREE_OID;
		found[0] = 0;
		rc = mend_root(dev, bs, &sb, buf, found, sizeof(found));
		if (rc < 0)
			return rc;
		if (rc) {
			/* the scan used buf: read the block back */
			rc = read_blk(dev, bs, fmt_blk_format40(bs), buf, err);
			if (rc)
				return rc;
		}
		if (fmt_format40_verify(&sb, bs))
			return r4i_fail(err, R4_ECORRUPT, "%s: the format40 "
				       "super block is damaged beyond its "
				       "backup copy (%s): a rebuild from the "
				       "tree is not implemented", dev->path,
				       fmt_format40_verify(&sb, bs));
		fmt_format40_encode(&sb, buf);
		rc = dry ? 0 : io_write(dev, buf, bs,
					fmt_blk_format40(bs) * bs, err);
		if (!rc && !dry)
			rc = io_sync(dev, err);
		if (rc)
			return rc;
		*fixed |= 2;
		snprintf(what, sizeof(what), dry ? "format40 super block "
			 "(block %llu) is %s; the backup copy in block %llu "
			 "is intact (r4fsck -y restores it)%s%s" :
			 "format40 super block (block %llu) %srestored from "
			 "the backup copy in block %llu%s%s",
			 (unsigned long long)fmt_blk_format40(bs),
			 dry ? (sb_bad ? "damaged" : "different from the "
				"backup copy") : "",
			 (unsigned long long)where,
			 was.block_count != sb.block_count ?
			 " (block count differed)" : "", found);
		tell(fn, ctx, R4_CHK_FORMAT40, fmt_blk_format40(bs), what);
	}
	if (master_bad || (rebuild && memcmp(&m, &b.master,
					     FMT_MASTER_PROGS_SIZE))) {
		m = b.master;
		rc = io_read(dev, buf, bs, fmt_blk_master(bs) * bs, err);
		if (rc)
			return rc;
		fmt_master_encode(&m, buf + FMT_MASTER_OFFSET % bs);
		rc = dry ? 0 : io_write(dev, buf, bs, fmt_blk_master(bs) * bs,
					err);
		if (!rc && !dry)
			rc = io_sync(dev, err);
		if (rc)
			return rc;
		*fixed |= 1;
		snprintf(what, sizeof(what), dry ? "master super block "
			 "(block %llu) is %s; the backup copy in block %llu is "
			 "intact (r4fsck -y restores it)" : "master super "
			 "block (block %llu) %srestored from the backup copy "
			 "in block %llu", (unsigned long long)fmt_blk_master(bs),
			 dry ? (master_bad ? "damaged" : "different from the "
				"backup copy") : "",
			 (unsigned long long)where);
		tell(fn, ctx, R4_CHK_MASTER, fmt_blk_master(bs), what);
	}
	return 0;
}

/* Open path (for writing unless dry) and restore or probe its super
 * blocks (restore()). */
static int open_restore(const char *path, int rebuild, int dry,
			r4_repair_action_fn fn, void *ctx, int *fixed,
			const struct r4_open_opts *open,
			struct r4_error *err)
{
	struct io_dev *dev;
	uint8_t *buf = malloc(65536);
	int rc;

	*fixed = 0;
	if (!buf)
		return r4i_fail(err, -ENOMEM, "out of memory");
	rc = io_open_opts(path, dry ? IO_RDONLY : IO_RDWR, open, &dev, NULL,
			  err);
	if (!rc) {
		rc = restore(dev, rebuild, dry, fixed, fn, ctx, buf, err);
		io_close(dev);
	}
	free(buf);
	return rc;
}

int r4_repair_super(const char *path, int rebuild, r4_repair_action_fn fn,
		    void *ctx, int *fixed, const struct r4_open_opts *open,
		    struct r4_error *err)
{
	return open_restore(path, rebuild, 0, fn, ctx, fixed, open, err);
}

int r4_repair_super_probe(const char *path, int rebuild,
			  r4_repair_action_fn fn, void *ctx, int *damaged,
			  const struct r4_open_opts *open, struct r4_error *err)
{
	return open_restore(path, rebuild, 1, fn, ctx, damaged, open, err);
}

/* The image's size against the format40 super block's block count. */
static int size_check(struct io_dev *dev, int extend, r4_repair_action_fn fn,
		      void *ctx, uint64_t *missing, uint8_t *buf,
		      struct r4_error *err)
{
	struct fmt_master m;
	struct fmt_format40 sb;
	uint64_t have;
	char what[R4_ERRMSG_MAX];
	uint32_t bs;
	int rc;

	rc = io_read(dev, buf, FMT_MASTER_SIZE, FMT_MASTER_OFFSET, err);
	if (rc)
		return rc;
	fmt_master_decode(buf, &m);
	if (fmt_master_verify(&m))
		return 0;	/* the open says what is wrong */
	bs = m.blksize;
	if (read_blk(dev, bs, fmt_blk_format40(bs), buf, err))
		return 0;
	fmt_format40_decode(buf, &sb);
	have = dev->size / bs;
	if (fmt_format40_verify(&sb, bs) || sb.block_count <= have)
		return 0;
	*missing = sb.block_count - have;
	if (!extend) {
		snprintf(what, sizeof(what), "image holds %llu blocks, the "
			 "format40 super block (block %llu) counts %llu: "
			 "%llu blocks missing (the image was truncated)",
			 (unsigned long long)have,
			 (unsigned long long)fmt_blk_format40(bs),
			 (unsigned long long)sb.block_count,
			 (unsigned long long)*missing);
		tell(fn, ctx, R4_CHK_TRUNCATED, fmt_blk_format40(bs), what);
		return 0;
	}
	if (dev->fixed)
		return r4i_fail(err, R4_ERANGE, "%s: the %s holds %llu "
			       "blocks, the format40 super block counts %llu: "
			       "it is not extended", dev->path,
			       dev->window ? "window" : "device",
			       (unsigned long long)have,
			       (unsigned long long)sb.block_count);
	rc = io_resize(dev, sb.block_count * bs, err);
	if (!rc)
		rc = io_sync(dev, err);
	if (rc)
		return rc;
	snprintf(what, sizeof(what), "image extended with zeros from %llu to "
		 "%llu blocks (what the %llu missing blocks held is lost)",
		 (unsigned long long)have, (unsigned long long)sb.block_count,
		 (unsigned long long)*missing);
	tell(fn, ctx, R4_CHK_TRUNCATED, fmt_blk_format40(bs), what);
	return 0;
}

int r4_repair_size(const char *path, int extend, r4_repair_action_fn fn,
		   void *ctx, uint64_t *missing,
		   const struct r4_open_opts *open, struct r4_error *err)
{
	struct io_dev *dev;
	uint8_t *buf = malloc(65536);
	int rc;

	*missing = 0;
	if (!buf)
		return r4i_fail(err, -ENOMEM, "out of memory");
	rc = io_open_opts(path, extend ? IO_RDWR : IO_RDONLY, open, &dev, NULL,
			  err);
	if (!rc) {
		rc = size_check(dev, extend, fn, ctx, missing, buf, err);
		io_close(dev);
	}
	free(buf);
	return rc;
}

int r4_repair_journal_drop(const char *path, r4_repair_action_fn problem,
			   r4_repair_action_fn fn, void *ctx,
			   const struct r4_open_opts *open,
			   struct r4_error *err)
{
	char what[R4_ERRMSG_MAX];
	struct fmt_journal_header jh;
	struct fmt_journal_footer jf;
	struct fmt_master m;
	struct io_dev *dev;
	uint8_t *buf = malloc(65536);
	uint32_t bs;
	int rc;

	if (!buf)
		return r4i_fail(err, -ENOMEM, "out of memory");
	rc = io_open_opts(path, IO_RDWR, open, &dev, NULL, err);
	if (rc) {
		free(buf);
		return rc;
	}
	rc = io_read(dev, buf, FMT_MASTER_SIZE, FMT_MASTER_OFFSET, err);
	if (!rc) {
		fmt_master_decode(buf, &m);
		if (fmt_master_verify(&m))
			rc = r4i_fail(err, R4_ECORRUPT, "%s: %s", path,
				     fmt_master_verify(&m));
	}
	bs = m.blksize;
	if (!rc)
		rc = read_blk(dev, bs, fmt_blk_journal_footer(bs), buf, err);
	if (!rc) {
		fmt_journal_footer_decode(buf, &jf);
		rc = read_blk(dev, bs, fmt_blk_journal_header(bs), buf, err);
	}
	if (!rc) {
		fmt_journal_header_decode(buf, &jh);
		snprintf(what, sizeof(what), "journal header (block %llu) "
			 "names a transaction that cannot be replayed (tx "
			 "head %llu, last flushed %llu)",
			 (unsigned long long)fmt_blk_journal_header(bs),
			 (unsigned long long)jh.last_committed_tx,
			 (unsigned long long)jf.last_flushed_tx);
		tell(problem, ctx, R4_CHK_JOURNAL, fmt_blk_journal_header(bs),
		     what);
		snprintf(what, sizeof(what), "journal header (block %llu) named a "
			 "transaction that cannot be replayed (tx head %llu): "
			 "dropped, the header now names the last flushed one "
			 "(%llu)", (unsigned long long)fmt_blk_journal_header(bs),
			 (unsigned long long)jh.last_committed_tx,
			 (unsigned long long)jf.last_flushed_tx);
		jh.last_committed_tx = jf.last_flushed_tx;
		fmt_journal_header_encode(&jh, buf);
		rc = io_write(dev, buf, bs, fmt_blk_journal_header(bs) * bs,
			      err);
	}
	if (!rc)
		rc = io_sync(dev, err);
	if (!rc)
		tell(fn, ctx, R4_CHK_JOURNAL, fmt_blk_journal_header(bs), what);
	io_close(dev);
	free(buf);
	return rc;
}
