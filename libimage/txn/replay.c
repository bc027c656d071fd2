/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: reading the journal (doc/format.md §8.7): find the committed
 * transactions not yet written home, oldest first, check every tx head
 * and wander record (magics, totals, the ring of records, block ranges,
 * cycles), then either copy the wandered blocks home and write the
 * footer after each transaction (txn_replay), or only redirect reads to
 * the wandered copies (txn_overlay, read-only). Everything is checked
 * before the first block is copied. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/txn/txn_int.h"
#include "libimage/util/err.h"
#include "format/super.h"
#include "r4/util.h"

struct jtx {
	uint64_t head;
	struct fmt_tx_head th;
	struct fmt_wander_pair *pairs;
	size_t npairs;
};

struct journal {
	struct r4_vol *vol;
	struct jtx *tx;		/* oldest first */
	size_t ntx;
	uint8_t *buf;
};

static void journal_fini(struct journal *j)
{
	for (size_t i = 0; i < j->ntx; i++)
		free(j->tx[i].pairs);
	free(j->tx);
	free(j->buf);
}

static int jfail(struct journal *j, int code, uint64_t blk, const char *what,
		 struct r4_error *err)
{
	return r4i_fail(err, code, "%s: journal: %s (block %llu)",
		       j->vol->dev->path, what, (unsigned long long)blk);
}

/* A journal block must lie past the fixed blocks, inside the volume. */
static int in_range(const struct journal *j, uint64_t blk)
{
	return blk >= fmt_blk_first_usable(j->vol->blksize) &&
	       blk < j->vol->sb.block_count;
}

/* The most blocks a tx head's counters may speak of: the volume's, or
 * the device's when it is longer (a grow in flight). */
static uint64_t count_bound(const struct r4_vol *vol)
{
	uint64_t dev = vol->dev->size / vol->blksize;

	return dev > vol->sb.block_count ? dev : vol->sb.block_count;
}

/* tx heads from H back to F (exclusive), stored oldest first; a cycle
 * is found through a set of the heads seen, in time linear in the
 * chain's length. */
static int read_chain(struct journal *j, struct r4_error *err)
{
	uint64_t t = j->vol->jh.last_committed_tx;
	uint64_t f = j->vol->jf.last_flushed_tx;
	struct r4_u64map seen;
	size_t cap = 0;
	const char *why;
	int rc = 0;

	r4_u64map_init(&seen, 0);
	while (!rc && t != f) {
		struct jtx *x;
		int dup;

		if (!in_range(j, t)) {
			rc = jfail(j, R4_ECORRUPT, t, "tx head block is "
				   "outside the volume's usable blocks; the "
				   "chain does not reach the last flushed "
				   "tx", err);
			break;
		}
		dup = r4_u64set_add(&seen, t);
		if (dup) {
			rc = dup < 0 ? -ENOMEM : jfail(j, R4_ELOOP, t,
						       "cycle in the prev_tx "
						       "chain of tx heads",
						       err);
			break;
		}
		if (R4_RESERVE(j->tx, cap, j->ntx + 1, 8)) {
			rc = -ENOMEM;
			break;
		}
		rc = vol_read_block(j->vol, t, j->buf, "tx head", err);
		if (rc)
			break;
		x = &j->tx[j->ntx++];
		memset(x, 0, sizeof(*x));
		x->head = t;
		fmt_tx_head_decode(j->buf, &x->th);
		/* a resize transaction's counters are those of the new
		 * size: bounded by the device (doc/format.md §1.9) */
		why = fmt_tx_head_verify(&x->th, count_bound(j->vol));
		if (why)
			rc = jfail(j, R4_ECORRUPT, t, why, err);
		t = x->th.prev_tx;
	}
	r4_u64map_fini(&seen);
	if (rc)
		return rc;
	for (size_t i = 0; i < j->ntx / 2; i++) {	/* oldest first */
		struct jtx tmp = j->tx[i];

		j->tx[i] = j->tx[j->ntx - 1 - i];
		j->tx[j->ntx - 1 - i] = tmp;
	}
	return 0;
}

static int add_pairs(struct journal *j, struct jtx *x,
		     const struct fmt_wander_record *wr, uint64_t r,
		     struct r4_error *err)
{
	struct fmt_wander_pair *p;

	for (uint32_t i = 0; i < wr->nr_pairs; i++)
		if (wr->pairs[i].original < fmt_blk_master(j->vol->blksize) ||
		    wr->pairs[i].original >= j->vol->sb.block_count ||
		    !in_range(j, wr->pairs[i].wandered))
			return jfail(j, R4_ECORRUPT, r, "wander record pair "
				     "names a block outside the volume", err);
	p = realloc(x->pairs, (x->npairs + wr->nr_pairs + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	memcpy(p + x->npairs, wr->pairs, wr->nr_pairs * sizeof(*p));
	x->pairs = p;
	x->npairs += wr->nr_pairs;
	return 0;
}

/* The ring tx head -> records -> tx head, exactly total - 1 records. */
static int read_records(struct journal *j, struct jtx *x,
			struct fmt_wander_record *wr, struct r4_error *err)
{
	uint64_t r = x->th.next_block, n = x->th.total - 1;
	const char *why;

	while (r != x->head) {
		int rc;

		if (n == 0)
			return jfail(j, R4_ECORRUPT, r, "more wander records "
				     "than the tx head's total (or a cycle in "
				     "next_block)", err);
		if (!in_range(j, r))
			return jfail(j, R4_ECORRUPT, r, "wander record block "
				     "is outside the volume's usable blocks",
				     err);
		rc = vol_read_block(j->vol, r, j->buf, "wander record", err);
		if (rc)
			return rc;
		rc = fmt_wander_record_decode(j->buf, j->vol->blksize, wr);
		if (rc)
			return jfail(j, rc, r, "wander record cannot be "
				     "decoded", err);
		why = fmt_wander_record_verify(wr, j->vol->sb.block_count);
		if (!why && wr->total != x->th.total)
			why = "wander record total differs from its tx head's";
		if (why)
			return jfail(j, R4_ECORRUPT, r, why, err);
		rc = add_pairs(j, x, wr, r, err);
		if (rc)
			return rc;
		r = wr->next_block;
		n--;
	}
	if (n != 0)
		return jfail(j, R4_ECORRUPT, x->head, "fewer wander records "
			     "than the tx head's total", err);
	return 0;
}

static int journal_read(struct r4_vol *vol, struct journal *j,
			struct r4_error *err)
{
	struct fmt_wander_record *wr;
	int rc;

	memset(j, 0, sizeof(*j));
	j->vol = vol;
	j->buf = malloc(vol->blksize);
	wr = malloc(sizeof(*wr));
	if (!j->buf || !wr) {
		free(wr);
		return r4i_fail(err, -ENOMEM, "%s: out of memory",
			       vol->dev->path);
	}
	rc = read_chain(j, err);
	for (size_t i = 0; !rc && i < j->ntx; i++) {
		if (j->tx[i].th.total - 1 > vol->sb.block_count)
			rc = jfail(j, R4_ECORRUPT, j->tx[i].head, "tx head "
				   "total is larger than the volume", err);
		else
			rc = read_records(j, &j->tx[i], wr, err);
	}
	free(wr);
	if (rc == -ENOMEM)
		rc = r4i_fail(err, rc, "%s: out of memory", vol->dev->path);
	return rc;
}

/* Re-read the format40 super block (replay may have rewritten it) and
 * lay the footer counters over it, as the kernel does at mount. */
static int reload_super(struct r4_vol *vol, struct r4_error *err)
{
	uint64_t blk = fmt_blk_format40(vol->blksize);
	uint8_t *buf = malloc(vol->blksize);
	struct fmt_format40 sb;
	const char *why;
	int rc;

	if (!buf)
		return r4i_fail(err, -ENOMEM, "%s: out of memory",
			       vol->dev->path);
	rc = vol_read_block(vol, blk, buf, "format40 super block", err);
	if (!rc) {
		fmt_format40_decode(buf, &sb);
		why = fmt_format40_verify(&sb, vol->blksize);
		/* a resize (doc/format.md §1.9) changes it: the new count
		 * must fit the device */
		if (!why && sb.block_count != vol->sb.block_count &&
		    sb.block_count > vol->dev->size / vol->blksize)
			why = "block_count changed by the journal to more "
			      "than the device holds";
		if (why)
			rc = r4i_fail(err, R4_ECORRUPT, "%s: format40 super "
				     "block (block %llu) after the journal: "
				     "%s", vol->dev->path,
				     (unsigned long long)blk, why);
	}
	free(buf);
	if (rc)
		return rc;
	if (sb.block_count != vol->space.block_count) {
		space_fini(&vol->space);
		rc = space_init(&vol->space, vol->dev, vol->blksize,
				sb.block_count, err);
		if (rc)
			return rc;
	}
	vol->sb = sb;
	vol->sb_own = sb;
	if (vol->jf.last_flushed_tx) {
		vol->sb.free_blocks = vol->jf.free_blocks;
		vol->sb.file_count = vol->jf.nr_files;
		vol->sb.next_oid = vol->jf.next_oid;
	}
	return 0;
}

static int replay_one(struct journal *j, const struct jtx *x,
		      struct r4_error *err)
{
	struct r4_vol *vol = j->vol;
	uint64_t fblk = fmt_blk_journal_footer(vol->blksize);
	struct fmt_journal_footer jf = { x->head, x->th.free_blocks,
					 x->th.nr_files, x->th.next_oid };
	int rc = 0;

	for (size_t i = 0; i < x->npairs && !rc; i++) {
		rc = vol_read_block(vol, x->pairs[i].wandered, j->buf,
				    "wandered block", err);
		if (!rc)
			rc = io_write(vol->dev, j->buf, vol->blksize,
				      x->pairs[i].original * vol->blksize,
				      err);
	}
	if (!rc)
		rc = io_sync(vol->dev, err);
	if (!rc)
		rc = vol_read_block(vol, fblk, j->buf, "journal footer", err);
	if (rc)
		return rc;
	fmt_journal_footer_encode(&jf, j->buf);
	rc = io_write(vol->dev, j->buf, vol->blksize, fblk * vol->blksize,
		      err);
	if (!rc)
		rc = io_sync(vol->dev, err);
	if (!rc)
		vol->jf = jf;
	return rc;
}

int txn_replay(struct r4_vol *vol, unsigned *replayed,
	       struct r4_error *err)
{
	struct journal j;
	int rc;

	*replayed = 0;
	if (vol->dev->readonly)
		return r4i_fail(err, -EROFS, "%s: opened read-only: cannot "
			       "replay the journal", vol->dev->path);
	if (vol->jh.last_committed_tx == vol->jf.last_flushed_tx)
		return 0;
	rc = journal_read(vol, &j, err);
	for (size_t i = 0; !rc && i < j.ntx; i++) {
		rc = replay_one(&j, &j.tx[i], err);
		if (!rc)
			(*replayed)++;
	}
	journal_fini(&j);
	if (*replayed) {
		io_cache_drop_clean(&vol->cache);
		space_unload(&vol->space);
	}
	return rc ? rc : reload_super(vol, err);
}

int txn_overlay(struct r4_vol *vol, struct r4_error *err)
{
	uint64_t *from = NULL, *to = NULL;
	size_t n = 0, k = 0;
	struct journal j;
	int rc;

	if (vol->jh.last_committed_tx == vol->jf.last_flushed_tx)
		return 0;
	rc = journal_read(vol, &j, err);
	for (size_t i = 0; !rc && i < j.ntx; i++)
		n += j.tx[i].npairs;
	if (!rc && n) {
		from = malloc(n * sizeof(*from));
		to = malloc(n * sizeof(*to));
		if (!from || !to)
			rc = r4i_fail(err, -ENOMEM, "%s: out of memory",
				     vol->dev->path);
	}
	for (size_t i = 0; !rc && i < j.ntx; i++)
		for (size_t p = 0; p < j.tx[i].npairs; p++, k++) {
			from[k] = j.tx[i].pairs[p].original;
			to[k] = j.tx[i].pairs[p].wandered;
		}
	if (!rc)
		rc = txn_overlay_set(vol, from, to, n, err);
	if (!rc && j.ntx) {
		const struct jtx *x = &j.tx[j.ntx - 1];

		vol->jf = (struct fmt_journal_footer){
			x->head, x->th.free_blocks, x->th.nr_files,
			x->th.next_oid };
		vol->overlaid = (unsigned)j.ntx;
		io_cache_drop_clean(&vol->cache);
		space_unload(&vol->space);
		rc = reload_super(vol, err);
	}
	free(from);
	free(to);
	journal_fini(&j);
	return rc;
}
