/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the work queue (workq.h): one lock, a FIFO of items, workers
 * that take its head, and one condition each for "work queued" and
 * "an item done". */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include "libimage/util/workq.h"

enum { WQ_IDLE = 0, WQ_QUEUED, WQ_RUNNING, WQ_DONE };

struct workq {
	pthread_mutex_t mu;
	pthread_cond_t work, done;
	struct workq_item *head, *tail;
	size_t pending;		/* queued or running */
	int stop;
	unsigned nth;
	pthread_t *th;
};

struct wstart {
	struct workq *q;
	unsigned id;
};

/* Take the head item (the lock held), NULL when none is queued. */
static struct workq_item *take(struct workq *q)
{
	struct workq_item *it = q->head;

	if (it) {
		q->head = it->next;
		if (!q->head)
			q->tail = NULL;
		it->state = WQ_RUNNING;
	}
	return it;
}

/* Run it outside the lock (held on entry and on return). */
static void run(struct workq *q, struct workq_item *it, unsigned id)
{
	pthread_mutex_unlock(&q->mu);
	it->fn(it, id);
	pthread_mutex_lock(&q->mu);
	it->state = WQ_DONE;
	q->pending--;
	pthread_cond_broadcast(&q->done);
}

static void *worker(void *arg)
{
	struct workq *q = ((struct wstart *)arg)->q;
	unsigned id = ((struct wstart *)arg)->id;

	free(arg);
	pthread_mutex_lock(&q->mu);
	for (;;) {
		struct workq_item *it = take(q);

		if (it) {
			run(q, it, id);
			continue;
		}
		if (q->stop)
			break;
		pthread_cond_wait(&q->work, &q->mu);
	}
	pthread_mutex_unlock(&q->mu);
	return NULL;
}

int workq_new(unsigned n, struct workq **out)
{
	struct workq *q;

	*out = NULL;
	if (!n)
		return 0;
	q = calloc(1, sizeof(*q));
	if (!q || !(q->th = calloc(n, sizeof(*q->th)))) {
		free(q);
		return -ENOMEM;
	}
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->work, NULL);
	pthread_cond_init(&q->done, NULL);
	for (unsigned i = 0; i < n; i++) {
		struct wstart *w = malloc(sizeof(*w));

		if (!w)
			break;
		w->q = q;
		w->id = i + 1;
		if (pthread_create(&q->th[i], NULL, worker, w)) {
			free(w);
			break;
		}
		q->nth = i + 1;
	}
	if (!q->nth) {
		workq_free(q);
		return 0;
	}
	*out = q;
	return 0;
}

unsigned workq_threads(const struct workq *q)
{
	return q ? q->nth : 0;
}

void workq_submit(struct workq *q, struct workq_item *it, workq_fn fn)
{
	it->fn = fn;
	it->next = NULL;
	if (!q) {
		it->state = WQ_RUNNING;
		fn(it, 0);
		it->state = WQ_DONE;
		return;
	}
	pthread_mutex_lock(&q->mu);
	it->state = WQ_QUEUED;
	if (q->tail)
		q->tail->next = it;
	else
		q->head = it;
	q->tail = it;
	q->pending++;
	pthread_cond_signal(&q->work);
	pthread_mutex_unlock(&q->mu);
}

/* Wait (the lock held) until it is done, or every item when it is NULL. */
static void wait_locked(struct workq *q, const struct workq_item *it,
			int help)
{
	while (it ? it->state == WQ_QUEUED || it->state == WQ_RUNNING
		  : q->pending != 0) {
		struct workq_item *mine = help ? take(q) : NULL;

		if (mine)
			run(q, mine, 0);
		else
			pthread_cond_wait(&q->done, &q->mu);
	}
}

void workq_wait(struct workq *q, struct workq_item *it, int help)
{
	if (!q)
		return;
	pthread_mutex_lock(&q->mu);
	wait_locked(q, it, help);
	pthread_mutex_unlock(&q->mu);
}

void workq_drain(struct workq *q, int help)
{
	if (!q)
		return;
	pthread_mutex_lock(&q->mu);
	wait_locked(q, NULL, help);
	pthread_mutex_unlock(&q->mu);
}

int workq_done(struct workq *q, const struct workq_item *it)
{
	int done;

	if (!q)
		return 1;
	pthread_mutex_lock(&q->mu);
	done = it->state != WQ_QUEUED && it->state != WQ_RUNNING;
	pthread_mutex_unlock(&q->mu);
	return done;
}

void workq_free(struct workq *q)
{
	if (!q)
		return;
	pthread_mutex_lock(&q->mu);
	wait_locked(q, NULL, 0);
	q->stop = 1;
	pthread_cond_broadcast(&q->work);
	pthread_mutex_unlock(&q->mu);
	for (unsigned i = 0; i < q->nth; i++)
		pthread_join(q->th[i], NULL);
	pthread_cond_destroy(&q->work);
	pthread_cond_destroy(&q->done);
	pthread_mutex_destroy(&q->mu);
	free(q->th);
	free(q);
}
