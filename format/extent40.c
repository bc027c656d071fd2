/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: extent40 items, arrays of (start, width) units (doc/format.md
 * §5.4). All arithmetic on disk values is overflow-checked. */
#include "item.h"
#include "endian.h"
#include "errors.h"

_Static_assert(FMT_EXTENT40_OFF_WIDTH == FMT_EXTENT40_OFF_START + 8 &&
	       FMT_EXTENT40_OFF_WIDTH + 8 == FMT_EXTENT40_UNIT_SIZE,
	       "extent40 unit: start u64, width u64");

int fmt_extent40_units(const uint8_t *body, size_t len)
{
	(void)body;
	if (len == 0 || len % FMT_EXTENT40_UNIT_SIZE != 0 ||
	    len / FMT_EXTENT40_UNIT_SIZE > 65535)
		return R4_ECORRUPT;
	return (int)(len / FMT_EXTENT40_UNIT_SIZE);
}

void fmt_extent40_unit_decode(const uint8_t *buf, struct fmt_extent40_unit *u)
{
	u->start = get_le64(buf + FMT_EXTENT40_OFF_START);
	u->width = get_le64(buf + FMT_EXTENT40_OFF_WIDTH);
}

void fmt_extent40_unit_encode(const struct fmt_extent40_unit *u, uint8_t *buf)
{
	put_le64(buf + FMT_EXTENT40_OFF_START, u->start);
	put_le64(buf + FMT_EXTENT40_OFF_WIDTH, u->width);
}

int fmt_extent40_unit(const uint8_t *body, size_t len, unsigned i,
		      struct fmt_extent40_unit *u)
{
	int units = fmt_extent40_units(body, len);

	if (units < 0)
		return units;
	if (i >= (unsigned)units)
		return R4_ERANGE;
	fmt_extent40_unit_decode(body + (size_t)i * FMT_EXTENT40_UNIT_SIZE, u);
	return 0;
}

int fmt_extent40_unit_put(uint8_t *body, size_t len, unsigned i,
			  const struct fmt_extent40_unit *u)
{
	int units = fmt_extent40_units(body, len);

	if (units < 0)
		return units;
	if (i >= (unsigned)units)
		return R4_ERANGE;
	fmt_extent40_unit_encode(u, body + (size_t)i * FMT_EXTENT40_UNIT_SIZE);
	return 0;
}

enum fmt_extent_kind fmt_extent40_kind(const struct fmt_extent40_unit *u)
{
	if (u->start == 0)
		return FMT_EXTENT_HOLE;
	if (u->start == 1)
		return FMT_EXTENT_UNALLOCATED;
	return FMT_EXTENT_ALLOCATED;
}

int fmt_extent40_unit_end(const struct fmt_extent40_unit *u, uint64_t *end)
{
	if (fmt_extent40_kind(u) != FMT_EXTENT_ALLOCATED)
		return R4_EINVAL;
	if (u->width > UINT64_MAX - u->start)
		return R4_ERANGE;
	*end = u->start + u->width;
	return 0;
}

int fmt_extent40_span(const uint8_t *body, size_t len, size_t blksize,
		      uint64_t *bytes)
{
	struct fmt_extent40_unit u;
	uint64_t blocks = 0;
	int units = fmt_extent40_units(body, len);

	if (units < 0)
		return units;
	if (blksize == 0)
		return R4_EINVAL;
	for (int i = 0; i < units; i++) {
		fmt_extent40_unit_decode(body + (size_t)i *
					 FMT_EXTENT40_UNIT_SIZE, &u);
		if (u.width > UINT64_MAX - blocks)
			return R4_ERANGE;
		blocks += u.width;
	}
	if (blocks > UINT64_MAX / blksize)
		return R4_ERANGE;
	*bytes = blocks * blksize;
	return 0;
}

const char *fmt_extent40_verify(const uint8_t *body, size_t len,
				uint64_t nr_blocks, size_t blksize,
				int *bad_unit)
{
	struct fmt_extent40_unit u;
	uint64_t end, bytes;
	int units = fmt_extent40_units(body, len);
	int dummy;

	if (!bad_unit)
		bad_unit = &dummy;
	*bad_unit = -1;
	if (units < 0)
		return "extent40 item length is not a non-zero multiple of 16";
	for (int i = 0; i < units; i++) {
		*bad_unit = i;
		fmt_extent40_unit_decode(body + (size_t)i *
					 FMT_EXTENT40_UNIT_SIZE, &u);
		if (u.width == 0)
			return "extent40 unit width is 0";
		if (fmt_extent40_kind(&u) != FMT_EXTENT_ALLOCATED)
			continue;
		if (fmt_extent40_unit_end(&u, &end) != 0)
			return "extent40 unit start + width overflows";
		if (end > nr_blocks)
			return "extent40 unit points past the end of the volume";
	}
	*bad_unit = -1;
	if (fmt_extent40_span(body, len, blksize, &bytes) != 0)
		return "extent40 item covers more than 2^64 bytes";
	return NULL;
}
