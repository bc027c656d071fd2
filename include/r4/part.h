/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the partition table of a disk image or device (MBR or GPT),
 * and the byte window of one partition, for r4_open_opts: numbered as
 * Linux and sfdisk -l number them (MBR 1 to 4 primary, 5 and up
 * logical; GPT 1 to N in entry order, an empty entry keeping its
 * number). Sectors are 512 bytes, or 4096: a block device's logical
 * sector size, or a disk image whose GPT lies at byte 4096. A GPT whose
 * primary header or entry array is damaged is read from its backup in
 * the disk's last sector, and warning says so. */
#ifndef R4_PART_H
#define R4_PART_H

#include <stddef.h>
#include <stdint.h>
#include "r4/r4.h"

struct r4_partition {
	unsigned number;
	uint64_t start, sectors;	/* in the table's sectors */
	uint64_t offset, size;		/* in bytes */
	char type[40];		/* MBR "0x83"; GPT the type GUID */
	char type_name[32];	/* "Linux filesystem", ...; "" unknown */
	char name[112];		/* GPT partition name (UTF-8), "" MBR */
	char guid[40];		/* GPT partition GUID, "" MBR */
	int extended;		/* MBR: the extended partition */
	int logical;		/* MBR: a logical partition */
	int reiser4;		/* holds a Reiser4 master and format40
				 * super block */
};

struct r4_part_table {
	const char *scheme;	/* "dos" or "gpt" */
	uint32_t sector;	/* bytes per sector: 512 or 4096 */
	uint64_t disk_sectors;
	char disk_id[40];	/* GPT disk GUID, or MBR "0x1234abcd" */
	/* "" or, when the backup GPT was read, why the primary was not
	 * used */
	char warning[256];
	size_t n;
	struct r4_partition *p;	/* in table order */
};

/* Read the table of path (the open takes no lock and does not refuse
 * a mounted device: a look only). 0; R4_ENOTFOUND when path holds no
 * partition table; R4_ECORRUPT for a table that cannot be used (one
 * line: an entry past the disk's end, overlapping entries, a bad GPT
 * CRC, a count out of range); else the open's error. Free with
 * r4_part_table_free. */
int r4_part_table_read(const char *path, struct r4_part_table *t,
		       struct r4_error *err);
void r4_part_table_free(struct r4_part_table *t);

/* Set o->offset and o->size to partition number of path's table.
 * R4_ENOTFOUND (no such partition, or no table), R4_EINVAL (the
 * extended partition: a container, not a volume), or the read's
 * error. */
int r4_part_window(const char *path, unsigned number,
		   struct r4_open_opts *o, struct r4_error *err);

#endif
