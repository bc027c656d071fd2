/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: r4_pack_begin / add / finish / abort.
 *
 * An image file is built as ".NAME.r4pack.XXXXXX" in the target's
 * directory (created O_EXCL) and renamed over NAME only once every block
 * is written and synced; a failure or r4_pack_abort() unlinks it, so the
 * target is never touched. A block device is written in place (there is
 * nothing to rename), with its size as the volume size. Spooled bytes
 * past the spool's memory (spool.c) wait in a spool file
 * (".NAME.r4spool.XXXXXX", unlinked at once; in $TMPDIR for a block
 * device). */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uuid/uuid.h>
#include "libimage/io/dev.h"
#include "libimage/pack/packer.h"
#include "libimage/pack/ccreg.h"
#include "libimage/util/err.h"
#include "libimage/util/tmpfiles.h"
#include "format/bitmap.h"

#define ROUND_BLOCKS 16		/* volumes are multiples of 64 KiB */
#define SCRATCH_BYTES 65536

void r4_pack_opts_init(struct r4_pack_opts *o)
{
	memset(o, 0, sizeof(*o));
	r4_mkfs_opts_init(&o->mkfs);
	o->auto_size = 1;
	o->spill_after = -1;
	o->spill_run_bytes = -1;
	o->spool_memory = -1;
	o->upper_mem = -1;
}

/* "dir/.base.WHAT.XXXXXX" next to path, created O_EXCL, with the
 * backends of the caller's open (not its window nor its locks). */
static int open_temp(struct r4_pack *b, const char *what, char **name,
		     struct io_dev **dev, struct r4_error *err)
{
	const struct r4_open_opts chain = { .undo = b->o.mkfs.open.undo,
					    .fault = b->o.mkfs.open.fault };
	const char *slash = strrchr(b->target, '/');
	size_t dlen = slash ? (size_t)(slash - b->target) + 1 : 0;
	const char *base = b->target + dlen;

	for (int tries = 0; tries < 100; tries++) {
		uint8_t r[16];
		char sfx[7];
		int created = 0, rc;

		uuid_generate_random(r);
		for (int i = 0; i < 6; i++)
			sfx[i] = "abcdefghijklmnopqrstuvwxyz012345"[r[i] % 32];
		sfx[6] = '\0';
		free(*name);
		*name = malloc(dlen + strlen(base) + strlen(what) + 16);
		if (!*name)
			return r4i_fail(err, -ENOMEM, "out of memory");
		sprintf(*name, "%.*s.%s.%s.%s", (int)dlen, b->target, base,
			what, sfx);
		r4_tmpfile_block();
		rc = io_open_opts(*name, IO_RDWR | IO_CREATE, &chain, dev,
				  &created, err);
		if (!rc && created)
			r4_tmpfile_add(*name);	/* removed on a signal */
		r4_tmpfile_unblock();
		if (rc == -ENOENT || rc == -ENOTDIR)
			/* Name the folder the user gave, not our file. */
			return r4i_fail_over(err, rc, "%s: the folder %.*s does not "
					"exist", b->target, dlen ? (int)dlen : 1,
					dlen ? b->target : ".");
		if (rc)
			return rc;
		if (created)
			return 0;
		io_close(*dev);	/* someone else's file: try another name */
		*dev = NULL;
	}
	return r4i_fail(err, -EEXIST, "%s: cannot make a temporary file",
		       b->target);
}

static int check_opts(const struct r4_pack_opts *o, struct r4_error *err)
{
	if (o->mkfs.blksize != FMT_BLKSIZE_DEFAULT)
		return r4i_fail(err, R4_EUNSUPP, "block size %u is not "
			       "supported (only 4096)", o->mkfs.blksize);
	if (strlen(o->mkfs.label) > FMT_LABEL_SIZE)
		return r4i_fail(err, R4_EINVAL, "label '%s' is longer than %d "
			       "bytes", o->mkfs.label, FMT_LABEL_SIZE);
	for (int t = 0; t < R4_PT_COUNT; t++)
		if (!fmt_plugin_name((enum fmt_ptype)t, o->mkfs.plugin[t]))
			return r4i_fail(err, R4_EINVAL, "unknown %s plugin id "
				       "%u", fmt_ptype_name((enum fmt_ptype)t),
				       o->mkfs.plugin[t]);
	if (!o->auto_size && !o->mkfs.size_bytes)
		return r4i_fail(err, R4_EINVAL, "no size given and auto size "
			       "off");
	return 0;
}

/* The spool file, unlinked at once: beside the image, or in $TMPDIR for
 * a block device (its folder is /dev: no room for data there). */
static int open_spool(struct r4_pack *b, struct r4_error *err)
{
	struct stat st;
	int fd, rc;

	if (stat(b->target, &st) || !S_ISBLK(st.st_mode)) {
		rc = open_temp(b, "r4spool", &b->spool_path, &b->spool, err);
		if (rc)
			return rc;
		unlink(b->spool_path);
		r4_tmpfile_forget(b->spool_path);
		return 0;
	}
	rc = r4i_scratch_open("r4spool", &fd);
	if (rc)
		return r4i_fail(err, rc, "%s: cannot make the spool file in "
			       "$TMPDIR: %s", b->target, r4_strerror(rc));
	rc = io_open_fd_rw(fd, "$TMPDIR/r4spool", &b->spool, err);
	close(fd);
	return rc;
}

static int open_target(struct r4_pack *b, struct r4_error *err)
{
	struct stat st;
	uint64_t bytes = b->o.auto_size ? 0 : b->o.mkfs.size_bytes;
	int rc;

	if (b->o.mkfs.open.offset || b->o.mkfs.open.size ||
	    (!stat(b->target, &st) && S_ISBLK(st.st_mode))) {
		int created;

		/* a block device or a window of a file (a partition) */
		b->in_place = 1;
		rc = io_open_opts(b->target, IO_RDWR, &b->o.mkfs.open, &b->m.dev,
				  &created, err);
		if (rc)
			return rc;
		if (!bytes || bytes > b->m.dev->size)
			bytes = b->m.dev->size;
	} else {
		rc = open_temp(b, "r4pack", &b->tmp, &b->m.dev, err);
		if (rc)
			return rc;
	}
	rc = open_spool(b, err);
	if (rc)
		return rc;
	b->limit = bytes / b->bs / ROUND_BLOCKS * ROUND_BLOCKS;
	if (bytes && b->limit < fmt_min_block_count(b->bs))
		return r4i_fail(err, R4_ERANGE, "%s: %llu bytes is too small "
			       "for a Reiser4 volume", b->target,
			       (unsigned long long)bytes);
	return 0;
}

static void packer_free(struct r4_pack *b)
{
	if (!b)
		return;
	io_close(b->m.dev);
	if (b->tmp) {
		unlink(b->tmp);
		r4_tmpfile_forget(b->tmp);
	}
	io_close(b->spool);
	pack_src_fini(b);
	pack_ccreg_fini(b);
	pack_ns_fini(b);
	pack_tree_fini(b);
	pack_upper_fini(b);
	pack_items_fini(b);
	free(b->used);
	free(b->wb.buf);
	free(b->scratch);
	free(b->m.buf);
	free(b->tmp);
	free(b->spool_path);
	free(b->target);
	free(b);
}

const char *r4_pack_temp(const struct r4_pack *b)
{
	return b && !b->in_place ? b->tmp : NULL;
}

void r4_pack_abort(struct r4_pack *b)
{
	packer_free(b);
}

int r4_pack_begin(const char *image, const struct r4_pack_opts *o,
		   struct r4_pack **out, struct r4_error *err)
{
	struct r4_pack *b;
	int rc = check_opts(o, err);

	*out = NULL;
	if (rc)
		return rc;
	b = calloc(1, sizeof(*b));
	if (!b)
		return r4i_fail(err, -ENOMEM, "out of memory");
	b->o = *o;
	if (!b->o.mkfs.have_uuid)
		uuid_generate(b->o.mkfs.uuid);
	b->bs = o->mkfs.blksize;
	b->m.o = &b->o.mkfs;
	b->m.bs = b->bs;
	b->m.path = b->target = strdup(image);
	b->m.now = mkfs_time(&b->o.mkfs);
	b->m.buf = malloc(b->bs);
	b->scratch = malloc(SCRATCH_BYTES);
	if (!b->target || !b->m.buf || !b->scratch) {
		packer_free(b);
		return r4i_fail(err, -ENOMEM, "out of memory");
	}
	mkfs_make_supers(&b->m, fmt_min_block_count(b->bs));
	b->pol = b->m.pol;
	rc = open_target(b, err);
	if (!rc)
		rc = pack_space_setup(b, err);
	if (!rc)
		rc = pack_tree_init(b, err);
	if (!rc)
		rc = pack_ns_init(b, err);
	if (!rc)
		rc = pack_ccreg_init(b, err);
	if (rc) {
		packer_free(b);
		return rc;
	}
	*out = b;
	return 0;
}

int r4_pack_add(struct r4_pack *b, const struct r4_entry *e,
		 struct r4_error *err)
{
	struct bobj *o;
	int rc;

	if (b->spill_rc)	/* a lookup failed reading the spill */
		b->failed = 1;
	if (b->failed)
		return r4i_fail(err, b->spill_rc ? b->spill_rc : R4_EINVAL,
			       "%s: the build failed earlier%s%s",
			       e->path ? e->path : "", b->spill_rc ?
			       ": cannot read the spilled names: " : "",
			       b->spill_rc ? r4_strerror(b->spill_rc) : "");
	rc = pack_ns_add(b, e, &o, err);
	if (!rc && o) {
		if (o->ccreg != CCREG_YES)	/* after the files read ahead */
			rc = pack_ccreg_stream_drain(b, err);
		if (!rc && e->data_file)
			rc = pack_data_take_at(b, o, e, err);
		else if (!rc)
			rc = 1;
		if (rc == 1)
			rc = pack_data_take(b, o, e->data, e->data_ctx,
					    e->path, err);
		if (o->spilled) {
			int rc2 = pack_ns_spill_done(b, o, !rc, rc ? NULL : err);

			rc = rc ? rc : rc2;
		}
		b->failed = rc != 0;
	}
	return rc;
}

int r4_pack_stream_begin(struct r4_pack *b, struct r4_error *err)
{
	return pack_async_begin(b, err);
}

int r4_pack_stream_end(struct r4_pack *b, struct r4_error *err)
{
	int rc = b->failed ? 0 : pack_ccreg_stream_drain(b, err);
	int rc2 = pack_async_end(b, rc ? NULL : err);

	if (!rc)
		rc = rc2;
	if (rc)
		b->failed = 1;
	return rc;
}

/* Blocks a volume of len blocks uses besides the allocated ones. */
static uint64_t fixed_used(const struct r4_pack *b, uint64_t len)
{
	return fmt_blk_first_usable(b->bs) +
	       fmt_bitmap_count(len, b->bs) - 1 +
	       fmt_backup_blocks(len, b->bs, NULL, 0) - 1;
}

static uint64_t round_up(uint64_t n)
{
	return (n + ROUND_BLOCKS - 1) / ROUND_BLOCKS * ROUND_BLOCKS;
}

static uint64_t auto_count(const struct r4_pack *b)
{
	uint64_t len = round_up(b->hi > fmt_min_block_count(b->bs) ? b->hi :
				fmt_min_block_count(b->bs));

	for (;;) {
		uint64_t used = b->allocated + fixed_used(b, len);
		uint64_t free_blk = len > used ? len - used : 0;
		uint64_t need = (b->o.free_bytes + b->bs - 1) / b->bs;
		uint64_t pct = (len * b->o.free_percent + 99) / 100;

		need = need > pct ? need : pct;
		if (free_blk >= need)
			return len;
		len = round_up(len + need - free_blk);
	}
}

/* Region k's bitmap block into buf; returns the used count. */
static uint64_t make_bitmap(struct r4_pack *b, uint64_t k, uint8_t *buf)
{
	uint64_t len = b->m.sb.block_count, bpb = fmt_bitmap_bpb(b->bs);
	uint64_t start = fmt_bitmap_region_start(k, b->bs);
	uint64_t rlen = fmt_bitmap_region_len(k, len, b->bs), used;

	memset(buf, 0, b->bs);
	if (start < b->used_cap) {
		uint64_t n = b->used_cap - start < rlen ? b->used_cap - start :
							 rlen;

		memcpy(buf + FMT_BITMAP_OFF_BITS, b->used + start / 8,
		       (size_t)((n + 7) / 8));
	}
	if (k == 0)
		fmt_bitmap_set_range(buf, 0, fmt_blk_first_usable(b->bs));
	fmt_bitmap_set(buf, fmt_bitmap_blk(k, b->bs) - start);
	for (size_t i = 0; i < b->m.nbackups; i++)
		if (b->m.backups[i] >= start && b->m.backups[i] < start + rlen)
			fmt_bitmap_set(buf, b->m.backups[i] - start);
	if (rlen < bpb)
		fmt_bitmap_set_range(buf, rlen, bpb);
	used = rlen - fmt_bitmap_count_zero(buf, 0, rlen);
	fmt_bitmap_csum_update(buf, b->bs);
	return used;
}

static int write_bitmaps(struct r4_pack *b, struct r4_error *err)
{
	uint64_t n = fmt_bitmap_count(b->m.sb.block_count, b->bs), used = 0;
	int rc = 0;

	for (uint64_t k = 0; k < n && !rc; k++) {
		used += make_bitmap(b, k, b->m.buf);
		rc = mkfs_write_block(&b->m, fmt_bitmap_blk(k, b->bs), b->m.buf,
				      "bitmap block", err);
	}
	b->m.sb.free_blocks = b->m.sb.block_count - used;
	return rc;
}

/* The super blocks for the final size; the node headers already carry
 * the mkfs id chosen at begin. */
static int make_final_supers(struct r4_pack *b, uint64_t root,
			     unsigned height, struct r4_error *err)
{
	uint32_t id = b->m.sb.mkfs_id;
	uint64_t len = b->limit ? b->limit : auto_count(b);

	mkfs_make_supers(&b->m, len);
	b->m.sb.mkfs_id = id;
	b->m.sb.root_block = root;
	b->m.sb.tree_height = (uint16_t)height;
	b->m.sb.next_oid = b->next_oid;
	b->m.sb.file_count = b->files;
	for (size_t i = 0; i < b->m.nbackups; i++)
		if (used_test(b, b->m.backups[i]))
			return r4i_fail(err, R4_ECORRUPT, "%s: backup block "
				       "%llu is in use", b->target,
				       (unsigned long long)b->m.backups[i]);
	if (!b->in_place)
		return io_resize(b->m.dev, len * b->bs, err);
	return mkfs_zero_head(&b->m, err);
}

static int finish(struct r4_pack *b, struct r4_pack_result *res,
		  struct r4_error *err)
{
	uint64_t root = 0;
	unsigned height = 0;
	int rc = pack_ccreg_stream_drain(b, err);

	if (!rc)
		rc = pack_items_make(b, err);

	if (!rc)
		rc = pack_tree_finish(b, &root, &height, err);
	if (!rc)
		rc = pack_img_flush(b, err);
	if (!rc)
		rc = make_final_supers(b, root, height, err);
	if (!rc)
		rc = write_bitmaps(b, err);
	if (!rc)
		rc = mkfs_write_control(&b->m, err);
	if (!rc)
		rc = mkfs_write_supers(&b->m, err);
	if (rc)
		return rc;
	if (!b->in_place && rename(b->tmp, b->target))
		return r4i_fail(err, -errno, "%s: cannot rename %s into place: "
			       "%s", b->target, b->tmp, strerror(errno));
	r4_tmpfile_forget(b->tmp);
	free(b->tmp);
	b->tmp = NULL;
	/* its name too: after a power cut the new image is there, not the
	 * file it replaced (or none) */
	if (!b->in_place && (rc = r4_sync_dir(b->target)))
		return r4i_fail(err, rc, "%s: made and in place, but its "
				"directory could not be synced (a power cut "
				"may still lose the new name): %s",
				b->target, strerror(-rc));
	if (res) {
		memset(res, 0, sizeof(*res));
		res->block_count = b->m.sb.block_count;
		res->free_blocks = b->m.sb.free_blocks;
		res->files = b->files - b->dirs;
		res->dirs = b->dirs;
		res->bytes = b->bytes;
		res->nodes = b->nodes;
		res->leaves = b->leaves;
		res->twigs = b->twigs;
		res->data_blocks = b->data_blocks;
		res->direct_bytes = b->direct_bytes;
	}
	return 0;
}

int r4_pack_finish(struct r4_pack *b, struct r4_pack_result *res,
		    struct r4_error *err)
{
	int rc;

	if (b->failed)
		rc = r4i_fail(err, R4_EINVAL, "%s: the build failed earlier",
			     b->target);
	else
		rc = finish(b, res, err);
	packer_free(b);
	return rc;
}
