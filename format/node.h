/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: formatted nodes, node40 and node41 (doc/format.md §4).
 *
 * A node is one block: a node header at offset 0, item bodies packed
 * upward right after it, item headers packed downward from the end of the
 * block (item i's header at blksize - (i + 1) * item header size).
 *
 * Every function that takes a whole block (blk, blksize) checks each
 * offset and length it reads against blksize before using it, so any
 * bytes at all may be passed in. Block sizes are limited to
 * FMT_NODE_MIN_BLKSIZE..FMT_NODE_MAX_BLKSIZE (offsets are 16-bit). */
#ifndef R4_FORMAT_NODE_H
#define R4_FORMAT_NODE_H

#include <stddef.h>
#include <stdint.h>
#include "key.h"

#define FMT_NODE40_MAGIC 0x52344653u	/* bytes "SF4R" */
#define FMT_NODE41_MAGIC 0x19051966u

#define FMT_NODE40_HEADER_SIZE 28
#define FMT_NODE41_HEADER_SIZE 32

/* Byte offsets in the node header (node41 = node40 + checksum). */
enum {
	FMT_NODE_OFF_PLUGIN_ID = 0,	/* u16 node plugin id */
	FMT_NODE_OFF_NR_ITEMS = 2,	/* u16 */
	FMT_NODE_OFF_FREE_SPACE = 4,	/* u16 */
	FMT_NODE_OFF_FSS = 6,		/* u16 free_space_start */
	FMT_NODE_OFF_MAGIC = 8,		/* u32 */
	FMT_NODE_OFF_MKFS_ID = 12,	/* u32 */
	FMT_NODE_OFF_FLUSH_ID = 16,	/* u64 */
	FMT_NODE_OFF_FLAGS = 24,	/* u16 */
	FMT_NODE_OFF_LEVEL = 26,	/* u8 */
	FMT_NODE_OFF_PAD = 27,		/* u8 */
	FMT_NODE41_OFF_CSUM = 28	/* u32, node41 only */
};

/* Item header: key, then three u16 fields (offsets from its start). */
#define FMT_IH_LARGE_SIZE 38
#define FMT_IH_SHORT_SIZE 30
enum {
	FMT_IH_OFF_OFFSET = 0,		/* after the key */
	FMT_IH_OFF_FLAGS = 2,
	FMT_IH_OFF_PLUGIN_ID = 4,
	FMT_IH_TAIL_SIZE = 6		/* bytes after the key */
};

/* Leaf = 1, twig = 2; the kernel's REISER4_MAX_ZTREE_HEIGHT is 8. */
#define FMT_NODE_LEAF_LEVEL 1
#define FMT_NODE_TWIG_LEVEL 2
#define FMT_NODE_MAX_LEVEL 8

#define FMT_NODE_MIN_BLKSIZE 512
#define FMT_NODE_MAX_BLKSIZE 65536

/* Host-order node header. 'checksum' is used by node41 only (0 for
 * node40); 'pad' is kept so that encode gives back the decoded bytes. */
struct fmt_node_header {
	uint16_t plugin_id;
	uint16_t nr_items;
	uint16_t free_space;
	uint16_t free_space_start;
	uint32_t magic;
	uint32_t mkfs_id;
	uint64_t flush_id;
	uint16_t flags;
	uint8_t level;
	uint8_t pad;
	uint32_t checksum;
};

struct fmt_item_header {
	struct fmt_key key;
	uint16_t offset;	/* body offset from the start of the node */
	uint16_t flags;
	uint16_t plugin_id;	/* item plugin id (enum fmt_item_id) */
};

/* Header size / magic of node plugin 'node_pid'; 0 when unknown. */
size_t fmt_node_header_size(unsigned node_pid);
uint32_t fmt_node_magic(unsigned node_pid);
/* Item header size under a key policy (38 or 30). */
size_t fmt_item_header_size(enum fmt_key_policy pol);
/* Whether items of plugin pid may sit in a node of this level (leaf
 * items at 1, extents at 2, node pointers above 1). */
int fmt_node_item_allowed(unsigned pid, unsigned level);

/* Fixed-layout codecs: buf holds at least FMT_NODE40_HEADER_SIZE
 * (node40) or FMT_NODE41_HEADER_SIZE (node41) bytes. node40 decode sets
 * checksum to 0; node40 encode ignores it. */
void fmt_node40_header_decode(const uint8_t *buf, struct fmt_node_header *out);
void fmt_node40_header_encode(const struct fmt_node_header *in, uint8_t *buf);
void fmt_node41_header_decode(const uint8_t *buf, struct fmt_node_header *out);
void fmt_node41_header_encode(const struct fmt_node_header *in, uint8_t *buf);

/* Decode the header of a block with the layout its plugin id names.
 * R4_ERANGE if blksize is outside the supported range, R4_EUNSUPP for an
 * unknown node plugin id. Nothing else is checked (see fmt_node_verify). */
int fmt_node_header_decode(const uint8_t *blk, size_t blksize,
			   struct fmt_node_header *out);
/* Encode with the layout in->plugin_id names (R4_EUNSUPP if unknown,
 * R4_ERANGE for a bad blksize). A node41 in->checksum is stored as given;
 * call fmt_node_stamp once the block is complete. */
int fmt_node_header_encode(const struct fmt_node_header *in, uint8_t *blk,
			   size_t blksize);

/* Fixed-layout item header codecs; buf holds fmt_item_header_size(pol). */
void fmt_item_header_decode(const uint8_t *buf, enum fmt_key_policy pol,
			    struct fmt_item_header *out);
void fmt_item_header_encode(const struct fmt_item_header *in,
			    enum fmt_key_policy pol, uint8_t *buf);

/* Byte offset of item i's header in a block, or 0 when that position
 * would overlap the node header of plugin node_pid (or either is bad). */
size_t fmt_node_ih_pos(size_t blksize, unsigned node_pid,
		       enum fmt_key_policy pol, unsigned i);

/* Decode / encode item i's header in place. The node plugin id is read
 * from blk (R4_EUNSUPP if unknown). R4_ERANGE when the header position
 * does not fit the block; i is not compared with nr_items (encode is
 * used to add items). */
int fmt_node_ih_decode(const uint8_t *blk, size_t blksize,
		       enum fmt_key_policy pol, unsigned i,
		       struct fmt_item_header *out);
int fmt_node_ih_encode(const struct fmt_item_header *in, uint8_t *blk,
		       size_t blksize, enum fmt_key_policy pol, unsigned i);

/* Where item i's body is: *off from the start of the block and *len
 * bytes (len = next item's offset, or free_space_start, minus offset).
 * Validates the node header (plugin, nr_items and free_space_start fit
 * the block) and that body i lies in [header size, free_space_start)
 * with a non-zero length. R4_ERANGE if i >= nr_items, R4_ECORRUPT for
 * inconsistent offsets, R4_EUNSUPP for an unknown node plugin. */
int fmt_node_item_body(const uint8_t *blk, size_t blksize,
		       enum fmt_key_policy pol, unsigned i,
		       size_t *off, size_t *len);

/* The same for items one after another, the node header checked once:
 * fmt_node_layout decodes of it what the layout needs (plugin_id,
 * nr_items, free_space_start: nothing else of *nh is set) and checks
 * what fmt_node_item_body checks of it (0, or that function's error);
 * fmt_node_item_at then gives item i's header (as fmt_node_ih_decode)
 * and body (as fmt_node_item_body) for a block whose header is *nh. */
int fmt_node_layout(const uint8_t *blk, size_t blksize,
		    enum fmt_key_policy pol, struct fmt_node_header *nh);
int fmt_node_item_at(const uint8_t *blk, size_t blksize,
		     enum fmt_key_policy pol, const struct fmt_node_header *nh,
		     unsigned i, struct fmt_item_header *ih, size_t *off,
		     size_t *len);

/* Check a whole node: block size, plugin id, magic, level in
 * 1..FMT_NODE_MAX_LEVEL, nr_items fits, free_space == blksize -
 * free_space_start - nr_items * ih size, item 0 at the header end, item
 * offsets strictly increasing and below free_space_start, item plugin ids
 * known and allowed at the node's level (section 6), item keys in
 * ascending (non-decreasing) order, and the node41 checksum. mkfs_id,
 * the level expected from the descent and item bodies are the caller's
 * to check. Returns NULL if fine, else a static string naming the
 * failed check; *bad_item (may be NULL) gets the index of the offending
 * item or -1 for the header. */
const char *fmt_node_verify(const uint8_t *blk, size_t blksize,
			    enum fmt_key_policy pol, int *bad_item);

/* node41 checksum of a block: CRC-32C register (start ~0, no final
 * inversion) over bytes 0..27 then 32..blksize-1. blksize must be at
 * least FMT_NODE41_HEADER_SIZE (else 0 is returned). */
uint32_t fmt_node41_csum(const uint8_t *blk, size_t blksize);
/* Store the checksum if blk is a node41 block (no-op for node40 and
 * unknown ids). Call after every change, before writing. */
void fmt_node_stamp(uint8_t *blk, size_t blksize);

/* The header of an empty node (fmt_node_init's, not written). */
int fmt_node_header_init(struct fmt_node_header *nh, size_t blksize,
			 unsigned node_pid, unsigned level, uint32_t mkfs_id);
/* Make blk an empty node: whole block zeroed, plugin id, magic, level,
 * mkfs_id set, nr_items 0, free_space_start = header size, free_space
 * accordingly; node41 checksum stamped. R4_EUNSUPP for an unknown node
 * plugin, R4_ERANGE for a bad blksize or level. */
int fmt_node_init(uint8_t *blk, size_t blksize, unsigned node_pid,
		  unsigned level, uint32_t mkfs_id);

#endif
