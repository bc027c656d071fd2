/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the packer's nodes above the leaves. They are few (one per
 * ~80 children) and kept in memory until the whole tree is known, then
 * placed together: the root first, then each level down, each level in
 * key order, ending right before the first leaf when the area saved
 * there is large enough. A reader going down the tree (and measurefs's
 * fragmentation count) then finds every node's children next to each
 * other and the leaves right after the last twig. Pointers to these
 * nodes hold their index in the store until their blocks are known. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "libimage/pack/packer.h"
#include "libimage/util/err.h"
#include "libimage/util/tmpfiles.h"
#include "format/endian.h"
#include "r4/util.h"

/* The nodes kept in memory; the rest wait in the temporary file. */
static size_t upper_mem(const struct r4_pack *b)
{
	return b->o.upper_mem >= 0 ? (size_t)b->o.upper_mem : PACK_UPPER_MEM;
}

/* Node id past upper_mem: written to the temporary file. */
static int keep_far(struct r4_pack *b, size_t id, const uint8_t *node)
{
	int fd, rc;

	if (!b->upfd) {
		rc = r4i_scratch_open("r4pack-upper", &fd);
		if (rc)
			return rc;
		b->upfd = fd + 1;
	}
	return r4i_pwrite_all(b->upfd - 1, node, b->bs,
			      (uint64_t)(id - upper_mem(b)) * b->bs);
}

int pack_upper_keep(struct r4_pack *b, unsigned level, const uint8_t *node,
	       uint64_t *id, struct r4_error *err)
{
	size_t lcap = b->capinodes;	/* ilevel grows as inode does */
	uint8_t *copy = NULL;
	int rc;

	if (R4_RESERVE(b->ilevel, lcap, b->ninodes + 1, 64) ||
	    R4_RESERVE(b->inode, b->capinodes, b->ninodes + 1, 64))
		return r4i_fail(err, -ENOMEM, "out of memory");
	if (b->ninodes >= upper_mem(b)) {
		rc = keep_far(b, b->ninodes, node);
		if (rc)
			return r4i_fail(err, rc, "cannot keep a node above the "
				       "leaves in $TMPDIR: %s", r4_strerror(rc));
	} else {
		copy = malloc(b->bs);
		if (!copy)
			return r4i_fail(err, -ENOMEM, "out of memory");
		memcpy(copy, node, b->bs);
	}
	b->inode[b->ninodes] = copy;
	b->ilevel[b->ninodes] = (uint8_t)level;
	*id = b->ninodes++;
	return 0;
}

void pack_upper_fini(struct r4_pack *b)
{
	for (size_t i = 0; i < b->ninodes; i++)
		free(b->inode[i]);
	free(b->inode);
	free(b->ilevel);
	if (b->upfd)
		close(b->upfd - 1);
	b->upfd = 0;
	b->inode = NULL;
	b->ilevel = NULL;
	b->ninodes = b->capinodes = 0;
}

/* Blocks for every kept node: pos[i] = block of node i. */
static int give_blocks(struct r4_pack *b, uint64_t *pos, struct r4_error *err)
{
	uint64_t n = b->ninodes, next, got;
	int in_area = n <= b->res_len;
	int rc = 0;

	next = b->res_start + b->res_len - n;
	if (in_area)
		rc = pack_alloc_mark(b, next, n, err);
	for (unsigned l = FMT_NODE_MAX_LEVEL; !rc && l >= FMT_NODE_TWIG_LEVEL;
	     l--) {
		for (size_t i = 0; !rc && i < n; i++) {
			if (b->ilevel[i] != l)
				continue;
			if (in_area)
				pos[i] = next++;
			else
				rc = pack_alloc_run(b, 1, &pos[i], &got, err);
		}
	}
	return rc;
}

/* Replace the indexes in a node's pointers by blocks. */
static int fix_pointers(struct r4_pack *b, uint8_t *node, const uint64_t *pos,
			struct r4_error *err)
{
	struct fmt_node_header h;
	int rc = fmt_node_header_decode(node, b->bs, &h);

	if (rc)
		return r4i_fail(err, rc, "%s: bad upper node", b->target);
	for (int j = 0; j < h.nr_items; j++) {
		size_t off, len;
		uint64_t id;

		rc = fmt_node_item_body(node, b->bs, b->pol, (unsigned)j, &off,
					&len);

		if (rc || len != FMT_NODEPTR40_SIZE)
			return r4i_fail(err, rc ? rc : R4_ECORRUPT, "%s: bad "
				       "node pointer %d", b->target, j);
		id = get_le64(node + off);
		if (id >= b->ninodes)
			return r4i_fail(err, R4_ECORRUPT, "%s: bad node pointer "
				       "%d", b->target, j);
		put_le64(node + off, pos[id]);
	}
	return 0;
}

/* Node i with its pointers made blocks, stamped, written at pos[i];
 * one past upper_mem is read back into buf first. */
static int place_one(struct r4_pack *b, size_t i, const uint64_t *pos,
		     uint8_t *buf, struct r4_error *err)
{
	uint8_t *node = b->inode[i];
	int rc;

	if (!node) {
		node = buf;
		rc = r4i_pread_all(b->upfd - 1, buf, b->bs,
				   (uint64_t)(i - upper_mem(b)) * b->bs);
		if (rc)
			return r4i_fail(err, rc, "cannot read a node above the "
				       "leaves back from $TMPDIR: %s",
				       r4_strerror(rc));
	}
	if (b->ilevel[i] > FMT_NODE_TWIG_LEVEL &&
	    (rc = fix_pointers(b, node, pos, err)))
		return rc;
	fmt_node_stamp(node, b->bs);
	return pack_img_write(b, pos[i], node, err);
}

int pack_upper_place(struct r4_pack *b, uint64_t root_id, uint64_t *root,
		struct r4_error *err)
{
	uint64_t *pos = calloc(b->ninodes, sizeof(*pos));
	size_t *order = calloc(b->ninodes, sizeof(*order)), k = 0;
	uint8_t *buf = malloc(b->bs);
	int rc = pos && order && buf ? give_blocks(b, pos, err) :
				r4i_fail(err, -ENOMEM, "out of memory");

	/* write in block order so the write buffer joins them */
	for (unsigned l = FMT_NODE_MAX_LEVEL; !rc && l >= FMT_NODE_TWIG_LEVEL;
	     l--)
		for (size_t i = 0; i < b->ninodes; i++)
			if (b->ilevel[i] == l)
				order[k++] = i;
	for (size_t i = 0; !rc && i < k; i++)
		rc = place_one(b, order[i], pos, buf, err);
	if (!rc)
		*root = pos[root_id];
	free(pos);
	free(order);
	free(buf);
	return rc;
}
