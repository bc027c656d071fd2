/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: every on-disk size and offset in one place, with the numbers
 * written in as the kernel module's headers (dformat.h, format40.h,
 * node40.h, key.h, static_stat.h, cde.h, extent.h, wander.h) and the
 * bytes of real volumes give them. A wrong constant anywhere in format/
 * stops the build here. */
#include "super.h"
#include "journal.h"
#include "bitmap.h"
#include "node.h"
#include "item.h"
#include "key.h"

#define CHECK(expr, num) _Static_assert((expr) == (num), #expr " != " #num)

/* Super blocks (section 1). */
CHECK(FMT_MASTER_OFFSET, 65536);
CHECK(FMT_MASTER_OFF_UUID, 20);
CHECK(FMT_MASTER_OFF_LABEL, 36);
CHECK(FMT_MASTER_PROGS_SIZE, 52);
CHECK(FMT_FORMAT40_OFF_MKFS_ID, 48);
CHECK(FMT_FORMAT40_OFF_MAGIC, 52);
CHECK(FMT_FORMAT40_OFF_TREE_HEIGHT, 68);
CHECK(FMT_FORMAT40_OFF_FLAGS, 72);
CHECK(FMT_FORMAT40_OFF_VERSION, 80);
CHECK(FMT_FORMAT40_OFF_NODE_PID, 84);
CHECK(FMT_FORMAT40_SIZE, 512);
CHECK(FMT_STATUS_OFF_MESSAGE, 112);
CHECK(FMT_BACKUP_OFF_MAGIC, 61);
CHECK(FMT_BACKUP_OFF_PSET_MAGIC, 111);
CHECK(FMT_BACKUP_SIZE, 171);

/* Journal (section 8). */
CHECK(FMT_JHEADER_SIZE, 8);
CHECK(FMT_JFOOTER_SIZE, 32);
CHECK(FMT_TXH_SIZE, 64);
CHECK(FMT_WANDER_PAIR_SIZE, 16);

/* Bitmap (section 1.6). */
CHECK(FMT_BITMAP_OFF_BITS, 4);

/* Nodes and keys (sections 2, 4). */
CHECK(FMT_KEY_LARGE_SIZE, 32);
CHECK(FMT_KEY_SHORT_SIZE, 24);
CHECK(FMT_NODE40_HEADER_SIZE, 28);
CHECK(FMT_NODE41_HEADER_SIZE, 32);
CHECK(FMT_NODE_OFF_MAGIC, 8);
CHECK(FMT_NODE_OFF_LEVEL, 26);
CHECK(FMT_NODE41_OFF_CSUM, 28);
CHECK(FMT_IH_LARGE_SIZE, FMT_KEY_LARGE_SIZE + 6);
CHECK(FMT_IH_SHORT_SIZE, FMT_KEY_SHORT_SIZE + 6);

/* Items (section 5). */
CHECK(FMT_SDEXT_LW_SIZE, 14);
CHECK(FMT_SDEXT_UNIX_SIZE, 28);
CHECK(FMT_SDEXT_LT_SIZE, 12);
CHECK(FMT_SDEXT_CAPS_SIZE, 8);
CHECK(FMT_CDE40_UH_LARGE_SIZE, 26);
CHECK(FMT_CDE40_UH_SHORT_SIZE, 18);
CHECK(FMT_CDE40_OBJID_LARGE_SIZE, 24);
CHECK(FMT_CDE40_OBJID_SHORT_SIZE, 16);
CHECK(FMT_EXTENT40_UNIT_SIZE, 16);
CHECK(FMT_NODEPTR40_SIZE, 8);

/* Keeps the translation unit non-empty for strict compilers. */
int fmt_layout_checked(void);
int fmt_layout_checked(void)
{
	return 1;
}
