/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: committing a transaction (order in txn.h, doc/format.md §8.6):
 * relocate set, wandered copies + wander records + tx head, fsync,
 * journal header (commit point), fsync, the format40 super block in
 * place, fsync, the rest of the overwrite set in place, fsync,
 * journal footer with the counters, fsync. The committed bitmap is the
 * old one plus this transaction's allocations minus its frees; the log
 * blocks are taken from blocks free in both and are never marked. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/txn/txn_int.h"
#include "libimage/util/err.h"
#include "format/bitmap.h"
#include "format/super.h"

struct ow {			/* one block of the overwrite set */
	uint64_t home, wandered;
	const uint8_t *data;
};

struct commit {
	struct txn *t;
	struct r4_vol *vol;
	struct tb **capt;	/* the overwrite set (in the hash) */
	size_t nreloc, ncapt;	/* the relocate set: TB_NEW, streamed */
	uint64_t *regions;	/* bitmap regions changed, ascending */
	uint8_t **bitmaps;	/* their new images */
	size_t nregions, capregions;
	uint8_t *sbbuf;		/* new format40 super block image */
	struct fmt_format40 sb;
	struct ow *ow;
	size_t now;
	uint64_t *log;		/* log[0]: tx head, then the records */
	size_t nlog;
	uint8_t *buf;
	struct txn_stats st;
};

static int nomem(struct commit *c, struct r4_error *err)
{
	return r4i_fail(err, -ENOMEM, "%s: out of memory while committing",
		       c->vol->dev->path);
}

static void commit_fini(struct commit *c)
{
	for (size_t i = 0; i < c->nregions; i++)
		free(c->bitmaps ? c->bitmaps[i] : NULL);
	free(c->bitmaps);
	free(c->regions);
	free(c->capt);
	free(c->sbbuf);
	free(c->ow);
	free(c->log);
	free(c->buf);
}

/* The new bitmap images: the in-memory map (allocations are marked
 * there already) minus the frees. */
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The regions whose bitmap blocks this commit writes, ascending: those
 * of the blocks it allocates or frees (the map walked in block order),
 * and those a repair asked for. */
#define TOUCHED ((1u << TB_ALLOC) | (1u << TB_NEW) | (1u << TB_DATA) | \
		 (1u << TB_FREED))
static int pick_regions(struct commit *c, struct r4_error *err)
{
	const struct space *s = &c->vol->space;
	const struct txn *t = c->t;
	struct tb_iter it;
	struct tb e;
	size_t n = 0;

	if (tb_iter_start(&it, &t->map, TOUCHED))
		return nomem(c, err);
	while (tb_iter_next(&it, &e)) {
		uint64_t k = e.nr / s->bpb;

		if (n && c->regions[n - 1] == k)
			continue;
		if (R4_RESERVE(c->regions, c->capregions, n + 1, 16)) {
			tb_iter_fini(&it);
			return nomem(c, err);
		}
		c->regions[n++] = k;
	}
	tb_iter_fini(&it);
	if (R4_RESERVE(c->regions, c->capregions, n + t->nforce + 1, 16))
		return nomem(c, err);
	for (size_t i = 0; i < t->nforce; i++)
		c->regions[n++] = t->force_regions[i];
	c->bitmaps = calloc(n + 1, sizeof(*c->bitmaps));
	if (!c->bitmaps)
		return nomem(c, err);
	if (n)
		qsort(c->regions, n, sizeof(*c->regions), cmp_u64);
	c->nregions = 0;
	for (size_t i = 0; i < n; i++)
		if (!c->nregions || c->regions[c->nregions - 1] != c->regions[i])
			c->regions[c->nregions++] = c->regions[i];
	return 0;
}

/* The new bitmap images: the in-memory map (allocations are marked
 * there already) minus the frees. */
static int build_bitmaps(struct commit *c, struct r4_error *err)
{
	struct space *s = &c->vol->space;
	size_t n;
	int rc = pick_regions(c, err);

	if (rc)
		return rc;
	n = c->nregions;
	c->nregions = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t k = c->regions[i];

		rc = space_load(s, k, err);
		if (rc)
			return rc;
		c->bitmaps[i] = malloc(s->blksize);
		if (!c->bitmaps[i])
			return nomem(c, err);
		memcpy(c->bitmaps[i], s->map[k], s->blksize);
		c->nregions = i + 1;
	}
	{
		struct tb_iter it;
		struct tb e;
		size_t j = 0;

		if (tb_iter_start(&it, &c->t->map, 1u << TB_FREED))
			return nomem(c, err);
		while (tb_iter_next(&it, &e)) {
			while (c->regions[j] != e.nr / s->bpb)
				j++;
			fmt_bitmap_clear(c->bitmaps[j], e.nr % s->bpb);
		}
		tb_iter_fini(&it);
	}
	for (size_t i = 0; i < n; i++)
		fmt_bitmap_csum_update(c->bitmaps[i], s->blksize);
	return 0;
}

static int build_super(struct commit *c, struct r4_error *err)
{
	struct r4_vol *vol = c->vol;
	struct txn *t = c->t;
	int rc;

	c->sbbuf = malloc(vol->blksize);
	if (!c->sbbuf)
		return nomem(c, err);
	rc = vol_read_block(vol, fmt_blk_format40(vol->blksize), c->sbbuf,
			    "format40 super block", err);
	if (rc)
		return rc;
	c->sb = vol->sb;
	c->sb.root_block = t->root;
	c->sb.tree_height = t->height;
	c->sb.free_blocks = (t->set_counters ? t->free_base
					     : vol->sb.free_blocks) +
			    t->nfreed - t->nalloc;
	c->sb.file_count = (uint64_t)((int64_t)(t->set_counters
						? t->files_base
						: vol->sb.file_count) +
				      t->files_delta);
	c->sb.next_oid = t->next_oid;
	if (t->new_count)
		c->sb.block_count = t->new_count;
	fmt_format40_encode(&c->sb, c->sbbuf);
	return 0;
}

static int collect(struct commit *c, struct r4_error *err)
{
	struct tbmap *m = &c->t->map;
	size_t k = 0;
	int rc;

	c->nreloc = tb_count(m, TB_NEW);
	if (tb_list(m, 1u << TB_CAPTURED, &c->capt, &c->ncapt))
		return nomem(c, err);
	rc = build_bitmaps(c, err);
	if (!rc)
		rc = build_super(c, err);
	if (rc)
		return rc;
	c->now = c->ncapt + c->nregions + 1;
	c->ow = calloc(c->now, sizeof(*c->ow));
	if (!c->ow)
		return nomem(c, err);
	c->ow[k++] = (struct ow){ fmt_blk_format40(c->vol->blksize), 0,
				  c->sbbuf };
	for (size_t i = 0; i < c->nregions; i++)
		c->ow[k++] = (struct ow){ fmt_bitmap_blk(c->regions[i],
							 c->vol->blksize),
					  0, c->bitmaps[i] };
	for (size_t i = 0; i < c->ncapt; i++)
		c->ow[k++] = (struct ow){ c->capt[i]->nr, 0,
					  c->capt[i]->b->data };
	return 0;
}

/* Wandered copies, records and the tx head: blocks free in the map,
 * which marks this transaction's allocations and still marks its frees;
 * not marked used. */
static int alloc_log(struct commit *c, struct r4_error *err)
{
	uint32_t cap = fmt_wander_capacity(c->vol->blksize);
	uint64_t at = fmt_blk_first_usable(c->vol->blksize);
	size_t nrec = (c->now - 1) / cap + 1;

	c->nlog = nrec + 1;
	c->log = malloc(c->nlog * sizeof(*c->log));
	if (!c->log)
		return nomem(c, err);
	for (size_t i = 0; i < c->nlog + c->now; i++) {
		uint64_t b;
		int rc = space_find_free(&c->vol->space, at, &b, err);

		if (rc)
			return r4i_fail_over(err, rc, "%s: no free block left "
					    "for the journal (%zu blocks "
					    "needed)", c->vol->dev->path,
					    c->nlog + c->now);
		if (i < c->nlog)
			c->log[i] = b;
		else
			c->ow[i - c->nlog].wandered = b;
		at = b + 1;
	}
	/* The last flushed tx head's block is free again, but the new tx
	 * head must not be there: header == footer would read as "nothing
	 * to replay" after a crash past the commit point. */
	if (c->log[0] == c->vol->jf.last_flushed_tx) {
		uint64_t other = c->nlog > 1 ? c->log[1] : c->ow[0].wandered;

		if (c->nlog > 1)
			c->log[1] = c->log[0];
		else
			c->ow[0].wandered = c->log[0];
		c->log[0] = other;
	}
	return 0;
}

static int put_block(struct commit *c, uint64_t blk, const uint8_t *data,
		     struct r4_error *err)
{
	c->st.writes++;
	c->st.bytes += c->vol->blksize;
	return io_write(c->vol->dev, data, c->vol->blksize,
			blk * c->vol->blksize, err);
}

static int sync_dev(struct commit *c, struct r4_error *err)
{
	c->st.syncs++;
	return io_sync(c->vol->dev, err);
}

static int write_records(struct commit *c, struct r4_error *err)
{
	uint32_t cap = fmt_wander_capacity(c->vol->blksize);
	struct fmt_wander_record *wr = malloc(sizeof(*wr));
	int rc = 0;

	if (!wr)
		return nomem(c, err);
	for (size_t r = 1; r < c->nlog && !rc; r++) {
		size_t first = (r - 1) * cap;

		fmt_wander_record_init(wr);
		wr->total = (uint32_t)c->nlog;
		wr->serial = (uint32_t)r;
		wr->next_block = c->log[r + 1 < c->nlog ? r + 1 : 0];
		for (size_t i = first; i < c->now && i < first + cap; i++)
			wr->pairs[wr->nr_pairs++] = (struct fmt_wander_pair){
				c->ow[i].home, c->ow[i].wandered };
		rc = fmt_wander_record_encode(wr, c->vol->blksize, c->buf);
		if (!rc)
			rc = put_block(c, c->log[r], c->buf, err);
		else
			rc = r4i_fail(err, rc, "%s: cannot encode wander record "
				     "%zu", c->vol->dev->path, r);
	}
	free(wr);
	return rc;
}

static int write_tx_head(struct commit *c, struct r4_error *err)
{
	struct fmt_tx_head th;

	fmt_tx_head_init(&th);
	th.total = (uint32_t)c->nlog;
	th.prev_tx = c->vol->jh.last_committed_tx;
	th.next_block = c->nlog > 1 ? c->log[1] : c->log[0];
	th.free_blocks = c->sb.free_blocks;
	th.nr_files = c->sb.file_count;
	th.next_oid = c->sb.next_oid;
	memset(c->buf, 0, c->vol->blksize);
	fmt_tx_head_encode(&th, c->buf);
	return put_block(c, c->log[0], c->buf, err);
}

#define RUN_MAX WB_GATHER	/* one limit for every gathered write */

/* The bytes of v[0..n) (neighbours) into run: from their buffers, or
 * read back from the spill file (txn_spill), neighbours there in one
 * read. */
static int reloc_bytes(struct commit *c, const struct tb *v, size_t n,
		       uint8_t *run, struct r4_error *err)
{
	uint32_t bs = c->vol->blksize;

	for (size_t k = 0, m; k < n; k = m) {
		int rc;

		if (v[k].b) {
			memcpy(run + k * bs, v[k].b->data, bs);
			m = k + 1;
			continue;
		}
		if (!v[k].spilled)	/* cannot be: say so */
			return r4i_fail(err, R4_EINVAL, "%s: block %llu: new, "
					"but neither in memory nor in the "
					"temporary file", c->vol->dev->path,
					(unsigned long long)v[k].nr);
		for (m = k + 1; m < n && !v[m].b && v[m].spilled; m++)
			;
		rc = txn_sp_read(c->t, v[k].nr, m - k, run + k * bs, err);
		if (rc)
			return rc;
	}
	return 0;
}

/* The relocate set, the map walked in block order: neighbouring
 * blocks, up to RUN_MAX of them, in one write. */
static int write_reloc(struct commit *c, struct r4_error *err)
{
	uint32_t bs = c->vol->blksize;
	uint8_t *run = NULL;
	struct tb *v = malloc((RUN_MAX + 1) * sizeof(*v));
	struct tb_iter it;
	int rc = 0, more;

	if (!v || tb_iter_start(&it, &c->t->map, 1u << TB_NEW)) {
		free(v);
		return nomem(c, err);
	}
	more = tb_iter_next(&it, &v[0]);
	while (!rc && more) {
		size_t n = 1;

		while ((more = tb_iter_next(&it, &v[n])) && n < RUN_MAX &&
		       v[n].nr == v[n - 1].nr + 1)
			n++;
		if (n == 1 && v[0].b) {
			rc = put_block(c, v[0].nr, v[0].b->data, err);
		} else {
			if (!run && !(run = malloc((size_t)RUN_MAX * bs))) {
				rc = nomem(c, err);
				break;
			}
			rc = reloc_bytes(c, v, n, run, err);
			if (!rc && n == 1)
				rc = put_block(c, v[0].nr, run, err);
			else if (!rc) {
				c->st.writes++;
				c->st.bytes += n * bs;
				rc = io_write(c->vol->dev, run, n * bs,
					      v[0].nr * bs, err);
			}
		}
		if (more)	/* the block that ended the run starts the next */
			v[0] = v[n];
	}
	tb_iter_fini(&it);
	free(run);
	free(v);
	return rc;
}

/* Steps 1-2: everything the commit point will refer to. */
static int write_before_commit(struct commit *c, struct r4_error *err)
{
	int rc = write_reloc(c, err);

	for (size_t i = 0; i < c->now && !rc; i++)
		rc = put_block(c, c->ow[i].wandered, c->ow[i].data, err);
	if (!rc)
		rc = write_records(c, err);
	if (!rc)
		rc = write_tx_head(c, err);
	return rc ? rc : sync_dev(c, err);
}

static int write_journal_block(struct commit *c, int footer,
			       struct r4_error *err)
{
	struct r4_vol *vol = c->vol;
	uint64_t blk = footer ? fmt_blk_journal_footer(vol->blksize) :
				fmt_blk_journal_header(vol->blksize);
	int rc = vol_read_block(vol, blk, c->buf, footer ? "journal footer" :
				"journal header", err);

	if (rc)
		return rc;
	if (footer) {
		struct fmt_journal_footer jf = {
			c->log[0], c->sb.free_blocks, c->sb.file_count,
			c->sb.next_oid };

		fmt_journal_footer_encode(&jf, c->buf);
	} else {
		struct fmt_journal_header jh = { c->log[0] };

		fmt_journal_header_encode(&jh, c->buf);
	}
	rc = put_block(c, blk, c->buf, err);
	if (!rc && !footer)
		vol->commit_pending = 1;	/* the commit point may be on disk */
	return rc ? rc : sync_dev(c, err);
}

/* Step 3: the overwrite set in place. The format40 super block (ow[0])
 * goes first and alone, synced before the rest: the Reiser4 kernel's
 * own replay reads the super block as it was before its replay
 * (doc/kernel.md §2.3), so a volume whose log
 * the kernel replays keeps the new root only once this block is home.
 * A cut between the journal header and this write is the one point a
 * kernel mount loses the transaction (r4fsck -n names it). */
static int write_home(struct commit *c, struct r4_error *err)
{
	int rc = put_block(c, c->ow[0].home, c->ow[0].data, err);

	if (!rc && c->now > 1)
		rc = sync_dev(c, err);
	for (size_t i = 1; i < c->now && !rc; i++)
		rc = put_block(c, c->ow[i].home, c->ow[i].data, err);
	return rc ? rc : sync_dev(c, err);
}

/* The commit is on disk: make the in-memory state match it. */
static void apply(struct commit *c)
{
	struct r4_vol *vol = c->vol;
	struct space *s = &vol->space;

	for (size_t i = 0; i < c->nregions; i++) {
		memcpy(s->map[c->regions[i]], c->bitmaps[i], s->blksize);
		s->dirty[c->regions[i]] = 0;
		s->bad_csum[c->regions[i]] = 0;
		io_cache_forget(&vol->cache, fmt_bitmap_blk(c->regions[i],
							    vol->blksize));
	}
	io_cache_forget(&vol->cache, fmt_blk_format40(vol->blksize));
	io_cache_forget(&vol->cache, fmt_blk_journal_header(vol->blksize));
	io_cache_forget(&vol->cache, fmt_blk_journal_footer(vol->blksize));
	for (size_t i = 0; i < c->nlog; i++)
		io_cache_forget(&vol->cache, c->log[i]);
	for (size_t i = 0; i < c->now; i++)
		io_cache_forget(&vol->cache, c->ow[i].wandered);
	vol->sb = c->sb;
	vol->sb_own = c->sb;
	vol->sb_dirty = 0;
	vol->jh.last_committed_tx = c->log[0];
	vol->jf = (struct fmt_journal_footer){ c->log[0], c->sb.free_blocks,
					       c->sb.file_count,
					       c->sb.next_oid };
}

static int empty(const struct txn *t)
{
	const struct r4_vol *vol = t->vol;

	struct tb *e;

	for (size_t i = 0; (e = tb_next(&t->map, &i));)
		if (e->state != TB_DEAD)
			return 0;
	for (unsigned k = TB_DEAD + 1; k < 8; k++)
		if (t->map.count[k])
			return 0;
	if (t->set_counters || t->nforce || t->new_count)
		return 0;
	return t->root == vol->sb.root_block &&
	       t->height == vol->sb.tree_height && t->files_delta == 0 &&
	       t->next_oid == vol->sb.next_oid;
}

static int run(struct commit *c, struct r4_error *err)
{
	int rc;

	c->buf = malloc(c->vol->blksize);
	if (!c->buf)
		return nomem(c, err);
	rc = collect(c, err);
	if (!rc)
		rc = alloc_log(c, err);
	if (!rc)
		rc = write_before_commit(c, err);
	if (!rc)
		rc = write_journal_block(c, 0, err);	/* commit point */
	if (!rc)
		rc = write_home(c, err);
	if (!rc)
		rc = write_journal_block(c, 1, err);
	return rc;
}

int txn_commit(struct txn *t, struct r4_error *err)
{
	struct commit c = { .t = t, .vol = t->vol };
	int rc;

	if (empty(t)) {
		txn_release(t, 0);
		memset(&c.vol->last_commit, 0, sizeof(c.vol->last_commit));
		return 0;
	}
	rc = run(&c, err);
	c.st.relocated = c.nreloc + tb_count(&t->map, TB_DATA);
	c.st.overwritten = c.now;
	c.st.log_blocks = c.nlog;
	c.vol->last_commit = c.st;
	if (rc) {
		c.vol->failed = 1;
		txn_release(t, 1);
		commit_fini(&c);
		return rc;
	}
	c.vol->commit_pending = 0;
	apply(&c);
	if (t->new_count && t->new_count != c.vol->space.block_count) {
		/* a resize: the space map of the new size, loaded anew */
		space_fini(&c.vol->space);
		rc = space_init(&c.vol->space, c.vol->dev, c.vol->blksize,
				t->new_count, err);
		if (rc) {
			c.vol->failed = 1;
			txn_release(t, 0);
			commit_fini(&c);
			return rc;
		}
	}
	/* Blocks this commit freed are free now: no longer pinned. */
	{
		struct tb *f, v;
		size_t i = 0;
		uint64_t nr = 0;

		while ((f = tb_next(&t->map, &i)))
			if (f->state == TB_FREED)
				space_unpin(&c.vol->space, f->nr, 1);
		while (tbc_next(&t->map, &nr, 1u << TB_FREED, &v))
			space_unpin(&c.vol->space, v.nr, 1);
	}
	txn_release(t, 0);
	commit_fini(&c);
	return 0;
}
