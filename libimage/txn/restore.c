/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: a raw restore through the wandering log (txn_restore_plan,
 * txn_restore_run; the protocol is in txn.h). */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/txn/txn_int.h"
#include "libimage/util/err.h"
#include "format/bitmap.h"
#include "format/super.h"

#define NONE ((size_t)-1)

static int nomem(struct r4_vol *vol, struct r4_error *err)
{
	return r4i_fail(err, -ENOMEM, "%s: out of memory", vol->dev->path);
}

/* Index of block b in the ascending list, or NONE. */
static size_t find(const struct txn_restore *r, uint64_t b)
{
	size_t lo = 0, hi = r->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->blk[mid] == b)
			return mid;
		if (r->blk[mid] < b)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NONE;
}

/* What the restored state's journal and counters are. */
struct rstate {
	struct fmt_journal_header jh;
	struct fmt_journal_footer jf;
	uint64_t free_blocks, nr_files, next_oid;	/* as a mount sees them */
	size_t ijh, ijf;
};

static int unsupp(struct r4_vol *vol, const char *why, struct r4_error *err)
{
	return r4i_fail(err, R4_EUNSUPP, "%s: %s", vol->dev->path, why);
}

/* Check that the restore can go through the journal; read the restored
 * journal blocks and counters. */
static int restored_state(struct r4_vol *vol, const struct txn_restore *r,
			  uint8_t *buf, struct rstate *st,
			  struct r4_error *err)
{
	uint32_t bs = vol->blksize;
	uint64_t sbblk = fmt_blk_format40(bs);
	struct fmt_format40 sb;
	size_t isb;
	int rc;

	for (size_t i = 0; i < r->n; i++) {
		if (r->blk[i] < fmt_blk_master(bs) ||
		    r->blk[i] >= vol->sb.block_count)
			return unsupp(vol, "a block to restore lies outside the "
				      "blocks the journal can write", err);
		if (i && r->blk[i] <= r->blk[i - 1])
			return r4i_fail(err, R4_EINVAL, "%s: the blocks to "
				       "restore are not ascending",
				       vol->dev->path);
	}
	st->ijh = find(r, fmt_blk_journal_header(bs));
	st->ijf = find(r, fmt_blk_journal_footer(bs));
	if (st->ijh == NONE || st->ijf == NONE)
		return r4i_fail(err, R4_EINVAL, "%s: a restore names both "
			       "journal control blocks", vol->dev->path);
	rc = r->old(r->ctx, st->ijh, buf, err);
	if (rc)
		return rc;
	fmt_journal_header_decode(buf, &st->jh);
	rc = r->old(r->ctx, st->ijf, buf, err);
	if (rc)
		return rc;
	fmt_journal_footer_decode(buf, &st->jf);
	if (st->jh.last_committed_tx != st->jf.last_flushed_tx)
		return unsupp(vol, "the restored volume has a committed "
			      "transaction not yet written home", err);
	isb = find(r, sbblk);
	rc = isb != NONE ? r->old(r->ctx, isb, buf, err)
			 : vol_read_block(vol, sbblk, buf,
					  "format40 super block", err);
	if (rc)
		return rc;
	fmt_format40_decode(buf, &sb);
	if (fmt_format40_verify(&sb, bs) || sb.block_count !=
	    vol->sb.block_count)
		return unsupp(vol, "the restored format40 super block "
			      "differs in size or is not valid", err);
	st->free_blocks = sb.free_blocks;
	st->nr_files = sb.file_count;
	st->next_oid = sb.next_oid;
	if (st->jf.last_flushed_tx) {
		st->free_blocks = st->jf.free_blocks;
		st->nr_files = st->jf.nr_files;
		st->next_oid = st->jf.next_oid;
	}
	return 0;
}

/* Region k's bitmap as the restore leaves it (buf), or NULL: as now. */
static int restored_bitmap(struct r4_vol *vol, const struct txn_restore *r,
			   uint64_t k, uint8_t *buf, int *have,
			   struct r4_error *err)
{
	size_t i = find(r, fmt_bitmap_blk(k, vol->blksize));

	*have = i != NONE;
	return *have ? r->old(r->ctx, i, buf, err) : 0;
}

/* Blocks a restore of now blocks writes to the log: records + head +
 * wandered copies (at least 2: the head must avoid the current one). */
static size_t log_need(uint32_t bs, size_t now)
{
	uint32_t cap = fmt_wander_capacity(bs);
	size_t nrec = now ? (now - 1) / cap + 1 : 0;
	size_t need = nrec + 1 + now;

	return need < 2 ? 2 : need;
}

int txn_restore_plan(struct r4_vol *vol, const struct txn_restore *r,
		     uint64_t **scratch, size_t *nscratch,
		     struct r4_error *err)
{
	uint32_t bs = vol->blksize;
	uint64_t first = fmt_blk_first_usable(bs), limit = r->limit;
	uint64_t cur = vol->jh.last_committed_tx, cur_region = (uint64_t)-1;
	uint8_t *buf = malloc(bs), *obm = malloc(bs);
	struct rstate st;
	uint64_t *s = NULL;
	size_t need, k = 0;
	int rc, have = 0;

	*scratch = NULL;
	*nscratch = 0;
	if (!buf || !obm) {
		free(buf);
		free(obm);
		return nomem(vol, err);
	}
	rc = restored_state(vol, r, buf, &st, err);
	if (rc)
		goto out;
	need = log_need(bs, r->n - 2);
	s = malloc(need * sizeof(*s));
	if (!s) {
		rc = nomem(vol, err);
		goto out;
	}
	if (limit > vol->sb.block_count)
		limit = vol->sb.block_count;
	for (uint64_t b = first; b < limit && k < need; b++) {
		uint64_t region = b / vol->space.bpb;

		if (b % vol->space.bpb == 0 || b == cur ||
		    b == st.jh.last_committed_tx || find(r, b) != NONE)
			continue;
		rc = space_test(&vol->space, b, err);
		if (rc < 0)
			goto out;
		if (rc)
			continue;
		if (region != cur_region) {
			rc = restored_bitmap(vol, r, region, obm, &have, err);
			if (rc)
				goto out;
			cur_region = region;
		}
		if (have && fmt_bitmap_test(obm, b % vol->space.bpb))
			continue;
		s[k++] = b;
	}
	rc = 0;
	if (k < need) {
		rc = r4i_fail(err, R4_ENOSPC, "%s: the journal needs %zu blocks "
			     "free both now and after the restore, and not "
			     "restored; there are %zu", vol->dev->path, need,
			     k);
		goto out;
	}
	*scratch = s;
	*nscratch = k;
	s = NULL;
out:
	free(s);
	free(buf);
	free(obm);
	return rc;
}

static int wr(struct r4_vol *vol, uint64_t blk, const uint8_t *data,
	      struct r4_error *err)
{
	return io_write(vol->dev, data, vol->blksize, blk * vol->blksize, err);
}

/* Write the tx head at blk. */
static int put_head(struct r4_vol *vol, uint64_t blk, uint32_t total,
		    uint64_t prev, uint64_t next, const struct rstate *st,
		    uint8_t *buf, struct r4_error *err)
{
	struct fmt_tx_head th;

	fmt_tx_head_init(&th);
	th.total = total;
	th.prev_tx = prev;
	th.next_block = next;
	th.free_blocks = st->free_blocks;
	th.nr_files = st->nr_files;
	th.next_oid = st->next_oid;
	memset(buf, 0, vol->blksize);
	fmt_tx_head_encode(&th, buf);
	return wr(vol, blk, buf, err);
}

int txn_restore_run(struct r4_vol *vol, const struct txn_restore *r,
		    const uint64_t *scratch, size_t ns,
		    int (*saved)(void *ctx, size_t i, uint8_t *buf,
				 struct r4_error *err),
		    struct r4_error *err)
{
	uint32_t bs = vol->blksize, cap = fmt_wander_capacity(bs);
	uint64_t jhb = fmt_blk_journal_header(bs);
	uint64_t jfb = fmt_blk_journal_footer(bs);
	uint64_t sbblk = fmt_blk_format40(bs);
	uint64_t cur = vol->jh.last_committed_tx, *log = NULL;
	struct fmt_wander_record *rec = malloc(sizeof(*rec));
	uint8_t *buf = malloc(bs), *ojh = malloc(bs), *ojf = malloc(bs);
	size_t *ow = NULL, now = 0, nrec, nlog, need, k = 0;
	uint64_t *wand = NULL;
	struct rstate st;
	int rc;

	if (!rec || !buf || !ojh || !ojf) {
		rc = nomem(vol, err);
		goto out;
	}
	if (vol->txn) {
		rc = r4i_fail(err, R4_EBUSY, "%s: a transaction is open",
			     vol->dev->path);
		goto out;
	}
	if (cur != vol->jf.last_flushed_tx) {
		rc = r4i_fail(err, R4_EINVAL, "%s: a committed transaction "
			     "waits for replay", vol->dev->path);
		goto out;
	}
	rc = restored_state(vol, r, buf, &st, err);
	if (!rc)
		rc = r->old(r->ctx, st.ijh, ojh, err);
	if (!rc)
		rc = r->old(r->ctx, st.ijf, ojf, err);
	if (rc)
		goto out;
	/* the overwrite set: every block but the two journal blocks, the
	 * format40 super block first (doc/kernel.md §2.3) */
	ow = malloc(r->n * sizeof(*ow));
	wand = malloc(r->n * sizeof(*wand));
	if (!ow || !wand) {
		rc = nomem(vol, err);
		goto out;
	}
	if (find(r, sbblk) != NONE)
		ow[now++] = find(r, sbblk);
	for (size_t i = 0; i < r->n; i++)
		if (i != st.ijh && i != st.ijf && r->blk[i] != sbblk)
			ow[now++] = i;
	nrec = now ? (now - 1) / cap + 1 : 0;
	nlog = nrec + 1;
	need = log_need(bs, now);
	if (ns < need) {
		rc = r4i_fail(err, R4_EINVAL, "%s: %zu scratch blocks for a "
			     "restore that needs %zu", vol->dev->path, ns,
			     need);
		goto out;
	}
	/* log[0] the tx head: never the current one (header == footer
	 * would read as nothing to replay); then the records, then the
	 * wandered copies, from the scratch blocks in order */
	log = malloc(nlog * sizeof(*log));
	if (!log) {
		rc = nomem(vol, err);
		goto out;
	}
	for (size_t i = 0; i < ns; i++)
		if (scratch[i] != cur) {
			log[0] = scratch[i];
			break;
		}
	for (size_t i = 0, j = 1; i < ns && j < nlog + now; i++) {
		if (scratch[i] == log[0])
			continue;
		if (j < nlog)
			log[j] = scratch[i];
		else
			wand[j - nlog] = scratch[i];
		j++;
		k = j;
	}
	if (nlog + now > 1 && k != nlog + now) {
		rc = r4i_fail(err, R4_EINVAL, "%s: too few scratch blocks",
			     vol->dev->path);
		goto out;
	}
	/* 1. the wandered copies, the records, the tx head */
	for (size_t j = 0; j < now && !rc; j++) {
		rc = r->old(r->ctx, ow[j], buf, err);
		if (!rc)
			rc = wr(vol, wand[j], buf, err);
	}
	for (size_t q = 1; q < nlog && !rc; q++) {
		size_t from = (q - 1) * cap;

		fmt_wander_record_init(rec);
		rec->total = (uint32_t)nlog;
		rec->serial = (uint32_t)q;
		rec->next_block = log[q + 1 < nlog ? q + 1 : 0];
		for (size_t j = from; j < now && j < from + cap; j++)
			rec->pairs[rec->nr_pairs++] = (struct fmt_wander_pair){
				r->blk[ow[j]], wand[j] };
		rc = fmt_wander_record_encode(rec, bs, buf);
		if (rc)
			rc = r4i_fail(err, rc, "%s: cannot encode a wander "
				     "record", vol->dev->path);
		else
			rc = wr(vol, log[q], buf, err);
	}
	if (!rc)
		rc = put_head(vol, log[0], (uint32_t)nlog, cur,
			      nlog > 1 ? log[1] : log[0], &st, buf, err);
	if (!rc)
		rc = io_sync(vol->dev, err);
	/* 2. the commit point: the journal header names the tx head */
	if (!rc)
		rc = vol_read_block(vol, jhb, buf, "journal header", err);
	if (!rc) {
		struct fmt_journal_header h = { log[0] };

		fmt_journal_header_encode(&h, buf);
		rc = wr(vol, jhb, buf, err);
	}
	if (!rc)
		rc = io_sync(vol->dev, err);
	/* 3. home: the super block alone first, then the rest */
	for (size_t j = 0; j < now && !rc; j++) {
		rc = r->old(r->ctx, ow[j], buf, err);
		if (!rc)
			rc = wr(vol, r->blk[ow[j]], buf, err);
		if (!rc && j == 0 && r->blk[ow[0]] == sbblk && now > 1)
			rc = io_sync(vol->dev, err);
	}
	if (!rc)
		rc = io_sync(vol->dev, err);
	/* 4. the footer: the transaction is home, nothing to replay */
	if (!rc)
		rc = vol_read_block(vol, jfb, buf, "journal footer", err);
	if (!rc) {
		struct fmt_journal_footer f = { log[0], st.free_blocks,
						st.nr_files, st.next_oid };

		fmt_journal_footer_encode(&f, buf);
		rc = wr(vol, jfb, buf, err);
	}
	if (!rc)
		rc = io_sync(vol->dev, err);
	/* 5. the journal blocks back: the tx head (read by nobody now)
	 * names the restored footer's transaction as its previous one, so
	 * the footer first (the header's transaction then follows it),
	 * then the header (nothing to replay) */
	if (!rc)
		rc = put_head(vol, log[0], (uint32_t)nlog,
			      st.jf.last_flushed_tx,
			      nlog > 1 ? log[1] : log[0], &st, buf, err);
	if (!rc)
		rc = io_sync(vol->dev, err);
	if (!rc)
		rc = wr(vol, jfb, ojf, err);
	if (!rc)
		rc = io_sync(vol->dev, err);
	if (!rc)
		rc = wr(vol, jhb, ojh, err);
	if (!rc)
		rc = io_sync(vol->dev, err);
	/* 6. the scratch blocks (free before and after) as they were */
	for (size_t i = 0; i < ns && !rc; i++) {
		rc = saved(r->ctx, i, buf, err);
		if (!rc)
			rc = wr(vol, scratch[i], buf, err);
	}
	if (!rc)
		rc = io_sync(vol->dev, err);
	io_cache_drop_clean(&vol->cache);
	space_unload(&vol->space);
out:
	if (rc)
		vol->failed = 1;
	free(rec);
	free(buf);
	free(ojh);
	free(ojf);
	free(ow);
	free(wand);
	free(log);
	return rc;
}
