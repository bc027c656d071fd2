/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: space for the packer.
 *
 * Blocks are handed out in increasing order from the first usable block.
 * Positions that are bitmap blocks (k * 32736) or could be backup blocks
 * for some volume size are never handed out, so nothing placed depends
 * on the final block count; the candidates a smaller volume does not use
 * simply stay free. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/pack/packer.h"
#include "libimage/util/err.h"
#include "r4/util.h"
#include "format/bitmap.h"

int pack_space_setup(struct r4_pack *b, struct r4_error *err)
{
	b->ncand = fmt_backup_blocks(1ULL << 44, b->bs, b->cand,
				     sizeof(b->cand) / sizeof(b->cand[0]));
	if (b->ncand > sizeof(b->cand) / sizeof(b->cand[0]))
		return r4i_fail(err, R4_ERANGE, "too many backup positions");
	b->cursor = fmt_blk_first_usable(b->bs);
	b->hi = b->cursor;
	b->used_cap = 1 << 20;
	b->used = calloc(b->used_cap / 8, 1);
	b->wb.buf = malloc((size_t)PACK_WBUF_BLOCKS * b->bs);
	if (!b->used || !b->wb.buf)
		return r4i_fail(err, -ENOMEM, "out of memory");
	return 0;
}

static int reserved(const struct r4_pack *b, uint64_t blk)
{
	size_t lo = 0, hi = b->ncand;

	if (blk < fmt_blk_first_usable(b->bs) ||
	    blk % fmt_bitmap_bpb(b->bs) == 0)
		return 1;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (b->cand[mid] == blk)
			return 1;
		if (b->cand[mid] < blk)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

void pack_alloc_reserve_area(struct r4_pack *b, uint64_t k)
{
	uint64_t c = b->cursor, i = 0;

	/* No run longer than the blocks between two bitmap blocks exists;
	 * half of that leaves room for backup positions too. A larger
	 * estimate saves nothing: the upper nodes are then placed one by
	 * one (upper.c). */
	if (k > fmt_bitmap_bpb(b->bs) / 2)
		k = 0;
	while (i < k) {
		if (reserved(b, c + i)) {
			c += i + 1;
			i = 0;
			continue;
		}
		i++;
	}
	b->res_start = c;
	b->res_len = k;
	b->cursor = c + k;
	if (b->cursor > b->hi)
		b->hi = b->cursor;
}

static int mark_used(struct r4_pack *b, uint64_t start, uint64_t n)
{
	if (start + n > b->used_cap) {
		size_t had = (size_t)(b->used_cap / 8), cap = had;

		if (start + n > (uint64_t)SIZE_MAX - 7 ||
		    R4_RESERVE(b->used, cap, (size_t)((start + n + 7) / 8), 1))
			return -ENOMEM;
		memset(b->used + had, 0, cap - had);
		b->used_cap = (uint64_t)cap * 8;
	}
	for (uint64_t i = start; i < start + n; i++)
		b->used[i >> 3] |= (uint8_t)(1u << (i & 7));
	return 0;
}

int pack_alloc_mark(struct r4_pack *b, uint64_t start, uint64_t n,
	       struct r4_error *err)
{
	if (mark_used(b, start, n))
		return r4i_fail(err, -ENOMEM, "out of memory");
	b->allocated += n;
	return 0;
}

void pack_alloc_free(struct r4_pack *b, uint64_t start, uint64_t n)
{
	for (uint64_t i = start; i < start + n; i++)
		if (used_test(b, i)) {
			b->used[i >> 3] &= (uint8_t)~(1u << (i & 7));
			b->allocated--;
		}
}

int pack_full(const struct r4_pack *b, struct r4_error *err)
{
	return r4i_fail(err, R4_ENOSPC, "%s: the volume is full: its %llu "
		"blocks (%llu KiB) are too few for the source; give a larger "
		"--size or --size auto", b->target,
		(unsigned long long)b->limit,
		(unsigned long long)(b->limit * b->bs / 1024));
}

int pack_alloc_run(struct r4_pack *b, uint64_t want, uint64_t *start,
	      uint64_t *got, struct r4_error *err)
{
	uint64_t c = b->cursor, n = 1;

	while (reserved(b, c))
		c++;
	if (b->limit && c >= b->limit) {
		/* Say how far it got: the size needed is more than this. */
		uint64_t kib = b->limit * b->bs / 1024;

		if (b->total_bytes)
			return r4i_fail(err, R4_ENOSPC, "%s: the volume is "
				"full: its %llu blocks (%llu KiB) hold %llu of "
				"%llu bytes of file data; it needs more (--size "
				"auto measures the source)", b->target,
				(unsigned long long)b->limit,
				(unsigned long long)kib,
				(unsigned long long)b->done_bytes,
				(unsigned long long)b->total_bytes);
		return pack_full(b, err);
	}
	while (n < want && !reserved(b, c + n) &&
	       (!b->limit || c + n < b->limit))
		n++;
	if (mark_used(b, c, n))
		return r4i_fail(err, -ENOMEM, "out of memory");
	*start = c;
	*got = n;
	b->cursor = c + n;
	if (b->cursor > b->hi)
		b->hi = b->cursor;
	b->allocated += n;
	return 0;
}
