/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The layout asserts are compile-time (format/layout_check.c); this test
 * checks the few derived numbers the format map states in words. */
#include "tap.h"
#include "format/super.h"
#include "format/bitmap.h"
#include "format/node.h"
#include "format/journal.h"

int fmt_layout_checked(void);

int main(void)
{
	ok(fmt_layout_checked(), "layout asserts compiled in");
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
