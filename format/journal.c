/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: journal40 control blocks (doc/format.md §8). */
#include <string.h>

#include "endian.h"
#include "errors.h"
#include "journal.h"

_Static_assert(FMT_JHEADER_SIZE == FMT_JHEADER_OFF_LAST_COMMITTED + 8,
	       "journal header layout");
_Static_assert(FMT_JFOOTER_OFF_FREE_BLOCKS ==
	       FMT_JFOOTER_OFF_LAST_FLUSHED + 8, "journal footer layout");
_Static_assert(FMT_JFOOTER_OFF_NR_FILES == FMT_JFOOTER_OFF_FREE_BLOCKS + 8,
	       "journal footer layout");
_Static_assert(FMT_JFOOTER_OFF_NEXT_OID == FMT_JFOOTER_OFF_NR_FILES + 8,
	       "journal footer layout");
_Static_assert(FMT_JFOOTER_SIZE == FMT_JFOOTER_OFF_NEXT_OID + 8,
	       "journal footer layout");

_Static_assert(FMT_TXH_OFF_ID == FMT_TXH_OFF_MAGIC + FMT_JOURNAL_MAGIC_SIZE,
	       "tx head layout");
_Static_assert(FMT_TXH_OFF_TOTAL == FMT_TXH_OFF_ID + 8, "tx head layout");
_Static_assert(FMT_TXH_OFF_PADDING == FMT_TXH_OFF_TOTAL + 4,
	       "tx head layout");
_Static_assert(FMT_TXH_OFF_PREV_TX == FMT_TXH_OFF_PADDING + 4,
	       "tx head layout");
_Static_assert(FMT_TXH_OFF_NEXT_BLOCK == FMT_TXH_OFF_PREV_TX + 8,
	       "tx head layout");
_Static_assert(FMT_TXH_OFF_FREE_BLOCKS == FMT_TXH_OFF_NEXT_BLOCK + 8,
	       "tx head layout");
_Static_assert(FMT_TXH_OFF_NR_FILES == FMT_TXH_OFF_FREE_BLOCKS + 8,
	       "tx head layout");
_Static_assert(FMT_TXH_OFF_NEXT_OID == FMT_TXH_OFF_NR_FILES + 8,
	       "tx head layout");
_Static_assert(FMT_TXH_SIZE == FMT_TXH_OFF_NEXT_OID + 8, "tx head layout");

_Static_assert(FMT_WANDER_OFF_ID ==
	       FMT_WANDER_OFF_MAGIC + FMT_JOURNAL_MAGIC_SIZE,
	       "wander record layout");
_Static_assert(FMT_WANDER_OFF_TOTAL == FMT_WANDER_OFF_ID + 8,
	       "wander record layout");
_Static_assert(FMT_WANDER_OFF_SERIAL == FMT_WANDER_OFF_TOTAL + 4,
	       "wander record layout");
_Static_assert(FMT_WANDER_OFF_NEXT_BLOCK == FMT_WANDER_OFF_SERIAL + 4,
	       "wander record layout");
_Static_assert(FMT_WANDER_OFF_PAIRS == FMT_WANDER_OFF_NEXT_BLOCK + 8,
	       "wander record layout");
_Static_assert(FMT_WANDER_PAIR_OFF_WANDERED ==
	       FMT_WANDER_PAIR_OFF_ORIGINAL + 8, "wander pair layout");
_Static_assert(FMT_WANDER_PAIR_SIZE == FMT_WANDER_PAIR_OFF_WANDERED + 8,
	       "wander pair layout");
_Static_assert(FMT_WANDER_MAX_PAIRS ==
	       (4096 - FMT_WANDER_OFF_PAIRS) / FMT_WANDER_PAIR_SIZE,
	       "a 4096-byte wander record holds 254 pairs");
_Static_assert(sizeof(FMT_TX_HEAD_MAGIC) == FMT_JOURNAL_MAGIC_SIZE + 1 &&
	       sizeof(FMT_WANDER_MAGIC) == FMT_JOURNAL_MAGIC_SIZE + 1,
	       "journal magics fill their field without NUL");

/* ---- journal header and footer ---- */

void fmt_journal_header_decode(const uint8_t *buf,
			       struct fmt_journal_header *out)
{
	out->last_committed_tx = get_le64(buf + FMT_JHEADER_OFF_LAST_COMMITTED);
}

void fmt_journal_header_encode(const struct fmt_journal_header *in,
			       uint8_t *buf)
{
	put_le64(buf + FMT_JHEADER_OFF_LAST_COMMITTED, in->last_committed_tx);
}

const char *fmt_journal_header_verify(const struct fmt_journal_header *jh,
				      uint64_t block_count)
{
	if (jh->last_committed_tx >= block_count)
		return "journal header last_committed_tx is not below "
		       "block_count";
	return NULL;
}

void fmt_journal_footer_decode(const uint8_t *buf,
			       struct fmt_journal_footer *out)
{
	out->last_flushed_tx = get_le64(buf + FMT_JFOOTER_OFF_LAST_FLUSHED);
	out->free_blocks = get_le64(buf + FMT_JFOOTER_OFF_FREE_BLOCKS);
	out->nr_files = get_le64(buf + FMT_JFOOTER_OFF_NR_FILES);
	out->next_oid = get_le64(buf + FMT_JFOOTER_OFF_NEXT_OID);
}

void fmt_journal_footer_encode(const struct fmt_journal_footer *in,
			       uint8_t *buf)
{
	put_le64(buf + FMT_JFOOTER_OFF_LAST_FLUSHED, in->last_flushed_tx);
	put_le64(buf + FMT_JFOOTER_OFF_FREE_BLOCKS, in->free_blocks);
	put_le64(buf + FMT_JFOOTER_OFF_NR_FILES, in->nr_files);
	put_le64(buf + FMT_JFOOTER_OFF_NEXT_OID, in->next_oid);
}

const char *fmt_journal_footer_verify(const struct fmt_journal_footer *jf,
				      uint64_t block_count)
{
	if (jf->last_flushed_tx >= block_count)
		return "journal footer last_flushed_tx is not below "
		       "block_count";
	/* Counters are meaningful only once a transaction was flushed. */
	if (jf->last_flushed_tx != 0 && jf->free_blocks > block_count)
		return "journal footer free_blocks is larger than block_count";
	return NULL;
}

/* ---- tx head ---- */

void fmt_tx_head_init(struct fmt_tx_head *th)
{
	memset(th, 0, sizeof(*th));
	memcpy(th->magic, FMT_TX_HEAD_MAGIC, FMT_JOURNAL_MAGIC_SIZE);
}

void fmt_tx_head_decode(const uint8_t *buf, struct fmt_tx_head *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->magic, buf + FMT_TXH_OFF_MAGIC, FMT_JOURNAL_MAGIC_SIZE);
	out->id = get_le64(buf + FMT_TXH_OFF_ID);
	out->total = get_le32(buf + FMT_TXH_OFF_TOTAL);
	out->padding = get_le32(buf + FMT_TXH_OFF_PADDING);
	out->prev_tx = get_le64(buf + FMT_TXH_OFF_PREV_TX);
	out->next_block = get_le64(buf + FMT_TXH_OFF_NEXT_BLOCK);
	out->free_blocks = get_le64(buf + FMT_TXH_OFF_FREE_BLOCKS);
	out->nr_files = get_le64(buf + FMT_TXH_OFF_NR_FILES);
	out->next_oid = get_le64(buf + FMT_TXH_OFF_NEXT_OID);
}

void fmt_tx_head_encode(const struct fmt_tx_head *in, uint8_t *buf)
{
	memcpy(buf + FMT_TXH_OFF_MAGIC, in->magic, FMT_JOURNAL_MAGIC_SIZE);
	put_le64(buf + FMT_TXH_OFF_ID, in->id);
	put_le32(buf + FMT_TXH_OFF_TOTAL, in->total);
	put_le32(buf + FMT_TXH_OFF_PADDING, in->padding);
	put_le64(buf + FMT_TXH_OFF_PREV_TX, in->prev_tx);
	put_le64(buf + FMT_TXH_OFF_NEXT_BLOCK, in->next_block);
	put_le64(buf + FMT_TXH_OFF_FREE_BLOCKS, in->free_blocks);
	put_le64(buf + FMT_TXH_OFF_NR_FILES, in->nr_files);
	put_le64(buf + FMT_TXH_OFF_NEXT_OID, in->next_oid);
}

const char *fmt_tx_head_verify(const struct fmt_tx_head *th,
			       uint64_t block_count)
{
	if (memcmp(th->magic, FMT_TX_HEAD_MAGIC, FMT_JOURNAL_MAGIC_SIZE))
		return "tx head magic is not TxMagic4";
	if (th->total < 1)
		return "tx head total is 0 (it counts the tx head itself)";
	if (th->next_block == 0 || th->next_block >= block_count)
		return "tx head next_block is 0 or not below block_count";
	if (th->prev_tx >= block_count)
		return "tx head prev_tx is not below block_count";
	if (th->free_blocks > block_count)
		return "tx head free_blocks is larger than block_count";
	return NULL;
}

/* ---- wander record ---- */

void fmt_wander_record_init(struct fmt_wander_record *wr)
{
	memset(wr, 0, sizeof(*wr));
	memcpy(wr->magic, FMT_WANDER_MAGIC, FMT_JOURNAL_MAGIC_SIZE);
}

static int check_blksize(uint32_t blksize)
{
	if (blksize < FMT_WANDER_OFF_PAIRS + FMT_WANDER_PAIR_SIZE)
		return R4_EINVAL;
	if (fmt_wander_capacity(blksize) > FMT_WANDER_MAX_PAIRS)
		return R4_EUNSUPP;
	return 0;
}

int fmt_wander_record_decode(const uint8_t *buf, uint32_t blksize,
			     struct fmt_wander_record *out)
{
	int err = check_blksize(blksize);
	uint32_t cap = fmt_wander_capacity(blksize), i;

	if (err)
		return err;
	memset(out, 0, sizeof(*out));
	memcpy(out->magic, buf + FMT_WANDER_OFF_MAGIC, FMT_JOURNAL_MAGIC_SIZE);
	out->id = get_le64(buf + FMT_WANDER_OFF_ID);
	out->total = get_le32(buf + FMT_WANDER_OFF_TOTAL);
	out->serial = get_le32(buf + FMT_WANDER_OFF_SERIAL);
	out->next_block = get_le64(buf + FMT_WANDER_OFF_NEXT_BLOCK);
	for (i = 0; i < cap; i++) {
		const uint8_t *p = buf + FMT_WANDER_OFF_PAIRS +
				   (size_t)i * FMT_WANDER_PAIR_SIZE;
		uint64_t wandered = get_le64(p + FMT_WANDER_PAIR_OFF_WANDERED);

		if (wandered == 0)
			break;
		out->pairs[i].original = get_le64(p + FMT_WANDER_PAIR_OFF_ORIGINAL);
		out->pairs[i].wandered = wandered;
	}
	out->nr_pairs = i;
	return 0;
}

int fmt_wander_record_encode(const struct fmt_wander_record *in,
			     uint32_t blksize, uint8_t *buf)
{
	int err = check_blksize(blksize);

	if (err)
		return err;
	if (in->nr_pairs > fmt_wander_capacity(blksize))
		return R4_ERANGE;
	memset(buf, 0, blksize);
	memcpy(buf + FMT_WANDER_OFF_MAGIC, in->magic, FMT_JOURNAL_MAGIC_SIZE);
	put_le64(buf + FMT_WANDER_OFF_ID, in->id);
	put_le32(buf + FMT_WANDER_OFF_TOTAL, in->total);
	put_le32(buf + FMT_WANDER_OFF_SERIAL, in->serial);
	put_le64(buf + FMT_WANDER_OFF_NEXT_BLOCK, in->next_block);
	for (uint32_t i = 0; i < in->nr_pairs; i++) {
		uint8_t *p = buf + FMT_WANDER_OFF_PAIRS +
			     (size_t)i * FMT_WANDER_PAIR_SIZE;

		put_le64(p + FMT_WANDER_PAIR_OFF_ORIGINAL, in->pairs[i].original);
		put_le64(p + FMT_WANDER_PAIR_OFF_WANDERED, in->pairs[i].wandered);
	}
	return 0;
}

static const char *check_pairs(const struct fmt_wander_record *wr,
			       uint64_t block_count)
{
	for (uint32_t i = 0; i < wr->nr_pairs; i++) {
		const struct fmt_wander_pair *p = &wr->pairs[i];

		if (p->original == 0 || p->original >= block_count)
			return "wander record pair original is 0 or not below "
			       "block_count";
		if (p->wandered == 0 || p->wandered >= block_count)
			return "wander record pair wandered is 0 or not below "
			       "block_count";
	}
	return NULL;
}

const char *fmt_wander_record_verify(const struct fmt_wander_record *wr,
				     uint64_t block_count)
{
	if (memcmp(wr->magic, FMT_WANDER_MAGIC, FMT_JOURNAL_MAGIC_SIZE))
		return "wander record magic is not LogMagc4";
	if (wr->total < 2)
		return "wander record total is below 2 (tx head + this record)";
	if (wr->serial < 1 || wr->serial >= wr->total)
		return "wander record serial is not in 1..total-1";
	if (wr->next_block == 0 || wr->next_block >= block_count)
		return "wander record next_block is 0 or not below block_count";
	if (wr->nr_pairs > FMT_WANDER_MAX_PAIRS)
		return "wander record holds more than 254 pairs";
	return check_pairs(wr, block_count);
}
