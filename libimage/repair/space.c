/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the repair's space pass: every bitmap block made equal to the
 * blocks the check found in use (the layout, tree nodes, extent blocks,
 * the bitmap block itself, the bits past the end of the volume set),
 * with a fresh checksum; the free block count, the file count and the
 * next object id set from what the tree holds (the commit writes them
 * to the super block and the journal footer); the status block cleared;
 * the backup copies rewritten. Bitmap blocks go batch by batch, each
 * batch one transaction whose counters match the bitmaps it leaves on
 * disk, so a cut between batches leaves a consistent volume that a rerun
 * finishes. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/repair/repair.h"
#include "libimage/txn/txn.h"
#include "libimage/util/err.h"
#include "format/bitmap.h"
#include "format/super.h"

struct sp {
	struct rep *R;
	struct txn *t;
	unsigned inbatch;
	uint64_t free_total, files, next_oid;
};

static int sp_begin(struct sp *p)
{
	return txn_begin(p->R->vol, &p->t, p->R->err);
}

static int sp_commit(struct sp *p)
{
	int rc;

	txn_set_counters(p->t, p->free_total, p->files, p->next_oid);
	rc = txn_commit(p->t, p->R->err);
	p->t = NULL;
	p->inbatch = 0;
	if (!rc)
		p->R->r->transactions++;
	return rc;
}

/* What bitmap block k must hold, into exp (a whole block). */
static void expected(const struct chk *c, uint64_t k, uint8_t *exp)
{
	const uint8_t *chunk = chk_map_chunk(&c->used, k);
	uint64_t start = fmt_bitmap_region_start(k, c->bs);
	uint64_t len = fmt_bitmap_region_len(k, c->blocks, c->bs);
	uint64_t own = fmt_bitmap_blk(k, c->bs) - start;
	size_t n = (size_t)(fmt_bitmap_bpb(c->bs) / 8);

	memset(exp, 0, c->bs);
	if (chunk)
		memcpy(exp + FMT_BITMAP_OFF_BITS, chunk, n);
	if (own < len)
		fmt_bitmap_set(exp, own);
	fmt_bitmap_fill_tail(exp, c->bs, len);
	fmt_bitmap_csum_update(exp, c->bs);
}

static int fix_region(struct sp *p, uint64_t k, uint8_t *exp)
{
	struct rep *R = p->R;
	struct chk *c = &R->c;
	struct space *s = &R->vol->space;
	uint64_t len = fmt_bitmap_region_len(k, c->blocks, c->bs);
	uint64_t start = fmt_bitmap_region_start(k, c->bs);
	uint64_t leak = 0, claim = 0, z_old, z_new;
	const uint8_t *old;
	int rc = space_load(s, k, R->err), code;

	if (rc)
		return rc;
	old = s->map[k];
	expected(c, k, exp);
	if (!memcmp(old, exp, c->bs))
		return 0;
	for (uint64_t b = 0; b < len; b++) {
		int o = fmt_bitmap_test(old, b), w = fmt_bitmap_test(exp, b);

		leak += o && !w;
		claim += !o && w;
	}
	code = claim ? R4_CHK_SPACE_FREE : leak ? R4_CHK_SPACE_LEAK
		: fmt_bitmap_verify(old, c->bs) ? R4_CHK_BITMAP_CSUM
		: R4_CHK_BITMAP_TAIL;
	z_old = fmt_bitmap_count_zero(old, 0, len);
	z_new = fmt_bitmap_count_zero(exp, 0, len);
	p->free_total = p->free_total - z_old + z_new;
	memcpy(s->map[k], exp, c->bs);
	rc = txn_rewrite_bitmap(p->t, k, R->err);
	if (rc)
		return rc;
	R->r->blocks_freed += leak;
	R->r->blocks_claimed += claim;
	rep_action(R, code, fmt_bitmap_blk(k, c->bs), 0,
		   leak ? R4_LOSS_SPACE : R4_LOSS_NONE, leak,
		   "bitmap block %llu (blocks %llu..%llu) rewritten from the "
		   "blocks in use: %llu marked used, %llu marked free",
		   (unsigned long long)fmt_bitmap_blk(k, c->bs),
		   (unsigned long long)start,
		   (unsigned long long)(start + len - 1),
		   (unsigned long long)claim, (unsigned long long)leak);
	if (++p->inbatch >= R->batch) {
		rc = sp_commit(p);
		if (!rc)
			rc = sp_begin(p);
	}
	return rc;
}

static int fix_status(struct sp *p, uint8_t *buf)
{
	struct rep *R = p->R;
	struct r4_vol *vol = R->vol;
	uint64_t blk = fmt_blk_status(vol->blksize);
	struct fmt_status st;
	struct io_block *b;
	int rc;

	/* Without its magic the kernel takes the block for an old volume's
	 * and mounts normally: nothing to fix then. */
	if (!vol->status_garbage &&
	    (!vol->status_present || vol->status.status == FMT_STATUS_OK))
		return 0;
	rc = txn_capture_fixed(p->t, blk, &b, R->err);
	if (rc)
		return rc;
	(void)buf;
	fmt_status_init(&st);
	memset(b->data, 0, vol->blksize);
	fmt_status_encode(&st, b->data);
	txn_put(p->t, b);
	if (vol->status_garbage)
		rep_action(R, R4_CHK_STATUS, blk, 0, R4_LOSS_NONE, 0,
			   "status block held garbage: written afresh (magic, "
			   "status 0)");
	else
		rep_action(R, R4_CHK_STATUS, blk, 0, R4_LOSS_NONE, 0,
			   "status block cleared (was %#llx)",
			   (unsigned long long)vol->status.status);
	vol->status = st;
	vol->status_present = 1;
	vol->status_garbage = 0;
	return 0;
}

static int fix_backups(struct sp *p)
{
	struct rep *R = p->R;
	struct chk *c = &R->c;
	struct r4_vol *vol = R->vol;
	struct fmt_backup want;
	uint8_t wantbuf[FMT_BACKUP_SIZE];
	uint32_t pset[FMT_PSET_COUNT];
	int rc;

	if (vol->sb.update_backup) {
		vol->sb.update_backup = 0;
		rep_action(R, R4_CHK_BACKUP, fmt_blk_format40(c->bs), 0,
			   R4_LOSS_NONE, 0, "version bit 31 (backups to be "
			   "rewritten) cleared");
	}
	memset(pset, 0, sizeof(pset));
	pset[FMT_PSET_FILE] = FMT_OBJ_DIR40;
	if (c->root_pset_found)
		memcpy(pset, c->root_pset, sizeof(pset));
	fmt_backup_make(&vol->master, &vol->sb, pset, &want);
	memset(wantbuf, 0, sizeof(wantbuf));
	fmt_backup_encode(&want, wantbuf);
	for (size_t i = 0; i < c->nbackups; i++) {
		uint64_t blk = c->backups[i];
		struct io_block *b;

		if (blk >= c->blocks)
			continue;
		rc = vol_read_block(vol, blk, c->scratch, "backup block",
				    R->err);
		if (rc)
			return rc;
		if (!memcmp(c->scratch, wantbuf, sizeof(wantbuf)))
			continue;
		rc = txn_capture_fixed(p->t, blk, &b, R->err);
		if (rc)
			return rc;
		memcpy(b->data, wantbuf, sizeof(wantbuf));
		txn_put(p->t, b);
		rep_action(R, R4_CHK_BACKUP, blk, 0, R4_LOSS_NONE, 0,
			   "backup copy %zu (block %llu) rewritten from the "
			   "super blocks", i, (unsigned long long)blk);
	}
	return 0;
}

static void counters(struct sp *p)
{
	struct rep *R = p->R;
	struct chk *c = &R->c;
	const struct r4_vol *vol = R->vol;
	uint64_t next = c->next_oid;

	/* From what the check counted, not its tables: a check that
	 * found only space problems kept none (repair.c). */
	if (c->rep->objects && c->id_max >= next)
		next = c->id_max + 1;
	if (next < FMT_FIRST_FREE_OID)
		next = FMT_FIRST_FREE_OID;
	p->files = c->rep->objects;
	p->next_oid = next;
	if (vol->sb_own.file_count != p->files ||
	    (vol->jf.last_flushed_tx && vol->jf.nr_files != p->files))
		rep_action(R, R4_CHK_FILE_COUNT, fmt_blk_format40(c->bs), 0,
			   R4_LOSS_NONE, 0, "file count set to %llu (was %llu, "
			   "journal footer %llu)", (unsigned long long)p->files,
			   (unsigned long long)vol->sb_own.file_count,
			   (unsigned long long)vol->jf.nr_files);
	if (next != vol->sb.next_oid)
		rep_action(R, R4_CHK_OID, fmt_blk_format40(c->bs), 0,
			   R4_LOSS_NONE, 0, "next object id set to %#llx (was "
			   "%#llx)", (unsigned long long)next,
			   (unsigned long long)vol->sb.next_oid);
	else if (vol->jf.last_flushed_tx && vol->jf.next_oid != next)
		rep_action(R, R4_CHK_JOURNAL,
			   fmt_blk_journal_footer(c->bs), 0, R4_LOSS_NONE, 0,
			   "journal footer next object id set to %#llx (was "
			   "%#llx)", (unsigned long long)next,
			   (unsigned long long)vol->jf.next_oid);
}

static int old_free(struct rep *R, uint64_t *out)
{
	struct space *s = &R->vol->space;
	uint64_t n = fmt_bitmap_count(R->c.blocks, R->c.bs), z = 0;

	for (uint64_t k = 0; k < n; k++) {
		int rc = space_load(s, k, R->err);

		if (rc)
			return rc;
		z += fmt_bitmap_count_zero(s->map[k], 0,
					   fmt_bitmap_region_len(k, R->c.blocks,
								 R->c.bs));
	}
	*out = z;
	return 0;
}

int rep_fix_space(struct rep *R, int *changed)
{
	struct sp p = { .R = R };
	struct chk *c = &R->c;
	uint64_t n = fmt_bitmap_count(c->blocks, c->bs), sbfree, jffree;
	uint8_t *exp = malloc(c->bs);
	int rc;

	if (!exp)
		return r4i_fail(R->err, -ENOMEM, "out of memory");
	sbfree = R->vol->sb_own.free_blocks;
	jffree = R->vol->jf.free_blocks;
	counters(&p);
	rc = old_free(R, &p.free_total);
	if (!rc)
		rc = sp_begin(&p);
	if (!rc)
		rc = fix_status(&p, exp);
	for (uint64_t k = 0; k < n && !rc; k++)
		rc = fix_region(&p, k, exp);
	if (!rc)
		rc = fix_backups(&p);
	if (!rc && (sbfree != p.free_total ||
		    (R->vol->jf.last_flushed_tx && jffree != p.free_total)))
		rep_action(R, R4_CHK_FREE_COUNT, fmt_blk_format40(c->bs), 0,
			   R4_LOSS_NONE, 0, "free block count set to %llu (was "
			   "%llu, journal footer %llu)",
			   (unsigned long long)p.free_total,
			   (unsigned long long)sbfree,
			   (unsigned long long)jffree);
	if (!rc)
		rc = sp_commit(&p);
	else if (p.t)
		txn_abort(p.t);
	free(exp);
	if (!rc)
		*changed = 1;
	return rc;
}
