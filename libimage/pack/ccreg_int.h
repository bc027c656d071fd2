/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: inside the packer's compressed files (pack/ccreg.h), shared by
 * pack/ccreg.c (the files' items, the worker pool), pack/ccreg_stream.c
 * (the window over a stream) and pack/ccreg_ahead.c (the read-ahead of
 * deferred data). Not for other rooms. */
#ifndef R4_LIBIMAGE_PACK_CCREG_INT_H
#define R4_LIBIMAGE_PACK_CCREG_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include "libimage/pack/ccreg.h"
#include "libimage/obj/ccreg_encode.h"
#include "libimage/util/workq.h"

/* Reading ahead (deferred data from a parallel source): one job per
 * compressed file, in the order the leaves take them, done by worker
 * threads while the packer packs the leaves. */
#define AHEAD_BYTES (64u << 20)	/* file bytes held ahead, at most */
#define AHEAD_FILE (4u << 20)	/* larger files: decided ahead only */
#define AHEAD_THREADS 8
/* The buffers of placed jobs are kept for the next ones, the smallest
 * that fits taken first: a fresh buffer's pages cost a page fault each
 * when first written, about as much CPU as lzo1 spends compressing them
 * (glibc gives big freed blocks back to the kernel). At most AHEAD_SPARE
 * buffers, AHEAD_SPARE_BYTES in all; new ones are made in multiples of
 * AHEAD_GRAIN so that they fit the next files. */
#define AHEAD_SPARE 16u
#define AHEAD_SPARE_BYTES (16u << 20)
#define AHEAD_GRAIN (64u << 10)

struct ccreg_job {
	struct workq_item wi;	/* on the read-ahead's queue */
	struct r4_pack *b;
	struct bobj *o;
	int full;		/* the disk clusters are in data */
	int keep;		/* doc/compress.md §4.4: stays compressed */
	int rc;
	struct r4_error *err;	/* when rc */
	uint8_t *data;		/* disk clusters back to back */
	size_t cap;		/* data's size */
	uint32_t *len;		/* per cluster (0: a hole) */
	size_t used;		/* bytes in data */
	uint64_t held;		/* bytes counted against AHEAD_BYTES */
};

/* Worker threads (util/workq.h), each with its own encoder, that the
 * directory read-ahead (ccreg_pipe) and the stream window (ccreg_stream) both
 * run: worker i compresses with enc[i - 1]. */
struct ccreg_pool {
	struct workq *q;		/* NULL: no worker */
	unsigned nth;
	struct obj_ccreg_enc *enc[AHEAD_THREADS];
};

struct ccreg_pipe {
	struct ccreg_pool pool;
	pthread_mutex_t mu;	/* next, need, held, running (mu_on) */
	int mu_on;
	struct ccreg_job *jobs;
	size_t njobs, next;	/* next job to hand to the workers */
	size_t need;		/* the packer waits for jobs before this */
	size_t running;		/* handed over, not finished */
	uint64_t held;
	uint8_t *spare[AHEAD_SPARE];	/* buffers to reuse (mu) */
	size_t spare_cap[AHEAD_SPARE];
	unsigned nspare;
	size_t spare_bytes;
};

/* Reading ahead from a stream (an archive, read once, in order): the
 * packer copies each compressed file's data chunks into memory and
 * hands the file to worker threads; the files leave the window in the
 * order they came (into the spool, or, when conv turns a file into an
 * ordinary one, through the ordinary path), so everything the image
 * depends on happens in the same order as without the window. */
#define STREAM_BYTES (32u << 20)	/* file bytes held, at most */
#define STREAM_FILE AHEAD_FILE		/* larger files: not read ahead */
#define STREAM_JOBS 4096u		/* files held, at most */
/* Handoffs in batches, so that a build of many small files does not pay
 * a thread wake-up (two futex calls and a context switch) per file:
 * files go to the work queue once STREAM_KICK_JOBS files or
 * STREAM_KICK_BYTES bytes wait (or the packer itself waits); a full
 * window waits for the file STREAM_BATCH places after its oldest, and
 * then lets all the finished ones go at once. */
#define STREAM_KICK_JOBS 16u
#define STREAM_KICK_BYTES (1u << 20)
#define STREAM_BATCH 32u
/* The files' bytes go into one ring of STREAM_BYTES, made once, in the
 * order they came (which is the order they leave), so that a file costs
 * no malloc and no fresh pages. Finished jobs are kept for the next
 * files with their other buffers: at most STREAM_SPARE, with buffers of
 * at most SPARE_BUF bytes. */
#define STREAM_SPARE 64u
#define SPARE_BUF (1u << 20)

struct schunk {
	uint64_t off;
	size_t len;
};

struct sjob {
	struct workq_item wi;	/* on the window's queue */
	struct r4_pack *b;
	struct bobj *o;
	char *path;
	size_t path_cap, ch_cap, data_cap, len_cap;
	size_t roff;		/* in[]'s place in the ring */
	struct sjob *spare_next;
	/* the input: chunks back to back in in[] (in the ring), as the
	 * stream gave them (adjacent ones joined); kept until the file
	 * leaves the window (conv may need it again; the disk clusters
	 * may be written over it) */
	uint8_t *in;
	struct schunk *ch;
	size_t nch;
	int keep, rc;
	struct r4_error err;	/* when rc */
	uint8_t *data;		/* a buffer for the disk clusters */
	uint8_t *dst;		/* the disk clusters back to back: in data,
				 * or over in[] (sjob_run) */
	uint32_t *len;		/* per cluster (0: a hole) */
	size_t used;
};

struct ccreg_stream {
	struct ccreg_pool pool;
	struct sjob *ring[STREAM_JOBS];
	uint64_t head, next, tail;	/* oldest held, next to hand to the
					 * workers, end */
	uint64_t held;			/* file bytes in the window */
	uint64_t queued;		/* of them, not handed over yet */
	int off;			/* could not start */
	uint8_t *rbuf;			/* the ring, STREAM_BYTES */
	size_t rend;			/* the end of the newest file in it */
	int wrapped;			/* the files run past the end to 0 */
	struct sjob *spare;		/* finished jobs to reuse */
	unsigned nspare;
};

struct pack_ccreg {
	struct obj_ccreg_enc *e;
	unsigned shift;
	size_t csize;
	unsigned alg, mode;
	struct ccreg_pipe pipe;
	struct ccreg_stream st;
};

/* The worker pool (pack/ccreg.c). */
unsigned ccreg_pool_want(const struct r4_pack *b);
int ccreg_pool_encoders(const struct pack_ccreg *cc, struct ccreg_pool *w,
			unsigned want, struct r4_error *err);
void ccreg_pool_run(struct ccreg_pool *w, unsigned want);
void ccreg_pool_halt(struct ccreg_pool *w);

/* The window over a stream (pack/ccreg_stream.c): 0 when the file was
 * taken into the window, 1 when the caller compresses it now, < 0 an
 * error. */
int ccreg_stream_take(struct r4_pack *b, struct bobj *o, r4_data_fn fn,
		      void *ctx, const char *path, struct r4_error *err);
void ccreg_stream_stop(struct r4_pack *b);

/* The read-ahead of deferred data (pack/ccreg_ahead.c). */
void ccreg_pipe_stop(struct r4_pack *b);
struct ccreg_job *ccreg_pipe_wait(struct r4_pack *b, const struct bobj *o);
int ccreg_job_fail(struct ccreg_job *j, struct r4_error *err);
void ccreg_job_done(struct r4_pack *b, struct ccreg_job *j);

#endif
