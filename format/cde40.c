/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: cde40 compound directory entry items (doc/format.md §5.3).
 *
 * Layout: u16 units; units x unit header (entry key hash part + u16 body
 * offset from the item start); then the bodies in header order: the obj
 * key id of the target and, for long names only, the name and a NUL. */
#include <string.h>
#include "item.h"
#include "endian.h"
#include "errors.h"

_Static_assert(FMT_CDE40_HASH_LARGE_SIZE + 2 == FMT_CDE40_UH_LARGE_SIZE,
	       "large cde40 unit header: 3 x u64 + u16 offset");
_Static_assert(FMT_CDE40_HASH_SHORT_SIZE + 2 == FMT_CDE40_UH_SHORT_SIZE,
	       "short cde40 unit header: 2 x u64 + u16 offset");
_Static_assert(FMT_CDE40_OBJID_LARGE_SIZE == 3 * 8 &&
	       FMT_CDE40_OBJID_SHORT_SIZE == 2 * 8,
	       "obj key id: 3 (large) or 2 (short) u64 words");
_Static_assert(FMT_CDE40_UH_LARGE_SIZE + FMT_CDE40_OBJID_LARGE_SIZE == 50,
	       "a short-name entry accounts 50 bytes (large keys)");

#define MAX_ITEM_SIZE 65535u

/* The sizes below, for this file's own use: a call of the exported
 * ones goes through the PLT in the shared library. */
static size_t uh_size(enum fmt_key_policy pol)
{
	return pol == FMT_KEY_LARGE ? FMT_CDE40_UH_LARGE_SIZE
				    : FMT_CDE40_UH_SHORT_SIZE;
}

static size_t objid_size(enum fmt_key_policy pol)
{
	return pol == FMT_KEY_LARGE ? FMT_CDE40_OBJID_LARGE_SIZE
				    : FMT_CDE40_OBJID_SHORT_SIZE;
}

size_t fmt_cde40_unit_header_size(enum fmt_key_policy pol)
{
	return uh_size(pol);
}

size_t fmt_cde40_objid_size(enum fmt_key_policy pol)
{
	return objid_size(pol);
}

static size_t hash_size(enum fmt_key_policy pol)
{
	return pol == FMT_KEY_LARGE ? FMT_CDE40_HASH_LARGE_SIZE
				    : FMT_CDE40_HASH_SHORT_SIZE;
}

static int units_of(const uint8_t *body, size_t len, enum fmt_key_policy pol)
{
	size_t units;

	if (len < FMT_CDE40_UNITS_SIZE)
		return R4_ECORRUPT;
	units = get_le16(body);
	if (units * uh_size(pol) >
	    len - FMT_CDE40_UNITS_SIZE)
		return R4_ECORRUPT;
	return (int)units;
}

int fmt_cde40_units(const uint8_t *body, size_t len, enum fmt_key_policy pol)
{
	return units_of(body, len, pol);
}

/* Position of unit header i from the item start. */
static size_t uh_pos(enum fmt_key_policy pol, size_t i)
{
	return FMT_CDE40_UNITS_SIZE + i * uh_size(pol);
}

static size_t unit_offset(const uint8_t *body, enum fmt_key_policy pol,
			  unsigned i)
{
	return get_le16(body + uh_pos(pol, i) + hash_size(pol));
}

/* Hash part and obj key id; the caller checked both are in bounds. */
static void decode_fixed(const uint8_t *uh, const uint8_t *ob,
			 enum fmt_key_policy pol, struct fmt_cde40_entry *e)
{
	memset(e, 0, sizeof(*e));
	if (pol == FMT_KEY_LARGE) {
		e->ordering = get_le64(uh);
		e->objectid = get_le64(uh + 8);
		e->offset = get_le64(uh + 16);
		e->target.el[0] = get_le64(ob);
		e->target.el[1] = get_le64(ob + 8);
		e->target.el[2] = get_le64(ob + 16);
	} else {
		e->objectid = get_le64(uh);
		e->offset = get_le64(uh + 8);
		e->target.el[0] = get_le64(ob);
		e->target.el[2] = get_le64(ob + 8);
	}
}

static int is_long(const struct fmt_cde40_entry *e, enum fmt_key_policy pol)
{
	uint64_t w = pol == FMT_KEY_LARGE ? e->ordering : e->objectid;

	return (w & FMT_KEY_LONGNAME_BIT) != 0;
}

int fmt_cde40_entry_is_long(const struct fmt_cde40_entry *e,
			    enum fmt_key_policy pol)
{
	return is_long(e, pol);
}

/* Length of unit i's body at off (units in the item): the object id,
 * then for a long name the name up to its NUL, which must end before
 * the next body when that one is sane, else before the item's end; 0
 * when it is out of the item or the name is empty. The long-name bit is
 * the first word of the hash part under both key policies. The one rule
 * of fmt_cde40_entry and fmt_cde40_verify. */
static size_t body_len_at(const uint8_t *body, size_t len,
			  enum fmt_key_policy pol, unsigned units, unsigned i,
			  size_t off)
{
	size_t obs = objid_size(pol), limit = len, next;
	const uint8_t *nul;

	if (off > len || obs > len - off)
		return 0;
	if (!(get_le64(body + uh_pos(pol, i)) & FMT_KEY_LONGNAME_BIT))
		return obs;
	if (i + 1 < units) {
		next = unit_offset(body, pol, i + 1);
		if (next > off && next <= len)
			limit = next;
	}
	if (limit - off <= obs)
		return 0;
	nul = memchr(body + off + obs, 0, limit - off - obs);
	if (!nul || nul == body + off + obs)
		return 0;
	return (size_t)(nul - body) - off + 1;
}

int fmt_cde40_entry(const uint8_t *body, size_t len, enum fmt_key_policy pol,
		    unsigned i, struct fmt_cde40_entry *e)
{
	int units = units_of(body, len, pol);
	size_t first, off, n, obs = objid_size(pol);

	if (units < 0)
		return units;
	if (i >= (unsigned)units)
		return R4_ERANGE;
	first = uh_pos(pol, (size_t)units);
	off = unit_offset(body, pol, i);
	if (off < first || off > len || obs > len - off)
		return R4_ECORRUPT;
	decode_fixed(body + uh_pos(pol, i), body + off, pol, e);
	e->body_offset = (uint16_t)off;
	if (!is_long(e, pol))
		return 0;
	n = body_len_at(body, len, pol, (unsigned)units, i, off);
	if (!n)
		return R4_ECORRUPT;
	e->name = body + off + obs;
	e->name_len = n - obs - 1;
	return 0;
}

void fmt_cde40_entry_key(const struct fmt_key *item_key,
			 const struct fmt_cde40_entry *e, struct fmt_key *out)
{
	out->el[0] = item_key->el[0];
	out->el[1] = e->ordering;
	out->el[2] = e->objectid;
	out->el[3] = e->offset;
}

static size_t entry_body_size(const struct fmt_cde40_entry *e,
			      enum fmt_key_policy pol)
{
	size_t n = objid_size(pol);

	return is_long(e, pol) ? n + e->name_len + 1 : n;
}

/* The hash part of unit header uh as (ordering, objectid, offset). */
static void uh_hash(const uint8_t *uh, enum fmt_key_policy pol, uint64_t h[3])
{
	if (pol == FMT_KEY_LARGE) {
		h[0] = get_le64(uh);
		h[1] = get_le64(uh + 8);
		h[2] = get_le64(uh + 16);
	} else {
		h[0] = 0;
		h[1] = get_le64(uh);
		h[2] = get_le64(uh + 8);
	}
}

static int h_cmp(const uint64_t a[3], const uint64_t b[3])
{
	for (int j = 0; j < 3; j++)
		if (a[j] != b[j])
			return a[j] < b[j] ? -1 : 1;
	return 0;
}

/* One pass over the unit headers, no entry decoded: the checks (and
 * their order) of decoding every entry with fmt_cde40_entry. */
const char *fmt_cde40_verify(const uint8_t *body, size_t len,
			     enum fmt_key_policy pol, int *bad_unit)
{
	uint64_t h[3], prev[3] = { 0, 0, 0 };
	int units = units_of(body, len, pol);
	size_t expect, n;
	int dummy;

	if (!bad_unit)
		bad_unit = &dummy;
	*bad_unit = -1;
	if (units < 0)
		return "cde40 unit headers do not fit in the item";
	if (units == 0)
		return "cde40 item has no units";
	expect = uh_pos(pol, (size_t)units);
	for (int i = 0; i < units; i++) {
		*bad_unit = i;
		if (unit_offset(body, pol, (unsigned)i) != expect)
			return "cde40 entry body is not right after the "
			       "previous one";
		n = body_len_at(body, len, pol, (unsigned)units, (unsigned)i,
				expect);
		if (!n)
			return "cde40 entry body or name is out of the item";
		expect += n;
		uh_hash(body + uh_pos(pol, (size_t)i), pol, h);
		if (i > 0 && h_cmp(prev, h) > 0)
			return "cde40 entries are not sorted";
		memcpy(prev, h, sizeof(h));
	}
	*bad_unit = -1;
	if (expect != len)
		return "cde40 last entry body does not end at the item end";
	return NULL;
}

int fmt_cde40_size(const struct fmt_cde40_entry *e, size_t n,
		   enum fmt_key_policy pol, size_t *size)
{
	size_t total = FMT_CDE40_UNITS_SIZE;

	if (n == 0 || n > MAX_ITEM_SIZE)
		return R4_EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (is_long(&e[i], pol) &&
		    (!e[i].name || e[i].name_len == 0 ||
		     e[i].name_len > MAX_ITEM_SIZE ||
		     memchr(e[i].name, 0, e[i].name_len)))
			return R4_EINVAL;
		total += uh_size(pol) +
			 entry_body_size(&e[i], pol);
		if (total > MAX_ITEM_SIZE)
			return R4_EINVAL;
	}
	*size = total;
	return 0;
}

static void encode_entry(const struct fmt_cde40_entry *e,
			 enum fmt_key_policy pol, uint8_t *uh, uint8_t *ob,
			 uint16_t off)
{
	size_t obs = objid_size(pol);

	if (pol == FMT_KEY_LARGE) {
		put_le64(uh, e->ordering);
		put_le64(uh + 8, e->objectid);
		put_le64(uh + 16, e->offset);
		put_le64(ob, e->target.el[0]);
		put_le64(ob + 8, e->target.el[1]);
		put_le64(ob + 16, e->target.el[2]);
	} else {
		put_le64(uh, e->objectid);
		put_le64(uh + 8, e->offset);
		put_le64(ob, e->target.el[0]);
		put_le64(ob + 8, e->target.el[2]);
	}
	put_le16(uh + hash_size(pol), off);
	if (is_long(e, pol)) {
		memcpy(ob + obs, e->name, e->name_len);
		ob[obs + e->name_len] = 0;
	}
}

int fmt_cde40_encode(const struct fmt_cde40_entry *e, size_t n,
		     enum fmt_key_policy pol, uint8_t *buf, size_t buflen)
{
	size_t size, off;
	int err = fmt_cde40_size(e, n, pol, &size);

	if (err)
		return err;
	if (buflen < size)
		return R4_EINVAL;
	put_le16(buf, (uint16_t)n);
	off = uh_pos(pol, n);
	for (size_t i = 0; i < n; i++) {
		encode_entry(&e[i], pol, buf + uh_pos(pol, i), buf + off,
			     (uint16_t)off);
		off += entry_body_size(&e[i], pol);
	}
	return 0;
}

size_t fmt_cde40_entry_bytes(enum fmt_key_policy pol, size_t name_len)
{
	size_t n = uh_size(pol) + objid_size(pol);

	return fmt_entry_name_stored(pol, name_len) ? n + name_len + 1 : n;
}

int fmt_cde40_seek(const uint8_t *body, size_t len, enum fmt_key_policy pol,
		   const struct fmt_key *k)
{
	uint64_t want[3] = { k->el[1], k->el[2], k->el[3] }, h[3];
	int units = units_of(body, len, pol), lo = 0, hi;

	if (units < 0)
		return units;
	for (hi = units; lo < hi;) {
		int mid = lo + (hi - lo) / 2;

		uh_hash(body + uh_pos(pol, (size_t)mid), pol, h);
		if (h_cmp(h, want) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int fmt_cde40_insert(const uint8_t *body, size_t len, enum fmt_key_policy pol,
		     unsigned i, const struct fmt_cde40_entry *e,
		     uint8_t *out, size_t outlen)
{
	int units = units_of(body, len, pol);
	size_t uhs = uh_size(pol), eb, at, first, add;

	if (units < 0 || fmt_cde40_size(e, 1, pol, &eb))
		return units < 0 ? units : R4_EINVAL;
	eb -= FMT_CDE40_UNITS_SIZE + uhs;	/* the entry's body alone */
	add = uhs + eb;
	if (i > (unsigned)units || units >= 65535 || outlen != len + add ||
	    len + add > MAX_ITEM_SIZE)
		return R4_EINVAL;
	first = uh_pos(pol, (size_t)units);
	at = i < (unsigned)units ? unit_offset(body, pol, i) : len;
	if (at < first || at > len)
		return R4_ECORRUPT;
	put_le16(out, (uint16_t)(units + 1));
	/* headers before i, the new one, those after; bodies likewise */
	memcpy(out + uh_pos(pol, 0), body + uh_pos(pol, 0), (size_t)i * uhs);
	memcpy(out + uh_pos(pol, i + 1), body + uh_pos(pol, i),
	       (size_t)(units - (int)i) * uhs);
	memcpy(out + first + uhs, body + first, at - first);
	memcpy(out + at + add, body + at, len - at);
	encode_entry(e, pol, out + uh_pos(pol, i), out + at + uhs,
		     (uint16_t)(at + uhs));
	for (int j = 0; j <= units; j++) {
		uint8_t *o = out + uh_pos(pol, (size_t)j) + hash_size(pol);

		if (j != (int)i)
			put_le16(o, (uint16_t)(get_le16(o) +
					       (j < (int)i ? uhs : add)));
	}
	return 0;
}

int fmt_cde40_remove(const uint8_t *body, size_t len, enum fmt_key_policy pol,
		     unsigned i, uint8_t *out, size_t outcap, size_t *outlen)
{
	int units = units_of(body, len, pol);
	size_t uhs = uh_size(pol), first, at, end, gone, off;

	if (units < 0)
		return units;
	if (units < 2 || i >= (unsigned)units)
		return R4_EINVAL;
	first = uh_pos(pol, (size_t)units);
	at = unit_offset(body, pol, i);
	end = i + 1 < (unsigned)units ? unit_offset(body, pol, i + 1) : len;
	if (at < first || end <= at || end > len)
		return R4_ECORRUPT;
	/* the other bodies before unit i's and after it: their offsets
	 * below move by a header, or a header and unit i's body */
	for (int j = 0; j < units; j++) {
		off = unit_offset(body, pol, (unsigned)j);
		if (j != (int)i && ((j < (int)i && (off < first || off > at)) ||
				    (j > (int)i && (off < end || off > len))))
			return R4_ECORRUPT;
	}
	gone = uhs + (end - at);
	if (outcap < len - gone)
		return R4_EINVAL;
	put_le16(out, (uint16_t)(units - 1));
	memcpy(out + uh_pos(pol, 0), body + uh_pos(pol, 0), (size_t)i * uhs);
	memcpy(out + uh_pos(pol, i), body + uh_pos(pol, i + 1),
	       (size_t)(units - 1 - (int)i) * uhs);
	memcpy(out + first - uhs, body + first, at - first);
	memcpy(out + at - uhs, body + end, len - end);
	for (int j = 0; j < units - 1; j++) {
		uint8_t *o = out + uh_pos(pol, (size_t)j) + hash_size(pol);

		put_le16(o, (uint16_t)(get_le16(o) - (j < (int)i ? uhs : gone)));
	}
	*outlen = len - gone;
	return 0;
}
