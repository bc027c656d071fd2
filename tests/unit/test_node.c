/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: node40 / node41 codecs and verifier against mkfs.reiser4 blocks,
 * hand-made corruptions and a seeded random corruption loop. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* mkstemp, fseeko in fixture.h */
#endif
#include "tap.h"
#include "fixture.h"
#include "format/node.h"
#include "format/item.h"
#include "format/endian.h"
#include "format/errors.h"
#include "format/plugin.h"

#define BS FIXTURE_BLKSIZE
#define IHS FMT_IH_LARGE_SIZE

static uint32_t rng_state = 0x2545f491u;

static uint32_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 17;
	rng_state ^= rng_state << 5;
	return rng_state;
}

/* Offset of the u16 "body offset" field of item i's header. */
static size_t ih_off_field(unsigned i)
{
	return BS - (i + 1) * IHS + FMT_KEY_LARGE_SIZE + FMT_IH_OFF_OFFSET;
}

static void test_twig(const uint8_t *blk, uint32_t mkfs_id)
{
	struct fmt_node_header nh;
	struct fmt_item_header ih;
	uint8_t re[BS];
	size_t off, len;
	uint64_t child;
	int bad = 7;

	is_int(fmt_node_header_decode(blk, BS, &nh), 0, "blk 23: header decodes");
	is_int(nh.plugin_id, FMT_NODE40, "blk 23: node40");
	is_int(nh.nr_items, 1, "blk 23: 1 item");
	is_int(nh.free_space, 4022, "blk 23: free_space 4022");
	is_int(nh.free_space_start, 36, "blk 23: free_space_start 36");
	is_u64(nh.magic, FMT_NODE40_MAGIC, "blk 23: magic");
	is_u64(nh.mkfs_id, mkfs_id, "blk 23: mkfs_id = format40 sb mkfs_id");
	is_u64(nh.flush_id, 0, "blk 23: flush_id 0");
	is_int(nh.flags, 0, "blk 23: flags 0");
	is_int(nh.level, 2, "blk 23: level 2 (twig)");
	ok(fmt_node_verify(blk, BS, FMT_KEY_LARGE, &bad) == NULL,
	   "blk 23: verifies");
	is_int(bad, -1, "blk 23: no bad item");
	is_int(fmt_node_ih_decode(blk, BS, FMT_KEY_LARGE, 0, &ih), 0,
	       "blk 23: item header 0 decodes");
	is_u64(ih.key.el[0], FMT_ROOT_LOCALITY << 4 | FMT_KEY_SD,
	       "blk 23: nodeptr key el0 = root SD");
	is_u64(ih.key.el[2], FMT_ROOT_OID, "blk 23: nodeptr key el2 = 0x2a");
	is_u64(ih.key.el[1] | ih.key.el[3], 0, "blk 23: el1, el3 zero");
	is_int(ih.offset, 28, "blk 23: item 0 at 28");
	is_int(ih.plugin_id, FMT_ITEM_NODEPTR40, "blk 23: nodeptr40");
	is_int(fmt_node_item_body(blk, BS, FMT_KEY_LARGE, 0, &off, &len), 0,
	       "blk 23: item 0 body");
	is_int(off, 28, "blk 23: body at 28");
	is_int(len, 8, "blk 23: body 8 bytes");
	is_int(fmt_nodeptr40_decode(blk + off, len, &child), 0,
	       "blk 23: nodeptr decodes");
	is_u64(child, 24, "blk 23: child is block 24");
	fmt_nodeptr40_encode(child, re);
	is_mem(re, blk + off, 8, "blk 23: nodeptr round trip");
	is_int(fmt_node_item_body(blk, BS, FMT_KEY_LARGE, 1, &off, &len),
	       R4_ERANGE, "blk 23: item 1 does not exist");

	memcpy(re, blk, BS);
	memset(re, 0xa5, FMT_NODE40_HEADER_SIZE);
	memset(re + BS - IHS, 0xa5, IHS);
	is_int(fmt_node_header_encode(&nh, re, BS), 0, "blk 23: header encodes");
	is_int(fmt_node_ih_encode(&ih, re, BS, FMT_KEY_LARGE, 0), 0,
	       "blk 23: item header encodes");
	is_mem(re, blk, BS, "blk 23: header + item header round trip");
}

static void test_leaf(const uint8_t *blk)
{
	struct fmt_node_header nh;
	struct fmt_item_header ih;
	size_t off, len;
	uint8_t re[IHS];

	fmt_node_header_decode(blk, BS, &nh);
	is_int(nh.nr_items, 2, "blk 24: 2 items");
	is_int(nh.free_space, 3796, "blk 24: free_space 3796");
	is_int(nh.free_space_start, 224, "blk 24: free_space_start 224");
	is_int(nh.level, 1, "blk 24: level 1");
	ok(fmt_node_verify(blk, BS, FMT_KEY_LARGE, NULL) == NULL,
	   "blk 24: verifies");
	fmt_node_item_body(blk, BS, FMT_KEY_LARGE, 0, &off, &len);
	ok(off == 28 && len == 94, "blk 24: item 0 = root SD at 28, 94 bytes");
	fmt_node_item_body(blk, BS, FMT_KEY_LARGE, 1, &off, &len);
	ok(off == 122 && len == 102, "blk 24: item 1 = cde40 at 122, 102 bytes");
	fmt_node_ih_decode(blk, BS, FMT_KEY_LARGE, 1, &ih);
	is_int(ih.plugin_id, FMT_ITEM_CDE40, "blk 24: item 1 is cde40");
	is_u64(ih.key.el[0], FMT_ROOT_OID << 4 | FMT_KEY_FILE_NAME,
	       "blk 24: item 1 key el0 = 0x2a0");
	ok(fmt_node_ih_pos(BS, FMT_NODE40, FMT_KEY_LARGE, 1) == 0xfb4,
	   "blk 24: item header 1 at 0xfb4");
	fmt_item_header_encode(&ih, FMT_KEY_LARGE, re);
	is_mem(re, blk + 0xfb4, IHS, "blk 24: item header 1 round trip");
}

static void test_node41(const uint8_t *blk, const char *what)
{
	struct fmt_node_header nh;
	uint8_t b[BS];
	size_t off, len;

	fmt_node_header_decode(blk, BS, &nh);
	is_int(nh.plugin_id, FMT_NODE41, "%s: plugin id 1", what);
	is_u64(nh.magic, FMT_NODE41_MAGIC, "%s: magic 0x19051966", what);
	is_u64(nh.checksum, get_le32(blk + 28), "%s: checksum field", what);
	is_u64(fmt_node41_csum(blk, BS), nh.checksum,
	       "%s: computed checksum matches", what);
	ok(fmt_node_verify(blk, BS, FMT_KEY_LARGE, NULL) == NULL,
	   "%s: verifies", what);
	is_int(fmt_node_item_body(blk, BS, FMT_KEY_LARGE, 0, &off, &len), 0,
	       "%s: item 0 body", what);
	is_int(off, 32, "%s: first body at 32", what);
	is_int(nh.free_space, BS - nh.free_space_start - nh.nr_items * IHS,
	       "%s: free space accounting", what);

	memcpy(b, blk, BS);
	b[2000] ^= 0x01;
	is_str(fmt_node_verify(b, BS, FMT_KEY_LARGE, NULL),
	       "node41 checksum mismatch", "%s: one flipped byte fails", what);
	fmt_node_stamp(b, BS);
	ok(fmt_node_verify(b, BS, FMT_KEY_LARGE, NULL) == NULL,
	   "%s: verifies again after stamping", what);
	memcpy(b, blk, BS);
	b[29] ^= 0x80;
	ok(fmt_node_verify(b, BS, FMT_KEY_LARGE, NULL) != NULL,
	   "%s: flipped checksum byte fails", what);
	memcpy(b, blk, BS);
	b[12] ^= 0x01;
	ok(fmt_node_verify(b, BS, FMT_KEY_LARGE, NULL) != NULL,
	   "%s: flipped mkfs_id byte fails (covered by checksum)", what);
	memcpy(b, blk, BS);
	fmt_node41_header_encode(&nh, b);
	is_mem(b, blk, BS, "%s: node41 header round trip", what);
}

static void test_mkfs(void)
{
	char path[64];
	uint8_t sb[BS], b23[BS], b24[BS];

	if (fixture_mkfs("", "64M", path) != 0) {
		tap_skip(1, "mkfs.reiser4 not available");
		return;
	}
	if (fixture_block(path, 17, sb) || fixture_block(path, 23, b23) ||
	    fixture_block(path, 24, b24)) {
		ok(0, "read fixture blocks");
		unlink(path);
		return;
	}
	unlink(path);
	test_twig(b23, get_le32(sb + 48));
	test_leaf(b24);
	if (fixture_mkfs("-o node=node41", "64M", path) != 0) {
		ok(0, "mkfs.reiser4 -o node=node41");
		return;
	}
	if (fixture_block(path, 23, b23) || fixture_block(path, 24, b24))
		ok(0, "read node41 fixture blocks");
	unlink(path);
	test_node41(b23, "node41 blk 23");
	test_node41(b24, "node41 blk 24");
}

/* A hand-made leaf: two items (a 3-byte tail and a 5-byte tail). */
static void make_leaf(uint8_t *b, unsigned pid)
{
	struct fmt_item_header ih;
	struct fmt_node_header nh;
	size_t h = fmt_node_header_size(pid);

	fmt_node_init(b, BS, pid, 1, 0x12345678);
	memset(&ih, 0, sizeof(ih));
	ih.key.el[0] = 0x10000ULL << 4 | FMT_KEY_BODY;
	ih.key.el[2] = 0x10001;
	ih.plugin_id = FMT_ITEM_TAIL40;
	ih.offset = (uint16_t)h;
	fmt_node_ih_encode(&ih, b, BS, FMT_KEY_LARGE, 0);
	memcpy(b + h, "abc", 3);
	ih.key.el[3] = 3;
	ih.offset = (uint16_t)(h + 3);
	fmt_node_ih_encode(&ih, b, BS, FMT_KEY_LARGE, 1);
	memcpy(b + h + 3, "defgh", 5);
	fmt_node_header_decode(b, BS, &nh);
	nh.nr_items = 2;
	nh.free_space_start = (uint16_t)(h + 8);
	nh.free_space = (uint16_t)(BS - h - 8 - 2 * IHS);
	fmt_node_header_encode(&nh, b, BS);
	fmt_node_stamp(b, BS);
}

static void test_init(void)
{
	static uint8_t b[BS];
	struct fmt_node_header nh;
	size_t off, len;

	is_int(fmt_node_init(b, BS, FMT_NODE40, 1, 7), 0, "init node40");
	fmt_node_header_decode(b, BS, &nh);
	ok(nh.nr_items == 0 && nh.free_space_start == 28 &&
	   nh.free_space == 4068 && nh.magic == FMT_NODE40_MAGIC &&
	   nh.level == 1 && nh.mkfs_id == 7, "empty node40: 0, 28, 4068");
	ok(fmt_node_verify(b, BS, FMT_KEY_LARGE, NULL) == NULL,
	   "empty node40 verifies");
	is_int(fmt_node_init(b, BS, FMT_NODE41, 3, 7), 0, "init node41");
	fmt_node_header_decode(b, BS, &nh);
	ok(nh.free_space_start == 32 && nh.free_space == 4064 &&
	   nh.checksum == fmt_node41_csum(b, BS), "empty node41: 32, 4064");
	ok(fmt_node_verify(b, BS, FMT_KEY_SHORT, NULL) == NULL,
	   "empty node41 verifies");
	is_int(fmt_node_init(b, BS, 2, 1, 0), R4_EUNSUPP, "init: node pid 2");
	is_int(fmt_node_init(b, BS, 0, 0, 0), R4_ERANGE, "init: level 0");
	is_int(fmt_node_init(b, BS, 0, 9, 0), R4_ERANGE, "init: level 9");
	is_int(fmt_node_init(b, 100, 0, 1, 0), R4_ERANGE, "init: blksize 100");

	for (unsigned pid = 0; pid < 2; pid++) {
		make_leaf(b, pid);
		ok(fmt_node_verify(b, BS, FMT_KEY_LARGE, NULL) == NULL,
		   "hand-made node%u leaf verifies", 40 + pid);
		fmt_node_item_body(b, BS, FMT_KEY_LARGE, 1, &off, &len);
		ok(len == 5 && memcmp(b + off, "defgh", 5) == 0,
		   "hand-made node%u leaf: item 1 body", 40 + pid);
	}
	is_int(fmt_node_ih_pos(BS, 0, FMT_KEY_LARGE, 106), BS - 107 * IHS,
	       "ih pos of the last header that fits");
	is_int(fmt_node_ih_pos(BS, 0, FMT_KEY_LARGE, 107), 0,
	       "ih pos past the node header is refused");
	is_int(fmt_node_ih_pos(BS, 0, FMT_KEY_SHORT, 0), BS - 30,
	       "short-key item header is 30 bytes");
	is_int(fmt_node_ih_pos(BS, 0, FMT_KEY_LARGE, 0xffffffffu), 0,
	       "ih pos of a huge index is refused");
}

struct corruption {
	const char *what;
	size_t off;
	unsigned width;		/* 1, 2 or 4 bytes */
	uint32_t value;
	const char *want;
	int bad_item;
};

static void put_n(uint8_t *b, unsigned width, uint32_t v)
{
	if (width == 1)
		b[0] = (uint8_t)v;
	else if (width == 2)
		put_le16(b, (uint16_t)v);
	else
		put_le32(b, v);
}

static void test_corruptions(void)
{
	static uint8_t good[BS], b[BS];
	const struct corruption c[] = {
		{ "magic", 8, 4, 0x52344654, "node40 magic is not 0x52344653", -1 },
		{ "plugin id 2", 0, 2, 2, "node plugin id is unknown", -1 },
		{ "level 0", 26, 1, 0, "node level is not in 1..8", -1 },
		{ "level 9", 26, 1, 9, "node level is not in 1..8", -1 },
		{ "nr_items 0xffff", 2, 2, 0xffff,
		  "node nr_items does not fit the block", -1 },
		{ "free_space_start 27", 6, 2, 27,
		  "node free_space_start is outside the body area", -1 },
		{ "free_space_start into headers", 6, 2, BS - 2 * IHS + 1,
		  "node free_space_start is outside the body area", -1 },
		{ "free_space off by one", 4, 2, BS - 36 - 2 * IHS + 1,
		  "node free_space != blksize - free_space_start - "
		  "nr_items * item header size", -1 },
		{ "item 0 offset 29", ih_off_field(0), 2, 29,
		  "item 0 body does not start right after the node header", 0 },
		{ "item 1 offset = item 0", ih_off_field(1), 2, 28,
		  "item offsets are not strictly increasing", 1 },
		{ "item 1 offset = fss", ih_off_field(1), 2, 36,
		  "item offset is not below free_space_start", 1 },
		{ "item 1 plugin acl40", BS - 2 * IHS + 36, 2, FMT_ITEM_ACL40,
		  "item plugin id is unknown or not allowed at this node "
		  "level", 1 },
		{ "item 1 extent40 in a leaf", BS - 2 * IHS + 36, 2,
		  FMT_ITEM_EXTENT40, "item plugin id is unknown or not "
		  "allowed at this node level", 1 },
		{ "item 1 key below item 0", BS - 2 * IHS, 1, 0,
		  "item keys are not in ascending order", 1 },
	};
	const char *why;
	int bad;

	make_leaf(good, FMT_NODE40);
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		memcpy(b, good, BS);
		put_n(b + c[i].off, c[i].width, c[i].value);
		bad = 99;
		why = fmt_node_verify(b, BS, FMT_KEY_LARGE, &bad);
		is_str(why, c[i].want, "corrupt %s: detected", c[i].what);
		is_int(bad, c[i].bad_item, "corrupt %s: bad item", c[i].what);
	}
}

static void test_bad_lookups(void)
{
	static uint8_t good[BS], b[BS];
	struct fmt_item_header ih;
	size_t off, len;

	make_leaf(good, FMT_NODE40);
	memcpy(b, good, BS);
	put_le16(b + ih_off_field(1), 28);
	is_int(fmt_node_item_body(b, BS, FMT_KEY_LARGE, 0, &off, &len),
	       R4_ECORRUPT, "item_body: zero-length item 0 refused");
	put_le16(b + 6, 0xffff);
	is_int(fmt_node_item_body(b, BS, FMT_KEY_LARGE, 0, &off, &len),
	       R4_ECORRUPT, "item_body: fss past the headers refused");
	put_le16(b, 9);
	is_int(fmt_node_item_body(b, BS, FMT_KEY_LARGE, 0, &off, &len),
	       R4_EUNSUPP, "item_body: unknown node plugin");
	is_int(fmt_node_ih_decode(b, BS, FMT_KEY_LARGE, 0, &ih), R4_EUNSUPP,
	       "ih_decode: unknown node plugin");
	is_int(fmt_node_ih_decode(good, BS, FMT_KEY_LARGE, 200, &ih), R4_ERANGE,
	       "ih_decode: index past the block");
	ok(fmt_node_verify(good, 256, FMT_KEY_LARGE, NULL) != NULL,
	   "verify: blksize 256 refused");
	ok(fmt_node_verify(good, BS, FMT_KEY_SHORT, NULL) != NULL,
	   "verify: large-key node read with short keys fails");
}

/* Check that a verified node's items all lie inside the body area. */
static int bodies_in_bounds(const uint8_t *b, size_t bs)
{
	struct fmt_node_header nh;
	size_t off, len, end = 0;

	fmt_node_header_decode(b, bs, &nh);
	for (unsigned i = 0; i < nh.nr_items; i++) {
		if (fmt_node_item_body(b, bs, FMT_KEY_LARGE, i, &off, &len))
			return 0;
		if (off < end || len == 0 || off + len > nh.free_space_start)
			return 0;
		end = off + len;
	}
	return 1;
}

/* fmt_node_layout's answer is fmt_node_item_body's for item 0, and once
 * it passes, fmt_node_item_at gives each item (and the two past the
 * last) what fmt_node_ih_decode and fmt_node_item_body give. *n counts
 * the items compared. */
static int items_at_agree(const uint8_t *b, size_t bs,
			  enum fmt_key_policy pol, int *n)
{
	struct fmt_node_header nh;
	struct fmt_item_header a, c;
	size_t off, len, off2, len2;
	int rc = fmt_node_layout(b, bs, pol, &nh), rc1, rc2;

	if (rc)
		return rc == fmt_node_item_body(b, bs, pol, 0, &off, &len);
	for (unsigned i = 0; i < nh.nr_items + 2u; i++) {
		memset(&a, 0, sizeof(a));
		memset(&c, 0, sizeof(c));
		off = len = off2 = len2 = 7;
		rc1 = fmt_node_item_at(b, bs, pol, &nh, i, &a, &off, &len);
		rc2 = fmt_node_item_body(b, bs, pol, i, &off2, &len2);
		if (rc1 != rc2 || (!rc1 && (off != off2 || len != len2)))
			return 0;
		if (!rc1 && (fmt_node_ih_decode(b, bs, pol, i, &c) ||
			     memcmp(&a, &c, sizeof(a))))
			return 0;
		(*n)++;
	}
	return 1;
}

/* Random corruptions of a valid leaf and random blocks, in an exact-size
 * heap buffer so that any overread trips AddressSanitizer. */
static void test_hostile(void)
{
	static uint8_t good[BS];
	uint8_t *b = malloc(BS);
	struct fmt_node_header nh;
	struct fmt_item_header ih;
	size_t off, len;
	int passed = 0, sound = 1, n_ok = 0, same = 1, n_at = 0;

	make_leaf(good, FMT_NODE40);
	for (int it = 0; it < 4000; it++) {
		if (it % 4 == 3) {
			for (size_t i = 0; i < BS; i++)
				b[i] = (uint8_t)rnd();
			put_le16(b, (uint16_t)(rnd() % 3));
			put_le16(b + 2, (uint16_t)(rnd() % 120));
		} else {
			memcpy(b, good, BS);
			for (unsigned k = 1 + rnd() % 4; k; k--) {
				size_t pos = rnd() % 2 ? rnd() % 32
						       : BS - 1 - rnd() % 80;
				b[pos] = (uint8_t)rnd();
			}
			if (get_le16(b) == FMT_NODE41)
				fmt_node_stamp(b, BS);
		}
		if (fmt_node_verify(b, BS, FMT_KEY_LARGE, NULL) == NULL) {
			passed++;
			if (!bodies_in_bounds(b, BS))
				sound = 0;
		}
		if (!items_at_agree(b, BS, FMT_KEY_LARGE, &n_at) ||
		    !items_at_agree(b, BS, FMT_KEY_SHORT, &n_at))
			same = 0;
		if (fmt_node_header_decode(b, BS, &nh) == 0)
			for (unsigned i = 0; i < nh.nr_items + 2u; i++) {
				if (fmt_node_item_body(b, BS, FMT_KEY_LARGE, i,
						       &off, &len) == 0) {
					n_ok++;
					if (off + len > BS)
						sound = 0;
				}
				fmt_node_ih_decode(b, BS, FMT_KEY_SHORT, i, &ih);
			}
	}
	free(b);
	ok(sound, "hostile nodes: verified nodes keep bodies in bounds "
	   "(%d verified, %d bodies)", passed, n_ok);
	ok(passed > 0 && passed < 4000, "hostile nodes: some pass, most fail");
	ok(same && n_at > 1000, "hostile nodes: fmt_node_layout and "
	   "fmt_node_item_at answer as fmt_node_item_body and "
	   "fmt_node_ih_decode (%d items)", n_at);
}

int main(void)
{
	test_mkfs();
	test_init();
	test_corruptions();
	test_bad_lookups();
	test_hostile();
	return tap_done();
}
