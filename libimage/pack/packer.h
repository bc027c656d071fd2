/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: internals of the one-pass volume packer (r4_pack_*).
 *
 * ns.c     the namespace: objects, names, paths, replacement, links
 * data.c   block allocation, the image write buffer, file data (extents
 *          written or copied into place, tails spooled), data readers
 * spx.c    streamed extent data, spooled until the tree reaches it
 * spool.c  the spool: memory up to a budget, then a file
 * nodes.c  the tree, built bottom-up: leaves, twigs, upper levels
 * items.c  object ids, then every item in key order into the tree
 * packer.c  the public calls, the temporary file, sizes, fixed blocks
 *
 * Data area: blocks are handed out in increasing order from the first
 * usable block, skipping every position that is a bitmap block (k *
 * 32736) or could be a backup block for some volume size, so where data
 * goes does not depend on the final size. */
#ifndef R4_LIBIMAGE_PACK_PACKER_H
#define R4_LIBIMAGE_PACK_PACKER_H

#include <stddef.h>
#include <stdint.h>
#include "r4/pack.h"
#include "libimage/mkfs/fixed.h"
#include "libimage/obj/encode.h"
#include "libimage/util/workq.h"
#include "format/node.h"

#define PACK_WBUF_BLOCKS 256
#define PACK_WQ_BUFS 8		/* write buffers while writing behind */
#define PACK_WQ_JOBS 32	/* jobs waiting (buffers and copies) */
#define PACK_COPY_BUF (1u << 20)	/* copying without copy_file_range */
/* Tail files' bytes in the source file (BD_AT) are read at finish a run
 * at a time: the files whose bodies come next that lie one after
 * another in it (a tar file keeps a folder's small files together, a
 * header and padding apart), up to this many bytes in one read */
#define PACK_AT_WIN (256u << 10)
#define PACK_AT_GAP 4096u	/* bytes between two files of a run */
#define PACK_CBATCH 64		/* copies handed over at a time, */
#define PACK_CBATCH_BYTES (16u << 20)	/* or bytes */
#define PACK_ATTR_CHUNK 4096u	/* distinct attributes a chunk */
/* Names held in memory before new ones spill (pack/spill.c); the test
 * knob R4_PACK_SPILL_AFTER overrides it (0: spill from the first), and
 * R4_PACK_RUN_BYTES the bytes of records gathered before a run. */
#define PACK_SPILL_AFTER (1u << 18)
#define PACK_SPILL_BUDGET (16u << 20)
/* Nodes above the leaves kept in memory (pack/upper.c); the rest wait
 * in a temporary file in $TMPDIR (one a ~2,400 empty files) */
#define PACK_UPPER_MEM 1024u

enum bdata_kind {
	BD_NONE,	/* size 0, or not a regular file */
	BD_SPOOL,	/* tail bytes in the spool file */
	BD_EXTENTS,	/* streamed into the image: ext[] */
	BD_DEFERRED,	/* read through the data source at finish */
	BD_ATX,		/* extent bytes at spool_off of the source file
			 * (b->src), copied when the tree reaches the file
			 * (in key order, as BD_DEFERRED data is read) */
	BD_AT,		/* tail bytes at spool_off of the source file
			 * (b->src), read from there at finish */
	BD_SPX		/* streamed extent bytes in the spool from
			 * spool_off, each block the data touched padded
			 * to a block, in file order; ext maps them (start
			 * PACK_SPX_DATA: a run of such blocks, 0: a hole)
			 * until the tree reaches the file, then they are
			 * copied into place as BD_ATX data is */
};

/* The start of a BD_SPX map unit of data blocks (block 1 is never a
 * data block: it is before the first usable one). */
#define PACK_SPX_DATA 1

struct bent;
struct bdir;
struct breg;

/* An object, 48 bytes: what every object needs; what only some have
 * hangs off u (carved from the build's chunks like the object). Kept
 * small: the packer holds one per file (issue 11). Its attributes are
 * an index into the build's table of distinct ones (obj_attr): most
 * files of an archive share mode, owner and times. */
struct bobj {
	uint8_t type;			/* enum r4_entry_type, never
					 * R4_ENT_HARDLINK */
	uint8_t tails;			/* regular files: as tails */
	uint8_t data;			/* enum bdata_kind */
	uint8_t ccreg;			/* CCREG_*: pack/ccreg.c */
	uint8_t spilled;		/* read back from the spill for one
					 * directory, or being spilled */
	uint32_t nlink;			/* assigned at finish */
	uint32_t attr;			/* obj_attr(): the table's index */
	uint64_t size;
	/* assigned at finish; locality and ordering come from the
	 * primary name (obj_locality, pack_obj_ordering) */
	uint64_t oid;
	struct bent *primary;		/* the name whose key places the SD */
	union {
		struct bdir *sub;	/* directories */
		struct breg *reg;	/* regular files of size > 0 */
		char *target;		/* symlinks */
		uint32_t rdev;		/* devices */
	} u;
};

/* Where a regular file's data is (size > 0 only). */
struct breg {
	uint64_t spool_off;		/* BD_AT, BD_ATX: the offset in b->src */
	struct enc_units ext;		/* extents (start 0: a hole) */
	uint64_t sd_leaf;		/* deferred extents: where its SD's */
	uint32_t sd_off;		/* bytes field is, to patch */
	/* compressed files: ccreg_len = disk cluster lengths of spooled
	 * data (0: hole); ccreg_used = clusters with items */
	uint32_t *ccreg_len;
	uint64_t ccreg_used;
	size_t ccreg_job;			/* deferred: 1 + its job, 0 none */
	struct breg *next;		/* every one made, to free */
};

/* What only a directory has. */
struct bdir {
	struct bent **kids;
	size_t nkids, capkids;
	/* its names by hash (until finish sorts kids): open addressing,
	 * at most 3/4 used; a slot is the name's 32-bit hash << 32 | 1 +
	 * its index in kids, 0 free. One small table a directory: a run of
	 * entries in one directory looks in a table already in cache */
	uint64_t *ht;
	uint32_t htcap;
	uint32_t nsubdirs;
	uint64_t entries, ebytes;	/* counted at finish */
	struct bobj *qnext;		/* finish: directory queue */
	struct bdir *next;		/* every one made, to free */
	uint32_t no;			/* its number: dirv[no] */
	uint64_t first_oid;		/* the oid its first placed name got
					 * (or would have) */
	uint64_t nspilled;		/* names of it in the spill */
};

enum { CCREG_NO = 0, CCREG_YES = 1, CCREG_CONVERTED = 2 };

/* A name, 14 bytes and the name. */
struct bent {
	struct bobj *obj;
	uint32_t dir;			/* the directory holding the name:
					 * its number (ent_dir) */
	uint16_t len;
	char name[];			/* NUL terminated */
};

/* Chunks that objects and names are carved from. */
struct parena {
	void *head;			/* the newest (chunks chain) */
	size_t used, cap;
};

/* A spilled name and its object (pack/spill.c), 56 bytes, then the
 * extent units (next of them), the name (nlen bytes), a symlink's
 * target (size bytes); padded to 8 bytes. */
struct pack_srec {
	uint64_t h;			/* pack_spill_hash(dir, name) */
	uint64_t seq;			/* order of arrival */
	uint64_t size;
	uint64_t aux;			/* spool offset (tails), or rdev */
	uint32_t dir, attr;
	uint32_t len;			/* bytes of the record */
	uint32_t next;
	uint16_t nlen;
	uint8_t type, tails, data, pad[3];
};

static inline const struct fmt_extent40_unit *
pack_srec_units(const struct pack_srec *h)
{
	return (const struct fmt_extent40_unit *)(const void *)(h + 1);
}

static inline const char *pack_srec_name(const struct pack_srec *h)
{
	return (const char *)(h + 1) + h->next *
	       sizeof(struct fmt_extent40_unit);
}

struct pack_spill;

/* A block run being written out in one go. */
struct wbuf {
	uint64_t start;
	size_t n;
	uint8_t *buf;			/* PACK_WBUF_BLOCKS blocks */
};

/* Spool bytes waiting to be written (wr), or read back (rd). */
struct sbuf {
	uint64_t start;
	size_t n;
	uint8_t *buf;			/* PACK_WBUF_BLOCKS blocks */
};

/* A copy: len bytes from byte soff of the source file to byte off of
 * the image, for the file 'what' (named when it fails); a last partial
 * block is filled up with zeros. */
struct copy1 {
	uint64_t off, soff, len;
	char *what;
};

/* Copies handed to the writer together (one wake-up for many files). */
struct cbatch {
	struct io_dev *dev, *src;
	int punch;			/* src is the spool: each range
					 * copied is given back (io_punch) */
	const uint8_t *mem;		/* the spool's memory (punch): its
					 * first mem_cap bytes are there */
	uint64_t mem_cap;
	uint32_t bs;
	int zeroed;			/* dev is a file this build created:
					 * bytes never written read as zeros,
					 * so a last partial block is copied
					 * as it is, its rest left unwritten */
	size_t n;
	uint64_t bytes;
	struct copy1 c[PACK_CBATCH];
};

/* Writing behind: full buffers go to a writer thread, in order; and
 * batches of copies (buf NULL, cb set; freed by the writer). The job
 * keeps its outcome until the packer takes it back. */
struct wq;
struct wjob {
	struct workq_item wi;
	struct wq *q;
	struct io_dev *dev;
	uint8_t *buf;
	size_t len;
	uint64_t off;
	struct cbatch *cb;
	int rc;
	struct r4_error err;
};

struct wq {
	struct workq *pool;		/* one writer thread (util/workq.h) */
	int on;
	struct wjob job[PACK_WQ_JOBS];
	size_t head, n;			/* jobs handed over, not taken back */
	int wfail;			/* the writer's: a job failed, the
					 * rest are only given back */
	/* copies: 1 once copy_file_range could not (then read and write
	 * through bounce, PACK_COPY_BUF bytes, for the rest of the build);
	 * touched by the thread running the copies only */
	int nocopy;
	uint8_t *bounce;
	struct cbatch *cur;		/* copies not handed over yet */
	uint8_t *free[PACK_WQ_BUFS];
	size_t nfree;
	int rc;				/* the first failure, sticky */
	struct r4_error err;
};

/* One open node per level while the tree is built. */
struct blevel {
	uint8_t *node;
	int open;
	uint64_t blk;
	struct fmt_key first;
	uint64_t count;			/* nodes made at this level */
	/* the header of an empty node of this level (hlen bytes, 0: not
	 * made yet): a node opens over the bytes of the one before it,
	 * whose unused middle is zeroed when it closes (nodes.c) */
	uint8_t head[FMT_NODE41_HEADER_SIZE];
	size_t hlen;
};

struct r4_pack {
	struct mkfs m;
	struct r4_pack_opts o;
	char *target, *tmp;		/* final and temporary path */
	int in_place;			/* block device or window (a
					 * partition): no temporary file */
	struct io_dev *spool;
	char *spool_path;
	uint64_t spool_len;
	uint64_t spx_blocks;		/* data blocks spooled (BD_SPX), all
					 * files */
	uint64_t spx_copied;		/* of them, bytes handed to the copy */
	uint8_t *smem;			/* the spool's first smem_cap bytes
					 * (an anonymous mapping; the file
					 * holds the rest, at the same
					 * offsets); NULL until first used */
	uint64_t smem_cap;
	uint64_t smem_pop;		/* bytes of it populated ahead */
	int smem_tried;
	uint32_t bs;
	enum fmt_key_policy pol;
	int failed;
	/* namespace */
	struct bobj *root;
	size_t hcount;			/* names in memory */
	/* the distinct attributes (mode, owner, times as stored), in
	 * chunks of PACK_ATTR_CHUNK (no slack, nothing copied as they
	 * grow), found through ahtab (open addressing, at most half used:
	 * 1 + index, 0 free) */
	struct enc_attr **attrc;
	size_t nattr, capattrc;
	uint32_t *ahtab;
	size_t ahsize;
	struct breg *regs;		/* every struct breg (newest first) */
	struct bdir *subs;		/* every struct bdir */
	struct bobj **dirv;		/* every directory by number */
	size_t ndirv, capdirv;
	/* objects that lost a name to a later entry for its path: those
	 * no name refers to at finish give their blocks back */
	struct bobj **gone;
	size_t ngone, capgone;
	/* objects, names and directory parts are carved from chunks
	 * (freed together): no allocator overhead per object and name */
	struct parena ar;
	/* the spill: names past spill_after (pack/spill.c); far holds a
	 * name being spilled, or one directory's names read back */
	struct pack_spill *spill;
	size_t spill_after, spill_budget;
	int spill_rc;			/* a failure while looking up */
	struct parena far;
	struct enc_units spext;		/* units kept for the next one */
	uint32_t sp_dir;		/* the name being spilled */
	const char *sp_name, *sp_path;
	size_t sp_nlen;
	uint8_t *sdbuf;			/* one directory's records */
	size_t sdcap;
	/* the directories the last path went through: component k ends
	 * at wc_end[k] of wc_path, in directory wc_dir[k] */
	char *wc_path;
	size_t wc_cap, wc_n, wc_kcap, wc_dcap, *wc_end;
	struct bobj **wc_dir;
	/* a walk stopped by a name on the way that is not a directory:
	 * where that name ends in the path, and its type */
	size_t wk_bad;
	int wk_bad_type;
	/* what the last r4_pack_probe found (for path pr_path: the
	 * directory, where the last name starts, its length, its entry or
	 * NULL), pr_ok until the next pack_ns_add, which uses it when it
	 * adds that path: only an add changes what a probe finds (a name
	 * a lookup takes back from the spill was there all along) */
	int pr_ok;
	char *pr_path;
	size_t pr_cap, pr_off, pr_n;
	struct bobj *pr_dir;
	struct bent *pr_old;
	/* space */
	uint64_t limit;			/* fixed size: blocks; 0 = auto */
	uint64_t cursor;		/* next block to hand out */
	uint64_t hi;			/* one past the highest block used */
	uint8_t *used;			/* one bit per block */
	uint64_t used_cap;		/* bits */
	uint64_t allocated;
	uint64_t cand[128];		/* possible backup positions */
	size_t ncand;
	struct wbuf wb;
	struct sbuf swr, srd;		/* spool write buffer, read window */
	/* the source file of entries whose data lies in it as it is
	 * (r4_entry.data_file): a duplicate of the descriptor src_fd of
	 * the first one; NULL none yet; src_fd -2 when it could not be
	 * had (then every entry's data is read) */
	struct io_dev *src;
	int src_fd;
	uint8_t *atwin;			/* PACK_AT_WIN: BD_AT bytes read */
	uint64_t atwin_off, atwin_len;	/* from where in src, how many */
	/* finish: the names of the folder whose bodies come after the
	 * one being emitted, in that order (a run to read ahead) */
	struct bent *const *ahead;
	size_t nahead;
	uint64_t direct_bytes;		/* data taken from src directly */
	int placing;			/* finish places the tree: data
					 * taken now goes straight into the
					 * image, not into the spool */
	struct wq wq;
	/* tree */
	struct blevel lv[FMT_NODE_MAX_LEVEL + 1];
	unsigned top;			/* highest level opened */
	uint64_t *leafblk;		/* block of each leaf, in order */
	size_t capleaf;
	/* nodes above the leaves, kept until the end (upper.c) */
	uint8_t **inode;		/* NULL: past PACK_UPPER_MEM, in upfd */
	uint8_t *ilevel;
	size_t ninodes, capinodes;
	int upfd;			/* 1 + the fd of the upper nodes'
					 * temporary file, 0 none yet */
	uint64_t res_start, res_len;	/* the area saved for them */
	/* results */
	uint64_t next_oid, files, dirs, bytes, data_blocks;
	uint64_t nodes, leaves, twigs;
	uint64_t done_bytes, total_bytes;
	uint8_t *scratch;		/* 64 KiB for item bodies and data */
	/* finish, one directory at a time (items.c): its entries, and the
	 * ordering of each child's keys */
	struct fmt_cde40_entry *ebuf;
	size_t ebufcap;
	uint64_t *obuf;
	size_t obufcap;
	struct pack_ccreg *ccreg;	/* create=ccreg40: pack/ccreg.c */
};

/* nsobj.c: the parts ns.c builds names from. */
struct bent *pack_lookup_mem(struct r4_pack *b, const struct bobj *dir,
			       const char *s, size_t n);
void *pack_parena_get(struct parena *a, size_t n);
void pack_parena_free(struct parena *a);
void pack_parena_reset(struct parena *a);
struct bobj *pack_new_obj(struct r4_pack *b, enum r4_entry_type type);
int pack_add_kid(struct bobj *dir, struct bent *e);
struct bent *pack_new_ent(struct r4_pack *b, struct bobj *dir,
			    const char *s, size_t n, struct bobj *obj);
int pack_attr_set(struct r4_pack *b, struct bobj *o,
		    const struct enc_attr *a);
int pack_implicit_dir(struct r4_pack *b, struct bobj *o, uint32_t uid,
			uint32_t gid);
/* ns.c */
int pack_ns_init(struct r4_pack *b, struct r4_error *err);
void pack_ns_fini(struct r4_pack *b);
/* Add an entry; *obj receives the regular file's object when its data
 * is to be taken now (NULL otherwise). */
int pack_ns_add(struct r4_pack *b, const struct r4_entry *e, struct bobj **obj,
	   struct r4_error *err);
/* A regular file spilled once its data is taken (o->spilled): write
 * its record (ok), or only forget it (!ok, the take failed). */
int pack_ns_spill_done(struct r4_pack *b, struct bobj *o, int ok,
		       struct r4_error *err);
/* At finish: d's spilled names appended to its children (*nmem: how
 * many it had), and taken out again. */
int pack_ns_dir_load(struct r4_pack *b, struct bobj *d, size_t *nmem,
		     struct r4_error *err);
void pack_ns_dir_unload(struct r4_pack *b, struct bobj *d, size_t nmem);
/* No name is looked up or added any more (finish reorders the
 * directories' children): the tables that found them are freed. */
void pack_ns_seal(struct r4_pack *b);
/* "a/b/c" of a name into buf. */
const char *pack_ns_path(const struct r4_pack *b, const struct bent *e,
			 char *buf, size_t len);
const char *pack_ns_obj_path(const struct r4_pack *b, const struct bobj *o,
			     char *buf, size_t len);
/* Once every object named is placed (oids assigned): the objects that
 * lost their last name to a replacement give their data blocks back. */
void pack_ns_release(struct r4_pack *b);
/* The directory holding a name. */
static inline struct bobj *ent_dir(const struct r4_pack *b,
				   const struct bent *e)
{
	return b->dirv[e->dir];
}
/* An object's attributes. */
static inline const struct enc_attr *obj_attr(const struct r4_pack *b,
					      const struct bobj *o)
{
	return &b->attrc[o->attr / PACK_ATTR_CHUNK]
			[o->attr % PACK_ATTR_CHUNK];
}
/* The locality of an object placed at finish (its primary name's
 * directory). */
static inline uint64_t obj_locality(const struct r4_pack *b,
				    const struct bobj *o)
{
	return o == b->root ? FMT_ROOT_LOCALITY : ent_dir(b, o->primary)->oid;
}

/* data.c */
int pack_space_setup(struct r4_pack *b, struct r4_error *err);
/* Hand out one block, or up to 'want' contiguous ones (*got). */
/* R4_ENOSPC: a fixed-size volume cannot hold the source. */
int pack_full(const struct r4_pack *b, struct r4_error *err);
int pack_alloc_run(struct r4_pack *b, uint64_t want, uint64_t *start,
	      uint64_t *got, struct r4_error *err);
/* Save k blocks in a row for the upper nodes (not marked used yet). */
void pack_alloc_reserve_area(struct r4_pack *b, uint64_t k);
int pack_alloc_mark(struct r4_pack *b, uint64_t start, uint64_t n,
	       struct r4_error *err);
/* Give back n blocks from start handed out before (they stay behind
 * the cursor: not handed out again, simply free in the bitmap). */
void pack_alloc_free(struct r4_pack *b, uint64_t start, uint64_t n);
int pack_img_write(struct r4_pack *b, uint64_t blk, const uint8_t *data,
	      struct r4_error *err);
/* Write out the buffered blocks (and wait for them when writing
 * behind). */
int pack_img_flush(struct r4_pack *b, struct r4_error *err);
/* Write behind on another thread from now on, until pack_async_end(),
 * which waits for every write and gives the first failure. Every begin
 * needs its end before the build is freed. */
int pack_async_begin(struct r4_pack *b, struct r4_error *err);
/* Wait for the writes handed over so far (before reading the image). */
int pack_img_wait(struct r4_pack *b, struct r4_error *err);
int pack_async_end(struct r4_pack *b, struct r4_error *err);
/* Write out the spool buffer before tails are read back. */
int pack_spool_seal(struct r4_pack *b, struct r4_error *err);
/* Free the spool buffers (called from pack_tree_fini). */
void pack_spool_fini(struct r4_pack *b);
static inline int used_test(const struct r4_pack *b, uint64_t blk)
{
	return blk < b->used_cap && ((b->used[blk >> 3] >> (blk & 7)) & 1);
}
/* Take a file's data from fn: tails into the spool; extents into the
 * spool too (BD_SPX) while entries are added, into the image once
 * finish places the tree (b->placing). */
int pack_data_take(struct r4_pack *b, struct bobj *o, r4_data_fn fn, void *ctx,
	      const char *path, struct r4_error *err);
/* Take it from where it lies in the source file (e->data_file): extents
 * copied by the writer (copy_file_range), tails read at finish. 1: not
 * taken (no source file to be had, or a compressed file): use
 * pack_data_take. */
int pack_data_take_at(struct r4_pack *b, struct bobj *o,
		      const struct r4_entry *e, struct r4_error *err);
/* Close the source file (packer_free). */
void pack_src_fini(struct r4_pack *b);
/* Reading a tail file's bytes in order while leaves are packed. */
struct tailrd {
	struct r4_pack *b;
	struct bobj *o;
	uint64_t pos;
	r4_data_fn fn;			/* deferred */
	void *ctx;
	uint64_t coff;
	const uint8_t *cbuf;
	size_t clen;
	int eof;
	const char *path;
};
int pack_tail_open(struct r4_pack *b, struct bobj *o, const char *path,
	      struct tailrd *t, struct r4_error *err);
int pack_tail_read(struct tailrd *t, uint8_t *dst, size_t n,
	      struct r4_error *err);
void pack_tail_close(struct tailrd *t);
/* Copy len bytes from byte soff of src (the source file or the spool)
 * to byte off of the image: at once, or gathered for the writer. */
int pack_copy_submit(struct r4_pack *b, struct io_dev *src, uint64_t off,
		     uint64_t soff, uint64_t len, const char *what,
		     struct r4_error *err);
/* spx.c: a streamed file's extent data into the spool (BD_SPX), from a
 * block boundary, so that each run is copied into place whole (and can
 * be shared, where the file system shares blocks). */
int pack_data_take_spx(struct r4_pack *b, struct bobj *o, r4_data_fn fn,
		       void *ctx, const char *path, struct r4_error *err);
/* The copy phase's last event (done == total), once every file is
 * placed: the spooled blocks of a member replaced later are counted in
 * the total but never copied. */
void pack_spx_done(struct r4_pack *b);
/* A BD_SPX file's extents, copied from the spool now (emit order). */
int pack_data_spx_extents(struct r4_pack *b, struct bobj *o,
			  const char *path, struct r4_error *err);
/* Deferred extents: read the file now, writing its blocks. */
/* A BD_ATX file's extents, copied from b->src now (emit order). */
int pack_data_atx_extents(struct r4_pack *b, struct bobj *o,
			  const char *path, struct r4_error *err);
int pack_data_deferred_extents(struct r4_pack *b, struct bobj *o,
			  const char *path, struct r4_error *err);
/* spool.c: append len bytes to the spool (zeros when p is NULL). */
int pack_spool_put(struct r4_pack *b, const void *p, uint64_t len,
		   struct r4_error *err);
/* Read n spool bytes at off. */
int pack_spool_get(struct r4_pack *b, uint8_t *dst, size_t n, uint64_t off,
		   struct r4_error *err);
/* The part of copy c that lies in the spool's memory, written into
 * place from there (whole blocks: the spool pads them) and given back;
 * *done: the bytes of c it covered (0: all in the file). */
int pack_spool_copy_mem(const struct cbatch *cb, const struct copy1 *c,
			uint64_t *done, struct r4_error *err);
/* Hand len bytes of *buf for dev at off to the writer (data.c). */
int pack_submit(struct r4_pack *b, struct io_dev *dev, uint8_t **buf,
		size_t len, uint64_t off, struct r4_error *err);

/* nodes.c */
int pack_tree_init(struct r4_pack *b, struct r4_error *err);
void pack_tree_fini(struct r4_pack *b);
/* Room for one more leaf item body in the open leaf (0 if none open). */
size_t pack_leaf_room(struct r4_pack *b);
/* Append a leaf item (closing the leaf first when it does not fit);
 * *body receives where to put len bytes. */
int pack_leaf_add(struct r4_pack *b, const struct fmt_key *k, unsigned pid,
	     size_t len, uint8_t **body, struct r4_error *err);
/* The same with the body's bytes left as they are: the caller writes
 * every one of the len bytes (or fails the build). */
int pack_leaf_add_raw(struct r4_pack *b, const struct fmt_key *k,
		      unsigned pid, size_t len, uint8_t **body,
		      struct r4_error *err);
int pack_leaf_close(struct r4_pack *b, struct r4_error *err);
/* Make sure the twig level has room for an item of len bytes before
 * data it will describe is placed. */
int pack_twig_reserve(struct r4_pack *b, size_t len, struct r4_error *err);
/* Append an extent item (split over twigs as needed). */
int pack_twig_add_extent(struct r4_pack *b, const struct fmt_key *k,
		    const struct fmt_extent40_unit *u, size_t n,
		    struct r4_error *err);
/* Store a u64 at byte off of leaf number seq (0 = the first leaf). */
int pack_leaf_patch_u64(struct r4_pack *b, uint64_t seq, uint32_t off,
		   uint64_t val, struct r4_error *err);
/* Close everything; give the root block and height. */
int pack_tree_finish(struct r4_pack *b, uint64_t *root, unsigned *height,
		struct r4_error *err);

/* upper.c: nodes above the leaves are kept in memory; pointers to them
 * carry their index until pack_upper_place() gives them their blocks, in
 * the area saved before the first leaf when they fit there: the root,
 * then each level down to the twigs, each level in key order, so that
 * the last twig is right before the first leaf. */
int pack_upper_keep(struct r4_pack *b, unsigned level, const uint8_t *node,
	       uint64_t *id, struct r4_error *err);
int pack_upper_place(struct r4_pack *b, uint64_t root_id, uint64_t *root,
		struct r4_error *err);
void pack_upper_fini(struct r4_pack *b);

/* nsobj.c: an object made again from its spilled record h, in chunks
 * a; keep: a name taken back into memory (its extent units copied and
 * listed in b->regs), else they point into the record. */
struct bobj *pack_ns_rec_obj(struct r4_pack *b, struct parena *a,
			     const struct pack_srec *h, int keep);
/* nsobj.c: a name s made in memory in dir, over what the spill may
 * hold of it: a tombstone there (issue 29: names are not looked for in
 * the spill when added). 0 or -errno. */
int pack_ns_shadow(struct r4_pack *b, struct bobj *dir, const char *s,
		   size_t n);

/* spill.c */
uint64_t pack_spill_hash(uint32_t dir, const char *s, size_t n);
int pack_spill_new(struct pack_spill **out, size_t budget);
void pack_spill_free(struct pack_spill *s);
/* Add a record (hdr's len and seq are set here; the three tails follow
 * the header); *seq gets its seq. */
int pack_spill_put(struct pack_spill *s, const struct pack_srec *hdr,
		   const void *tail1, size_t len1, const void *tail2,
		   size_t len2, const void *tail3, size_t len3,
		   uint64_t *seq);
/* The latest record of (dir, name): 1 and *out (valid until the next
 * call), 0 none (or the name was made in memory since), or -errno. */
int pack_spill_find(struct pack_spill *s, uint32_t dir, uint64_t hash,
		    const char *name, size_t n, const struct pack_srec **out);
/* A tombstone: (dir, name) is made in memory from now on, so every
 * earlier record of it is gone. */
int pack_spill_gone(struct pack_spill *s, uint32_t dir, const char *name,
		    size_t n);
/* No more records: the last run written, the buffer freed. */
int pack_spill_seal(struct pack_spill *s);
uint64_t pack_spill_records(const struct pack_spill *s);
/* The live records of directory dir into *buf (grown as needed), *len
 * bytes: of records of one name the latest, none under a tombstone. */
int pack_spill_dir(struct pack_spill *s, uint32_t dir, uint8_t **buf,
		   size_t *cap, size_t *len);
/* Bytes the spill keeps besides its buffer of records (runs, the
 * directory starts, one run's sparse index, one directory's names). */
size_t pack_spill_index_bytes(const struct pack_spill *s);

/* items.c */
int pack_items_make(struct r4_pack *b, struct r4_error *err);
void pack_items_fini(struct r4_pack *b);
/* The ordering part of a placed object's keys: its primary name's
 * (made again from the name: not kept in every object). */
uint64_t pack_obj_ordering(struct r4_pack *b, const struct bobj *o);

#endif
