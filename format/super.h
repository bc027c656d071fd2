/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the fixed blocks of a volume (doc/format.md §1): master super
 * block, format40 super block, status block and format40 backup blocks,
 * plus the fixed block numbers and the backup placement algorithm.
 *
 * Each codec reads or writes exactly the structure's bytes (FMT_*_SIZE)
 * at the start of a caller buffer; the rest of the block is left alone,
 * so a writer zeroes the block first. Decoders accept any bytes and zero
 * the whole output first (padding included, so decoded structures compare
 * with memcmp); the matching verifier says whether the result makes
 * sense. */
#ifndef R4_FORMAT_SUPER_H
#define R4_FORMAT_SUPER_H

#include <stddef.h>
#include <stdint.h>

#include "key.h"
#include "plugin.h"

/* ---- fixed locations (section 1.1) ---- */

#define FMT_MASTER_OFFSET 65536
#define FMT_BLKSIZE_DEFAULT 4096
#define FMT_BLKSIZE_MIN 512
/* The master stores the block size in 16 bits, so 65536 cannot be
 * written; 32768 is the largest block size a volume can declare. */
#define FMT_BLKSIZE_MAX 32768

/* Block numbers of the fixed blocks for a block size. mkfs puts the tree
 * root and its first leaf right after the first backup block. */
static inline uint64_t fmt_blk_master(uint32_t blksize)
{ return FMT_MASTER_OFFSET / blksize; }
static inline uint64_t fmt_blk_format40(uint32_t blksize)
{ return fmt_blk_master(blksize) + 1; }
static inline uint64_t fmt_blk_bitmap0(uint32_t blksize)
{ return fmt_blk_master(blksize) + 2; }
static inline uint64_t fmt_blk_journal_header(uint32_t blksize)
{ return fmt_blk_master(blksize) + 3; }
static inline uint64_t fmt_blk_journal_footer(uint32_t blksize)
{ return fmt_blk_master(blksize) + 4; }
static inline uint64_t fmt_blk_status(uint32_t blksize)
{ return fmt_blk_master(blksize) + 5; }
static inline uint64_t fmt_blk_backup0(uint32_t blksize)
{ return fmt_blk_master(blksize) + 6; }
/* First block that is not a fixed block: where mkfs puts the root. No
 * tree node or data block may lie below it. */
static inline uint64_t fmt_blk_first_usable(uint32_t blksize)
{ return fmt_blk_master(blksize) + 7; }
static inline uint64_t fmt_blk_mkfs_root(uint32_t blksize)
{ return fmt_blk_master(blksize) + 7; }
static inline uint64_t fmt_blk_mkfs_leaf(uint32_t blksize)
{ return fmt_blk_master(blksize) + 8; }
/* Smallest block_count mkfs accepts (section 1.8). */
static inline uint64_t fmt_min_block_count(uint32_t blksize)
{ return fmt_blk_master(blksize) + 9; }

/* Nonzero when blksize is a power of two in [FMT_BLKSIZE_MIN,
 * FMT_BLKSIZE_MAX]. */
int fmt_blksize_valid(uint32_t blksize);

/* ---- master super block (section 1.2) ---- */

#define FMT_MASTER_MAGIC "ReIsEr4"
#define FMT_MASTER_MAGIC_SIZE 16
#define FMT_UUID_SIZE 16
#define FMT_LABEL_SIZE 16

enum {
	FMT_MASTER_OFF_MAGIC = 0,
	FMT_MASTER_OFF_FORMAT_ID = 16,
	FMT_MASTER_OFF_BLKSIZE = 18,
	FMT_MASTER_OFF_UUID = 20,
	FMT_MASTER_OFF_LABEL = 36,
	FMT_MASTER_OFF_DISKMAP = 52,
	FMT_MASTER_SIZE = 60,
	/* reiser4progs' structure (and so the backup copy) stops here. */
	FMT_MASTER_PROGS_SIZE = 52
};

/* Disk format plugin ids stored in format_id. */
#define FMT_FORMAT40_ID 0

struct fmt_master {
	char magic[FMT_MASTER_MAGIC_SIZE];	/* raw, NUL padded */
	uint16_t format_id;
	uint16_t blksize;
	uint8_t uuid[FMT_UUID_SIZE];
	char label[FMT_LABEL_SIZE];		/* NUL padded, maybe unterminated */
	uint64_t diskmap;			/* kernel only, 0 = none */
};

/* Zero *m, set the magic, format40 and blksize. */
void fmt_master_init(struct fmt_master *m, uint32_t blksize);
void fmt_master_decode(const uint8_t *buf, struct fmt_master *out);
/* Writes FMT_MASTER_SIZE bytes. */
void fmt_master_encode(const struct fmt_master *in, uint8_t *buf);
const char *fmt_master_verify(const struct fmt_master *m);

/* ---- format40 super block (section 1.3) ---- */

#define FMT_FORMAT40_MAGIC "ReIsEr40FoRmAt"
#define FMT_FORMAT40_MAGIC_SIZE 16
/* Bit 31 of the version word: the backups must be rewritten. */
#define FMT_FORMAT40_UPDATE_BACKUP 0x80000000u
/* flags bit 0: large keys. */
#define FMT_FORMAT40_FLAG_LARGE_KEYS 0x1ull
/* The format minor version reiser4progs 1.2.2 writes. */
#define FMT_FORMAT40_VERSION 2
#define FMT_TREE_HEIGHT_MIN 2
#define FMT_TREE_HEIGHT_MAX 10
/* The kernel cannot handle trees taller than this. */
#define FMT_KERNEL_TREE_HEIGHT_MAX 8

enum {
	FMT_FORMAT40_OFF_BLOCK_COUNT = 0,
	FMT_FORMAT40_OFF_FREE_BLOCKS = 8,
	FMT_FORMAT40_OFF_ROOT_BLOCK = 16,
	FMT_FORMAT40_OFF_NEXT_OID = 24,
	FMT_FORMAT40_OFF_FILE_COUNT = 32,
	FMT_FORMAT40_OFF_FLUSHES = 40,
	FMT_FORMAT40_OFF_MKFS_ID = 48,
	FMT_FORMAT40_OFF_MAGIC = 52,
	FMT_FORMAT40_OFF_TREE_HEIGHT = 68,
	FMT_FORMAT40_OFF_POLICY = 70,
	FMT_FORMAT40_OFF_FLAGS = 72,
	FMT_FORMAT40_OFF_VERSION = 80,
	FMT_FORMAT40_OFF_NODE_PID = 84,
	FMT_FORMAT40_OFF_UNUSED = 88,
	FMT_FORMAT40_UNUSED_SIZE = 424,
	FMT_FORMAT40_SIZE = 512
};

struct fmt_format40 {
	uint64_t block_count;
	uint64_t free_blocks;
	uint64_t root_block;
	uint64_t next_oid;	/* smallest never-used oid */
	uint64_t file_count;	/* oids in use */
	uint64_t flushes;
	uint32_t mkfs_id;
	char magic[FMT_FORMAT40_MAGIC_SIZE];
	uint16_t tree_height;
	uint16_t policy;	/* formatting (tail) policy id, progs only */
	uint64_t flags;
	uint32_t version;	/* low 31 bits of the version word */
	int update_backup;	/* bit 31 of the version word */
	uint32_t node_pid;	/* enum fmt_node_id */
};

/* Zero *sb and set the magic. */
void fmt_format40_init(struct fmt_format40 *sb);
void fmt_format40_decode(const uint8_t *buf, struct fmt_format40 *out);
/* Writes FMT_FORMAT40_SIZE bytes (the unused tail as zeros). */
void fmt_format40_encode(const struct fmt_format40 *in, uint8_t *buf);
/* blksize locates the first usable block for the root check. */
const char *fmt_format40_verify(const struct fmt_format40 *sb,
				uint32_t blksize);

enum fmt_key_policy fmt_format40_key_policy(const struct fmt_format40 *sb);
void fmt_format40_set_key_policy(struct fmt_format40 *sb,
				 enum fmt_key_policy pol);

/* ---- status block (section 1.4) ---- */

#define FMT_STATUS_MAGIC "ReiSeR4StATusBl"
#define FMT_STATUS_MAGIC_SIZE 16
#define FMT_STATUS_STACK 10
#define FMT_STATUS_MESSAGE_SIZE 256

/* status word bits; 0 = consistent. */
#define FMT_STATUS_OK 0x0ull
#define FMT_STATUS_CORRUPTED 0x1ull
#define FMT_STATUS_DAMAGED 0x2ull
#define FMT_STATUS_DESTROYED 0x4ull
#define FMT_STATUS_IOERROR 0x8ull
#define FMT_STATUS_KNOWN 0xfull

enum {
	FMT_STATUS_OFF_MAGIC = 0,
	FMT_STATUS_OFF_STATUS = 16,
	FMT_STATUS_OFF_EXTENDED = 24,
	FMT_STATUS_OFF_STACK = 32,
	FMT_STATUS_OFF_MESSAGE = 112,
	FMT_STATUS_SIZE = 368
};

struct fmt_status {
	char magic[FMT_STATUS_MAGIC_SIZE];
	uint64_t status;
	uint64_t ext_status;	/* e.g. sector of an I/O error */
	uint64_t stack[FMT_STATUS_STACK];
	char message[FMT_STATUS_MESSAGE_SIZE];	/* NUL padded */
};

/* Zero *st and set the magic: a consistent volume. */
void fmt_status_init(struct fmt_status *st);
void fmt_status_decode(const uint8_t *buf, struct fmt_status *out);
/* Writes FMT_STATUS_SIZE bytes. */
void fmt_status_encode(const struct fmt_status *in, uint8_t *buf);
/* A block without the magic is an old volume to the kernel (fine); the
 * verifier still reports it, callers decide. */
const char *fmt_status_verify(const struct fmt_status *st);

/* ---- backup block (section 1.7) ---- */

#define FMT_PSET_MAGIC "PsEt"
#define FMT_PSET_MAGIC_SIZE 4

enum {
	FMT_BACKUP_OFF_VERSION = 0,
	FMT_BACKUP_OFF_MASTER = 1,
	FMT_BACKUP_OFF_RESERVED1 = 53,
	FMT_BACKUP_OFF_MAGIC = 61,
	FMT_BACKUP_OFF_BLOCK_COUNT = 77,
	FMT_BACKUP_OFF_MKFS_ID = 85,
	FMT_BACKUP_OFF_POLICY = 89,
	FMT_BACKUP_OFF_FLAGS = 91,
	FMT_BACKUP_OFF_FMT_VERSION = 99,
	FMT_BACKUP_OFF_RESERVED2 = 103,
	FMT_BACKUP_OFF_PSET_MAGIC = 111,
	FMT_BACKUP_OFF_PSET = 115,
	FMT_BACKUP_SIZE_NO_PSET = 111,
	FMT_BACKUP_SIZE = 171
};

/* The only backup version there is. */
#define FMT_BACKUP_VERSION 0

struct fmt_backup {
	uint8_t backup_version;
	struct fmt_master master;	/* diskmap is not backed up: 0 */
	char magic[FMT_FORMAT40_MAGIC_SIZE];	/* format40 magic */
	uint64_t block_count;
	uint32_t mkfs_id;
	uint16_t policy;
	uint64_t flags;
	uint32_t version;	/* format version, never bit 31 */
	int has_pset;		/* "PsEt" and the ids follow */
	uint32_t pset[FMT_PSET_COUNT];	/* root directory plugin set */
};

/* Build the backup reiser4progs writes for this master and format40
 * super block. The plugin set is stored only when the format version is
 * not 0 (then pset may be NULL, giving all zero ids). */
void fmt_backup_make(const struct fmt_master *m, const struct fmt_format40 *sb,
		     const uint32_t *pset, struct fmt_backup *out);
void fmt_backup_decode(const uint8_t *buf, struct fmt_backup *out);
/* Writes FMT_BACKUP_SIZE bytes (the pset area as zeros without pset). */
void fmt_backup_encode(const struct fmt_backup *in, uint8_t *buf);
const char *fmt_backup_verify(const struct fmt_backup *b);

/* Block numbers of the backup copies of a volume of block_count blocks,
 * ascending, as reiser4progs places them: the first backup block, then
 * the second block of each bitmap region hit by the x1.5 sequence
 * 3, 4, 6, 9, 13, ... Stores at most max of them in out (out may be NULL
 * when max is 0) and returns how many there are. */
size_t fmt_backup_blocks(uint64_t block_count, uint32_t blksize,
			 uint64_t *out, size_t max);

#endif
