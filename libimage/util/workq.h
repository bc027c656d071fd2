/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: one work queue for the library's thread pools (the cluster
 * encoder's batches, the packer's compressed-file read-ahead and stream
 * window, the packer's image writer): a fixed pool of worker threads
 * taking the items submitted in the order submitted (as erofs-utils'
 * lib/workqueue.c).
 *
 * An item is the caller's: it embeds a struct workq_item and keeps its
 * own result, so results come back in the order the caller wants by
 * waiting for the items in that order (workq_wait). Workers are
 * numbered 1..n and fn gets the number (per-worker state such as an
 * encoder); a caller that helps while it waits runs items as worker 0.
 * With one worker and no caller helping, the items run one after
 * another in submission order.
 * Items are never cancelled: a caller that failed still drains. */
#ifndef R4_LIBIMAGE_UTIL_WORKQ_H
#define R4_LIBIMAGE_UTIL_WORKQ_H

#include <stddef.h>

struct workq_item;
typedef void (*workq_fn)(struct workq_item *it, unsigned worker);

struct workq_item {
	workq_fn fn;
	int state;		/* the queue's (0: not submitted) */
	struct workq_item *next;
};

struct workq;

/* Start n worker threads (fewer if the system refuses some); *out is
 * NULL when none started: then workq_submit runs each item at once, in
 * the caller's thread, as worker 0. 0 or -ENOMEM. */
int workq_new(unsigned n, struct workq **out);
/* Worker threads running (0 for a NULL queue). */
unsigned workq_threads(const struct workq *q);
/* Queue it (fn set by the caller): a free worker takes it. */
void workq_submit(struct workq *q, struct workq_item *it, workq_fn fn);
/* Wait until it is done; with help the caller runs queued items
 * meanwhile (as worker 0). An item not submitted counts as done. */
void workq_wait(struct workq *q, struct workq_item *it, int help);
/* Wait until every item submitted is done (help: as workq_wait). */
void workq_drain(struct workq *q, int help);
/* Whether it is done (no waiting). */
int workq_done(struct workq *q, const struct workq_item *it);
/* Drain, stop and join the workers, free q (NULL: nothing). */
void workq_free(struct workq *q);

#endif
