/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4txn: a test driver of the transaction engine (libimage/txn), for
 * the command-level crash tests (tests/bats/txn-journal.bats). It runs one
 * fixed transaction on an image; set R4_FAULT to cut it (fault_env.c).
 *
 *   r4txn relocate IMAGE   copy the first leaf (its first stat data's
 *                          atime + 1) and the root to new blocks, free
 *                          the old ones, new root in the super block
 *   r4txn inplace IMAGE    the same atime change, in place (journalled)
 *
 * Prints "relocated=R overwritten=O log=L writes=W header_write=H" (H:
 * which write of the commit is the journal header's). Exit 0, or 1 with
 * the error on stderr. */
#include "config.h"
#include <stdio.h>
#include <string.h>
#include "r4/r4.h"
#include "libimage/vol/volume.h"
#include "libimage/util/err.h"
#include "libimage/txn/txn.h"
#include "cmd/common/common.h"
#include "format/endian.h"
#include "format/node.h"
#include "format/plugin.h"

static int first_ptr(const uint8_t *root, uint32_t bs, size_t *off)
{
	struct fmt_item_header ih;
	size_t len;

	if (fmt_node_ih_decode(root, bs, FMT_KEY_LARGE, 0, &ih) ||
	    ih.plugin_id != FMT_ITEM_NODEPTR40)
		return -1;
	return fmt_node_item_body(root, bs, FMT_KEY_LARGE, 0, off, &len);
}

static void bump_atime(uint8_t *leaf, uint32_t bs)
{
	size_t off, len;

	if (!fmt_node_item_body(leaf, bs, FMT_KEY_LARGE, 0, &off, &len) &&
	    len >= 2 + 14 + 12 && (get_le16(leaf + off) & 3) == 3)
		put_le32(leaf + off + 24, get_le32(leaf + off + 24) + 1);
	fmt_node_stamp(leaf, bs);
}

/* Copy block 'from' into a new block near it; *to gets its number. */
static int relocate(struct txn *t, struct r4_vol *vol, uint64_t from,
		    uint64_t *to, uint8_t **data, struct r4_error *err)
{
	struct io_block *b, *old;
	int rc = io_cache_get(&vol->cache, from, &old, err);

	if (rc)
		return rc;
	rc = txn_alloc(t, from, to, err);
	if (!rc)
		rc = txn_new(t, *to, &b, err);
	if (!rc) {
		memcpy(b->data, old->data, vol->blksize);
		*data = b->data;
		txn_put(t, b);	/* the transaction keeps its own pin */
	}
	io_cache_put(&vol->cache, old);
	return rc ? rc : txn_free(t, from, 1, err);
}

static int run(struct r4_vol *vol, int inplace, struct r4_error *err)
{
	uint64_t root = vol->sb.root_block, leaf, nl, nr;
	uint8_t *rd, *ld;
	struct io_block *b;
	struct txn *t;
	size_t off;
	int rc = txn_begin(vol, &t, err);

	if (rc)
		return rc;
	rc = io_cache_get(&vol->cache, root, &b, err);
	if (rc)
		goto out_abort;
	rc = first_ptr(b->data, vol->blksize, &off) ?
	     r4i_fail(err, R4_ECORRUPT, "root %llu: no node pointer",
		     (unsigned long long)root) : 0;
	leaf = rc ? 0 : get_le64(b->data + off);
	io_cache_put(&vol->cache, b);
	if (!rc && inplace) {
		rc = txn_capture(t, leaf, &b, err);
		if (!rc) {
			bump_atime(b->data, vol->blksize);
			txn_put(t, b);
		}
	} else if (!rc) {
		rc = relocate(t, vol, leaf, &nl, &ld, err);
		if (!rc)
			rc = relocate(t, vol, root, &nr, &rd, err);
		if (!rc) {
			bump_atime(ld, vol->blksize);
			put_le64(rd + off, nl);
			fmt_node_stamp(rd, vol->blksize);
			txn_set_root(t, nr, vol->sb.tree_height);
		}
	}
	if (rc)
		goto out_abort;
	return txn_commit(t, err);
out_abort:
	txn_abort(t);
	return rc;
}

int main(int argc, char **argv)
{
	struct r4_error err = { 0 };
	const struct txn_stats *s;
	struct r4_vol *vol;
	int rc;

	if (argc != 3 || (strcmp(argv[1], "relocate") &&
			  strcmp(argv[1], "inplace"))) {
		fprintf(stderr, "usage: r4txn relocate|inplace IMAGE\n");
		return 2;
	}
	rc = r4_vol_open(argv[2], r4cmd_open(R4_OPEN_RDWR), &vol, &err);
	if (!rc)
		rc = run(vol, !strcmp(argv[1], "inplace"), &err);
	if (rc) {
		fprintf(stderr, "r4txn: %s\n", err.msg[0] ? err.msg :
			r4_strerror(rc));
		r4_vol_close(vol, NULL);
		return 1;
	}
	s = &vol->last_commit;
	printf("relocated=%llu overwritten=%llu log=%llu writes=%llu "
	       "header_write=%llu\n", (unsigned long long)s->relocated,
	       (unsigned long long)s->overwritten,
	       (unsigned long long)s->log_blocks,
	       (unsigned long long)s->writes,
	       /* after the header: the overwrite set at home (a write
		* each) and the footer */
	       (unsigned long long)(s->writes - s->overwritten - 1));
	return r4_vol_close(vol, &err) ? 1 : 0;
}
