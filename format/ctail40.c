/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: ctail40 items (cryptcompress file bodies, doc/format.md
 * §5.6; doc/compress.md §3.1): one cluster-shift byte, then disk cluster bytes (one unit each). */
#include <string.h>
#include "item.h"
#include "errors.h"

_Static_assert(FMT_CTAIL40_HDR_SIZE == 1, "ctail40 header is the shift byte");
_Static_assert(FMT_CTAIL40_MIN_SHIFT <= FMT_CTAIL40_MAX_SHIFT &&
	       FMT_CTAIL40_MAX_SHIFT < FMT_CTAIL40_UNPREPPED,
	       "ctail40 shift range is below the unprepped marker");

static int ctail_ok(uint8_t shift, size_t units)
{
	if (units == 0)
		return 0;
	if (shift == FMT_CTAIL40_UNPREPPED)
		return units == 1;
	return shift >= FMT_CTAIL40_MIN_SHIFT && shift <= FMT_CTAIL40_MAX_SHIFT;
}

int fmt_ctail40_decode(const uint8_t *body, size_t len, struct fmt_ctail40 *out)
{
	if (len < FMT_CTAIL40_HDR_SIZE || !ctail_ok(body[0], len - 1))
		return R4_ECORRUPT;
	out->shift = body[0];
	out->data = body + FMT_CTAIL40_HDR_SIZE;
	out->len = len - FMT_CTAIL40_HDR_SIZE;
	return 0;
}

size_t fmt_ctail40_size(const struct fmt_ctail40 *in)
{
	return FMT_CTAIL40_HDR_SIZE + in->len;
}

int fmt_ctail40_encode(const struct fmt_ctail40 *in, uint8_t *buf,
		       size_t buflen)
{
	if (!ctail_ok(in->shift, in->len) || !in->data ||
	    in->len >= 65535 || buflen < fmt_ctail40_size(in))
		return R4_EINVAL;
	buf[0] = in->shift;
	memcpy(buf + FMT_CTAIL40_HDR_SIZE, in->data, in->len);
	return 0;
}
