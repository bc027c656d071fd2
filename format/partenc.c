/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: partition tables: type names, GUID text, and the encoder the
 * tests use to make tables (format/part.h). */
#include "config.h"
#include <stdio.h>
#include <string.h>
#include "endian.h"
#include "part.h"

#define SEC FMT_PART_SECTOR
#define GPT_ENTRIES 128u
#define GPT_ESIZE 128u
#define GPT_ARRAY_BYTES (GPT_ENTRIES * GPT_ESIZE)

/* The table's sector size (0 means 512). */
static uint32_t ss_of(const struct fmt_part_table *t)
{
	return t->sector ? t->sector : SEC;
}

void fmt_guid_str(const uint8_t g[16], char out[37])
{
	snprintf(out, 37, "%08X-%04X-%04X-%02X%02X-%02X%02X%02X%02X%02X%02X",
		 (unsigned)get_le32(g), (unsigned)get_le16(g + 4),
		 (unsigned)get_le16(g + 6), g[8], g[9], g[10], g[11], g[12],
		 g[13], g[14], g[15]);
}

static const struct {
	uint8_t type;
	const char *name;
} mbr_types[] = {
	{ 0x01, "FAT12" }, { 0x04, "FAT16 <32M" }, { 0x05, "Extended" },
	{ 0x06, "FAT16" }, { 0x07, "HPFS/NTFS/exFAT" }, { 0x0b, "W95 FAT32" },
	{ 0x0c, "W95 FAT32 (LBA)" }, { 0x0e, "W95 FAT16 (LBA)" },
	{ 0x0f, "W95 Ext'd (LBA)" }, { 0x82, "Linux swap / Solaris" },
	{ 0x83, "Linux" }, { 0x85, "Linux extended" }, { 0x8e, "Linux LVM" },
	{ 0xee, "GPT" }, { 0xef, "EFI (FAT-12/16/32)" },
	{ 0xfd, "Linux raid autodetect" },
};

static const struct {
	const char *guid;
	const char *name;
} gpt_types[] = {
	{ "C12A7328-F81F-11D2-BA4B-00A0C93EC93B", "EFI System" },
	{ "21686148-6449-6E6F-744E-656564454649", "BIOS boot" },
	{ "0FC63DAF-8483-4772-8E79-3D69D8477DE4", "Linux filesystem" },
	{ "0657FD6D-A4AB-43C4-84E5-0933C84B4F4F", "Linux swap" },
	{ "E6D6D379-F507-44C2-A23C-238F2A3DF928", "Linux LVM" },
	{ "A19D880F-05FC-4D3B-A006-743F0F84911E", "Linux RAID" },
	{ "933AC7E1-2EB4-4F13-B844-0E14E2AEF915", "Linux home" },
	{ "EBD0A0A2-B9E5-4433-87C0-68B6B72699C7", "Microsoft basic data" },
};

const char *fmt_part_type_name(enum fmt_part_kind kind,
			       const struct fmt_part *p)
{
	char g[37];

	if (kind == FMT_PT_MBR) {
		for (size_t i = 0; i < sizeof(mbr_types) / sizeof(mbr_types[0]);
		     i++)
			if (mbr_types[i].type == p->type)
				return mbr_types[i].name;
		return NULL;
	}
	fmt_guid_str(p->type_guid, g);
	for (size_t i = 0; i < sizeof(gpt_types) / sizeof(gpt_types[0]); i++)
		if (!strcmp(gpt_types[i].guid, g))
			return gpt_types[i].name;
	return NULL;
}

static void mbr_put(uint8_t *e, uint8_t type, uint64_t start,
		    uint64_t sectors)
{
	memset(e, 0, 16);
	e[4] = type;
	put_le32(e + 8, (uint32_t)start);
	put_le32(e + 12, (uint32_t)sectors);
}

/* The chain of boot records in ext: one in the sector before each
 * logical partition, in the order of t. */
static int mbr_chain(const struct fmt_part_table *t,
		     const struct fmt_part *ext, uint8_t *disk)
{
	uint8_t *prev = NULL;

	for (size_t i = 0; i < t->n; i++) {
		const struct fmt_part *p = &t->p[i];
		uint64_t ebr = p->start - 1;
		uint8_t *sec = disk + ebr * ss_of(t);

		if (!p->logical)
			continue;
		if (!ext || p->start <= ext->start)
			return -1;
		memset(sec, 0, SEC);
		mbr_put(sec + 446, p->type, 1, p->sectors);
		sec[510] = 0x55;
		sec[511] = 0xaa;
		if (prev)
			mbr_put(prev + 446 + 16, 0x05, ebr - ext->start,
				p->sectors + 1);
		prev = sec;
	}
	return 0;
}

static int mbr_encode(const struct fmt_part_table *t, uint8_t *disk)
{
	const struct fmt_part *ext = NULL;

	memset(disk + 440, 0, SEC - 440);
	put_le32(disk + 440, t->disk_id);
	for (size_t i = 0; i < t->n; i++) {
		const struct fmt_part *p = &t->p[i];

		if (p->logical)
			continue;
		if (p->number < 1 || p->number > 4 || p->start > 0xffffffffu ||
		    p->sectors > 0xffffffffu)
			return -1;
		mbr_put(disk + 446 + 16 * (p->number - 1), p->type, p->start,
			p->sectors);
		if (p->extended)
			ext = p;
	}
	disk[510] = 0x55;
	disk[511] = 0xaa;
	return mbr_chain(t, ext, disk);
}

static void name_utf16(const char *s, uint8_t *u)
{
	memset(u, 0, FMT_GPT_NAME_MAX * 2);
	for (size_t i = 0; s[i] && i < FMT_GPT_NAME_MAX; i++)
		put_le16(u + 2 * i, (uint8_t)s[i]);	/* ASCII names only */
}

/* The header of one copy: at sector self, the other at alt, its
 * entries at array. */
static void gpt_hdr(uint8_t *h, const struct fmt_part_table *t,
		    uint64_t self, uint64_t alt, uint64_t array, uint32_t ecrc)
{
	uint64_t asec = GPT_ARRAY_BYTES / ss_of(t);

	memset(h, 0, ss_of(t));
	memcpy(h, "EFI PART", 8);
	put_le32(h + 8, 0x00010000);
	put_le32(h + 12, 92);
	put_le64(h + 24, self);
	put_le64(h + 32, alt);
	put_le64(h + 40, 2 + asec);
	put_le64(h + 48, t->disk_sectors - 2 - asec);
	memcpy(h + 56, t->disk_guid, 16);
	put_le64(h + 72, array);
	put_le32(h + 80, GPT_ENTRIES);
	put_le32(h + 84, GPT_ESIZE);
	put_le32(h + 88, ecrc);
	put_le32(h + 16, fmt_crc32(h, 92));
}

static int gpt_encode(const struct fmt_part_table *t, uint8_t *disk)
{
	uint32_t ss = ss_of(t);
	uint64_t asec = GPT_ARRAY_BYTES / ss, ns = t->disk_sectors;
	uint64_t back = ns - 1 - asec;
	uint8_t *arr = disk + 2 * ss;
	uint32_t ecrc;

	if (ns < 2 * (2 + asec) + 1)
		return -1;
	memset(disk, 0, ss * (2 + asec));
	mbr_put(disk + 446, 0xee, 1, ns - 1 > 0xffffffffu ? 0xffffffffu :
		ns - 1);
	disk[510] = 0x55;
	disk[511] = 0xaa;
	for (size_t i = 0; i < t->n; i++) {
		const struct fmt_part *p = &t->p[i];
		uint8_t *e = arr + (p->number - 1) * GPT_ESIZE;

		if (p->number < 1 || p->number > GPT_ENTRIES || !p->sectors)
			return -1;
		memcpy(e, p->type_guid, 16);
		memcpy(e + 16, p->guid, 16);
		put_le64(e + 32, p->start);
		put_le64(e + 40, p->start + p->sectors - 1);
		put_le64(e + 48, p->attrs);
		name_utf16(p->name, e + 56);
	}
	ecrc = fmt_crc32(arr, GPT_ARRAY_BYTES);
	gpt_hdr(disk + ss, t, 1, ns - 1, 2, ecrc);
	memcpy(disk + back * ss, arr, GPT_ARRAY_BYTES);
	gpt_hdr(disk + (ns - 1) * ss, t, ns - 1, 1, back, ecrc);
	return 0;
}

int fmt_part_encode(const struct fmt_part_table *t, uint8_t *disk,
		    uint64_t disk_bytes)
{
	if (t->disk_sectors * ss_of(t) > disk_bytes)
		return -1;
	if (t->kind == FMT_PT_GPT)
		return gpt_encode(t, disk);
	return mbr_encode(t, disk);
}
