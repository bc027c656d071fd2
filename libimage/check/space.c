/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the checker's space pass: each bitmap block against the map of
 * blocks the walk found in use (reserved area, bitmap and backup blocks,
 * tree nodes, extent blocks), its checksum, the bits past the end of the
 * volume, and the free block counters. Differences are reported as
 * ranges, at most SPACE_MAX_LINES per kind, then one summary line. */
#include "config.h"
#include <string.h>
#include "libimage/check/check.h"
#include "format/bitmap.h"
#include "format/super.h"

#define SPACE_MAX_LINES 20

struct run {
	int code;
	uint64_t start, len;
	uint64_t count, blocks;
};

static void run_flush(struct chk *c, struct run *r)
{
	int leak = r->code == R4_CHK_SPACE_LEAK;

	if (!r->len)
		return;
	r->count++;
	r->blocks += r->len;
	if (r->count > SPACE_MAX_LINES)
		c->rep->problems++;
	else if (r->len == 1)
		CHK_SAY(c, leak ? CHK_M_LEAK_ONE : CHK_M_FREE_ONE, r->start,
			-1, NULL, CHK_U(first, r->start));
	else
		CHK_SAY(c, leak ? CHK_M_LEAK_RUN : CHK_M_FREE_RUN, r->start,
			-1, NULL, CHK_U(first, r->start),
			CHK_U(last, r->start + r->len - 1),
			CHK_U(blocks, r->len));
	r->len = 0;
}

static void run_add(struct chk *c, struct run *r, uint64_t b)
{
	if (r->len && r->start + r->len == b) {
		r->len++;
		return;
	}
	run_flush(c, r);
	r->start = b;
	r->len = 1;
}

static void run_end(struct chk *c, struct run *r)
{
	run_flush(c, r);
	if (r->count > SPACE_MAX_LINES)
		CHK_NOTE(c, r->code == R4_CHK_SPACE_LEAK ? CHK_M_LEAK_MORE :
			 CHK_M_FREE_MORE, R4_CHECK_NO_BLOCK,
			 CHK_U(n, r->count - SPACE_MAX_LINES),
			 CHK_U(count, r->count), CHK_U(blocks, r->blocks));
}

/* Compare len bits of disk with want from block start. */
static void compare_bits(struct chk *c, const uint8_t *disk,
			 const uint8_t *want, uint64_t start, uint64_t len,
			 struct run *leak, struct run *freed)
{
	for (uint64_t j = 0; j * 8 < len; j++) {
		uint8_t d = disk[j], w = want[j];

		c->rep->used_blocks += (uint64_t)__builtin_popcount(w);
		if (d == w)
			continue;
		for (unsigned bit = 0; bit < 8 && j * 8 + bit < len; bit++) {
			unsigned dm = (d >> bit) & 1, wm = (w >> bit) & 1;

			if (dm && !wm)
				run_add(c, leak, start + j * 8 + bit);
			else if (!dm && wm)
				run_add(c, freed, start + j * 8 + bit);
		}
	}
}

/* What region k's bits should be, into c->buf[0] (free during this
 * pass): the used map plus the region's own bitmap block at bit bmbit. */
static void expected(struct chk *c, uint64_t k, uint64_t bmbit)
{
	const uint8_t *chunk = chk_map_chunk(&c->used, k);
	size_t n = (size_t)(fmt_bitmap_bpb(c->bs) / 8);

	if (chunk)
		memcpy(c->buf[0], chunk, n);
	else
		memset(c->buf[0], 0, n);
	if (bmbit < fmt_bitmap_bpb(c->bs))
		c->buf[0][bmbit >> 3] |= (uint8_t)(1u << (bmbit & 7));
}

static int check_region(struct chk *c, uint64_t k, struct run *leak,
			struct run *freed, uint64_t *zeros)
{
	uint64_t blk = fmt_bitmap_blk(k, c->bs);
	uint64_t start = fmt_bitmap_region_start(k, c->bs);
	uint64_t len = fmt_bitmap_region_len(k, c->blocks, c->bs);
	uint64_t bpb = fmt_bitmap_bpb(c->bs), z;
	const char *why;
	int rc;

	rc = vol_read_block(c->vol, blk, c->scratch, "bitmap block", c->err);
	if (rc)
		return rc;
	why = fmt_bitmap_verify(c->scratch, c->bs);
	if (why)
		CHK_SAY(c, CHK_M_BITMAP_CSUM, blk, -1, NULL,
			CHK_U(first, start), CHK_U(last, start + len - 1),
			CHK_S(what, why));
	expected(c, k, blk - start);
	compare_bits(c, c->scratch + FMT_BITMAP_OFF_BITS, c->buf[0], start,
		     len, leak, freed);
	*zeros += fmt_bitmap_count_zero(c->scratch, 0, len);
	z = fmt_bitmap_find_zero(c->scratch, len, bpb);
	if (z < bpb)
		CHK_SAY(c, CHK_M_BITMAP_TAIL, blk, -1, NULL, CHK_U(bit, z),
			CHK_U(at, start + z));
	return 0;
}

static void check_counts(struct chk *c, uint64_t zeros)
{
	const struct r4_vol *vol = c->vol;

	c->rep->free_blocks = zeros;
	/* The super block's own count (a writable open lays the footer's
	 * over vol->sb: both must be right, doc/format.md §10.9). */
	if (vol->sb_own.free_blocks != zeros)
		CHK_SAY(c, CHK_M_FREE_COUNT, fmt_blk_format40(c->bs), -1, NULL,
			CHK_U(have, vol->sb_own.free_blocks),
			CHK_U(want, zeros));
	if (vol->jf.last_flushed_tx && vol->jf.free_blocks != zeros)
		CHK_SAY(c, CHK_M_FREE_COUNT_FOOTER,
			fmt_blk_journal_footer(c->bs), -1, NULL,
			CHK_U(have, vol->jf.free_blocks), CHK_U(want, zeros));
}

int chk_space(struct chk *c)
{
	struct run leak = { .code = R4_CHK_SPACE_LEAK };
	struct run freed = { .code = R4_CHK_SPACE_FREE };
	uint64_t n = fmt_bitmap_count(c->blocks, c->bs), zeros = 0;
	int rc;

	for (uint64_t k = 0; k < n; k++) {
		rc = check_region(c, k, &leak, &freed, &zeros);
		if (rc)
			return rc;
		if (k % 64 == 0)
			chk_progress(c, "space", k, n);
	}
	run_end(c, &leak);
	run_end(c, &freed);
	check_counts(c, zeros);
	chk_progress(c, "space", n, n);
	return 0;
}
