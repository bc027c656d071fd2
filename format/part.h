/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: partition tables of a whole disk (or disk image): MBR (DOS)
 * primary, extended and logical partitions, and GPT. A pure decoder:
 * the caller reads the bytes (fmt_part_read_fn). Numbering is the one
 * Linux and sfdisk -l show: MBR slots 1 to 4 are the primary entries
 * (an empty slot keeps its number), the logical partitions of the
 * extended one are 5, 6, ... in the order of their chain; GPT entry i
 * (from 0) is partition i + 1, empty entries skipped but counted.
 * Sectors are 512 bytes, or 4096 (a device's logical sector size, or a
 * GPT found at byte 4096 and not at 512). Every field is checked against the disk's
 * size: a table that does not fit is an error, never a guess. The
 * layouts: doc/format.md §1.10. */
#ifndef R4_FORMAT_PART_H
#define R4_FORMAT_PART_H

#include <stddef.h>
#include <stdint.h>

#define FMT_PART_SECTOR 512u
#define FMT_PART_SECTOR_MAX 4096u
/* At most this many partitions in a table (GPT entries in use, MBR
 * primary + logical), and at most this many GPT entries in all. */
#define FMT_PART_MAX 256
#define FMT_GPT_ENTRIES_MAX 4096u
#define FMT_GPT_NAME_MAX 36	/* UTF-16 code units in an entry's name */

enum fmt_part_kind { FMT_PT_NONE, FMT_PT_MBR, FMT_PT_GPT };

struct fmt_part {
	unsigned number;	/* as Linux numbers it */
	uint64_t start;		/* first sector */
	uint64_t sectors;	/* length in sectors */
	uint8_t type;		/* MBR: the type byte */
	int extended;		/* MBR: the extended partition (a container) */
	int logical;		/* MBR: inside the extended one */
	uint8_t type_guid[16];	/* GPT: as stored (mixed endian) */
	uint8_t guid[16];	/* GPT: the partition's own GUID */
	uint64_t attrs;		/* GPT attribute bits */
	char name[FMT_GPT_NAME_MAX * 3 + 1];	/* GPT name in UTF-8 */
};

struct fmt_part_table {
	enum fmt_part_kind kind;
	uint32_t sector;	/* bytes per sector: 512 or 4096 */
	uint64_t disk_sectors;	/* the disk's size, whole sectors */
	uint8_t disk_guid[16];	/* GPT */
	uint32_t disk_id;	/* MBR disk identifier (byte 440) */
	/* GPT: the primary copy could not be used and the backup was
	 * read; why the primary failed (else "") */
	char warning[256];
	size_t n;
	struct fmt_part p[FMT_PART_MAX];
};

/* Read len bytes at byte off of the disk into buf: 0, or non-zero
 * when they cannot be read. */
typedef int (*fmt_part_read_fn)(void *ctx, uint64_t off, void *buf,
				size_t len);

/* Decode the table of a disk of disk_bytes bytes, of sector bytes per
 * sector (0: 512, or 4096 for a GPT found only at byte 4096). A GPT
 * whose primary header or entry array is damaged is read from its
 * backup (t->warning says so). 0; R4_ENOTFOUND when
 * there is no table (no 0x55 0xAA signature); R4_ECORRUPT with a
 * one-line reason in why for a table that cannot be used (a bad GPT
 * CRC, a count or size out of range, an entry past the disk's end,
 * overlapping entries, a loop of extended boot records); -EIO when
 * rd fails. t is filled as far as decoding got. */
int fmt_part_decode(fmt_part_read_fn rd, void *ctx, uint64_t disk_bytes,
		    uint32_t sector, struct fmt_part_table *t, char *why,
		    size_t whylen);

/* The partition numbered number, or NULL. */
const struct fmt_part *fmt_part_find(const struct fmt_part_table *t,
				     unsigned number);

/* A GUID as text (36 characters + NUL): 0FC63DAF-8483-... */
void fmt_guid_str(const uint8_t g[16], char out[37]);
/* A short name for the partition's type ("Linux filesystem", "EFI
 * System", "Extended", ...) or NULL when it is not one we name. */
const char *fmt_part_type_name(enum fmt_part_kind kind,
			       const struct fmt_part *p);

/* Tests: write t (its kind, its partitions' start, sectors, type or
 * type_guid, guid, name and, for MBR, logical) as a table onto the
 * disk image disk of disk_bytes bytes: an MBR with an extended
 * partition's chain of boot records (each one sector before its
 * logical partition), or a protective MBR with a GPT (header and 128
 * entries at both ends). 0, or -1 when t does not fit. */
int fmt_part_encode(const struct fmt_part_table *t, uint8_t *disk,
		    uint64_t disk_bytes);

/* The CRC-32 of zlib and GPT (reflected 0xEDB88320, inverted in and
 * out). */
uint32_t fmt_crc32(const void *buf, size_t len);
/* Continue one (start: 0). */
uint32_t fmt_crc32_update(uint32_t crc, const void *buf, size_t len);

#endif
