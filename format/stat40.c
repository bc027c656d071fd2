/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: stat40 item bodies, the extension mask and every stat-data
 * extension (doc/format.md §5.2). */
#include <string.h>
#include "item.h"
#include "endian.h"
#include "errors.h"
#include "plugin.h"

_Static_assert(FMT_LW_OFF_NLINK == FMT_LW_OFF_MODE + 2 &&
	       FMT_LW_OFF_SIZE == FMT_LW_OFF_NLINK + 4 &&
	       FMT_LW_OFF_SIZE + 8 == FMT_SDEXT_LW_SIZE,
	       "lw: mode u16, nlink u32, size u64 = 14 bytes");
_Static_assert(FMT_UNIX_OFF_GID == FMT_UNIX_OFF_UID + 4 &&
	       FMT_UNIX_OFF_ATIME == FMT_UNIX_OFF_GID + 4 &&
	       FMT_UNIX_OFF_MTIME == FMT_UNIX_OFF_ATIME + 4 &&
	       FMT_UNIX_OFF_CTIME == FMT_UNIX_OFF_MTIME + 4 &&
	       FMT_UNIX_OFF_RDEV == FMT_UNIX_OFF_CTIME + 4 &&
	       FMT_UNIX_OFF_RDEV + 8 == FMT_SDEXT_UNIX_SIZE,
	       "unix: 5 x u32 + u64 = 28 bytes");
_Static_assert(FMT_LT_OFF_MTIME == FMT_LT_OFF_ATIME + 4 &&
	       FMT_LT_OFF_CTIME == FMT_LT_OFF_MTIME + 4 &&
	       FMT_LT_OFF_CTIME + 4 == FMT_SDEXT_LT_SIZE,
	       "large times: 3 x u32 = 12 bytes");
_Static_assert(FMT_PSET_SLOT_OFF_ID == FMT_PSET_SLOT_OFF_MEMBER + 2 &&
	       FMT_PSET_SLOT_OFF_ID + 2 == FMT_SDEXT_PSET_SLOT_SIZE,
	       "pset slot: member u16, id u16");
_Static_assert(FMT_CAPS_OFF_PERMITTED == FMT_CAPS_OFF_EFFECTIVE + 4 &&
	       FMT_CAPS_OFF_PERMITTED + 4 == FMT_SDEXT_CAPS_SIZE,
	       "capabilities: 2 x u32");
_Static_assert(FMT_PSET_COUNT <= FMT_PSET_MAX_SLOTS,
	       "every pset member fits in a struct fmt_pset");
_Static_assert(FMT_SDEXT_HSET + 1 == FMT_STAT_NR_EXT,
	       "heir set is the last defined extension");

/* Extension bits a mask word may carry: in word 0 the defined ones. */
#define KNOWN_WORD0 ((1u << FMT_STAT_NR_EXT) - 1)
#define MAX_STAT_SIZE 65535u

struct cur {
	const uint8_t *p;
	size_t len;
	size_t pos;	/* always <= len */
};

static int has_room(const struct cur *c, size_t n)
{
	return n <= c->len - c->pos;
}

static int decode_set(struct cur *c, struct fmt_pset *set)
{
	const uint8_t *q;

	if (!has_room(c, FMT_SDEXT_PSET_HDR_SIZE))
		return R4_ECORRUPT;
	set->count = get_le16(c->p + c->pos);
	c->pos += FMT_SDEXT_PSET_HDR_SIZE;
	if (set->count > FMT_PSET_COUNT)
		return R4_ECORRUPT;
	if (!has_room(c, (size_t)set->count * FMT_SDEXT_PSET_SLOT_SIZE))
		return R4_ECORRUPT;
	for (unsigned j = 0; j < set->count; j++) {
		q = c->p + c->pos + (size_t)j * FMT_SDEXT_PSET_SLOT_SIZE;
		set->member[j] = get_le16(q + FMT_PSET_SLOT_OFF_MEMBER);
		set->id[j] = get_le16(q + FMT_PSET_SLOT_OFF_ID);
		if (set->member[j] >= FMT_PSET_COUNT ||
		    (j > 0 && set->member[j] <= set->member[j - 1]))
			return R4_ECORRUPT;
	}
	c->pos += (size_t)set->count * FMT_SDEXT_PSET_SLOT_SIZE;
	return 0;
}

static int decode_symlink(struct cur *c, struct fmt_stat *st)
{
	const uint8_t *start = c->p + c->pos;
	const uint8_t *nul = memchr(start, 0, c->len - c->pos);

	if (!nul)
		return R4_ECORRUPT;
	st->symlink = start;
	st->symlink_len = (size_t)(nul - start);
	c->pos += st->symlink_len + 1;
	return 0;
}

static int decode_fixed(struct cur *c, unsigned k, struct fmt_stat *st)
{
	const uint8_t *q = c->p + c->pos;

	switch (k) {
	case FMT_SDEXT_LW:
		st->mode = get_le16(q + FMT_LW_OFF_MODE);
		st->nlink = get_le32(q + FMT_LW_OFF_NLINK);
		st->size = get_le64(q + FMT_LW_OFF_SIZE);
		return FMT_SDEXT_LW_SIZE;
	case FMT_SDEXT_UNIX:
		st->uid = get_le32(q + FMT_UNIX_OFF_UID);
		st->gid = get_le32(q + FMT_UNIX_OFF_GID);
		st->atime = get_le32(q + FMT_UNIX_OFF_ATIME);
		st->mtime = get_le32(q + FMT_UNIX_OFF_MTIME);
		st->ctime = get_le32(q + FMT_UNIX_OFF_CTIME);
		st->rdev_or_bytes = get_le64(q + FMT_UNIX_OFF_RDEV);
		return FMT_SDEXT_UNIX_SIZE;
	case FMT_SDEXT_LT:
		st->atime_ns = get_le32(q + FMT_LT_OFF_ATIME);
		st->mtime_ns = get_le32(q + FMT_LT_OFF_MTIME);
		st->ctime_ns = get_le32(q + FMT_LT_OFF_CTIME);
		return FMT_SDEXT_LT_SIZE;
	case FMT_SDEXT_FLAGS:
		st->flags = get_le32(q);
		return FMT_SDEXT_FLAGS_SIZE;
	case FMT_SDEXT_CAPS:
		st->cap_effective = get_le32(q + FMT_CAPS_OFF_EFFECTIVE);
		st->cap_permitted = get_le32(q + FMT_CAPS_OFF_PERMITTED);
		return FMT_SDEXT_CAPS_SIZE;
	default:
		return 0;
	}
}

/* Size of a fixed-size extension, 0 for the variable ones. */
static size_t fixed_size(unsigned k)
{
	switch (k) {
	case FMT_SDEXT_LW: return FMT_SDEXT_LW_SIZE;
	case FMT_SDEXT_UNIX: return FMT_SDEXT_UNIX_SIZE;
	case FMT_SDEXT_LT: return FMT_SDEXT_LT_SIZE;
	case FMT_SDEXT_FLAGS: return FMT_SDEXT_FLAGS_SIZE;
	case FMT_SDEXT_CAPS: return FMT_SDEXT_CAPS_SIZE;
	default: return 0;
	}
}

static int decode_ext(struct cur *c, unsigned k, size_t fp,
		      struct fmt_stat *st)
{
	size_t n = fixed_size(k);

	if (n) {
		if (!has_room(c, n))
			return R4_ECORRUPT;
		c->pos += (size_t)decode_fixed(c, k, st);
		return 0;
	}
	switch (k) {
	case FMT_SDEXT_SYMLINK:
		return decode_symlink(c, st);
	case FMT_SDEXT_PSET:
		return decode_set(c, &st->pset);
	case FMT_SDEXT_HSET:
		return decode_set(c, &st->hset);
	case FMT_SDEXT_CRYPTO:
		if (!has_room(c, FMT_SDEXT_CRYPTO_HDR_SIZE) ||
		    fp > c->len - c->pos - FMT_SDEXT_CRYPTO_HDR_SIZE)
			return R4_ECORRUPT;
		st->crypto_keysize = get_le16(c->p + c->pos);
		c->pos += FMT_SDEXT_CRYPTO_HDR_SIZE;
		st->crypto_keyid = c->p + c->pos;
		st->crypto_keyid_len = fp;
		c->pos += fp;
		return 0;
	default:
		return R4_EUNSUPP;
	}
}

int fmt_stat_decode_fp(const uint8_t *body, size_t len, size_t crypto_fp,
		       struct fmt_stat *out)
{
	struct cur c = { body, len, 0 };
	unsigned word;
	int err;

	memset(out, 0, sizeof(*out));
	if (len < FMT_STAT_MASK_SIZE)
		return R4_ECORRUPT;
	word = get_le16(body);
	c.pos = FMT_STAT_MASK_SIZE;
	out->mask = word;
	for (unsigned w = 0;; w++) {
		if (word & ~FMT_STAT_MASK_CHAIN & ~(w == 0 ? KNOWN_WORD0 : 0))
			return R4_EUNSUPP;
		for (unsigned b = 0; b < 15; b++) {
			if (!(word & (1u << b)))
				continue;
			err = decode_ext(&c, 16 * w + b, crypto_fp, out);
			if (err)
				return err;
		}
		if (!(word & FMT_STAT_MASK_CHAIN))
			break;
		if (w + 1 == FMT_STAT_MASK_WORDS ||
		    !has_room(&c, FMT_STAT_MASK_SIZE))
			return R4_ECORRUPT;
		word = get_le16(body + c.pos);
		c.pos += FMT_STAT_MASK_SIZE;
		out->mask |= (uint64_t)word << (16 * (w + 1));
	}
	return c.pos == len ? 0 : R4_ECORRUPT;
}

int fmt_stat_decode(const uint8_t *body, size_t len, struct fmt_stat *out)
{
	return fmt_stat_decode_fp(body, len, FMT_SDEXT_CRYPTO_FP_DEFAULT, out);
}

/* Number of mask words the logical mask needs; R4_EUNSUPP for undefined
 * extension bits, R4_EINVAL when bits sit in a word no chain reaches. */
static int mask_words(uint64_t mask, unsigned *nwords)
{
	unsigned w = 0;

	for (;;) {
		unsigned word = (unsigned)(mask >> (16 * w)) & 0xffffu;

		if (word & ~FMT_STAT_MASK_CHAIN & ~(w == 0 ? KNOWN_WORD0 : 0))
			return R4_EUNSUPP;
		if (!(word & FMT_STAT_MASK_CHAIN))
			break;
		if (++w == FMT_STAT_MASK_WORDS)
			return R4_EINVAL;
	}
	*nwords = w + 1;
	if (w + 1 < FMT_STAT_MASK_WORDS && (mask >> (16 * (w + 1))) != 0)
		return R4_EINVAL;
	return 0;
}

static int set_size(const struct fmt_pset *set, size_t *n)
{
	if (set->count > FMT_PSET_COUNT)
		return R4_EINVAL;
	for (unsigned j = 0; j < set->count; j++)
		if (set->member[j] >= FMT_PSET_COUNT ||
		    (j > 0 && set->member[j] <= set->member[j - 1]))
			return R4_EINVAL;
	*n = FMT_SDEXT_PSET_HDR_SIZE +
	     (size_t)set->count * FMT_SDEXT_PSET_SLOT_SIZE;
	return 0;
}

static int ext_size(const struct fmt_stat *st, unsigned k, size_t *n)
{
	*n = fixed_size(k);
	if (*n)
		return 0;
	switch (k) {
	case FMT_SDEXT_SYMLINK:
		if (st->symlink_len >= MAX_STAT_SIZE ||
		    (st->symlink_len && (!st->symlink ||
		     memchr(st->symlink, 0, st->symlink_len))))
			return R4_EINVAL;
		*n = st->symlink_len + 1;
		return 0;
	case FMT_SDEXT_PSET:
		return set_size(&st->pset, n);
	case FMT_SDEXT_HSET:
		return set_size(&st->hset, n);
	case FMT_SDEXT_CRYPTO:
		if (st->crypto_keyid_len >= MAX_STAT_SIZE ||
		    (st->crypto_keyid_len && !st->crypto_keyid))
			return R4_EINVAL;
		*n = FMT_SDEXT_CRYPTO_HDR_SIZE + st->crypto_keyid_len;
		return 0;
	default:
		return R4_EUNSUPP;
	}
}

int fmt_stat_size(const struct fmt_stat *st, size_t *size)
{
	unsigned nwords;
	size_t total, n;
	int err = mask_words(st->mask, &nwords);

	if (err)
		return err;
	total = (size_t)nwords * FMT_STAT_MASK_SIZE;
	for (unsigned k = 0; k < FMT_STAT_NR_EXT; k++) {
		if (!fmt_stat_has(st, k))
			continue;
		err = ext_size(st, k, &n);
		if (err)
			return err;
		total += n;
	}
	if (total > MAX_STAT_SIZE)
		return R4_EINVAL;
	*size = total;
	return 0;
}

static void encode_set(const struct fmt_pset *set, uint8_t *q)
{
	put_le16(q, set->count);
	q += FMT_SDEXT_PSET_HDR_SIZE;
	for (unsigned j = 0; j < set->count; j++) {
		put_le16(q + FMT_PSET_SLOT_OFF_MEMBER, set->member[j]);
		put_le16(q + FMT_PSET_SLOT_OFF_ID, set->id[j]);
		q += FMT_SDEXT_PSET_SLOT_SIZE;
	}
}

static void encode_var(const struct fmt_stat *st, unsigned k, uint8_t *q)
{
	switch (k) {
	case FMT_SDEXT_SYMLINK:
		if (st->symlink_len)
			memcpy(q, st->symlink, st->symlink_len);
		q[st->symlink_len] = 0;
		break;
	case FMT_SDEXT_PSET:
		encode_set(&st->pset, q);
		break;
	case FMT_SDEXT_HSET:
		encode_set(&st->hset, q);
		break;
	case FMT_SDEXT_CRYPTO:
		put_le16(q, st->crypto_keysize);
		if (st->crypto_keyid_len)
			memcpy(q + FMT_SDEXT_CRYPTO_HDR_SIZE, st->crypto_keyid,
			       st->crypto_keyid_len);
		break;
	default:
		break;
	}
}

/* Write extension k at q; sizes were checked by fmt_stat_size. */
static void encode_ext(const struct fmt_stat *st, unsigned k, uint8_t *q)
{
	switch (k) {
	case FMT_SDEXT_LW:
		put_le16(q + FMT_LW_OFF_MODE, st->mode);
		put_le32(q + FMT_LW_OFF_NLINK, st->nlink);
		put_le64(q + FMT_LW_OFF_SIZE, st->size);
		break;
	case FMT_SDEXT_UNIX:
		put_le32(q + FMT_UNIX_OFF_UID, st->uid);
		put_le32(q + FMT_UNIX_OFF_GID, st->gid);
		put_le32(q + FMT_UNIX_OFF_ATIME, st->atime);
		put_le32(q + FMT_UNIX_OFF_MTIME, st->mtime);
		put_le32(q + FMT_UNIX_OFF_CTIME, st->ctime);
		put_le64(q + FMT_UNIX_OFF_RDEV, st->rdev_or_bytes);
		break;
	case FMT_SDEXT_LT:
		put_le32(q + FMT_LT_OFF_ATIME, st->atime_ns);
		put_le32(q + FMT_LT_OFF_MTIME, st->mtime_ns);
		put_le32(q + FMT_LT_OFF_CTIME, st->ctime_ns);
		break;
	case FMT_SDEXT_FLAGS:
		put_le32(q, st->flags);
		break;
	case FMT_SDEXT_CAPS:
		put_le32(q + FMT_CAPS_OFF_EFFECTIVE, st->cap_effective);
		put_le32(q + FMT_CAPS_OFF_PERMITTED, st->cap_permitted);
		break;
	default:
		encode_var(st, k, q);
		break;
	}
}

int fmt_stat_encode(const struct fmt_stat *st, uint8_t *buf, size_t buflen)
{
	size_t size, pos = 0, n;
	unsigned nwords;
	int err = fmt_stat_size(st, &size);

	if (err)
		return err;
	if (buflen < size)
		return R4_EINVAL;
	mask_words(st->mask, &nwords);
	for (unsigned w = 0; w < nwords; w++) {
		put_le16(buf + pos, (uint16_t)(st->mask >> (16 * w)));
		pos += FMT_STAT_MASK_SIZE;
		for (unsigned b = 0; b < 15; b++) {
			unsigned k = 16 * w + b;

			if (!fmt_stat_has(st, k))
				continue;
			ext_size(st, k, &n);
			encode_ext(st, k, buf + pos);
			pos += n;
		}
	}
	return 0;
}

const char *fmt_stat_verify(const struct fmt_stat *st)
{
	if (!fmt_stat_has(st, FMT_SDEXT_SYMLINK))
		return NULL;
	if (!fmt_stat_has(st, FMT_SDEXT_LW))
		return "stat40 symlink extension without light-weight extension";
	if (st->size != st->symlink_len)
		return "stat40 symlink target length != lw size";
	return NULL;
}
