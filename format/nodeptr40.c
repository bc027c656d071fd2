/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: nodeptr40 (internal) items: the child's block number (format
 * map section 5.7). */
#include "item.h"
#include "endian.h"
#include "errors.h"

_Static_assert(FMT_NODEPTR40_SIZE == sizeof(uint64_t),
	       "nodeptr40 body is one u64");

int fmt_nodeptr40_decode(const uint8_t *body, size_t len, uint64_t *child)
{
	if (len != FMT_NODEPTR40_SIZE)
		return R4_ECORRUPT;
	*child = get_le64(body);
	return 0;
}

void fmt_nodeptr40_encode(uint64_t child, uint8_t *buf)
{
	put_le64(buf, child);
}
