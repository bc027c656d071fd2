/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: building formatted nodes in memory: append an item at the end
 * of a node (the fast path of a build in key order). */
#ifndef R4_LIBIMAGE_TREE_NODEBUF_H
#define R4_LIBIMAGE_TREE_NODEBUF_H

#include <stddef.h>
#include <stdint.h>
#include "format/key.h"
#include "format/node.h"

/* Bytes still free for one more item body plus its header. */
size_t node_free_for_item(const uint8_t *blk, size_t blksize,
			  enum fmt_key_policy pol);

/* Append an item of plugin 'pid' with key 'key' and body len bytes
 * (copied from body, or zero-filled when body is NULL); *out receives
 * where the body went. R4_ENOSPC when it does not fit. The caller keeps
 * keys ascending and stamps node41 checksums before writing. */
int node_append_item(uint8_t *blk, size_t blksize, enum fmt_key_policy pol,
		     const struct fmt_key *key, unsigned pid,
		     const void *body, size_t len, uint8_t **out);
/* The same with the body's bytes left as they are: the caller writes
 * every one of the len bytes at *out. */
int node_append_space(uint8_t *blk, size_t blksize, enum fmt_key_policy pol,
		      const struct fmt_key *key, unsigned pid, size_t len,
		      uint8_t **out);

/* A node's items written into a block at once, in key order: the bytes
 * fmt_node_init and node_append_item for each would give, with the node
 * header decoded and encoded once, not at every item (the caller stamps
 * node41 checksums). Every byte of the block is written (the block's
 * bytes before do not matter) once begin succeeded and end is called.
 * begin: R4_EUNSUPP or R4_ERANGE as fmt_node_init (the block
 * untouched); item: as node_append_item; end zeroes the free space and
 * writes the header as the items so far say (also after an item's
 * failure). */
struct node_fill {
	uint8_t *blk;		/* NULL: begin failed */
	size_t blksize;
	enum fmt_key_policy pol;
	struct fmt_node_header h;
};
int node_fill_begin(struct node_fill *f, uint8_t *blk, size_t blksize,
		    enum fmt_key_policy pol, unsigned node_pid,
		    unsigned level, uint32_t mkfs_id);
int node_fill_item(struct node_fill *f, const struct fmt_key *key,
		   unsigned pid, const void *body, size_t len);
int node_fill_end(struct node_fill *f);

#endif
