/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: bbox40 ("black box") items as used for safe links (doc/format.md
 * §5.8; kernel reiser4 safe_link.c): the stat-data key of the file,
 * then, for truncate links only, the u64 size to truncate to. */
#include "item.h"
#include "endian.h"
#include "errors.h"

#define BBOX40_SIZE_FIELD 8

_Static_assert(FMT_KEY_LARGE_SIZE + BBOX40_SIZE_FIELD == 40,
	       "truncate safe link body is 40 bytes with large keys");

int fmt_bbox40_decode(const uint8_t *body, size_t len,
		      enum fmt_key_policy pol, struct fmt_bbox40 *out)
{
	size_t ks = fmt_key_size(pol);

	if (len != ks && len != ks + BBOX40_SIZE_FIELD)
		return R4_ECORRUPT;
	fmt_key_decode(body, pol, &out->sdkey);
	out->has_size = len != ks;
	out->size = out->has_size ? get_le64(body + ks) : 0;
	return 0;
}

size_t fmt_bbox40_size(const struct fmt_bbox40 *in, enum fmt_key_policy pol)
{
	return fmt_key_size(pol) + (in->has_size ? BBOX40_SIZE_FIELD : 0);
}

int fmt_bbox40_encode(const struct fmt_bbox40 *in, enum fmt_key_policy pol,
		      uint8_t *buf, size_t buflen)
{
	if (buflen < fmt_bbox40_size(in, pol))
		return R4_EINVAL;
	fmt_key_encode(&in->sdkey, pol, buf);
	if (in->has_size)
		put_le64(buf + fmt_key_size(pol), in->size);
	return 0;
}

void fmt_bbox40_key(struct fmt_key *k, uint64_t oid,
		    enum fmt_safelink_type type)
{
	k->el[0] = FMT_SAFELINK_LOCALITY << 4 | FMT_KEY_FILE_NAME;
	k->el[1] = 0;
	k->el[2] = oid;
	k->el[3] = (uint64_t)type;
}
