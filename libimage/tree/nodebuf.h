/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: building formatted nodes in memory: append an item at the end
 * of a node (the fast path of a build in key order). */
#ifndef R4_LIBIMAGE_TREE_NODEBUF_H
#define R4_LIBIMAGE_TREE_NODEBUF_H

#include <stddef.h>
#include <stdint.h>
#include "format/key.h"

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

#endif
