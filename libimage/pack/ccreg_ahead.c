/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the packer's read-ahead of deferred data (pack/ccreg.h):
 * compressed files of a directory source read and compressed by worker
 * threads, one job per file, in the order the leaves take them. */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/pack/ccreg.h"
#include "libimage/obj/ccreg_encode.h"
#include "libimage/util/err.h"
#include "libimage/util/workq.h"
#include "format/cluster.h"
#include "format/item.h"
#include "format/plugin.h"
#include "libimage/obj/encode.h"
#include "r4/util.h"
#include "libimage/pack/ccreg_int.h"

/* ---- reading ahead ------------------------------------------------- */

/* A buffer of at least size bytes for a job's disk clusters (the disk
 * clusters of a file never take more than its size; job_run asks for a
 * cluster's worst case more, room_job's): the smallest spare that fits,
 * else a new one. */
static uint8_t *buf_take(struct ccreg_pipe *p, size_t size, size_t *cap)
{
	unsigned best = AHEAD_SPARE;
	uint8_t *d = NULL;

	pthread_mutex_lock(&p->mu);
	/* at most twice the size: what a job holds is counted by its size
	 * against AHEAD_BYTES, so a big spare stays for a big file */
	for (unsigned i = 0; i < p->nspare; i++)
		if (p->spare_cap[i] >= size &&
		    p->spare_cap[i] <= 2 * size + AHEAD_GRAIN &&
		    (best == AHEAD_SPARE ||
		    p->spare_cap[i] < p->spare_cap[best]))
			best = i;
	if (best != AHEAD_SPARE) {
		d = p->spare[best];
		*cap = p->spare_cap[best];
		p->spare_bytes -= *cap;
		p->nspare--;
		p->spare[best] = p->spare[p->nspare];
		p->spare_cap[best] = p->spare_cap[p->nspare];
	}
	pthread_mutex_unlock(&p->mu);
	if (d)
		return d;
	*cap = (size + AHEAD_GRAIN - 1) / AHEAD_GRAIN * AHEAD_GRAIN;
	return malloc(*cap ? *cap : AHEAD_GRAIN);
}

/* Keep a job's buffer for the next ones (p->mu held), in place of the
 * smallest spare when there is no room and that one is smaller: the
 * buffer left out is returned, for the caller to free outside the
 * lock. */
static uint8_t *buf_keep(struct ccreg_pipe *p, uint8_t *d, size_t cap)
{
	unsigned low = 0;
	uint8_t *out;

	if (!d || cap > AHEAD_SPARE_BYTES)
		return d;
	if (p->nspare < AHEAD_SPARE &&
	    p->spare_bytes + cap <= AHEAD_SPARE_BYTES) {
		p->spare[p->nspare] = d;
		p->spare_cap[p->nspare++] = cap;
		p->spare_bytes += cap;
		return NULL;
	}
	for (unsigned i = 1; i < p->nspare; i++)
		if (p->spare_cap[i] < p->spare_cap[low])
			low = i;
	if (!p->nspare || p->spare_cap[low] >= cap ||
	    p->spare_bytes - p->spare_cap[low] + cap > AHEAD_SPARE_BYTES)
		return d;
	out = p->spare[low];
	p->spare_bytes += cap - p->spare_cap[low];
	p->spare[low] = d;
	p->spare_cap[low] = cap;
	return out;
}

/* Give a job's buffer back: kept for the next jobs, or freed. */
static void buf_give(struct ccreg_pipe *p, uint8_t *d, size_t cap)
{
	pthread_mutex_lock(&p->mu);
	d = buf_keep(p, d, cap);
	pthread_mutex_unlock(&p->mu);
	free(d);
}

static int sink_job(void *sctx, uint64_t idx, const uint8_t *dc, size_t len,
		    struct r4_error *err)
{
	struct ccreg_job *j = sctx;

	j->len[idx] = (uint32_t)len;
	/* a file's disk clusters never take more than its size (buf_take);
	 * a reused buffer must not be written past should that change */
	if (len > j->cap - j->used)
		return r4i_fail(err, -EIO, "disk cluster %llu past the "
				"read-ahead buffer's %zu bytes",
				(unsigned long long)idx, j->cap);
	/* a hole: dc is NULL (memcpy must not see it); a cluster
	 * compressed where room_job put it is in place already */
	if (len && dc != j->data + j->used)
		memcpy(j->data + j->used, dc, len);	/* <= the cluster's */
	j->used += len;
	return 0;
}

/* The encoder compresses each cluster straight into the job's buffer,
 * past the clusters before it (buf_take leaves a cluster's worst case
 * of room past the file's size). */
static uint8_t *room_job(void *sctx, size_t need)
{
	struct ccreg_job *j = sctx;

	return j->cap - j->used >= need ? j->data + j->used : NULL;
}

/* One file on a worker: conv's test, then (full) every disk cluster
 * into memory. The same calls as the packer's own path, so the same
 * bytes. */
static void job_run(struct r4_pack *b, struct obj_ccreg_enc *e,
		    struct ccreg_job *j)
{
	const struct r4_data_source *s = b->o.source;
	struct bobj *o = j->o;
	uint64_t n = (o->size + b->ccreg->csize - 1) >> b->ccreg->shift;
	struct r4_error err = { 0 };
	struct obj_ccreg_rd r;
	char path[4096];
	int keep = 1, rc;

	j->keep = 1;
	if (!j->full && !obj_ccreg_enc_c0_done(e, o->size))
		return;		/* nothing to decide: the packer reads it */
	pack_ns_obj_path(b, o, path, sizeof(path));
	obj_ccreg_rd_init(&r, NULL, NULL, path, o->size);
	rc = s->open(s->src_ctx, path, &r.fn, &r.ctx, &err);
	if (rc) {
		rc = r4i_fail(&err, rc, "%s: cannot open the data: %s", path,
			      r4_strerror(rc));
		goto out;
	}
	r.eof = 0;
	rc = obj_ccreg_enc_conv_first(e, &r, &keep, &err);
	if (!rc && keep && j->full) {
		j->data = buf_take(&b->ccreg->pipe, (size_t)o->size +
				   obj_ccreg_enc_cap(e), &j->cap);
		j->len = calloc((size_t)n, sizeof(*j->len));
		if (!j->data || !j->len)
			rc = r4i_fail(&err, -ENOMEM, "%s: out of memory", path);
		/* As pack_ccreg_emit: cluster 0 reused when conv read it
		 * (zeros when the input has none there, doc/compress.md
		 * §3.4.1) */
		if (!rc)
			rc = obj_ccreg_enc_file_to(e, &r, 0,
					obj_ccreg_enc_c0_done(e, o->size),
					sink_job, room_job, j, &err);
		if (!rc)
			rc = obj_ccreg_rd_finish(&r, &err);
	}
	s->close(r.ctx);
out:
	j->keep = keep;
	if (rc) {
		j->rc = rc;
		j->err = malloc(sizeof(err));
		if (j->err)
			*j->err = err;
	}
	if (rc || !keep || !j->full) {
		if (j->data)
			buf_give(&b->ccreg->pipe, j->data, j->cap);
		free(j->len);
		j->data = NULL;
		j->len = NULL;
		j->full = 0;
	}
}

static void pipe_fn(struct workq_item *it, unsigned w);

/* Hand jobs to the workers, in order (p->mu held): any the packer waits
 * for; others while fewer than AHEAD_BYTES of file data are held and a
 * worker is free. Past that, or for a large file, only conv's decision
 * is made ahead and the packer compresses the file itself (on its own
 * pool) when it gets there. */
static void pipe_feed(struct ccreg_pipe *p)
{
	while (p->next < p->njobs &&
	       (p->next < p->need ||
		(p->held < AHEAD_BYTES && p->running < p->pool.nth))) {
		struct ccreg_job *j = &p->jobs[p->next++];

		p->running++;
		workq_submit(p->pool.q, &j->wi, pipe_fn);
	}
}

/* A job on worker w: whole in memory when it fits in what may be held
 * when it starts. */
static void pipe_fn(struct workq_item *it, unsigned w)
{
	struct ccreg_job *j = (struct ccreg_job *)((char *)it -
					   offsetof(struct ccreg_job, wi));
	struct ccreg_pipe *p = &j->b->ccreg->pipe;
	uint64_t size = j->o->size;

	pthread_mutex_lock(&p->mu);
	j->full = size <= AHEAD_FILE &&
		  (!p->held || p->held + size <= AHEAD_BYTES);
	if (j->full) {
		j->held = size;
		p->held += size;
	}
	pthread_mutex_unlock(&p->mu);
	job_run(j->b, p->pool.enc[w - 1], j);
	pthread_mutex_lock(&p->mu);
	if (!j->full && j->held) {
		p->held -= j->held;
		j->held = 0;
	}
	p->running--;
	pipe_feed(p);
	pthread_mutex_unlock(&p->mu);
}

int pack_ccreg_ahead_begin(struct r4_pack *b, struct r4_error *err)
{
	struct pack_ccreg *cc = b->ccreg;
	struct ccreg_pipe *p;
	size_t n = 0;
	unsigned want;
	int rc = 0;

	if (!cc || !b->o.source || !b->o.source->parallel ||
	    b->o.threads == 1)
		return 0;
	p = &cc->pipe;
	want = ccreg_pool_want(b);
	for (struct bobj *d = b->root; d; d = d->u.sub->qnext)
		for (size_t i = 0; i < d->u.sub->nkids; i++) {
			struct bobj *o = d->u.sub->kids[i]->obj;

			n += o->primary == d->u.sub->kids[i] &&
			     o->type == R4_ENT_REG && o->ccreg == CCREG_YES &&
			     o->data == BD_DEFERRED && o->size;
		}
	if (!n)
		return 0;
	p->jobs = calloc(n, sizeof(*p->jobs));
	if (!p->jobs)
		return r4i_fail(err, -ENOMEM, "out of memory");
	if (pthread_mutex_init(&p->mu, NULL))
		return r4i_fail(err, -ENOMEM, "cannot make a lock");
	p->mu_on = 1;
	rc = ccreg_pool_encoders(cc, &p->pool, want, err);
	if (rc)
		return rc;	/* pack_ccreg_fini frees them */
	for (struct bobj *d = b->root; d; d = d->u.sub->qnext)
		for (size_t i = 0; i < d->u.sub->nkids; i++) {
			struct bobj *o = d->u.sub->kids[i]->obj;

			if (o->primary == d->u.sub->kids[i] &&
			    o->type == R4_ENT_REG && o->ccreg == CCREG_YES &&
			    o->data == BD_DEFERRED && o->size) {
				p->jobs[p->njobs].b = b;
				p->jobs[p->njobs].o = o;
				o->u.reg->ccreg_job = ++p->njobs;
			}
		}
	ccreg_pool_run(&p->pool, want);
	if (!p->pool.nth) {	/* no thread: the packer does every file */
		for (size_t i = 0; i < p->njobs; i++)
			p->jobs[i].o->u.reg->ccreg_job = 0;
		return 0;
	}
	pthread_mutex_lock(&p->mu);
	pipe_feed(p);
	pthread_mutex_unlock(&p->mu);
	return 0;
}

void ccreg_pipe_stop(struct r4_pack *b)
{
	struct ccreg_pipe *p = &b->ccreg->pipe;

	if (p->mu_on) {		/* nothing more handed over */
		pthread_mutex_lock(&p->mu);
		p->next = p->njobs;
		pthread_mutex_unlock(&p->mu);
	}
	ccreg_pool_halt(&p->pool);
	if (p->mu_on)
		pthread_mutex_destroy(&p->mu);
	p->mu_on = 0;
	p->next = p->need = p->running = 0;
	p->held = 0;
	for (unsigned i = 0; i < p->nspare; i++)
		free(p->spare[i]);
	p->nspare = 0;
	p->spare_bytes = 0;
	for (size_t i = 0; i < p->njobs; i++) {
		p->jobs[i].o->u.reg->ccreg_job = 0;
		free(p->jobs[i].data);
		free(p->jobs[i].len);
		free(p->jobs[i].err);
	}
	free(p->jobs);
	p->jobs = NULL;
	p->njobs = 0;
}

void pack_ccreg_ahead_end(struct r4_pack *b)
{
	if (b->ccreg)
		ccreg_pipe_stop(b);
}

/* The packer's turn for o: wait until its job is done. NULL when o has
 * no job. */
struct ccreg_job *ccreg_pipe_wait(struct r4_pack *b, const struct bobj *o)
{
	struct ccreg_pipe *p = &b->ccreg->pipe;
	struct ccreg_job *j;
	size_t job = o->type == R4_ENT_REG && o->size && o->u.reg ?
		     o->u.reg->ccreg_job : 0;

	if (!job || !p->pool.nth)
		return NULL;
	j = &p->jobs[job - 1];
	pthread_mutex_lock(&p->mu);
	if (p->need < job) {
		p->need = job;
		pipe_feed(p);	/* j is handed over now */
	}
	pthread_mutex_unlock(&p->mu);
	workq_wait(p->pool.q, &j->wi, 0);
	return j;
}

int ccreg_job_fail(struct ccreg_job *j, struct r4_error *err)
{
	if (j->err)
		*err = *j->err;
	else
		r4i_fail(err, j->rc, "%s", r4_strerror(j->rc));
	return j->rc;
}

/* The packer has placed job j: its bytes leave what is held ahead (jobs
 * held back by AHEAD_BYTES go on once a quarter of it is free again,
 * not after every file) and its buffers go. */
void ccreg_job_done(struct r4_pack *b, struct ccreg_job *j)
{
	struct ccreg_pipe *p = &b->ccreg->pipe;
	uint8_t *out;

	pthread_mutex_lock(&p->mu);
	p->held -= j->held;
	j->held = 0;
	if (p->held <= AHEAD_BYTES / 4 * 3)
		pipe_feed(p);
	out = buf_keep(p, j->data, j->cap);
	pthread_mutex_unlock(&p->mu);
	free(out);
	free(j->len);
	j->data = NULL;
	j->len = NULL;
}
