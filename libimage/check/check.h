/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the read-only checker's internals (libimage/check).
 *
 * One struct chk carries the volume, the caller's options and report,
 * a map of the blocks found in use (chk_map, one bit per block, allocated
 * lazily per bitmap region), and compact tables of what the tree walk saw
 * for the object checks: stat data, directory entries and body ranges.
 * Nothing read from disk is trusted: every number is checked before use,
 * every problem is reported through chk_say() (say.h) and the walk goes on. */
#ifndef R4_LIBIMAGE_CHECK_CHECK_H
#define R4_LIBIMAGE_CHECK_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include "r4/check.h"
#include "libimage/check/say.h"
#include "libimage/vol/volume.h"
#include "format/key.h"
#include "format/node.h"
#include "format/plugin.h"

/* ---- the map of blocks in use (blockmap.c) ---- */

struct chk_map {
	uint64_t nbits;		/* volume blocks */
	uint64_t chunk_bits;	/* bits per chunk = bits per bitmap block */
	uint64_t nchunks;
	uint8_t **chunk;	/* NULL = all zero */
};

/* Three-word keys (a key's first elements, an oid and a position)
 * compared in order: -1, 0 or 1. */
static inline int chk_cmp3(uint64_t a0, uint64_t a1, uint64_t a2,
			   uint64_t b0, uint64_t b1, uint64_t b2)
{
	if (a0 != b0)
		return a0 < b0 ? -1 : 1;
	if (a1 != b1)
		return a1 < b1 ? -1 : 1;
	if (a2 != b2)
		return a2 < b2 ? -1 : 1;
	return 0;
}

int chk_map_init(struct chk_map *m, uint64_t nbits, uint64_t chunk_bits);
void chk_map_fini(struct chk_map *m);
int chk_map_test(const struct chk_map *m, uint64_t b);
/* Set bit b; returns its old value (0/1) or -ENOMEM. b < nbits. */
int chk_map_set(struct chk_map *m, uint64_t b);
void chk_map_clear(struct chk_map *m, uint64_t b);
/* The first set bit at or after b, or m->nbits when there is none:
 * chunks never set are skipped whole and set ones a word at a time, so
 * a walk over the set bits costs what the map holds, not the volume. */
uint64_t chk_map_next(const struct chk_map *m, uint64_t b);
/* Chunk k's bits (chunk_bits / 8 bytes, LSB first), NULL if all zero. */
static inline const uint8_t *chk_map_chunk(const struct chk_map *m,
					   uint64_t k)
{ return k < m->nchunks ? m->chunk[k] : NULL; }

/* ---- what the walk collects for the object checks ---- */

enum {
	CHK_OBJ_LW = 1,		/* has the light-weight extension */
	CHK_OBJ_SYMLINK = 2,	/* has the symlink extension */
	CHK_OBJ_REACHED = 4,
	CHK_OBJ_HAS_PARENT = 8,
	CHK_OBJ_CCREG = 16,		/* its plugin set names ccreg40 */
	CHK_OBJ_NAMED = 32		/* an entry other than "." and ".."
					 * names it (stream mode only) */
};

struct chk_obj {
	uint64_t el0, el1, el2;	/* stat-data key without the offset */
	uint64_t size;
	uint64_t blk;
	uint64_t nentries;	/* entries of this directory */
	uint32_t nlink;
	uint32_t links;		/* entries pointing to it */
	uint32_t parent;	/* obj index of the dir naming it (dirs) */
	uint32_t dotdot;	/* obj index ".." points to, or UINT32_MAX */
	uint16_t mode;
	uint16_t item;
	uint8_t flags;
	uint8_t ndot, ndotdot;
};

enum { CHK_ENT_DOT = 1, CHK_ENT_DOTDOT = 2 };

struct chk_ent {
	uint64_t dir;		/* directory oid (locality of the key) */
	uint64_t t0, t1, t2;	/* target stat-data key el[0..2] */
	uint64_t blk;
	uint32_t seq;		/* order found, for a stable sort */
	uint16_t item, unit;
	uint8_t flags;
};

enum { CHK_BODY_TAIL = 1, CHK_BODY_EXTENT = 2, CHK_BODY_CTAIL = 4 };

struct chk_body {
	uint64_t el0, el1, el2;	/* object: its stat-data key el[0..2] */
	uint64_t end;		/* file offset one past the last byte */
	uint64_t blk;
	uint16_t item;
	uint8_t kinds;
	uint64_t gap_at, gap_end;	/* the first break, [at, end) */
};

#define CHK_NONE UINT32_MAX

/* What the repair's object pass needs of one problem the bounded check
 * found (stream mode with chk.fixes_want: check/fixes.c): the pass
 * takes its changes from this list, which grows with the problems,
 * instead of the whole volume's tables (libimage/repair/objects.c).
 * Sorted, once the check is done, in the order the pass over the
 * tables plans them: entry changes by directory id and the order the
 * entries were found, "." and ".." added (key order), /lost+found
 * links (key order), then link counts and directory sizes (key order),
 * then file sizes (key order). */
enum {
	CHK_FIX_ENT_SET = 1,	/* entry (blk, item, unit) of directory el
				 * pointed at t */
	CHK_FIX_ENT_DEL,	/* that entry removed */
	CHK_FIX_DOT_ADD,	/* "." (val 0) or ".." (1) added, naming t */
	CHK_FIX_LOST,		/* an object nothing names: /lost+found */
	CHK_FIX_NLINK,		/* nlink to set to val (was old) */
	CHK_FIX_DIR_SIZE,	/* a directory's size to set to val */
	CHK_FIX_FILE_SIZE,	/* a file's size to set to val, the end
				 * of its body (of kinds) */
	CHK_FIX_DOTDOT,		/* a second ".." entry of directory rank
				 * until the parents are known (dropped
				 * when it is right) */
	CHK_FIX_MISSING,	/* a key t an entry names, no stat data
				 * has; and */
	CHK_FIX_UNNAMED		/* a stat data no entry names: both for
				 * chk.fixes_keys, then dropped */
};

struct chk_fix {
	uint64_t el0, el1, el2;	/* the object's or directory's key */
	uint64_t t0, t1, t2;	/* the target's */
	uint64_t val, old;
	uint64_t blk;		/* the entry's node */
	uint64_t order0;	/* entries: directory id; others: rank */
	uint32_t order1;	/* entries: order found */
	uint32_t idx;		/* order made */
	uint32_t rank, t;	/* CHK_FIX_DOTDOT: directory and target */
	int code;		/* enum r4_check_code */
	uint16_t item, unit;
	uint8_t kind;
	uint8_t isdir;
	uint8_t kinds;		/* CHK_FIX_FILE_SIZE: CHK_BODY_* */
};

#define CHK_OID_MASK 0x0fffffffffffffffULL

struct chk_oid {
	uint64_t oid;
	uint32_t idx;
};

/* ---- sorted runs of records (runs.c) ---- */

struct run_src;

struct chk_runs {
	size_t rsz;			/* record size */
	int (*cmp)(const void *, const void *);	/* NULL: keep order */
	/* Sorts n records in place by cmp (check/sort.h: cmp inlined);
	 * NULL: chk_sort with cmp. */
	void (*sort)(void *base, size_t n);
	uint8_t *buf;			/* up to cap records */
	size_t n, cap;
	int fd;				/* the spill file, -1 until needed */
	uint64_t fend;			/* bytes written */
	uint64_t *runs;			/* start of each run in the file */
	size_t nruns, caprun;
	uint64_t total, read;		/* records put, read since rewind */
	struct run_src *rd;
};

/* budget: bytes of records in memory before a run is written. */
int chk_runs_init(struct chk_runs *r, size_t rsz,
		  int (*cmp)(const void *, const void *), size_t budget);
/* The sorter of r's records (after chk_runs_init). */
void chk_runs_set_sort(struct chk_runs *r, void (*sort)(void *, size_t));
int chk_runs_put(struct chk_runs *r, const void *rec);
/* No more records: sort or merge them into one sequence, read from its
 * start with chk_runs_next (1 a record, 0 the end, or -errno). */
int chk_runs_finish(struct chk_runs *r);
int chk_runs_rewind(struct chk_runs *r);
int chk_runs_next(struct chk_runs *r, void *rec);
void chk_runs_free(struct chk_runs *r);

/* Bytes of records each sorter keeps in memory (a few are alive at
 * once). Two knobs for the tests, read from the environment by
 * r4_check: R4_CHECK_RUN_BYTES overrides the budget (1: a run per
 * record), R4_CHECK_TABLES makes r4_check use the in-memory tables, as
 * repair does, so the two passes can be compared. */
#define CHK_RUN_BUDGET (16u << 20)

/* ---- the checker ---- */

#define CHK_NAME_MAX 255	/* longest name a host can create */

/* Two tail40 items of one file side by side in leaf blk, the second
 * continuing the first (key a) up to file offset end. */
struct chk_tpair {
	struct fmt_key a;
	uint64_t end;
	uint64_t blk;
};

/* The walk's read-ahead (check/noderead.c): nodes of one level read
 * in one go, CHK_RA_BYTES at most (a twig points to about 80 leaves of
 * 4 KiB), file data between two of them read along up to CHK_RA_GAP
 * blocks. 0: none (on the Linux source tree the data read along was
 * 38% of the bytes read, and their copy out of the page cache cost
 * more than the reads it saved: bench/RESULTS.md §3; from a disk, not
 * cached, the kernel's own read-ahead reads about the same either way:
 * a tie in a reviewer's 15 runs). */
#define CHK_RA_BYTES (256u << 10)
#define CHK_RA_GAP 0
struct chk_ra {
	uint8_t *buf;		/* CHK_RA_BYTES; NULL until needed */
	uint64_t first;		/* the first block held */
	uint32_t n;		/* blocks held, 0: none */
	int off;		/* a row read failed: blocks alone from now */
};

/* Where a child's pointer is: item item of the parent node's bytes,
 * which has nr_items items. */
struct chk_rowsrc {
	const uint8_t *node;
	unsigned item, nr_items;
};

struct chk {
	struct r4_vol *vol;
	const struct r4_check_opts *opts;
	struct r4_check_report *rep;
	struct r4_error *err;
	uint32_t bs;
	uint64_t blocks;		/* sb block_count */
	uint64_t first_usable;
	uint64_t next_oid;		/* authoritative next oid */
	enum fmt_key_policy pol;
	struct chk_map used;
	/* Blocks whose first claim was an extent's (a node found later in
	 * one of them takes it: check/tree.c); cleared when a node does. */
	struct chk_map ext;
	uint64_t shared;		/* block-shared reports of extents */
	uint64_t shared_blocks;		/* their blocks, bounded work */
	uint64_t *backups;
	size_t nbackups;
	uint8_t *buf[FMT_TREE_HEIGHT_MAX + 2];	/* one per tree level */
	struct chk_ra ra[FMT_TREE_HEIGHT_MAX + 2];	/* one per level */
	uint8_t *scratch;			/* one block */
	uint32_t root_pset[FMT_PSET_COUNT];
	int root_pset_found;
	uint64_t tree_total;			/* progress estimate */

	struct chk_obj *objs;
	size_t nobjs, capobjs;
	struct chk_ent *ents;
	size_t nents, capents;
	struct chk_body *bodies;
	size_t nbodies, capbodies;
	/* Per entry of the sorted table: 1 when it is the second name of a
	 * directory (semantic.c, for the repair); NULL in stream mode. */
	uint8_t *second;
	/* The entry before, to find two of one name (they are neighbours
	 * in key order). */
	uint64_t prev_dir;
	size_t prev_len;		/* 0: none */
	uint8_t prev_name[CHK_NAME_MAX + 1];
	/* r4_check: stat data, entries and bodies go to sorted runs
	 * (stream.c) instead of the tables, which only repair keeps. */
	struct chk_stream *st;
	/* chk_item alone (the tree rebuild's item verifier): each table
	 * keeps its last record only, which is all the item checks read
	 * (a body's range merges with the one before it). */
	int items_only;
	unsigned paths_named;		/* chk_ccreg_path look-ups made */
	/* The largest object id or locality of a stat data (both passes,
	 * chk_sem_object): what the repair raises the next object id past
	 * without the tables. */
	uint64_t id_max;
	/* The keys of the first items of the unmerged tail40 pairs found
	 * (R4_CHK_TAIL_UNMERGED), in key order, for the repair. */
	struct chk_tpair *tunm;
	size_t ntunm, captunm;
	/* Stream mode: gather the object fixes' list (fixes_want, set
	 * by the repair), freed with the tables; fixes_lost: memory ran
	 * out for it, or its budget (opts.fix_bytes) did (the list is incomplete: the repair builds the
	 * tables instead). */
	int fixes_want, fixes_lost;
	/* A stat data no entry names differs in one element from a key
	 * an entry names and no stat data has: the repair's key pass
	 * (repair/keys.c, over the tables) may move it there. */
	int fixes_keys;
	/* Two regular files of tail bodies on the list whose sizes are
	 * off by opposite amounts (one body holds e bytes past its size,
	 * the other misses e): a boundary between the two may have moved,
	 * which the repair tells over the tables (repair/rebuild.c:
	 * rep_bounds_shifted) before it sets sizes. */
	int fixes_shift;
	struct chk_fix *fixes;
	size_t nfixes, capfixes;
	/* Stream mode with fixes_want, after a whole pass: every object in
	 * key order (the tables' order, the same one of two with one key
	 * first), kept for a tree rebuild that reads no tables
	 * (repair/rebuild_objs.c); freed with the tables, or alone by
	 * chk_ranked_free. */
	struct chk_runs ranked;
	int has_ranked;
};

/* Reports: chk_say() and its kin, libimage/check/say.h. */
void chk_progress(struct chk *c, const char *phase, uint64_t done,
		  uint64_t total);
/* What a block already in use is: "the reserved area", "a bitmap
 * block", "a backup block", "file data of an extent" or "a tree node". */
const char *chk_block_owner(const struct chk *c, uint64_t blk);
/* Whether blk is a bitmap block (these are not in the used map). */
int chk_is_bitmap_blk(const struct chk *c, uint64_t blk);
/* Escape a name for a message (\xHH for bytes < 0x20, 0x7f, '\'', '\\'). */
void chk_name_str(const uint8_t *name, size_t len, char *buf, size_t buflen);

/* The whole check into c (vol, opts, rep and err set, the rest zero),
 * keeping the map of blocks in use and the tables for the repair layer
 * (libimage/repair); chk_release frees them. r4_check = both. */
int chk_run(struct chk *c);
void chk_release(struct chk *c);
/* The tables (objects, entries, bodies and what is read with them)
 * freed, the map of blocks in use kept. */
void chk_tables_free(struct chk *c);
/* The objects kept in key order (chk.ranked) let go. */
void chk_ranked_free(struct chk *c);
/* Only the set-up of chk_run (map with the layout marked, buffers), for
 * a repair that checks items one by one with chk_item. */
int chk_setup(struct chk *c);

/* Phases. Each returns 0 or a negative operational error (I/O, memory);
 * problems in the data are reported, not returned. */
int chk_super(struct chk *c);
int chk_backups(struct chk *c);
int chk_tree(struct chk *c);
/* The bytes of node blk at level for the walk, into *out: from the
 * level's read-ahead window, else read with the row of blocks its
 * parent (s; NULL for the root) points to after it, else alone into
 * c->buf[level]. Valid until the next read at that level. 0 or a
 * negative error (c->err filled). chk_node_read_reset empties and
 * frees the windows. */
int chk_node_read(struct chk *c, unsigned level, uint64_t blk,
		  const struct chk_rowsrc *s, uint8_t **out);
void chk_node_read_reset(struct chk *c);
int chk_space(struct chk *c);
int chk_semantic(struct chk *c);
/* The object pass over sorted runs (stream.c, the phases in
 * stream_phases.c): the same problems, in the same order, as
 * chk_semantic over the tables, with memory bounded by the run budget
 * and the number of directories. chk_stream_start before the walk makes
 * the walk's records go to the runs. */
int chk_stream_start(struct chk *c);
int chk_stream_semantic(struct chk *c);
void chk_stream_free(struct chk *c);
/* The object pass's checks and messages, shared by both (semantic.c). */
int chk_is_dir(const struct chk_obj *o);
void chk_sem_dup(struct chk *c, const struct chk_obj *o);
void chk_sem_object(struct chk *c, const struct chk_obj *o);
void chk_sem_dir(struct chk *c, const struct chk_obj *o, int dotdot_wrong,
		 uint64_t dotdot_oid, uint64_t want_oid);
void chk_sem_links(struct chk *c, const struct chk_obj *o, int is_root);
void chk_sem_body(struct chk *c, const struct chk_body *b,
		  const struct chk_obj *o);
void chk_sem_size(struct chk *c, const struct chk_obj *o,
		  const struct chk_body *b);
void chk_sem_counts(struct chk *c, uint64_t nobjs,
		    const struct chk_obj *root);
/* Stage a record for the runs (tables.c calls these in stream mode). */
struct chk_obj *chk_stream_obj(struct chk *c);
struct chk_ent *chk_stream_ent(struct chk *c);
/* The body staged last (NULL: none), and a new one after it. */
struct chk_body *chk_stream_body_last(struct chk *c);
struct chk_body *chk_stream_body_new(struct chk *c);
/* The spill file's error after a NULL from these (0: out of memory). */
int chk_stream_error(const struct chk *c);
/* The clusters of a compressed file's body (check/cluster.c). */
int chk_obj_is_ccreg(const struct chk *c, const struct chk_obj *o);
void chk_ccreg_body(struct chk *c, const struct chk_body *b);
/* A ccreg40 file longer than one cluster in compression mode conv
 * (doc/compress.md §6): reported. */
void chk_ccreg_conv(struct chk *c, const struct chk_obj *o);

/* What the Reiser4 kernel cannot take in a compressed file's items
 * (doc/compress.md §6): one call of fn per finding, in key order. */
enum {
	CHK_CCREG_HOLE0 = 1,	/* the first item lies past cluster 0 */
	CHK_CCREG_UNMERGED,	/* it continues the item before it in its
				 * leaf inside one disk cluster */
	CHK_CCREG_CROSS		/* it runs across its cluster's end */
};
struct r4_objref;
struct chk_ccreg_flaw {
	int kind;
	uint64_t off;		/* the item's key offset */
	size_t units;
	uint64_t blk;		/* its leaf and position there */
	unsigned pos;
	unsigned shift;		/* its shift byte */
	uint64_t prev_off;	/* CHK_CCREG_UNMERGED: the item before */
	size_t prev_units;
};
typedef int (*chk_ccreg_flaw_fn)(void *ctx, const struct chk_ccreg_flaw *f);
/* Over the ctail40 items of ref's body (shift: the file's, size its
 * size); stops at the first item of another kind. A non-zero return of
 * fn stops the walk and is returned. */
int chk_ccreg_layout(struct r4_vol *vol, const struct r4_objref *ref,
		     unsigned shift, uint64_t size, chk_ccreg_flaw_fn fn,
		     void *ctx, struct r4_error *err);
/* A path of ref for a message ("" when none is found going up from the
 * directory its locality names; at most a bounded number of look-ups
 * per check), names escaped. */
void chk_ccreg_path(struct chk *c, const struct r4_objref *ref, char *out,
		 size_t n);

/* Per-item checks of the walk (items.c). For a nodeptr, *child gets the
 * child block (0 when the item is broken). *last gets the largest key
 * the item covers. */
int chk_item(struct chk *c, uint64_t blk, unsigned i,
	     const struct fmt_item_header *ih, const uint8_t *body,
	     size_t len, uint64_t *child, struct fmt_key *last);

/* Extent item checks (extent.c): units against the volume, marking the
 * blocks of allocated units used; *end = file offset past the item (0
 * when the item is unusable). 0 or -ENOMEM. */
int chk_extent_item(struct chk *c, uint64_t blk, unsigned i,
		    const struct fmt_key *key, const uint8_t *body,
		    size_t len, uint64_t *end);

/* A new zeroed fix on the list (fixes.c), or NULL: out of memory or
 * past the budget (and fixes_lost set). */
struct chk_fix *chk_fix_add(struct chk *c, int kind, int code);
/* Table growth (tables.c): a new zeroed slot or NULL (-ENOMEM). */
struct chk_obj *chk_obj_add(struct chk *c);
struct chk_ent *chk_ent_add(struct chk *c);
int chk_body_add(struct chk *c, const struct fmt_key *k, uint64_t end,
		 unsigned kind, uint64_t blk, unsigned item);

/* Sort the tables (tables.c): objects by key, entries by directory oid
 * (then in the order found), bodies by object. */
void chk_tables_sort(struct chk *c);
/* Index of the object with this stat-data key (el[0..2]), or CHK_NONE. */
uint32_t chk_obj_find(const struct chk *c, uint64_t el0, uint64_t el1,
		      uint64_t el2);
/* Objects by oid (malloc'ed, nobjs entries) and a lookup in it. */
struct chk_oid *chk_oid_index(const struct chk *c);
uint32_t chk_oid_find(const struct chk *c, const struct chk_oid *idx,
		      uint64_t oid);
/* The body of the object with this stat-data key, NULL if none. */
const struct chk_body *chk_body_find(const struct chk *c, uint64_t el0,
				     uint64_t el1, uint64_t el2);
/* Whether regular file i's size disagrees with its body as the kernel
 * reads it (semantic.c); *end = the body's end (0 without body). */
int chk_file_size_wrong(const struct chk *c, uint32_t i, uint64_t *end);
/* The same for object o and its body b (NULL: none). */
int chk_size_wrong(const struct chk *c, const struct chk_obj *o,
		   const struct chk_body *b, uint64_t *end);
/* First entry of directory dir in the sorted entries (nents if none). */
size_t chk_ent_first(const struct chk *c, uint64_t dir);

/* Names of directories (dirgraph.c): an entry in directory d naming
 * directory t (not "." nor ".."), d and t nodes below n. */
struct chk_dedge {
	uint32_t d, t;
};
/* first[v] (n of them): the edge that is directory v's one name, or
 * CHK_NONE (the root, a directory no edge names, the top of a part the
 * root does not reach). dotdot[v]: the node v's ".." names, or CHK_NONE.
 * Edges in key order. own (may be NULL) breaks a tie between two names
 * (1: edge i's key was made from the directory's own name). Every other edge naming a directory is a second
 * name. 0 or -ENOMEM. */
int chk_dir_names(uint32_t n, uint32_t root, const uint32_t *dotdot,
		  const struct chk_dedge *e, size_t ne,
		  int (*own)(void *ctx, size_t i), void *ctx, uint32_t *first);
/* own(ctx, i) for both passes: whether entry e's key ordering is that of
 * directory o's own key (the name o was made with). */
int chk_ent_own_name(struct chk *c, const struct chk_ent *e,
		     const struct chk_obj *o);
/* Whether t is d or above d through first names (within CHK_ABOVE_MAX
 * levels): an edge in d naming t closes a loop. */
#define CHK_ABOVE_MAX 4096u
int chk_dir_above(uint32_t n, const uint32_t *first,
		  const struct chk_dedge *e, uint32_t t, uint32_t d);
/* The message of a second name (both passes). */
void chk_second_name(struct chk *c, const struct chk_ent *e, int root,
		     int above);

#endif
