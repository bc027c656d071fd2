/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: sorted runs of fixed-size records for the checker's object
 * pass. Records gather in a buffer of a set budget; a full buffer is
 * sorted and written as one run to a temporary file (in $TMPDIR, else
 * /tmp, unlinked at once so no exit path leaves it behind); the end
 * merges the runs into one sorted sequence that can be read again from
 * the start. With a NULL comparison the records keep the order they came
 * in. What stays in memory is the budget, not the number of records. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "libimage/check/check.h"
#include "libimage/check/sort.h"
#include "libimage/util/hugemem.h"
#include "libimage/util/tmpfiles.h"
#include "r4/util.h"

#define READ_BUF (64u << 10)
/* The read buffers of a merge together: READ_BUF a run up to 64 runs,
 * less for each when there are more (10^8 records of 48 bytes are some
 * 300 runs of 16 MiB: 4 MiB of buffers, not 19) */
#define MERGE_BUF (4u << 20)

struct run_src {
	uint64_t pos, end;	/* file offsets left to read */
	uint8_t *buf;
	size_t cap;		/* bytes at buf, whole records */
	size_t have, at;	/* bytes in buf, read position */
};

int chk_runs_init(struct chk_runs *r, size_t rsz,
		  int (*cmp)(const void *, const void *), size_t budget)
{
	memset(r, 0, sizeof(*r));
	r->fd = -1;
	r->rsz = rsz;
	r->cmp = cmp;
	r->cap = budget / rsz;
	if (!r->cap)
		r->cap = 1;
	return 0;
}

void chk_runs_set_sort(struct chk_runs *r, void (*sort)(void *, size_t))
{
	r->sort = sort;
}

void chk_sort(void *base, size_t n, size_t size, chk_sort_cmp cmp)
{
	chk_sort_inline(base, n, size, cmp);
}

/* Sort the n records in the buffer (in place: no copy of them). */
static void sort_buf(struct chk_runs *r)
{
	if (r->sort)
		r->sort(r->buf, r->n);
	else
		chk_sort(r->buf, r->n, r->rsz, r->cmp);
}

/* Sort the buffer and append it to the file as one run. */
static int flush_run(struct chk_runs *r)
{
	int rc;

	if (!r->n)
		return 0;
	if (r->fd < 0) {
		rc = r4i_scratch_open("r4fsck-runs", &r->fd);
		if (rc)
			return rc;
	}
	if (r->cmp)
		sort_buf(r);
	if (R4_RESERVE(r->runs, r->caprun, r->nruns + 1, 16))
		return -ENOMEM;
	rc = r4i_pwrite_all(r->fd, r->buf, r->n * r->rsz, r->fend);
	if (rc)
		return rc;
	r->runs[r->nruns++] = r->fend;
	r->fend += (uint64_t)r->n * r->rsz;
	r->n = 0;
	return 0;
}

int chk_runs_put(struct chk_runs *r, const void *rec)
{
	int rc;

	if (!r->buf) {
		r->buf = r4i_alloc_huge(r->cap * r->rsz);
		if (!r->buf)
			return -ENOMEM;
	}
	if (r->n == r->cap) {
		rc = flush_run(r);
		if (rc)
			return rc;
	}
	memcpy(r->buf + r->n * r->rsz, rec, r->rsz);
	r->n++;
	r->total++;
	return 0;
}

static int src_fill(struct chk_runs *r, struct run_src *s)
{
	size_t want = s->cap;
	ssize_t got;

	if (s->at < s->have)
		return 1;
	if (s->pos >= s->end)
		return 0;
	if (want > s->end - s->pos)
		want = (size_t)(s->end - s->pos);
	do
		got = pread(r->fd, s->buf, want, (off_t)s->pos);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return -errno;
	if ((size_t)got < r->rsz)
		return -EIO;
	got -= got % (ssize_t)r->rsz;
	s->pos += (uint64_t)got;
	s->have = (size_t)got;
	s->at = 0;
	return 1;
}

/* Heap of sources by their current record (index order breaks ties, so
 * equal records come out in the order they went in). */
static int src_less(const struct chk_runs *r, const struct run_src *s,
		    const uint32_t *h, size_t a, size_t b)
{
	int c = r->cmp(s[h[a]].buf + s[h[a]].at, s[h[b]].buf + s[h[b]].at);

	return c < 0 || (c == 0 && h[a] < h[b]);
}

static void sift_down(const struct chk_runs *r, const struct run_src *s,
		      uint32_t *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		uint32_t t;

		if (l < n && src_less(r, s, h, l, m))
			m = l;
		if (l + 1 < n && src_less(r, s, h, l + 1, m))
			m = l + 1;
		if (m == i)
			return;
		t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

/* A source with a buffer of want bytes for every run, the first
 * records read; the heap h holds the *nh sources that are not empty. */
static int open_sources(struct chk_runs *r, struct run_src *s, uint32_t *h,
			size_t *nh, size_t want)
{
	int rc;

	for (size_t i = 0; i < r->nruns; i++) {
		s[i].pos = r->runs[i];
		s[i].end = i + 1 < r->nruns ? r->runs[i + 1] : r->fend;
		s[i].buf = malloc(want);
		if (!s[i].buf)
			return -ENOMEM;
		s[i].cap = want;
		rc = src_fill(r, &s[i]);
		if (rc < 0)
			return rc;
		if (rc)
			h[(*nh)++] = (uint32_t)i;
	}
	for (size_t i = *nh; i-- > 0;)
		sift_down(r, s, h, *nh, i);
	return 0;
}

/* Merge every run into one, written after them; out writes through a
 * buffer of READ_BUF bytes. */
static int merge_runs(struct chk_runs *r)
{
	struct run_src *s = calloc(r->nruns, sizeof(*s));
	uint32_t *h = calloc(r->nruns, sizeof(*h));
	size_t want = READ_BUF - READ_BUF % r->rsz, nh = 0, used = 0;
	size_t nruns = r->nruns, each = MERGE_BUF / nruns;
	uint8_t *out = malloc(want);
	uint64_t start = r->fend, at = r->fend;
	int rc = -ENOMEM;

	if (!s || !h || !out)
		goto out;
	each = each > READ_BUF ? READ_BUF : each < 4096 ? 4096 : each;
	rc = open_sources(r, s, h, &nh, each < r->rsz ? r->rsz :
			  each - each % r->rsz);
	if (rc)
		goto out;
	while (nh) {
		struct run_src *t = &s[h[0]];

		memcpy(out + used, t->buf + t->at, r->rsz);
		used += r->rsz;
		if (used == want) {
			rc = r4i_pwrite_all(r->fd, out, used, at);
			if (rc)
				goto out;
			at += used;
			used = 0;
		}
		t->at += r->rsz;
		rc = src_fill(r, t);
		if (rc < 0)
			goto out;
		if (!rc)
			h[0] = h[--nh];
		rc = 0;
		sift_down(r, s, h, nh, 0);
	}
	rc = r4i_pwrite_all(r->fd, out, used, at);
	if (rc)
		goto out;
	r->runs[0] = start;
	r->nruns = 1;
	r->fend = at + used;
out:
	if (s)
		for (size_t i = 0; i < nruns; i++)
			free(s[i].buf);
	free(s);
	free(h);
	free(out);
	return rc;
}

int chk_runs_finish(struct chk_runs *r)
{
	int rc;

	if (!r->nruns) {	/* all in memory */
		if (r->cmp && r->n)
			sort_buf(r);
		return chk_runs_rewind(r);
	}
	rc = flush_run(r);
	if (!rc && r->cmp && r->nruns > 1)
		rc = merge_runs(r);
	free(r->buf);
	r->buf = NULL;
	if (!rc && !r->cmp)	/* kept in order: one run from the first */
		r->nruns = 1;
	return rc ? rc : chk_runs_rewind(r);
}

int chk_runs_rewind(struct chk_runs *r)
{
	r->read = 0;
	if (!r->nruns)
		return 0;
	if (!r->rd) {
		r->rd = calloc(1, sizeof(*r->rd));
		if (!r->rd)
			return -ENOMEM;
		r->rd->cap = READ_BUF - READ_BUF % r->rsz;
		r->rd->buf = malloc(r->rd->cap);
		if (!r->rd->buf)
			return -ENOMEM;
	}
	r->rd->pos = r->runs[0];
	r->rd->end = r->fend;
	r->rd->have = r->rd->at = 0;
	return 0;
}

int chk_runs_next(struct chk_runs *r, void *rec)
{
	int rc;

	if (r->read >= r->total)
		return 0;
	if (!r->nruns) {
		memcpy(rec, r->buf + r->read * r->rsz, r->rsz);
		r->read++;
		return 1;
	}
	rc = src_fill(r, r->rd);
	if (rc <= 0)
		return rc ? rc : -EIO;
	memcpy(rec, r->rd->buf + r->rd->at, r->rsz);
	r->rd->at += r->rsz;
	r->read++;
	return 1;
}

void chk_runs_free(struct chk_runs *r)
{
	if (r->fd >= 0)
		close(r->fd);
	free(r->buf);
	free(r->runs);
	if (r->rd)
		free(r->rd->buf);
	free(r->rd);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}
