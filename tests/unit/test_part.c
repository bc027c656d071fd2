/* SPDX-License-Identifier: GPL-2.0-or-later */
/* format/part.c: MBR and GPT tables made by fmt_part_encode decode to
 * the same partitions, numbered as Linux numbers them; hostile tables
 * (past the disk's end, overlapping, bad CRCs, huge counts, loops)
 * give one error each and never a crash. */
#include <stdlib.h>
#include "tap.h"
#include "format/endian.h"
#include "format/errors.h"
#include "format/part.h"

#define DISK_SECTORS 8192u	/* 4 MiB */

static uint8_t disk[DISK_SECTORS * 512];

static int mem_read(void *ctx, uint64_t off, void *buf, size_t len)
{
	uint64_t size = *(const uint64_t *)ctx;

	if (off > size || len > size - off)
		return -1;
	memcpy(buf, disk + off, len);
	return 0;
}

static int decode_ss(uint64_t size, uint32_t ss, struct fmt_part_table *t,
		     char *why)
{
	return fmt_part_decode(mem_read, &size, size, ss, t, why, 256);
}

static int decode(uint64_t size, struct fmt_part_table *t, char *why)
{
	return decode_ss(size, 0, t, why);
}

static struct fmt_part mk(unsigned num, uint64_t start, uint64_t n,
			  uint8_t type, int logical)
{
	struct fmt_part p;

	memset(&p, 0, sizeof(p));
	p.number = num;
	p.start = start;
	p.sectors = n;
	p.type = type;
	p.logical = logical;
	p.extended = type == 0x05;
	return p;
}

/* MBR: 1 primary, slot 2 empty, 3 extended with three logicals (5, 6,
 * 7 in chain order), 4 primary. */
static void mbr_table(struct fmt_part_table *t)
{
	memset(t, 0, sizeof(*t));
	t->kind = FMT_PT_MBR;
	t->disk_sectors = DISK_SECTORS;
	t->disk_id = 0x1234abcd;
	t->p[t->n++] = mk(1, 2048, 1024, 0x83, 0);
	t->p[t->n++] = mk(3, 4096, 3072, 0x05, 0);
	t->p[t->n++] = mk(4, 3072, 1024, 0x82, 0);
	t->p[t->n++] = mk(5, 4097, 1023, 0x83, 1);
	t->p[t->n++] = mk(6, 5121, 1023, 0x07, 1);
	t->p[t->n++] = mk(7, 6145, 1023, 0x83, 1);
}

static void mbr_roundtrip(void)
{
	struct fmt_part_table t, d;
	char why[256];
	unsigned want[] = { 1, 3, 4, 5, 6, 7 };

	memset(disk, 0, sizeof(disk));
	mbr_table(&t);
	tap_must(fmt_part_encode(&t, disk, sizeof(disk)));
	is_int(decode(sizeof(disk), &d, why), 0, "MBR decodes: %s", why);
	is_int(d.kind, FMT_PT_MBR, "MBR: kind");
	is_int((int)d.n, 6, "MBR: six partitions (slot 2 empty)");
	for (size_t i = 0; i < d.n && i < 6; i++) {
		const struct fmt_part *p = fmt_part_find(&t, want[i]);

		is_int(d.p[i].number, want[i], "MBR: partition %zu's number", i);
		ok(p && d.p[i].start == p->start && d.p[i].sectors == p->sectors
		   && d.p[i].type == p->type && d.p[i].logical == p->logical,
		   "MBR: partition %u as encoded", want[i]);
	}
	is_u64(d.disk_id, 0x1234abcd, "MBR: disk id");
	ok(fmt_part_find(&d, 3)->extended, "MBR: 3 is the extended one");
	ok(!fmt_part_find(&d, 2), "MBR: no partition 2");
	is_str(fmt_part_type_name(FMT_PT_MBR, fmt_part_find(&d, 6)),
	       "HPFS/NTFS/exFAT", "MBR: type name");
}

static void gpt_table(struct fmt_part_table *t)
{
	static const uint8_t linux_fs[16] = { 0xaf, 0x3d, 0xc6, 0x0f, 0x83,
		0x84, 0x72, 0x47, 0x8e, 0x79, 0x3d, 0x69, 0xd8, 0x47, 0x7d,
		0xe4 };

	memset(t, 0, sizeof(*t));
	t->kind = FMT_PT_GPT;
	t->disk_sectors = DISK_SECTORS;
	memset(t->disk_guid, 0x42, 16);
	t->p[t->n++] = mk(1, 2048, 2048, 0, 0);
	t->p[t->n++] = mk(3, 4096, 2048, 0, 0);	/* entry 2 empty */
	for (size_t i = 0; i < t->n; i++) {
		memcpy(t->p[i].type_guid, linux_fs, 16);
		memset(t->p[i].guid, (int)i + 1, 16);
	}
	strcpy(t->p[0].name, "root");
	strcpy(t->p[1].name, "data");
}

static void gpt_roundtrip(void)
{
	struct fmt_part_table t, d;
	char why[256], g[37];

	memset(disk, 0, sizeof(disk));
	gpt_table(&t);
	tap_must(fmt_part_encode(&t, disk, sizeof(disk)));
	is_int(decode(sizeof(disk), &d, why), 0, "GPT decodes: %s", why);
	is_int(d.kind, FMT_PT_GPT, "GPT: kind");
	is_int((int)d.n, 2, "GPT: two partitions");
	is_int(d.p[1].number, 3, "GPT: an empty entry keeps its number");
	is_u64(d.p[1].start, 4096, "GPT: start");
	is_u64(d.p[1].sectors, 2048, "GPT: length");
	is_str(d.p[0].name, "root", "GPT: name");
	fmt_guid_str(d.p[0].type_guid, g);
	is_str(g, "0FC63DAF-8483-4772-8E79-3D69D8477DE4", "GPT: type GUID");
	is_str(fmt_part_type_name(FMT_PT_GPT, &d.p[0]), "Linux filesystem",
	       "GPT: type name");
	is_mem(d.disk_guid, t.disk_guid, 16, "GPT: disk GUID");
}

/* Recompute the GPT's CRCs after a change (a hostile table that is
 * otherwise well formed). */
static void gpt_reseal(void)
{
	uint8_t *h = disk + 512;

	put_le32(h + 88, fmt_crc32(disk + 1024, get_le32(h + 80) *
				   get_le32(h + 84) > 128 * 128 ? 128 * 128 :
				   get_le32(h + 80) * get_le32(h + 84)));
	put_le32(h + 16, 0);
	put_le32(h + 16, fmt_crc32(h, 92));
}

static void expect_bad(uint64_t size, const char *what, const char *needle)
{
	struct fmt_part_table d;
	char why[256];
	int rc = decode(size, &d, why);

	ok(rc < 0 && strstr(why, needle) && !strchr(why, '\n'),
	   "%s: refused in one line (%d: %s)", what, rc, why);
}

/* Encode t, then wipe the backup header (the disk's last sector), so a
 * damaged primary is not read around. */
static void enc_nobackup(const struct fmt_part_table *t)
{
	fmt_part_encode(t, disk, sizeof(disk));
	memset(disk + sizeof(disk) - 512, 0, 512);
}

static void gpt_hostile(void)
{
	struct fmt_part_table t;
	uint8_t *e1 = disk + 1024;

	gpt_table(&t);
	enc_nobackup(&t);
	disk[1024 + 40] ^= 1;	/* entry 1's last sector, CRC not fixed */
	expect_bad(sizeof(disk), "GPT entry changed", "entry array");
	enc_nobackup(&t);
	disk[512 + 40] ^= 1;
	expect_bad(sizeof(disk), "GPT header changed", "GPT header");
	enc_nobackup(&t);
	put_le64(e1 + 40, DISK_SECTORS + 100);
	gpt_reseal();
	expect_bad(sizeof(disk), "GPT entry past the end", "past the end");
	enc_nobackup(&t);
	put_le64(e1 + 40, 4200);	/* into partition 3 */
	gpt_reseal();
	expect_bad(sizeof(disk), "GPT overlap", "overlap");
	enc_nobackup(&t);
	put_le32(disk + 512 + 80, 0xffffffffu);
	gpt_reseal();
	expect_bad(sizeof(disk), "GPT huge count", "entries");
	enc_nobackup(&t);
	put_le32(disk + 512 + 84, 100);
	gpt_reseal();
	expect_bad(sizeof(disk), "GPT entry size", "entry size");
	enc_nobackup(&t);
	put_le64(e1 + 32, 3000);
	put_le64(e1 + 40, 2999);
	gpt_reseal();
	expect_bad(sizeof(disk), "GPT entry ends first", "before");
	enc_nobackup(&t);
	expect_bad(DISK_SECTORS * 256, "GPT on a disk cut in half",
		   "not inside the disk");
}

/* A damaged primary GPT (header or entry array) is read from the
 * backup, with a warning; both damaged: one error naming both. */
static void gpt_backup(void)
{
	struct fmt_part_table t, d;
	char why[256];

	gpt_table(&t);
	fmt_part_encode(&t, disk, sizeof(disk));
	disk[512 + 40] ^= 1;
	is_int(decode(sizeof(disk), &d, why), 0, "GPT: bad primary header: "
	       "the backup is read (%s)", why);
	ok(d.n == 2 && d.p[1].number == 3 && d.p[1].start == 4096,
	   "GPT: the backup's partitions");
	ok(strstr(d.warning, "bad CRC") && strstr(d.warning, "backup GPT"),
	   "GPT: the warning says why (%s)", d.warning);
	fmt_part_encode(&t, disk, sizeof(disk));
	memset(disk + 512, 0, 512);
	is_int(decode(sizeof(disk), &d, why), 0, "GPT: primary header "
	       "wiped: the backup is read (%s)", d.warning);
	fmt_part_encode(&t, disk, sizeof(disk));
	disk[1024 + 40] ^= 1;
	is_int(decode(sizeof(disk), &d, why), 0, "GPT: bad primary entry "
	       "array: the backup's is read");
	ok(strstr(d.warning, "entry array") != NULL, "GPT: warning: %s",
	   d.warning);
	fmt_part_encode(&t, disk, sizeof(disk));
	is_int(decode(sizeof(disk), &d, why), 0, "GPT: a good table");
	is_str(d.warning, "", "GPT: no warning for a good primary");
	disk[512 + 40] ^= 1;
	disk[sizeof(disk) - 512 + 40] ^= 1;
	expect_bad(sizeof(disk), "GPT: both headers damaged", "the backup: ");
}

/* 4096-byte sectors: a GPT at byte 4096 is found without a hint; an
 * MBR is read in the sectors the caller names. */
static void sectors_4k(void)
{
	struct fmt_part_table t, d;
	char why[256];

	memset(disk, 0, sizeof(disk));
	gpt_table(&t);
	t.sector = 4096;
	t.disk_sectors = sizeof(disk) / 4096;
	t.p[0].start = 256, t.p[0].sectors = 256;
	t.p[1].start = 512, t.p[1].sectors = 256;
	tap_must(fmt_part_encode(&t, disk, sizeof(disk)));
	is_int(decode(sizeof(disk), &d, why), 0, "4K GPT decodes: %s", why);
	is_int((int)d.sector, 4096, "4K GPT: the sector size is found");
	ok(d.n == 2 && d.p[1].start == 512 && d.p[1].sectors == 256,
	   "4K GPT: partitions in 4096-byte sectors");
	is_int(decode_ss(sizeof(disk), 4096, &d, why), 0, "4K GPT with the "
	       "device's sector size");
	is_int(decode_ss(sizeof(disk), 1000, &d, why), R4_EINVAL,
	       "a sector size of 1000 is refused");
	memset(disk, 0, sizeof(disk));
	mbr_table(&t);
	t.sector = 4096;
	t.disk_sectors = sizeof(disk) / 4096;
	t.n = 0;	/* mbr_table's layout in 4096-byte sectors */
	t.p[t.n++] = mk(1, 256, 128, 0x83, 0);
	t.p[t.n++] = mk(3, 512, 384, 0x05, 0);
	t.p[t.n++] = mk(4, 384, 128, 0x82, 0);
	t.p[t.n++] = mk(5, 513, 127, 0x83, 1);
	t.p[t.n++] = mk(6, 641, 127, 0x07, 1);
	t.p[t.n++] = mk(7, 769, 127, 0x83, 1);
	tap_must(fmt_part_encode(&t, disk, sizeof(disk)));
	is_int(decode_ss(sizeof(disk), 4096, &d, why), 0, "4K MBR decodes: "
	       "%s", why);
	ok(d.n == t.n && d.p[d.n - 1].start == t.p[t.n - 1].start,
	   "4K MBR: the logical partitions' chain in 4096-byte sectors");
}

static void mbr_hostile(void)
{
	struct fmt_part_table t;

	mbr_table(&t);
	fmt_part_encode(&t, disk, sizeof(disk));
	put_le32(disk + 446 + 12, 0xfffffff0u);
	expect_bad(sizeof(disk), "MBR past the end", "past the end");
	fmt_part_encode(&t, disk, sizeof(disk));
	put_le32(disk + 446 + 48 + 8, 2500);	/* 4 into 1 */
	expect_bad(sizeof(disk), "MBR overlap", "overlap");
	fmt_part_encode(&t, disk, sizeof(disk));
	/* the last boot record links back to the first: a loop */
	put_le32(disk + 6144 * 512 + 446 + 16 + 4 - 4, 0);
	disk[6144 * 512 + 446 + 16 + 4] = 0x05;
	put_le32(disk + 6144 * 512 + 446 + 16 + 8, 0);
	put_le32(disk + 6144 * 512 + 446 + 16 + 12, 1024);
	expect_bad(sizeof(disk), "MBR chain loop", "loops");
	fmt_part_encode(&t, disk, sizeof(disk));
	put_le32(disk + 4096 * 512 + 446 + 12, 3500);	/* 5 out of 3 */
	expect_bad(sizeof(disk), "MBR logical outside", "not inside");
}

static void no_table(void)
{
	struct fmt_part_table d;
	char why[256];

	memset(disk, 0, sizeof(disk));
	is_int(decode(sizeof(disk), &d, why), R4_ENOTFOUND, "zeros: no table");
	disk[510] = 0x55;
	disk[511] = 0xaa;
	disk[446] = 0x12;	/* a boot sector's code, not a boot flag */
	is_int(decode(sizeof(disk), &d, why), R4_ENOTFOUND,
	       "boot sector: no table (%s)", why);
	is_int(decode(100, &d, why), R4_ENOTFOUND, "tiny disk: no table");
}

/* Random bytes in the table's sectors never crash the decoder. */
static void noise(void)
{
	struct fmt_part_table t, d;
	char why[256];
	unsigned seed = 27;
	int seen = 0;

	for (int round = 0; round < 400; round++) {
		int kind = round & 1;
		int rc;

		kind ? gpt_table(&t) : mbr_table(&t);
		fmt_part_encode(&t, disk, sizeof(disk));
		for (int k = 0; k < 4; k++) {
			size_t at = kind ? (size_t)(rand_r(&seed) % 1200) :
				    446 + (size_t)(rand_r(&seed) % 66);
			disk[at] = (uint8_t)rand_r(&seed);
		}
		if (kind && round % 4 == 1)
			gpt_reseal();
		rc = decode(sizeof(disk), &d, why);
		seen += rc == 0;
		if (rc)
			tap_require(why[0] && !strchr(why, '\n'),
				    "round %d: an error without a message", round);
		else
			for (size_t i = 0; i < d.n; i++)
				tap_require(d.p[i].start + d.p[i].sectors <=
					    DISK_SECTORS, "round %d: out", round);
	}
	ok(1, "400 damaged tables: no crash (%d still decoded)", seen);
}

int main(void)
{
	mbr_roundtrip();
	gpt_roundtrip();
	gpt_hostile();
	gpt_backup();
	sectors_4k();
	mbr_hostile();
	no_table();
	noise();
	return tap_done();
}
