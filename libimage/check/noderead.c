/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the checker's node reads. A read per node was much of a
 * check's time (a system call and a copy each); on a packed volume the children a node points to lie in a row, so the
 * walk reads such a row in one go into the window of the children's
 * level and takes the next sibling from there.
 *
 * Only the pointers decide what is read: the row is the child asked
 * for and the node pointers after it in its parent that name the next
 * blocks one by one (other items between them are skipped), cut at
 * CHK_RA_BYTES, at the volume's last block (the super block's
 * count) and at the device's end. Nothing read ahead is believed: each
 * child is still claimed (check/tree.c) before its bytes are looked
 * at, so a block pointed to twice, out of range or part of a loop is
 * reported as before, whatever a window holds. The volume does not
 * change during a check, so a block taken from a window has the bytes
 * a read of it alone would give. The read goes through the volume's
 * device chain (journal overlay, window) like any other; when it fails,
 * the child is read alone, so an I/O error names the block it always
 * named, and so is every later node of that level (failing media: one
 * slow read each, not two). */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/check/check.h"
#include "format/item.h"
#include "format/node.h"

/* The blocks to read from blk on (blk included, the pointer to it is
 * item s->item of the parent s): up to the last of the node pointers
 * after it that each name a block past the one before, at most
 * CHK_RA_GAP blocks past it (file data between nodes read along; see
 * check.h for why none now), within max blocks of blk. */
static uint32_t row_len(const struct chk *c, const struct chk_rowsrc *s,
			uint64_t blk, uint32_t max)
{
	struct fmt_item_header ih;
	uint64_t last = blk;

	for (unsigned i = s->item + 1; i < s->nr_items; i++) {
		size_t off, len;
		uint64_t child;

		if (fmt_node_ih_decode(s->node, c->bs, c->pol, i, &ih))
			break;
		if (ih.plugin_id != FMT_ITEM_NODEPTR40)
			continue;
		if (fmt_node_item_body(s->node, c->bs, c->pol, i, &off, &len) ||
		    fmt_nodeptr40_decode(s->node + off, len, &child) ||
		    child <= last || child - last > CHK_RA_GAP + 1 ||
		    child - blk >= max)
			break;
		last = child;
	}
	return (uint32_t)(last - blk + 1);
}

/* Read the row starting at blk into the level's window. A failed read
 * or no memory for the window leaves it empty: the caller reads the
 * block alone (the window only saves time). */
static void fill(struct chk *c, struct chk_ra *ra, uint64_t blk,
		 const struct chk_rowsrc *s)
{
	uint64_t end = c->vol->dev->size / c->bs;
	uint32_t max = CHK_RA_BYTES / c->bs, n;

	if (end > c->blocks)
		end = c->blocks;
	ra->n = 0;
	if (ra->off || blk >= end || max < 2)
		return;
	if (end - blk < max)
		max = (uint32_t)(end - blk);
	n = row_len(c, s, blk, max);
	if (n < 2)
		return;
	if (!ra->buf && !(ra->buf = malloc(CHK_RA_BYTES))) {
		ra->off = 1;
		return;
	}
	if (io_read(c->vol->dev, ra->buf, (size_t)n * c->bs, blk * c->bs,
		    NULL)) {
		ra->off = 1;
		return;
	}
	ra->first = blk;
	ra->n = n;
}

int chk_node_read(struct chk *c, unsigned level, uint64_t blk,
		  const struct chk_rowsrc *s, uint8_t **out)
{
	struct chk_ra *ra = &c->ra[level];

	if (ra->n && blk >= ra->first && blk - ra->first < ra->n) {
		*out = ra->buf + (size_t)(blk - ra->first) * c->bs;
		return 0;
	}
	if (s) {
		fill(c, ra, blk, s);
		if (ra->n) {
			*out = ra->buf;
			return 0;
		}
	}
	*out = c->buf[level];
	return vol_read_block(c->vol, blk, *out, "tree node", c->err);
}

void chk_node_read_reset(struct chk *c)
{
	for (size_t i = 0; i < sizeof(c->ra) / sizeof(c->ra[0]); i++) {
		free(c->ra[i].buf);
		c->ra[i].buf = NULL;
		c->ra[i].n = 0;
		c->ra[i].off = 0;
	}
}
