/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: journal40 control blocks (doc/format.md §8): journal header,
 * journal footer, transaction head ("tx head") and wander record.
 *
 * Codecs read or write exactly the structure's bytes at the start of a
 * caller buffer (a wander record: the whole block); decoders accept any
 * bytes, zero the whole output first, and the verifiers judge the
 * result. */
#ifndef R4_FORMAT_JOURNAL_H
#define R4_FORMAT_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#define FMT_TX_HEAD_MAGIC "TxMagic4"
#define FMT_WANDER_MAGIC "LogMagc4"
#define FMT_JOURNAL_MAGIC_SIZE 8	/* no NUL */

/* ---- journal header (section 8.1) ---- */

enum {
	FMT_JHEADER_OFF_LAST_COMMITTED = 0,
	FMT_JHEADER_SIZE = 8
};

struct fmt_journal_header {
	uint64_t last_committed_tx;	/* tx head of the newest commit, 0 */
};

void fmt_journal_header_decode(const uint8_t *buf,
			       struct fmt_journal_header *out);
void fmt_journal_header_encode(const struct fmt_journal_header *in,
			       uint8_t *buf);
const char *fmt_journal_header_verify(const struct fmt_journal_header *jh,
				      uint64_t block_count);

/* ---- journal footer (section 8.2) ---- */

enum {
	FMT_JFOOTER_OFF_LAST_FLUSHED = 0,
	FMT_JFOOTER_OFF_FREE_BLOCKS = 8,
	FMT_JFOOTER_OFF_NR_FILES = 16,
	FMT_JFOOTER_OFF_NEXT_OID = 24,
	FMT_JFOOTER_SIZE = 32
};

struct fmt_journal_footer {
	uint64_t last_flushed_tx;	/* tx head fully written in place, 0 */
	uint64_t free_blocks;
	uint64_t nr_files;
	uint64_t next_oid;
};

void fmt_journal_footer_decode(const uint8_t *buf,
			       struct fmt_journal_footer *out);
void fmt_journal_footer_encode(const struct fmt_journal_footer *in,
			       uint8_t *buf);
const char *fmt_journal_footer_verify(const struct fmt_journal_footer *jf,
				      uint64_t block_count);

/* ---- tx head (section 8.3) ---- */

enum {
	FMT_TXH_OFF_MAGIC = 0,
	FMT_TXH_OFF_ID = 8,
	FMT_TXH_OFF_TOTAL = 16,
	FMT_TXH_OFF_PADDING = 20,
	FMT_TXH_OFF_PREV_TX = 24,
	FMT_TXH_OFF_NEXT_BLOCK = 32,
	FMT_TXH_OFF_FREE_BLOCKS = 40,
	FMT_TXH_OFF_NR_FILES = 48,
	FMT_TXH_OFF_NEXT_OID = 56,
	FMT_TXH_SIZE = 64
};

struct fmt_tx_head {
	char magic[FMT_JOURNAL_MAGIC_SIZE];
	uint64_t id;		/* the kernel leaves 0 */
	uint32_t total;		/* 1 (itself) + number of wander records */
	uint32_t padding;	/* 0 */
	uint64_t prev_tx;	/* previous committed tx head, 0 = none */
	uint64_t next_block;	/* first wander record (itself if none) */
	uint64_t free_blocks;	/* counters as committed by this tx */
	uint64_t nr_files;
	uint64_t next_oid;
};

/* Zero *th and set the magic. */
void fmt_tx_head_init(struct fmt_tx_head *th);
void fmt_tx_head_decode(const uint8_t *buf, struct fmt_tx_head *out);
/* Writes FMT_TXH_SIZE bytes. */
void fmt_tx_head_encode(const struct fmt_tx_head *in, uint8_t *buf);
const char *fmt_tx_head_verify(const struct fmt_tx_head *th,
			       uint64_t block_count);

/* ---- wander record (section 8.4) ---- */

enum {
	FMT_WANDER_OFF_MAGIC = 0,
	FMT_WANDER_OFF_ID = 8,
	FMT_WANDER_OFF_TOTAL = 16,
	FMT_WANDER_OFF_SERIAL = 20,
	FMT_WANDER_OFF_NEXT_BLOCK = 24,
	FMT_WANDER_OFF_PAIRS = 32,
	FMT_WANDER_PAIR_SIZE = 16,
	FMT_WANDER_PAIR_OFF_ORIGINAL = 0,
	FMT_WANDER_PAIR_OFF_WANDERED = 8,
	/* Capacity of a 4096-byte record, the largest the kernel writes. */
	FMT_WANDER_MAX_PAIRS = 254
};

struct fmt_wander_pair {
	uint64_t original;	/* final (home) location */
	uint64_t wandered;	/* where the new copy was written */
};

struct fmt_wander_record {
	char magic[FMT_JOURNAL_MAGIC_SIZE];
	uint64_t id;		/* the kernel leaves 0 */
	uint32_t total;		/* same as the tx head's */
	uint32_t serial;	/* 1, 2, ... in chain order */
	uint64_t next_block;	/* next record; the last one: the tx head */
	/* Pairs before the first one with wandered == 0 (or the capacity);
	 * pairs[nr_pairs..] are zero. */
	uint32_t nr_pairs;
	struct fmt_wander_pair pairs[FMT_WANDER_MAX_PAIRS];
};

/* Pairs a record of this block size holds: (blksize - 32) / 16. */
static inline uint32_t fmt_wander_capacity(uint32_t blksize)
{ return (blksize - FMT_WANDER_OFF_PAIRS) / FMT_WANDER_PAIR_SIZE; }

/* Zero *wr and set the magic. */
void fmt_wander_record_init(struct fmt_wander_record *wr);
/* Read a whole record block. Returns 0, or R4_EUNSUPP when blksize is
 * over 4096 (more pairs than the structure holds) or R4_EINVAL when it
 * cannot hold a single pair. */
int fmt_wander_record_decode(const uint8_t *buf, uint32_t blksize,
			     struct fmt_wander_record *out);
/* Write a whole record block: the header, nr_pairs pairs, zeros to the
 * end of the block. Returns 0, R4_EUNSUPP / R4_EINVAL as above, or
 * R4_ERANGE when nr_pairs exceeds the capacity. */
int fmt_wander_record_encode(const struct fmt_wander_record *in,
			     uint32_t blksize, uint8_t *buf);
const char *fmt_wander_record_verify(const struct fmt_wander_record *wr,
				     uint64_t block_count);

#endif
