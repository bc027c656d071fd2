/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: tail (plain40) items hold raw file bytes, one unit per byte
 * (doc/format.md §5.5); only the offset arithmetic needs a helper. */
#include "item.h"
#include "errors.h"

int fmt_tail40_end(uint64_t key_offset, size_t len, uint64_t *end)
{
	if (len == 0)
		return R4_ECORRUPT;
	if ((uint64_t)len > UINT64_MAX - key_offset)
		return R4_ERANGE;
	*end = key_offset + len;
	return 0;
}
