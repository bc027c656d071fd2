/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: what the two halves of the streaming object pass share
 * (libimage/check only): stream.c gathers the walk's records into
 * sorted runs and joins them (passes A and B); stream_phases.c runs the
 * semantic phases over what the joins built. The order of the phases
 * and what each reads: stream.c's opening comment. */
#ifndef R4_LIBIMAGE_CHECK_STREAM_INT_H
#define R4_LIBIMAGE_CHECK_STREAM_INT_H

#include <stddef.h>
#include <stdint.h>
#include "libimage/check/check.h"

/* An entry with its target: rank in key order (CHK_NONE: no object has
 * the key) and whether it is a directory. */
struct tent {
	struct chk_ent e;
	uint32_t t;
	uint8_t tdir;
};

struct dup {			/* a second stat data of an id, at p */
	uint64_t p;
	struct chk_obj o;
};

struct first {			/* the first object of an id */
	uint64_t oid;
	uint32_t rank;
	uint8_t dir;
};

struct reach {			/* a name of t in directory dir */
	uint32_t t;
	uint64_t dir;
};

struct dirrow {
	struct chk_obj o;	/* nentries, ndot, ndotdot, parent, dotdot */
	uint32_t rank;
	uint64_t dotdot_oid, parent_oid;
	/* For the object fixes' list (fixes.c): the flags of its entries,
	 * and its first ".." entry (has_dd), its place and target. */
	uint8_t dots, has_dd;
	uint16_t dd_item, dd_unit;
	uint32_t dd_seq, dd_t;
	uint64_t dd_blk;
};

struct edge {			/* a directory named in directory dir */
	uint64_t dir;
	uint32_t t;
};

/* The walk's side: the sorters and the record staged in each. */
struct chk_stream {
	size_t budget;
	int rc;				/* first spill error */
	struct chk_runs objs, ents, bodies;
	struct chk_obj sobj;
	struct chk_ent sent;
	struct chk_body sbody;
	int has_obj, has_ent, has_body;
	uint32_t seq;
};

/* What the pass builds. */
struct pass {
	struct chk *c;
	struct chk_stream *st;
	uint64_t n;			/* objects */
	uint32_t root;
	struct chk_obj rootobj;
	struct chk_runs ranked;		/* objects in key order, links set */
	struct chk_runs tents;		/* entries by directory */
	struct chk_runs byoid, dups, firsts, reaches;
	struct dirrow *dirs;
	size_t ndirs, capdirs;
	struct edge *edges;
	size_t nedges, capedges;
	struct chk_dedge *names;	/* entries naming a directory */
	struct chk_ent *nents;		/* and those entries */
	size_t nnames, capnames, capnents;
	uint64_t *reached;		/* oids of the reached directories */
	size_t nreached, capreached;
};

/* Runs of records with one key (objects or bodies) from a sequence. */
struct group {
	struct chk_runs *r;
	size_t rsz;
	uint8_t *rec;		/* m records */
	size_t m, cap;
	uint8_t *next;		/* the record after the group */
	int has_next;
	uint64_t first;		/* index of rec[0] in the sequence */
};

/* Objects and bodies begin with their key el[0..2]: compare those. */
int chk_stream_key_cmp(const void *a, const void *b);
/* Where the tables' binary search over n sorted rows lands when rows
 * a..b hold the key sought (chk_obj_find, chk_body_find). */
uint64_t chk_stream_pick(uint64_t n, uint64_t a, uint64_t b);
/* Read the sequence r (rewound) in groups of one key: init, then next
 * (1, 0 at the end, or -errno) until 0; fini frees. next may move
 * g->rec: a pointer into the group is good until the next call. */
int chk_stream_group_init(struct group *g, struct chk_runs *r);
int chk_stream_group_next(struct group *g);
void chk_stream_group_fini(struct group *g);
/* Phases 1 to 6 and the counters (stream_phases.c), after the joins. */
int chk_stream_phases(struct pass *p);
/* The row of the directory of rank rank, or NULL (stream_phases.c). */
struct dirrow *chk_stream_dir_find(struct pass *p, uint32_t rank);

/* The object fixes' list (check.h: struct chk_fix; fixes.c), made when
 * c->fixes_want: entry te of directory dr (rank d) as phase 2 meets it;
 * the ".." entries and the "." and ".." missing once the parents are
 * known (after phase_names); object o of rank r (d: its row when it is
 * a directory) in phase 4; and the list sorted at the end. */
void chk_fix_entry(struct pass *p, const struct tent *te, uint32_t d,
		   struct dirrow *dr);
/* An entry other than "." and ".." whose key no stat data has. */
void chk_fix_missing(struct pass *p, const struct chk_ent *e);
/* Entry e of directory dr, a second name of a directory: removed (the
 * first name stays, check/dirgraph.c). */
void chk_fix_second(struct pass *p, const struct chk_ent *e,
		    const struct dirrow *dr);
void chk_fix_dirs(struct pass *p);
void chk_fix_links(struct pass *p, const struct chk_obj *o, uint32_t r,
		   const struct dirrow *d);
/* Object o and its body b (NULL: none) in phase 6, in key order. */
void chk_fix_size(struct chk *c, const struct chk_obj *o,
		  const struct chk_body *b);
void chk_fix_sort(struct chk *c);

#endif
