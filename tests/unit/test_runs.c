/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the checker's sorted runs (libimage/check/runs.c): records
 * sorted across many spilled runs, read twice; kept in order without a
 * comparison; the spill file is unlinked at once; an unusable $TMPDIR
 * is an error, not a crash, once a run must be written. The in-place
 * sort (check/sort.h) against qsort on every length to 300 and on
 * orders that make a plain quicksort quadratic. */
#include "config.h"
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include "tap.h"
#include "libimage/check/check.h"
#include "libimage/check/sort.h"

struct rec {
	uint64_t key, seq;
};

static int rec_cmp(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Put n records (keys from a fixed generator), finish; 0 or -errno. */
static int fill(struct chk_runs *r, size_t n, uint64_t *sum)
{
	uint64_t x = 88172645463325252ULL;
	int rc = 0;

	*sum = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		struct rec v;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		v.key = x % 1000;
		v.seq = i;
		*sum += v.key * 1000003 + v.seq;
		rc = chk_runs_put(r, &v);
	}
	return rc ? rc : chk_runs_finish(r);
}

/* Read everything: records, whether sorted (or in put order), sum. */
static size_t drain(struct chk_runs *r, int sorted, int *order_ok,
		    uint64_t *sum)
{
	struct rec v, prev = { 0, 0 };
	size_t n = 0;

	*order_ok = 1;
	*sum = 0;
	while (chk_runs_next(r, &v) == 1) {
		if (sorted ? (n && rec_cmp(&prev, &v) > 0) : v.seq != n)
			*order_ok = 0;
		*sum += v.key * 1000003 + v.seq;
		prev = v;
		n++;
	}
	return n;
}

/* Records of an odd size (not a multiple of 8: the swaps' byte copies)
 * with a key of few values (many ties broken by seq) and a tail. */
struct odd {
	uint32_t key, seq;
	uint8_t tail[13];
};

static int odd_cmp(const void *a, const void *b)
{
	const struct odd *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void odd_sort(void *base, size_t n)
{
	chk_sort_inline(base, n, sizeof(struct odd), odd_cmp);
}

/* Keys of n records in one of the shapes: 0 random of 7 values, 1
 * random, 2 ascending, 3 descending, 4 all equal, 5 organ pipe, 6 the
 * median-of-three killer (sorted pairs interleaved). */
static uint32_t shape_key(int shape, size_t i, size_t n, uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	switch (shape) {
	case 0: return (uint32_t)(*x % 7);
	case 1: return (uint32_t)*x;
	case 2: return (uint32_t)i;
	case 3: return (uint32_t)(n - i);
	case 4: return 5;
	case 5: return (uint32_t)(i < n / 2 ? i : n - i);
	default: return (uint32_t)(i % 2 ? n / 2 + i / 2 : i / 2);
	}
}

/* chk_sort, the inlined sort and qsort agree on every length to 300
 * and some long ones, in every shape; 1 when all do. */
static int sorts_agree(void)
{
	static const size_t longs[] = { 1000, 4097, 65536 };
	struct odd *a = calloc(65536, sizeof(*a)), *b, *c;
	uint64_t x = 0x9E3779B97F4A7C15ULL;
	int good = 1;

	b = calloc(65536, sizeof(*b));
	c = calloc(65536, sizeof(*c));
	for (size_t t = 0; a && b && c && good && t < 300 + 3; t++) {
		size_t n = t < 300 ? t : longs[t - 300];

		for (int shape = 0; shape < 7 && good; shape++) {
			for (size_t i = 0; i < n; i++) {
				a[i].key = shape_key(shape, i, n, &x);
				a[i].seq = (uint32_t)(x >> 40) % 3;
				memset(a[i].tail, (int)(i & 0xff),
				       sizeof(a[i].tail));
			}
			memcpy(b, a, n * sizeof(*a));
			memcpy(c, a, n * sizeof(*a));
			qsort(a, n, sizeof(*a), odd_cmp);
			chk_sort(b, n, sizeof(*b), odd_cmp);
			odd_sort(c, n);
			/* equal records may swap: compare the keys, and
			 * that no record was lost or doubled (the sums of
			 * their tails, which tell them apart) */
			for (size_t i = 0, sa = 0, sb = 0, sc = 0; good; i++) {
				if (i == n) {
					good = sa == sb && sa == sc;
					break;
				}
				good = !odd_cmp(&a[i], &b[i]) &&
				       !odd_cmp(&a[i], &c[i]);
				sa += a[i].tail[0];
				sb += b[i].tail[0];
				sc += c[i].tail[0];
			}
			if (!good)
				printf("# length %zu shape %d differs\n", n,
				       shape);
		}
	}
	good = good && a && b && c;
	free(a);
	free(b);
	free(c);
	return good;
}

int main(void)
{
	char dir[] = "r4runs.XXXXXX";
	struct chk_runs r;
	uint64_t in, out;
	int ordered;
	size_t n;

	plan(15);
	tap_require(mkdtemp(dir) != NULL, "a temporary folder");
	setenv("TMPDIR", dir, 1);

	/* 7 records a run: about 1,430 runs to merge */
	chk_runs_init(&r, sizeof(struct rec), rec_cmp, 7 * sizeof(struct rec));
	ok(fill(&r, 10000, &in) == 0, "10,000 records in runs of 7");
	ok(r.nruns == 1 && r.fd >= 0, "spilled, merged into one run");
	ok(entries(dir) == 0, "the spill file has no name");
	n = drain(&r, 1, &ordered, &out);
	ok(n == 10000 && ordered && out == in, "read back sorted, all of them");
	ok(chk_runs_rewind(&r) == 0, "rewind");
	n = drain(&r, 1, &ordered, &out);
	ok(n == 10000 && ordered && out == in, "read again");
	chk_runs_free(&r);

	/* in memory: nothing written */
	chk_runs_init(&r, sizeof(struct rec), rec_cmp, 1 << 20);
	ok(fill(&r, 10000, &in) == 0 && r.fd < 0, "in memory");
	n = drain(&r, 1, &ordered, &out);
	ok(n == 10000 && ordered && out == in, "sorted in memory");
	chk_runs_free(&r);

	/* no comparison: the order put */
	chk_runs_init(&r, sizeof(struct rec), NULL, 5 * sizeof(struct rec));
	ok(fill(&r, 1003, &in) == 0 && r.fd >= 0, "kept in order, spilled");
	n = drain(&r, 0, &ordered, &out);
	ok(n == 1003 && ordered && out == in, "read in the order put");
	chk_runs_free(&r);

	/* empty */
	chk_runs_init(&r, sizeof(struct rec), rec_cmp, 64);
	ok(fill(&r, 0, &in) == 0, "no records");
	ok(drain(&r, 1, &ordered, &out) == 0, "reads nothing");
	chk_runs_free(&r);

	/* a $TMPDIR that does not exist: an error when a run is written */
	setenv("TMPDIR", "/nonexistent-r4kit-dir", 1);
	chk_runs_init(&r, sizeof(struct rec), rec_cmp, 7 * sizeof(struct rec));
	ok(fill(&r, 100, &in) == -ENOENT, "no $TMPDIR: -ENOENT");
	chk_runs_free(&r);

	ok(rmdir(dir) == 0, "the folder is left empty");
	ok(sorts_agree(), "the in-place sort orders as qsort, lengths 0 to "
	   "300 and 65,536, 7 orders of keys");
	return tap_done();
}
