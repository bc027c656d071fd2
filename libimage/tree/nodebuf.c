/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"
#include <string.h>
#include "libimage/tree/nodebuf.h"
#include "format/errors.h"
#include "format/node.h"

size_t node_free_for_item(const uint8_t *blk, size_t blksize,
			  enum fmt_key_policy pol)
{
	struct fmt_node_header h;
	size_t ih = fmt_item_header_size(pol);

	if (fmt_node_header_decode(blk, blksize, &h) || h.free_space < ih)
		return 0;
	return h.free_space - ih;
}

/* Item key/pid of len bytes after the items header h counts: its body
 * (copied from body, else zeroed unless raw), its item header; h says
 * so after it, the block's header is left to the caller. */
static int put_item(uint8_t *blk, size_t blksize, enum fmt_key_policy pol,
		    struct fmt_node_header *h, const struct fmt_key *key,
		    unsigned pid, const void *body, int raw, size_t len,
		    uint8_t **out)
{
	struct fmt_item_header ih = { .key = *key, .plugin_id = (uint16_t)pid };
	size_t ihsize = fmt_item_header_size(pol);
	int rc;

	if (h->free_space < ihsize || len > (size_t)h->free_space - ihsize)
		return R4_ENOSPC;
	ih.offset = h->free_space_start;
	if (body)
		memcpy(blk + h->free_space_start, body, len);
	else if (!raw)
		memset(blk + h->free_space_start, 0, len);
	if (out)
		*out = blk + h->free_space_start;
	rc = fmt_node_ih_encode(&ih, blk, blksize, pol, h->nr_items);
	if (rc)
		return rc;
	h->nr_items++;
	h->free_space_start = (uint16_t)(h->free_space_start + len);
	h->free_space = (uint16_t)(h->free_space - len - ihsize);
	return 0;
}

/* raw: the body's bytes are left as they are (body NULL). */
static int append(uint8_t *blk, size_t blksize, enum fmt_key_policy pol,
		  const struct fmt_key *key, unsigned pid, const void *body,
		  int raw, size_t len, uint8_t **out)
{
	struct fmt_node_header h;
	int rc;

	rc = fmt_node_header_decode(blk, blksize, &h);
	if (!rc)
		rc = put_item(blk, blksize, pol, &h, key, pid, body, raw, len,
			      out);
	if (rc)
		return rc;
	return fmt_node_header_encode(&h, blk, blksize);
}

int node_fill_begin(struct node_fill *f, uint8_t *blk, size_t blksize,
		    enum fmt_key_policy pol, unsigned node_pid,
		    unsigned level, uint32_t mkfs_id)
{
	int rc = fmt_node_header_init(&f->h, blksize, node_pid, level,
				      mkfs_id);

	f->blk = rc ? NULL : blk;
	f->blksize = blksize;
	f->pol = pol;
	if (rc)
		return rc;
	/* the plugin id in the block: where item headers go */
	memset(blk, 0, f->h.free_space_start);
	return fmt_node_header_encode(&f->h, blk, blksize);
}

int node_fill_item(struct node_fill *f, const struct fmt_key *key,
		   unsigned pid, const void *body, size_t len)
{
	if (!f->blk)
		return R4_EINVAL;
	return put_item(f->blk, f->blksize, f->pol, &f->h, key, pid, body, 0,
			len, NULL);
}

int node_fill_end(struct node_fill *f)
{
	if (!f->blk)
		return 0;
	/* between the last body and the first item header */
	memset(f->blk + f->h.free_space_start, 0, f->h.free_space);
	return fmt_node_header_encode(&f->h, f->blk, f->blksize);
}

int node_append_item(uint8_t *blk, size_t blksize, enum fmt_key_policy pol,
		     const struct fmt_key *key, unsigned pid,
		     const void *body, size_t len, uint8_t **out)
{
	return append(blk, blksize, pol, key, pid, body, 0, len, out);
}

int node_append_space(uint8_t *blk, size_t blksize, enum fmt_key_policy pol,
		      const struct fmt_key *key, unsigned pid, size_t len,
		      uint8_t **out)
{
	return append(blk, blksize, pol, key, pid, NULL, 1, len, out);
}
