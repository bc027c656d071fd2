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

/* Pick up to need scratch blocks below limit into s (their count in *k):
 * free now and in the restored bitmap (obm: room for one bitmap block),
 * no bitmap block, neither tx head (now and restored), none restored. */
static int pick_scratch(struct r4_vol *vol, const struct txn_restore *r,
			const struct rstate *st, uint64_t limit, uint8_t *obm,
			uint64_t *s, size_t need, size_t *k,
			struct r4_error *err)
{
	uint64_t first = fmt_blk_first_usable(vol->blksize);
	uint64_t cur = vol->jh.last_committed_tx, cur_region = (uint64_t)-1;
	int rc, have = 0;

	for (uint64_t b = first; b < limit && *k < need; b++) {
		uint64_t region = b / vol->space.bpb;

		if (b % vol->space.bpb == 0 || b == cur ||
		    b == st->jh.last_committed_tx || find(r, b) != NONE)
			continue;
		rc = space_test(&vol->space, b, err);
		if (rc < 0)
			return rc;
		if (rc)
			continue;
		if (region != cur_region) {
			rc = restored_bitmap(vol, r, region, obm, &have, err);
			if (rc)
				return rc;
			cur_region = region;
		}
		if (have && fmt_bitmap_test(obm, b % vol->space.bpb))
			continue;
		s[(*k)++] = b;
	}
	return 0;
}

int txn_restore_plan(struct r4_vol *vol, const struct txn_restore *r,
		     uint64_t **scratch, size_t *nscratch,
		     struct r4_error *err)
{
	uint32_t bs = vol->blksize;
	uint64_t limit = r->limit;
	uint8_t *buf = malloc(bs), *obm = malloc(bs);
	struct rstate st;
	uint64_t *s = NULL;
	size_t need, k = 0;
	int rc;

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
	rc = pick_scratch(vol, r, &st, limit, obm, s, need, &k, err);
	if (rc)
		goto out;
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

/* One restore's log: what txn_restore_run writes where. */
struct rlog {
	const struct txn_restore *r;
	struct rstate st;
	uint64_t cur;		/* the tx head the journal header names now */
	size_t *ow, now;	/* the overwrite set: indexes into r->blk */
	uint64_t *wand;		/* wand[j]: where ow[j]'s copy wanders */
	uint64_t *log;		/* log[0] the tx head, then the records */
	size_t nlog;
	uint8_t *buf;		/* one block */
};

/* The volume can take a raw restore: no open transaction, nothing
 * committed waiting for replay. */
static int run_ready(struct r4_vol *vol, struct r4_error *err)
{
	if (vol->txn)
		return r4i_fail(err, R4_EBUSY, "%s: a transaction is open",
				vol->dev->path);
	if (vol->jh.last_committed_tx != vol->jf.last_flushed_tx)
		return r4i_fail(err, R4_EINVAL, "%s: a committed transaction "
				"waits for replay", vol->dev->path);
	return 0;
}

/* The overwrite set: every block but the two journal blocks, the
 * format40 super block first (doc/kernel.md §2.3); room for the
 * wandered copies beside it. */
static int overwrite_set(struct r4_vol *vol, struct rlog *L,
			 struct r4_error *err)
{
	const struct txn_restore *r = L->r;
	uint64_t sbblk = fmt_blk_format40(vol->blksize);

	L->ow = malloc(r->n * sizeof(*L->ow));
	L->wand = malloc(r->n * sizeof(*L->wand));
	if (!L->ow || !L->wand)
		return nomem(vol, err);
	if (find(r, sbblk) != NONE)
		L->ow[L->now++] = find(r, sbblk);
	for (size_t i = 0; i < r->n; i++)
		if (i != L->st.ijh && i != L->st.ijf && r->blk[i] != sbblk)
			L->ow[L->now++] = i;
	return 0;
}

/* Lay the log out on the scratch blocks, in order: log[0] the tx head,
 * never the current one (header == footer would read as nothing to
 * replay); then the records, then the wandered copies. */
static int lay_out_log(struct r4_vol *vol, struct rlog *L,
		       const uint64_t *scratch, size_t ns,
		       struct r4_error *err)
{
	uint32_t cap = fmt_wander_capacity(vol->blksize);
	size_t now = L->now, nrec = now ? (now - 1) / cap + 1 : 0;
	size_t need = log_need(vol->blksize, now), nlog = nrec + 1, k = 0;

	L->nlog = nlog;
	if (ns < need)
		return r4i_fail(err, R4_EINVAL, "%s: %zu scratch blocks for a "
				"restore that needs %zu", vol->dev->path, ns,
				need);
	L->log = malloc(nlog * sizeof(*L->log));
	if (!L->log)
		return nomem(vol, err);
	for (size_t i = 0; i < ns; i++)
		if (scratch[i] != L->cur) {
			L->log[0] = scratch[i];
			break;
		}
	for (size_t i = 0, j = 1; i < ns && j < nlog + now; i++) {
		if (scratch[i] == L->log[0])
			continue;
		if (j < nlog)
			L->log[j] = scratch[i];
		else
			L->wand[j - nlog] = scratch[i];
		j++;
		k = j;
	}
	if (nlog + now > 1 && k != nlog + now)
		return r4i_fail(err, R4_EINVAL, "%s: too few scratch blocks",
				vol->dev->path);
	return 0;
}

/* Step 1: the wandered copies, the wander records (in rec), the tx head
 * with the current transaction as its previous one. */
static int write_log(struct r4_vol *vol, const struct rlog *L,
		     struct fmt_wander_record *rec, struct r4_error *err)
{
	const struct txn_restore *r = L->r;
	uint32_t bs = vol->blksize, cap = fmt_wander_capacity(bs);
	const uint64_t *log = L->log;
	size_t nlog = L->nlog;
	int rc = 0;

	for (size_t j = 0; j < L->now && !rc; j++) {
		rc = r->old(r->ctx, L->ow[j], L->buf, err);
		if (!rc)
			rc = wr(vol, L->wand[j], L->buf, err);
	}
	for (size_t q = 1; q < nlog && !rc; q++) {
		size_t from = (q - 1) * cap;

		fmt_wander_record_init(rec);
		rec->total = (uint32_t)nlog;
		rec->serial = (uint32_t)q;
		rec->next_block = log[q + 1 < nlog ? q + 1 : 0];
		for (size_t j = from; j < L->now && j < from + cap; j++)
			rec->pairs[rec->nr_pairs++] = (struct fmt_wander_pair){
				r->blk[L->ow[j]], L->wand[j] };
		rc = fmt_wander_record_encode(rec, bs, L->buf);
		if (rc)
			rc = r4i_fail(err, rc, "%s: cannot encode a wander "
				     "record", vol->dev->path);
		else
			rc = wr(vol, log[q], L->buf, err);
	}
	if (!rc)
		rc = put_head(vol, log[0], (uint32_t)nlog, L->cur,
			      nlog > 1 ? log[1] : log[0], &L->st, L->buf, err);
	if (!rc)
		rc = io_sync(vol->dev, err);
	return rc;
}

/* Step 2, the commit point: the journal header names the tx head. */
static int commit_log(struct r4_vol *vol, const struct rlog *L,
		      struct r4_error *err)
{
	uint64_t jhb = fmt_blk_journal_header(vol->blksize);
	struct fmt_journal_header h = { L->log[0] };
	int rc = vol_read_block(vol, jhb, L->buf, "journal header", err);

	if (rc)
		return rc;
	fmt_journal_header_encode(&h, L->buf);
	rc = wr(vol, jhb, L->buf, err);
	return rc ? rc : io_sync(vol->dev, err);
}

/* Step 3, home: the super block alone first, then the rest. */
static int write_home(struct r4_vol *vol, const struct rlog *L,
		      struct r4_error *err)
{
	const struct txn_restore *r = L->r;
	uint64_t sbblk = fmt_blk_format40(vol->blksize);
	int rc = 0;

	for (size_t j = 0; j < L->now && !rc; j++) {
		rc = r->old(r->ctx, L->ow[j], L->buf, err);
		if (!rc)
			rc = wr(vol, r->blk[L->ow[j]], L->buf, err);
		if (!rc && j == 0 && r->blk[L->ow[0]] == sbblk && L->now > 1)
			rc = io_sync(vol->dev, err);
	}
	return rc ? rc : io_sync(vol->dev, err);
}

/* Step 4, the footer: the transaction is home, nothing to replay. */
static int write_footer(struct r4_vol *vol, const struct rlog *L,
			struct r4_error *err)
{
	uint64_t jfb = fmt_blk_journal_footer(vol->blksize);
	struct fmt_journal_footer f = { L->log[0], L->st.free_blocks,
					L->st.nr_files, L->st.next_oid };
	int rc = vol_read_block(vol, jfb, L->buf, "journal footer", err);

	if (rc)
		return rc;
	fmt_journal_footer_encode(&f, L->buf);
	rc = wr(vol, jfb, L->buf, err);
	return rc ? rc : io_sync(vol->dev, err);
}

/* Step 5, the journal blocks back (ojh, ojf: as restored): the tx head
 * (read by nobody now) names the restored footer's transaction as its
 * previous one, so the footer first (the header's transaction then
 * follows it), then the header (nothing to replay). */
static int journal_back(struct r4_vol *vol, const struct rlog *L,
			const uint8_t *ojh, const uint8_t *ojf,
			struct r4_error *err)
{
	uint64_t jhb = fmt_blk_journal_header(vol->blksize);
	uint64_t jfb = fmt_blk_journal_footer(vol->blksize);
	const uint64_t *log = L->log;
	int rc;

	rc = put_head(vol, log[0], (uint32_t)L->nlog,
		      L->st.jf.last_flushed_tx,
		      L->nlog > 1 ? log[1] : log[0], &L->st, L->buf, err);
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
	return rc;
}

/* Step 6: the scratch blocks (free before and after) as they were. */
static int scratch_back(struct r4_vol *vol, const struct rlog *L,
			const uint64_t *scratch, size_t ns,
			int (*saved)(void *ctx, size_t i, uint8_t *buf,
				     struct r4_error *err),
			struct r4_error *err)
{
	int rc = 0;

	for (size_t i = 0; i < ns && !rc; i++) {
		rc = saved(L->r->ctx, i, L->buf, err);
		if (!rc)
			rc = wr(vol, scratch[i], L->buf, err);
	}
	return rc ? rc : io_sync(vol->dev, err);
}

int txn_restore_run(struct r4_vol *vol, const struct txn_restore *r,
		    const uint64_t *scratch, size_t ns,
		    int (*saved)(void *ctx, size_t i, uint8_t *buf,
				 struct r4_error *err),
		    struct r4_error *err)
{
	uint32_t bs = vol->blksize;
	struct rlog L = { .r = r, .cur = vol->jh.last_committed_tx,
			  .buf = malloc(bs) };
	struct fmt_wander_record *rec = malloc(sizeof(*rec));
	uint8_t *ojh = malloc(bs), *ojf = malloc(bs);
	int rc;

	rc = !rec || !L.buf || !ojh || !ojf ? nomem(vol, err)
					   : run_ready(vol, err);
	if (!rc)
		rc = restored_state(vol, r, L.buf, &L.st, err);
	if (!rc)
		rc = r->old(r->ctx, L.st.ijh, ojh, err);
	if (!rc)
		rc = r->old(r->ctx, L.st.ijf, ojf, err);
	if (!rc)
		rc = overwrite_set(vol, &L, err);
	if (!rc)
		rc = lay_out_log(vol, &L, scratch, ns, err);
	if (rc)
		goto out;
	rc = write_log(vol, &L, rec, err);
	if (!rc)
		rc = commit_log(vol, &L, err);
	if (!rc)
		rc = write_home(vol, &L, err);
	if (!rc)
		rc = write_footer(vol, &L, err);
	if (!rc)
		rc = journal_back(vol, &L, ojh, ojf, err);
	if (!rc)
		rc = scratch_back(vol, &L, scratch, ns, saved, err);
	io_cache_drop_clean(&vol->cache);
	space_unload(&vol->space);
out:
	if (rc)
		vol->failed = 1;
	free(rec);
	free(L.buf);
	free(ojh);
	free(ojf);
	free(L.ow);
	free(L.wand);
	free(L.log);
	return rc;
}
