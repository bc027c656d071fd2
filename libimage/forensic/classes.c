/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: what a block is when no tree item points at it
 * (r4_block_class). */
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
	const uint64_t *from, *to;
	size_t n;
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
	n = txn_overlay_pairs(vol, &from, &to);
	for (size_t i = 0; i < n; i++)
		if (to[i] == blk) {
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
