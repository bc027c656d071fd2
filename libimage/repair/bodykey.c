/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: whether a body item lost its object to a damaged key, which
 * the tree rebuild mends before the object pass (objects.c) would make
 * a stat data for the body (repair.c: rebuild_mends); over the check's
 * tables. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include "libimage/repair/repair.h"

/* Whether some stat data has key elements el0 and el1 (a locality and,
 * large keys, the ordering a name gives). */
static int same_ordering(const struct chk *c, uint64_t el0, uint64_t el1)
{
	size_t lo = 0, hi = c->nobjs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (chk_cmp3(c->objs[mid].el0, c->objs[mid].el1, 0, el0, el1,
			     0) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->nobjs && c->objs[lo].el0 == el0 &&
	       c->objs[lo].el1 == el1;
}

static int key_cmp3(const void *x, const void *y)
{
	const struct fmt_key *a = x, *b = y;

	return chk_cmp3(a->el[0], a->el[1], a->el[2], b->el[0], b->el[1],
			b->el[2]);
}

int rep_body_key_damaged(struct rep *R)
{
	struct chk *c = &R->c;
	struct chk_oid *byoid = chk_oid_index(c);
	struct fmt_key *named = NULL;
	size_t nnamed = 0;
	int found = 0, rc;

	if (!byoid)
		return -ENOMEM;
	/* Bodies under a key an entry names, whose stat data the key pass
	 * puts back there (keys.c), are not damaged. */
	rc = rep_named_keys(R, &named, &nnamed);
	if (rc) {
		free(byoid);
		return rc;
	}
	for (size_t i = 0; i < c->nbodies && !found; i++) {
		const struct chk_body *b = &c->bodies[i];
		struct fmt_key k = { { b->el0, b->el1, b->el2, 0 } };

		if (nnamed && bsearch(&k, named, nnamed, sizeof(*named),
				      key_cmp3))
			continue;
		if (chk_obj_find(c, b->el0, b->el1, b->el2) == CHK_NONE &&
		    !(b->kinds & CHK_BODY_CTAIL) &&
		    (chk_oid_find(c, byoid, b->el2 & CHK_OID_MASK) != CHK_NONE ||
		     (b->el2 & ~CHK_OID_MASK) ||
		     (b->el1 && same_ordering(c, b->el0, b->el1))))
			found = 1;
	}
	free(named);
	free(byoid);
	return found;
}
