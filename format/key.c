/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: Reiser4 keys (doc/format.md §2): the two on-disk layouts,
 * comparison, builders and directory-entry keys. */
#include "format/key.h"

#include "format/endian.h"
#include "format/errors.h"
#include "format/fibre.h"
#include "format/hash.h"

/* Large key: four little-endian u64 elements. */
#define KEY_LARGE_LOCTYPE_OFF 0		/* locality << 4 | type */
#define KEY_LARGE_ORDERING_OFF 8	/* ordering */
#define KEY_LARGE_OBJECTID_OFF 16	/* band << 60 | objectid */
#define KEY_LARGE_OFFSET_OFF 24		/* offset */

/* Short key: no ordering word. */
#define KEY_SHORT_LOCTYPE_OFF 0
#define KEY_SHORT_OBJECTID_OFF 8
#define KEY_SHORT_OFFSET_OFF 16

#define KEY_EL_SIZE 8

_Static_assert(KEY_LARGE_ORDERING_OFF == KEY_LARGE_LOCTYPE_OFF + KEY_EL_SIZE,
	       "large key: ordering follows locality");
_Static_assert(KEY_LARGE_OBJECTID_OFF == KEY_LARGE_ORDERING_OFF + KEY_EL_SIZE,
	       "large key: objectid follows ordering");
_Static_assert(KEY_LARGE_OFFSET_OFF == KEY_LARGE_OBJECTID_OFF + KEY_EL_SIZE,
	       "large key: offset follows objectid");
_Static_assert(KEY_LARGE_OFFSET_OFF + KEY_EL_SIZE == FMT_KEY_LARGE_SIZE,
	       "large key is 32 bytes");
_Static_assert(KEY_SHORT_OBJECTID_OFF == KEY_SHORT_LOCTYPE_OFF + KEY_EL_SIZE,
	       "short key: objectid follows locality");
_Static_assert(KEY_SHORT_OFFSET_OFF == KEY_SHORT_OBJECTID_OFF + KEY_EL_SIZE,
	       "short key: offset follows objectid");
_Static_assert(KEY_SHORT_OFFSET_OFF + KEY_EL_SIZE == FMT_KEY_SHORT_SIZE,
	       "short key is 24 bytes");
_Static_assert(FMT_KEY_LARGE_SIZE == 4 * KEY_EL_SIZE &&
	       FMT_KEY_SHORT_SIZE == 3 * KEY_EL_SIZE, "key element counts");

/* Entry keys (section 2.6): how many name bytes each word takes. The
 * first word keeps its top byte for the fibre and the long-name bit. */
#define ENTRY_FIRST_CHARS 7
#define ENTRY_WORD_CHARS 8
/* Large: 7 + 8 + 8 name bytes fit; longer names hash bytes 15.. */
#define ENTRY_LARGE_INLINE (ENTRY_FIRST_CHARS + 2 * ENTRY_WORD_CHARS)
#define ENTRY_LARGE_HASHED_FROM (ENTRY_FIRST_CHARS + ENTRY_WORD_CHARS)
/* Short: 7 + 8 name bytes fit; longer names hash bytes 7.. */
#define ENTRY_SHORT_INLINE (ENTRY_FIRST_CHARS + ENTRY_WORD_CHARS)
#define ENTRY_SHORT_HASHED_FROM ENTRY_FIRST_CHARS
/* The fibre and the long-name bit share the top byte of the first word. */
#define ENTRY_TOP_BYTE 0xff00000000000000ULL

_Static_assert(ENTRY_LARGE_INLINE == 23 && ENTRY_SHORT_INLINE == 15,
	       "inline name lengths of section 2.6");
_Static_assert(FMT_KEY_LONGNAME_BIT == 1ULL << (FMT_FIBRE_SHIFT - 1),
	       "long-name bit sits just below the fibre");

size_t fmt_key_size(enum fmt_key_policy pol)
{
	return pol == FMT_KEY_SHORT ? FMT_KEY_SHORT_SIZE : FMT_KEY_LARGE_SIZE;
}

void fmt_key_decode(const uint8_t *buf, enum fmt_key_policy pol,
		    struct fmt_key *out)
{
	if (pol == FMT_KEY_SHORT) {
		out->el[0] = get_le64(buf + KEY_SHORT_LOCTYPE_OFF);
		out->el[1] = 0;
		out->el[2] = get_le64(buf + KEY_SHORT_OBJECTID_OFF);
		out->el[3] = get_le64(buf + KEY_SHORT_OFFSET_OFF);
		return;
	}
	out->el[0] = get_le64(buf + KEY_LARGE_LOCTYPE_OFF);
	out->el[1] = get_le64(buf + KEY_LARGE_ORDERING_OFF);
	out->el[2] = get_le64(buf + KEY_LARGE_OBJECTID_OFF);
	out->el[3] = get_le64(buf + KEY_LARGE_OFFSET_OFF);
}

void fmt_key_encode(const struct fmt_key *in, enum fmt_key_policy pol,
		    uint8_t *buf)
{
	if (pol == FMT_KEY_SHORT) {
		put_le64(buf + KEY_SHORT_LOCTYPE_OFF, in->el[0]);
		put_le64(buf + KEY_SHORT_OBJECTID_OFF, in->el[2]);
		put_le64(buf + KEY_SHORT_OFFSET_OFF, in->el[3]);
		return;
	}
	put_le64(buf + KEY_LARGE_LOCTYPE_OFF, in->el[0]);
	put_le64(buf + KEY_LARGE_ORDERING_OFF, in->el[1]);
	put_le64(buf + KEY_LARGE_OBJECTID_OFF, in->el[2]);
	put_le64(buf + KEY_LARGE_OFFSET_OFF, in->el[3]);
}

int fmt_key_cmp(const struct fmt_key *a, const struct fmt_key *b)
{
	for (int i = 0; i < 4; i++) {
		if (a->el[i] < b->el[i])
			return -1;
		if (a->el[i] > b->el[i])
			return 1;
	}
	return 0;
}

static void key_set(struct fmt_key *k, uint64_t locality, unsigned type,
		    uint64_t ordering, uint64_t oid, uint64_t offset)
{
	k->el[0] = (locality << 4) | type;
	k->el[1] = ordering;
	k->el[2] = oid;
	k->el[3] = offset;
}

void fmt_key_sd(struct fmt_key *k, uint64_t locality, uint64_t ordering,
		uint64_t oid)
{
	key_set(k, locality, FMT_KEY_SD, ordering, oid, 0);
}

void fmt_key_body(struct fmt_key *k, uint64_t locality, uint64_t ordering,
		  uint64_t oid, uint64_t offset)
{
	key_set(k, locality, FMT_KEY_BODY, ordering, oid, offset);
}

void fmt_key_max(struct fmt_key *k)
{
	for (int i = 0; i < 4; i++)
		k->el[i] = UINT64_MAX;
}

void fmt_key_min(struct fmt_key *k)
{
	for (int i = 0; i < 4; i++)
		k->el[i] = 0;
}

/* Up to (8 - skip) bytes of s (fewer if len or a NUL ends it first),
 * big-endian from byte (7 - skip) of the word down, zero-filled below:
 * the first character is the most significant byte used. */
static uint64_t pack_name(const char *s, size_t len, unsigned skip)
{
	size_t room = ENTRY_WORD_CHARS - skip, i;
	uint64_t v = 0;

	for (i = 0; i < room && i < len && s[i]; i++)
		v = (v << 8) | (unsigned char)s[i];
	if (i == 0)
		return 0;
	return v << (8 * (room - i));
}

static int entry_large(struct fmt_key *k, const char *name, size_t len,
		       unsigned hash_id, unsigned fibre)
{
	uint64_t ord = pack_name(name, len, 1), oid = 0, off = 0;
	int err;

	if (len > ENTRY_FIRST_CHARS)
		oid = pack_name(name + ENTRY_FIRST_CHARS,
				len - ENTRY_FIRST_CHARS, 0);
	if (len > ENTRY_LARGE_INLINE) {
		ord |= FMT_KEY_LONGNAME_BIT;
		err = fmt_hash(hash_id, name + ENTRY_LARGE_HASHED_FROM,
			       len - ENTRY_LARGE_HASHED_FROM, &off);
		if (err)
			return err;
	} else if (len > ENTRY_LARGE_HASHED_FROM) {
		off = pack_name(name + ENTRY_LARGE_HASHED_FROM,
				len - ENTRY_LARGE_HASHED_FROM, 0);
	}
	k->el[1] = ord | (uint64_t)fibre << FMT_FIBRE_SHIFT;
	k->el[2] = oid;
	k->el[3] = off;
	return 0;
}

/* Short keys (reiser4progs key_short): the first 7 bytes, fibre and
 * long-name bit go to the objectid word (el[2] in memory), the offset
 * takes bytes 7..14 or the hash of bytes 7.. when the name is longer
 * than 15; there is no ordering. */
static int entry_short(struct fmt_key *k, const char *name, size_t len,
		       unsigned hash_id, unsigned fibre)
{
	uint64_t oid = pack_name(name, len, 1), off = 0;
	int err;

	if (len > ENTRY_SHORT_INLINE) {
		oid |= FMT_KEY_LONGNAME_BIT;
		err = fmt_hash(hash_id, name + ENTRY_SHORT_HASHED_FROM,
			       len - ENTRY_SHORT_HASHED_FROM, &off);
		if (err)
			return err;
	} else if (len > ENTRY_SHORT_HASHED_FROM) {
		off = pack_name(name + ENTRY_SHORT_HASHED_FROM,
				len - ENTRY_SHORT_HASHED_FROM, 0);
	}
	k->el[1] = 0;
	k->el[2] = oid | (uint64_t)fibre << FMT_FIBRE_SHIFT;
	k->el[3] = off;
	return 0;
}

int fmt_key_entry(struct fmt_key *k, enum fmt_key_policy pol,
		  uint64_t dir_oid, const char *name, size_t len,
		  unsigned hash_id, unsigned fibre_id)
{
	struct fmt_key tmp;
	int fibre, err;

	fibre = fmt_fibre(fibre_id, name, len);
	if (fibre < 0)
		return fibre;
	if (!fmt_hash_known(hash_id))
		return R4_EUNSUPP;
	if (len == 0)
		return R4_EINVAL;
	key_set(&tmp, dir_oid, FMT_KEY_FILE_NAME, 0, 0, 0);
	/* "." is all zeros so that it sorts first; ".." is not special. */
	if (!(len == 1 && name[0] == '.')) {
		if (pol == FMT_KEY_SHORT)
			err = entry_short(&tmp, name, len, hash_id,
					  (unsigned)fibre);
		else
			err = entry_large(&tmp, name, len, hash_id,
					  (unsigned)fibre);
		if (err)
			return err;
	}
	*k = tmp;
	return 0;
}

int fmt_entry_name_stored(enum fmt_key_policy pol, size_t len)
{
	return len > (pol == FMT_KEY_SHORT ? ENTRY_SHORT_INLINE
					   : ENTRY_LARGE_INLINE);
}

int fmt_key_entry_hashed(const struct fmt_key *k, enum fmt_key_policy pol)
{
	uint64_t first = pol == FMT_KEY_SHORT ? k->el[2] : k->el[1];

	return (first & FMT_KEY_LONGNAME_BIT) != 0;
}

/* Append the bytes of w from byte (7 - skip) down to out[*n] until a
 * zero byte; returns 0 once a zero byte ended the name. */
static int unpack_word(uint64_t w, unsigned skip, char *out, size_t *n)
{
	for (unsigned i = skip; i < ENTRY_WORD_CHARS; i++) {
		unsigned char c = (unsigned char)(w >> (56 - 8 * i));

		if (!c)
			return 0;
		out[(*n)++] = (char)c;
	}
	return 1;
}

size_t fmt_key_entry_name(const struct fmt_key *k, enum fmt_key_policy pol,
			  char *buf)
{
	uint64_t w[3];
	size_t n = 0;
	int nw, i;

	buf[0] = '\0';
	if (fmt_key_entry_hashed(k, pol))
		return 0;
	if (pol == FMT_KEY_SHORT) {
		w[0] = k->el[2];
		w[1] = k->el[3];
		nw = 2;
	} else {
		w[0] = k->el[1];
		w[1] = k->el[2];
		w[2] = k->el[3];
		nw = 3;
	}
	if (!w[0] && !w[1] && (nw == 2 || !w[2])) {
		buf[0] = '.';
		buf[1] = '\0';
		return 1;
	}
	w[0] &= ~ENTRY_TOP_BYTE;
	for (i = 0; i < nw; i++)
		if (!unpack_word(w[i], i == 0, buf, &n))
			break;
	buf[n] = '\0';
	return n;
}

/* Lower-case hex of v without leading zeros into buf[*pos..len-1). */
static void put_hex(uint64_t v, char *buf, size_t len, size_t *pos)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[16];
	int n = 0;

	do {
		tmp[n++] = digits[v & 0xf];
		v >>= 4;
	} while (v);
	while (n > 0 && *pos + 1 < len)
		buf[(*pos)++] = tmp[--n];
}

void fmt_key_str(const struct fmt_key *k, char *buf, size_t len)
{
	const uint64_t f[5] = { fmt_key_locality(k), fmt_key_type(k),
				fmt_key_ordering(k), fmt_key_objectid(k),
				fmt_key_offset(k) };
	size_t pos = 0;

	if (len == 0)
		return;
	for (int i = 0; i < 5; i++) {
		if (i && pos + 1 < len)
			buf[pos++] = ':';
		put_hex(f[i], buf, len, &pos);
	}
	buf[pos] = '\0';
}
