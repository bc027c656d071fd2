/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: a node written at once (node_fill, libimage/tree/nodebuf.c, the
 * tree writer's tmod_write_node) into a block of garbage (a buffer used
 * before: txn_new_raw) against the same node made by fmt_node_init and
 * one node_append_item per item: the same bytes, for both node plugins,
 * both key sizes, several block sizes, items of 0 bytes up to what
 * fills the node, the node41 checksum stamped after; an item that does
 * not fit fails the same way at the same item and leaves the same bytes; a bad level or node plugin fails
 * as fmt_node_init does. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "libimage/tree/nodebuf.h"
#include "format/node.h"
#include "format/plugin.h"
#include "r4/errors.h"

#define MAXBS 16384
#define MAXN 400

struct it {
	struct fmt_key key;
	unsigned pid;
	size_t len;
	uint8_t *body;		/* NULL: a zero-filled body */
};

static uint32_t rnd_state = 12345;

static uint32_t rnd(void)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return rnd_state >> 8;
}

/* n items in key order, of random lengths up to maxlen. */
static size_t make_items(struct it *v, size_t n, size_t maxlen)
{
	for (size_t i = 0; i < n; i++) {
		memset(&v[i], 0, sizeof(v[i]));
		v[i].key.el[0] = (uint64_t)(i / 3 + 1) << 4;
		v[i].key.el[1] = 0x2a;
		v[i].key.el[2] = 100 + i;
		v[i].key.el[3] = rnd();
		v[i].pid = (i % 3) ? FMT_ITEM_TAIL40 : FMT_ITEM_STAT40;
		v[i].len = maxlen ? rnd() % (maxlen + 1) : 0;
		v[i].body = NULL;
		if (v[i].len && (rnd() % 8)) {
			v[i].body = malloc(v[i].len);
			for (size_t k = 0; v[i].body && k < v[i].len; k++)
				v[i].body[k] = (uint8_t)rnd();
		}
	}
	return n;
}

static void free_items(struct it *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].body);
}

/* Both ways into a and b (a: per item; b: node_fill into a block of
 * garbage): the codes in *ra, *rb, the items tried (the failing one
 * included) in *ia, *ib. */
static void both(uint8_t *a, uint8_t *b, size_t bs, enum fmt_key_policy pol,
		 unsigned node_pid, unsigned level, const struct it *v,
		 size_t n, int *ra, int *rb, size_t *ia, size_t *ib)
{
	struct node_fill f;
	size_t i;
	int rc, rc2;

	memset(a, 0xa5, bs);
	rc = fmt_node_init(a, bs, node_pid, level, 77);
	for (i = 0; !rc && i < n; i++)
		rc = node_append_item(a, bs, pol, &v[i].key, v[i].pid,
				      v[i].body, v[i].len, NULL);
	*ia = i;
	fmt_node_stamp(a, bs);
	*ra = rc;

	memset(b, 0x5a, bs);	/* node_fill writes every byte */
	rc = node_fill_begin(&f, b, bs, pol, node_pid, level, 77);
	for (i = 0; !rc && i < n; i++)
		rc = node_fill_item(&f, &v[i].key, v[i].pid, v[i].body,
				    v[i].len);
	rc2 = node_fill_end(&f);
	if (!rc)
		rc = rc2;
	*ib = i;
	fmt_node_stamp(b, bs);
	*rb = rc;
}

int main(void)
{
	static const size_t sizes[] = { 512, 4096, 8192, MAXBS };
	static struct it v[MAXN];
	uint8_t *a = malloc(MAXBS), *b = malloc(MAXBS);
	unsigned same = 0, runs = 0, full = 0, nospc = 0, bad = 0;
	size_t ia, ib;
	int ra, rb;

	plan(6);
	tap_require(a && b, "memory");
	for (unsigned np = 0; np < 2; np++)
	for (unsigned kp = 0; kp < 2; kp++)
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
	for (unsigned r = 0; r < 40; r++) {
		enum fmt_key_policy pol = kp ? FMT_KEY_LARGE : FMT_KEY_SHORT;
		size_t bs = sizes[si], n = 1 + rnd() % 60;
		size_t maxlen = (r % 4 == 0) ? 0 : (r % 4 == 1) ? 8 :
				bs / (r % 4 == 2 ? 20 : 4);
		unsigned level = 1 + r % 3;

		make_items(v, n, maxlen);
		both(a, b, bs, pol, np ? FMT_NODE41 : FMT_NODE40, level, v, n,
		     &ra, &rb, &ia, &ib);
		runs++;
		if (ra == rb && ia == ib && !memcmp(a, b, bs))
			same++;
		else
			printf("# node%u key %u bs %zu run %u: rc %d/%d at %zu/%zu\n",
			     np ? 41 : 40, kp, bs, r, ra, rb, ia, ib);
		full += !ra;
		nospc += ra == R4_ENOSPC;
		free_items(v, n);
	}
	ok(same == runs, "%u of %u nodes the same bytes both ways", same,
	   runs);
	ok(full > 100 && nospc > 50,
	   "%u nodes whole, %u stopped at an item that does not fit", full,
	   nospc);

	/* one item that fills the node to its last byte, then one more */
	for (unsigned np = 0; np < 2; np++) {
		size_t bs = 4096, hs = fmt_node_header_size(np), n;

		make_items(v, 2, 0);
		v[0].len = bs - hs - fmt_item_header_size(FMT_KEY_LARGE);
		v[0].body = malloc(v[0].len + 1);
		if (v[0].body)
			memset(v[0].body, 0x5c, v[0].len + 1);
		n = 2;
		both(a, b, bs, FMT_KEY_LARGE, np, 1, v, n, &ra, &rb, &ia, &ib);
		bad += !(ra == R4_ENOSPC && rb == R4_ENOSPC && ia == 2 &&
			 ib == 2 && !memcmp(a, b, bs));
		both(a, b, bs, FMT_KEY_LARGE, np, 1, v, 1, &ra, &rb, &ia, &ib);
		bad += !(!ra && !rb && !memcmp(a, b, bs));
		v[0].len++;	/* one byte past the node: refused */
		both(a, b, bs, FMT_KEY_LARGE, np, 1, v, 1, &ra, &rb, &ia, &ib);
		v[0].len--;
		bad += !(ra == R4_ENOSPC && rb == R4_ENOSPC && ia == 1 &&
			 ib == 1 && !memcmp(a, b, bs));
		free_items(v, 2);
	}
	ok(!bad, "a node filled to its last byte; an item past it, one "
	   "byte too long");

	make_items(v, 3, 100);
	both(a, b, 4096, FMT_KEY_LARGE, FMT_NODE40, 0, v, 3, &ra, &rb, &ia,
	     &ib);
	ok(ra == R4_ERANGE && rb == R4_ERANGE && ia == ib,
	   "level 0: R4_ERANGE both ways (%d, %d)", ra, rb);
	both(a, b, 4096, FMT_KEY_LARGE, 7, 1, v, 3, &ra, &rb, &ia, &ib);
	ok(ra == R4_EUNSUPP && rb == R4_EUNSUPP && ia == ib,
	   "node plugin 7: R4_EUNSUPP both ways (%d, %d)", ra, rb);
	both(a, b, 100, FMT_KEY_LARGE, FMT_NODE40, 1, v, 3, &ra, &rb, &ia,
	     &ib);
	ok(ra == R4_ERANGE && rb == R4_ERANGE && ia == ib,
	   "a 100-byte block: R4_ERANGE both ways (%d, %d)", ra, rb);
	free_items(v, 3);
	free(a);
	free(b);
	return tap_done();
}
