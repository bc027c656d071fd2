/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: item lists (libimage/tree/ilist.c) when memory runs out half
 * way through joining neighbours, and when an item cannot be cut to fit:
 * the list stays whole, so its cleanup frees every body once (a double
 * free aborts this test; a leak fails it under LeakSanitizer).
 *
 * realloc is wrapped here (the next definition, libc's or the
 * sanitizer's, found with dlsym) so the n-th call from now can fail. */
#include "config.h"
#include <dlfcn.h>
#include <errno.h>
#include "tap.h"
#include "libimage/tree/modify.h"
#include "format/plugin.h"
#include "r4/errors.h"

static int fail_in;		/* > 0: the fail_in-th realloc from now fails */

void *realloc(void *p, size_t n)
{
	static void *(*next)(void *, size_t);

	if (fail_in > 0 && --fail_in == 0)
		return NULL;
	if (!next)
		*(void **)&next = dlsym(RTLD_NEXT, "realloc");
	if (!next)
		abort();
	return next(p, n);
}

static void tail(struct ilist *l, uint64_t oid, uint64_t off, char c,
		 size_t len)
{
	struct fmt_key k = { { 1ull << 4, 0x2a, oid, off } };
	char body[64];

	memset(body, c, len);
	tap_require(ilist_push(l, &k, FMT_ITEM_TAIL40, body, len) == 0,
		    "ilist_push");
}

static int filled(const struct mitem *it, const char *pattern, size_t n)
{
	for (size_t i = 0; i < it->len; i++)
		if (it->body[i] != pattern[i * strlen(pattern) / it->len])
			return 0;
	return it->len == n;
}

/* A, B of object 7 and C, D, E of object 8, each continuing the one
 * before: the first join (A+B) and the second (C+D) take a realloc
 * each; the third (C+D with E) fails when fail_in is 3. */
static void five(struct ilist *l)
{
	tail(l, 7, 0, 'a', 10);
	tail(l, 7, 10, 'b', 10);
	tail(l, 8, 0, 'c', 10);
	tail(l, 8, 10, 'd', 10);
	tail(l, 8, 20, 'e', 10);
}

static void coalesce_oom(void)
{
	struct ilist l = { NULL, 0, 0 };
	int rc;

	five(&l);
	fail_in = 3;
	rc = ilist_coalesce(&l, 4000, 4096, FMT_KEY_LARGE);
	fail_in = 0;
	ok(rc == -ENOMEM, "the third join runs out of memory (%d)", rc);
	ok(l.n == 3, "the list holds the two joined items and E (%zu)", l.n);
	ok(l.n == 3 && filled(&l.v[0], "ab", 20) && filled(&l.v[1], "cd", 20)
	   && filled(&l.v[2], "e", 10), "their bytes are whole");
	ok(l.n == 3 && l.v[2].key.el[3] == 20, "E keeps its key");
	ilist_free(&l);		/* frees each body once */
}

/* The same failure inside ilist_pack: all is emptied and freed. */
static void pack_oom(void)
{
	struct ilist l = { NULL, 0, 0 }, *out = NULL;
	size_t nout = 0;
	int rc;

	five(&l);
	fail_in = 3;
	rc = ilist_pack(&l, 4000, 4000, 24, 4096, FMT_KEY_LARGE, &out,
			&nout);
	fail_in = 0;
	ok(rc == -ENOMEM && l.n == 0 && !l.v && !out,
	   "ilist_pack: out of memory, the list emptied (%d)", rc);
}

/* A stat-data item (never cut) larger than a node: R4_ERANGE, and its
 * body freed with the rest. */
static void pack_too_big(void)
{
	struct ilist l = { NULL, 0, 0 }, *out = NULL;
	struct fmt_key k = { { 1ull << 4, 0x2a, 9, 0 } };
	uint8_t body[200];
	size_t nout = 0;
	int rc;

	memset(body, 0, sizeof(body));
	tail(&l, 7, 0, 'a', 40);
	tap_require(ilist_push(&l, &k, FMT_ITEM_STAT40, body, sizeof(body))
		    == 0, "ilist_push");
	tail(&l, 10, 0, 'z', 40);
	rc = ilist_pack(&l, 150, 150, 24, 4096, FMT_KEY_LARGE, &out, &nout);
	ok(rc == R4_ERANGE && l.n == 0 && !l.v,
	   "an item larger than a node: R4_ERANGE, the list emptied (%d)",
	   rc);
}

int main(void)
{
	plan(6);
	coalesce_oom();
	pack_oom();
	pack_too_big();
	return tap_done();
}
