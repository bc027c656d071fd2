/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: unit tests of keys and fibrations (doc/format.md §2, §2.7).
 * Reference bytes: the entry-key table of section 2.8 (read off real
 * cde40 items), the root stat-data and entry keys of a volume made by
 * mkfs.reiser4 here, and short-key vectors computed by libreiser4 1.2.2's
 * key_short plugin (mkfs.reiser4 -o key=key_short crashes, so no short
 * volume can be made). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* mkstemp, fseeko in fixture.h */
#endif
#include <string.h>

#include "tap.h"
#include "fixture.h"
#include "format/endian.h"
#include "format/errors.h"
#include "format/fibre.h"
#include "format/hash.h"
#include "format/key.h"
#include "format/plugin.h"

static void is_key(const struct fmt_key *got, uint64_t e0, uint64_t e1,
		   uint64_t e2, uint64_t e3, const char *what)
{
	is_u64(got->el[0], e0, "%s: el[0]", what);
	is_u64(got->el[1], e1, "%s: el[1]", what);
	is_u64(got->el[2], e2, "%s: el[2]", what);
	is_u64(got->el[3], e3, "%s: el[3]", what);
}

static void test_codec(void)
{
	static const uint8_t root_sd[32] = {
		0x91, 0x02, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0,
		0x2a, 0, 0, 0, 0, 0, 0, 0,     0, 0, 0, 0, 0, 0, 0, 0 };
	struct fmt_key k, back;
	uint8_t buf[40];

	is_int(fmt_key_size(FMT_KEY_LARGE), 32, "large key size");
	is_int(fmt_key_size(FMT_KEY_SHORT), 24, "short key size");

	fmt_key_sd(&k, FMT_ROOT_LOCALITY, 0, FMT_ROOT_OID);
	memset(buf, 0xee, sizeof(buf));
	fmt_key_encode(&k, FMT_KEY_LARGE, buf);
	is_mem(buf, root_sd, 32, "root SD key bytes (section 2.5)");
	is_int(buf[32], 0xee, "large encode writes 32 bytes only");

	/* Distinct bytes everywhere: every byte lands in its place. */
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)(0x11 * (i % 15) + i);
	fmt_key_decode(buf, FMT_KEY_LARGE, &k);
	is_u64(k.el[0], get_le64(buf), "large el[0] at 0");
	is_u64(k.el[1], get_le64(buf + 8), "large el[1] at 8");
	is_u64(k.el[2], get_le64(buf + 16), "large el[2] at 16");
	is_u64(k.el[3], get_le64(buf + 24), "large el[3] at 24");
	{
		uint8_t out[32];

		fmt_key_encode(&k, FMT_KEY_LARGE, out);
		is_mem(out, buf, 32, "large round trip bytes");
	}
	fmt_key_decode(buf, FMT_KEY_SHORT, &back);
	is_u64(back.el[0], get_le64(buf), "short el[0] at 0");
	is_u64(back.el[1], 0, "short: el[1] is 0 in memory");
	is_u64(back.el[2], get_le64(buf + 8), "short objectid at 8");
	is_u64(back.el[3], get_le64(buf + 16), "short offset at 16");
	{
		uint8_t out[32];

		memset(out, 0xee, sizeof(out));
		fmt_key_encode(&back, FMT_KEY_SHORT, out);
		is_mem(out, buf, 24, "short round trip bytes");
		is_int(out[24], 0xee, "short encode writes 24 bytes only");
		/* The short encoder drops the ordering. */
		back.el[1] = 0x123456789ULL;
		fmt_key_encode(&back, FMT_KEY_SHORT, out);
		is_mem(out, buf, 24, "short encode ignores el[1]");
	}
}

static void test_builders(void)
{
	struct fmt_key k;
	char s[72];

	/* /d/x.o of section 2.5. */
	fmt_key_sd(&k, 0x10000, 0xde782e6f00000000ULL, 0x10007);
	is_key(&k, 0x100001, 0xde782e6f00000000ULL, 0x10007, 0, "SD key");
	is_u64(fmt_key_locality(&k), 0x10000, "locality");
	is_int(fmt_key_type(&k), FMT_KEY_SD, "type SD");
	is_u64(fmt_key_ordering(&k), 0xde782e6f00000000ULL, "ordering");
	is_u64(fmt_key_objectid(&k), 0x10007, "objectid");
	fmt_key_body(&k, 0x2a, 0, 0x10003, 8192);
	is_key(&k, 0x2a4, 0, 0x10003, 8192, "body key");
	is_int(fmt_key_type(&k), FMT_KEY_BODY, "type BODY");
	is_u64(fmt_key_offset(&k), 8192, "offset");
	k.el[2] = 0xf000000000000123ULL;
	is_u64(fmt_key_objectid(&k), 0x123, "objectid drops the band");

	fmt_key_min(&k);
	is_key(&k, 0, 0, 0, 0, "min key");
	fmt_key_max(&k);
	is_key(&k, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, "max key");

	fmt_key_sd(&k, FMT_ROOT_LOCALITY, 0, FMT_ROOT_OID);
	fmt_key_str(&k, s, sizeof(s));
	is_str(s, "29:1:0:2a:0", "key string: locality:type:ordering:"
	       "objectid:offset");
	fmt_key_max(&k);
	fmt_key_str(&k, s, sizeof(s));
	is_str(s, "fffffffffffffff:f:ffffffffffffffff:fffffffffffffff:"
	       "ffffffffffffffff", "max key string");
	ok(strlen(s) < FMT_KEY_STR_MAX, "longest key string fits");
	fmt_key_str(&k, s, 10);
	is_str(s, "fffffffff", "key string truncated, terminated");
}

/* Keys in strictly ascending order. */
static void test_cmp(void)
{
	static const uint64_t keys[][4] = {
		{ 0, 0, 0, 0 },
		{ 0, 0, 0, 1 },
		{ 0, 0, 0, UINT64_MAX },
		{ 0, 0, 1, 0 },
		{ 0, 0, 0x8000000000000000ULL, 0 },
		{ 0, 1, 0, 0 },
		{ 0, 0xde00000000000000ULL, 0, 0 },
		{ 0x2a0, 0, 0, 0 },			/* "." of root */
		{ 0x2a0, 0x002e2e0000000000ULL, 0, 0 },	/* ".." */
		{ 0x2a0, 0xc668656c6c6f2e63ULL, 0, 0 },	/* hello.c */
		{ 0x2a0, 0xde782e6f00000000ULL, 0, 0 },	/* x.o */
		{ 0x2a1, 0, 0x2a, 0 },			/* SD of 0x2a */
		{ 0x2a4, 0, 0x2a, 0 },			/* body of 0x2a */
		{ 0x2a4, 0, 0x2a, 4096 },
		{ 0x2b0, 0, 0, 0 },
		{ UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX },
	};
	size_t n = sizeof(keys) / sizeof(keys[0]);
	int good = 1;

	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++) {
			struct fmt_key a, b;
			int want = i < j ? -1 : i > j;

			memcpy(a.el, keys[i], sizeof(a.el));
			memcpy(b.el, keys[j], sizeof(b.el));
			if (fmt_key_cmp(&a, &b) != want) {
				good = 0;
				printf("# cmp(%zu, %zu) = %d, want %d\n", i, j,
				       fmt_key_cmp(&a, &b), want);
			}
		}
	ok(good, "fmt_key_cmp orders %zu keys (unsigned, el[0] first)", n);
}

static void test_fibre(void)
{
	is_int(fmt_fibre(FMT_FIBRE_LEXIC, "x.o", 3), 0, "lexic x.o");
	is_int(fmt_fibre(FMT_FIBRE_DOT_O, "x.o", 3), 1, "dot_o x.o");
	is_int(fmt_fibre(FMT_FIBRE_DOT_O, ".o", 2), 0, "dot_o .o (n = 2)");
	is_int(fmt_fibre(FMT_FIBRE_DOT_O, "x.c", 3), 0, "dot_o x.c");
	is_int(fmt_fibre(FMT_FIBRE_DOT_O, "xo", 2), 0, "dot_o xo");
	is_int(fmt_fibre(FMT_FIBRE_EXT_1, "x.o", 3), 0x6f, "ext_1 x.o");
	is_int(fmt_fibre(FMT_FIBRE_EXT_1, "hello.c", 7), 'c', "ext_1 hello.c");
	is_int(fmt_fibre(FMT_FIBRE_EXT_1, ".c", 2), 0, "ext_1 .c (n = 2)");
	is_int(fmt_fibre(FMT_FIBRE_EXT_1, "foo.tar", 7), 0, "ext_1 foo.tar");
	is_int(fmt_fibre(FMT_FIBRE_EXT_1, "a.\xff", 3), 0x7f,
	       "ext_1 keeps 7 bits");
	is_int(fmt_fibre(FMT_FIBRE_EXT_3, "foo.tar", 7),
	       ('t' + 'a' + 'r') & 0x7f, "ext_3 foo.tar");
	is_int(fmt_fibre(FMT_FIBRE_EXT_3, ".tar", 4), 0, "ext_3 .tar (n = 4)");
	is_int(fmt_fibre(FMT_FIBRE_EXT_3, "a.tar", 5), 0x47, "ext_3 a.tar");
	is_int(fmt_fibre(FMT_FIBRE_EXT_3, "hello.c", 7), 0, "ext_3 hello.c");
	is_int(fmt_fibre(FMT_FIBRE_EXT_3, "a.\xe9\xe9\xe9", 5),
	       (3 * 0xe9) & 0x7f, "ext_3 high bytes");
	is_int(fmt_fibre(4, "x.o", 3), R4_EUNSUPP, "fibre id 4 unknown");
}

/* Section 2.8: r5 hash, ext_1 fibration, directory 0x2a. */
static const struct {
	const char *name;
	uint64_t ord, oid, off;
} large_vecs[] = {
	{ ".", 0, 0, 0 },
	{ "..", 0x002e2e0000000000ULL, 0, 0 },
	{ "a", 0x0061000000000000ULL, 0, 0 },
	{ "x.o", 0xde782e6f00000000ULL, 0, 0 },
	{ "hello.c", 0xc668656c6c6f2e63ULL, 0, 0 },
	{ "hardlink", 0x00686172646c696eULL, 0x6b00000000000000ULL, 0 },
	{ "abcdefghijklmnopq", 0x0061626364656667ULL, 0x68696a6b6c6d6e6fULL,
	  0x7071000000000000ULL },
	{ "abcdefghijklmnopqrstuvw", 0x0061626364656667ULL,
	  0x68696a6b6c6d6e6fULL, 0x7071727374757677ULL },
	{ "abcdefghijklmnopqrstuvwx", 0x0161626364656667ULL,
	  0x68696a6b6c6d6e6fULL, 0x0000043f6322bc1dULL },
	{ "a_very_long_file_name_exceeding_inline", 0x01615f766572795fULL,
	  0x6c6f6e675f66696cULL, 0x05d4e3fac56451c6ULL },
};

/* libreiser4 key_short, r5, ext_1, directory 0x2a: el[0], objectid,
 * offset. */
static const struct {
	const char *name;
	uint64_t oid, off;
} short_vecs[] = {
	{ ".", 0, 0 },
	{ "..", 0x002e2e0000000000ULL, 0 },
	{ "a", 0x0061000000000000ULL, 0 },
	{ "x.o", 0xde782e6f00000000ULL, 0 },
	{ "hello.c", 0xc668656c6c6f2e63ULL, 0 },
	{ "hardlink", 0x00686172646c696eULL, 0x6b00000000000000ULL },
	{ "abcdefghijklmno", 0x0061626364656667ULL, 0x68696a6b6c6d6e6fULL },
	{ "abcdefghijklmnop", 0x0161626364656667ULL, 0x000003f17bda202dULL },
	{ "abcdefghijklmnopqrstuvwx", 0x0161626364656667ULL,
	  0x61f5180e415142fdULL },
	{ "foo.tar", 0x00666f6f2e746172ULL, 0 },
};

static void test_entry_vectors(void)
{
	struct fmt_key k;
	uint8_t buf[32], want[32];

	for (size_t i = 0; i < sizeof(large_vecs) / sizeof(large_vecs[0]);
	     i++) {
		const char *nm = large_vecs[i].name;

		is_int(fmt_key_entry(&k, FMT_KEY_LARGE, FMT_ROOT_OID, nm,
				     strlen(nm), FMT_HASH_R5, FMT_FIBRE_EXT_1),
		       0, "large entry key of %s", nm);
		is_key(&k, 0x2a0, large_vecs[i].ord, large_vecs[i].oid,
		       large_vecs[i].off, nm);
	}
	for (size_t i = 0; i < sizeof(short_vecs) / sizeof(short_vecs[0]);
	     i++) {
		const char *nm = short_vecs[i].name;

		is_int(fmt_key_entry(&k, FMT_KEY_SHORT, FMT_ROOT_OID, nm,
				     strlen(nm), FMT_HASH_R5, FMT_FIBRE_EXT_1),
		       0, "short entry key of %s", nm);
		is_key(&k, 0x2a0, 0, short_vecs[i].oid, short_vecs[i].off, nm);
		fmt_key_encode(&k, FMT_KEY_SHORT, buf);
		put_le64(want, 0x2a0);
		put_le64(want + 8, short_vecs[i].oid);
		put_le64(want + 16, short_vecs[i].off);
		is_mem(buf, want, 24, "short entry key bytes of %s", nm);
	}
	/* Hashed tails: bytes 15.. (large), 7.. (short). */
	fmt_key_entry(&k, FMT_KEY_LARGE, 0x2a, "abcdefghijklmnopqrstuvwx", 24,
		      FMT_HASH_TEA, FMT_FIBRE_LEXIC);
	is_u64(k.el[3], fmt_hash_tea("pqrstuvwx", 9), "large: tea of 15..");
	fmt_key_entry(&k, FMT_KEY_SHORT, 0x2a, "abcdefghijklmnopqrstuvwx", 24,
		      FMT_HASH_FNV1, FMT_FIBRE_LEXIC);
	is_u64(k.el[3], fmt_hash_fnv1("hijklmnopqrstuvwx", 17),
	       "short: fnv1 of 7..");
	fmt_key_entry(&k, FMT_KEY_LARGE, 0x2a, ".bashrc_and_some_more_chars", 27,
		      FMT_HASH_RUPASOV | FMT_HASH_KERNEL, FMT_FIBRE_LEXIC);
	is_u64(k.el[3], fmt_hash_rupasov_kernel("e_more_chars", 12),
	       "hash flavour selector passes through");
}

static void test_entry_rules(void)
{
	struct fmt_key k, k0;

	fmt_key_sd(&k, 1, 2, 3);
	k0 = k;
	is_int(fmt_key_entry(&k, FMT_KEY_LARGE, 0x2a, "a", 1, 5, 0),
	       R4_EUNSUPP, "unknown hash id");
	is_int(fmt_key_entry(&k, FMT_KEY_LARGE, 0x2a, "a", 1, 1, 4),
	       R4_EUNSUPP, "unknown fibre id");
	is_int(fmt_key_entry(&k, FMT_KEY_LARGE, 0x2a, "", 0, 1, 2),
	       R4_EINVAL, "empty name");
	ok(fmt_key_cmp(&k, &k0) == 0, "key untouched on error");

	/* Directory order: "." first, ".." is not special. */
	{
		struct fmt_key dot, dotdot;

		fmt_key_entry(&dot, FMT_KEY_LARGE, 0x10000, ".", 1, 1, 2);
		fmt_key_entry(&dotdot, FMT_KEY_LARGE, 0x10000, "..", 2, 1, 2);
		is_key(&dot, 0x100000, 0, 0, 0, "\".\" of 0x10000");
		is_int(fmt_key_cmp(&dot, &dotdot), -1, "\".\" < \"..\"");
		is_int(fmt_key_type(&dot), FMT_KEY_FILE_NAME, "entry type 0");
	}
	/* ext_1 moves x.o after hello.c and after yy (fibre 0). */
	{
		struct fmt_key xo, yy;

		fmt_key_entry(&xo, FMT_KEY_LARGE, 0x2a, "x.o", 3, 1, 2);
		fmt_key_entry(&yy, FMT_KEY_LARGE, 0x2a, "yy", 2, 1, 2);
		is_int(fmt_key_cmp(&yy, &xo), -1, "fibre sorts yy before x.o");
		fmt_key_entry(&xo, FMT_KEY_LARGE, 0x2a, "x.o", 3, 1, 0);
		is_int(fmt_key_cmp(&xo, &yy), -1, "lexic sorts x.o before yy");
	}
	is_int(fmt_entry_name_stored(FMT_KEY_LARGE, 23), 0, "23 fits (large)");
	is_int(fmt_entry_name_stored(FMT_KEY_LARGE, 24), 1, "24 stored");
	is_int(fmt_entry_name_stored(FMT_KEY_SHORT, 15), 0, "15 fits (short)");
	is_int(fmt_entry_name_stored(FMT_KEY_SHORT, 16), 1, "16 stored");
}

/* Every name length that fits comes back from its key, under both
 * policies and every fibration; longer ones are flagged hashed. */
static void test_name_recovery(void)
{
	static const char alpha[] = "Zy.x-w_v0u9t~s r\xe9q.p!o@n#m$l%k^j&i*h";
	char buf[32];
	int good = 1, hashed_ok = 1;

	for (int pol = FMT_KEY_SHORT; pol <= FMT_KEY_LARGE; pol++)
		for (size_t n = 1; n <= 30; n++)
			for (unsigned f = 0; f < 4; f++) {
				struct fmt_key k;
				size_t got;
				int stored = fmt_entry_name_stored(pol, n);

				fmt_key_entry(&k, pol, 0x10001, alpha + 1, n,
					      FMT_HASH_R5, f);
				memset(buf, 'X', sizeof(buf));
				got = fmt_key_entry_name(&k, pol, buf);
				if (stored != fmt_key_entry_hashed(&k, pol))
					hashed_ok = 0;
				if (stored ? got != 0 || buf[0] :
				    got != n || memcmp(buf, alpha + 1, n) ||
				    buf[n])
					good = 0;
			}
	ok(good, "names of 1..23 (large) / 1..15 (short) bytes recovered");
	ok(hashed_ok, "long-name bit set exactly for stored names");
	{
		struct fmt_key k;

		fmt_key_entry(&k, FMT_KEY_LARGE, 0x2a, ".", 1, 1, 2);
		is_int(fmt_key_entry_name(&k, FMT_KEY_LARGE, buf), 1, "\".\"");
		is_str(buf, ".", "\".\" recovered");
		fmt_key_entry(&k, FMT_KEY_SHORT, 0x2a, ".", 1, 1, 2);
		fmt_key_entry_name(&k, FMT_KEY_SHORT, buf);
		is_str(buf, ".", "short \".\" recovered");
		fmt_key_entry(&k, FMT_KEY_LARGE, 0x2a, "..", 2, 1, 2);
		fmt_key_entry_name(&k, FMT_KEY_LARGE, buf);
		is_str(buf, "..", "\"..\" recovered");
	}
}

/* The root of a fresh mkfs.reiser4 volume: block 24 is the leaf with
 * the root stat data (item 0) and the root's cde40 (item 1). */
static void test_mkfs_volume(void)
{
	char path[64];
	uint8_t blk[FIXTURE_BLKSIZE];
	struct fmt_key k, want;
	const uint8_t *cde;

	if (fixture_mkfs("", "64M", path) != 0 ||
	    fixture_block(path, 24, blk) != 0) {
		tap_skip(7, "mkfs.reiser4 not available");
		return;
	}
	unlink(path);
	is_int(blk[26], 1, "block 24 is a leaf");
	fmt_key_decode(blk + FIXTURE_BLKSIZE - 38, FMT_KEY_LARGE, &k);
	fmt_key_sd(&want, FMT_ROOT_LOCALITY, 0, FMT_ROOT_OID);
	ok(fmt_key_cmp(&k, &want) == 0, "item 0 key = root SD key");

	fmt_key_decode(blk + FIXTURE_BLKSIZE - 2 * 38, FMT_KEY_LARGE, &k);
	fmt_key_entry(&want, FMT_KEY_LARGE, FMT_ROOT_OID, ".", 1,
		      FMT_HASH_R5, FMT_FIBRE_EXT_1);
	ok(fmt_key_cmp(&k, &want) == 0, "item 1 key = entry key of \".\"");
	is_int(get_le16(blk + FIXTURE_BLKSIZE - 2 * 38 + 36), FMT_ITEM_CDE40,
	       "item 1 is cde40");

	/* Unit 1 of the cde40 holds ordering/objectid/offset of "..". */
	cde = blk + get_le16(blk + FIXTURE_BLKSIZE - 2 * 38 + 32);
	is_int(get_le16(cde), 2, "root has 2 entries");
	fmt_key_entry(&want, FMT_KEY_LARGE, FMT_ROOT_OID, "..", 2,
		      FMT_HASH_R5, FMT_FIBRE_EXT_1);
	k.el[1] = get_le64(cde + 2 + 26);
	k.el[2] = get_le64(cde + 2 + 26 + 8);
	k.el[3] = get_le64(cde + 2 + 26 + 16);
	ok(fmt_key_cmp(&k, &want) == 0, "unit 1 = entry key of \"..\"");
	{
		char nm[24];

		fmt_key_entry_name(&k, FMT_KEY_LARGE, nm);
		is_str(nm, "..", "name recovered from the on-disk key");
	}
}

int main(void)
{
	test_codec();
	test_builders();
	test_cmp();
	test_fibre();
	test_entry_vectors();
	test_entry_rules();
	test_name_recovery();
	test_mkfs_volume();
	return tap_done();
}
