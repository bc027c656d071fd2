/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the item bodies of the tree's item lists (ilist.c), from
 * per-thread free lists by size class. */
#include "config.h"
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/tree/ibody.h"

/* The lists' item bodies, most of them 1 to 4 KiB (beyond glibc's
 * per-thread cache, which stops at about 1 KiB), come in size classes
 * of BODY_CLASS bytes and go back to a free list of their class, up to
 * BODY_POOL_BYTES in all (the rest to free()). A body carries its class
 * in a header before it, so a head that keeps its item's body at a
 * shorter length still goes back to the right list; class 0: larger
 * than the classes, plain malloc. The free lists are each thread's own
 * (no lock taken for a body: an add takes and gives back about 130,000
 * of them); a body freed by another thread than the one that took it
 * goes to the freeing thread's lists. A thread's lists are freed when
 * the thread ends (a thread-specific key's destructor); a thread for
 * which the key cannot be set keeps none (malloc and free). */
#define BODY_CLASS 64
#define BODY_CLASSES 64
#define BODY_HDR 16
#define BODY_POOL_BYTES (1u << 20)

struct body_pool {
	uint8_t *free[BODY_CLASSES + 1];
	size_t bytes;
};

static _Thread_local struct body_pool pool;
/* 0: not set up yet, 1: this thread's lists in use, -1: none */
static _Thread_local int pool_state;
static pthread_key_t pool_key;
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
static int pool_key_ok;

/* At a thread's end: its free lists given back. */
static void pool_release(void *arg)
{
	struct body_pool *bp = arg;

	pool_state = -1;	/* a body freed after this goes to free() */
	for (unsigned c = 0; c <= BODY_CLASSES; c++) {
		while (bp->free[c]) {
			uint8_t *h = bp->free[c];

			memcpy(&bp->free[c], h + BODY_HDR, sizeof(h));
			free(h);
		}
	}
	bp->bytes = 0;
}

static void pool_key_make(void)
{
	pool_key_ok = !pthread_key_create(&pool_key, pool_release);
}

/* The library unloaded (dlclose) while threads that used it live on:
 * the key goes with it, so no thread's end calls pool_release in code
 * that is gone (their lists are left, at most BODY_POOL_BYTES each). */
__attribute__((destructor)) static void pool_key_fini(void)
{
	if (pool_key_ok)
		pthread_key_delete(pool_key);
}

/* This thread's free lists, NULL when it keeps none. */
static struct body_pool *my_pool(void)
{
	if (pool_state > 0)
		return &pool;
	if (pool_state < 0)
		return NULL;
	pool_state = -1;
	if (!pthread_once(&pool_once, pool_key_make) && pool_key_ok &&
	    !pthread_setspecific(pool_key, &pool))
		pool_state = 1;
	return pool_state > 0 ? &pool : NULL;
}

static unsigned body_class(size_t len)
{
	size_t c = (len + BODY_CLASS - 1) / BODY_CLASS;

	if (!c)
		c = 1;
	return c <= BODY_CLASSES ? (unsigned)c : 0;
}

/* The bytes a body of class c (len when c is 0) has room for. */
static size_t body_room(unsigned c, size_t len)
{
	return c ? (size_t)c * BODY_CLASS : (len ? len : 1);
}

/* No body comes near this: a length past it is refused, not wrapped. */
#define BODY_MAX (SIZE_MAX / 2)

void *ibody_alloc(size_t len)
{
	unsigned c = body_class(len);
	struct body_pool *bp;
	uint8_t *h = NULL;

	if (len > BODY_MAX)
		return NULL;
	if (c && (bp = my_pool()) != NULL) {
		h = bp->free[c];
		if (h) {
			memcpy(&bp->free[c], h + BODY_HDR, sizeof(h));
			bp->bytes -= body_room(c, len);
		}
	}
	if (!h && !(h = malloc(BODY_HDR + body_room(c, len))))
		return NULL;
	memcpy(h, &c, sizeof(c));
	return h + BODY_HDR;
}

void ibody_free(void *p)
{
	uint8_t *h = p ? (uint8_t *)p - BODY_HDR : NULL;
	struct body_pool *bp;
	unsigned c = 0;

	if (h)
		memcpy(&c, h, sizeof(c));
	if (c && (bp = my_pool()) != NULL &&
	    bp->bytes + body_room(c, 0) <= BODY_POOL_BYTES) {
		memcpy(h + BODY_HDR, &bp->free[c], sizeof(h));
		bp->free[c] = h;
		bp->bytes += body_room(c, 0);
		h = NULL;
	}
	free(h);
}

/* Body p (from ibody_alloc) with room for len bytes, its bytes kept
 * (realloc: the old one stays when it fails). */
void *ibody_realloc(void *p, size_t len)
{
	unsigned c = body_class(len);
	uint8_t *h = len > BODY_MAX ? NULL :
		     realloc((uint8_t *)p - BODY_HDR,
			     BODY_HDR + body_room(c, len));

	if (!h)
		return NULL;
	memcpy(h, &c, sizeof(c));
	return h + BODY_HDR;
}
