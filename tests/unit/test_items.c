/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: item body codecs (stat40, cde40, extent40, tail40, nodeptr40,
 * ctail40, bbox40) against mkfs.reiser4 and libreiser4 bytes, hand-built
 * items, every truncation and a seeded random corruption loop. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* mkstemp, fseeko in fixture.h */
#endif
#include "tap.h"
#include "fixture.h"
#include "format/item.h"
#include "format/node.h"
#include "format/endian.h"
#include "format/errors.h"
#include "format/plugin.h"

/* Items written by libreiser4 1.2.2 (a throw-away program linked with
 * -lreiser4 -laal on a volume from "mkfs.reiser4 -o create=reg40"):
 * reiser4_sym_create(root, "lnk", "target/path"), reiser4_spl_create of
 * a fifo (S_IFIFO|0644) and of "chr" (S_IFCHR, rdev (4<<8)|1),
 * reiser4_ccreg_create(root, "cc"), a 12-byte file "small" written with
 * reiser4_object_write (a tail item), a 20000-byte file "big" (an
 * extent item) and a directory "d" holding
 * "a_very_long_file_name_exceeding_inline". Bytes copied from the image;
 * the times are those of the run. */
static const uint8_t v_sym_sd[56] = {	/* leaf item 7, key 2a1:6c6e6b..:10000 */
	0x0b, 0x00, 0xa4, 0xa1, 0x01, 0x00, 0x00, 0x00, 0x0b, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x43, 0x15, 0x11, 0x6b, 0x43, 0x15, 0x11, 0x6b, 0x43, 0x15, 0x11, 0x6b,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x74, 0x61, 0x72, 0x67,
	0x65, 0x74, 0x2f, 0x70, 0x61, 0x74, 0x68, 0x00,
};
static const uint8_t v_chr_sd[44] = {
	0x03, 0x00, 0xa4, 0x21, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x43, 0x15, 0x11, 0x6b, 0x43, 0x15, 0x11, 0x6b, 0x43, 0x15, 0x11, 0x6b,
	0x01, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};
static const uint8_t v_fifo_sd[44] = {
	0x03, 0x00, 0xa4, 0x11, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x43, 0x15, 0x11, 0x6b, 0x43, 0x15, 0x11, 0x6b, 0x43, 0x15, 0x11, 0x6b,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};
static const uint8_t v_ccreg_sd[50] = {
	0x13, 0x00, 0xa4, 0x81, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x43, 0x15, 0x11, 0x6b, 0x43, 0x15, 0x11, 0x6b, 0x43, 0x15, 0x11, 0x6b,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
	0x04, 0x00,
};
static const uint8_t v_tail[12] = {	/* key 2a4:736d616c6c0000:10007:0 */
	0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x20, 0x77, 0x6f, 0x72, 0x6c, 0x64, 0x0a,
};
static const uint8_t v_cde_d[191] = {	/* key 100010:0:0:0 (dir 0x10001) */
	0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x50, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2e, 0x2e, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x68, 0x00, 0x5f, 0x79, 0x72, 0x65, 0x76, 0x5f,
	0x61, 0x01, 0x6c, 0x69, 0x66, 0x5f, 0x67, 0x6e, 0x6f, 0x6c, 0xc6, 0x51,
	0x64, 0xc5, 0xfa, 0xe3, 0xd4, 0x05, 0x80, 0x00, 0xa1, 0x02, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x64, 0x00,
	0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x91, 0x02, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x2a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x11, 0x00, 0x10, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x5f, 0x79, 0x72, 0x65, 0x76, 0x5f, 0x61, 0x01,
	0x02, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x61, 0x5f, 0x76, 0x65,
	0x72, 0x79, 0x5f, 0x6c, 0x6f, 0x6e, 0x67, 0x5f, 0x66, 0x69, 0x6c, 0x65,
	0x5f, 0x6e, 0x61, 0x6d, 0x65, 0x5f, 0x65, 0x78, 0x63, 0x65, 0x65, 0x64,
	0x69, 0x6e, 0x67, 0x5f, 0x69, 0x6e, 0x6c, 0x69, 0x6e, 0x65, 0x00,
};
static const uint8_t v_extent[16] = {	/* twig item, key 2a4:626967..:10003:0 */
	0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00,
};

/* Hand-made bodies for the small items: nodeptr to 24, a ctail with
 * 64K clusters, a truncate safe link for /small to 4096 bytes. */
static const uint8_t v_nodeptr[8] = { 24, 0, 0, 0, 0, 0, 0, 0 };
static const uint8_t v_ctail[6] = { 16, 'a', 'b', 'c', 'd', 'e' };
static const uint8_t v_bbox[40] = {
	0xa1, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0x6c, 0x6c, 0x61, 0x6d, 0x73, 0,
	0x07, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0x00, 0x10, 0, 0, 0, 0, 0, 0,
};

static const char long_name[] = "a_very_long_file_name_exceeding_inline";

static uint32_t rng_state = 0x9e3779b9u;

static uint32_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 17;
	rng_state ^= rng_state << 5;
	return rng_state;
}

/* Decode then encode a stat40 body: must give back the same bytes. */
static void stat_round_trip(const uint8_t *body, size_t len, const char *what)
{
	struct fmt_stat st;
	uint8_t re[512];
	size_t size = 0;

	is_int(fmt_stat_decode(body, len, &st), 0, "%s: decodes", what);
	is_int(fmt_stat_size(&st, &size), 0, "%s: size computes", what);
	is_int(size, len, "%s: size %zu", what, len);
	is_int(fmt_stat_encode(&st, re, sizeof(re)), 0, "%s: encodes", what);
	is_mem(re, body, len, "%s: round trip", what);
}

static void test_root_sd(const uint8_t *b, size_t len)
{
	static const uint16_t want_id[12] = { 0, 2, 1, 2, 0, 2, 0, 0, 0, 4, 0, 4 };
	struct fmt_stat st;
	int members_ok = 1;

	is_int(len, 94, "root SD is 94 bytes");
	is_int(fmt_stat_decode(b, len, &st), 0, "root SD decodes");
	is_u64(st.mask, 0x13, "root SD mask 0x13");
	is_int(st.mode, 040755, "root SD mode 040755");
	is_int(st.nlink, 3, "root SD nlink 3");
	is_u64(st.size, 2, "root SD size 2");
	ok(st.uid == 0 && st.gid == 0, "root SD uid, gid 0");
	is_u64(st.rdev_or_bytes, 100, "root SD bytes 100");
	ok(st.atime != 0 && st.atime == st.mtime, "root SD times set");
	is_int(st.pset.count, 12, "root pset has 12 slots");
	for (unsigned j = 0; j < 12; j++)
		if (st.pset.member[j] != j + 2 || st.pset.id[j] != want_id[j])
			members_ok = 0;
	ok(members_ok, "root pset = perm 0, formatting 2, hash 1, fibration 2,"
	   " sd 0, diritem 2, cipher 0, digest 0, compress 0, cmode 4, "
	   "cluster 0, create 4");
	ok(fmt_stat_verify(&st) == NULL, "root SD consistent");
	stat_round_trip(b, len, "root SD");
}

static void test_root_cde(const uint8_t *b, size_t len)
{
	struct fmt_cde40_entry e[2];
	uint8_t re[128];

	is_int(len, 102, "root cde40 is 102 bytes");
	is_int(fmt_cde40_units(b, len, FMT_KEY_LARGE), 2, "root cde40: 2 units");
	is_int(fmt_cde40_entry(b, len, FMT_KEY_LARGE, 0, &e[0]), 0, "\".\"");
	is_int(fmt_cde40_entry(b, len, FMT_KEY_LARGE, 1, &e[1]), 0, "\"..\"");
	ok(e[0].ordering == 0 && e[0].objectid == 0 && e[0].offset == 0,
	   "\".\" hash is all zero");
	is_u64(e[1].ordering, 0x002e2e0000000000ULL, "\"..\" ordering");
	ok(e[0].body_offset == 54 && e[1].body_offset == 78,
	   "entry bodies at 54 and 78");
	for (int i = 0; i < 2; i++) {
		is_u64(e[i].target.el[0], FMT_ROOT_LOCALITY << 4 | 1,
		       "entry %d target locality 0x29, SD", i);
		ok(e[i].target.el[1] == 0 && e[i].target.el[2] == FMT_ROOT_OID &&
		   e[i].target.el[3] == 0, "entry %d target root oid 0x2a", i);
		ok(e[i].name == NULL && e[i].name_len == 0,
		   "entry %d has no stored name", i);
	}
	ok(fmt_cde40_verify(b, len, FMT_KEY_LARGE, NULL) == NULL,
	   "root cde40 verifies");
	is_int(fmt_cde40_entry(b, len, FMT_KEY_LARGE, 2, &e[0]), R4_ERANGE,
	       "entry 2 does not exist");
	fmt_cde40_entry(b, len, FMT_KEY_LARGE, 0, &e[0]);
	is_int(fmt_cde40_encode(e, 2, FMT_KEY_LARGE, re, sizeof(re)), 0,
	       "root cde40 encodes");
	is_mem(re, b, len, "root cde40 round trip");
	is_int(2 * fmt_cde40_entry_bytes(FMT_KEY_LARGE, 1), 100,
	       "2 short entries account 100 bytes (= root SD bytes)");
}

static void test_mkfs(void)
{
	uint8_t blk[FIXTURE_BLKSIZE];
	char path[64];
	size_t off, len;

	if (fixture_mkfs("", "64M", path) != 0) {
		tap_skip(1, "mkfs.reiser4 not available");
		return;
	}
	if (fixture_block(path, 24, blk) != 0) {
		ok(0, "read block 24");
		unlink(path);
		return;
	}
	unlink(path);
	fmt_node_item_body(blk, sizeof(blk), FMT_KEY_LARGE, 0, &off, &len);
	test_root_sd(blk + off, len);
	fmt_node_item_body(blk, sizeof(blk), FMT_KEY_LARGE, 1, &off, &len);
	test_root_cde(blk + off, len);
}

static void test_progs_sd(void)
{
	struct fmt_stat st;

	fmt_stat_decode(v_sym_sd, sizeof(v_sym_sd), &st);
	is_u64(st.mask, 0x0b, "symlink SD mask 0x0b");
	is_int(st.mode, 0120644, "symlink mode");
	is_u64(st.size, 11, "symlink lw size = strlen(target)");
	ok(st.symlink_len == 11 && memcmp(st.symlink, "target/path", 11) == 0,
	   "symlink target");
	is_u64(st.atime, 0x6b111543, "symlink atime");
	ok(fmt_stat_verify(&st) == NULL, "symlink SD consistent");
	stat_round_trip(v_sym_sd, sizeof(v_sym_sd), "symlink SD");

	fmt_stat_decode(v_chr_sd, sizeof(v_chr_sd), &st);
	ok(st.mask == 3 && st.mode == 020644 && st.nlink == 1,
	   "chr SD: mask 3, mode 020644, nlink 1");
	is_u64(st.rdev_or_bytes, 0x401, "chr SD rdev (4<<8)|1 as given");
	stat_round_trip(v_chr_sd, sizeof(v_chr_sd), "chr SD");

	fmt_stat_decode(v_fifo_sd, sizeof(v_fifo_sd), &st);
	ok(st.mask == 3 && st.mode == 010644 && st.size == 0 &&
	   st.rdev_or_bytes == 0, "fifo SD: mode 010644, size 0, bytes 0");
	stat_round_trip(v_fifo_sd, sizeof(v_fifo_sd), "fifo SD");

	fmt_stat_decode(v_ccreg_sd, sizeof(v_ccreg_sd), &st);
	ok(st.mask == 0x13 && st.pset.count == 1 &&
	   st.pset.member[0] == FMT_PSET_FILE &&
	   st.pset.id[0] == FMT_OBJ_CCREG40, "ccreg40 SD: pset file = 4");
	stat_round_trip(v_ccreg_sd, sizeof(v_ccreg_sd), "ccreg40 SD");
}

static void test_progs_cde(void)
{
	const uint8_t *b = v_cde_d;
	size_t len = sizeof(v_cde_d);
	struct fmt_cde40_entry e[3];
	struct fmt_key ik = { { 0x10001ULL << 4, 0, 0, 0 } }, k;
	uint8_t re[256];
	size_t size = 0, bytes = 0;

	is_int(fmt_cde40_units(b, len, FMT_KEY_LARGE), 3, "/d cde40: 3 units");
	for (unsigned i = 0; i < 3; i++) {
		is_int(fmt_cde40_entry(b, len, FMT_KEY_LARGE, i, &e[i]), 0,
		       "/d entry %u decodes", i);
		bytes += fmt_cde40_entry_bytes(FMT_KEY_LARGE,
					       i < 2 ? i + 1 : 38);
	}
	ok(e[0].target.el[0] == (0x2aULL << 4 | 1) &&
	   e[0].target.el[1] == 0x64000000000000ULL &&
	   e[0].target.el[2] == 0x10001, "\".\" names /d (ordering \"d\")");
	ok(e[1].target.el[0] == (0x29ULL << 4 | 1) &&
	   e[1].target.el[2] == 0x2a, "\"..\" names the root");
	ok(fmt_cde40_entry_is_long(&e[2], FMT_KEY_LARGE), "long-name bit set");
	ok(e[2].ordering == 0x01615f766572795fULL &&
	   e[2].objectid == 0x6c6f6e675f66696cULL &&
	   e[2].offset == 0x05d4e3fac56451c6ULL, "long entry hash (section 2.8)");
	ok(e[2].name_len == 38 && memcmp(e[2].name, long_name, 38) == 0,
	   "long name stored in the body");
	ok(e[2].target.el[0] == (0x10001ULL << 4 | 1) &&
	   e[2].target.el[1] == e[2].ordering && e[2].target.el[2] == 0x10002,
	   "long entry target: locality /d, ordering, oid 0x10002");
	is_int(e[2].body_offset, 128, "long entry body at 128");
	fmt_cde40_entry_key(&ik, &e[2], &k);
	ok(k.el[0] == ik.el[0] && k.el[1] == e[2].ordering &&
	   k.el[3] == e[2].offset, "entry key from item key + hash");
	ok(fmt_cde40_verify(b, len, FMT_KEY_LARGE, NULL) == NULL,
	   "/d cde40 verifies");
	is_int(fmt_cde40_size(e, 3, FMT_KEY_LARGE, &size), 0, "/d size");
	is_int(size, len, "/d size 191");
	is_int(fmt_cde40_encode(e, 3, FMT_KEY_LARGE, re, sizeof(re)), 0,
	       "/d encodes");
	is_mem(re, b, len, "/d cde40 round trip");
	is_int(bytes, 50 + 50 + 89, "/d bytes: 50 + 50 + 26 + 24 + 39");
	is_int(fmt_cde40_encode(e, 3, FMT_KEY_LARGE, re, len - 1), R4_EINVAL,
	       "encode into a short buffer refused");
}

static void test_progs_bodies(void)
{
	struct fmt_extent40_unit u;
	uint8_t re[16];
	uint64_t v = 0;

	is_int(fmt_extent40_units(v_extent, 16), 1, "extent: 1 unit");
	is_int(fmt_extent40_unit(v_extent, 16, 0, &u), 0, "extent unit 0");
	ok(u.start == 1 && u.width == 5, "extent: start 1, width 5");
	is_int(fmt_extent40_kind(&u), FMT_EXTENT_UNALLOCATED,
	       "libreiser4 writes unallocated extents");
	is_int(fmt_extent40_span(v_extent, 16, 4096, &v), 0, "extent span");
	is_u64(v, 20480, "extent covers 5 blocks = 20480 bytes");
	ok(fmt_extent40_verify(v_extent, 16, 16384, 4096, NULL) == NULL,
	   "extent verifies");
	fmt_extent40_unit_encode(&u, re);
	is_mem(re, v_extent, 16, "extent unit round trip");
	is_int(fmt_extent40_unit(v_extent, 16, 1, &u), R4_ERANGE,
	       "extent unit 1 does not exist");

	is_int(fmt_tail40_end(0, sizeof(v_tail), &v), 0, "tail end");
	is_u64(v, 12, "tail of \"small\" ends at 12");
	ok(memcmp(v_tail, "hello world\n", 12) == 0, "tail holds raw bytes");
	is_int(fmt_tail40_end(UINT64_MAX - 3, 4, &v), R4_ERANGE,
	       "tail end overflow");
	is_int(fmt_tail40_end(5, 0, &v), R4_ECORRUPT, "empty tail");
}

/* A stat data with every extension, encoded, checked against a byte
 * layout written out by hand from section 5.2, and decoded back. */
static void test_all_extensions(void)
{
	static const uint8_t fp[4] = { 0xde, 0xad, 0xbe, 0xef };
	static const uint8_t want_tail[] = {
		/* lt */ 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0,
		/* symlink */ 'a', '/', 'b', 0,
		/* pset */ 2, 0, 0, 0, 4, 0, 4, 0, 3, 0,
		/* flags */ 0x08, 0, 0, 0x80,
		/* caps */ 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
		/* crypto */ 0x00, 0x01, 0xde, 0xad, 0xbe, 0xef,
		/* hset */ 1, 0, 13, 0, 4, 0,
	};
	struct fmt_stat st, back;
	uint8_t buf[256];
	size_t size;

	memset(&st, 0, sizeof(st));
	st.mask = 0x1ff;
	st.mode = 0120777; st.nlink = 1; st.size = 3;
	st.uid = 1000; st.gid = 100; st.atime = 10; st.mtime = 11;
	st.ctime = 12; st.rdev_or_bytes = 0;
	st.atime_ns = 1; st.mtime_ns = 2; st.ctime_ns = 3;
	st.symlink = (const uint8_t *)"a/b"; st.symlink_len = 3;
	st.pset.count = 2;
	st.pset.member[0] = FMT_PSET_FILE; st.pset.id[0] = 4;
	st.pset.member[1] = FMT_PSET_HASH; st.pset.id[1] = 3;
	st.flags = 0x80000008u;
	st.cap_effective = 0x44332211u; st.cap_permitted = 0x88776655u;
	st.crypto_keysize = 256; st.crypto_keyid = fp; st.crypto_keyid_len = 4;
	st.hset.count = 1;
	st.hset.member[0] = FMT_PSET_CREATE; st.hset.id[0] = 4;
	is_int(fmt_stat_size(&st, &size), 0, "all extensions: size");
	is_int(size, 2 + 14 + 28 + sizeof(want_tail), "all extensions: %zu",
	       size);
	is_int(fmt_stat_encode(&st, buf, sizeof(buf)), 0, "all: encodes");
	ok(get_le16(buf) == 0x1ff && get_le16(buf + 2) == 0120777 &&
	   get_le32(buf + 16) == 1000 && get_le32(buf + 32) == 12,
	   "all: mask, lw, unix at 2 and 16");
	is_mem(buf + 44, want_tail, sizeof(want_tail),
	       "all: extensions 2..8 laid out as in section 5.2");
	is_int(fmt_stat_decode(buf, size, &back), 0, "all: decodes");
	ok(back.mask == st.mask && back.atime_ns == 1 && back.ctime_ns == 3 &&
	   back.symlink_len == 3 && memcmp(back.symlink, "a/b", 3) == 0 &&
	   back.pset.count == 2 && back.pset.id[1] == 3 &&
	   back.flags == st.flags && back.cap_permitted == st.cap_permitted &&
	   back.crypto_keysize == 256 && back.crypto_keyid_len == 4 &&
	   memcmp(back.crypto_keyid, fp, 4) == 0 && back.hset.count == 1 &&
	   back.hset.member[0] == 13, "all: every field comes back");
	is_int(fmt_stat_decode_fp(buf, size, 8, &back), R4_ECORRUPT,
	       "all: an 8-byte fingerprint would overrun the item");
	is_int(fmt_stat_encode(&st, buf, size - 1), R4_EINVAL,
	       "all: short buffer refused");
	st.size = 4;
	is_str(fmt_stat_verify(&st), "stat40 symlink target length != lw size",
	       "symlink length must equal lw size");
	st.mask &= ~1ULL;
	ok(fmt_stat_verify(&st) != NULL, "symlink without lw is inconsistent");
}

static void test_stat_masks(void)
{
	/* lw, chain bit; then a second word with only the chain bit, then
	 * an empty third word. */
	uint8_t c3[2 + 14 + 2 + 2] = { 0x01, 0x80 };
	uint8_t bad[32] = { 0 };
	struct fmt_stat st;

	put_le16(c3 + 2, 0100644);
	put_le16(c3 + 16, 0x8000);
	put_le16(c3 + 18, 0x0000);
	is_int(fmt_stat_decode(c3, sizeof(c3), &st), 0, "chained mask decodes");
	is_u64(st.mask, 0x0000000080008001ULL, "chained logical mask");
	is_int(st.mode, 0100644, "lw read before the next mask word");
	stat_round_trip(c3, sizeof(c3), "chained mask");
	put_le16(c3 + 18, 0x0001);
	is_int(fmt_stat_decode(c3, sizeof(c3), &st), R4_EUNSUPP,
	       "extension 32 is unknown");
	put_le16(c3 + 18, 0x8000);
	is_int(fmt_stat_decode(c3, sizeof(c3), &st), R4_ECORRUPT,
	       "chain runs off the end");

	put_le16(bad, 0x8000); put_le16(bad + 2, 0x8000);
	put_le16(bad + 4, 0x8000); put_le16(bad + 6, 0x8000);
	is_int(fmt_stat_decode(bad, 8, &st), R4_ECORRUPT,
	       "a 4th chained word with bit 15 is refused");
	put_le16(bad, 0x0200);
	is_int(fmt_stat_decode(bad, 2, &st), R4_EUNSUPP, "extension 9 unknown");
	put_le16(bad, 0x4000);
	is_int(fmt_stat_decode(bad, 2, &st), R4_EUNSUPP, "extension 14 unknown");
	put_le16(bad, 0);
	is_int(fmt_stat_decode(bad, 2, &st), 0, "empty mask decodes");
	is_int(fmt_stat_decode(bad, 3, &st), R4_ECORRUPT, "trailing byte");
	is_int(fmt_stat_decode(bad, 1, &st), R4_ECORRUPT, "1-byte body");
	put_le16(bad, 0x0008);
	memset(bad + 2, 'x', 10);
	is_int(fmt_stat_decode(bad, 12, &st), R4_ECORRUPT, "symlink without NUL");
	put_le16(bad, 0x0010);
	put_le16(bad + 2, 2);
	put_le16(bad + 4, 5); put_le16(bad + 8, 4);
	is_int(fmt_stat_decode(bad, 2 + 2 + 8, &st), R4_ECORRUPT,
	       "pset members not ascending");
	put_le16(bad + 4, 3); put_le16(bad + 8, 14);
	is_int(fmt_stat_decode(bad, 2 + 2 + 8, &st), R4_ECORRUPT,
	       "pset member 14 does not exist");
	put_le16(bad + 8, 4);
	is_int(fmt_stat_decode(bad, 2 + 2 + 8, &st), 0, "pset members 3, 4 ok");
	put_le16(bad + 2, 15);
	is_int(fmt_stat_decode(bad, 32, &st), R4_ECORRUPT, "pset count 15");
}

static void test_stat_encode_errors(void)
{
	struct fmt_stat st;
	size_t size;

	memset(&st, 0, sizeof(st));
	st.mask = 0x200;
	is_int(fmt_stat_size(&st, &size), R4_EUNSUPP, "encode: bit 9 unknown");
	st.mask = 0x10001;
	is_int(fmt_stat_size(&st, &size), R4_EINVAL,
	       "encode: word 1 bits without the chain bit");
	st.mask = 0x800080008000ULL | (0x8000ULL << 48);
	is_int(fmt_stat_size(&st, &size), R4_EINVAL, "encode: 5 mask words");
	st.mask = 0x10;
	st.pset.count = 2;
	st.pset.member[0] = 4; st.pset.member[1] = 4;
	is_int(fmt_stat_size(&st, &size), R4_EINVAL, "encode: duplicate member");
	st.mask = 0x08;
	st.symlink = (const uint8_t *)"a\0b"; st.symlink_len = 3;
	is_int(fmt_stat_size(&st, &size), R4_EINVAL, "encode: NUL in target");
}

static void test_cde_handmade(void)
{
	struct fmt_cde40_entry e[3], d;
	uint8_t buf[256];
	size_t size;

	/* Short keys: hash = (objectid, offset), obj key id = 2 words. */
	memset(e, 0, sizeof(e));
	e[0].objectid = 0x0061000000000000ULL;		/* "a" */
	e[0].target.el[0] = 0x2a1; e[0].target.el[2] = 0x10000;
	e[1].objectid = 0x0062000000000000ULL | FMT_KEY_LONGNAME_BIT;
	e[1].offset = 0x1234;
	e[1].name = (const uint8_t *)"bcdefghijklmnopqr"; e[1].name_len = 17;
	e[1].target.el[0] = 0x2a1; e[1].target.el[2] = 0x10001;
	is_int(fmt_cde40_size(e, 2, FMT_KEY_SHORT, &size), 0, "short: size");
	is_int(size, 2 + 2 * 18 + 16 + 16 + 18, "short: 2 + 36 + 16 + 34");
	is_int(fmt_cde40_entry_bytes(FMT_KEY_SHORT, 17), 18 + 16 + 18,
	       "short: long entry bytes");
	is_int(fmt_cde40_encode(e, 2, FMT_KEY_SHORT, buf, sizeof(buf)), 0,
	       "short: encodes");
	ok(get_le16(buf) == 2 && get_le64(buf + 2) == e[0].objectid &&
	   get_le16(buf + 2 + 16) == 38 && get_le16(buf + 20 + 16) == 54 &&
	   get_le64(buf + 38) == 0x2a1 && get_le64(buf + 46) == 0x10000,
	   "short: layout (18-byte headers, 16-byte obj key ids)");
	ok(fmt_cde40_verify(buf, size, FMT_KEY_SHORT, NULL) == NULL,
	   "short: verifies");
	is_int(fmt_cde40_entry(buf, size, FMT_KEY_SHORT, 1, &d), 0,
	       "short: entry 1 decodes");
	ok(d.name_len == 17 && memcmp(d.name, e[1].name, 17) == 0 &&
	   d.target.el[2] == 0x10001 && d.ordering == 0 && d.offset == 0x1234,
	   "short: entry 1 fields");
	memset(e, 0, sizeof(e));
	e[0].ordering = FMT_KEY_LONGNAME_BIT;
	is_int(fmt_cde40_size(e, 1, FMT_KEY_LARGE, &size), R4_EINVAL,
	       "long entry without a name refused");
	is_int(fmt_cde40_size(e, 0, FMT_KEY_LARGE, &size), R4_EINVAL,
	       "empty item refused");
}

/* Corruptions of the /d item. */
static void test_cde_corrupt(void)
{
	struct fmt_cde40_entry d;
	uint8_t b2[sizeof(v_cde_d)];
	const char *why;
	int bad;

	memcpy(b2, v_cde_d, sizeof(v_cde_d));
	put_le16(b2, 0);
	is_str(fmt_cde40_verify(b2, 191, FMT_KEY_LARGE, NULL),
	       "cde40 item has no units", "no units");
	memcpy(b2, v_cde_d, sizeof(v_cde_d));
	b2[26] = 0x51;
	why = fmt_cde40_verify(b2, 191, FMT_KEY_LARGE, &bad);
	ok(why && bad == 0, "entry 0 body moved: %s", why ? why : "-");
	memcpy(b2, v_cde_d, sizeof(v_cde_d));
	b2[190] = 'x';
	is_int(fmt_cde40_entry(b2, 191, FMT_KEY_LARGE, 2, &d), R4_ECORRUPT,
	       "long name without NUL");
	memcpy(b2, v_cde_d, sizeof(v_cde_d));
	b2[2 + 26 * 2 + 7] = 0x00;	/* long entry ordering top byte 0 */
	why = fmt_cde40_verify(b2, 191, FMT_KEY_LARGE, &bad);
	ok(why != NULL, "long-name bit cleared: %s", why ? why : "-");
	memcpy(b2, v_cde_d, sizeof(v_cde_d));
	b2[2 + 26 + 7] = 0x02;		/* ".." ordering above the long one */
	is_str(fmt_cde40_verify(b2, 191, FMT_KEY_LARGE, &bad),
	       "cde40 entries are not sorted", "unsorted entries");
	is_int(bad, 2, "unsorted: unit 2 reported");
	is_str(fmt_cde40_verify(v_cde_d, 190, FMT_KEY_LARGE, NULL),
	       "cde40 entry body or name is out of the item", "item cut by 1");
	is_str(fmt_cde40_verify(v_cde_d, 60, FMT_KEY_LARGE, NULL),
	       "cde40 unit headers do not fit in the item", "headers cut");
}

static void test_extent_units(void)
{
	struct fmt_extent40_unit u = { UINT64_MAX - 1, 5 };
	uint8_t ext[32];
	uint64_t v;
	int bad;

	is_int(fmt_extent40_unit_end(&u, &v), R4_ERANGE, "extent end overflow");
	u.start = 100;
	is_int(fmt_extent40_unit_end(&u, &v), 0, "extent end");
	is_u64(v, 105, "extent 100+5");
	u.start = 0;
	is_int(fmt_extent40_unit_end(&u, &v), R4_EINVAL, "hole has no end");
	is_int(fmt_extent40_kind(&u), FMT_EXTENT_HOLE, "start 0 is a hole");
	u = (struct fmt_extent40_unit){ 2, 3 };
	is_int(fmt_extent40_kind(&u), FMT_EXTENT_ALLOCATED, "start 2 allocated");
	fmt_extent40_unit_encode(&u, ext);
	u = (struct fmt_extent40_unit){ 16380, 5 };
	is_int(fmt_extent40_unit_put(ext, 32, 1, &u), 0, "extent unit put");
	is_int(fmt_extent40_unit_put(ext, 32, 2, &u), R4_ERANGE, "put past end");
	ok(fmt_extent40_verify(ext, 32, 16385, 4096, NULL) == NULL,
	   "extent inside the volume");
	is_str(fmt_extent40_verify(ext, 32, 16384, 4096, &bad),
	       "extent40 unit points past the end of the volume", "past end");
	is_int(bad, 1, "past end: unit 1");
	put_le64(ext + 24, 0);
	is_str(fmt_extent40_verify(ext, 32, 1u << 20, 4096, NULL),
	       "extent40 unit width is 0", "width 0");
	put_le64(ext + 16, 0);
	put_le64(ext + 24, UINT64_MAX / 2);
	is_int(fmt_extent40_span(ext, 32, 4096, &v), R4_ERANGE, "span overflow");
	is_int(fmt_extent40_units(ext, 15), R4_ECORRUPT, "extent len 15");
	is_int(fmt_extent40_units(ext, 0), R4_ECORRUPT, "extent len 0");
}

static void test_nodeptr_ctail(void)
{
	struct fmt_ctail40 ct;
	uint8_t buf[32];
	uint64_t v;

	put_le64(buf, 24);
	is_int(fmt_nodeptr40_decode(buf, 8, &v), 0, "nodeptr decodes");
	is_u64(v, 24, "nodeptr child");
	fmt_nodeptr40_encode(0x1122334455667788ULL, buf + 8);
	ok(buf[8] == 0x88 && buf[15] == 0x11, "nodeptr LE");
	is_int(fmt_nodeptr40_decode(buf, 7, &v), R4_ECORRUPT, "nodeptr len 7");
	is_int(fmt_nodeptr40_decode(buf, 9, &v), R4_ECORRUPT, "nodeptr len 9");

	buf[0] = 16; memcpy(buf + 1, "cluster", 7);
	is_int(fmt_ctail40_decode(buf, 8, &ct), 0, "ctail decodes");
	ok(ct.shift == 16 && ct.len == 7 && ct.data == buf + 1, "ctail fields");
	is_int(fmt_ctail40_size(&ct), 8, "ctail size");
	is_int(fmt_ctail40_encode(&ct, buf + 16, 8), 0, "ctail encodes");
	is_mem(buf + 16, buf, 8, "ctail round trip");
	is_int(fmt_ctail40_encode(&ct, buf + 16, 7), R4_EINVAL, "ctail short");
	buf[0] = 0xff;
	is_int(fmt_ctail40_decode(buf, 2, &ct), 0, "unprepped ctail, 1 unit");
	is_int(fmt_ctail40_decode(buf, 3, &ct), R4_ECORRUPT, "unprepped 2 units");
	buf[0] = 11;
	is_int(fmt_ctail40_decode(buf, 3, &ct), R4_ECORRUPT, "shift 11");
	buf[0] = 12;
	is_int(fmt_ctail40_decode(buf, 1, &ct), R4_ECORRUPT, "ctail, no unit");
}

static void test_bbox(void)
{
	struct fmt_bbox40 bb, bb2;
	uint8_t buf[48];

	fmt_bbox40_key(&bb.sdkey, 0x10007, FMT_SAFELINK_TRUNCATE);
	ok(bb.sdkey.el[0] == 0x2b0 && bb.sdkey.el[1] == 0 &&
	   bb.sdkey.el[2] == 0x10007 && bb.sdkey.el[3] == 1,
	   "safe-link key (0x2b<<4, 0, oid, 1)");
	bb.sdkey = (struct fmt_key){ { 0x2a1, 0x736d616c6c0000ULL, 0x10007, 0 } };
	bb.has_size = 1;
	bb.size = 4096;
	is_int(fmt_bbox40_size(&bb, FMT_KEY_LARGE), 40, "truncate link 40 bytes");
	is_int(fmt_bbox40_encode(&bb, FMT_KEY_LARGE, buf, 40), 0, "bbox encodes");
	is_mem(buf, v_bbox, 40, "bbox: SD key then size");
	is_int(fmt_bbox40_decode(buf, 40, FMT_KEY_LARGE, &bb2), 0, "bbox decodes");
	ok(bb2.has_size && bb2.size == 4096 && bb2.sdkey.el[1] == bb.sdkey.el[1],
	   "bbox round trip");
	is_int(fmt_bbox40_decode(buf, 32, FMT_KEY_LARGE, &bb2), 0,
	       "unlink link: key only");
	ok(!bb2.has_size && bb2.size == 0, "unlink link has no size");
	is_int(fmt_bbox40_decode(buf, 33, FMT_KEY_LARGE, &bb2), R4_ECORRUPT,
	       "bbox len 33");
	is_int(fmt_bbox40_decode(buf, 24, FMT_KEY_SHORT, &bb2), 0,
	       "short-key unlink link is 24 bytes");
	is_int(fmt_bbox40_encode(&bb, FMT_KEY_LARGE, buf, 39), R4_EINVAL,
	       "bbox short buffer");
}

/* Run every decoder on buf[0..len) (an exact-size heap copy). Returns a
 * bit per decoder that accepted the bytes; checks that accepted stat
 * and verified cde40 bodies encode back to the same bytes. */
static unsigned run_all(const uint8_t *src, size_t len, int *sound)
{
	uint8_t *b = malloc(len ? len : 1), re[1024];
	struct fmt_stat st;
	struct fmt_cde40_entry e[64];
	struct fmt_extent40_unit u;
	struct fmt_ctail40 ct;
	struct fmt_bbox40 bb;
	unsigned acc = 0;
	uint64_t v;
	int n;

	memcpy(b, src, len);
	if (fmt_stat_decode(b, len, &st) == 0) {
		acc |= 1;
		if (len > sizeof(re) || fmt_stat_encode(&st, re, len) ||
		    memcmp(re, b, len))
			*sound = 0;
	}
	for (int pol = 0; pol < 2; pol++) {
		n = fmt_cde40_units(b, len, (enum fmt_key_policy)pol);
		for (int i = 0; i <= n && i < 70; i++)
			fmt_cde40_entry(b, len, (enum fmt_key_policy)pol,
					(unsigned)i, &e[i % 64]);
		if (fmt_cde40_verify(b, len, (enum fmt_key_policy)pol, NULL))
			continue;
		acc |= 2;
		for (int i = 0; i < n && i < 64; i++)
			if (fmt_cde40_entry(b, len, (enum fmt_key_policy)pol,
					    (unsigned)i, &e[i]))
				*sound = 0;
		if (n <= 64 && (fmt_cde40_encode(e, (size_t)n,
			(enum fmt_key_policy)pol, re, sizeof(re)) ||
			memcmp(re, b, len)))
			*sound = 0;
	}
	n = fmt_extent40_units(b, len);
	for (int i = 0; i <= n && i < 70; i++)
		if (fmt_extent40_unit(b, len, (unsigned)i, &u) == 0)
			acc |= 4;
	fmt_extent40_span(b, len, 4096, &v);
	fmt_extent40_verify(b, len, 16384, 4096, NULL);
	if (fmt_nodeptr40_decode(b, len, &v) == 0)
		acc |= 8;
	if (fmt_ctail40_decode(b, len, &ct) == 0) {
		acc |= 16;
		if (ct.data + ct.len != b + len)
			*sound = 0;
	}
	if (fmt_bbox40_decode(b, len, FMT_KEY_LARGE, &bb) == 0)
		acc |= 32;
	fmt_bbox40_decode(b, len, FMT_KEY_SHORT, &bb);
	free(b);
	return acc;
}

static void test_hostile(void)
{
	/* ok_len: one shorter length that is valid too (an unlink safe
	 * link), 999 for none; ok_from: truncations from that length on
	 * are valid (ctail units), 999 for none. */
	static const struct {
		const uint8_t *b;
		size_t len, ok_len, ok_from;
		unsigned bit;
	} v[] = {
		{ v_sym_sd, sizeof(v_sym_sd), 999, 999, 1 },
		{ v_chr_sd, sizeof(v_chr_sd), 999, 999, 1 },
		{ v_ccreg_sd, sizeof(v_ccreg_sd), 999, 999, 1 },
		{ v_cde_d, sizeof(v_cde_d), 999, 999, 2 },
		{ v_extent, sizeof(v_extent), 999, 999, 4 },
		{ v_nodeptr, sizeof(v_nodeptr), 999, 999, 8 },
		{ v_ctail, sizeof(v_ctail), 999, 2, 16 },
		{ v_bbox, sizeof(v_bbox), 32, 999, 32 },
	};
	const size_t nv = sizeof(v) / sizeof(v[0]);
	uint8_t buf[300];
	int sound = 1, truncs_ok = 1, accepted = 0;
	unsigned acc;

	for (size_t i = 0; i < nv; i++) {
		if (!(run_all(v[i].b, v[i].len, &sound) & v[i].bit))
			ok(0, "vector %zu accepted whole", i);
		for (size_t n = 0; n < v[i].len; n++) {
			acc = run_all(v[i].b, n, &sound) & v[i].bit;
			if (!acc != !(n == v[i].ok_len || n >= v[i].ok_from)) {
				truncs_ok = 0;
				printf("# vector %zu, length %zu\n", i, n);
			}
		}
	}
	ok(truncs_ok, "every truncation of a valid body is refused "
	   "(except valid shorter forms)");
	for (int it = 0; it < 6000; it++) {
		size_t i = rnd() % nv, len;

		if (it % 3 == 0) {
			len = rnd() % sizeof(buf);
			for (size_t k = 0; k < len; k++)
				buf[k] = (uint8_t)rnd();
		} else {
			len = v[i].len;
			memcpy(buf, v[i].b, len);
			for (unsigned k = 1 + rnd() % 3; k; k--)
				buf[rnd() % len] = (uint8_t)rnd();
			if (rnd() % 4 == 0)
				len = rnd() % (len + 1);
		}
		if (run_all(buf, len, &sound) & 3)
			accepted++;
	}
	ok(sound, "random bodies: every accepted stat40 / verified cde40 "
	   "re-encodes to the same bytes (%d accepted)", accepted);
}

int main(void)
{
	test_mkfs();
	test_progs_sd();
	test_progs_cde();
	test_progs_bodies();
	test_all_extensions();
	test_stat_masks();
	test_stat_encode_errors();
	test_cde_handmade();
	test_cde_corrupt();
	test_extent_units();
	test_nodeptr_ctail();
	test_bbox();
	test_hostile();
	return tap_done();
}
