/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: tests of the alloc40 bitmap block helpers, against the bitmaps
 * mkfs.reiser4 writes. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <fcntl.h>
#include <unistd.h>

#include "tap.h"
#include "fixture.h"
#include "format/bitmap.h"
#include "format/super.h"

#define BS FIXTURE_BLKSIZE
#define BPB 32736

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

static void test_geometry(void)
{
	is_u64(fmt_bitmap_bpb(4096), BPB, "32736 blocks per bitmap block");
	is_u64(fmt_bitmap_bpb(512), 4064, "4064 for 512-byte blocks");
	is_u64(fmt_bitmap_count(16384, 4096), 1, "64 MiB: 1 bitmap");
	is_u64(fmt_bitmap_count(262144, 4096), 9, "1 GiB: 9 bitmaps");
	is_u64(fmt_bitmap_count(1048576, 4096), 33, "4 GiB: 33 bitmaps");
	is_u64(fmt_bitmap_count(BPB, 4096), 1, "exactly one region");
	is_u64(fmt_bitmap_count(BPB + 1, 4096), 2, "one block more");
	is_u64(fmt_bitmap_blk(0, 4096), 18, "bitmap 0 at master + 2");
	is_u64(fmt_bitmap_blk(1, 4096), 32736, "bitmap 1 at 32736");
	is_u64(fmt_bitmap_blk(8, 4096), 261888, "bitmap 8 at 261888");
	is_u64(fmt_bitmap_blk(32, 4096), 1047552, "bitmap 32 at 1047552");
	is_u64(fmt_bitmap_blk(0, 1024), 66, "bitmap 0 of 1024-byte blocks");
	is_u64(fmt_bitmap_region_start(2, 4096), 65472, "region 2 start");
	is_u64(fmt_bitmap_region_len(0, 16384, 4096), 16384, "short region");
	is_u64(fmt_bitmap_region_len(7, 262144, 4096), BPB, "full region");
	is_u64(fmt_bitmap_region_len(8, 262144, 4096), 256, "last region");
	is_u64(fmt_bitmap_region_len(9, 262144, 4096), 0, "past the end");
}

/* Naive versions to compare the word-wise scans with. */
static uint64_t naive_zero(const uint8_t *b, uint64_t s, uint64_t e)
{
	uint64_t n = 0;

	for (; s < e; s++)
		n += !fmt_bitmap_test(b, s);
	return n;
}

static uint64_t naive_find(const uint8_t *b, uint64_t s, uint64_t e, int v)
{
	for (; s < e; s++)
		if (fmt_bitmap_test(b, s) == v)
			return s;
	return e;
}

static uint32_t rnd_state = 12345;

static uint32_t rnd(void)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return rnd_state >> 8;
}

static void test_bits(void)
{
	uint8_t buf[BS];
	int bad_cnt = 0, bad_z = 0, bad_s = 0;

	memset(buf, 0, BS);
	fmt_bitmap_set(buf, 0);
	fmt_bitmap_set(buf, 9);
	fmt_bitmap_set(buf, BPB - 1);
	ok(buf[4] == 0x01 && buf[5] == 0x02 && buf[BS - 1] == 0x80,
	   "bits are LSB first from byte 4");
	ok(fmt_bitmap_test(buf, 9) && !fmt_bitmap_test(buf, 8), "test bit");
	fmt_bitmap_clear(buf, 9);
	ok(buf[5] == 0 && !fmt_bitmap_test(buf, 9), "clear bit");
	is_u64(fmt_bitmap_count_zero(buf, 0, BPB), BPB - 2, "count zeros");
	is_u64(fmt_bitmap_find_set(buf, 1, BPB), BPB - 1, "find last set");
	is_u64(fmt_bitmap_find_set(buf, 1, BPB - 1), BPB - 1, "none: end");
	is_u64(fmt_bitmap_find_zero(buf, 0, BPB), 1, "find first zero");

	memset(buf, 0, BS);
	fmt_bitmap_set_range(buf, 3, 200);
	ok(naive_zero(buf, 0, BPB) == BPB - 197 && fmt_bitmap_test(buf, 3) &&
	   fmt_bitmap_test(buf, 199) && !fmt_bitmap_test(buf, 200) &&
	   !fmt_bitmap_test(buf, 2), "set range [3, 200)");
	fmt_bitmap_clear_range(buf, 10, 190);
	is_u64(naive_zero(buf, 0, BPB), BPB - 17, "clear range [10, 190)");
	fmt_bitmap_set_range(buf, 5, 5);
	is_u64(naive_zero(buf, 0, BPB), BPB - 17, "empty range is a no-op");

	/* Random maps, random windows: word-wise == bit-wise. */
	for (int round = 0; round < 300; round++) {
		uint64_t s = rnd() % BPB, e = s + rnd() % (BPB - s + 1);
		int density = (int)(rnd() % 5);

		for (int i = 4; i < BS; i++) {
			uint8_t r = (uint8_t)rnd();

			buf[i] = density == 0 ? 0 : density == 4 ? 0xff :
				 density == 1 ? (r == 7 ? 0x10 : 0) :
				 density == 3 ? (r == 7 ? 0xef : 0xff) : r;
		}
		bad_cnt += fmt_bitmap_count_zero(buf, s, e) != naive_zero(buf, s, e);
		bad_z += fmt_bitmap_find_zero(buf, s, e) != naive_find(buf, s, e, 0);
		bad_s += fmt_bitmap_find_set(buf, s, e) != naive_find(buf, s, e, 1);
	}
	is_int(bad_cnt, 0, "count_zero matches a bit-by-bit count");
	is_int(bad_z, 0, "find_zero matches a bit-by-bit scan");
	is_int(bad_s, 0, "find_set matches a bit-by-bit scan");
}

/* The bitmap mkfs writes for a 64 MiB volume: blocks 0..24 used, the
 * tail past block 16384 all ones (doc/format.md §1.6 and §11). */
static void make_64m(uint8_t *buf)
{
	memset(buf, 0, BS);
	fmt_bitmap_set_range(buf, 0, 25);
	fmt_bitmap_fill_tail(buf, BS, 16384);
	fmt_bitmap_csum_update(buf, BS);
}

static void test_checksum(void)
{
	uint8_t buf[BS];

	memset(buf, 0, BS);
	is_u64(fmt_bitmap_csum(buf, BS), 0x0ffc0001, "adler32 of zero bits");
	make_64m(buf);
	is_u64(fmt_bitmap_csum_get(buf), 0xe259f76c, "64 MiB bitmap checksum");
	ok(buf[0] == 0x6c && buf[3] == 0xe2, "checksum stored LE");
	ok(buf[7] == 0x01 && buf[8] == 0 && buf[4 + 2047] == 0 &&
	   buf[4 + 2048] == 0xff, "bits 0..24 and tail from 16384 set");
	ok(fmt_bitmap_verify(buf, BS) == NULL, "checksum verifies");
	fmt_bitmap_clear(buf, 3);
	is_str(fmt_bitmap_verify(buf, BS),
	       "bitmap checksum (adler32 of bytes 4..end) does not match",
	       "a flipped bit is caught");
	fmt_bitmap_set(buf, 3);
	buf[1] ^= 1;
	ok(fmt_bitmap_verify(buf, BS) != NULL, "a bad stored checksum too");
	fmt_bitmap_csum_put(buf, 0x11223344);
	is_u64(fmt_bitmap_csum_get(buf), 0x11223344, "csum put/get");
}

static void test_mkfs_64m(void)
{
	char path[64];
	uint8_t blk[BS], want[BS];
	struct fmt_format40 sb;

	if (fixture_mkfs("", "64M", path)) {
		tap_skip(4, "mkfs.reiser4 not available");
		return;
	}
	fixture_block(path, 17, blk);
	fmt_format40_decode(blk, &sb);
	fixture_block(path, 18, blk);
	ok(fmt_bitmap_verify(blk, BS) == NULL, "64M: bitmap checksum verifies");
	is_u64(fmt_bitmap_csum_get(blk), 0xe259f76c, "64M: stored checksum");
	is_u64(fmt_bitmap_count_zero(blk, 0, sb.block_count), sb.free_blocks,
	       "64M: zero bits == super block free_blocks");
	make_64m(want);
	is_mem(blk, want, BS, "64M: bitmap built here equals mkfs's");
	unlink(path);
}

/* Every bitmap block of an image verifies; free bits add up to the
 * super block's count; each region marks its own bitmap block used,
 * and the last one has its tail filled. */
static void check_image(const char *opts, const char *size, uint32_t bs)
{
	char path[64];
	uint8_t *blk = malloc(bs);
	struct fmt_format40 sb;
	uint64_t nbm, free_bits = 0, k;
	int bad_csum = 0, own_unused = 0, tail_bad = 0;

	tap_require(blk, "out of memory");
	if (fixture_mkfs(opts, size, path)) {
		tap_skip(4, "mkfs.reiser4 not available");
		free(blk);
		return;
	}
	read_at(path, fmt_blk_format40(bs) * bs, blk, bs);
	fmt_format40_decode(blk, &sb);
	nbm = fmt_bitmap_count(sb.block_count, bs);
	for (k = 0; k < nbm; k++) {
		uint64_t len = fmt_bitmap_region_len(k, sb.block_count, bs);
		uint64_t own = fmt_bitmap_blk(k, bs) - fmt_bitmap_region_start(k, bs);

		if (read_at(path, fmt_bitmap_blk(k, bs) * bs, blk, bs))
			break;
		bad_csum += fmt_bitmap_verify(blk, bs) != NULL;
		own_unused += !fmt_bitmap_test(blk, own);
		free_bits += fmt_bitmap_count_zero(blk, 0, len);
		if (k == nbm - 1)
			tail_bad = fmt_bitmap_find_zero(blk, len,
					fmt_bitmap_bpb(bs)) != fmt_bitmap_bpb(bs);
	}
	is_int(bad_csum, 0, "%s %s: %" PRIu64 " bitmap checksums verify",
	       size, opts, nbm);
	is_u64(free_bits, sb.free_blocks,
	       "%s %s: free bits == super block free_blocks", size, opts);
	is_int(own_unused, 0, "%s %s: every bitmap block marked used",
	       size, opts);
	is_int(tail_bad, 0, "%s %s: bits past the end are set", size, opts);
	unlink(path);
	free(blk);
}

int main(void)
{
	test_geometry();
	test_bits();
	test_checksum();
	test_mkfs_64m();
	check_image("", "64M", 4096);
	check_image("", "1G", 4096);
	check_image("", "4G", 4096);
	check_image("-b 1024", "64M", 1024);
	return tap_done();
}
