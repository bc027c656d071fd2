/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: transactions: the block map of a transaction, allocation,
 * capture, freeing and abort. Commit is in commit.c, replay and the
 * read-only overlay in replay.c. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "r4/util.h"
#include "libimage/txn/txn_int.h"
#include "libimage/util/err.h"
#include "format/bitmap.h"
#include "format/super.h"

/* ---- block map ---- */

static int cmp_tb(const void *a, const void *b)
{
	const struct tb *x = *(struct tb *const *)a;
	const struct tb *y = *(struct tb *const *)b;

	return x->nr < y->nr ? -1 : x->nr > y->nr;
}

static int cmp_tbp(const void *a, const void *b)
{
	return cmp_tb(a, b);
}

void txn_settle(struct txn *t, struct tb *e)
{
	tb_settle(&t->map, e, t->wb_n ? t->wb[t->wb_head].gen : 0);
}

/* ---- begin / abort ---- */

#define BITMAPS_CHECKED_AT_BEGIN 4096

int txn_begin(struct r4_vol *vol, struct txn **out, struct r4_error *err)
{
	struct txn *t;

	*out = NULL;
	if (vol->dev->readonly)
		return r4i_fail(err, -EROFS, "%s: opened read-only: no "
			       "transactions", vol->dev->path);
	if (vol->failed)
		return r4i_fail(err, -EIO, "%s: an earlier commit failed; "
			       "reopen the volume (it replays the journal)",
			       vol->dev->path);
	if (vol->txn)
		return r4i_fail(err, R4_EBUSY, "%s: a transaction is already "
			       "open", vol->dev->path);
	/* Every bitmap block (up to 16 MiB of them) checked before the
	 * first change, so a damaged one refuses the edit at once; beyond
	 * that a region is checked when first used, still before anything
	 * is written to it. */
	if (vol->space.nregions <= BITMAPS_CHECKED_AT_BEGIN) {
		int rc = space_load_all(&vol->space, err);

		if (rc)
			return rc;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return r4i_fail(err, -ENOMEM, "%s: out of memory",
			       vol->dev->path);
	t->vol = vol;
	tb_init(&t->map);
	t->root = vol->sb.root_block;
	t->height = vol->sb.tree_height;
	t->next_oid = vol->sb.next_oid;
	t->alloc_cursor = fmt_blk_first_usable(vol->blksize);
	vol->txn = t;
	*out = t;
	return 0;
}

void txn_release(struct txn *t, int revert)
{
	struct r4_vol *vol = t->vol;
	struct tb *e, c;
	uint64_t nr = 0;

	txn_sp_release(t, revert);
	while (revert && tbc_next(&t->map, &nr, (1u << TB_ALLOC) |
				  (1u << TB_NEW) | (1u << TB_DATA), &c))
		space_mark(&vol->space, c.nr, 0, NULL);
	for (size_t i = 0; (e = tb_next(&t->map, &i));) {
		if (revert && (e->state == TB_ALLOC || e->state == TB_NEW ||
			       e->state == TB_DATA))
			space_mark(&vol->space, e->nr, 0, NULL);
		if (e->b && revert)
			io_cache_discard(&vol->cache, e->b);
		else if (e->b) {
			io_cache_clean(&vol->cache, e->b);
			io_cache_put(&vol->cache, e->b);
		}
	}
	tb_fini(&t->map);
	free(t->force_regions);
	free(t->wb);
	free(t->wb_pick);
	free(t->wb_buf);
	vol->txn = NULL;
	free(t);
}

uint64_t txn_written_in_place(const struct txn *t)
{
	return t ? tb_count(&t->map, TB_DATA) : 0;
}

void txn_abort(struct txn *t)
{
	if (t)
		txn_release(t, 1);
}

/* ---- blocks ---- */

static int check_blk(struct txn *t, uint64_t blk, const char *what,
		     struct r4_error *err)
{
	struct r4_vol *vol = t->vol;

	if (blk < fmt_blk_first_usable(vol->blksize) ||
	    blk >= vol->sb.block_count)
		return r4i_fail(err, R4_ERANGE, "%s: %s block %llu: outside "
			       "the usable blocks %llu..%llu", vol->dev->path,
			       what, (unsigned long long)blk,
			       (unsigned long long)fmt_blk_first_usable(
				       vol->blksize),
			       (unsigned long long)vol->sb.block_count - 1);
	if (blk % vol->space.bpb == 0)
		return r4i_fail(err, R4_EINVAL, "%s: %s block %llu: a bitmap "
			       "block is changed by the commit only",
			       vol->dev->path, what, (unsigned long long)blk);
	return 0;
}

static int nomem(struct txn *t, struct r4_error *err)
{
	return r4i_fail(err, -ENOMEM, "%s: out of memory",
		       t->vol->dev->path);
}

/* The transaction's own pin on a cached block plus one for the caller;
 * fresh: a new buffer, not read (1 zeroed, 2 its bytes as they are). */
static int pin_twice(struct txn *t, struct tb *e, int fresh,
		     struct io_block **out, struct r4_error *err)
{
	struct io_cache *c = &t->vol->cache;
	int rc;

	if (!e->b) {
		rc = fresh == 2 ? io_cache_new_raw(c, e->nr, &e->b, err) :
		     fresh ? io_cache_new(c, e->nr, &e->b, err) :
			     io_cache_get(c, e->nr, &e->b, err);
		if (rc)
			return rc;
		io_cache_dirty(c, e->b);
	}
	/* the caller is about to change the bytes: any verification of
	 * them is void (libimage/tree trusts dirty nodes it verified) */
	e->b->verified = 0;
	return io_cache_get(c, e->nr, out, err);
}

static int capture(struct txn *t, struct tb *e, uint64_t blk,
		   struct io_block **out, struct r4_error *err)
{
	int rc;

	switch (e->state) {
	case TB_FREED:
		return r4i_fail(err, R4_EINVAL, "%s: block %llu: captured "
			       "after being freed in the same transaction",
			       t->vol->dev->path, (unsigned long long)blk);
	case TB_ALLOC:
	case TB_DATA: {	/* a block of this transaction: written once */
		unsigned was = e->state;

		e->state = TB_NEW;
		rc = pin_twice(t, e, 0, out, err);
		if (rc)		/* no buffer: still what it was */
			e->state = was;
		return rc;
	}
	case TB_NEW:
	case TB_CAPTURED:
		return pin_twice(t, e, 0, out, err);
	default:
		break;
	}
	rc = space_test(&t->vol->space, blk, err);
	if (rc < 0)
		return rc;
	if (rc == 0)
		return r4i_fail(err, R4_EINVAL, "%s: block %llu: captured, but "
			       "the bitmap marks it free", t->vol->dev->path,
			       (unsigned long long)blk);
	e->state = TB_CAPTURED;
	return pin_twice(t, e, 0, out, err);
}

int txn_capture(struct txn *t, uint64_t blk, struct io_block **out,
		struct r4_error *err)
{
	struct tb *e;
	int rc = check_blk(t, blk, "captured", err);

	*out = NULL;
	if (rc)
		return rc;
	e = tb_get(&t->map, blk);
	if (!e)
		return nomem(t, err);
	rc = capture(t, e, blk, out, err);
	txn_settle(t, e);
	return rc;
}

int txn_capture_fixed(struct txn *t, uint64_t blk, struct io_block **out,
		      struct r4_error *err)
{
	struct r4_vol *vol = t->vol;
	uint32_t bs = vol->blksize;
	struct tb *e;

	*out = NULL;
	if (blk >= vol->sb.block_count || blk <= fmt_blk_format40(bs) ||
	    blk == fmt_blk_journal_header(bs) ||
	    blk == fmt_blk_journal_footer(bs) || blk == fmt_blk_bitmap0(bs) ||
	    blk % vol->space.bpb == 0)
		return r4i_fail(err, R4_EINVAL, "%s: block %llu: not a fixed "
			       "block that can be captured", vol->dev->path,
			       (unsigned long long)blk);
	e = tb_get(&t->map, blk);
	if (!e)
		return nomem(t, err);
	if (e->state != TB_DEAD && e->state != TB_CAPTURED) {
		txn_settle(t, e);
		return r4i_fail(err, R4_EINVAL, "%s: block %llu: captured as a "
			       "fixed block, but the transaction allocated or "
			       "freed it", vol->dev->path,
			       (unsigned long long)blk);
	}
	e->state = TB_CAPTURED;
	return pin_twice(t, e, 0, out, err);
}

int txn_rewrite_bitmap(struct txn *t, uint64_t k, struct r4_error *err)
{
	if (k >= t->vol->space.nregions)
		return r4i_fail(err, R4_ERANGE, "%s: bitmap region %llu: past "
			       "the last one", t->vol->dev->path,
			       (unsigned long long)k);
	for (size_t i = 0; i < t->nforce; i++)
		if (t->force_regions[i] == k)
			return 0;
	if (R4_RESERVE(t->force_regions, t->capforce, t->nforce + 1, 16))
		return nomem(t, err);
	t->force_regions[t->nforce++] = k;
	return 0;
}

void txn_set_block_count(struct txn *t, uint64_t block_count)
{
	t->new_count = block_count;
}

void txn_set_counters(struct txn *t, uint64_t free_blocks,
		      uint64_t file_count, uint64_t next_oid)
{
	t->set_counters = 1;
	t->free_base = free_blocks;
	t->files_base = file_count;
	t->next_oid = next_oid;
}

/* Block blk becomes the transaction's, allocated in scope. */
static int take(struct txn *t, uint64_t blk, uint32_t scope,
		struct r4_error *err)
{
	struct tb *e = tb_get(&t->map, blk);
	int rc;

	if (!e)
		return nomem(t, err);
	rc = space_mark(&t->vol->space, blk, 1, err);
	if (!rc) {
		e->state = TB_ALLOC;
		e->scope = scope;
		t->nalloc++;
	}
	txn_settle(t, e);
	return rc;
}

/* A free block at or after from, wrapping around once; never a bitmap
 * block (they are marked used anyway). */
static int find_free(struct txn *t, uint64_t from, uint64_t *blk,
		     struct r4_error *err)
{
	struct r4_vol *vol = t->vol;
	uint64_t first = fmt_blk_first_usable(vol->blksize);
	int rc;

	if (from < first || from >= vol->sb.block_count)
		from = first;
	rc = space_find_free(&vol->space, from, blk, err);
	if (rc == R4_ENOSPC && from > first) {
		r4i_error_clear(err);
		rc = space_find_free(&vol->space, first, blk, err);
	}
	if (rc == R4_ENOSPC)
		rc = r4i_fail_over(err, R4_ENOSPC, "%s: no free block left",
				  vol->dev->path);
	return rc;
}

int txn_alloc_in(struct txn *t, uint32_t scope, uint64_t hint,
		 uint64_t *blk, struct r4_error *err)
{
	int rc = find_free(t, hint, blk, err);

	return rc ? rc : take(t, *blk, scope & TXN_SCOPE_MAX, err);
}

int txn_alloc(struct txn *t, uint64_t hint, uint64_t *blk,
	      struct r4_error *err)
{
	return txn_alloc_in(t, 0, hint, blk, err);
}

uint32_t txn_scope_begin(struct txn *t)
{
	return t->scopes < TXN_SCOPE_MAX ? ++t->scopes : 0;
}

int txn_alloc_run(struct txn *t, uint64_t hint, uint64_t want,
		  uint64_t *start, uint64_t *got, struct r4_error *err)
{
	uint64_t n = 0;
	int rc = txn_alloc(t, hint, start, err);

	if (rc)
		return rc;
	for (n = 1; n < want && *start + n < t->vol->sb.block_count; n++) {
		rc = space_test(&t->vol->space, *start + n, err);
		if (rc < 0)
			return rc;
		if (rc || take(t, *start + n, 0, err))
			break;
	}
	*got = n;
	return 0;
}

/* *e: blk's entry in the hash (txn_settle it after), which must be one
 * this transaction allocated; NULL on failure. */
static int need_alloc(struct txn *t, uint64_t blk, struct tb **e,
		      struct r4_error *err)
{
	struct tb p = tb_peek(&t->map, blk);

	*e = NULL;
	if (p.state != TB_ALLOC && p.state != TB_NEW && p.state != TB_DATA)
		return r4i_fail(err, R4_EINVAL, "%s: block %llu was not "
			       "allocated by this transaction",
			       t->vol->dev->path, (unsigned long long)blk);
	*e = tb_get(&t->map, blk);
	return *e ? 0 : nomem(t, err);
}

/* Every entry of the hash that can leave it does (deleting leaves the
 * others where they are). */
static void settle_all(struct txn *t)
{
	struct tb *e;

	for (size_t i = 0; (e = tb_next(&t->map, &i));)
		if (!e->b)
			txn_settle(t, e);
}

int txn_write_behind(struct txn *t, size_t keep, struct r4_error *err)
{
	struct wb_ent *w = NULL;

	if (keep && keep < 2)
		keep = 2;
	if (keep == t->wb_keep) {
		t->wb_spill = 0;
		return 0;
	}
	if (keep && (!(w = calloc(keep, sizeof(*w))) ||
		     (!t->wb_pick && !(t->wb_pick = calloc(WB_GATHER,
							   sizeof(*t->wb_pick)))) ||
		     (!t->wb_buf && !(t->wb_buf = malloc((size_t)WB_GATHER *
							 t->vol->blksize))))) {
		free(w);
		return nomem(t, err);
	}
	free(t->wb);
	t->wb = w;
	t->wb_keep = keep;
	t->wb_head = t->wb_n = 0;
	t->wb_spill = 0;
	settle_all(t);	/* no generation is live now */
	return 0;
}

int txn_spill(struct txn *t, size_t keep, struct r4_error *err)
{
	int rc = txn_write_behind(t, keep, err);

	if (!rc)
		t->wb_spill = keep != 0;
	return rc;
}

uint64_t txn_spilled(const struct txn *t)
{
	return t->sp_blocks;
}

/* Block e, written: its buffer goes back to the cache; TB_DATA now,
 * or still TB_NEW, without a buffer and marked spilled, when it went to
 * the spill file. */
static void wb_done(struct txn *t, struct tb *e)
{
	struct io_cache *c = &t->vol->cache;

	io_cache_clean(c, e->b);
	io_cache_put(c, e->b);
	e->b = NULL;
	io_cache_forget(c, e->nr);
	if (t->wb_spill) {
		e->spilled = 1;
		t->sp_blocks++;
		return;
	}
	e->spilled = 0;
	e->state = TB_DATA;
	t->wb_written++;
}

/* Write v[0..n) (ascending, each with its buffer) to the volume, or to
 * the spill file, neighbours in one write through wb_buf. */
static int wb_write(struct txn *t, struct tb **v, size_t n,
		    struct r4_error *err)
{
	uint32_t bs = t->vol->blksize;
	struct io_dev *dev = t->vol->dev;
	int rc = 0;

	if (t->wb_spill && n && !t->sp_dev && (rc = txn_sp_open(t, err)))
		return rc;
	if (t->wb_spill)
		dev = t->sp_dev;
	for (size_t i = 0, j; !rc && i < n; i = j) {
		for (j = i + 1; j < n && v[j]->nr == v[j - 1]->nr + 1; j++)
			;
		if (j - i == 1) {
			rc = io_write(dev, v[i]->b->data, bs, v[i]->nr * bs,
				      err);
			continue;
		}
		for (size_t k = i; k < j; k++)
			memcpy(t->wb_buf + (k - i) * bs, v[k]->b->data, bs);
		rc = io_write(dev, t->wb_buf, (j - i) * bs, v[i]->nr * bs,
			      err);
	}
	return rc;
}

/* Block e may be written now: a txn_new buffer nobody else holds. */
static int wb_ready(const struct tb *e)
{
	return e && e->state == TB_NEW && e->b && e->b->ref == 1;
}

/* The picks v[0..n) (ascending) and the ready blocks next to them, up to
 * WB_GATHER in all, ascending, each once: the blocks the allocator gave
 * out side by side leave together, in one write, not one write each as
 * they age out of the ring. Returns the new count. */
static size_t wb_gather(struct txn *t, struct tb **v, size_t n)
{
	size_t m = n, k = 0;
	uint64_t up = 0;	/* the last block the walk up from a pick took */

	for (size_t i = 0; i < n && m < WB_GATHER; i++) {
		uint64_t lo = i ? v[i - 1]->nr : 0;
		uint64_t hi = i + 1 < n ? v[i + 1]->nr : UINT64_MAX;
		uint64_t b;
		struct tb *e;

		if (up > lo)	/* never walk down over what was taken */
			lo = up;
		for (b = v[i]->nr + 1; b < hi && m < WB_GATHER &&
		     wb_ready(e = tb_find(&t->map, b)); b++)
			v[m++] = e;
		up = b - 1;
		for (b = v[i]->nr - 1; b > lo && m < WB_GATHER &&
		     wb_ready(e = tb_find(&t->map, b)); b--)
			v[m++] = e;
	}
	if (m > 1)
		qsort(v, m, sizeof(*v), cmp_tbp);
	for (size_t i = 0; i < m; i++)	/* cannot repeat: kept as a guard */
		if (!k || v[k - 1] != v[i])
			v[k++] = v[i];
	return k;
}

/* The oldest ring entries (WB_BATCH, half the ring at most) leave it; the
 * blocks among them nothing changed since, held by the transaction alone,
 * are written and released, with the ready blocks beside them. */
static int wb_flush(struct txn *t, struct r4_error *err)
{
	size_t n = 0, batch = t->wb_keep / 2 < WB_BATCH ? t->wb_keep / 2 :
			       WB_BATCH;
	size_t head = t->wb_head, popped = 0;
	int rc;

	for (size_t i = 0; i < batch && t->wb_n; i++, popped++) {
		struct wb_ent w = t->wb[t->wb_head];
		struct tb *e = tb_find(&t->map, w.nr);

		t->wb_head = (t->wb_head + 1) % t->wb_keep;
		t->wb_n--;
		if (wb_ready(e) && e->gen == w.gen)
			t->wb_pick[n++] = e;
	}
	if (n > 1)
		qsort(t->wb_pick, n, sizeof(*t->wb_pick), cmp_tbp);
	n = wb_gather(t, t->wb_pick, n);
	rc = wb_write(t, t->wb_pick, n, err);
	for (size_t i = 0; !rc && i < n; i++)
		wb_done(t, t->wb_pick[i]);
	/* the blocks written, and those the ring no longer names, keep
	 * only their states now (the gathered ones wait for their own
	 * ring entry); the slots popped are untouched until wb_note */
	for (size_t i = 0; !rc && i < n; i++)
		txn_settle(t, t->wb_pick[i]);
	for (size_t i = 0; i < popped; i++) {
		struct tb *e = tb_find(&t->map,
				       t->wb[(head + i) % t->wb_keep].nr);

		if (e && !e->b)
			txn_settle(t, e);
	}
	return rc;
}

/* Block e was given a buffer: remember it; a full ring writes out its
 * oldest. e itself is the newest entry: never written here. */
static int wb_note(struct txn *t, struct tb *e, struct r4_error *err)
{
	struct wb_ent *w;
	int rc = 0;

	e->gen = ++t->wb_gen;
	if (t->wb_n == t->wb_keep)
		rc = wb_flush(t, err);
	w = &t->wb[(t->wb_head + t->wb_n++) % t->wb_keep];
	w->nr = e->nr;
	w->gen = e->gen;
	return rc;
}

static int new_buf(struct txn *t, uint64_t blk, int zero,
		   struct io_block **out, struct r4_error *err)
{
	struct tb *e;
	int rc = need_alloc(t, blk, &e, err);

	*out = NULL;
	if (rc)
		return rc;
	e->state = TB_NEW;
	e->spilled = 0;
	if (e->b && zero)
		memset(e->b->data, 0, t->vol->blksize);
	rc = pin_twice(t, e, zero ? 1 : 2, out, err);
	if (!rc && t->wb_keep && (rc = wb_note(t, e, err)) != 0) {
		io_cache_put(&t->vol->cache, *out);
		*out = NULL;
	}
	/* the caller will not fill a raw buffer it did not get, and the
	 * block stays new (a later write-behind or commit may write it):
	 * zeros, as txn_new gives, never the bytes the buffer held */
	if (rc && !zero && e->b)
		memset(e->b->data, 0, t->vol->blksize);
	txn_settle(t, e);
	return rc;
}

int txn_new(struct txn *t, uint64_t blk, struct io_block **out,
	    struct r4_error *err)
{
	return new_buf(t, blk, 1, out, err);
}

int txn_new_raw(struct txn *t, uint64_t blk, struct io_block **out,
		struct r4_error *err)
{
	return new_buf(t, blk, 0, out, err);
}

/* Blocks [from, to) of a txn_write_data call with no buffer: one write. */
static int write_run(struct txn *t, uint64_t blk, const uint8_t *buf,
		     size_t from, size_t to, struct r4_error *err)
{
	uint32_t bs = t->vol->blksize;

	if (from == to)
		return 0;
	return io_write(t->vol->dev, buf + from * bs, (to - from) * bs,
			(blk + from) * bs, err);
}

int txn_write_data(struct txn *t, uint64_t blk, const void *buf,
		   size_t nblocks, struct r4_error *err)
{
	struct r4_vol *vol = t->vol;
	const uint8_t *p = buf;
	size_t run = 0;		/* first block of the pending write */

	for (size_t i = 0; i < nblocks; i++) {
		struct tb *e;
		int rc = need_alloc(t, blk + i, &e, err);

		if (!rc)
			e->spilled = 0;
		if (!rc && e->b) {	/* had a buffer: keep it current */
			rc = write_run(t, blk, p, run, i, err);
			if (rc)
				return rc;
			memcpy(e->b->data, p + i * vol->blksize, vol->blksize);
			e->state = TB_NEW;
			run = i + 1;
			txn_settle(t, e);
			continue;
		}
		if (rc) {
			/* the blocks before i are written, as asked (a
			 * failure of that write too is this one's error:
			 * either way the caller aborts the transaction) */
			write_run(t, blk, p, run, i, NULL);
			return rc;
		}
		/* TB_DATA before the run's write: when the write fails the
		 * caller aborts the transaction, which forgets these
		 * states with the rest */
		e->state = TB_DATA;
		txn_settle(t, e);
		io_cache_forget(&vol->cache, blk + i);
	}
	return write_run(t, blk, p, run, nblocks, err);
}

int txn_owns(const struct txn *t, uint64_t blk)
{
	struct tb e = tb_peek(&t->map, blk);

	return e.state == TB_ALLOC || e.state == TB_NEW || e.state == TB_DATA;
}

int txn_owns_in(const struct txn *t, uint64_t blk, uint32_t scope)
{
	struct tb e = tb_peek(&t->map, blk);

	return scope && e.scope == scope &&
	       (e.state == TB_ALLOC || e.state == TB_NEW ||
		e.state == TB_DATA);
}

uint64_t txn_scope_blocks(const struct txn *t, uint32_t scope)
{
	unsigned states = (1u << TB_ALLOC) | (1u << TB_NEW) |
			  (1u << TB_DATA);
	uint64_t n = 0, nr = 0;
	struct tb *e, c;

	for (size_t i = 0; scope && (e = tb_next(&t->map, &i));)
		n += e->scope == scope && ((states >> e->state) & 1);
	while (scope && tbc_next(&t->map, &nr, states, &c))
		n += c.scope == scope;
	return n;
}

void txn_put(struct txn *t, struct io_block *b)
{
	io_cache_put(&t->vol->cache, b);
}

static int free_e(struct txn *t, struct tb *e, uint64_t blk,
		  struct r4_error *err);

static int free_one(struct txn *t, uint64_t blk, struct r4_error *err)
{
	struct tb *e = tb_get(&t->map, blk);
	int rc;

	if (!e)
		return nomem(t, err);
	rc = free_e(t, e, blk, err);
	txn_settle(t, e);
	return rc;
}

static int free_e(struct txn *t, struct tb *e, uint64_t blk,
		  struct r4_error *err)
{
	int rc;

	switch (e->state) {
	case TB_ALLOC:
	case TB_NEW:
	case TB_DATA:
		if (e->b)
			io_cache_discard(&t->vol->cache, e->b);
		else if (e->spilled)	/* a copy read may be cached */
			io_cache_forget(&t->vol->cache, blk);
		e->b = NULL;
		e->spilled = 0;
		e->state = TB_DEAD;
		e->scope = 0;	/* take gives it one anew */
		t->nalloc--;
		return space_mark(&t->vol->space, blk, 0, err);
	case TB_FREED:
		return r4i_fail(err, R4_EINVAL, "%s: block %llu freed twice in "
			       "one transaction", t->vol->dev->path,
			       (unsigned long long)blk);
	case TB_CAPTURED:
		io_cache_discard(&t->vol->cache, e->b);
		e->b = NULL;
		break;
	default:
		rc = space_test(&t->vol->space, blk, err);
		if (rc < 0)
			return rc;
		if (rc == 0)
			return r4i_fail(err, R4_EINVAL, "%s: block %llu freed, "
				       "but the bitmap marks it free already",
				       t->vol->dev->path,
				       (unsigned long long)blk);
	}
	e->state = TB_FREED;
	t->nfreed++;
	return 0;
}

int txn_free(struct txn *t, uint64_t blk, uint64_t count,
	     struct r4_error *err)
{
	for (uint64_t i = 0; i < count; i++) {
		int rc = check_blk(t, blk + i, "freed", err);

		if (!rc)
			rc = free_one(t, blk + i, err);
		if (rc)
			return rc;
	}
	return 0;
}

void txn_set_root(struct txn *t, uint64_t root, uint16_t height)
{
	t->root = root;
	t->height = height;
}

void txn_add_files(struct txn *t, int64_t delta)
{
	t->files_delta += delta;
}

uint64_t txn_free_left(const struct txn *t)
{
	uint64_t f = t->set_counters ? t->free_base : t->vol->sb.free_blocks;

	return f > t->nalloc ? f - t->nalloc : 0;
}

uint64_t txn_next_oid(struct txn *t)
{
	return t->next_oid++;
}
