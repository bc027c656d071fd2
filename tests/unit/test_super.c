/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: tests of the master, format40, status and backup codecs and of
 * the backup placement, against mkfs.reiser4-made volumes. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <fcntl.h>
#include <unistd.h>

#include "tap.h"
#include "fixture.h"
#include "format/endian.h"
#include "format/super.h"

#define BS FIXTURE_BLKSIZE
#define UUID_OPT "-U 01234567-89ab-cdef-0123-456789abcdef"

static const uint8_t want_uuid[16] = {
	0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
	0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef
};
/* mkfs.reiser4 1.2.2's default root plugin set (doc/format.md §1.7). */
static const uint32_t default_pset[FMT_PSET_COUNT] = {
	1, 0, 0, 2, 1, 2, 0, 2, 0, 0, 0, 4, 0, 4
};

/* Read len bytes at byte offset off of an image. */
static int read_at(const char *path, uint64_t off, uint8_t *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	tap_require(fd >= 0, "cannot open %s", path);
	n = pread(fd, buf, len, (off_t)off);
	close(fd);
	tap_require(n == (ssize_t)len, "cannot read %zu bytes at %llu of %s",
		    len, (unsigned long long)off, path);
	return 0;
}

/* ---- pure tests ---- */

static void test_fixed_blocks(void)
{
	is_u64(fmt_blk_master(4096), 16, "master block, 4096");
	is_u64(fmt_blk_format40(4096), 17, "format40 block");
	is_u64(fmt_blk_bitmap0(4096), 18, "bitmap0 block");
	is_u64(fmt_blk_journal_header(4096), 19, "journal header block");
	is_u64(fmt_blk_journal_footer(4096), 20, "journal footer block");
	is_u64(fmt_blk_status(4096), 21, "status block");
	is_u64(fmt_blk_backup0(4096), 22, "first backup block");
	is_u64(fmt_blk_mkfs_root(4096), 23, "mkfs root block");
	is_u64(fmt_blk_mkfs_leaf(4096), 24, "mkfs leaf block");
	is_u64(fmt_min_block_count(4096), 25, "minimum block count");
	is_u64(fmt_blk_master(1024), 64, "master block, 1024");
	is_u64(fmt_blk_status(512), 133, "status block, 512");
	ok(fmt_blksize_valid(512) && fmt_blksize_valid(4096) &&
	   fmt_blksize_valid(32768), "valid block sizes");
	ok(!fmt_blksize_valid(0) && !fmt_blksize_valid(256) &&
	   !fmt_blksize_valid(3000) && !fmt_blksize_valid(65536),
	   "invalid block sizes");
}

static void test_master_roundtrip(void)
{
	struct fmt_master m, m2;
	uint8_t buf[FMT_MASTER_SIZE], buf2[FMT_MASTER_SIZE];

	fmt_master_init(&m, 4096);
	memcpy(m.uuid, want_uuid, 16);
	memcpy(m.label, "sixteen-chars-ok", 16);	/* unterminated */
	m.diskmap = 0x1122334455667788ull;
	fmt_master_encode(&m, buf);
	fmt_master_decode(buf, &m2);
	ok(memcmp(&m, &m2, sizeof(m)) == 0, "master decode(encode(m)) == m");
	fmt_master_encode(&m2, buf2);
	is_mem(buf2, buf, sizeof(buf), "master encode(decode(b)) == b");
	is_mem(buf, "ReIsEr4\0\0\0\0\0\0\0\0\0\0\0\0\x10", 20,
	       "master magic, format id, blksize bytes");
	is_mem(buf + 52, "\x88\x77\x66\x55\x44\x33\x22\x11", 8,
	       "master diskmap at 52, LE");
	ok(fmt_master_verify(&m) == NULL, "master verifies");

	m2 = m; m2.magic[1] = 'E';
	is_str(fmt_master_verify(&m2), "master magic is not ReIsEr4",
	       "master: bad magic");
	m2 = m; m2.format_id = 1;
	is_str(fmt_master_verify(&m2), "master format id is not 0 (format40)",
	       "master: bad format id");
	m2 = m; m2.blksize = 3000;
	is_str(fmt_master_verify(&m2),
	       "master blocksize is not a power of two in 512..32768",
	       "master: bad blocksize");
}

static void sample_format40(struct fmt_format40 *sb)
{
	fmt_format40_init(sb);
	sb->block_count = 16384;
	sb->free_blocks = 16359;
	sb->root_block = 23;
	sb->next_oid = 0x10000;
	sb->file_count = 1;
	sb->flushes = 0x0102030405060708ull;
	sb->mkfs_id = 0x331e61b6;
	sb->tree_height = 2;
	sb->policy = 2;
	sb->flags = 1;
	sb->version = 2;
	sb->node_pid = 1;
}

static void test_format40_roundtrip(void)
{
	struct fmt_format40 sb, sb2;
	uint8_t buf[FMT_FORMAT40_SIZE], buf2[FMT_FORMAT40_SIZE];

	sample_format40(&sb);
	sb.update_backup = 1;
	memset(buf, 0xaa, sizeof(buf));
	fmt_format40_encode(&sb, buf);
	fmt_format40_decode(buf, &sb2);
	ok(memcmp(&sb, &sb2, sizeof(sb)) == 0,
	   "format40 decode(encode(sb)) == sb");
	fmt_format40_encode(&sb2, buf2);
	is_mem(buf2, buf, sizeof(buf), "format40 encode(decode(b)) == b");
	is_u64(get_le32(buf + 80), 0x80000002u, "version word has bit 31");
	is_u64(get_le32(buf + 84), 1, "node_pid at 84");
	is_u64(get_le16(buf + 68), 2, "tree_height at 68");
	ok(buf[511] == 0 && buf[88] == 0, "unused tail zeroed");
	is_int(fmt_format40_key_policy(&sb), FMT_KEY_LARGE, "flags 1: large");
	fmt_format40_set_key_policy(&sb2, FMT_KEY_SHORT);
	is_u64(sb2.flags, 0, "set short keys clears bit 0");
	is_int(fmt_format40_key_policy(&sb2), FMT_KEY_SHORT, "short keys");
	fmt_format40_set_key_policy(&sb2, FMT_KEY_LARGE);
	is_u64(sb2.flags, 1, "set large keys sets bit 0");
}

static void check_f40(const struct fmt_format40 *sb, const char *want,
		      const char *what)
{
	is_str(fmt_format40_verify(sb, 4096), want, "format40: %s", what);
}

static void test_format40_verify(void)
{
	struct fmt_format40 sb, c;

	sample_format40(&sb);
	ok(fmt_format40_verify(&sb, 4096) == NULL, "format40 verifies");
	c = sb; c.magic[0] = 'r';
	check_f40(&c, "format40 magic is not ReIsEr40FoRmAt", "magic");
	c = sb; c.block_count = 24;
	check_f40(&c, "format40 block_count is below the minimum volume size",
		  "small volume");
	c = sb; c.free_blocks = 16385;
	check_f40(&c, "format40 free_blocks is larger than block_count",
		  "free blocks");
	c = sb; c.root_block = 16384;
	check_f40(&c, "format40 root_block is not below block_count",
		  "root past end");
	c = sb; c.root_block = 22;
	check_f40(&c, "format40 root_block lies in the fixed blocks",
		  "root in fixed blocks");
	c = sb; c.tree_height = 1;
	check_f40(&c, "format40 tree_height is not in 2..10", "height 1");
	c = sb; c.tree_height = 11;
	check_f40(&c, "format40 tree_height is not in 2..10", "height 11");
	c = sb; c.tree_height = 10;
	ok(fmt_format40_verify(&c, 4096) == NULL, "format40: height 10 ok");
	c = sb; c.node_pid = 2;
	check_f40(&c, "format40 node_pid is not 0 (node40) or 1 (node41)",
		  "node pid");
	c = sb; c.next_oid = 0xffff;
	check_f40(&c, "format40 next_oid is below 0x10000", "next oid");
	is_str(fmt_format40_verify(&sb, 1000),
	       "format40 checked with an invalid block size", "bad blksize");
}

static void test_status_roundtrip(void)
{
	struct fmt_status st, st2;
	uint8_t buf[FMT_STATUS_SIZE], buf2[FMT_STATUS_SIZE];

	fmt_status_init(&st);
	ok(fmt_status_verify(&st) == NULL, "fresh status verifies");
	st.status = FMT_STATUS_CORRUPTED | FMT_STATUS_IOERROR;
	st.ext_status = 0x1234;
	for (int i = 0; i < FMT_STATUS_STACK; i++)
		st.stack[i] = 0xffffffff81000000ull + (uint64_t)i;
	strcpy(st.message, "something broke");
	fmt_status_encode(&st, buf);
	fmt_status_decode(buf, &st2);
	ok(memcmp(&st, &st2, sizeof(st)) == 0, "status decode(encode) == st");
	fmt_status_encode(&st2, buf2);
	is_mem(buf2, buf, sizeof(buf), "status encode(decode(b)) == b");
	is_u64(get_le64(buf + 16), 9, "status word at 16");
	is_u64(get_le64(buf + 24), 0x1234, "extended status at 24");
	is_u64(get_le64(buf + 32 + 72), 0xffffffff81000009ull, "stack[9]");
	is_str((char *)buf + 112, "something broke", "message at 112");
	ok(fmt_status_verify(&st) == NULL, "status with error bits verifies");
	st2 = st; st2.status = 0x10;
	is_str(fmt_status_verify(&st2), "status has unknown bits beyond 0xf",
	       "status: unknown bits");
	st2 = st; memset(st2.magic, 0, sizeof(st2.magic));
	is_str(fmt_status_verify(&st2), "status magic is not ReiSeR4StATusBl",
	       "status: no magic");
}

static void sample_backup(struct fmt_backup *b)
{
	struct fmt_master m;
	struct fmt_format40 sb;

	fmt_master_init(&m, 4096);
	memcpy(m.uuid, want_uuid, 16);
	memcpy(m.label, "lbl", 3);
	m.diskmap = 77;		/* not backed up */
	sample_format40(&sb);
	sb.update_backup = 1;	/* not backed up */
	fmt_backup_make(&m, &sb, default_pset, b);
}

static void test_backup_roundtrip(void)
{
	struct fmt_backup b, b2;
	uint8_t buf[FMT_BACKUP_SIZE], buf2[FMT_BACKUP_SIZE];

	sample_backup(&b);
	is_u64(b.master.diskmap, 0, "backup drops diskmap");
	ok(b.has_pset, "version 2 backup has a pset");
	ok(fmt_backup_verify(&b) == NULL, "backup verifies");
	fmt_backup_encode(&b, buf);
	fmt_backup_decode(buf, &b2);
	ok(memcmp(&b, &b2, sizeof(b)) == 0, "backup decode(encode(b)) == b");
	fmt_backup_encode(&b2, buf2);
	is_mem(buf2, buf, sizeof(buf), "backup encode(decode(b)) == b");
	is_mem(buf + 1, "ReIsEr4", 8, "master copy at 1");
	is_mem(buf + 61, "ReIsEr40FoRmAt\0", 16, "format magic at 61");
	is_u64(get_le64(buf + 77), 16384, "block_count at 77");
	is_u64(get_le32(buf + 85), 0x331e61b6, "mkfs_id at 85");
	is_u64(get_le32(buf + 99), 2, "version at 99 without bit 31");
	is_mem(buf + 111, "PsEt", 4, "PsEt at 111");
	is_u64(get_le32(buf + 115 + 4 * 13), 4, "pset[13] at 167");

	b2 = b; b2.version = 0; b2.has_pset = 0;
	fmt_backup_encode(&b2, buf);
	ok(buf[111] == 0 && buf[115] == 0, "no pset area for version 0");
	fmt_backup_decode(buf, &b);
	ok(!b.has_pset && fmt_backup_verify(&b) == NULL,
	   "version 0 backup without pset verifies");

	sample_backup(&b);
	b2 = b; b2.backup_version = 1;
	is_str(fmt_backup_verify(&b2), "backup version byte is not 0",
	       "backup: version byte");
	b2 = b; b2.master.magic[0] = 0;
	is_str(fmt_backup_verify(&b2), "backup master magic is not ReIsEr4",
	       "backup: master magic");
	b2 = b; b2.magic[5] = 'x';
	is_str(fmt_backup_verify(&b2),
	       "backup format40 magic is not ReIsEr40FoRmAt",
	       "backup: format magic");
	b2 = b; b2.has_pset = 0;
	is_str(fmt_backup_verify(&b2),
	       "backup PsEt presence does not match the format version",
	       "backup: missing pset");
	b2 = b; b2.version |= 0x80000000u;
	is_str(fmt_backup_verify(&b2), "backup version has bit 31 set",
	       "backup: bit 31");
}

static int same_list(const uint64_t *a, size_t na, const uint64_t *b,
		     size_t nb)
{
	return na == nb && memcmp(a, b, na * sizeof(*a)) == 0;
}

static void test_backup_placement(void)
{
	static const uint64_t t64m[] = { 22 };
	static const uint64_t t1g[] = { 22, 32737, 65473, 130945, 196417 };
	static const uint64_t t4g[] = { 22, 32737, 65473, 130945, 196417,
					294625, 458305, 687457 };
	uint64_t out[128];
	size_t n;
	int ascending = 1;

	n = fmt_backup_blocks(16384, 4096, out, 64);
	ok(same_list(out, n, t64m, 1), "backups of 64 MiB");
	n = fmt_backup_blocks(262144, 4096, out, 64);
	ok(same_list(out, n, t1g, 5), "backups of 1 GiB");
	n = fmt_backup_blocks(1048576, 4096, out, 64);
	ok(same_list(out, n, t4g, 8), "backups of 4 GiB");
	n = fmt_backup_blocks(32, 4096, out, 64);
	ok(same_list(out, n, t64m, 1), "backups of 128 KiB");
	is_int(fmt_backup_blocks(1048576, 4096, NULL, 0), 8, "count only");
	n = fmt_backup_blocks(1048576, 4096, out, 3);
	ok(n == 8 && same_list(out, 3, t4g, 3), "truncated to max");
	n = fmt_backup_blocks(25, 4096, out, 64);
	ok(same_list(out, n, t64m, 1), "backups of the minimum volume");
	n = fmt_backup_blocks(40964, 4096, out, 64);
	ok(n == 1, "sequence 27310, 40965: stops before region 1");
	n = fmt_backup_blocks(40965, 4096, out, 64);
	ok(n == 2 && out[1] == 32737, "x1.5 sequence 40965 hits region 1");
	n = fmt_backup_blocks(UINT64_MAX, 4096, out, 128);
	for (size_t i = 1; i < n && i < 128; i++)
		ascending &= out[i] > out[i - 1];
	ok(n > 8 && n <= 128 && ascending,
	   "huge volume terminates, ascending (%zu copies)", n);
}

/* doc/format.md §12: blk 16 and 17 of a fresh 64 MiB volume
 * made with -L lbl -U 01234567-89ab-cdef-0123-456789abcdef. */
static void test_map_hex(void)
{
	static const uint8_t master[0x28] = {
		0x52, 0x65, 0x49, 0x73, 0x45, 0x72, 0x34, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x10, 0x01, 0x23, 0x45, 0x67,
		0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67,
		0x89, 0xab, 0xcd, 0xef, 0x6c, 0x62, 0x6c, 0x00
	};
	static const uint8_t f40[0x58] = {
		0x00, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0xe7, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x17, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0xb6, 0x61, 0x1e, 0x33, 0x52, 0x65, 0x49, 0x73,
		0x45, 0x72, 0x34, 0x30, 0x46, 0x6f, 0x52, 0x6d,
		0x41, 0x74, 0x00, 0x00, 0x02, 0x00, 0x02, 0x00,
		0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00
	};
	uint8_t buf[FMT_FORMAT40_SIZE], enc[FMT_FORMAT40_SIZE];
	struct fmt_master m;
	struct fmt_format40 sb;

	memset(buf, 0, sizeof(buf));
	memcpy(buf, master, sizeof(master));
	fmt_master_decode(buf, &m);
	ok(fmt_master_verify(&m) == NULL, "map hex: master verifies");
	ok(m.blksize == 4096 && memcmp(m.uuid, want_uuid, 16) == 0 &&
	   strcmp(m.label, "lbl") == 0, "map hex: blksize, uuid, label");
	memset(enc, 0, sizeof(enc));
	fmt_master_encode(&m, enc);
	is_mem(enc, buf, FMT_MASTER_SIZE, "map hex: master re-encodes");

	memset(buf, 0, sizeof(buf));
	memcpy(buf, f40, sizeof(f40));
	fmt_format40_decode(buf, &sb);
	ok(fmt_format40_verify(&sb, 4096) == NULL, "map hex: format40 verifies");
	ok(sb.block_count == 16384 && sb.free_blocks == 16359 &&
	   sb.root_block == 23 && sb.next_oid == 0x10000 &&
	   sb.file_count == 1 && sb.mkfs_id == 0x331e61b6 &&
	   sb.tree_height == 2 && sb.policy == 2 && sb.flags == 1 &&
	   sb.version == 2 && sb.node_pid == 0, "map hex: format40 fields");
	fmt_format40_encode(&sb, enc);
	is_mem(enc, buf, FMT_FORMAT40_SIZE, "map hex: format40 re-encodes");
}

/* ---- against mkfs.reiser4 ---- */

static void check_mkfs_supers(const char *path, struct fmt_master *m,
			      struct fmt_format40 *sb)
{
	uint8_t blk[BS], enc[BS];

	fixture_block(path, 16, blk);
	fmt_master_decode(blk, m);
	ok(fmt_master_verify(m) == NULL, "mkfs master verifies");
	ok(m->format_id == 0 && m->blksize == 4096 && m->diskmap == 0,
	   "master format id, blocksize, diskmap");
	is_mem(m->uuid, want_uuid, 16, "master uuid from -U");
	is_mem(m->label, "lbl\0\0\0\0\0\0\0\0\0\0\0\0", 16, "label from -L");
	memset(enc, 0, BS);
	fmt_master_encode(m, enc);
	is_mem(enc, blk, BS, "master block re-encodes byte for byte");

	fixture_block(path, 17, blk);
	fmt_format40_decode(blk, sb);
	ok(fmt_format40_verify(sb, 4096) == NULL, "mkfs format40 verifies");
	is_u64(sb->block_count, 16384, "block_count");
	is_u64(sb->free_blocks, 16359, "free_blocks");
	is_u64(sb->root_block, 23, "root_block");
	is_u64(sb->next_oid, 0x10000, "next_oid");
	is_u64(sb->file_count, 1, "file_count");
	is_u64(sb->flushes, 0, "flushes");
	is_int(sb->tree_height, 2, "tree_height");
	is_int(sb->policy, 2, "policy (smart)");
	is_u64(sb->flags, 1, "flags (large keys)");
	is_int(sb->version, 2, "version");
	is_int(sb->update_backup, 0, "no update-backup bit");
	is_int(sb->node_pid, 0, "node_pid node40");
	memset(enc, 0, BS);
	fmt_format40_encode(sb, enc);
	is_mem(enc, blk, BS, "format40 block re-encodes byte for byte");
	fixture_block(path, 23, blk);
	is_u64(sb->mkfs_id, get_le32(blk + 12), "mkfs_id equals root node's");
}

static void test_mkfs_64m(void)
{
	char path[64];
	uint8_t blk[BS], enc[BS];
	struct fmt_master m;
	struct fmt_format40 sb;
	struct fmt_status st;
	struct fmt_backup b, made;

	if (fixture_mkfs("-L lbl " UUID_OPT, "64M", path)) {
		tap_skip(28, "mkfs.reiser4 not available");
		return;
	}
	check_mkfs_supers(path, &m, &sb);
	fixture_block(path, 21, blk);
	fmt_status_decode(blk, &st);
	ok(fmt_status_verify(&st) == NULL, "mkfs status verifies");
	is_u64(st.status, FMT_STATUS_OK, "status OK");
	memset(enc, 0, BS);
	fmt_status_encode(&st, enc);
	is_mem(enc, blk, BS, "status block re-encodes byte for byte");

	fixture_block(path, 22, blk);
	fmt_backup_decode(blk, &b);
	ok(fmt_backup_verify(&b) == NULL, "mkfs backup verifies");
	ok(memcmp(b.pset, default_pset, sizeof(default_pset)) == 0,
	   "backup pset is the default profile's");
	is_u64(b.block_count, 16384, "backup block_count");
	memset(enc, 0, BS);
	fmt_backup_encode(&b, enc);
	is_mem(enc, blk, BS, "backup block re-encodes byte for byte");
	fmt_backup_make(&m, &sb, default_pset, &made);
	memset(enc, 0, BS);
	fmt_backup_encode(&made, enc);
	is_mem(enc, blk, BS, "backup made from master + format40 matches");
	unlink(path);
}

static void test_mkfs_options(void)
{
	char path[64];
	uint8_t blk[BS], enc[BS];
	struct fmt_master m;
	struct fmt_format40 sb;
	struct fmt_backup made;
	uint32_t pset[FMT_PSET_COUNT];

	if (fixture_mkfs("-o node=node41 -o create=reg40", "64M", path)) {
		tap_skip(3, "mkfs.reiser4 not available");
		return;
	}
	fixture_block(path, 16, blk);
	fmt_master_decode(blk, &m);
	fixture_block(path, 17, blk);
	fmt_format40_decode(blk, &sb);
	is_int(sb.node_pid, 1, "-o node=node41 gives node_pid 1");
	ok(fmt_format40_verify(&sb, 4096) == NULL, "node41 sb verifies");
	memcpy(pset, default_pset, sizeof(pset));
	pset[FMT_PSET_CREATE] = FMT_OBJ_REG40;
	fmt_backup_make(&m, &sb, pset, &made);
	memset(enc, 0, BS);
	fmt_backup_encode(&made, enc);
	fixture_block(path, 22, blk);
	is_mem(enc, blk, BS, "backup with create=reg40 matches");
	unlink(path);
}

/* Every block of the image that starts like a backup (version byte 0,
 * then the master magic), found through the file's data extents. */
static size_t scan_backups(const char *path, uint32_t bs, uint64_t *out,
			   size_t max)
{
	int fd = open(path, O_RDONLY);
	uint8_t *blk = malloc(bs);
	off_t data = 0, hole;
	size_t n = 0;

	while (fd >= 0 && blk &&
	       (data = lseek(fd, data, SEEK_DATA)) >= 0) {
		hole = lseek(fd, data, SEEK_HOLE);
		for (off_t o = data / bs * bs; o < hole; o += bs) {
			if (pread(fd, blk, bs, o) != (ssize_t)bs)
				break;
			if (blk[0] == 0 && memcmp(blk + 1, "ReIsEr4", 8) == 0 &&
			    n < max)
				out[n++] = (uint64_t)o / bs;
		}
		data = hole;
	}
	free(blk);
	if (fd >= 0)
		close(fd);
	return n;
}

/* The backups of an image are where fmt_backup_blocks() says, and each
 * holds what fmt_backup_make() builds from its super blocks. */
static void check_image_backups(const char *opts, const char *size,
				uint32_t bs, size_t want_n)
{
	char path[64];
	uint8_t *blk = malloc(bs), *enc = malloc(bs);
	uint64_t calc[256], seen[256];
	size_t nc, ns, good = 0;
	struct fmt_master m;
	struct fmt_format40 sb;
	struct fmt_backup made;

	tap_require(blk && enc, "out of memory");
	if (fixture_mkfs(opts, size, path)) {
		tap_skip(3, "mkfs.reiser4 not available");
		free(blk); free(enc);
		return;
	}
	read_at(path, FMT_MASTER_OFFSET, blk, bs);
	fmt_master_decode(blk, &m);
	read_at(path, fmt_blk_format40(bs) * bs, blk, bs);
	fmt_format40_decode(blk, &sb);
	fmt_backup_make(&m, &sb, default_pset, &made);
	memset(enc, 0, bs);
	fmt_backup_encode(&made, enc);

	nc = fmt_backup_blocks(sb.block_count, bs, calc, 256);
	ns = scan_backups(path, bs, seen, 256);
	is_int(nc, want_n, "%s %s: %zu backups computed", size, opts, nc);
	ok(same_list(calc, nc, seen, ns),
	   "%s %s: computed backups are exactly the backup blocks (%zu seen)",
	   size, opts, ns);
	for (size_t i = 0; i < nc; i++)
		good += read_at(path, calc[i] * bs, blk, bs) == 0 &&
			memcmp(blk, enc, bs) == 0;
	is_int(good, nc, "%s %s: every copy equals the encoded backup",
	       size, opts);
	unlink(path);
	free(blk);
	free(enc);
}

int main(void)
{
	test_fixed_blocks();
	test_master_roundtrip();
	test_format40_roundtrip();
	test_format40_verify();
	test_status_roundtrip();
	test_backup_roundtrip();
	test_backup_placement();
	test_map_hex();
	test_mkfs_64m();
	test_mkfs_options();
	check_image_backups("", "64M", 4096, 1);
	check_image_backups("", "1G", 4096, 5);
	check_image_backups("", "4G", 4096, 8);
	check_image_backups("", "100G", 4096, 16);
	check_image_backups("", "128K", 4096, 1);
	check_image_backups("-b 1024", "64M", 1024, 6);
	check_image_backups("-b 512", "16M", 512, 5);
	return tap_done();
}
