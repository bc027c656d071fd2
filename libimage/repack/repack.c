/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: a repack run: the plan, the free space check, batches until
 * the layout is the target one or the time limit is reached. Nothing
 * is kept between runs: each batch starts from what the volume says. */
#include "config.h"
#include <errno.h>
#include <string.h>
#include <time.h>
#include "libimage/repack/repack_int.h"
#include "libimage/vol/volume.h"
#include "libimage/util/err.h"

#define BATCH_DEFAULT 512

void r4_repack_opts_init(struct r4_repack_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->batch = BATCH_DEFAULT;
	o->time_limit = -1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int r4_repack_plan(struct r4_vol *vol, uint64_t batch,
		   struct r4_repack_plan *out, struct r4_error *err)
{
	struct rp_model m;
	int rc;

	batch = batch ? batch : BATCH_DEFAULT;
	rc = rp_model_open(vol, &m, batch, err);
	if (!rc)
		rp_plan(&m, batch, out);
	rp_model_fini(&m);
	return rc;
}

/* Batches until done, the time limit or a failure; the window is walked
 * again from the volume when the batches have filled it. */
static int batches(struct r4_vol *vol, const struct r4_repack_opts *o,
		   struct r4_repack_result *res, double t0,
		   struct r4_error *err)
{
	uint64_t limit = 4 * (res->plan.misplaced_elements +
			      res->plan.misplaced_blocks / o->batch) + 64;
	struct rp_model m;
	int rc = rp_model_open(vol, &m, o->batch, err);

	while (!rc) {
		struct rp_batch_stats st;

		rc = rp_model_next(&m, err);
		if (rc) {
			rc = rc > 0 ? 0 : rc;
			break;
		}
		rc = rp_batch(&m, o->batch, &st, err);
		if (rc)
			break;
		res->moved += st.moved;
		res->evicted += st.evicted;
		res->batches++;
		if (o->progress)
			o->progress(o->progress_ctx, res->moved,
				    res->plan.misplaced_blocks + res->evicted);
		if (o->time_limit >= 0 && now() - t0 >= o->time_limit) {
			res->outcome = R4_REPACK_TIME_LIMIT;
			break;
		}
		if (res->batches > limit)
			rc = r4i_fail(err, R4_ECORRUPT, "%s: the repack does "
				     "not converge after %llu batches",
				     vol->dev->path,
				     (unsigned long long)res->batches);
	}
	rp_model_fini(&m);
	return rc;
}

int r4_repack(struct r4_vol *vol, const struct r4_repack_opts *o,
	      struct r4_repack_result *res, struct r4_error *err)
{
	struct r4_repack_opts run;
	double t0 = now();
	int rc;

	memset(res, 0, sizeof(*res));
	if (!o->batch)
		return r4i_fail(err, R4_EINVAL, "the batch size must be at "
			       "least 1 block");
	rc = r4_repack_plan(vol, o->batch, &res->plan, err);
	if (rc)
		return rc;
	if (!res->plan.misplaced_blocks) {
		res->outcome = R4_REPACK_NOTHING;
		return 0;
	}
	if (res->plan.gain < o->min_gain) {
		res->outcome = R4_REPACK_NOT_WORTH;
		return 0;
	}
	if (o->dry_run)
		return 0;
	if (res->plan.too_little)
		return r4i_fail(err, R4_ENOSPC, "%s: %llu free blocks, a batch "
			       "of %llu blocks and its log need up to %llu "
			       "(%llu more): nothing was changed; r4resize "
			       "can grow the volume by that much first",
			       vol->dev->path,
			       (unsigned long long)res->plan.free_blocks,
			       (unsigned long long)res->plan.batch,
			       (unsigned long long)res->plan.free_needed,
			       (unsigned long long)(res->plan.free_needed -
						    res->plan.free_blocks));
	run = *o;
	run.batch = res->plan.batch;
	rc = batches(vol, &run, res, t0, err);
	res->seconds = now() - t0;
	return rc;
}
