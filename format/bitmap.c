/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: alloc40 bitmap blocks (doc/format.md §1.6). Scans work on
 * 64-bit little-endian words: with LSB-first bit order, bit j of the
 * word at bit 64*i is bit 64*i + j of the map. */
#include <string.h>

#include "bitmap.h"
#include "checksum.h"
#include "endian.h"
#include "super.h"

_Static_assert(FMT_BITMAP_OFF_BITS == FMT_BITMAP_CSUM_SIZE,
	       "bitmap bits follow the checksum");
_Static_assert((FMT_BLKSIZE_DEFAULT - FMT_BITMAP_CSUM_SIZE) * 8 == 32736,
	       "blocks per bitmap block of a 4096-byte volume");

uint64_t fmt_bitmap_count(uint64_t block_count, uint32_t blksize)
{
	uint64_t bpb = fmt_bitmap_bpb(blksize);

	return block_count / bpb + (block_count % bpb != 0);
}

uint64_t fmt_bitmap_blk(uint64_t k, uint32_t blksize)
{
	return k == 0 ? fmt_blk_bitmap0(blksize) : k * fmt_bitmap_bpb(blksize);
}

uint64_t fmt_bitmap_region_start(uint64_t k, uint32_t blksize)
{
	return k * fmt_bitmap_bpb(blksize);
}

uint64_t fmt_bitmap_region_len(uint64_t k, uint64_t block_count,
			       uint32_t blksize)
{
	uint64_t bpb = fmt_bitmap_bpb(blksize);
	uint64_t start = k * bpb;

	if (start >= block_count)
		return 0;
	return block_count - start < bpb ? block_count - start : bpb;
}

uint32_t fmt_bitmap_csum_get(const uint8_t *buf)
{
	return get_le32(buf);
}

void fmt_bitmap_csum_put(uint8_t *buf, uint32_t csum)
{
	put_le32(buf, csum);
}

uint32_t fmt_bitmap_csum(const uint8_t *buf, uint32_t blksize)
{
	return fmt_adler32(buf + FMT_BITMAP_OFF_BITS,
			   blksize - FMT_BITMAP_OFF_BITS);
}

void fmt_bitmap_csum_update(uint8_t *buf, uint32_t blksize)
{
	fmt_bitmap_csum_put(buf, fmt_bitmap_csum(buf, blksize));
}

const char *fmt_bitmap_verify(const uint8_t *buf, uint32_t blksize)
{
	if (fmt_bitmap_csum_get(buf) != fmt_bitmap_csum(buf, blksize))
		return "bitmap checksum (adler32 of bytes 4..end) does not match";
	return NULL;
}

static unsigned popcount64(uint64_t x)
{
	x = x - ((x >> 1) & 0x5555555555555555ull);
	x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
	return (unsigned)((x * 0x0101010101010101ull) >> 56);
}

/* Index of the lowest set bit; x != 0. */
static unsigned ctz64(uint64_t x)
{
	unsigned n = 0;

	if (!(x & 0xffffffffull)) { n += 32; x >>= 32; }
	if (!(x & 0xffffull)) { n += 16; x >>= 16; }
	if (!(x & 0xffull)) { n += 8; x >>= 8; }
	if (!(x & 0xfull)) { n += 4; x >>= 4; }
	if (!(x & 0x3ull)) { n += 2; x >>= 2; }
	return n + !(x & 1);
}

static uint64_t word_at(const uint8_t *buf, uint64_t b)
{
	return get_le64(buf + FMT_BITMAP_OFF_BITS + (b >> 3));
}

uint64_t fmt_bitmap_count_zero(const uint8_t *buf, uint64_t start,
			       uint64_t end)
{
	uint64_t n = 0;

	for (; start < end && (start & 63); start++)
		n += !fmt_bitmap_test(buf, start);
	for (; start < end && end - start >= 64; start += 64)
		n += 64 - popcount64(word_at(buf, start));
	for (; start < end; start++)
		n += !fmt_bitmap_test(buf, start);
	return n;
}

/* First bit in [start, end) equal to 'want' (0 or 1), or end. */
static uint64_t find_bit(const uint8_t *buf, uint64_t start, uint64_t end,
			 int want)
{
	uint64_t flip = want ? 0 : ~0ull;	/* makes wanted bits 1 */

	for (; start < end && (start & 63); start++)
		if (fmt_bitmap_test(buf, start) == want)
			return start;
	for (; start < end && end - start >= 64; start += 64) {
		uint64_t w = word_at(buf, start) ^ flip;

		if (w)
			return start + ctz64(w);
	}
	for (; start < end; start++)
		if (fmt_bitmap_test(buf, start) == want)
			return start;
	return end;
}

uint64_t fmt_bitmap_find_zero(const uint8_t *buf, uint64_t start,
			      uint64_t end)
{
	return find_bit(buf, start, end, 0);
}

uint64_t fmt_bitmap_find_set(const uint8_t *buf, uint64_t start,
			     uint64_t end)
{
	return find_bit(buf, start, end, 1);
}

static void put_bit(uint8_t *buf, uint64_t b, int set)
{
	if (set)
		fmt_bitmap_set(buf, b);
	else
		fmt_bitmap_clear(buf, b);
}

static void fill_range(uint8_t *buf, uint64_t start, uint64_t end, int set)
{
	for (; start < end && (start & 7); start++)
		put_bit(buf, start, set);
	if (start < end && end - start >= 8) {
		uint64_t bytes = (end - start) >> 3;

		memset(buf + FMT_BITMAP_OFF_BITS + (start >> 3), set ? 0xff : 0,
		       (size_t)bytes);
		start += bytes << 3;
	}
	for (; start < end; start++)
		put_bit(buf, start, set);
}

void fmt_bitmap_set_range(uint8_t *buf, uint64_t start, uint64_t end)
{
	fill_range(buf, start, end, 1);
}

void fmt_bitmap_clear_range(uint8_t *buf, uint64_t start, uint64_t end)
{
	fill_range(buf, start, end, 0);
}

void fmt_bitmap_fill_tail(uint8_t *buf, uint32_t blksize, uint64_t nbits)
{
	fmt_bitmap_set_range(buf, nbits, fmt_bitmap_bpb(blksize));
}
