/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: restoring the master and format40 super blocks from the backup
 * copies before the volume is opened (r4_repair_super). A backup holds
 * the master block and the fixed part of the format40 block (magic,
 * block count, mkfs id, policy, flags, version); the counters, the root
 * block and the tree height are not in it, so they are kept as found and
 * the format40 block is restored only when they are plausible, or when
 * a scan of the used blocks finds the root (find_root). What it finds
 * and does is told in the messages of the problem table
 * (libimage/check/messages.h, CHK_M_SB_*, TRUNCATED*, JOURNAL_*). */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "r4/repair.h"
#include "libimage/io/dev.h"
#include "libimage/check/say.h"
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

/* The best root candidate of a scan so far (find_root). */
struct root_scan {
	unsigned want;		/* the stored height when in range, else 0 */
	unsigned best;		/* the highest level found */
	unsigned items;		/* the candidate's item count */
	unsigned ties;		/* nodes found at that level */
	uint64_t root;
};

/* One bitmap region's blocks (all of them when its bitmap block cannot
 * be read) for the root: nodes at the stored height only on pass 0. */
static void scan_region(struct io_dev *dev, uint32_t bs,
			const struct fmt_format40 *sb, uint64_t nblk,
			uint64_t k, int pass, uint8_t *bm, uint8_t *buf,
			struct root_scan *s)
{
	uint64_t start = fmt_bitmap_region_start(k, bs);
	uint64_t len = fmt_bitmap_region_len(k, nblk, bs);
	struct r4_error e = { 0, "", 0 };
	int have = !read_blk(dev, bs, fmt_bitmap_blk(k, bs), bm, &e);

	for (uint64_t b = 0; b < len; b++) {
		struct fmt_node_header h;
		uint64_t blk = start + b;
		unsigned lv;

		if ((have && !fmt_bitmap_test(bm, b)) ||
		    blk < fmt_blk_first_usable(bs) ||
		    read_blk(dev, bs, blk, buf, &e))
			continue;
		lv = node_level(buf, bs, sb);
		if (lv < FMT_TREE_HEIGHT_MIN || lv > FMT_TREE_HEIGHT_MAX ||
		    (pass == 0 && s->want && lv != s->want) || lv < s->best)
			continue;
		fmt_node_header_decode(buf, bs, &h);
		if (lv > s->best) {
			s->best = lv;
			s->ties = 0;
			s->items = 0;
		}
		s->ties++;
		if (h.nr_items > s->items || s->ties == 1) {
			s->items = h.nr_items;
			s->root = blk;
		}
	}
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
	struct root_scan s = { 0 };
	uint8_t *bm = malloc(bs);

	if (!bm)
		return -ENOMEM;
	s.want = sb->tree_height >= FMT_TREE_HEIGHT_MIN &&
		 sb->tree_height <= FMT_TREE_HEIGHT_MAX ? sb->tree_height : 0;
	for (int pass = 0; pass < 2 && !s.best; pass++) {
		for (uint64_t k = 0; k < nbm; k++)
			scan_region(dev, bs, sb, nblk, k, pass, bm, buf, &s);
		if (!s.want)
			break;
	}
	free(bm);
	*ties = s.ties;
	if (!s.best)
		return R4_ENOTFOUND;
	*root = s.root;
	*level = s.best;
	return 0;
}

/* Render message m (libimage/check/messages.h) with args into out. */
static void say_into(char *out, size_t n, int m, const struct chk_arg *args)
{
	chk_render(chk_msg_info(m)->text, args, out, n);
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
		say_into(what, wlen, CHK_M_SB_ROOT_LEVEL,
			 (const struct chk_arg[]){ CHK_U(root, sb->root_block),
						   CHK_U(level, level),
						   CHK_ARGS_END });
		return 1;
	}
	if (find_root(dev, bs, sb, buf, &root, &level, &ties))
		return 0;
	sb->root_block = root;
	sb->tree_height = (uint16_t)level;
	say_into(what, wlen, CHK_M_SB_ROOT_SCAN,
		 (const struct chk_arg[]){ CHK_U(root, root),
					   CHK_U(level, level),
					   CHK_U(count, ties - 1),
					   CHK_ARGS_END });
	return 1;
}

/* Hand one restored (or, dry, damaged) super block to fn: message m
 * (its problem code and text) rendered with args. */
static void tell(r4_repair_action_fn fn, void *ctx, int m, uint64_t blk,
		 const struct chk_arg *args)
{
	struct r4_repair_action a = { 0 };
	char what[R4_ERRMSG_MAX];

	if (!fn)
		return;
	chk_render(chk_msg_info(m)->text, args, what, sizeof(what));
	a.code = chk_msg_info(m)->code;
	a.block = blk;
	a.loss = R4_LOSS_NONE;
	a.what = what;
	fn(ctx, &a);
}

/* One restore or probe of the super blocks (restore()). */
struct restore {
	struct io_dev *dev;
	int rebuild, dry;
	int *fixed;
	r4_repair_action_fn fn;
	void *ctx;
	uint8_t *buf;
	struct r4_error *err;
	uint32_t bs;		/* the block size */
	struct fmt_master m;	/* the master block as found */
	int master_bad;
	struct fmt_backup b;	/* the backup copy restored from */
	uint64_t where;		/* its block */
};

/* The master block as found, and a backup copy to restore from at its
 * block size, else (a damaged master) at any. *none when there is no
 * copy and nothing to do (a good master, no rebuild); an error when
 * there is no copy but damage. */
static int take_backup(struct restore *r, int *none)
{
	int rc = io_read(r->dev, r->buf, FMT_MASTER_SIZE, FMT_MASTER_OFFSET,
			 r->err);

	if (rc)
		return rc;
	fmt_master_decode(r->buf, &r->m);
	r->master_bad = fmt_master_verify(&r->m) != NULL;
	r->bs = r->master_bad ? 4096 : r->m.blksize;
	rc = find_backup(r->dev, r->bs, r->buf, &r->b, &r->where);
	if (rc && r->master_bad)
		for (uint32_t s = 512; s <= 65536 && rc; s *= 2)
			if (s != 4096 && !(rc = find_backup(r->dev, s, r->buf,
							     &r->b, &r->where)))
				r->bs = s;
	if (!rc)
		return 0;
	*none = !r->master_bad && !r->rebuild;
	if (*none)
		return 0;
	return r4i_fail(r->err, R4_ENOTFOUND, "%s: no usable backup copy of "
		       "the super blocks", r->dev->path);
}

/* Write block blk from buf and sync, unless dry. */
static int put_blk(struct restore *r, uint64_t blk)
{
	int rc;

	if (r->dry)
		return 0;
	rc = io_write(r->dev, r->buf, r->bs, blk * r->bs, r->err);
	return rc ? rc : io_sync(r->dev, r->err);
}

/* The fixed fields of the format40 block taken from the backup; the
 * counters the space pass sets after the open kept when plausible. */
static void take_fixed_fields(struct fmt_format40 *sb,
			      const struct fmt_backup *b)
{
	sb->block_count = b->block_count;
	sb->mkfs_id = b->mkfs_id;
	sb->policy = b->policy;
	sb->flags = b->flags;
	sb->version = b->version;
	sb->update_backup = 0;
	memcpy(sb->magic, b->magic, sizeof(sb->magic));
	if (sb->free_blocks > sb->block_count)
		sb->free_blocks = 0;
	if (sb->next_oid < FMT_FIRST_FREE_OID)
		sb->next_oid = FMT_FIRST_FREE_OID;
}

/* The format40 block restored (or, dry, probed) from the backup when
 * it is damaged (a block count past the device's end too, when the
 * backup's fits: the open refuses it) or, rebuilding, differs. */
static int restore_format40(struct restore *r)
{
	struct fmt_format40 sb, was;
	uint64_t at = fmt_blk_format40(r->bs), fits = r->dev->size / r->bs;
	char found[160];
	int rc, bad;

	rc = read_blk(r->dev, r->bs, at, r->buf, r->err);
	if (rc)
		return r4i_fail(r->err, rc, "%s: cannot read the format40 "
			       "super block", r->dev->path);
	fmt_format40_decode(r->buf, &sb);
	was = sb;
	bad = fmt_format40_verify(&sb, r->bs) != NULL ||
	      (sb.block_count > fits && r->b.block_count <= fits);
	if (!bad && !(r->rebuild && (sb.block_count != r->b.block_count ||
				     sb.mkfs_id != r->b.mkfs_id)))
		return 0;
	take_fixed_fields(&sb, &r->b);
	found[0] = 0;
	rc = mend_root(r->dev, r->bs, &sb, r->buf, found, sizeof(found));
	if (rc < 0)
		return rc;
	/* the scan used buf: read the block back */
	if (rc && (rc = read_blk(r->dev, r->bs, at, r->buf, r->err)))
		return rc;
	if (fmt_format40_verify(&sb, r->bs))
		return r4i_fail(r->err, R4_ECORRUPT, "%s: the format40 super "
			       "block is damaged beyond its backup copy (%s): "
			       "a rebuild from the tree is not implemented",
			       r->dev->path, fmt_format40_verify(&sb, r->bs));
	fmt_format40_encode(&sb, r->buf);
	rc = put_blk(r, at);
	if (rc)
		return rc;
	*r->fixed |= 2;
	if (r->dry)
		tell(r->fn, r->ctx, CHK_M_SB_FORMAT40_PROBE, at,
		     (const struct chk_arg[]){
			     CHK_U(at, at), CHK_U(damaged, bad),
			     CHK_U(from, r->where),
			     CHK_U(cut, was.block_count != sb.block_count),
			     CHK_S(text, found), CHK_ARGS_END });
	else
		tell(r->fn, r->ctx, CHK_M_SB_FORMAT40_RESTORED, at,
		     (const struct chk_arg[]){
			     CHK_U(at, at), CHK_U(from, r->where),
			     CHK_U(cut, was.block_count != sb.block_count),
			     CHK_S(text, found), CHK_ARGS_END });
	return 0;
}

/* The master block restored (or, dry, probed) from the backup when it
 * is damaged or, rebuilding, differs. */
static int restore_master(struct restore *r)
{
	uint64_t at = fmt_blk_master(r->bs);
	int rc;

	if (!r->master_bad && !(r->rebuild && memcmp(&r->m, &r->b.master,
						     FMT_MASTER_PROGS_SIZE)))
		return 0;
	rc = io_read(r->dev, r->buf, r->bs, at * r->bs, r->err);
	if (rc)
		return rc;
	fmt_master_encode(&r->b.master, r->buf + FMT_MASTER_OFFSET % r->bs);
	rc = put_blk(r, at);
	if (rc)
		return rc;
	*r->fixed |= 1;
	if (r->dry)
		tell(r->fn, r->ctx, CHK_M_SB_MASTER_PROBE, at,
		     (const struct chk_arg[]){ CHK_U(at, at),
					       CHK_U(damaged, r->master_bad),
					       CHK_U(from, r->where),
					       CHK_ARGS_END });
	else
		tell(r->fn, r->ctx, CHK_M_SB_MASTER_RESTORED, at,
		     (const struct chk_arg[]){ CHK_U(at, at),
					       CHK_U(from, r->where),
					       CHK_ARGS_END });
	return 0;
}

/* dry: write nothing; *r->fixed and r->fn say what would be restored. */
static int restore(struct restore *r)
{
	int none = 0;
	int rc = take_backup(r, &none);

	if (rc || none)
		return rc;
	rc = restore_format40(r);
	return rc ? rc : restore_master(r);
}

/* Open path (for writing unless dry) and restore or probe its super
 * blocks (restore()). */
static int open_restore(const char *path, int rebuild, int dry,
			r4_repair_action_fn fn, void *ctx, int *fixed,
			const struct r4_open_opts *open,
			struct r4_error *err)
{
	struct restore r = { .rebuild = rebuild, .dry = dry, .fixed = fixed,
			     .fn = fn, .ctx = ctx, .err = err };
	int rc;

	*fixed = 0;
	r.buf = malloc(65536);
	if (!r.buf)
		return r4i_fail(err, -ENOMEM, "out of memory");
	rc = io_open_opts(path, dry ? IO_RDONLY : IO_RDWR, open, &r.dev, NULL,
			  err);
	if (!rc) {
		rc = restore(&r);
		io_close(r.dev);
	}
	free(r.buf);
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
		tell(fn, ctx, CHK_M_TRUNCATED, fmt_blk_format40(bs),
		     (const struct chk_arg[]){
			     CHK_U(have, have), CHK_U(at, fmt_blk_format40(bs)),
			     CHK_U(want, sb.block_count), CHK_U(n, *missing),
			     CHK_ARGS_END });
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
	tell(fn, ctx, CHK_M_TRUNCATED_EXTENDED, fmt_blk_format40(bs),
	     (const struct chk_arg[]){ CHK_U(have, have),
				       CHK_U(want, sb.block_count),
				       CHK_U(n, *missing), CHK_ARGS_END });
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

/* The journal header names a transaction that cannot be replayed:
 * told to problem, then dropped (the header names the last flushed
 * one, told to fn). */
static int drop_pending(struct io_dev *dev, const char *path,
			r4_repair_action_fn problem, r4_repair_action_fn fn,
			void *ctx, uint8_t *buf, struct r4_error *err)
{
	struct fmt_journal_header jh;
	struct fmt_journal_footer jf;
	struct fmt_master m;
	uint64_t at, head;
	uint32_t bs;
	int rc;

	rc = io_read(dev, buf, FMT_MASTER_SIZE, FMT_MASTER_OFFSET, err);
	if (rc)
		return rc;
	fmt_master_decode(buf, &m);
	if (fmt_master_verify(&m))
		return r4i_fail(err, R4_ECORRUPT, "%s: %s", path,
			       fmt_master_verify(&m));
	bs = m.blksize;
	at = fmt_blk_journal_header(bs);
	rc = read_blk(dev, bs, fmt_blk_journal_footer(bs), buf, err);
	if (rc)
		return rc;
	fmt_journal_footer_decode(buf, &jf);
	rc = read_blk(dev, bs, at, buf, err);
	if (rc)
		return rc;
	fmt_journal_header_decode(buf, &jh);
	head = jh.last_committed_tx;
	tell(problem, ctx, CHK_M_JOURNAL_STUCK, at,
	     (const struct chk_arg[]){ CHK_U(at, at), CHK_U(from, head),
				       CHK_U(to, jf.last_flushed_tx),
				       CHK_ARGS_END });
	jh.last_committed_tx = jf.last_flushed_tx;
	fmt_journal_header_encode(&jh, buf);
	rc = io_write(dev, buf, bs, at * bs, err);
	if (!rc)
		rc = io_sync(dev, err);
	if (!rc)
		tell(fn, ctx, CHK_M_JOURNAL_DROPPED, at,
		     (const struct chk_arg[]){ CHK_U(at, at), CHK_U(from, head),
					       CHK_U(to, jf.last_flushed_tx),
					       CHK_ARGS_END });
	return rc;
}

int r4_repair_journal_drop(const char *path, r4_repair_action_fn problem,
			   r4_repair_action_fn fn, void *ctx,
			   const struct r4_open_opts *open,
			   struct r4_error *err)
{
	struct io_dev *dev;
	uint8_t *buf = malloc(65536);
	int rc;

	if (!buf)
		return r4i_fail(err, -ENOMEM, "out of memory");
	rc = io_open_opts(path, IO_RDWR, open, &dev, NULL, err);
	if (!rc) {
		rc = drop_pending(dev, path, problem, fn, ctx, buf, err);
		io_close(dev);
	}
	free(buf);
	return rc;
}
