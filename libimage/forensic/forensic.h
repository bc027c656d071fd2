/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: what the parts of the forensic reader share, private to
 * libimage/forensic: forensic.c (the scan of free blocks, lsdel),
 * classes.c (block classes), ccreg_body.c (compressed bodies), orphans.c
 * (objects no entry names) and undel.c (recovery). */
#ifndef R4_LIBIMAGE_FORENSIC_H
#define R4_LIBIMAGE_FORENSIC_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "r4/forensic.h"
#include "libimage/util/err.h"
#include "libimage/vol/volume.h"
#include "libimage/alloc/space.h"
#include "format/super.h"
#include "format/node.h"
#include "format/item.h"
#include "format/plugin.h"
#include "format/bitmap.h"
#include "format/cluster.h"
#include "libimage/util/compress.h"
#include "libimage/obj/obj.h"
#include "libimage/obj/ccreg.h"
#include "libimage/tree/tree.h"
#include "r4/util.h"

/* A stat data found in an old node. */
struct fsd {
	uint64_t oid, loc, ord, blk, flush;
	unsigned item;
	struct r4_stat st;
	struct fmt_pset pset;	/* for a compressed file's plugins */
};
/* A directory entry found in an old node. */
struct fname {
	uint64_t oid, parent, flush;
	size_t len;
	char name[256];
};
/* A body item: a tail (bytes at boff of node blk), a ctail (len bytes
 * of a disk cluster of 1 << shift at boff of node blk) or one extent
 * unit (count blocks from blk; blk 0 a hole, 1 unallocated). */
struct fpiece {
	uint64_t oid, ord, off, len, flush, blk, count;
	uint32_t boff;
	int tail;
	int ctail;
	unsigned shift;
	int raw;	/* node read as on disk, under the journal's overlay */
};

struct fscan {
	size_t blksize;
	uint32_t mkfs_id;
	enum fmt_key_policy pol;
	uint64_t only_oid;	/* 0: every object */
	struct fsd *sd;
	size_t nsd, capsd;
	struct fname *nm;
	size_t nnm, capnm;
	struct fpiece *pc;
	size_t npc, cappc;
	int raw;		/* the node being scanned was read raw */
	uint64_t nfree, njournal;	/* blocks read */
};

/* Ranges [off, end) of a file. */
struct range {
	uint64_t off, end;
};
struct ranges {
	struct range *v;
	size_t n, cap;
};

/* Call fn(ctx, off, end) for every run of a piece whose bytes are still
 * in free blocks (tails: the whole piece, their node is free; holes
 * too); clipped to size. */
typedef int (*run_fn)(void *ctx, const struct fpiece *p, uint64_t off,
		      uint64_t end, uint64_t blk);
typedef int (*cluster_fn)(void *ctx, uint64_t off, const uint8_t *buf,
			  size_t len);

/* A walk of the live tree: every stat data, every name (entries other
 * than "." and ".."), every safe link. An orphan is an object with a
 * stat data that no entry names (the root excepted). */
struct oref {
	uint64_t loc, ord, oid;
};
struct orphans {
	struct r4_vol *vol;
	uint64_t only_oid;	/* 0: every object */
	struct oref *v;
	size_t n, cap;
	struct r4_u64map named;
	struct r4_u64map links;	/* oid -> safe link type + 1 */
};

int fsc_read_copy(struct r4_vol *vol, uint64_t blk, int raw, uint8_t *buf,
		     struct r4_error *err);
void fsc_scan_free(struct fscan *s);
int fsc_scan_volume(struct r4_vol *vol, struct fscan *s,
		       struct r4_error *err);
void fsc_sort_scan(struct fscan *s);
int fsc_ranges_add(struct ranges *r, uint64_t off, uint64_t end);
uint64_t fsc_ranges_merge(struct ranges *r);
int fsc_piece_runs(struct r4_vol *vol, const struct fpiece *p,
		      uint64_t size, run_fn fn, void *ctx,
		      struct r4_error *err);
int fsc_describe(struct r4_vol *vol, struct fscan *s, size_t i,
		    struct r4_deleted *d, struct r4_error *err);
int fsc_is_live(struct r4_vol *vol, const struct fsd *sd,
		   struct r4_error *err);
int fsc_ccreg_recover(struct r4_vol *vol, const struct fscan *s,
		      const struct fsd *sd, cluster_fn fn, void *ctx,
		      cluster_fn found, void *fctx, struct r4_error *err);
int fsc_cluster_to_range(void *ctx, uint64_t off, const uint8_t *buf,
			    size_t len);
int fsc_orphans_report(struct r4_vol *vol, const struct fscan *s,
			  r4_deleted_fn fn, void *ctx, struct r4_error *err);
void fsc_orphans_fini(struct orphans *o);
int fsc_orphans_find(struct r4_vol *vol, struct orphans *o,
			struct r4_error *err);
int fsc_orphan_describe(struct r4_vol *vol, struct orphans *o,
			   const struct oref *v, const struct fscan *s,
			   struct r4_deleted *d, struct r4_error *err);

#endif
