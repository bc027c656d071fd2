/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the work queue (libimage/util/workq.c): every item submitted
 * runs once, on a worker of the pool or on a helping caller (worker 0);
 * one worker runs them in the order submitted; waiting for one item
 * returns when it is done; a queue that could not start runs items at
 * once; workq_free drains first. */
#include "config.h"
#include <stddef.h>
#include <unistd.h>
#include "tap.h"
#include "libimage/util/workq.h"

#define N 200

struct item {
	struct workq_item wi;
	int runs;
	unsigned worker;
	unsigned seq;		/* order it ran in (one worker) */
	int slow;
};

static unsigned ran;		/* items run so far (one worker only) */

static void fn(struct workq_item *it, unsigned worker)
{
	struct item *x = (struct item *)((char *)it -
					 offsetof(struct item, wi));

	if (x->slow)
		usleep(2000);
	x->runs++;
	x->worker = worker;
	x->seq = __atomic_fetch_add(&ran, 1, __ATOMIC_SEQ_CST);
}

static void pool(unsigned n, int help)
{
	static struct item it[N];
	struct workq *q;
	int once = 1, workers_ok = 1, ordered = 1;

	memset(it, 0, sizeof(it));
	ran = 0;
	tap_require(workq_new(n, &q) == 0 && q, "a pool of %u", n);
	ok(workq_threads(q) == n, "%u workers (%u)", n, workq_threads(q));
	it[0].slow = 1;
	for (unsigned i = 0; i < N; i++)
		workq_submit(q, &it[i].wi, fn);
	workq_wait(q, &it[N / 2].wi, help);
	ok(it[N / 2].runs == 1, "%u workers: the item waited for ran", n);
	workq_drain(q, help);
	for (unsigned i = 0; i < N; i++) {
		once &= it[i].runs == 1 && workq_done(q, &it[i].wi);
		workers_ok &= it[i].worker <= n && (help || it[i].worker);
		ordered &= it[i].seq == i;
	}
	ok(once, "%u workers%s: every item ran once, done", n,
	   help ? ", the caller helping" : "");
	ok(workers_ok, "%u workers: worker numbers 1..%u%s", n, n,
	   help ? " or 0" : "");
	if (n == 1 && !help)
		ok(ordered, "one worker: in the order submitted");
	/* items submitted after a drain, then workq_free drains them */
	for (unsigned i = 0; i < N; i++)
		it[i].runs = 0;
	for (unsigned i = 0; i < N; i++)
		workq_submit(q, &it[i].wi, fn);
	workq_free(q);
	once = 1;
	for (unsigned i = 0; i < N; i++)
		once &= it[i].runs == 1;
	ok(once, "%u workers: workq_free ran every item first", n);
}

int main(void)
{
	struct item x = { 0 };
	struct workq *q = (struct workq *)&x;

	ok(workq_new(0, &q) == 0 && !q, "no workers: no queue");
	workq_submit(NULL, &x.wi, fn);
	ok(x.runs == 1 && x.worker == 0 && workq_done(NULL, &x.wi),
	   "no queue: the item runs at once, as worker 0");
	workq_wait(NULL, &x.wi, 1);
	workq_drain(NULL, 1);
	workq_free(NULL);
	pool(1, 0);
	pool(1, 1);
	pool(3, 0);
	pool(4, 1);
	return tap_done();
}
