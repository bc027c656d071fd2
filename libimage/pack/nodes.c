/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the packer's tree, bottom-up in one pass. Items arrive in key
 * order; each level has one open node that is filled to the brim, then
 * written, and a node pointer to it (keyed by its first key) goes into
 * the open node of the level above. Extent items go straight into the
 * twig level, between the pointers of the leaves before and after them.
 *
 * Placement: a leaf gets its block when it is complete, right after
 * whatever came before it (data of the extents before it, the previous
 * leaf), so leaves and extent data follow each other in key order. The
 * nodes above are kept and placed at the end (upper.c). */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/pack/packer.h"
#include "libimage/util/err.h"
#include "libimage/tree/nodebuf.h"
#include "format/endian.h"
#include "r4/util.h"

int pack_tree_init(struct r4_pack *b, struct r4_error *err)
{
	for (unsigned l = 1; l <= FMT_NODE_MAX_LEVEL; l++) {
		b->lv[l].node = malloc(b->bs);
		if (!b->lv[l].node)
			return r4i_fail(err, -ENOMEM, "out of memory");
	}
	return 0;
}

void pack_tree_fini(struct r4_pack *b)
{
	free(b->leafblk);
	b->leafblk = NULL;
	pack_spool_fini(b);
	for (unsigned l = 1; l <= FMT_NODE_MAX_LEVEL; l++) {
		free(b->lv[l].node);
		b->lv[l].node = NULL;
	}
}

static int node_open(struct r4_pack *b, unsigned level, struct r4_error *err)
{
	struct blevel *lv = &b->lv[level];
	int rc;

	if (level > FMT_NODE_MAX_LEVEL)
		return r4i_fail(err, R4_ERANGE, "%s: the tree would be taller "
			       "than %d levels", b->target, FMT_NODE_MAX_LEVEL);
	if (lv->hlen) {
		/* the rest is items and the middle zeroed at close */
		memcpy(lv->node, lv->head, lv->hlen);
	} else {
		size_t hlen = fmt_node_header_size(b->m.sb.node_pid);

		rc = fmt_node_init(lv->node, b->bs, b->m.sb.node_pid, level,
				   b->m.sb.mkfs_id);
		if (rc)
			return r4i_fail(err, rc, "cannot make a node: %s",
				       r4_strerror(rc));
		if (hlen <= sizeof(lv->head)) {
			memcpy(lv->head, lv->node, hlen);
			lv->hlen = hlen;
		}
	}
	lv->open = 1;
	lv->count++;
	if (level > b->top)
		b->top = level;
	return 0;
}

static int node_close(struct r4_pack *b, unsigned level,
		      struct r4_error *err);

/* A complete node's unused middle (between the item bodies and the
 * item headers) zeroed: it holds what the node before it left there. */
static void node_seal(struct r4_pack *b, uint8_t *node)
{
	struct fmt_node_header h;

	if (!fmt_node_header_decode(node, b->bs, &h) &&
	    (size_t)h.free_space_start + h.free_space <= b->bs)
		memset(node + h.free_space_start, 0, h.free_space);
}

/* Make room for an item of len body bytes at level. */
static int level_reserve(struct r4_pack *b, unsigned level, size_t len,
			 struct r4_error *err)
{
	struct blevel *lv = &b->lv[level];
	int rc;

	if (lv->open && node_free_for_item(lv->node, b->bs, b->pol) < len) {
		rc = node_close(b, level, err);
		if (rc)
			return rc;
	}
	return lv->open ? 0 : node_open(b, level, err);
}

/* raw: body NULL and the caller writes every byte of *out. */
static int level_append(struct r4_pack *b, unsigned level,
			const struct fmt_key *k, unsigned pid, const void *body,
			int raw, size_t len, uint8_t **out,
			struct r4_error *err)
{
	struct blevel *lv = &b->lv[level];
	int first = node_free_for_item(lv->node, b->bs, b->pol) ==
		    b->bs - fmt_node_header_size(b->m.sb.node_pid) -
		    fmt_item_header_size(b->pol);
	int rc = raw ? node_append_space(lv->node, b->bs, b->pol, k, pid, len,
					 out) :
		       node_append_item(lv->node, b->bs, b->pol, k, pid, body,
					len, out);

	if (rc)
		return r4i_fail(err, rc, "%s: cannot add an item to a level %u "
			       "node: %s", b->target, level, r4_strerror(rc));
	if (first)
		lv->first = *k;
	return 0;
}

static int note_leaf(struct r4_pack *b, uint64_t seq, uint64_t blk,
		     struct r4_error *err)
{
	if (R4_RESERVE(b->leafblk, b->capleaf, seq + 1, 1024))
		return r4i_fail(err, -ENOMEM, "out of memory");
	b->leafblk[seq] = blk;
	return 0;
}

int pack_leaf_patch_u64(struct r4_pack *b, uint64_t seq, uint32_t off,
		   uint64_t val, struct r4_error *err)
{
	struct blevel *lv = &b->lv[FMT_NODE_LEAF_LEVEL];
	uint64_t blk;
	int rc;

	if (lv->open && seq == lv->count - 1) {
		put_le64(lv->node + off, val);
		return 0;
	}
	blk = b->leafblk[seq];
	if (b->wb.n && blk >= b->wb.start && blk < b->wb.start + b->wb.n) {
		uint8_t *p = b->wb.buf + (blk - b->wb.start) * b->bs;

		put_le64(p + off, val);
		fmt_node_stamp(p, b->bs);
		return 0;
	}
	rc = pack_img_wait(b, err);
	if (!rc)
		rc = io_read(b->m.dev, b->scratch, b->bs, blk * b->bs, err);
	if (rc)
		return rc;
	put_le64(b->scratch + off, val);
	fmt_node_stamp(b->scratch, b->bs);
	return io_write(b->m.dev, b->scratch, b->bs, blk * b->bs, err);
}

static int node_close(struct r4_pack *b, unsigned level,
		      struct r4_error *err)
{
	struct blevel *lv = &b->lv[level];
	uint8_t ptr[FMT_NODEPTR40_SIZE];
	uint64_t got;
	int rc;

	node_seal(b, lv->node);
	rc = level_reserve(b, level + 1, sizeof(ptr), err);
	if (!rc && level == FMT_NODE_LEAF_LEVEL)
		rc = pack_alloc_run(b, 1, &lv->blk, &got, err);
	if (!rc && level == FMT_NODE_LEAF_LEVEL)
		rc = note_leaf(b, lv->count - 1, lv->blk, err);
	if (!rc && level > FMT_NODE_LEAF_LEVEL)
		rc = pack_upper_keep(b, level, lv->node, &lv->blk, err);
	if (rc)
		return rc;
	fmt_nodeptr40_encode(lv->blk, ptr);
	rc = level_append(b, level + 1, &lv->first, FMT_ITEM_NODEPTR40, ptr,
			  0, sizeof(ptr), NULL, err);
	if (rc)
		return rc;
	lv->open = 0;
	b->nodes++;
	b->leaves += level == FMT_NODE_LEAF_LEVEL;
	b->twigs += level == FMT_NODE_TWIG_LEVEL;
	if (level > FMT_NODE_LEAF_LEVEL)
		return 0;
	fmt_node_stamp(lv->node, b->bs);
	return pack_img_write(b, lv->blk, lv->node, err);
}

size_t pack_leaf_room(struct r4_pack *b)
{
	if (!b->lv[1].open)
		return b->bs - fmt_node_header_size(b->m.sb.node_pid) -
		       fmt_item_header_size(b->pol);
	return node_free_for_item(b->lv[1].node, b->bs, b->pol);
}

int pack_leaf_close(struct r4_pack *b, struct r4_error *err)
{
	return b->lv[1].open ? node_close(b, 1, err) : 0;
}

int pack_leaf_add(struct r4_pack *b, const struct fmt_key *k, unsigned pid,
	     size_t len, uint8_t **body, struct r4_error *err)
{
	int rc = level_reserve(b, 1, len, err);

	if (rc)
		return rc;
	return level_append(b, 1, k, pid, NULL, 0, len, body, err);
}

int pack_leaf_add_raw(struct r4_pack *b, const struct fmt_key *k,
		      unsigned pid, size_t len, uint8_t **body,
		      struct r4_error *err)
{
	int rc = level_reserve(b, 1, len, err);

	if (rc)
		return rc;
	return level_append(b, 1, k, pid, NULL, 1, len, body, err);
}

int pack_twig_reserve(struct r4_pack *b, size_t len, struct r4_error *err)
{
	int rc = pack_leaf_close(b, err);

	return rc ? rc : level_reserve(b, 2, len, err);
}

int pack_twig_add_extent(struct r4_pack *b, const struct fmt_key *k,
		    const struct fmt_extent40_unit *u, size_t n,
		    struct r4_error *err)
{
	struct fmt_key key = *k;
	uint8_t *body;

	while (n) {
		size_t room, m;
		int rc = pack_twig_reserve(b, FMT_EXTENT40_UNIT_SIZE, err);

		if (rc)
			return rc;
		room = node_free_for_item(b->lv[2].node, b->bs, b->pol);
		m = room / FMT_EXTENT40_UNIT_SIZE;
		m = m < n ? m : n;
		rc = level_append(b, 2, &key, FMT_ITEM_EXTENT40, NULL, 1,
				  m * FMT_EXTENT40_UNIT_SIZE, &body, err);
		if (rc)
			return rc;
		for (size_t i = 0; i < m; i++) {
			struct fmt_extent40_unit eu = { u[i].start,
							u[i].width };

			fmt_extent40_unit_encode(&eu, body +
						 i * FMT_EXTENT40_UNIT_SIZE);
			key.el[3] += u[i].width * b->bs;
		}
		u += m;
		n -= m;
	}
	return 0;
}

int pack_tree_finish(struct r4_pack *b, uint64_t *root, unsigned *height,
		struct r4_error *err)
{
	int rc = pack_leaf_close(b, err);

	for (unsigned l = FMT_NODE_TWIG_LEVEL; !rc && l <= b->top; l++) {
		struct blevel *lv = &b->lv[l];

		if (!lv->open)
			continue;
		if (lv->count == 1 && l == b->top) {
			lv->open = 0;
			b->nodes++;
			b->twigs += l == FMT_NODE_TWIG_LEVEL;
			*height = l;
			node_seal(b, lv->node);
			rc = pack_upper_keep(b, l, lv->node, &lv->blk, err);
			if (!rc)
				rc = pack_upper_place(b, lv->blk, root, err);
			return rc;
		}
		rc = node_close(b, l, err);
	}
	return rc ? rc : r4i_fail(err, R4_ECORRUPT, "%s: no tree root",
				 b->target);
}
