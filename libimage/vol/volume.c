/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: opening a volume: find and validate the master and format40
 * super blocks, the status block and the journal control blocks, and
 * set up the block cache and the space map. Every complaint names the
 * image, the block and the field. The journal itself (replay, overlay)
 * is the transaction layer's: r4_vol_open is in libimage/open/open.c. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/vol/volume.h"
#include "libimage/util/err.h"
#include "format/bitmap.h"

#define CACHE_BLOCKS 16384	/* 64 MiB of 4 KiB blocks */

int vol_read_block(struct r4_vol *vol, uint64_t blk, uint8_t *buf,
		   const char *what, struct r4_error *err)
{
	int rc = io_read(vol->dev, buf, vol->blksize, blk * vol->blksize,
			 err);

	if (rc)
		return r4i_fail_over(err, rc, "%s: cannot read the %s (block "
				    "%llu): %s", vol->dev->path, what,
				    (unsigned long long)blk, r4_strerror(rc));
	return 0;
}

static int load_master(struct r4_vol *vol, struct r4_error *err)
{
	uint8_t buf[FMT_MASTER_SIZE];
	const char *why;
	int rc;

	if (vol->dev->size < FMT_MASTER_OFFSET + FMT_BLKSIZE_MIN)
		return r4i_fail(err, R4_EBADMAGIC, "%s: too small (%llu bytes) "
			       "to hold a Reiser4 volume", vol->dev->path,
			       (unsigned long long)vol->dev->size);
	rc = io_read(vol->dev, buf, sizeof(buf), FMT_MASTER_OFFSET, err);
	if (rc)
		return rc;
	fmt_master_decode(buf, &vol->master);
	why = fmt_master_verify(&vol->master);
	if (why)
		return r4i_fail(err, memcmp(vol->master.magic, FMT_MASTER_MAGIC,
					   sizeof(FMT_MASTER_MAGIC)) ?
			       R4_EBADMAGIC : R4_ECORRUPT,
			       "%s: master super block (byte %d): %s",
			       vol->dev->path, FMT_MASTER_OFFSET, why);
	if (vol->master.blksize != FMT_BLKSIZE_DEFAULT)
		return r4i_fail(err, R4_EUNSUPP, "%s: master super block: "
			       "block size %u is not supported (only 4096)",
			       vol->dev->path, vol->master.blksize);
	vol->blksize = vol->master.blksize;
	return 0;
}

static int load_format40(struct r4_vol *vol, uint8_t *buf,
			 struct r4_error *err)
{
	uint64_t blk = fmt_blk_format40(vol->blksize);
	uint64_t dev_blocks = vol->dev->size / vol->blksize;
	const char *why;
	int rc;

	rc = vol_read_block(vol, blk, buf, "format40 super block", err);
	if (rc)
		return rc;
	fmt_format40_decode(buf, &vol->sb);
	vol->sb_own = vol->sb;
	why = fmt_format40_verify(&vol->sb, vol->blksize);
	if (why)
		return r4i_fail(err, R4_ECORRUPT, "%s: format40 super block "
			       "(block %llu): %s", vol->dev->path,
			       (unsigned long long)blk, why);
	if (vol->sb.block_count > dev_blocks)
		return r4i_fail(err, R4_ERANGE, "%s: format40 super block "
			       "(block %llu): block_count %llu is more than "
			       "the device holds (%llu blocks): image "
			       "truncated?", vol->dev->path,
			       (unsigned long long)blk,
			       (unsigned long long)vol->sb.block_count,
			       (unsigned long long)dev_blocks);
	vol->keypol = fmt_format40_key_policy(&vol->sb);
	return 0;
}

static int load_status_journal(struct r4_vol *vol, uint8_t *buf,
			       struct r4_error *err)
{
	uint64_t blk;
	const char *why;
	int rc;

	blk = fmt_blk_status(vol->blksize);
	rc = vol_read_block(vol, blk, buf, "status block", err);
	if (rc)
		return rc;
	fmt_status_decode(buf, &vol->status);
	/* With its magic the block is the status block, whatever its
	 * status word says (the checker reports bits the kernel does not
	 * know). Without it the kernel takes the volume for one made
	 * before status blocks (doc/format.md §1.4): zeros in the magic
	 * and past the structure are that; anything else is garbage. */
	vol->status_present = !memcmp(vol->status.magic, FMT_STATUS_MAGIC,
				      sizeof(FMT_STATUS_MAGIC));
	vol->status_garbage = 0;
	if (!vol->status_present) {
		size_t end = FMT_STATUS_OFF_MESSAGE + FMT_STATUS_MESSAGE_SIZE;

		for (size_t i = 0; i < vol->blksize && !vol->status_garbage;
		     i++)
			if (buf[i] && (i < FMT_STATUS_OFF_STATUS || i >= end))
				vol->status_garbage = 1;
	}

	blk = fmt_blk_journal_header(vol->blksize);
	rc = vol_read_block(vol, blk, buf, "journal header", err);
	if (rc)
		return rc;
	fmt_journal_header_decode(buf, &vol->jh);
	/* A header naming a block past the end (fmt_journal_header_verify)
	 * is not refused here: it names a transaction that cannot be
	 * replayed, which the journal code says with the block
	 * (libimage/txn/replay.c bounds-checks every tx head), the checker
	 * reports and r4fsck -y drops, like any other. */
	blk = fmt_blk_journal_footer(vol->blksize);
	rc = vol_read_block(vol, blk, buf, "journal footer", err);
	if (rc)
		return rc;
	fmt_journal_footer_decode(buf, &vol->jf);
	why = fmt_journal_footer_verify(&vol->jf, vol->sb.block_count);
	if (why)
		return r4i_fail(err, R4_ECORRUPT, "%s: journal footer (block "
			       "%llu): %s", vol->dev->path,
			       (unsigned long long)blk, why);
	return 0;
}

static int vol_load(struct r4_vol *vol, struct r4_error *err)
{
	uint8_t *buf;
	int rc;

	rc = load_master(vol, err);
	if (rc)
		return rc;
	buf = malloc(vol->blksize);
	if (!buf)
		return r4i_fail(err, -ENOMEM, "%s: out of memory",
			       vol->dev->path);
	rc = load_format40(vol, buf, err);
	if (!rc)
		rc = load_status_journal(vol, buf, err);
	free(buf);
	if (rc)
		return rc;
	rc = io_cache_init(&vol->cache, vol->dev, vol->blksize, CACHE_BLOCKS,
			   err);
	if (!rc)
		rc = space_init(&vol->space, vol->dev, vol->blksize,
				vol->sb.block_count, err);
	return rc;
}

int vol_open(const char *path, const struct r4_open_opts *opts,
	     struct r4_vol **out, struct r4_error *err)
{
	unsigned flags = opts->flags | opts->wait;
	struct r4_vol *vol;
	unsigned ioflags = 0;
	int rc;

	*out = NULL;
	vol = calloc(1, sizeof(*vol));
	if (!vol)
		return r4i_fail(err, -ENOMEM, "%s: out of memory", path);
	if (flags & R4_OPEN_RDWR)
		ioflags |= IO_RDWR;
	if (flags & R4_OPEN_FORCE)
		ioflags |= IO_FORCE;
	vol->flags = flags;
	vol->clock = -1;
	rc = io_open_opts(path, ioflags, opts, &vol->dev, NULL, err);
	if (!rc)
		rc = vol_load(vol, err);
	if (rc) {
		vol_free(vol);
		return rc;
	}
	*out = vol;
	return 0;
}

size_t vol_free(struct r4_vol *vol)
{
	size_t leaked;

	if (!vol)
		return 0;
	space_fini(&vol->space);
	r4_u64map_fini(&vol->dir_inherit);
	leaked = io_cache_fini(&vol->cache);
	io_close(vol->dev);
	free(vol);
	return leaked;
}

void r4_vol_super(const struct r4_vol *vol, struct r4_super_info *o)
{
	memset(o, 0, sizeof(*o));
	memcpy(o->label, vol->master.label, FMT_LABEL_SIZE);
	memcpy(o->uuid, vol->master.uuid, FMT_UUID_SIZE);
	o->blksize = vol->blksize;
	o->block_count = vol->sb.block_count;
	o->free_blocks = vol->sb.free_blocks;
	o->root_block = vol->sb.root_block;
	o->next_oid = vol->sb.next_oid;
	o->file_count = vol->sb.file_count;
	o->flushes = vol->sb.flushes;
	o->mkfs_id = vol->sb.mkfs_id;
	o->tree_height = vol->sb.tree_height;
	o->policy = vol->sb.policy;
	o->large_keys = vol->keypol == FMT_KEY_LARGE;
	o->version = vol->sb.version;
	o->backup_update = vol->sb.update_backup;
	o->node_pid = vol->sb.node_pid;
	o->status_present = vol->status_present;
	o->status = vol->status.status;
	memcpy(o->status_msg, vol->status.message, FMT_STATUS_MESSAGE_SIZE);
	o->journal_committed = vol->jh.last_committed_tx;
	o->journal_flushed = vol->jf.last_flushed_tx;
}

int r4_vol_read_block(struct r4_vol *vol, uint64_t blk, uint8_t *buf,
		      struct r4_error *err)
{
	struct io_block *b;
	int rc = io_cache_get(&vol->cache, blk, &b, err);

	if (rc)
		return rc;
	memcpy(buf, b->data, vol->blksize);
	io_cache_put(&vol->cache, b);
	return 0;
}

const char *r4_vol_lock_note(const struct r4_vol *vol)
{
	return vol->dev->lock_note ? vol->dev->lock_note : "";
}

void r4_vol_set_clock(struct r4_vol *vol, int64_t seconds)
{
	vol->clock = seconds;
}

const char *r4_vol_path(const struct r4_vol *vol)
{
	return vol->dev->path;
}

int r4_vol_commit_pending(const struct r4_vol *vol)
{
	return vol->commit_pending;
}
