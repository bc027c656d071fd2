/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the cde40 fast paths against the whole-item ones: the verify
 * of one pass over the unit headers against decoding every entry (the
 * rule it replaced), the bisection seek against a linear scan, and a
 * spliced insert and removal against decoding and encoding the entries
 * again (and a removal on hostile bytes kept in bounds), on seeded random
 * items (short and long names, both key policies) and corruptions. */
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "format/item.h"
#include "format/key.h"
#include "format/endian.h"
#include "format/errors.h"

static uint32_t rng_state = 0x2545f491u;

static uint32_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 17;
	rng_state ^= rng_state << 5;
	return rng_state;
}

static int hcmp(const struct fmt_cde40_entry *a, const struct fmt_cde40_entry *b)
{
	if (a->ordering != b->ordering)
		return a->ordering < b->ordering ? -1 : 1;
	if (a->objectid != b->objectid)
		return a->objectid < b->objectid ? -1 : 1;
	if (a->offset != b->offset)
		return a->offset < b->offset ? -1 : 1;
	return 0;
}

/* The verify as it was: every entry decoded with fmt_cde40_entry. */
static const char *ref_verify(const uint8_t *b, size_t len,
			      enum fmt_key_policy pol, int *bad)
{
	struct fmt_cde40_entry e, prev;
	int units = fmt_cde40_units(b, len, pol);
	size_t uh = fmt_cde40_unit_header_size(pol), expect;

	*bad = -1;
	if (units < 0)
		return "cde40 unit headers do not fit in the item";
	if (units == 0)
		return "cde40 item has no units";
	expect = 2 + (size_t)units * uh;
	for (int i = 0; i < units; i++) {
		*bad = i;
		if (get_le16(b + 2 + (size_t)i * uh + uh - 2) != expect)
			return "cde40 entry body is not right after the "
			       "previous one";
		if (fmt_cde40_entry(b, len, pol, (unsigned)i, &e))
			return "cde40 entry body or name is out of the item";
		expect += fmt_cde40_objid_size(pol) +
			  (fmt_cde40_entry_is_long(&e, pol) ? e.name_len + 1 : 0);
		if (i > 0 && hcmp(&prev, &e) > 0)
			return "cde40 entries are not sorted";
		prev = e;
	}
	*bad = -1;
	return expect != len ? "cde40 last entry body does not end at the "
			       "item end" : NULL;
}

static const char names[] = "abcdefghijklmnopqrstuvwxyz0123456789";

/* A random entry: a few hash values only (so equal words are met), a
 * long name one time in three. */
static void rnd_entry(struct fmt_cde40_entry *e, enum fmt_key_policy pol)
{
	memset(e, 0, sizeof(*e));
	e->ordering = pol == FMT_KEY_LARGE ? rnd() % 4 : 0;
	e->objectid = (uint64_t)(rnd() % 6) << 8;
	e->offset = rnd() % 5;
	if (rnd() % 3 == 0) {
		if (pol == FMT_KEY_LARGE)
			e->ordering |= FMT_KEY_LONGNAME_BIT;
		else
			e->objectid |= FMT_KEY_LONGNAME_BIT;
		e->name = (const uint8_t *)names + rnd() % 20;
		e->name_len = 1 + rnd() % 16;
	}
	e->target.el[0] = rnd();
	e->target.el[1] = pol == FMT_KEY_LARGE ? rnd() : 0;
	e->target.el[2] = rnd();
}

/* n sorted random entries of distinct hashes; their count. */
static size_t rnd_sorted(struct fmt_cde40_entry *e, size_t n,
			 enum fmt_key_policy pol)
{
	size_t m = 0;

	for (size_t i = 0; i < n; i++) {
		struct fmt_cde40_entry x;
		size_t j = 0;

		rnd_entry(&x, pol);
		while (j < m && hcmp(&e[j], &x) < 0)
			j++;
		if (j < m && !hcmp(&e[j], &x))
			continue;
		memmove(e + j + 1, e + j, (m - j) * sizeof(*e));
		e[j] = x;
		m++;
	}
	return m;
}

static void test_verify_random(void)
{
	uint8_t b[2048];
	struct fmt_cde40_entry e[24];
	int same = 1, good = 0, bad = 0;

	for (int it = 0; it < 20000; it++) {
		enum fmt_key_policy pol = it & 1 ? FMT_KEY_LARGE : FMT_KEY_SHORT;
		size_t n = rnd_sorted(e, 1 + rnd() % 20, pol), len;
		const char *a, *r;
		int ba, br;

		if (fmt_cde40_size(e, n, pol, &len) ||
		    fmt_cde40_encode(e, n, pol, b, sizeof(b)))
			continue;
		for (unsigned k = it % 4 ? 1 + rnd() % 3 : 0; k; k--)
			b[rnd() % len] = (uint8_t)(rnd() % 4 ? rnd() : 0);
		if (rnd() % 5 == 0)
			len = rnd() % (len + 1);
		a = fmt_cde40_verify(b, len, pol, &ba);
		r = ref_verify(b, len, pol, &br);
		if ((!a != !r) || (a && (strcmp(a, r) || ba != br))) {
			same = 0;
			printf("# item %d: \"%s\" (%d), was \"%s\" (%d)\n", it,
			     a ? a : "ok", ba, r ? r : "ok", br);
		}
		a ? bad++ : good++;
	}
	ok(same, "cde40 verify: the same answer and unit as decoding every "
	   "entry (%d sound, %d refused)", good, bad);
}

static void test_insert_random(void)
{
	uint8_t b[2048], got[2048], want[2048];
	struct fmt_cde40_entry e[24], all[25], x;
	int same = 1, seek_ok = 1, done = 0;

	for (int it = 0; it < 5000; it++) {
		enum fmt_key_policy pol = it & 1 ? FMT_KEY_LARGE : FMT_KEY_SHORT;
		size_t n = rnd_sorted(e, 1 + rnd() % 20, pol), len, wlen, i = 0, j;
		int s;

		rnd_entry(&x, pol);
		while (i < n && hcmp(&e[i], &x) < 0)
			i++;
		if ((i < n && !hcmp(&e[i], &x)) ||
		    fmt_cde40_size(e, n, pol, &len) ||
		    fmt_cde40_encode(e, n, pol, b, sizeof(b)))
			continue;
		struct fmt_key k = { { 0, x.ordering, x.objectid, x.offset } };

		s = fmt_cde40_seek(b, len, pol, &k);
		if (s != (int)i)
			seek_ok = 0;
		/* an entry's own key: its index */
		j = rnd() % n;
		k.el[1] = e[j].ordering;
		k.el[2] = e[j].objectid;
		k.el[3] = e[j].offset;
		if (fmt_cde40_seek(b, len, pol, &k) != (int)j)
			seek_ok = 0;
		memcpy(all, e, i * sizeof(*e));
		all[i] = x;
		memcpy(all + i + 1, e + i, (n - i) * sizeof(*e));
		fmt_cde40_size(all, n + 1, pol, &wlen);
		fmt_cde40_encode(all, n + 1, pol, want, sizeof(want));
		if (fmt_cde40_insert(b, len, pol, (unsigned)i, &x, got, wlen) ||
		    memcmp(got, want, wlen) ||
		    fmt_cde40_verify(got, wlen, pol, NULL)) {
			same = 0;
			printf("# item %d: insert at %zu of %zu\n", it, i, n);
		}
		if (fmt_cde40_insert(b, len, pol, (unsigned)i, &x, got,
				     wlen - 1) != R4_EINVAL)
			same = 0;
		done++;
	}
	ok(seek_ok, "cde40 seek: the first unit not below the key, as a "
	   "linear scan finds it (a key absent and a unit's own)");
	ok(same, "cde40 insert: the bytes of encoding the entries again, "
	   "which verify (%d inserts; a short buffer refused)", done);
}

/* The old way of taking entry i out: every entry decoded, the others
 * encoded again. Its length, 0 when a decode or the encode fails. */
static size_t ref_remove(const uint8_t *b, size_t len, enum fmt_key_policy pol,
			 size_t i, uint8_t *out, size_t outcap)
{
	struct fmt_cde40_entry e[32];
	int n = fmt_cde40_units(b, len, pol);
	size_t m = 0, size;

	if (n < 2 || n > 32)
		return 0;
	for (int j = 0; j < n; j++) {
		if (fmt_cde40_entry(b, len, pol, (unsigned)j, &e[m]))
			return 0;
		if ((size_t)j != i)
			m++;
	}
	if (fmt_cde40_size(e, m, pol, &size) || size > outcap ||
	    fmt_cde40_encode(e, m, pol, out, outcap))
		return 0;
	return size;
}

static void test_remove_random(void)
{
	uint8_t b[2048], got[2048 + 16], want[2048], back[2048];
	struct fmt_cde40_entry e[24], x;
	int same = 1, refused = 1, done = 0, hostile = 0, bounds = 1;

	for (int it = 0; it < 5000; it++) {
		enum fmt_key_policy pol = it & 1 ? FMT_KEY_LARGE : FMT_KEY_SHORT;
		size_t n = rnd_sorted(e, 1 + rnd() % 20, pol), len, wlen, glen;
		size_t i = rnd() % n;

		if (fmt_cde40_size(e, n, pol, &len) ||
		    fmt_cde40_encode(e, n, pol, b, sizeof(b)))
			continue;
		if (n == 1) {
			if (fmt_cde40_remove(b, len, pol, 0, got, sizeof(got),
					     &glen) != R4_EINVAL)
				refused = 0;
			continue;
		}
		wlen = ref_remove(b, len, pol, i, want, sizeof(want));
		if (!wlen || fmt_cde40_remove(b, len, pol, (unsigned)i, got,
					      sizeof(got), &glen) ||
		    glen != wlen || memcmp(got, want, wlen) ||
		    fmt_cde40_verify(got, glen, pol, NULL)) {
			same = 0;
			printf("# item %d: remove %zu of %zu\n", it, i, n);
			continue;
		}
		/* and back: the entry spliced in again makes the item */
		if (fmt_cde40_entry(b, len, pol, (unsigned)i, &x) ||
		    fmt_cde40_insert(got, glen, pol, (unsigned)i, &x, back,
				     len) || memcmp(back, b, len))
			same = 0;
		if (fmt_cde40_remove(b, len, pol, (unsigned)i, got, wlen - 1,
				     &glen) != R4_EINVAL ||
		    fmt_cde40_remove(b, len, pol, (unsigned)n, got,
				     sizeof(got), &glen) != R4_EINVAL)
			refused = 0;
		done++;

		/* hostile bytes: whatever it answers, it stays in its
		 * buffers, and a sound item it takes apart as the old way */
		for (unsigned k = 1 + rnd() % 3; k; k--)
			b[rnd() % len] = (uint8_t)(rnd() % 4 ? rnd() : 0);
		if (rnd() % 3 == 0)
			len = rnd() % (len + 1);
		uint8_t *h = malloc(len ? len : 1);

		memcpy(h, b, len);
		memset(got, 0xa5, sizeof(got));
		i = rnd() % (n + 1);
		if (!fmt_cde40_remove(h, len, pol, (unsigned)i, got, len,
				      &glen)) {
			hostile++;
			if (glen >= len)
				bounds = 0;
			for (size_t q = len; q < sizeof(got); q++)
				if (got[q] != 0xa5)
					bounds = 0;
			if (!fmt_cde40_verify(h, len, pol, NULL) &&
			    ((wlen = ref_remove(h, len, pol, i, want,
						sizeof(want))) != glen ||
			     memcmp(got, want, glen)))
				same = 0;
		}
		free(h);
	}
	ok(same, "cde40 remove: the bytes of decoding the entries and "
	   "encoding the others, which verify (%d removes), and insert puts "
	   "the entry back", done);
	ok(refused, "cde40 remove: a one-unit item, a unit past the end and "
	   "a short buffer refused");
	ok(bounds, "cde40 remove on hostile bytes: nothing written past its "
	   "output (%d taken apart)", hostile);
}

/* Another unit's body offset out of the item or on the wrong side of
 * the removed unit's body: refused, not rewritten into a wrapped one. */
static void test_remove_offsets(void)
{
	uint8_t b[2048], got[2048];
	struct fmt_cde40_entry e[24];
	int refused = 1, tried = 0;

	for (int it = 0; it < 200; it++) {
		enum fmt_key_policy pol = it & 1 ? FMT_KEY_LARGE : FMT_KEY_SHORT;
		size_t n = rnd_sorted(e, 3 + rnd() % 10, pol), len, glen;
		size_t uhs = pol == FMT_KEY_LARGE ? FMT_CDE40_UH_LARGE_SIZE :
			FMT_CDE40_UH_SHORT_SIZE;
		size_t hs = pol == FMT_KEY_LARGE ? FMT_CDE40_HASH_LARGE_SIZE :
			FMT_CDE40_HASH_SHORT_SIZE;

		if (n < 3 || fmt_cde40_size(e, n, pol, &len) ||
		    fmt_cde40_encode(e, n, pol, b, sizeof(b)))
			continue;
		/* remove unit 1; unit j (0 or 2..n-1) given an offset past
		 * the item, or unit 0 one past unit 1's body */
		size_t j = rnd() % 2 ? 0 : 2 + rnd() % (n - 2);
		uint8_t *o = b + FMT_CDE40_UNITS_SIZE + j * uhs + hs;

		put_le16(o, j == 0 && rnd() % 2 ?
			 (uint16_t)(get_le16(b + FMT_CDE40_UNITS_SIZE + 2 * uhs + hs)) :
			 (uint16_t)(len + 1 + rnd() % 100));
		tried++;
		if (fmt_cde40_remove(b, len, pol, 1, got, sizeof(got), &glen) !=
		    R4_ECORRUPT) {
			refused = 0;
			printf("# item %d: unit %zu's offset taken\n", it, j);
		}
	}
	ok(refused && tried, "cde40 remove: another unit's offset past the "
	   "item or past the removed body refused (%d items)", tried);
}

int main(void)
{
	plan(7);
	test_verify_random();
	test_insert_random();
	test_remove_random();
	test_remove_offsets();
	return tap_done();
}
