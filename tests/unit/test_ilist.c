/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: item lists (libimage/tree/ilist.c) when memory runs out half
 * way through joining neighbours, and when an item cannot be cut to fit:
 * the list stays whole, so its cleanup frees every body once (a double
 * free aborts this test; a leak fails it under LeakSanitizer). A pass
 * that joins only around the changes since the last one (a list's
 * span, ilist_pack's chunks) against a pass over the whole list.
 *
 * realloc is wrapped here (the next definition, libc's or the
 * sanitizer's, found with dlsym) so the n-th call from now can fail. */
#include "config.h"
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
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
	struct ilist l = ILIST_EMPTY;
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
	struct ilist l = ILIST_EMPTY, *out = NULL;
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
	struct ilist l = ILIST_EMPTY, *out = NULL;
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

/* Fill the stack below the caller with 0xff, so that a struct the code
 * under test leaves uninitialised there reads as marked. */
static __attribute__((noinline)) void dirty_stack(void)
{
	volatile unsigned char junk[8192];

	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = 0xff;
}

/* A mark (tree_mod_mark_checked: the item's bytes were verified) goes
 * with any change to the bytes: a join gives new bytes, and so does a
 * cut (both pieces); an item only moved keeps it. */
static void marks(void)
{
	struct ilist l = ILIST_EMPTY, *out = NULL;
	size_t nout = 0, marked = 0;
	int rc;

	five(&l);
	tail(&l, 9, 0, 'f', 10);
	for (size_t i = 0; i < l.n; i++)
		l.v[i].checked = 1;
	rc = ilist_coalesce(&l, 4000, 4096, FMT_KEY_LARGE);
	ok(!rc && l.n == 3 && !l.v[0].checked && !l.v[1].checked &&
	   l.v[2].checked, "joined items lose the mark, F (not joined) "
	   "keeps it");
	ilist_free(&l);
	/* Y (10 bytes), then X (128 bytes, two joined) that a 124-byte
	 * node cannot hold whole after Y: cut in two */
	tail(&l, 10, 0, 'y', 10);
	tail(&l, 11, 0, 'x', 64);
	tail(&l, 11, 64, 'x', 64);
	rc = ilist_coalesce(&l, 4000, 4096, FMT_KEY_LARGE);
	for (size_t i = 0; i < l.n; i++)
		l.v[i].checked = 1;
	dirty_stack();	/* the cut's pieces must not keep a mark by luck */
	rc = rc ? rc : ilist_pack(&l, 124, 124, 24, 4096, FMT_KEY_LARGE,
				  &out, &nout);
	for (size_t c = 0; !rc && c < nout; c++)
		for (size_t i = 0; i < out[c].n; i++)
			marked += out[c].v[i].checked;
	ok(!rc && nout == 2 && out[0].n == 2 && marked == 1, "packed into "
	   "%zu nodes: the pieces of the cut item lose the mark, Y keeps "
	   "it (%zu marked)", nout, marked);
	for (size_t c = 0; c < nout; c++)
		ilist_free(&out[c]);
	free(out);
	ilist_free(&l);
}

/* ---- a pass over a span against a pass over the whole list -------- */

static unsigned long long rnd_state = 88172645463325252ull;

static unsigned rnd(unsigned n)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return (unsigned)(rnd_state % n);
}

/* A tail item to go after left (NULL: none) and before right (NULL:
 * none): it often continues left or leads into right, so passes have
 * joins to make, some too big for max. */
static struct tree_newitem new_item(const struct tree_newitem *left,
				    const struct mitem *right, uint8_t *body)
{
	struct tree_newitem w;
	size_t len = 1 + rnd(60);
	unsigned how = rnd(3);

	memset(&w, 0, sizeof(w));
	w.key.el[0] = 1ull << 4;
	w.key.el[1] = 0x2a;
	w.key.el[2] = 1 + rnd(3);
	w.key.el[3] = rnd(500);
	if (how == 0 && left) {
		w.key = left->key;
		w.key.el[3] += left->len;
	} else if (how == 1 && right && right->key.el[3] >= len) {
		w.key = right->key;
		w.key.el[3] -= len;
	}
	for (size_t i = 0; i < len; i++)
		body[i] = (uint8_t)rnd(256);
	w.pid = FMT_ITEM_TAIL40;
	w.body = body;
	w.len = len;
	return w;
}

/* The item at the end of l as new_item's left. */
static struct tree_newitem last_of(const struct ilist *l, size_t a)
{
	struct tree_newitem w;

	memset(&w, 0, sizeof(w));
	if (a) {
		w.key = l->v[a - 1].key;
		w.len = l->v[a - 1].len;
	}
	return w;
}

/* Replace [a, b) of l by 0 to 3 new items. */
static void change(struct ilist *l)
{
	uint8_t bodies[3][64];
	struct tree_newitem w[3], left;
	size_t a = rnd((unsigned)l->n + 1), b = a, n = rnd(4);

	if (a < l->n && rnd(2))
		b = a + rnd((unsigned)(l->n - a < 3 ? l->n - a : 3) + 1);
	left = last_of(l, a);
	for (size_t i = 0; i < n; i++)
		w[i] = new_item(i ? &w[i - 1] : a ? &left : NULL,
				b < l->n ? &l->v[b] : NULL, bodies[i]);
	tap_require(ilist_splice(l, a, b, w, n) == 0, "ilist_splice");
}

/* A copy of l that says nothing of what is joined. */
static void copy_unknown(const struct ilist *l, struct ilist *c)
{
	struct ilist tmp = ILIST_EMPTY;

	for (size_t i = 0; i < l->n; i++)
		tap_require(ilist_push(&tmp, &l->v[i].key, l->v[i].pid,
				       l->v[i].body, l->v[i].len) == 0,
			    "ilist_push");
	tmp.joined = 0;
	*c = tmp;
}

static int same(const struct ilist *a, const struct ilist *b)
{
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++)
		if (fmt_key_cmp(&a->v[i].key, &b->v[i].key) ||
		    a->v[i].pid != b->v[i].pid || a->v[i].len != b->v[i].len ||
		    memcmp(a->v[i].body, b->v[i].body, a->v[i].len))
			return 0;
	return 1;
}

/* Pass l (which knows its span) and a copy (which does not): 1 when
 * both make the same list. */
static int pass_same(struct ilist *l, size_t max)
{
	struct ilist c;
	int rc;

	copy_unknown(l, &c);
	rc = !ilist_coalesce(l, max, 4096, FMT_KEY_LARGE) &&
	     !ilist_coalesce(&c, max, 4096, FMT_KEY_LARGE) && same(l, &c) &&
	     l->joined == ILIST_JOINED;
	ilist_free(&c);
	return rc;
}

/* Random lists, joined, then changed (splices, a cut, a push) and
 * joined again over the changes' span only; then packed into chunks
 * whose pieces cut off items are the span. */
static void spans(void)
{
	size_t bad = 0, badpack = 0, tried = 0, chunks = 0, cut_lists = 0;

	for (int t = 0; t < 3000; t++) {
		struct ilist l = ILIST_EMPTY, *out = NULL, tail = ILIST_EMPTY;
		size_t max = 100 + rnd(120), nout = 0, n0 = 4 + rnd(40);
		uint8_t body[64];

		for (size_t i = 0; i < n0; i++) {
			struct tree_newitem left = last_of(&l, l.n);
			struct tree_newitem w = new_item(l.n ? &left : NULL,
							 NULL, body);

			tap_require(ilist_push(&l, &w.key, w.pid, w.body,
					       w.len) == 0, "ilist_push");
		}
		tap_require(ilist_coalesce(&l, max, 4096, FMT_KEY_LARGE) == 0,
			    "ilist_coalesce");
		for (unsigned k = 1 + rnd(3); k; k--)
			change(&l);
		if (l.n > 2 && !rnd(4)) {
			tap_require(ilist_cut(&l, 1 + rnd((unsigned)l.n - 1),
					      &tail) == 0, "ilist_cut");
			cut_lists++;
		}
		if (!rnd(4)) {
			struct tree_newitem left = last_of(&l, l.n);
			struct tree_newitem w = new_item(l.n ? &left : NULL,
							 NULL, body);

			tap_require(ilist_push(&l, &w.key, w.pid, w.body,
					       w.len) == 0, "ilist_push");
		}
		tried++;
		bad += !pass_same(&l, max);
		change(&l);
		tap_require(ilist_pack(&l, max + 24, max / 2 + 24, 24, 4096,
				       FMT_KEY_LARGE, &out, &nout) == 0,
			    "ilist_pack");
		for (size_t i = 0; i < nout; i++) {
			badpack += !pass_same(&out[i], max);
			ilist_free(&out[i]);
		}
		chunks += nout;
		free(out);
		ilist_free(&tail);
		ilist_free(&l);
	}
	ok(bad == 0, "%zu changed lists (%zu cut): a pass over the changes' "
	   "span makes what a whole pass does (%zu differ)", tried, cut_lists,
	   bad);
	ok(badpack == 0, "%zu chunks of ilist_pack: the same (%zu differ)",
	   chunks, badpack);
}

/* X (object 9), A and B (object 7, B continuing A; too big for one
 * item of max 200 bytes): in nodes of 224 bytes, X and a head of A fill
 * the first; the rest of A (34 bytes) and B join in the second. */
static void pack_cut_joins(void)
{
	struct ilist l = ILIST_EMPTY, *out = NULL;
	uint8_t a[150], b[60], x[60];
	struct fmt_key kx = { { 1ull << 4, 0x2a, 9, 0 } };
	struct fmt_key ka = { { 1ull << 4, 0x2a, 7, 0 } };
	struct fmt_key kb = { { 1ull << 4, 0x2a, 7, 150 } };
	size_t nout = 0;
	int rc;

	memset(a, 'a', sizeof(a));
	memset(b, 'b', sizeof(b));
	memset(x, 'x', sizeof(x));
	tap_require(ilist_push(&l, &kx, FMT_ITEM_TAIL40, x, sizeof(x)) == 0 &&
		    ilist_push(&l, &ka, FMT_ITEM_TAIL40, a, sizeof(a)) == 0 &&
		    ilist_push(&l, &kb, FMT_ITEM_TAIL40, b, sizeof(b)) == 0,
		    "ilist_push");
	rc = ilist_pack(&l, 224, 224, 24, 4096, FMT_KEY_LARGE, &out, &nout);
	if (!rc && nout == 2 && !pass_same(&out[1], 200))
		rc = -1;
	ok(rc == 0 && nout == 2 && out[0].n == 2 && out[1].n == 1 &&
	   out[1].v[0].len == 94,
	   "a piece cut off an item joins the next item in its chunk (%zu "
	   "chunks, %zu items in the second)", nout, nout == 2 ? out[1].n : 0);
	for (size_t i = 0; i < nout; i++)
		ilist_free(&out[i]);
	free(out);
}

/* Two lists each joined, then moved into one (a node taking its left
 * neighbour's items): the pair where they meet (a file's tail split
 * across the two) must be tried by the next pass, so the moved list's
 * state is unknown; and a cut's tail, pushed to, joins whole. */
static void move_cut_joins(void)
{
	struct ilist a = ILIST_EMPTY, b = ILIST_EMPTY, t = ILIST_EMPTY;
	int rc;

	tail(&a, 7, 0, 'a', 10);
	tail(&b, 7, 10, 'b', 10);
	tail(&b, 9, 0, 'x', 10);
	rc = ilist_coalesce(&a, 200, 4096, FMT_KEY_LARGE) ||
	     ilist_coalesce(&b, 200, 4096, FMT_KEY_LARGE) ||
	     ilist_move(&a, &b) ||
	     ilist_coalesce(&a, 200, 4096, FMT_KEY_LARGE);
	ok(!rc && a.n == 2 && filled(&a.v[0], "ab", 20),
	   "two joined lists moved into one: the pair where they meet joins "
	   "(%zu items)", a.n);
	tail(&a, 9, 10, 'y', 10);
	rc = ilist_coalesce(&a, 200, 4096, FMT_KEY_LARGE) ||
	     ilist_cut(&a, 1, &t);
	tail(&t, 9, 20, 'z', 10);
	rc = rc || ilist_coalesce(&t, 200, 4096, FMT_KEY_LARGE);
	ok(!rc && t.n == 1 && filled(&t.v[0], "xyz", 30),
	   "a joined list's cut tail, pushed to, joins (%zu items)", t.n);
	ilist_free(&a);
	ilist_free(&b);
	ilist_free(&t);
}

/* Item bodies go back to size-class lists and come out again for
 * other items: rounds of items of every size up to 4,100 bytes, each
 * filled with its own byte, the list freed between rounds (whole lists
 * and single items), every body checked whole at the end of a round:
 * a body handed out smaller than asked, or twice, shows as another
 * item's bytes. */
static void body_reuse(void)
{
	uint32_t r = 12345;
	uint8_t buf[4200];
	int whole = 1, items = 0;

	for (int round = 0; round < 40; round++) {
		struct ilist l = ILIST_EMPTY;
		size_t n = 20 + round % 30;

		for (size_t i = 0; i < n; i++) {
			struct fmt_key k = { { 1ull << 4, 0x2a, 100 + i, 0 } };
			size_t len;

			r = r * 1103515245u + 12345u;
			len = (r >> 8) % 4101;
			memset(buf, (int)(i * 7 + round), len);
			tap_require(ilist_push(&l, &k, FMT_ITEM_TAIL40, buf,
					       len) == 0, "ilist_push");
			items++;
			/* one in four replaced at once: its body back to a
			 * list while the others live */
			if (i && (r >> 4) % 4 == 0) {
				struct tree_newitem w = { k, FMT_ITEM_TAIL40,
							  buf, len / 2 };

				tap_require(!ilist_splice(&l, l.n - 1, l.n,
							  &w, 1), "splice");
			}
		}
		for (size_t i = 0; i < l.n; i++)
			for (size_t j = 0; j < l.v[i].len; j++)
				if (l.v[i].body[j] !=
				    (uint8_t)(i * 7 + round))
					whole = 0;
		ilist_free(&l);
	}
	ok(whole, "bodies reused across sizes keep their own bytes (%d "
	   "items)", items);
}

/* Lists made and freed in threads at once: each thread keeps its own
 * free lists of bodies (no lock), a body freed by another thread goes
 * to that one's, and a thread's lists are freed when it ends (else
 * LeakSanitizer reports them). */
struct churn {
	uint32_t seed;
	int whole, items;
	struct ilist keep;	/* made here, freed by the main thread */
};

static void *churn_main(void *arg)
{
	struct churn *c = arg;
	uint32_t r = c->seed;
	uint8_t buf[4200];

	c->whole = 1;
	for (int round = 0; round < 60; round++) {
		struct ilist l = ILIST_EMPTY;
		size_t n = 10 + round % 40;

		for (size_t i = 0; i < n; i++) {
			struct fmt_key k = { { 1ull << 4, 0x2a, 100 + i, 0 } };
			size_t len;

			r = r * 1103515245u + 12345u;
			len = (r >> 8) % 4101;
			memset(buf, (int)(i * 5 + round + c->seed), len);
			if (ilist_push(&l, &k, FMT_ITEM_TAIL40, buf, len))
				c->whole = 0;
			c->items++;
		}
		for (size_t i = 0; i < l.n; i++)
			for (size_t j = 0; j < l.v[i].len; j++)
				if (l.v[i].body[j] !=
				    (uint8_t)(i * 5 + round + c->seed))
					c->whole = 0;
		if (round == 30)
			c->keep = l;
		else
			ilist_free(&l);
	}
	return NULL;
}

static void bodies_in_threads(void)
{
	struct churn c[3] = { { .seed = 7 }, { .seed = 99 }, { .seed = 4242 } };
	pthread_t th[3];
	int whole = 1, items = 0, started = 1;

	for (int k = 0; k < 3; k++)
		if (pthread_create(&th[k], NULL, churn_main, &c[k]))
			started = 0;
	tap_require(started, "pthread_create");
	for (int k = 0; k < 3; k++) {
		pthread_join(th[k], NULL);
		whole &= c[k].whole;
		items += c[k].items;
		ilist_free(&c[k].keep);	/* into this thread's lists */
	}
	ok(whole, "lists made and freed in three threads at once keep "
	   "their bytes (%d items)", items);
}

int main(void)
{
	plan(15);
	marks();
	move_cut_joins();
	pack_cut_joins();
	coalesce_oom();
	pack_oom();
	pack_too_big();
	spans();
	body_reuse();
	bodies_in_threads();
	return tap_done();
}
