/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: alloc40 bitmap blocks (doc/format.md §1.6).
 *
 * The volume is cut into regions of bpb = (blksize - 4) * 8 blocks. The
 * bitmap block of region k describes blocks k*bpb .. k*bpb + bpb - 1:
 * bytes 0..3 hold the Adler-32 of bytes 4..blksize-1 (LE), and bit b
 * (byte 4 + b/8, bit b%8, LSB first) is 1 when block k*bpb + b is used.
 * Bit positions below are region-relative (0 .. bpb-1). */
#ifndef R4_FORMAT_BITMAP_H
#define R4_FORMAT_BITMAP_H

#include <stddef.h>
#include <stdint.h>

#define FMT_BITMAP_CSUM_SIZE 4
#define FMT_BITMAP_OFF_BITS FMT_BITMAP_CSUM_SIZE

/* Blocks described by one bitmap block: 32736 for 4096-byte blocks. */
static inline uint64_t fmt_bitmap_bpb(uint32_t blksize)
{ return (uint64_t)(blksize - FMT_BITMAP_CSUM_SIZE) * 8; }

/* Number of bitmap blocks: ceil(block_count / bpb), as the kernel
 * computes it. */
uint64_t fmt_bitmap_count(uint64_t block_count, uint32_t blksize);
/* Block number of bitmap block k: master + 2 for k = 0, else k * bpb
 * (the first block of the region it describes). */
uint64_t fmt_bitmap_blk(uint64_t k, uint32_t blksize);
/* First block and number of volume blocks of region k (the last region
 * may be short; 0 beyond the end). */
uint64_t fmt_bitmap_region_start(uint64_t k, uint32_t blksize);
uint64_t fmt_bitmap_region_len(uint64_t k, uint64_t block_count,
			       uint32_t blksize);

/* The stored checksum, the checksum of the bits as they are, and
 * storing the latter. */
uint32_t fmt_bitmap_csum_get(const uint8_t *buf);
void fmt_bitmap_csum_put(uint8_t *buf, uint32_t csum);
uint32_t fmt_bitmap_csum(const uint8_t *buf, uint32_t blksize);
void fmt_bitmap_csum_update(uint8_t *buf, uint32_t blksize);
/* NULL when the stored checksum matches the bits. */
const char *fmt_bitmap_verify(const uint8_t *buf, uint32_t blksize);

/* Bit b of a bitmap block (b < bpb). */
static inline int fmt_bitmap_test(const uint8_t *buf, uint64_t b)
{ return (buf[FMT_BITMAP_OFF_BITS + (b >> 3)] >> (b & 7)) & 1; }
static inline void fmt_bitmap_set(uint8_t *buf, uint64_t b)
{ buf[FMT_BITMAP_OFF_BITS + (b >> 3)] |= (uint8_t)(1u << (b & 7)); }
static inline void fmt_bitmap_clear(uint8_t *buf, uint64_t b)
{ buf[FMT_BITMAP_OFF_BITS + (b >> 3)] &= (uint8_t)~(1u << (b & 7)); }

/* Set or clear bits [start, end). */
void fmt_bitmap_set_range(uint8_t *buf, uint64_t start, uint64_t end);
void fmt_bitmap_clear_range(uint8_t *buf, uint64_t start, uint64_t end);
/* Number of zero (free) bits in [start, end). */
uint64_t fmt_bitmap_count_zero(const uint8_t *buf, uint64_t start,
			       uint64_t end);
/* First zero / set bit in [start, end), or end when there is none. */
uint64_t fmt_bitmap_find_zero(const uint8_t *buf, uint64_t start,
			      uint64_t end);
uint64_t fmt_bitmap_find_set(const uint8_t *buf, uint64_t start,
			     uint64_t end);
/* Set every bit from nbits to bpb - 1, as mkfs does for the blocks past
 * the end of the volume in the last bitmap block (nbits = the region's
 * length from fmt_bitmap_region_len()). The checksum is not updated. */
void fmt_bitmap_fill_tail(uint8_t *buf, uint32_t blksize, uint64_t nbits);

#endif
