/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "r4/util.h"
#include "libimage/alloc/space.h"
#include "libimage/util/err.h"
#include "format/bitmap.h"

int space_init(struct space *s, struct io_dev *dev, uint32_t blksize,
	       uint64_t block_count, struct r4_error *err)
{
	memset(s, 0, sizeof(*s));
	s->dev = dev;
	s->blksize = blksize;
	s->block_count = block_count;
	s->bpb = fmt_bitmap_bpb(blksize);
	s->nregions = fmt_bitmap_count(block_count, blksize);
	s->map = calloc(s->nregions, sizeof(*s->map));
	s->dirty = calloc(s->nregions, 1);
	s->bad_csum = calloc(s->nregions, 1);
	if (!s->map || !s->dirty || !s->bad_csum) {
		space_fini(s);
		return r4i_fail(err, -ENOMEM, "%s: out of memory for %llu "
			       "bitmap blocks", dev->path,
			       (unsigned long long)s->nregions);
	}
	return 0;
}

void space_fini(struct space *s)
{
	if (s->map)
		for (uint64_t k = 0; k < s->nregions; k++)
			free(s->map[k]);
	free(s->map);
	free(s->dirty);
	free(s->bad_csum);
	free(s->pins);
	memset(s, 0, sizeof(*s));
}

int space_load(struct space *s, uint64_t k, struct r4_error *err)
{
	const char *why;
	uint64_t blk;
	uint8_t *buf;
	int rc;

	if (k >= s->nregions)
		return r4i_fail(err, R4_ERANGE, "%s: bitmap region %llu is "
			       "past the last one (%llu)", s->dev->path,
			       (unsigned long long)k,
			       (unsigned long long)s->nregions);
	if (s->map[k])
		return 0;
	buf = malloc(s->blksize);
	if (!buf)
		return r4i_fail(err, -ENOMEM, "%s: out of memory",
			       s->dev->path);
	blk = fmt_bitmap_blk(k, s->blksize);
	rc = io_read(s->dev, buf, s->blksize, blk * s->blksize, err);
	if (rc) {
		free(buf);
		return r4i_fail_over(err, rc, "%s: cannot read bitmap block "
				    "%llu (region %llu): %s", s->dev->path,
				    (unsigned long long)blk,
				    (unsigned long long)k, r4_strerror(rc));
	}
	why = fmt_bitmap_verify(buf, s->blksize);
	/* Read-only users (icheck, forensics) see the bits as the best
	 * knowledge there is; only a writer, which would allocate from
	 * them, refuses the block. */
	if (why && (s->keep_bad || s->dev->readonly)) {
		s->bad_csum[k] = 1;
		s->map[k] = buf;
		return 0;
	}
	if (why) {
		free(buf);
		s->bad_csum[k] = 1;
		return r4i_fail(err, R4_ECORRUPT, "%s: bitmap block %llu (region "
			       "%llu): %s: the free space map cannot be "
			       "trusted; nothing is written until r4fsck has "
			       "checked the volume", s->dev->path,
			       (unsigned long long)blk, (unsigned long long)k,
			       why);
	}
	s->bad_csum[k] = 0;
	s->map[k] = buf;
	return 0;
}

int space_load_all(struct space *s, struct r4_error *err)
{
	for (uint64_t k = 0; k < s->nregions; k++) {
		int rc = space_load(s, k, err);

		if (rc)
			return rc;
	}
	return 0;
}

static int locate(struct space *s, uint64_t blk, uint64_t *k, uint64_t *bit,
		  struct r4_error *err)
{
	if (blk >= s->block_count)
		return r4i_fail(err, R4_ERANGE, "%s: block %llu is past the end "
			       "of the volume (%llu blocks)", s->dev->path,
			       (unsigned long long)blk,
			       (unsigned long long)s->block_count);
	*k = blk / s->bpb;
	*bit = blk % s->bpb;
	return space_load(s, *k, err);
}

/* Index of the first pin whose end is past blk. */
static size_t pin_at(const struct space *s, uint64_t blk)
{
	size_t lo = 0, hi = s->npins;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->pins[mid].end <= blk)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The end of the pinned range holding blk, or blk when not pinned. */
static uint64_t pinned_until(const struct space *s, uint64_t blk)
{
	size_t i = pin_at(s, blk);

	return i < s->npins && s->pins[i].start <= blk ? s->pins[i].end : blk;
}

int space_pin(struct space *s, uint64_t start, uint64_t count)
{
	uint64_t end;
	size_t i, j;

	if (start >= s->block_count || !count)
		return 0;
	end = count > s->block_count - start ? s->block_count : start + count;
	i = pin_at(s, start ? start - 1 : 0);	/* may touch on the left */
	for (j = i; j < s->npins && s->pins[j].start <= end; j++) {
		if (s->pins[j].start < start)
			start = s->pins[j].start;
		if (s->pins[j].end > end)
			end = s->pins[j].end;
	}
	if (j == i) {		/* a new range at i */
		if (R4_RESERVE(s->pins, s->pins_cap, s->npins + 1, 64))
			return -ENOMEM;
		memmove(&s->pins[i + 1], &s->pins[i],
			(s->npins - i) * sizeof(*s->pins));
		s->npins++;
	} else if (j > i + 1) {	/* ranges i..j-1 become one */
		memmove(&s->pins[i + 1], &s->pins[j],
			(s->npins - j) * sizeof(*s->pins));
		s->npins -= j - i - 1;
	}
	s->pins[i] = (struct space_pin){ start, end };
	return 0;
}

void space_unpin(struct space *s, uint64_t start, uint64_t count)
{
	uint64_t end = start + count;
	size_t i = pin_at(s, start);

	while (i < s->npins && s->pins[i].start < end) {
		struct space_pin *p = &s->pins[i];

		if (p->start < start && p->end > end) {	/* split */
			uint64_t tail = p->end;

			p->end = start;
			/* Without memory for the tail's own range the whole
			 * range stays pinned (space_pin changed nothing): a
			 * pin may guard blocks that hold kept data */
			if (space_pin(s, end, tail - end))
				s->pins[i].end = tail;
			return;
		}
		if (p->start < start) {
			p->end = start;
			i++;
		} else if (p->end > end) {
			p->start = end;
			i++;
		} else {
			memmove(p, p + 1, (s->npins - i - 1) * sizeof(*p));
			s->npins--;
		}
	}
}

int space_test(struct space *s, uint64_t blk, struct r4_error *err)
{
	uint64_t k = 0, bit = 0;
	int rc = locate(s, blk, &k, &bit, err);

	if (rc)
		return rc;
	/* a used bit answers without the search of the pins */
	if (fmt_bitmap_test(s->map[k], bit))
		return 1;
	return pinned_until(s, blk) != blk;
}

int space_mark(struct space *s, uint64_t blk, int used,
	       struct r4_error *err)
{
	uint64_t k = 0, bit = 0;
	int rc = locate(s, blk, &k, &bit, err);

	if (rc)
		return rc;
	if (used)
		fmt_bitmap_set(s->map[k], bit);
	else
		fmt_bitmap_clear(s->map[k], bit);
	s->dirty[k] = 1;
	return 0;
}

int space_count_free(struct space *s, uint64_t *free_out,
		     struct r4_error *err)
{
	uint64_t total = 0;

	for (uint64_t k = 0; k < s->nregions; k++) {
		uint64_t len = fmt_bitmap_region_len(k, s->block_count,
						     s->blksize);
		int rc = space_load(s, k, err);

		if (rc)
			return rc;
		total += fmt_bitmap_count_zero(s->map[k], 0, len);
	}
	*free_out = total;
	return 0;
}

int space_count_usable(struct space *s, uint64_t *free_out,
		       struct r4_error *err)
{
	uint64_t total = 0;
	int rc = space_count_free(s, &total, err);

	/* the pins are disjoint: what each holds of the free bits, off */
	for (size_t i = 0; i < s->npins && !rc; i++) {
		uint64_t at = s->pins[i].start,
			 end = s->pins[i].end < s->block_count ?
			       s->pins[i].end : s->block_count;

		while (at < end) {
			uint64_t k = at / s->bpb, base = k * s->bpb,
				 len = fmt_bitmap_region_len(k, s->block_count,
							     s->blksize),
				 stop = end - base < len ? end - base : len;

			total -= fmt_bitmap_count_zero(s->map[k], at - base,
						       stop);
			at = base + len;
		}
	}
	*free_out = total;
	return rc;
}

int space_find_free(struct space *s, uint64_t from, uint64_t *out,
		    struct r4_error *err)
{
	for (uint64_t k = from / s->bpb; k < s->nregions; k++) {
		uint64_t len = fmt_bitmap_region_len(k, s->block_count,
						     s->blksize);
		uint64_t start = k == from / s->bpb ? from % s->bpb : 0, bit;
		int rc = space_load(s, k, err);

		if (rc)
			return rc;
		while ((bit = fmt_bitmap_find_zero(s->map[k], start, len)) <
		       len) {
			uint64_t blk = k * s->bpb + bit,
				 skip = pinned_until(s, blk);

			if (skip == blk) {
				*out = blk;
				return 0;
			}
			if (skip >= (k + 1) * s->bpb)
				break;	/* pinned to the region's end */
			start = skip - k * s->bpb;
		}
	}
	return r4i_fail(err, R4_ENOSPC, "%s: no free block at or after "
		       "block %llu", s->dev->path, (unsigned long long)from);
}

int space_next_used(struct space *s, uint64_t from, uint64_t *out,
		    struct r4_error *err)
{
	size_t p = pin_at(s, from);
	uint64_t pin = s->block_count;

	/* the first pinned block at or after from: pins lie in the volume */
	if (p < s->npins)
		pin = s->pins[p].start > from ? s->pins[p].start : from;
	for (uint64_t k = from / s->bpb; k < s->nregions && k * s->bpb < pin;
	     k++) {
		uint64_t len = fmt_bitmap_region_len(k, s->block_count,
						     s->blksize);
		uint64_t start = k == from / s->bpb ? from % s->bpb : 0, bit;
		int rc = space_load(s, k, err);

		if (rc)
			return rc;
		bit = fmt_bitmap_find_set(s->map[k], start, len);
		if (bit < len) {
			uint64_t blk = k * s->bpb + bit;

			*out = blk < pin ? blk : pin;
			return 0;
		}
	}
	*out = pin < s->block_count ? pin : s->block_count;
	return 0;
}

void space_unload(struct space *s)
{
	for (uint64_t k = 0; k < s->nregions; k++) {
		free(s->map[k]);
		s->map[k] = NULL;
		s->dirty[k] = 0;
		s->bad_csum[k] = 0;
	}
}
