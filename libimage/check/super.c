/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: checks of the fixed blocks: master and format40 super blocks
 * (beyond what opening the volume already demands), status block,
 * journal header and footer, and the backup copies of the super blocks
 * (each must equal the one reiser4progs would make now). */
#include "config.h"
#include <string.h>
#include "libimage/check/check.h"
#include "format/super.h"

static void check_format40(struct chk *c)
{
	const struct fmt_format40 *sb = &c->vol->sb;
	uint64_t blk = fmt_blk_format40(c->bs);
	const char *why = fmt_format40_verify(sb, c->bs);

	if (why)
		CHK_SAY(c, CHK_M_FORMAT40_FIELD, blk, -1, NULL,
			CHK_S(what, why));
	if (fmt_master_verify(&c->vol->master))
		CHK_SAY(c, CHK_M_MASTER_FIELD, fmt_blk_master(c->bs), -1, NULL,
			CHK_S(what, fmt_master_verify(&c->vol->master)));
	if (sb->tree_height > FMT_KERNEL_TREE_HEIGHT_MAX)
		CHK_SAY(c, CHK_M_TREE_HEIGHT, blk, -1, NULL,
			CHK_U(have, sb->tree_height),
			CHK_U(want, FMT_KERNEL_TREE_HEIGHT_MAX));
	if (sb->file_count > c->next_oid)
		CHK_SAY(c, CHK_M_FILE_COUNT_OIDS, blk, -1, NULL,
			CHK_U(count, sb->file_count), CHK_U(next, c->next_oid));
	if (sb->update_backup)
		CHK_SAY0(c, CHK_M_BACKUP_BIT31, blk, -1, NULL);
}

static void check_status(struct chk *c)
{
	const struct fmt_status *st = &c->vol->status;
	char msg[FMT_STATUS_MESSAGE_SIZE + 1];

	if (c->vol->status_garbage) {
		CHK_SAY0(c, CHK_M_STATUS_NO_MAGIC, fmt_blk_status(c->bs), -1,
			 NULL);
		return;
	}
	if (!c->vol->status_present || st->status == FMT_STATUS_OK)
		return;
	if (st->status & ~(uint64_t)FMT_STATUS_KNOWN) {
		CHK_SAY(c, CHK_M_STATUS_BITS, fmt_blk_status(c->bs), -1, NULL,
			CHK_U(status, st->status),
			CHK_U(known, FMT_STATUS_KNOWN));
		return;
	}
	memcpy(msg, st->message, FMT_STATUS_MESSAGE_SIZE);
	msg[FMT_STATUS_MESSAGE_SIZE] = '\0';
	for (size_t i = 0; msg[i]; i++)
		if ((unsigned char)msg[i] < 0x20 || msg[i] == 0x7f)
			msg[i] = '?';
	CHK_SAY(c, CHK_M_STATUS_MARKED, fmt_blk_status(c->bs), -1, NULL,
		CHK_U(corrupted, st->status & FMT_STATUS_CORRUPTED),
		CHK_U(damaged, st->status & FMT_STATUS_DAMAGED),
		CHK_U(destroyed, st->status & FMT_STATUS_DESTROYED),
		CHK_U(ioerror, st->status & FMT_STATUS_IOERROR),
		CHK_U(status, st->status), CHK_S(text, msg));
}

static void check_journal(struct chk *c)
{
	const struct fmt_journal_header *jh = &c->vol->jh;
	const struct fmt_journal_footer *jf = &c->vol->jf;

	if (jh->last_committed_tx != jf->last_flushed_tx) {
		c->rep->journal_dirty = 1;
		CHK_SAY(c, CHK_M_JOURNAL_UNREAD, fmt_blk_journal_header(c->bs),
			-1, NULL, CHK_U(at, jh->last_committed_tx),
			CHK_U(n, jf->last_flushed_tx));
	}
	/* Read through the journal (--check): the blocks below are checked
	 * as the replay will leave them, but the volume on disk is not yet
	 * so. The kernel's mount replays such a log and then reads the
	 * super block from its buffer cache as it was before the replay
	 * (doc/kernel.md §2.3): the old root. */
	if (c->vol->overlaid)
		CHK_SAY(c, CHK_M_JOURNAL_PENDING,
			fmt_blk_journal_header(c->bs), -1, NULL,
			CHK_U(n, c->vol->overlaid));
	if (jf->last_flushed_tx && jf->next_oid < FMT_FIRST_FREE_OID)
		CHK_SAY(c, CHK_M_JOURNAL_NEXT_OID,
			fmt_blk_journal_footer(c->bs), -1, NULL,
			CHK_U(next, jf->next_oid));
}

int chk_super(struct chk *c)
{
	chk_progress(c, "super", 0, 1);
	check_format40(c);
	check_status(c);
	check_journal(c);
	chk_progress(c, "super", 1, 1);
	return 0;
}

/* The first field where backup copy b differs from the expected one. */
static const char *backup_diff(const struct fmt_backup *b,
			       const struct fmt_backup *want)
{
	if (b->backup_version != want->backup_version)
		return "backup version";
	if (memcmp(&b->master, &want->master, sizeof(b->master)))
		return "master super block copy (magic, block size, uuid or "
		       "label)";
	if (memcmp(b->magic, want->magic, sizeof(b->magic)))
		return "format40 magic";
	if (b->block_count != want->block_count)
		return "block count";
	if (b->mkfs_id != want->mkfs_id)
		return "mkfs id";
	if (b->policy != want->policy)
		return "formatting policy";
	if (b->flags != want->flags)
		return "flags";
	if (b->version != want->version)
		return "format version";
	if (b->has_pset != want->has_pset ||
	    memcmp(b->pset, want->pset, sizeof(b->pset)))
		return "root plugin set";
	return "reserved bytes";
}

int chk_backups(struct chk *c)
{
	struct fmt_backup want, got;
	uint8_t wantbuf[FMT_BACKUP_SIZE];
	uint32_t pset[FMT_PSET_COUNT];
	int rc;

	memset(pset, 0, sizeof(pset));
	pset[FMT_PSET_FILE] = FMT_OBJ_DIR40;
	if (c->root_pset_found)
		memcpy(pset, c->root_pset, sizeof(pset));
	fmt_backup_make(&c->vol->master, &c->vol->sb, pset, &want);
	memset(wantbuf, 0, sizeof(wantbuf));
	fmt_backup_encode(&want, wantbuf);
	for (size_t i = 0; i < c->nbackups; i++) {
		uint64_t blk = c->backups[i];

		if (blk >= c->blocks)
			continue;
		rc = vol_read_block(c->vol, blk, c->scratch, "backup block",
				    c->err);
		if (rc)
			return rc;
		fmt_backup_decode(c->scratch, &got);
		if (!c->root_pset_found) {
			/* Without the root's stat data the pset is unknown:
			 * compare the rest. */
			want.has_pset = got.has_pset;
			memcpy(want.pset, got.pset, sizeof(want.pset));
			memset(wantbuf, 0, sizeof(wantbuf));
			fmt_backup_encode(&want, wantbuf);
		}
		if (!memcmp(c->scratch, wantbuf, sizeof(wantbuf)))
			continue;
		CHK_SAY(c, CHK_M_BACKUP_DIFF, blk, -1, NULL, CHK_U(n, i),
			CHK_S(what, backup_diff(&got, &want)));
	}
	return 0;
}
