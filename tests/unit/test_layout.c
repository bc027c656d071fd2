/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The layout asserts are compile-time (format/layout_check.c); this test
 * checks the few derived numbers doc/format.md states in words, and
 * that the format40 codec puts the magic where the layout says. */
#include "tap.h"
#include "format/super.h"
#include "format/bitmap.h"
#include "format/node.h"
#include "format/journal.h"

int main(void)
{
	uint8_t buf[FMT_FORMAT40_SIZE];
	struct fmt_format40 sb;

	fmt_format40_init(&sb);
	memset(buf, 0xa5, sizeof(buf));
	fmt_format40_encode(&sb, buf);
	ok(memcmp(buf + FMT_FORMAT40_OFF_MAGIC, FMT_FORMAT40_MAGIC,
		  sizeof(FMT_FORMAT40_MAGIC)) == 0,
	   "format40 magic encoded at its layout offset");
	is_int(fmt_bitmap_bpb(4096), 32736, "blocks per bitmap block");
	is_int(fmt_blk_master(4096), 16, "master super block");
	is_int(fmt_blk_mkfs_root(4096), 23, "mkfs root");
	is_int(fmt_min_block_count(4096), 25, "minimum block count");
	is_int(fmt_wander_capacity(4096), 254, "pairs per wander record");
	is_int(fmt_node_ih_pos(4096, 0, FMT_KEY_LARGE, 0), 4096 - 38,
	       "item 0 header at the end of a node40 block");
	is_int(fmt_node_ih_pos(4096, 0, FMT_KEY_SHORT, 1), 4096 - 60,
	       "item 1 header, short keys");
	return tap_done();
}
