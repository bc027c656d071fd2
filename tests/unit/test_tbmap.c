/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: a transaction's block map (libimage/txn/tbmap.c): the hash for
 * blocks with a buffer, a nibble a block in chunks for the rest. A
 * random walk of tb_get/tb_settle against a plain array, blocks on both
 * sides of chunk borders (states, scopes); then a transaction on a volume of more than a
 * chunk of blocks: its spilled new blocks, written data and frees go to
 * the chunks, the commit writes them in block order across the border,
 * and an abort gives the allocations back. */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tap.h"
#include "fixture.h"
#include "r4/r4.h"
#include "libimage/vol/volume.h"
#include "libimage/txn/txn.h"
#include "libimage/txn/txn_int.h"
#include "libimage/util/err.h"

#define diag(...) \
	do { \
		printf("# "); \
		printf(__VA_ARGS__); \
		printf("\n"); \
	} while (0)

/* ---- the map against a model ---- */

#define NB 1200
static uint64_t blocks[NB];		/* the blocks the walk uses */
static struct tb model[NB];		/* what the map should say */

static uint64_t rnd_state = 88172645463325252ull;
static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* What tb_settle must leave in the hash. */
static int stays(const struct tb *e, uint32_t live)
{
	return e->b || e->state == TB_CAPTURED ||
	       (live && e->gen && e->gen >= live);
}

static int check_model(struct tbmap *m, const char *when)
{
	uint64_t count[8] = { 0 };
	int bad = 0;

	for (size_t i = 0; i < NB; i++) {
		struct tb p = tb_peek(m, blocks[i]);
		struct tb *h = tb_find(m, blocks[i]);

		count[model[i].state]++;
		if (p.state != model[i].state || p.spilled != model[i].spilled ||
		    p.b != model[i].b || p.scope != model[i].scope ||
		    (h && h->gen != model[i].gen) ||
		    (!h && model[i].b)) {
			if (!bad++)
				diag("%s: block %llu: state %u/%u spilled %u/%u "
				     "in the hash %d", when,
				     (unsigned long long)blocks[i], p.state,
				     model[i].state, p.spilled,
				     model[i].spilled, h != NULL);
		}
	}
	for (unsigned s = 1; s < 8; s++)
		if (tb_count(m, s) != count[s] && !bad++)
			diag("%s: %llu blocks in state %u, the model %llu", when,
			     (unsigned long long)tb_count(m, s), s,
			     (unsigned long long)count[s]);
	return bad;
}

/* The blocks the map walks in states (both parts, block order) are the
 * model's, ascending. */
static int check_order(struct tbmap *m, unsigned states)
{
	struct tb_iter it;
	struct tb e;
	size_t k = 0;
	uint64_t last = 0;
	int bad = 0, first = 1;

	if (tb_iter_start(&it, m, states))
		return 1;
	while (tb_iter_next(&it, &e)) {
		while (k < NB && !((states >> model[k].state) & 1))
			k++;
		if (k == NB || e.nr != blocks[k] || e.state != model[k].state ||
		    (!first && e.nr <= last)) {
			if (!bad++)
				diag("walk: got block %llu, want %llu",
				     (unsigned long long)e.nr, k < NB ?
				     (unsigned long long)blocks[k] : 0ull);
			break;
		}
		first = 0;
		last = e.nr;
		k++;
	}
	while (k < NB && !((states >> model[k].state) & 1))
		k++;
	if (!bad && k != NB) {
		diag("walk: block %llu missing", (unsigned long long)blocks[k]);
		bad++;
	}
	tb_iter_fini(&it);
	return bad;
}

static void test_model(void)
{
	static const uint64_t around[] = { 0, TB_CHUNK, 2 * TB_CHUNK,
					   5 * TB_CHUNK };
	struct io_block *fake = (struct io_block *)&model[0];
	struct tbmap m;
	int bad = 0, order = 0, placed = 0, chunks_gone;
	size_t n = 0;

	/* blocks on both sides of chunk borders, ascending */
	for (size_t a = 0; a < 4; a++)
		for (uint64_t d = 0; d < NB / 4; d++)
			blocks[n++] = around[a] + d - (a ? NB / 8 : 0);
	memset(model, 0, sizeof(model));
	for (size_t i = 0; i < NB; i++)
		model[i].nr = blocks[i];
	tb_init(&m);
	for (int step = 0; step < 200000; step++) {
		size_t i = rnd() % NB;
		uint32_t live = rnd() % 4 ? 0 : (uint32_t)(rnd() % 64);
		struct tb *e = tb_get(&m, blocks[i]);
		unsigned r = (unsigned)(rnd() % 16);

		tap_require(e, "tb_get: no memory");
		if (e->state != model[i].state || e->spilled != model[i].spilled) {
			if (!bad++)
				diag("tb_get of block %llu: state %u, the model "
				     "%u", (unsigned long long)blocks[i],
				     e->state, model[i].state);
		}
		e->state = r < 6 ? r : r < 10 ? TB_FREED : r < 13 ? TB_NEW :
			   TB_DEAD;
		e->spilled = e->state == TB_NEW && rnd() % 2;
		e->b = rnd() % 5 ? NULL : fake;
		e->scope = rnd() % 7 ? 0 : 1 + rnd() % 5;
		e->gen = rnd() % 3 ? 0 : (uint32_t)(rnd() % 64);
		model[i] = *e;
		tb_settle(&m, e, live);
		/* what left the hash left its generation behind (and had
		 * no buffer); the scope of a block not TB_DEAD goes along */
		if (!stays(&model[i], live)) {
			model[i].gen = 0;
			if (model[i].state == TB_DEAD)
				model[i].scope = 0;
			placed += tb_find(&m, blocks[i]) != NULL;
		} else
			placed += tb_find(&m, blocks[i]) == NULL;
		if (step % 20000 == 0 || step == 199999) {
			bad += check_model(&m, "random walk");
			order += check_order(&m, ~1u);
			order += check_order(&m, 1u << TB_FREED);
			order += check_order(&m, (1u << TB_NEW) |
						 (1u << TB_DATA));
		}
	}
	ok(!bad, "the map says what was set, in the hash or the chunks");
	ok(!placed, "a block with only a state and a scope leaves the hash; "
	   "a buffer, CAPTURED or a live generation keep it there");
	ok(!order, "walks in block order across chunk borders give each "
	   "block in the states once");
	/* every block dead: the chunks go */
	for (size_t i = 0; i < NB; i++) {
		struct tb *e = tb_get(&m, blocks[i]);

		*e = (struct tb){ .nr = blocks[i] };
		model[i] = *e;
		tb_settle(&m, e, 0);
	}
	chunks_gone = m.m.n == 0;
	for (size_t k = 0; k < m.nchunk; k++)
		chunks_gone &= m.chunk[k] == NULL && m.used[k] == 0;
	ok(chunks_gone && !check_model(&m, "all dead") &&
	   !check_order(&m, ~1u), "all blocks dead: an empty hash, no "
	   "chunk, no walk");
	tb_fini(&m);
}

/* ---- a transaction across a chunk border ---- */

#define BS 4096
static char pristine[64], path[64];

static int open_vol(struct r4_vol **vol)
{
	struct r4_error err = { 0 };
	int rc = r4_vol_open(path, R4_OPEN(R4_OPEN_RDWR), vol, &err);

	tap_require(!rc, "open: %s", err.msg);
	return rc;
}

/* Allocates NRUN blocks from TB_CHUNK - NRUN / 2 on (the volume's
 * own blocks and the bitmap block at the chunk border left out), fills
 * them (the bytes name the block): the odd ones by txn_new and spilled,
 * the even by txn_write_data; frees every third again. */
#define NRUN 600
static uint64_t blk[NRUN];
static uint32_t scope;		/* the odd blocks' (txn_alloc_in) */

static int work(struct txn *t, struct r4_error *err)
{
	uint64_t hint = TB_CHUNK - NRUN / 2;
	uint8_t buf[BS];
	int rc = txn_spill(t, 4, err);

	scope = txn_scope_begin(t);
	for (size_t i = 0; !rc && i < NRUN; i++) {
		rc = txn_alloc_in(t, i % 2 ? scope : 0, hint, &blk[i], err);
		hint = blk[i] + 1;
	}
	for (size_t i = 0; !rc && i < NRUN; i++) {
		struct io_block *b;

		memset(buf, (int)(i % 251) + 1, BS);
		memcpy(buf, &blk[i], 8);
		if (i % 2 == 0) {
			rc = txn_write_data(t, blk[i], buf, 1, err);
			continue;
		}
		rc = txn_new(t, blk[i], &b, err);
		if (!rc) {
			memcpy(b->data, buf, BS);
			txn_put(t, b);
		}
	}
	for (size_t i = 0; !rc && i < NRUN; i += 3)
		rc = txn_free(t, blk[i], 1, err);
	return rc;
}

static void test_txn_border(void)
{
	struct r4_error err = { 0 };
	struct r4_vol *vol;
	struct txn *t;
	uint64_t free0, wrong = 0, spilled;
	uint8_t buf[BS];
	FILE *f;
	char cmd[256];
	int rc;

	snprintf(cmd, sizeof(cmd), "cp --sparse=always '%s' '%s'", pristine,
		 path);
	tap_require(system(cmd) == 0, "cannot copy the image");
	open_vol(&vol);
	free0 = vol->sb.free_blocks;
	rc = txn_begin(vol, &t, &err);
	tap_require(!rc, "txn_begin: %s", err.msg);
	rc = work(t, &err);
	is_int(rc, 0, "a transaction across a chunk border: %s", err.msg);
	spilled = txn_spilled(t);
	ok(blk[0] < TB_CHUNK && blk[NRUN - 1] > TB_CHUNK && spilled > 0 &&
	   t->map.count[TB_NEW] > 0 && t->map.count[TB_DATA] > 0 &&
	   t->map.count[TB_DEAD] == 0 && t->map.m.n < NRUN / 4,
	   "its blocks (%llu..%llu) are in the chunks (%llu spilled, %zu in "
	   "the hash)", (unsigned long long)blk[0],
	   (unsigned long long)blk[NRUN - 1], (unsigned long long)spilled,
	   t->map.m.n);
	for (size_t i = 0; i < NRUN; i++)
		wrong += txn_owns_in(t, blk[i], scope) !=
			 (i % 2 && i % 3) ||
			 txn_owns(t, blk[i]) != (i % 3 != 0);
	ok(!wrong && txn_scope_blocks(t, scope) == NRUN / 2 - NRUN / 6,
	   "the scope of each block kept, in the hash or the chunks (%llu "
	   "wrong, %llu in the scope)", (unsigned long long)wrong,
	   (unsigned long long)txn_scope_blocks(t, scope));
	wrong = 0;
	txn_abort(t);
	for (size_t i = 0; i < NRUN; i++)
		wrong += space_test(&vol->space, blk[i], &err) != 0;
	ok(!wrong, "abort: every block allocated is free again (%llu not)",
	   (unsigned long long)wrong);
	tap_must(r4_vol_close(vol, NULL));

	open_vol(&vol);
	rc = txn_begin(vol, &t, &err);
	tap_require(!rc, "txn_begin: %s", err.msg);
	rc = work(t, &err);
	if (!rc)
		rc = txn_commit(t, &err);
	else
		txn_abort(t);
	is_int(rc, 0, "the same, committed: %s", err.msg);
	is_u64(vol->sb.free_blocks, free0 - (NRUN - NRUN / 3),
	       "the free count: the blocks kept");
	tap_must(r4_vol_close(vol, NULL));

	f = fopen(path, "rb");
	tap_require(f, "cannot open %s", path);
	wrong = 0;
	for (size_t i = 0; i < NRUN; i++) {
		uint64_t got = 0;

		if (i % 3 == 0)
			continue;
		if (fseeko(f, (off_t)(blk[i] * BS), SEEK_SET) ||
		    fread(buf, 1, BS, f) != BS)
			break;
		memcpy(&got, buf, 8);
		wrong += got != blk[i] ||
			 buf[BS - 1] != (uint8_t)(i % 251 + 1);
	}
	fclose(f);
	ok(!wrong, "every block kept has its bytes at home (%llu do not)",
	   (unsigned long long)wrong);
	open_vol(&vol);
	wrong = 0;
	for (size_t i = 0; i < NRUN; i++)
		wrong += space_test(&vol->space, blk[i], &err) != (i % 3 != 0);
	ok(!wrong, "the bitmap: used but the ones freed (%llu wrong)",
	   (unsigned long long)wrong);
	tap_must(r4_vol_close(vol, NULL));
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	int fd;

	test_model();
	if (fixture_mkfs("", "320M", pristine)) {
		tap_skip(5, "mkfs.reiser4 not installed");
		return tap_done();
	}
	snprintf(path, sizeof(path), "%s/r4tbmXXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	fd = mkstemp(path);
	tap_require(fd >= 0, "mkstemp %s failed", path);
	close(fd);
	test_txn_border();
	unlink(path);
	unlink(pristine);
	return tap_done();
}
