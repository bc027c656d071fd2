/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the fixed blocks of a volume (master and format40 super blocks,
 * journal header and footer, status block, backups), shared by r4mkfs
 * (libimage/mkfs/mkfs.c) and the one-pass builder (libimage/pack/). */
#ifndef R4_LIBIMAGE_BUILD_FIXED_H
#define R4_LIBIMAGE_BUILD_FIXED_H

#include <stddef.h>
#include <stdint.h>
#include "r4/r4.h"
#include "libimage/io/dev.h"
#include "format/item.h"
#include "format/key.h"
#include "format/plugin.h"
#include "format/super.h"

#define MKFS_MAX_BACKUPS 256

/* One volume being made: options, super blocks for its final size, the
 * root plugin set and where the backups go. */
struct mkfs {
	const char *path;
	const struct r4_mkfs_opts *o;
	struct io_dev *dev;
	uint32_t bs;
	enum fmt_key_policy pol;
	struct fmt_master master;
	struct fmt_format40 sb;
	uint32_t pset[FMT_PSET_COUNT];
	uint64_t backups[MKFS_MAX_BACKUPS];
	size_t nbackups;
	uint32_t now;
	uint8_t *buf;		/* one block of scratch */
};

/* The time stamp of new objects: o->mkfs_time, else
 * else now. */
uint32_t mkfs_time(const struct r4_mkfs_opts *o);
/* Fill master, format40 super block (counters as for a fresh volume:
 * root at the mkfs root block, height 2, next oid 0x10000, one file),
 * key policy, root pset and the backup positions for 'blocks' blocks.
 * m->o, m->bs must be set. */
void mkfs_make_supers(struct mkfs *m, uint64_t blocks);
/* The root plugin set as a stat-data pset extension (members 2..13). */
void mkfs_root_pset_ext(const struct mkfs *m, struct fmt_pset *ps);
int mkfs_write_block(struct mkfs *m, uint64_t blk, const uint8_t *buf,
		     const char *what, struct r4_error *err);
/* Zero the first 64 KiB unless they already read as zeros. */
int mkfs_zero_head(struct mkfs *m, struct r4_error *err);
/* Journal header and footer (zeros), status block, every backup copy. */
int mkfs_write_control(struct mkfs *m, struct r4_error *err);
/* Format40 super block, sync, master super block, sync: the master is
 * written last so an interrupted run leaves no volume behind. */
int mkfs_write_supers(struct mkfs *m, struct r4_error *err);

#endif
