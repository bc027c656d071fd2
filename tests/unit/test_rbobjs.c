/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the tree rebuild's copy of the check's objects
 * (libimage/repair/rebuild_objs.c): rb_obj_find finds what chk_obj_find
 * finds over the same table, the same record among duplicates, for
 * every key and its neighbours, in memory and from the scratch file
 * with the first steps' records cached (objs_levels from 1, windows of
 * half the table, to the default 16), on tables of 0 to 200,000
 * records with runs of one key across the cache's and windows' edges;
 * each from the tables and from the bounded check's kept objects
 * (chk.ranked, repair.c: rebuild_listed). */
#include "config.h"
#include <errno.h>
#include "tap.h"
#include "libimage/repair/rebuild.h"

static struct chk ref;
static struct rep R;
static struct rb b;

/* n records sorted by key, with runs of one key: mostly short, some
 * long, and five records of one key around each edge in edges[]. */
static struct chk_obj *table(size_t n)
{
	struct chk_obj *t = calloc(n ? n : 1, sizeof(*t));
	uint64_t v = 7, x = 12345, run = 0;
	size_t edges[] = { 0, n / 4, n / 2, 3 * n / 4, n - 1, 1023, 1024,
			   1025, 2048, 32767, 65535, 65536, 100000 };

	tap_require(t, "table of %zu", n);
	for (size_t i = 0; i < n; i++) {
		if (!run) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			run = 1 + (x >> 33) % ((x >> 20) % 40 ? 3 : 1500);
			v += 1 + (x >> 40) % 3;
		}
		run--;
		t[i].el0 = v >> 10;
		t[i].el1 = 5;
		t[i].el2 = 2 * v;
		t[i].size = i;
		t[i].mode = (uint16_t)(i * 7);
		t[i].flags = i & 1 ? CHK_OBJ_CCREG : 0;
	}
	for (size_t e = 0; n && e < sizeof(edges) / sizeof(edges[0]); e++) {
		size_t lo = edges[e] < 2 ? 0 : edges[e] - 2;

		for (size_t i = lo; i < n && i <= edges[e] + 2; i++) {
			t[i].el0 = t[lo].el0;
			t[i].el2 = t[lo].el2;
		}
	}
	return t;
}

/* One look-up both ways: 0 if they agree. */
static int differs(uint64_t el0, uint64_t el1, uint64_t el2)
{
	uint32_t want = chk_obj_find(&ref, el0, el1, el2);
	struct rb_obj got;
	const struct chk_obj *w;

	memset(&got, 0, sizeof(got));
	if (!rb_obj_find(&b, el0, el1, el2, &got))
		return want != CHK_NONE;
	if (want == CHK_NONE)
		return 1;
	w = &ref.objs[want];
	return got.size != want || got.el0 != w->el0 || got.el1 != w->el1 ||
	       got.el2 != w->el2 || got.mode != w->mode ||
	       got.ccreg != !!(w->flags & CHK_OBJ_CCREG);
}

/* The copy of the table as the bounded check keeps it (chk.ranked:
 * sorted runs, no tables), a run per 4 KiB of records. */
static void feed_ranked(size_t n)
{
	tap_require(!chk_runs_init(&R.c.ranked, sizeof(*R.c.objs), NULL,
				   4096), "runs for %zu", n);
	for (size_t i = 0; i < n; i++)
		tap_require(!chk_runs_put(&R.c.ranked, &ref.objs[i]),
			    "put %zu", i);
	tap_require(!chk_runs_finish(&R.c.ranked), "finish %zu", n);
	R.c.has_ranked = 1;
	free(R.c.objs);
	R.c.objs = NULL;
	R.c.nobjs = 0;
}

/* The table through rb_objs (in memory, or levels cached; from the
 * tables or, ranked, from the kept objects), then every key and key
 * +- 1 both ways. */
static void agrees(size_t n, unsigned levels, int in_memory, int ranked)
{
	struct r4_repair_opts o;
	size_t bad = 0, first = SIZE_MAX;
	int file = !in_memory && n >= ((size_t)1 << (levels ? levels : 16));

	memset(&o, 0, sizeof(o));
	o.rebuild_objs_in_memory = in_memory;
	memset(&R, 0, sizeof(R));
	R.o = &o;
	R.c.objs = malloc((n ? n : 1) * sizeof(*R.c.objs));
	tap_require(R.c.objs, "copy of %zu", n);
	memcpy(R.c.objs, ref.objs, n * sizeof(*R.c.objs));
	R.c.nobjs = n;
	if (ranked)
		feed_ranked(n);
	memset(&b, 0, sizeof(b));
	b.R = &R;
	b.objs_fd = -1;
	b.objs_levels = levels;
	tap_require(!rb_objs(&b), "rb_objs %zu", n);
	ok((b.objs_fd >= 0) == file && !R.c.objs,
	   "n %zu levels %u%s%s: %s", n, levels, in_memory ? " in memory" : "",
	   ranked ? " ranked" : "", file ? "the file" : "no file");
	for (size_t i = 0; i < n; i++)
		for (int d = -1; d <= 1; d++)
			if (differs(ref.objs[i].el0, ref.objs[i].el1,
				    ref.objs[i].el2 + (uint64_t)d)) {
				bad++;
				if (first == SIZE_MAX)
					first = i;
			}
	ok(!bad && !b.objs_err, "n %zu levels %u%s%s: %zu look-ups differ "
	   "(first at record %zu), read error %d", n, levels,
	   in_memory ? " in memory" : "", ranked ? " ranked" : "", bad, first,
	   b.objs_err);
	if (n) {	/* a read failed before: no look-up answers */
		struct rb_obj got;

		b.objs_err = -EIO;
		ok(!rb_obj_find(&b, ref.objs[0].el0, ref.objs[0].el1,
				ref.objs[0].el2, &got),
		   "n %zu levels %u: none after a failed read", n, levels);
	}
	rb_objs_free(&b);
	chk_ranked_free(&R.c);
}

int main(void)
{
	static const size_t ns[] = { 0, 1, 2, 1023, 1024, 1025, 2049,
				     70000, 200000 };
	static const unsigned levels[] = { 1, 2, 3, 10, 13, 0 };

	for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
		size_t n = ns[k];

		ref.objs = table(n);
		ref.nobjs = n;
		agrees(n, 0, 1, 0);
		agrees(n, 0, 1, 1);
		for (size_t l = 0; l < sizeof(levels) / sizeof(levels[0]);
		     l++) {
			unsigned L = levels[l] ? levels[l] : 16;

			/* windows of n >> L records, 3n look-ups: bounded */
			if ((double)3 * n * ((n >> L) + 1) > 2e7)
				continue;
			agrees(n, levels[l], 0, 0);
			agrees(n, levels[l], 0, 1);
		}
		free(ref.objs);
	}
	return tap_done();
}
