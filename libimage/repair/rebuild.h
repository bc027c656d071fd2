/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the tree rebuild's state and the functions its three files
 * share: rebuild_take.c gathers the items (the reachable nodes, then a
 * scan of the unreachable used blocks), rebuild_keys.c mends their keys
 * and places bodies that fit nowhere, rebuild.c mends the boundaries
 * between files, fills the breaks and builds the new tree. */
#ifndef R4_LIBIMAGE_REPAIR_REBUILD_H
#define R4_LIBIMAGE_REPAIR_REBUILD_H

#include "libimage/repair/repair.h"
#include "format/key.h"

struct ritem {
	struct fmt_key key;
	unsigned pid;
	uint8_t *body;
	size_t len;
	uint32_t seq;
	int suspect;			/* out of place in its node */
	int orphan;			/* to a fresh object (lost+found) */
	uint64_t blk;			/* the node it came from, 0 none */
	unsigned idx;			/* its position there */
};

/* Items a node can hold (up to 64 KiB blocks, an item header at least
 * 30 bytes). */
#define NODE_ITEMS_MAX 2200

struct rb {
	struct rep *R;
	struct chk v;			/* item verifier: quiet check state */
	struct r4_check_report vrep;
	struct chk_map seen;		/* nodes looked at */
	struct ritem *it;
	size_t n, cap;
	uint8_t *buf;
	uint64_t nodes_kept, nodes_dropped, nodes_salvaged, items_dropped;
	uint64_t mended;
	uint64_t bytes_moved;		/* body bytes put at another key */
	uint64_t offsets_mended;	/* item body offsets set back */
	uint64_t pids_mended;		/* item plugin ids set back */
	uint64_t bytes_dropped;		/* body bytes of items dropped */
	uint64_t scanned;
	uint64_t freed;			/* old nodes freed by the rebuild */
	/* Stat-data keys the key pass gives an orphan stat data (keys.c):
	 * body items under them are that stat data's, left as they are. */
	struct fmt_key *named;
	size_t nnamed;
};

/* An item dropped from the list (its pid set to this). */
#define DROPPED 0xffffu

struct kid {
	uint64_t blk;
	struct fmt_key lo, hi;
};

/* rebuild_take.c: add an item to the list (its body copied); the walk
 * from a node down; the scan of the used blocks no one reaches. */
int rb_push(struct rb *b, const struct fmt_key *k, unsigned pid,
	    const uint8_t *body, size_t len);
int rb_walk(struct rb *b, uint64_t blk, unsigned level,
	    const struct kid *range);
int rb_scan(struct rb *b);
/* rebuild_keys.c: the list's order (key, then first found); the root
 * directory's stat data; where an item's bytes end; a break filled;
 * key look-ups; the key, ctail and orphan menders. */
int rb_item_cmp(const void *x, const void *y);
int rb_root_sd(struct rb *b);
uint64_t rb_item_end(const struct ritem *p, uint32_t bs);
int rb_fill_gap(struct rb *b, const struct ritem *p, uint64_t at,
		uint64_t end);
int rb_same_body(const struct ritem *x, const struct ritem *y);
size_t rb_find_key(const struct rb *b, const struct fmt_key *k);
uint64_t rb_sd_size(const struct rb *b, size_t n, const struct ritem *p);
int rb_mend_ctails(struct rb *b, int *moved);
int rb_place_far(struct rb *b, int *moved);
int rb_rekey_orphans(struct rb *b, int *moved);
int rb_mend_keys(struct rb *b);

#endif
