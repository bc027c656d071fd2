/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the checker's extent units. Holes (start 0) are fine;
 * unallocated units (start 1) must not be on disk (fsck.reiser4 reports
 * them too); allocated units must lie in [first usable block,
 * block_count) and share no block with anything else in use: each block
 * is claimed in the map of used blocks (claim_unit). */
#include "config.h"
#include <errno.h>
#include "libimage/check/check.h"
#include "format/item.h"

struct ext_ctx {
	struct chk *c;
	uint64_t blk;
	unsigned i;
	const struct fmt_key *key;
	unsigned problems;
};

/* Report message m about unit u (e): its number, start and width. */
static void ext_problem(struct ext_ctx *x, int m, unsigned u,
			const struct fmt_extent40_unit *e)
{
	x->problems++;
	chk_say(x->c, m, x->blk, (int)x->i, x->key,
		(const struct chk_arg[]){ CHK_U(unit, u),
					  CHK_U(start, e->start),
					  CHK_U(width, e->width),
					  CHK_ARGS_END });
}

/* Claim the unit's blocks. A block some other owner has (the layout, a
 * node, an earlier extent) is reported once per unit as block-shared
 * and the claims go on past it, so that the unit's other blocks count
 * as used (the repair copies the shared ones: repair/twice.c). Past a
 * budget of one shared block per volume block a unit's claims end at
 * its first shared block (hostile overlapping units then cost linear
 * time). */
static int claim_unit(struct ext_ctx *x, unsigned u,
		      const struct fmt_extent40_unit *e)
{
	struct chk *c = x->c;
	int told = 0;

	for (uint64_t b = e->start; b < e->start + e->width; b++) {
		int old = chk_is_bitmap_blk(c, b) ? 1 : chk_map_set(&c->used, b);

		if (old < 0)
			return old;
		if (old) {
			if (!told) {
				c->shared++;
				CHK_SAY(c, CHK_M_EXTENT_SHARED, x->blk,
					(int)x->i, x->key, CHK_U(unit, u),
					CHK_U(at, b),
					CHK_S(owner, chk_block_owner(c, b)),
					CHK_U(start, e->start),
					CHK_U(width, e->width));
			}
			told = 1;
			if (++c->shared_blocks > c->blocks)
				return 0;
			continue;
		}
		old = chk_map_set(&c->ext, b);
		if (old < 0)
			return old;
		c->rep->extent_blocks++;
	}
	return 0;
}

static int check_unit(struct ext_ctx *x, unsigned u,
		      const struct fmt_extent40_unit *e)
{
	struct chk *c = x->c;
	uint64_t end;

	if (e->width == 0) {
		ext_problem(x, CHK_M_EXTENT_ZERO, u, e);
		return 0;
	}
	switch (fmt_extent40_kind(e)) {
	case FMT_EXTENT_HOLE:
		return 0;
	case FMT_EXTENT_UNALLOCATED:
		ext_problem(x, CHK_M_EXTENT_UNALLOCATED, u, e);
		return 0;
	default:
		break;
	}
	if (fmt_extent40_unit_end(e, &end) || end > c->blocks) {
		ext_problem(x, CHK_M_EXTENT_PAST_END, u, e);
		return 0;
	}
	if (e->start < c->first_usable) {
		ext_problem(x, CHK_M_EXTENT_RESERVED, u, e);
		return 0;
	}
	return claim_unit(x, u, e);
}

int chk_extent_item(struct chk *c, uint64_t blk, unsigned i,
		    const struct fmt_key *key, const uint8_t *body,
		    size_t len, uint64_t *end)
{
	struct ext_ctx x = { c, blk, i, key, 0 };
	struct fmt_extent40_unit e;
	uint64_t pos = fmt_key_offset(key);
	int n = fmt_extent40_units(body, len), rc, bad = -1;
	const char *why;

	*end = 0;
	if (n < 0) {
		CHK_SAY(c, CHK_M_EXTENT_SIZE, blk, (int)i, key,
			CHK_U(len, len));
		return 0;
	}
	if (pos % c->bs)
		CHK_SAY0(c, CHK_M_EXTENT_ALIGN, blk, (int)i, key);
	for (unsigned u = 0; u < (unsigned)n; u++) {
		fmt_extent40_unit(body, len, u, &e);
		rc = check_unit(&x, u, &e);
		if (rc)
			return rc;
		if (e.width > (UINT64_MAX - pos) / c->bs) {
			ext_problem(&x, CHK_M_EXTENT_PAST_MAX, u, &e);
			return 0;
		}
		pos += e.width * c->bs;
	}
	why = x.problems ? NULL : fmt_extent40_verify(body, len, c->blocks,
						     c->bs, &bad);
	if (why)
		CHK_SAY(c, CHK_M_EXTENT_UNITS, blk, (int)i, key,
			CHK_S(what, why), CHK_U(unit, bad));
	*end = pos;
	return 0;
}
