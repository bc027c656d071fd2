/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the packer's spill (issues 11, 29). Past a number of names held
 * in memory, each new name of a plain object (not a directory, not named
 * twice) is written as one record (its directory, the name, what its
 * stat data and body need) into a buffer; a full buffer is sorted by
 * (directory, name hash, order of arrival) and written as one run to a
 * temporary file in $TMPDIR (unlinked at once), followed by its sparse
 * index (every 64th record's key). Nothing stays in memory for a name:
 * only, for each run, where it and its index are and where each of its
 * directories starts. A name is not looked for when it is added: two
 * records of one name are resolved when the directory is read back at
 * finish (the later one wins), and a name made in memory over a spilled
 * one (a directory, a hard link, a name taken back into memory) writes
 * a tombstone record that wins over the earlier ones. Only what must be
 * answered at once (a hard link's target, a path through a name) reads
 * the runs that hold the directory, newest first. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "libimage/pack/packer.h"
#include "libimage/util/tmpfiles.h"
#include "r4/util.h"

#define SPILL_SPARSE 64			/* records a sparse index entry */
#define SPILL_READ (64u << 10)
#define SPILL_FIND_READ (8u << 10)
#define SREC_GONE 0xff			/* a tombstone's type */

/* One record in the buffer, sorted by (dir, h, at). */
struct sidx {
	uint64_t h;
	uint32_t dir;
	uint32_t at;			/* byte offset in the buffer */
};

/* A sparse index entry, as written after its run. */
struct spill_sparse {
	uint64_t h, off;
	uint32_t dir, pad;
};

struct spill_dix {
	uint64_t off;
	uint32_t dir;
};

struct spill_run {
	uint64_t start, end;		/* its records */
	uint64_t spoff;			/* its sparse index in the file */
	size_t nsp;
	size_t dx0, ndx;		/* its directory starts */
};

struct pack_spill {
	int fd;
	uint64_t fend;
	size_t budget;
	uint8_t *buf;			/* records */
	size_t bufcap;			/* bytes at buf (budget or more) */
	size_t used;
	struct sidx *ix;
	size_t n, capix;
	/* the buffer's records by hash: 1 + index into ix, 0 free; at
	 * most half full */
	uint32_t *bh;
	size_t bhsize;
	struct spill_run *runs;
	size_t nruns, capruns;
	struct spill_sparse *sp;	/* the sparse index of one run */
	size_t nsp, capsp;
	struct spill_dix *dx;
	size_t ndx, capdx;
	uint64_t seq, records;
	int sealed;
	/* reading */
	uint8_t *rbuf;
	size_t rcap;
	uint8_t *one;			/* the record found by find */
	size_t onecap;
	uint64_t *dd;			/* one directory's names (dedupe) */
	size_t ddcap;
};

uint64_t pack_spill_hash(uint32_t dir, const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ ((uint64_t)dir << 16);

	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 0x100000001b3ULL;
	h ^= (uint64_t)dir * 0x9e3779b97f4a7c15ULL;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	return h ^ (h >> 33);
}

int pack_spill_new(struct pack_spill **out, size_t budget)
{
	struct pack_spill *s = calloc(1, sizeof(*s));

	*out = s;
	if (!s)
		return -ENOMEM;
	s->fd = -1;
	s->budget = budget < 4096 ? 4096 : budget > (1u << 30) ? 1u << 30 :
		    budget;
	return 0;
}

void pack_spill_free(struct pack_spill *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	free(s->buf);
	free(s->ix);
	free(s->bh);
	free(s->runs);
	free(s->sp);
	free(s->dx);
	free(s->rbuf);
	free(s->one);
	free(s->dd);
	free(s);
}

size_t pack_spill_index_bytes(const struct pack_spill *s)
{
	if (!s)
		return 0;
	return s->capruns * sizeof(*s->runs) + s->capsp * sizeof(*s->sp) +
	       s->capdx * sizeof(*s->dx) + s->ddcap * sizeof(*s->dd);
}

static int key_cmp(uint32_t da, uint64_t ha, uint32_t db, uint64_t hb)
{
	if (da != db)
		return da < db ? -1 : 1;
	if (ha != hb)
		return ha < hb ? -1 : 1;
	return 0;
}

static int sidx_cmp(const void *pa, const void *pb)
{
	const struct sidx *a = pa, *b = pb;
	int c = key_cmp(a->dir, a->h, b->dir, b->h);

	if (c)
		return c;
	return a->at < b->at ? -1 : a->at > b->at;
}

static void bh_put(struct pack_spill *s, size_t i)
{
	size_t k = (size_t)s->ix[i].h & (s->bhsize - 1);

	while (s->bh[k])
		k = (k + 1) & (s->bhsize - 1);
	s->bh[k] = (uint32_t)i + 1;
}

static int bh_grow(struct pack_spill *s)
{
	size_t nsize = s->bhsize ? s->bhsize * 2 : 4096;
	uint32_t *t = calloc(nsize, sizeof(*t));

	if (!t)
		return -ENOMEM;
	free(s->bh);
	s->bh = t;
	s->bhsize = nsize;
	for (size_t i = 0; i < s->n; i++)
		bh_put(s, i);
	return 0;
}

/* Record i of the sorted buffer, at file offset at: an entry of the
 * run's sparse index every SPILL_SPARSE records, one of the directory
 * starts at each new directory. */
static int run_index(struct pack_spill *s, size_t i,
		     const struct pack_srec *h, uint64_t at)
{
	if (i % SPILL_SPARSE == 0) {
		if (R4_RESERVE(s->sp, s->capsp, s->nsp + 1, 256))
			return -ENOMEM;
		memset(&s->sp[s->nsp], 0, sizeof(*s->sp));
		s->sp[s->nsp].h = h->h;
		s->sp[s->nsp].dir = h->dir;
		s->sp[s->nsp++].off = at;
	}
	if (!i || s->ix[i - 1].dir != h->dir) {
		if (R4_RESERVE(s->dx, s->capdx, s->ndx + 1, 256))
			return -ENOMEM;
		s->dx[s->ndx].dir = h->dir;
		s->dx[s->ndx++].off = at;
	}
	return 0;
}

/* Record h to file offset at, staged in out (SPILL_READ bytes, *staged
 * used) and written when out is full; a larger record on its own. */
static int run_write(struct pack_spill *s, uint8_t *out, size_t *staged,
		     const struct pack_srec *h, uint64_t at)
{
	int rc = 0;

	if (*staged + h->len > SPILL_READ) {
		rc = r4i_pwrite_all(s->fd, out, *staged, at - *staged);
		*staged = 0;
	}
	if (!rc && h->len > SPILL_READ)
		rc = r4i_pwrite_all(s->fd, h, h->len, at);
	else if (!rc) {
		memcpy(out + *staged, h, h->len);
		*staged += h->len;
	}
	return rc;
}

/* Sort the buffer and write it as one run through a staging buffer of
 * SPILL_READ bytes (a record bigger than that goes on its own), then
 * the run's sparse index. */
static int flush_run(struct pack_spill *s)
{
	struct spill_run *r;
	uint8_t *out;
	size_t o = 0, staged = 0;
	int rc = 0;

	if (!s->n)
		return 0;
	if (s->fd < 0 && (rc = r4i_scratch_open("r4pack-names", &s->fd)))
		return rc;
	if (R4_RESERVE(s->runs, s->capruns, s->nruns + 1, 16))
		return -ENOMEM;
	out = malloc(SPILL_READ);
	if (!out)
		return -ENOMEM;
	qsort(s->ix, s->n, sizeof(*s->ix), sidx_cmp);
	r = &s->runs[s->nruns];
	r->start = s->fend;
	r->dx0 = s->ndx;
	s->nsp = 0;
	for (size_t i = 0; !rc && i < s->n; i++) {
		const struct pack_srec *h =
			(const struct pack_srec *)(s->buf + s->ix[i].at);

		rc = run_index(s, i, h, s->fend + o);
		if (rc)
			break;
		rc = run_write(s, out, &staged, h, s->fend + o);
		o += h->len;
	}
	if (!rc && staged)
		rc = r4i_pwrite_all(s->fd, out, staged, s->fend + o - staged);
	free(out);
	r->end = s->fend + o;
	r->spoff = r->end;
	r->nsp = s->nsp;
	if (!rc)
		rc = r4i_pwrite_all(s->fd, s->sp, s->nsp * sizeof(*s->sp),
				    r->spoff);
	if (rc)
		return rc;
	s->fend = r->spoff + s->nsp * sizeof(*s->sp);
	memset(s->bh, 0, s->bhsize * sizeof(*s->bh));
	r->ndx = s->ndx - r->dx0;
	s->nruns++;
	s->n = 0;
	s->used = 0;
	return 0;
}

int pack_spill_put(struct pack_spill *s, const struct pack_srec *hdr,
		   const void *tail1, size_t len1, const void *tail2,
		   size_t len2, const void *tail3, size_t len3,
		   uint64_t *seq)
{
	size_t len = (sizeof(*hdr) + len1 + len2 + len3 + 7) & ~(size_t)7;
	struct pack_srec *h;
	uint8_t *p;
	int rc;

	if (s->sealed)
		return -EINVAL;
	if (len > UINT32_MAX)
		return -EOVERFLOW;
	if (R4_RESERVE(s->buf, s->bufcap, s->budget, s->budget))
		return -ENOMEM;
	if (s->used + len > s->budget && (rc = flush_run(s)))
		return rc;
	if (len > s->budget) {	/* one record bigger than the budget */
		if (R4_RESERVE(s->buf, s->bufcap, len, len))
			return -ENOMEM;
		s->budget = len;
	}
	if (R4_RESERVE(s->ix, s->capix, s->n + 1, 1024))
		return -ENOMEM;
	p = s->buf + s->used;
	h = (struct pack_srec *)p;
	*h = *hdr;
	h->len = (uint32_t)len;
	h->seq = s->seq++;
	p += sizeof(*h);
	if (len1)
		memcpy(p, tail1, len1);
	p += len1;
	if (len2)
		memcpy(p, tail2, len2);
	p += len2;
	if (len3)
		memcpy(p, tail3, len3);
	p += len3;
	memset(p, 0, (size_t)(s->buf + s->used + len - p));
	if (2 * (s->n + 1) > s->bhsize && (rc = bh_grow(s)))
		return rc;
	s->ix[s->n].h = h->h;
	s->ix[s->n].dir = h->dir;
	s->ix[s->n].at = (uint32_t)s->used;
	bh_put(s, s->n++);
	s->used += len;
	s->records++;
	if (seq)
		*seq = h->seq;
	return 0;
}

/* A reader of records from [pos, end) of the file. */
struct rrd {
	int fd;
	uint64_t pos, end;
	uint8_t *buf;
	size_t cap, have, at;
};

/* The next record (valid until the next call), 1; 0 at the end. */
static int rrd_next(struct rrd *r, const struct pack_srec **out)
{
	const struct pack_srec *h;
	size_t need = sizeof(*h);
	int rc;

	for (int pass = 0; pass < 2; pass++) {
		if (r->have - r->at < need) {
			size_t keep = r->have - r->at, want;

			if (r->pos >= r->end && keep == 0)
				return 0;
			if (need > r->cap) {
				uint8_t *nb = malloc(need + SPILL_READ);

				if (!nb)
					return -ENOMEM;
				if (keep)
					memcpy(nb, r->buf + r->at, keep);
				free(r->buf);
				r->buf = nb;
				r->cap = need + SPILL_READ;
			} else if (keep) {
				memmove(r->buf, r->buf + r->at, keep);
			}
			r->at = 0;
			r->have = keep;
			want = r->cap - keep;
			if (want > r->end - r->pos)
				want = (size_t)(r->end - r->pos);
			if (keep + want < need)
				return -EIO;
			if ((rc = r4i_pread_all(r->fd, r->buf + keep, want, r->pos)))
				return rc;
			r->pos += want;
			r->have += want;
		}
		h = (const struct pack_srec *)(r->buf + r->at);
		if (h->len < sizeof(*h) || h->len % 8)
			return -EIO;
		if (need >= h->len) {
			r->at += h->len;
			*out = h;
			return 1;
		}
		need = h->len;
	}
	h = (const struct pack_srec *)(r->buf + r->at);
	r->at += h->len;
	*out = h;
	return 1;
}

static int rec_matches(const struct pack_srec *h, uint32_t dir, uint64_t hash,
		       const char *name, size_t n)
{
	return h->dir == dir && h->h == hash && h->nlen == n &&
	       !memcmp(pack_srec_name(h), name, n);
}

static int keep_one(struct pack_spill *s, const struct pack_srec *h)
{
	if (R4_RESERVE(s->one, s->onecap, h->len, 256))
		return -ENOMEM;
	memcpy(s->one, h, h->len);
	return 1;
}

/* The latest record of name in dir among those still in the buffer:
 * 1 (a copy in s->one), 0 none, < 0 an error. */
static int find_buffered(struct pack_spill *s, uint32_t dir, uint64_t hash,
			 const char *name, size_t n)
{
	const struct pack_srec *best = NULL;

	for (size_t k = s->bhsize ? (size_t)hash & (s->bhsize - 1) : 0;
	     s->bhsize && s->bh[k]; k = (k + 1) & (s->bhsize - 1)) {
		size_t i = s->bh[k] - 1;
		const struct pack_srec *h;

		if (s->ix[i].h != hash || s->ix[i].dir != dir)
			continue;
		h = (const struct pack_srec *)(s->buf + s->ix[i].at);
		if (rec_matches(h, dir, hash, name, n) &&
		    (!best || h->seq > best->seq))
			best = h;
	}
	return best ? keep_one(s, best) : 0;
}

/* Where dir's records are in run: 1 and [*from, *to), or 0 none. */
static int run_dir(const struct pack_spill *s, const struct spill_run *run,
		   uint32_t dir, uint64_t *from, uint64_t *to)
{
	const struct spill_dix *dx = s->dx + run->dx0;
	size_t lo = 0, hi = run->ndx;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (dx[mid].dir < dir)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == run->ndx || dx[lo].dir != dir)
		return 0;
	*from = dx[lo].off;
	*to = lo + 1 < run->ndx ? dx[lo + 1].off : run->end;
	return 1;
}

/* Where to start reading run for the key (dir, hash) in [from, to):
 * the last sparse entry below the key, read from the file. */
static int run_seek(struct pack_spill *s, const struct spill_run *run,
		    uint32_t dir, uint64_t hash, uint64_t *from)
{
	size_t lo = 0, hi = run->nsp;
	struct spill_sparse e;
	int rc;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		rc = r4i_pread_all(s->fd, &e, sizeof(e),
				   run->spoff + mid * sizeof(e));
		if (rc)
			return rc;
		if (key_cmp(e.dir, e.h, dir, hash) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return 0;
	rc = r4i_pread_all(s->fd, &e, sizeof(e),
			   run->spoff + (lo - 1) * sizeof(e));
	if (!rc && e.off > *from)
		*from = e.off;
	return rc;
}

/* The latest record of name in dir in one sorted run of the file. 1
 * (a copy in s->one), 0 none, < 0 an error. */
static int find_in_run(struct pack_spill *s, const struct spill_run *run,
		       uint32_t dir, uint64_t hash, const char *name,
		       size_t n)
{
	struct rrd rd = { s->fd, 0, 0, s->rbuf, s->rcap, 0, 0 };
	const struct pack_srec *h = NULL;
	int rc, found = 0;

	if (!run_dir(s, run, dir, &rd.pos, &rd.end))
		return 0;
	if ((rc = run_seek(s, run, dir, hash, &rd.pos)))
		return rc;
	if (!rd.buf) {	/* about SPILL_SPARSE records at a time */
		rd.buf = s->rbuf = malloc(SPILL_FIND_READ);
		if (!rd.buf)
			return -ENOMEM;
		rd.cap = s->rcap = SPILL_FIND_READ;
	}
	while ((rc = rrd_next(&rd, &h)) > 0) {
		int c = key_cmp(h->dir, h->h, dir, hash);

		if (c > 0)
			break;
		if (c || !rec_matches(h, dir, hash, name, n))
			continue;
		if ((rc = keep_one(s, h)) < 0)
			break;
		found = 1;
	}
	s->rbuf = rd.buf;
	s->rcap = rd.cap;
	return rc < 0 ? rc : found;
}

int pack_spill_find(struct pack_spill *s, uint32_t dir, uint64_t hash,
		    const char *name, size_t n, const struct pack_srec **out)
{
	int rc;

	*out = NULL;
	rc = find_buffered(s, dir, hash, name, n);
	for (size_t r = s->nruns; !rc && r-- > 0;)
		rc = find_in_run(s, &s->runs[r], dir, hash, name, n);
	if (rc <= 0)
		return rc;
	if (((const struct pack_srec *)s->one)->type == SREC_GONE)
		return 0;	/* made in memory since (never asked) */
	*out = (const struct pack_srec *)s->one;
	return 1;
}

int pack_spill_gone(struct pack_spill *s, uint32_t dir, const char *name,
		    size_t n)
{
	struct pack_srec h;

	memset(&h, 0, sizeof(h));
	h.h = pack_spill_hash(dir, name, n);
	h.dir = dir;
	h.nlen = (uint16_t)n;
	h.type = SREC_GONE;
	return pack_spill_put(s, &h, NULL, 0, name, n, NULL, 0, NULL);
}

int pack_spill_seal(struct pack_spill *s)
{
	int rc = flush_run(s);

	if (rc)
		return rc;
	free(s->buf);
	free(s->ix);
	free(s->bh);
	free(s->sp);
	s->buf = NULL;
	s->ix = NULL;
	s->bh = NULL;
	s->sp = NULL;
	s->capix = s->bhsize = s->capsp = s->nsp = 0;
	s->sealed = 1;
	return 0;
}

uint64_t pack_spill_records(const struct pack_spill *s)
{
	return s ? s->records : 0;
}

/* The records of one directory, run after run: a name met again (the
 * same 64-bit hash and name) marks its earlier record gone; then the
 * gone ones and the tombstones are squeezed out, the rest keep their
 * order. */
static int dir_dedupe(struct pack_spill *s, uint8_t *buf, size_t *len)
{
	size_t n = 0, size = 64, out = 0;
	const struct pack_srec *r;

	for (size_t at = 0; at < *len; at += r->len, n++) {
		r = (const struct pack_srec *)(buf + at);
		if (r->len < sizeof(*r) || r->len % 8 || r->len > *len - at)
			return -EIO;
	}
	while (size < 2 * n)
		size *= 2;
	if (R4_RESERVE(s->dd, s->ddcap, size, 64))
		return -ENOMEM;
	memset(s->dd, 0, size * sizeof(*s->dd));
	for (size_t at = 0; at < *len; at += r->len) {
		size_t k;

		r = (const struct pack_srec *)(buf + at);
		for (k = (size_t)r->h & (size - 1); s->dd[k];
		     k = (k + 1) & (size - 1)) {
			struct pack_srec *q =
				(struct pack_srec *)(buf + s->dd[k] - 1);

			if (rec_matches(q, r->dir, r->h, pack_srec_name(r),
					r->nlen)) {
				q->type = SREC_GONE;
				break;
			}
		}
		s->dd[k] = at + 1;
	}
	for (size_t at = 0, l; at < *len; at += l) {
		r = (const struct pack_srec *)(buf + at);
		l = r->len;	/* the move may overwrite r */
		if (r->type == SREC_GONE)
			continue;
		if (out != at)
			memmove(buf + out, r, l);
		out += l;
	}
	*len = out;
	return 0;
}

int pack_spill_dir(struct pack_spill *s, uint32_t dir, uint8_t **buf,
		   size_t *cap, size_t *len)
{
	size_t used = 0;
	int rc;

	for (size_t r = 0; r < s->nruns; r++) {
		uint64_t from, to;
		size_t n;

		if (!run_dir(s, &s->runs[r], dir, &from, &to))
			continue;
		n = (size_t)(to - from);
		if (R4_RESERVE(*buf, *cap, used + n, SPILL_READ))
			return -ENOMEM;
		if ((rc = r4i_pread_all(s->fd, *buf + used, n, from)))
			return rc;
		used += n;
	}
	*len = used;
	return used ? dir_dedupe(s, *buf, len) : 0;
}
