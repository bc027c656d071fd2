/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: node40 / node41 codecs and the node verifier (section 4). */
#include <string.h>
#include "node.h"
#include "checksum.h"
#include "endian.h"
#include "errors.h"
#include "plugin.h"

_Static_assert(FMT_NODE_OFF_PAD + 1 == FMT_NODE40_HEADER_SIZE,
	       "node40 header fields fill 28 bytes");
_Static_assert(FMT_NODE_OFF_NR_ITEMS == FMT_NODE_OFF_PLUGIN_ID + 2 &&
	       FMT_NODE_OFF_FREE_SPACE == FMT_NODE_OFF_NR_ITEMS + 2 &&
	       FMT_NODE_OFF_FSS == FMT_NODE_OFF_FREE_SPACE + 2 &&
	       FMT_NODE_OFF_MAGIC == FMT_NODE_OFF_FSS + 2 &&
	       FMT_NODE_OFF_MKFS_ID == FMT_NODE_OFF_MAGIC + 4 &&
	       FMT_NODE_OFF_FLUSH_ID == FMT_NODE_OFF_MKFS_ID + 4 &&
	       FMT_NODE_OFF_FLAGS == FMT_NODE_OFF_FLUSH_ID + 8 &&
	       FMT_NODE_OFF_LEVEL == FMT_NODE_OFF_FLAGS + 2 &&
	       FMT_NODE_OFF_PAD == FMT_NODE_OFF_LEVEL + 1,
	       "node40 header fields are packed");
_Static_assert(FMT_NODE41_OFF_CSUM == FMT_NODE40_HEADER_SIZE &&
	       FMT_NODE41_OFF_CSUM + 4 == FMT_NODE41_HEADER_SIZE,
	       "node41 = node40 header + u32 checksum");
_Static_assert(FMT_IH_OFF_FLAGS == FMT_IH_OFF_OFFSET + 2 &&
	       FMT_IH_OFF_PLUGIN_ID == FMT_IH_OFF_FLAGS + 2 &&
	       FMT_IH_OFF_PLUGIN_ID + 2 == FMT_IH_TAIL_SIZE,
	       "item header tail: offset, flags, plugin id");
_Static_assert(FMT_KEY_LARGE_SIZE + FMT_IH_TAIL_SIZE == FMT_IH_LARGE_SIZE,
	       "large-key item header is 38 bytes");
_Static_assert(FMT_KEY_SHORT_SIZE + FMT_IH_TAIL_SIZE == FMT_IH_SHORT_SIZE,
	       "short-key item header is 30 bytes");

size_t fmt_node_header_size(unsigned node_pid)
{
	switch (node_pid) {
	case FMT_NODE40: return FMT_NODE40_HEADER_SIZE;
	case FMT_NODE41: return FMT_NODE41_HEADER_SIZE;
	default: return 0;
	}
}

uint32_t fmt_node_magic(unsigned node_pid)
{
	switch (node_pid) {
	case FMT_NODE40: return FMT_NODE40_MAGIC;
	case FMT_NODE41: return FMT_NODE41_MAGIC;
	default: return 0;
	}
}

size_t fmt_item_header_size(enum fmt_key_policy pol)
{
	return pol == FMT_KEY_LARGE ? FMT_IH_LARGE_SIZE : FMT_IH_SHORT_SIZE;
}

void fmt_node40_header_decode(const uint8_t *buf, struct fmt_node_header *out)
{
	out->plugin_id = get_le16(buf + FMT_NODE_OFF_PLUGIN_ID);
	out->nr_items = get_le16(buf + FMT_NODE_OFF_NR_ITEMS);
	out->free_space = get_le16(buf + FMT_NODE_OFF_FREE_SPACE);
	out->free_space_start = get_le16(buf + FMT_NODE_OFF_FSS);
	out->magic = get_le32(buf + FMT_NODE_OFF_MAGIC);
	out->mkfs_id = get_le32(buf + FMT_NODE_OFF_MKFS_ID);
	out->flush_id = get_le64(buf + FMT_NODE_OFF_FLUSH_ID);
	out->flags = get_le16(buf + FMT_NODE_OFF_FLAGS);
	out->level = buf[FMT_NODE_OFF_LEVEL];
	out->pad = buf[FMT_NODE_OFF_PAD];
	out->checksum = 0;
}

void fmt_node40_header_encode(const struct fmt_node_header *in, uint8_t *buf)
{
	put_le16(buf + FMT_NODE_OFF_PLUGIN_ID, in->plugin_id);
	put_le16(buf + FMT_NODE_OFF_NR_ITEMS, in->nr_items);
	put_le16(buf + FMT_NODE_OFF_FREE_SPACE, in->free_space);
	put_le16(buf + FMT_NODE_OFF_FSS, in->free_space_start);
	put_le32(buf + FMT_NODE_OFF_MAGIC, in->magic);
	put_le32(buf + FMT_NODE_OFF_MKFS_ID, in->mkfs_id);
	put_le64(buf + FMT_NODE_OFF_FLUSH_ID, in->flush_id);
	put_le16(buf + FMT_NODE_OFF_FLAGS, in->flags);
	buf[FMT_NODE_OFF_LEVEL] = in->level;
	buf[FMT_NODE_OFF_PAD] = in->pad;
}

void fmt_node41_header_decode(const uint8_t *buf, struct fmt_node_header *out)
{
	fmt_node40_header_decode(buf, out);
	out->checksum = get_le32(buf + FMT_NODE41_OFF_CSUM);
}

void fmt_node41_header_encode(const struct fmt_node_header *in, uint8_t *buf)
{
	fmt_node40_header_encode(in, buf);
	put_le32(buf + FMT_NODE41_OFF_CSUM, in->checksum);
}

static int blksize_ok(size_t blksize)
{
	return blksize >= FMT_NODE_MIN_BLKSIZE &&
	       blksize <= FMT_NODE_MAX_BLKSIZE;
}

int fmt_node_header_decode(const uint8_t *blk, size_t blksize,
			   struct fmt_node_header *out)
{
	if (!blksize_ok(blksize))
		return R4_ERANGE;
	switch (get_le16(blk + FMT_NODE_OFF_PLUGIN_ID)) {
	case FMT_NODE40:
		fmt_node40_header_decode(blk, out);
		return 0;
	case FMT_NODE41:
		fmt_node41_header_decode(blk, out);
		return 0;
	default:
		return R4_EUNSUPP;
	}
}

int fmt_node_header_encode(const struct fmt_node_header *in, uint8_t *blk,
			   size_t blksize)
{
	if (!blksize_ok(blksize))
		return R4_ERANGE;
	switch (in->plugin_id) {
	case FMT_NODE40:
		fmt_node40_header_encode(in, blk);
		return 0;
	case FMT_NODE41:
		fmt_node41_header_encode(in, blk);
		return 0;
	default:
		return R4_EUNSUPP;
	}
}

void fmt_item_header_decode(const uint8_t *buf, enum fmt_key_policy pol,
			    struct fmt_item_header *out)
{
	const uint8_t *t = buf + fmt_key_size(pol);

	fmt_key_decode(buf, pol, &out->key);
	out->offset = get_le16(t + FMT_IH_OFF_OFFSET);
	out->flags = get_le16(t + FMT_IH_OFF_FLAGS);
	out->plugin_id = get_le16(t + FMT_IH_OFF_PLUGIN_ID);
}

void fmt_item_header_encode(const struct fmt_item_header *in,
			    enum fmt_key_policy pol, uint8_t *buf)
{
	uint8_t *t = buf + fmt_key_size(pol);

	fmt_key_encode(&in->key, pol, buf);
	put_le16(t + FMT_IH_OFF_OFFSET, in->offset);
	put_le16(t + FMT_IH_OFF_FLAGS, in->flags);
	put_le16(t + FMT_IH_OFF_PLUGIN_ID, in->plugin_id);
}

size_t fmt_node_ih_pos(size_t blksize, unsigned node_pid,
		       enum fmt_key_policy pol, unsigned i)
{
	size_t hsize = fmt_node_header_size(node_pid);
	size_t ih = fmt_item_header_size(pol);

	if (!hsize || !blksize_ok(blksize))
		return 0;
	/* (i + 1) * ih <= blksize - hsize, without overflow. */
	if ((size_t)i >= (blksize - hsize) / ih)
		return 0;
	return blksize - ((size_t)i + 1) * ih;
}

int fmt_node_ih_decode(const uint8_t *blk, size_t blksize,
		       enum fmt_key_policy pol, unsigned i,
		       struct fmt_item_header *out)
{
	size_t pos;

	if (!blksize_ok(blksize))
		return R4_ERANGE;
	pos = fmt_node_ih_pos(blksize, get_le16(blk), pol, i);
	if (!pos)
		return fmt_node_header_size(get_le16(blk)) ? R4_ERANGE
							   : R4_EUNSUPP;
	fmt_item_header_decode(blk + pos, pol, out);
	return 0;
}

int fmt_node_ih_encode(const struct fmt_item_header *in, uint8_t *blk,
		       size_t blksize, enum fmt_key_policy pol, unsigned i)
{
	size_t pos;

	if (!blksize_ok(blksize))
		return R4_ERANGE;
	pos = fmt_node_ih_pos(blksize, get_le16(blk), pol, i);
	if (!pos)
		return fmt_node_header_size(get_le16(blk)) ? R4_ERANGE
							   : R4_EUNSUPP;
	fmt_item_header_encode(in, pol, blk + pos);
	return 0;
}

/* Read the u16 offset field of item i; the caller has checked that
 * nr_items headers fit the block. */
static size_t ih_offset(const uint8_t *blk, size_t blksize,
			enum fmt_key_policy pol, unsigned i)
{
	size_t pos = blksize - ((size_t)i + 1) * fmt_item_header_size(pol);

	return get_le16(blk + pos + fmt_key_size(pol) + FMT_IH_OFF_OFFSET);
}

/* Header sanity shared by item_body and verify: plugin known, item
 * headers fit, free_space_start inside [hsize, start of item headers]. */
static const char *node_layout_check(const uint8_t *blk, size_t blksize,
				     enum fmt_key_policy pol,
				     struct fmt_node_header *nh, int *err)
{
	size_t hsize, ih_area;

	*err = R4_ECORRUPT;
	if (!blksize_ok(blksize)) {
		*err = R4_ERANGE;
		return "node block size is out of range";
	}
	/* Only the fields the layout needs (fmt_node_item_body is asked
	 * once an item); verify_header decodes the rest. */
	nh->plugin_id = get_le16(blk + FMT_NODE_OFF_PLUGIN_ID);
	hsize = fmt_node_header_size(nh->plugin_id);
	if (!hsize) {
		*err = R4_EUNSUPP;
		return "node plugin id is unknown";
	}
	nh->nr_items = get_le16(blk + FMT_NODE_OFF_NR_ITEMS);
	nh->free_space_start = get_le16(blk + FMT_NODE_OFF_FSS);
	ih_area = (size_t)nh->nr_items * fmt_item_header_size(pol);
	if (ih_area > blksize - hsize)
		return "node nr_items does not fit the block";
	if (nh->free_space_start < hsize ||
	    nh->free_space_start > blksize - ih_area)
		return "node free_space_start is outside the body area";
	*err = 0;
	return NULL;
}

/* Item i's body of a node whose layout node_layout_check passed
 * (*nh): from its offset to the next item's (free_space_start after
 * the last), inside the body area and not empty. */
static int item_span(const uint8_t *blk, size_t blksize,
		     enum fmt_key_policy pol, const struct fmt_node_header *nh,
		     unsigned i, size_t *off, size_t *len)
{
	size_t start, end;

	if (i >= nh->nr_items)
		return R4_ERANGE;
	start = ih_offset(blk, blksize, pol, i);
	end = i + 1 < nh->nr_items ? ih_offset(blk, blksize, pol, i + 1)
				   : nh->free_space_start;
	if (start < fmt_node_header_size(nh->plugin_id) ||
	    end > nh->free_space_start || start >= end)
		return R4_ECORRUPT;
	*off = start;
	*len = end - start;
	return 0;
}

int fmt_node_item_body(const uint8_t *blk, size_t blksize,
		       enum fmt_key_policy pol, unsigned i,
		       size_t *off, size_t *len)
{
	struct fmt_node_header nh;
	int err;

	if (node_layout_check(blk, blksize, pol, &nh, &err))
		return err;
	return item_span(blk, blksize, pol, &nh, i, off, len);
}

int fmt_node_layout(const uint8_t *blk, size_t blksize,
		    enum fmt_key_policy pol, struct fmt_node_header *nh)
{
	int err;

	node_layout_check(blk, blksize, pol, nh, &err);
	return err;
}

int fmt_node_item_at(const uint8_t *blk, size_t blksize,
		     enum fmt_key_policy pol, const struct fmt_node_header *nh,
		     unsigned i, struct fmt_item_header *ih, size_t *off,
		     size_t *len)
{
	if (i >= nh->nr_items)
		return R4_ERANGE;
	/* the layout check put nr_items headers inside the block */
	fmt_item_header_decode(blk + blksize - ((size_t)i + 1) *
			       fmt_item_header_size(pol), pol, ih);
	return item_span(blk, blksize, pol, nh, i, off, len);
}

/* Item plugins allowed at a level (section 6). */
int fmt_node_item_allowed(unsigned pid, unsigned level)
{
	switch (pid) {
	case FMT_ITEM_STAT40: case FMT_ITEM_SDE40: case FMT_ITEM_CDE40:
	case FMT_ITEM_TAIL40: case FMT_ITEM_CTAIL40: case FMT_ITEM_BBOX40:
		return level == FMT_NODE_LEAF_LEVEL;
	case FMT_ITEM_EXTENT40:
		return level == FMT_NODE_TWIG_LEVEL;
	case FMT_ITEM_NODEPTR40:
		return level > FMT_NODE_LEAF_LEVEL;
	default:
		return 0;
	}
}

static const char *verify_header(const uint8_t *blk, size_t blksize,
				 enum fmt_key_policy pol,
				 struct fmt_node_header *nh)
{
	const char *why;
	size_t want;
	int err;

	why = node_layout_check(blk, blksize, pol, nh, &err);
	if (why)
		return why;
	fmt_node_header_decode(blk, blksize, nh);
	if (nh->magic != fmt_node_magic(nh->plugin_id))
		return nh->plugin_id == FMT_NODE40
		       ? "node40 magic is not 0x52344653"
		       : "node41 magic is not 0x19051966";
	if (nh->level < FMT_NODE_LEAF_LEVEL || nh->level > FMT_NODE_MAX_LEVEL)
		return "node level is not in 1..8";
	want = blksize - nh->free_space_start -
	       (size_t)nh->nr_items * fmt_item_header_size(pol);
	if (nh->free_space != want)
		return "node free_space != blksize - free_space_start - "
		       "nr_items * item header size";
	if (nh->plugin_id == FMT_NODE41 &&
	    nh->checksum != fmt_node41_csum(blk, blksize))
		return "node41 checksum mismatch";
	return NULL;
}

static const char *verify_items(const uint8_t *blk, size_t blksize,
				enum fmt_key_policy pol,
				const struct fmt_node_header *nh, int *bad)
{
	size_t hsize = fmt_node_header_size(nh->plugin_id);
	size_t ihs = fmt_item_header_size(pol);
	struct fmt_item_header ih, prev;
	size_t prev_off = 0;

	for (unsigned i = 0; i < nh->nr_items; i++) {
		*bad = (int)i;
		fmt_item_header_decode(blk + blksize - (i + 1) * ihs, pol, &ih);
		if (i == 0 && ih.offset != hsize)
			return "item 0 body does not start right after the "
			       "node header";
		if (i > 0 && ih.offset <= prev_off)
			return "item offsets are not strictly increasing";
		if (ih.offset >= nh->free_space_start)
			return "item offset is not below free_space_start";
		if (!fmt_node_item_allowed(ih.plugin_id, nh->level))
			return "item plugin id is unknown or not allowed at "
			       "this node level";
		if (i > 0 && fmt_key_cmp(&prev.key, &ih.key) > 0)
			return "item keys are not in ascending order";
		prev = ih;
		prev_off = ih.offset;
	}
	*bad = -1;
	return NULL;
}

const char *fmt_node_verify(const uint8_t *blk, size_t blksize,
			    enum fmt_key_policy pol, int *bad_item)
{
	struct fmt_node_header nh;
	const char *why;
	int dummy;

	if (!bad_item)
		bad_item = &dummy;
	*bad_item = -1;
	why = verify_header(blk, blksize, pol, &nh);
	if (why)
		return why;
	return verify_items(blk, blksize, pol, &nh, bad_item);
}

uint32_t fmt_node41_csum(const uint8_t *blk, size_t blksize)
{
	uint32_t crc;

	if (blksize < FMT_NODE41_HEADER_SIZE)
		return 0;
	crc = fmt_crc32c_raw(0xFFFFFFFFu, blk, FMT_NODE41_OFF_CSUM);
	return fmt_crc32c_raw(crc, blk + FMT_NODE41_HEADER_SIZE,
			      blksize - FMT_NODE41_HEADER_SIZE);
}

void fmt_node_stamp(uint8_t *blk, size_t blksize)
{
	if (blksize < FMT_NODE41_HEADER_SIZE ||
	    get_le16(blk + FMT_NODE_OFF_PLUGIN_ID) != FMT_NODE41)
		return;
	put_le32(blk + FMT_NODE41_OFF_CSUM, fmt_node41_csum(blk, blksize));
}

int fmt_node_header_init(struct fmt_node_header *nh, size_t blksize,
			 unsigned node_pid, unsigned level, uint32_t mkfs_id)
{
	size_t hsize = fmt_node_header_size(node_pid);

	if (!hsize)
		return R4_EUNSUPP;
	if (!blksize_ok(blksize) || level < FMT_NODE_LEAF_LEVEL ||
	    level > FMT_NODE_MAX_LEVEL)
		return R4_ERANGE;
	memset(nh, 0, sizeof(*nh));
	nh->plugin_id = (uint16_t)node_pid;
	nh->free_space_start = (uint16_t)hsize;
	nh->free_space = (uint16_t)(blksize - hsize);
	nh->magic = fmt_node_magic(node_pid);
	nh->mkfs_id = mkfs_id;
	nh->level = (uint8_t)level;
	return 0;
}

int fmt_node_init(uint8_t *blk, size_t blksize, unsigned node_pid,
		  unsigned level, uint32_t mkfs_id)
{
	struct fmt_node_header nh;
	int rc = fmt_node_header_init(&nh, blksize, node_pid, level, mkfs_id);

	if (rc)
		return rc;
	memset(blk, 0, blksize);
	fmt_node_header_encode(&nh, blk, blksize);
	fmt_node_stamp(blk, blksize);
	return 0;
}
