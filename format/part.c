/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: MBR and GPT partition tables (format/part.h). The layouts: the
 * MBR's four 16-byte entries at byte 446 and its 0x55 0xAA signature
 * at 510, extended boot records chained inside an extended partition
 * (types 0x05, 0x0F, 0x85); the GPT header in sector 1 ("EFI PART")
 * with CRC-32 checks of itself and of its entry array, as the UEFI
 * specification (chapter 5) lays them out. */
#include "config.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "endian.h"
#include "errors.h"
#include "part.h"

#define SEC FMT_PART_SECTOR
#define MBR_ENTRIES 446
#define GPT_SIG "EFI PART"

uint32_t fmt_crc32_update(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1)));
	}
	return ~crc;
}

uint32_t fmt_crc32(const void *buf, size_t len)
{
	return fmt_crc32_update(0, buf, len);
}

static int fail(char *why, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return R4_ECORRUPT;
}

static int rd_fail(char *why, size_t len, uint64_t off)
{
	snprintf(why, len, "cannot read the partition table at byte %llu",
		 (unsigned long long)off);
	return -EIO;
}

static int add(struct fmt_part_table *t, const struct fmt_part *p,
	       char *why, size_t len)
{
	if (t->n >= FMT_PART_MAX)
		return fail(why, len, "more than %d partitions", FMT_PART_MAX);
	t->p[t->n++] = *p;
	return 0;
}

/* The partition lies on the disk, after its first sector. */
static int in_disk(const struct fmt_part_table *t, const struct fmt_part *p,
		   char *why, size_t len)
{
	if (!p->start)
		return fail(why, len, "partition %u starts at sector 0 (the "
			    "partition table)", p->number);
	if (p->start >= t->disk_sectors ||
	    p->sectors > t->disk_sectors - p->start)
		return fail(why, len, "partition %u (sectors %llu to %llu) "
			    "ends past the end of the disk (%llu sectors)",
			    p->number, (unsigned long long)p->start,
			    (unsigned long long)(p->start + p->sectors - 1),
			    (unsigned long long)t->disk_sectors);
	return 0;
}

/* No two partitions share a sector (a logical partition lies inside
 * its extended one by design). */
static int no_overlap(const struct fmt_part_table *t, char *why, size_t len)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct fmt_part *a = &t->p[i];

		for (size_t j = i + 1; j < t->n; j++) {
			const struct fmt_part *b = &t->p[j];

			if ((a->extended && b->logical) ||
			    (b->extended && a->logical))
				continue;
			if (a->start < b->start + b->sectors &&
			    b->start < a->start + a->sectors)
				return fail(why, len, "partitions %u (sectors "
					    "%llu to %llu) and %u (sectors %llu "
					    "to %llu) overlap", a->number,
					    (unsigned long long)a->start,
					    (unsigned long long)(a->start +
								 a->sectors - 1),
					    b->number,
					    (unsigned long long)b->start,
					    (unsigned long long)(b->start +
								 b->sectors - 1));
		}
	}
	return 0;
}

/* ---- MBR ---------------------------------------------------------------- */

static int is_ext(uint8_t type)
{
	return type == 0x05 || type == 0x0f || type == 0x85;
}

static void mbr_entry(const uint8_t *e, struct fmt_part *p)
{
	memset(p, 0, sizeof(*p));
	p->type = e[4];
	p->start = get_le32(e + 8);
	p->sectors = get_le32(e + 12);
}

/* The data entries of the boot record at sector ebr: logical
 * partitions numbered on from *next, inside ext. */
static int ebr_data(struct fmt_part_table *t, const struct fmt_part *ext,
		    const uint8_t *sec, uint64_t ebr, unsigned *next,
		    char *why, size_t len)
{
	for (int i = 0; i < 4; i++) {
		struct fmt_part p;
		int rc;

		mbr_entry(sec + MBR_ENTRIES + 16 * i, &p);
		if (!p.sectors || !p.type || is_ext(p.type))
			continue;
		p.start += ebr;
		p.logical = 1;
		p.number = (*next)++;
		if ((rc = in_disk(t, &p, why, len)))
			return rc;
		if (p.start < ext->start ||
		    p.start + p.sectors > ext->start + ext->sectors)
			return fail(why, len, "logical partition %u (sectors "
				    "%llu to %llu) is not inside the extended "
				    "partition %u", p.number,
				    (unsigned long long)p.start,
				    (unsigned long long)(p.start + p.sectors - 1),
				    ext->number);
		if ((rc = add(t, &p, why, len)))
			return rc;
	}
	return 0;
}

/* The next boot record of the chain (its link entry, relative to the
 * extended partition's start), or 0 at the chain's end. */
static uint64_t ebr_link(const struct fmt_part *ext, const uint8_t *sec)
{
	for (int i = 0; i < 4; i++) {
		struct fmt_part p;

		mbr_entry(sec + MBR_ENTRIES + 16 * i, &p);
		if (p.sectors && is_ext(p.type))
			return ext->start + p.start;
	}
	return 0;
}

/* The logical partitions: the chain of extended boot records from the
 * extended partition's first sector. A record without the signature
 * ends the chain, as in Linux. */
static int mbr_logicals(fmt_part_read_fn rd, void *ctx,
			struct fmt_part_table *t, const struct fmt_part *ext,
			char *why, size_t len)
{
	uint8_t sec[SEC];
	uint64_t ebr = ext->start, seen[FMT_PART_MAX];
	unsigned next = 5;

	for (int hops = 0; ebr; hops++) {
		int rc;

		for (int i = 0; i < hops; i++)
			if (seen[i] == ebr)
				return fail(why, len, "the chain of extended "
					    "boot records loops (back to sector "
					    "%llu)", (unsigned long long)ebr);
		if (hops >= FMT_PART_MAX)
			return fail(why, len, "the chain of extended boot "
				    "records holds more than %d links",
				    FMT_PART_MAX);
		seen[hops] = ebr;
		if (ebr < ext->start || ebr >= ext->start + ext->sectors)
			return fail(why, len, "extended boot record at sector "
				    "%llu lies outside the extended partition "
				    "%u", (unsigned long long)ebr, ext->number);
		if (rd(ctx, ebr * t->sector, sec, SEC))
			return rd_fail(why, len, ebr * t->sector);
		if (sec[510] != 0x55 || sec[511] != 0xaa)
			return 0;
		rc = ebr_data(t, ext, sec, ebr, &next, why, len);
		if (rc)
			return rc;
		ebr = ebr_link(ext, sec);
	}
	return 0;
}

static int mbr_decode(fmt_part_read_fn rd, void *ctx,
		      struct fmt_part_table *t, const uint8_t *sec,
		      char *why, size_t len)
{
	struct fmt_part ext = { 0 };
	int rc;

	t->kind = FMT_PT_MBR;
	t->disk_id = get_le32(sec + 440);
	for (unsigned i = 0; i < 4; i++) {
		struct fmt_part p;

		mbr_entry(sec + MBR_ENTRIES + 16 * i, &p);
		if (!p.sectors || !p.type)
			continue;
		p.number = i + 1;
		p.extended = is_ext(p.type);
		if ((rc = in_disk(t, &p, why, len)) ||
		    (rc = add(t, &p, why, len)))
			return rc;
		if (p.extended && ext.number)
			return fail(why, len, "two extended partitions (%u and "
				    "%u)", ext.number, p.number);
		if (p.extended)
			ext = p;
	}
	if ((rc = no_overlap(t, why, len)))
		return rc;
	if (ext.number && (rc = mbr_logicals(rd, ctx, t, &ext, why, len)))
		return rc;
	return no_overlap(t, why, len);
}

/* ---- GPT ---------------------------------------------------------------- */

struct gpt_hdr {
	uint64_t alt_lba, first_usable, last_usable, entries_lba;
	uint32_t count, esize, entries_crc;
};

/* UTF-16LE name (n code units, up to a NUL) to UTF-8; an unpaired
 * surrogate becomes U+FFFD. */
static void name_utf8(const uint8_t *u, size_t n, char *out)
{
	char *o = out;

	for (size_t i = 0; i < n; i++) {
		uint32_t c = get_le16(u + 2 * i);

		if (!c)
			break;
		if (c >= 0xd800 && c < 0xdc00 && i + 1 < n &&
		    get_le16(u + 2 * i + 2) >= 0xdc00 &&
		    get_le16(u + 2 * i + 2) < 0xe000)
			c = 0x10000 + ((c - 0xd800) << 10) +
			    (get_le16(u + 2 * ++i) - 0xdc00u);
		else if (c >= 0xd800 && c < 0xe000)
			c = 0xfffd;
		if (c < 0x80) {
			*o++ = (char)c;
		} else if (c < 0x800) {
			*o++ = (char)(0xc0 | (c >> 6));
			*o++ = (char)(0x80 | (c & 0x3f));
		} else if (c < 0x10000) {
			*o++ = (char)(0xe0 | (c >> 12));
			*o++ = (char)(0x80 | ((c >> 6) & 0x3f));
			*o++ = (char)(0x80 | (c & 0x3f));
		} else {
			*o++ = (char)(0xf0 | (c >> 18));
			*o++ = (char)(0x80 | ((c >> 12) & 0x3f));
			*o++ = (char)(0x80 | ((c >> 6) & 0x3f));
			*o++ = (char)(0x80 | (c & 0x3f));
		}
	}
	*o = '\0';
}

/* A header's fields, checked: the usable range and the entry array
 * inside the disk, the counts in range. */
static int gpt_fields(const uint8_t *h, struct fmt_part_table *t,
		      struct gpt_hdr *g, const char *what, char *why,
		      size_t len)
{
	uint32_t ss = t->sector;
	uint64_t asec;

	g->alt_lba = get_le64(h + 32);
	g->first_usable = get_le64(h + 40);
	g->last_usable = get_le64(h + 48);
	memcpy(t->disk_guid, h + 56, 16);
	g->entries_lba = get_le64(h + 72);
	g->count = get_le32(h + 80);
	g->esize = get_le32(h + 84);
	g->entries_crc = get_le32(h + 88);
	if (g->first_usable > g->last_usable ||
	    g->last_usable >= t->disk_sectors)
		return fail(why, len, "%s: usable sectors %llu to %llu are not "
			    "inside the disk (%llu sectors)", what,
			    (unsigned long long)g->first_usable,
			    (unsigned long long)g->last_usable,
			    (unsigned long long)t->disk_sectors);
	if (g->count > FMT_GPT_ENTRIES_MAX)
		return fail(why, len, "%s counts %u entries (at most %u)", what,
			    g->count, FMT_GPT_ENTRIES_MAX);
	if (g->esize < 128 || g->esize > 4096 || (g->esize & (g->esize - 1)))
		return fail(why, len, "%s: entry size %u is not a power of two "
			    "from 128 to 4096", what, g->esize);
	asec = ((uint64_t)g->count * g->esize + ss - 1) / ss;
	if (g->entries_lba < 2 || g->entries_lba >= t->disk_sectors ||
	    asec > t->disk_sectors - g->entries_lba)
		return fail(why, len, "%s: entry array (%u entries from sector "
			    "%llu) is not inside the disk (%llu sectors)", what,
			    g->count, (unsigned long long)g->entries_lba,
			    (unsigned long long)t->disk_sectors);
	return 0;
}

/* The header in sector lba (1, or the backup's in the disk's last
 * sector), checked: signature, size, CRC, its own place, then its
 * fields. */
static int gpt_header(fmt_part_read_fn rd, void *ctx,
		      struct fmt_part_table *t, uint64_t lba,
		      struct gpt_hdr *g, char *why, size_t len)
{
	uint8_t h[FMT_PART_SECTOR_MAX];
	uint32_t hsize, crc, ss = t->sector;
	char what[64];

	snprintf(what, sizeof(what), "GPT header (sector %llu)",
		 (unsigned long long)lba);
	if (rd(ctx, lba * ss, h, ss))
		return rd_fail(why, len, lba * ss);
	if (memcmp(h, GPT_SIG, 8))
		return fail(why, len, "%ssector %llu holds no GPT header",
			    lba == 1 ? "the protective MBR announces a GPT, "
			    "but " : "", (unsigned long long)lba);
	hsize = get_le32(h + 12);
	if (hsize < 92 || hsize > ss)
		return fail(why, len, "%s: size %u is out of range (92 to %u)",
			    what, hsize, ss);
	crc = get_le32(h + 16);
	put_le32(h + 16, 0);
	if (fmt_crc32(h, hsize) != crc)
		return fail(why, len, "%s: bad CRC (stored 0x%08x, computed "
			    "0x%08x)", what, crc, fmt_crc32(h, hsize));
	if (get_le64(h + 24) != lba)
		return fail(why, len, "%s says it is in sector %llu", what,
			    (unsigned long long)get_le64(h + 24));
	return gpt_fields(h, t, g, what, why, len);
}

/* One entry (index i) in use: its partition, checked. */
static int gpt_entry(struct fmt_part_table *t, const struct gpt_hdr *g,
		     const uint8_t *e, uint32_t i, char *why, size_t len)
{
	struct fmt_part p;
	uint64_t first = get_le64(e + 32), last = get_le64(e + 40);
	int rc;

	memset(&p, 0, sizeof(p));
	p.number = i + 1;
	memcpy(p.type_guid, e, 16);
	memcpy(p.guid, e + 16, 16);
	p.attrs = get_le64(e + 48);
	name_utf8(e + 56, FMT_GPT_NAME_MAX, p.name);
	if (last < first)
		return fail(why, len, "GPT entry %u ends (sector %llu) before "
			    "it starts (sector %llu)", p.number,
			    (unsigned long long)last,
			    (unsigned long long)first);
	p.start = first;
	p.sectors = last - first + 1;
	if ((rc = in_disk(t, &p, why, len)))
		return rc;
	if (first < g->first_usable || last > g->last_usable)
		return fail(why, len, "partition %u (sectors %llu to %llu) "
			    "lies outside the GPT's usable sectors (%llu to "
			    "%llu)", p.number, (unsigned long long)first,
			    (unsigned long long)last,
			    (unsigned long long)g->first_usable,
			    (unsigned long long)g->last_usable);
	return add(t, &p, why, len);
}

/* The entry array a header points at: its CRC, then its entries. */
static int gpt_array(fmt_part_read_fn rd, void *ctx,
		     struct fmt_part_table *t, const struct gpt_hdr *g,
		     char *why, size_t len)
{
	static const uint8_t zero[16];
	uint8_t e[4096];
	uint32_t crc = 0;
	int bad = 0;

	t->n = 0;
	for (uint32_t i = 0; i < g->count; i++) {
		uint64_t off = g->entries_lba * t->sector +
			       (uint64_t)i * g->esize;

		if (rd(ctx, off, e, g->esize))
			return rd_fail(why, len, off);
		crc = fmt_crc32_update(crc, e, g->esize);
		/* the first bad entry is told once the CRC is known good */
		if (!bad && memcmp(e, zero, 16))
			bad = gpt_entry(t, g, e, i, why, len);
	}
	if (crc != g->entries_crc)
		return fail(why, len, "GPT entry array (sector %llu): bad CRC "
			    "(stored 0x%08x, computed 0x%08x)",
			    (unsigned long long)g->entries_lba, g->entries_crc,
			    crc);
	return bad ? bad : no_overlap(t, why, len);
}

/* The header at lba and its array. */
static int gpt_copy(fmt_part_read_fn rd, void *ctx, struct fmt_part_table *t,
		    uint64_t lba, struct gpt_hdr *g, char *why, size_t len)
{
	int rc = gpt_header(rd, ctx, t, lba, g, why, len);

	return rc ? rc : gpt_array(rd, ctx, t, g, why, len);
}

/* The primary copy; when it cannot be used, the backup (where the
 * primary header says, or in the disk's last sector), as the UEFI
 * specification asks: t->warning then says what was wrong. */
static int gpt_decode(fmt_part_read_fn rd, void *ctx,
		      struct fmt_part_table *t, char *why, size_t len)
{
	struct gpt_hdr g = { 0 }, b = { 0 };
	char bwhy[160];
	uint64_t alt = t->disk_sectors - 1;
	int rc, brc;

	t->kind = FMT_PT_GPT;
	rc = gpt_header(rd, ctx, t, 1, &g, why, len);
	if (!rc && g.alt_lba > 1 && g.alt_lba < t->disk_sectors)
		alt = g.alt_lba;
	if (!rc)
		rc = gpt_array(rd, ctx, t, &g, why, len);
	if (rc != R4_ECORRUPT || alt <= 1)
		return rc;
	brc = gpt_copy(rd, ctx, t, alt, &b, bwhy, sizeof(bwhy));
	if (brc) {
		size_t l = strlen(why);

		if (l + 1 < len)
			snprintf(why + l, len - l, "; the backup: %s", bwhy);
		t->n = 0;
		return rc;
	}
	snprintf(t->warning, sizeof(t->warning), "%s; the backup GPT (sector "
		 "%llu) was read instead", why, (unsigned long long)alt);
	why[0] = '\0';
	return 0;
}

/* ---- the table ---------------------------------------------------------- */

/* The sector size: the caller's (a device's logical sector size), or
 * 512 unless a GPT header lies at byte 4096 and none at byte 512 (a
 * disk image of a 4096-byte-sector disk). */
static uint32_t sector_size(fmt_part_read_fn rd, void *ctx,
			    uint64_t disk_bytes, uint32_t hint)
{
	uint8_t sig[8];

	if (hint)
		return hint;
	if (disk_bytes >= 3 * 4096 && !rd(ctx, SEC, sig, 8) &&
	    memcmp(sig, GPT_SIG, 8) && !rd(ctx, 4096, sig, 8) &&
	    !memcmp(sig, GPT_SIG, 8))
		return 4096;
	return SEC;
}

int fmt_part_decode(fmt_part_read_fn rd, void *ctx, uint64_t disk_bytes,
		    uint32_t sector, struct fmt_part_table *t, char *why,
		    size_t len)
{
	uint8_t sec[SEC];

	memset(t, 0, sizeof(*t));
	if (len)
		why[0] = '\0';
	if (sector && (sector < SEC || sector > FMT_PART_SECTOR_MAX ||
		       (sector & (sector - 1)))) {
		snprintf(why, len, "sector size %u is not a power of two from "
			 "512 to %u", sector, FMT_PART_SECTOR_MAX);
		return R4_EINVAL;
	}
	t->sector = sector_size(rd, ctx, disk_bytes, sector);
	t->disk_sectors = disk_bytes / t->sector;
	if (t->disk_sectors < 2) {
		snprintf(why, len, "no partition table (the disk is smaller "
			 "than two sectors)");
		return R4_ENOTFOUND;
	}
	if (rd(ctx, 0, sec, SEC))
		return rd_fail(why, len, 0);
	if (sec[510] != 0x55 || sec[511] != 0xaa) {
		snprintf(why, len, "no partition table (sector 0 does not end "
			 "in 0x55 0xAA)");
		return R4_ENOTFOUND;
	}
	/* a boot sector of a file system ends so too: its "entries" do
	 * not have boot flags 0x00 or 0x80 */
	for (int i = 0; i < 4; i++)
		if (sec[MBR_ENTRIES + 16 * i] & 0x7f) {
			snprintf(why, len, "no partition table (sector 0 is a "
				 "boot sector: entry %d's boot flag is 0x%02x)",
				 i + 1, sec[MBR_ENTRIES + 16 * i]);
			return R4_ENOTFOUND;
		}
	for (int i = 0; i < 4; i++)
		if (sec[MBR_ENTRIES + 16 * i + 4] == 0xee)
			return gpt_decode(rd, ctx, t, why, len);
	return mbr_decode(rd, ctx, t, sec, why, len);
}

const struct fmt_part *fmt_part_find(const struct fmt_part_table *t,
				     unsigned number)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->p[i].number == number)
			return &t->p[i];
	return NULL;
}
