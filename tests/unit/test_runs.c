/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the checker's sorted runs (libimage/check/runs.c): records
 * sorted across many spilled runs, read twice; kept in order without a
 * comparison; the spill file is unlinked at once; an unusable $TMPDIR
 * is an error, not a crash, once a run must be written. */
#include "config.h"
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include "tap.h"
#include "libimage/check/check.h"

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

int main(void)
{
	char dir[] = "r4runs.XXXXXX";
	struct chk_runs r;
	uint64_t in, out;
	int ordered;
	size_t n;

	plan(14);
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
	return tap_done();
}
