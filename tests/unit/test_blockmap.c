/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the checker's map of blocks in use (libimage/check/blockmap.c):
 * chk_map_next against a bit-by-bit walk with chk_map_test on maps of
 * every shape the checker makes and some it never does: empty, no
 * blocks, chunks of one byte and of a real bitmap block (not a whole
 * number of words), a last chunk cut short, bits on every chunk edge
 * and on the last block, chunks set and cleared again, starts past the
 * end; and a sparse map of 2^31 blocks (an 8 TiB volume) walked. */
#include "config.h"
#include <errno.h>
#include "tap.h"
#include "libimage/check/check.h"

/* chk_map_next agrees from every start (and past the end) with a walk
 * down from the end testing one bit at a time; the first start where
 * it does not is reported. */
static void agrees(const struct chk_map *m, const char *what)
{
	uint64_t bad = UINT64_MAX, got = 0, want = m->nbits;

	for (uint64_t b = m->nbits + 2; b-- > 0;) {
		if (chk_map_test(m, b))
			want = b;
		got = chk_map_next(m, b);
		if (got != want) {
			bad = b;
			break;
		}
	}
	if (bad == UINT64_MAX && chk_map_next(m, UINT64_MAX) != m->nbits) {
		bad = UINT64_MAX;
		got = chk_map_next(m, UINT64_MAX);
		want = m->nbits;
	}
	if (!ok(bad == UINT64_MAX && got == want, "%s", what))
		printf("# from %" PRIu64 ": next %" PRIu64 ", want %" PRIu64
		       "\n", bad, got, want);
}

static uint64_t rnd = 88172645463325252ull;

static uint64_t xorshift(void)
{
	rnd ^= rnd << 13;
	rnd ^= rnd >> 7;
	rnd ^= rnd << 17;
	return rnd;
}

/* Bits on both edges of every chunk, the first and the last block. */
static void edges(struct chk_map *m)
{
	for (uint64_t k = 0; k < m->nchunks; k++) {
		uint64_t lo = k * m->chunk_bits, hi = lo + m->chunk_bits - 1;

		tap_require(chk_map_set(m, lo) >= 0, "set %" PRIu64, lo);
		if (hi < m->nbits)
			tap_require(chk_map_set(m, hi) >= 0, "set");
	}
	if (m->nbits)
		tap_require(chk_map_set(m, m->nbits - 1) >= 0, "set last");
}

int main(void)
{
	/* nbits, chunk_bits: one-byte chunks, a real 4 KiB bitmap
	 * block's 32736 bits (4092 bytes: not whole words), 64-bit
	 * chunks, a last chunk cut short, a single block */
	static const uint64_t shapes[][2] = {
		{ 100, 8 }, { 3 * 32736 + 77, 32736 }, { 1000, 64 },
		{ 1000, 128 }, { 1, 8 }, { 65, 64 }, { 40000, 32736 },
	};
	const size_t nshapes = sizeof(shapes) / sizeof(shapes[0]);
	struct chk_map m;

	plan(10 + 5 * (int)nshapes);

	/* no blocks at all, and a map whose init was refused */
	tap_require(!chk_map_init(&m, 0, 8), "init");
	is_u64(chk_map_next(&m, 0), 0, "no blocks: next is 0 = nbits");
	chk_map_fini(&m);
	is_int(chk_map_init(&m, 100, 12), R4_EINVAL, "chunk of 12 bits refused");
	is_u64(chk_map_next(&m, 0), 0, "a refused map: nothing set");
	chk_map_fini(&m);

	for (size_t s = 0; s < nshapes; s++) {
		char what[96];
		uint64_t n = shapes[s][0];

		tap_require(!chk_map_init(&m, n, shapes[s][1]), "init");
		snprintf(what, sizeof(what), "%" PRIu64 "/%" PRIu64 ": empty",
			 n, shapes[s][1]);
		agrees(&m, what);
		edges(&m);
		snprintf(what, sizeof(what), "%" PRIu64 "/%" PRIu64
			 ": chunk edges and the last block", n, shapes[s][1]);
		agrees(&m, what);
		/* every bit alone, each byte's bits on their own */
		{
			uint64_t bad = UINT64_MAX;

			for (uint64_t b = 0; b < n; b++)
				chk_map_clear(&m, b);
			for (uint64_t b = 0; b < n && bad == UINT64_MAX; b++) {
				tap_require(chk_map_set(&m, b) >= 0, "set");
				if (chk_map_next(&m, 0) != b ||
				    (b && chk_map_next(&m, b - 1) != b) ||
				    chk_map_next(&m, b) != b ||
				    chk_map_next(&m, b + 1) != n)
					bad = b;
				chk_map_clear(&m, b);
			}
			snprintf(what, sizeof(what), "%" PRIu64 "/%" PRIu64
				 ": each bit alone", n, shapes[s][1]);
			if (!ok(bad == UINT64_MAX, "%s", what))
				printf("# bit %" PRIu64 "\n", bad);
		}
		/* chunks set and cleared again: allocated, all zero */
		snprintf(what, sizeof(what), "%" PRIu64 "/%" PRIu64
			 ": chunks cleared again", n, shapes[s][1]);
		agrees(&m, what);
		for (int i = 0; i < 40; i++)
			tap_require(chk_map_set(&m, xorshift() % n) >= 0, "set");
		snprintf(what, sizeof(what), "%" PRIu64 "/%" PRIu64
			 ": random bits", n, shapes[s][1]);
		agrees(&m, what);
		chk_map_fini(&m);
	}

	/* hostile sizes: the chunk table cannot be had, chunk_bits 0 */
	is_int(chk_map_init(&m, UINT64_MAX, 8), -ENOMEM,
	       "2^64 blocks in bytes: no memory, not a wrap");
	is_u64(chk_map_next(&m, 5), m.nbits, "and nothing set in it");
	chk_map_fini(&m);
	is_int(chk_map_init(&m, 100, 0), R4_EINVAL, "chunk of 0 bits refused");
	chk_map_fini(&m);

	/* an 8 TiB volume of 4 KiB blocks: a few bits far apart, the
	 * last block among them; the walk visits just them */
	{
		const uint64_t n = 1ull << 31, bpb = 32736;
		const uint64_t want[] = { 17, bpb - 1, bpb, 1ull << 30,
					  n - bpb, n - 2, n - 1 };
		uint64_t seen[8], k = 0;

		tap_require(!chk_map_init(&m, n, bpb), "init 8 TiB");
		is_u64(chk_map_next(&m, 0), n, "8 TiB, empty: nbits");
		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
			tap_require(chk_map_set(&m, want[i]) >= 0, "set");
		for (uint64_t b = chk_map_next(&m, 0); b < n && k < 8;
		     b = chk_map_next(&m, b + 1))
			seen[k++] = b;
		is_u64(k, sizeof(want) / sizeof(want[0]), "8 TiB: bits found");
		ok(k == sizeof(want) / sizeof(want[0]) &&
		   !memcmp(seen, want, sizeof(want)), "8 TiB: in order, the last block too");
		is_u64(chk_map_next(&m, n - 1), n - 1, "from the last block");
		chk_map_fini(&m);
	}
	return tap_done();
}
