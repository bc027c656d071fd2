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
		chk_problem(c, R4_CHK_FORMAT40, blk, -1, NULL, "%s", why);
	if (fmt_master_verify(&c->vol->master))
		chk_problem(c, R4_CHK_MASTER, fmt_blk_master(c->bs), -1, NULL,
			    "%s", fmt_master_verify(&c->vol->master));
	if (sb->tree_height > FMT_KERNEL_TREE_HEIGHT_MAX)
		chk_problem(c, R4_CHK_FORMAT40, blk, -1, NULL,
			    "tree height %u is more than the kernel handles "
			    "(%d)", sb->tree_height,
			    FMT_KERNEL_TREE_HEIGHT_MAX);
	if (sb->file_count > c->next_oid)
		chk_problem(c, R4_CHK_FORMAT40, blk, -1, NULL,
			    "file count %llu is more than object ids were "
			    "ever handed out (next oid %#llx)",
			    (unsigned long long)sb->file_count,
			    (unsigned long long)c->next_oid);
	if (sb->update_backup)
		chk_problem(c, R4_CHK_BACKUP, blk, -1, NULL,
			    "version word bit 31 is set: the backup copies "
			    "must be rewritten");
}

static void check_status(struct chk *c)
{
	const struct fmt_status *st = &c->vol->status;
	char msg[FMT_STATUS_MESSAGE_SIZE + 1];

	if (c->vol->status_garbage) {
		chk_problem(c, R4_CHK_STATUS, fmt_blk_status(c->bs), -1, NULL,
			    "status block holds garbage: no status magic, and "
			    "not the zeros of a volume made without one");
		return;
	}
	if (!c->vol->status_present || st->status == FMT_STATUS_OK)
		return;
	if (st->status & ~(uint64_t)FMT_STATUS_KNOWN) {
		chk_problem(c, R4_CHK_STATUS, fmt_blk_status(c->bs), -1, NULL,
			    "status block holds garbage: status word %#llx has "
			    "bits no writer sets (known: %#x)",
			    (unsigned long long)st->status,
			    (unsigned)FMT_STATUS_KNOWN);
		return;
	}
	memcpy(msg, st->message, FMT_STATUS_MESSAGE_SIZE);
	msg[FMT_STATUS_MESSAGE_SIZE] = '\0';
	for (size_t i = 0; msg[i]; i++)
		if ((unsigned char)msg[i] < 0x20 || msg[i] == 0x7f)
			msg[i] = '?';
	chk_problem(c, R4_CHK_STATUS, fmt_blk_status(c->bs), -1, NULL,
		    "status block marks the volume%s%s%s%s (status %#llx)%s%s",
		    st->status & FMT_STATUS_CORRUPTED ? " corrupted" : "",
		    st->status & FMT_STATUS_DAMAGED ? " damaged" : "",
		    st->status & FMT_STATUS_DESTROYED ? " destroyed" : "",
		    st->status & FMT_STATUS_IOERROR ? " with I/O errors" : "",
		    (unsigned long long)st->status, msg[0] ? ": " : "", msg);
}

static void check_journal(struct chk *c)
{
	const struct fmt_journal_header *jh = &c->vol->jh;
	const struct fmt_journal_footer *jf = &c->vol->jf;

	if (jh->last_committed_tx != jf->last_flushed_tx) {
		c->rep->journal_dirty = 1;
		chk_problem(c, R4_CHK_JOURNAL, fmt_blk_journal_header(c->bs),
			    -1, NULL, "journal holds an unreplayed transaction "
			    "(last committed tx head at block %llu, last "
			    "flushed %llu) that could not be read through; "
			    "the blocks below are checked as they are before "
			    "replay; run r4fsck without --check to replay it",
			    (unsigned long long)jh->last_committed_tx,
			    (unsigned long long)jf->last_flushed_tx);
	}
	/* Read through the journal (--check): the blocks below are checked
	 * as the replay will leave them, but the volume on disk is not yet
	 * so. The kernel's mount replays such a log and then reads the
	 * super block from its buffer cache as it was before the replay
	 * (doc/kernel.md §2.3): the old root. */
	if (c->vol->overlaid)
		chk_problem(c, R4_CHK_JOURNAL_PENDING,
			    fmt_blk_journal_header(c->bs), -1, NULL,
			    "%u committed transaction%s not replayed (the "
			    "blocks below are checked as the replay will "
			    "leave them): the Reiser4 kernel's own replay "
			    "loses this transaction's root pointer: run "
			    "`r4fsck -p` before mounting", c->vol->overlaid,
			    c->vol->overlaid == 1 ? "" : "s");
	if (jf->last_flushed_tx && jf->next_oid < FMT_FIRST_FREE_OID)
		chk_problem(c, R4_CHK_JOURNAL, fmt_blk_journal_footer(c->bs),
			    -1, NULL, "journal footer next oid %#llx is below "
			    "0x10000", (unsigned long long)jf->next_oid);
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
		chk_problem(c, R4_CHK_BACKUP, blk, -1, NULL,
			    "backup copy %zu differs from the super blocks "
			    "(%s)", i, backup_diff(&got, &want));
	}
	return 0;
}
