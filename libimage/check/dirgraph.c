/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: which entry is a directory's one name (its "first name") and
 * which are second names, for both object passes (semantic.c over the
 * tables, stream.c over sorted runs) and through them the repair.
 *
 * The rule (man/r4fsck.8, DIRECTORY NAMES):
 *   1. the root has no name in any directory: every entry naming it,
 *      besides "." and "..", is a second name; so is an entry naming
 *      its own directory;
 *   2. a directory's tentative name is an entry in the directory its
 *      ".." names, else any entry; of several, the one whose key was
 *      made from the name the directory was made with (large keys: the
 *      ordering of the entry's key is the directory's own), else the
 *      first in key order;
 *   3. the tentative names that lead up to the root stand; a directory
 *      whose tentative name does not (it lies below the directory
 *      itself, or in a part of the tree the root does not reach) takes
 *      instead the first entry found in a directory that does, walking
 *      from the root;
 *   4. what is left forms parts the root does not reach; in each loop
 *      of names among them (a directory named only from below itself)
 *      the name of one member is dropped: the first whose name is not
 *      in the directory its ".." names, else the first in key order.
 *      That member becomes the top of an unreachable part (the repair
 *      links it into /lost+found).
 * Every entry that names a directory and is not its first name is a
 * second name. Linear in directories and entries. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/check/check.h"

enum { ST_NEW = 0, ST_OK = 1, ST_PATH = 2, ST_DONE = 3 };

/* CSR lists: start[v]..start[v + 1] of item, grouped by key(i). */
static int group_by(uint32_t n, size_t m, const uint32_t *key,
		    uint32_t **start, uint32_t **item)
{
	uint32_t *s = calloc((size_t)n + 1, sizeof(*s));
	uint32_t *it = malloc((m ? m : 1) * sizeof(*it));
	uint32_t *at;

	if (!s || !it) {
		free(s);
		free(it);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m; i++)
		if (key[i] < n)
			s[key[i] + 1]++;
	for (uint32_t v = 0; v < n; v++)
		s[v + 1] += s[v];
	at = malloc(((size_t)n + 1) * sizeof(*at));
	if (!at) {
		free(s);
		free(it);
		return -ENOMEM;
	}
	memcpy(at, s, ((size_t)n + 1) * sizeof(*at));
	for (size_t i = 0; i < m; i++)
		if (key[i] < n)
			it[at[key[i]]++] = (uint32_t)i;
	free(at);
	*start = s;
	*item = it;
	return 0;
}

/* Step 4: break the loop that v closes at the end of path[0..np). */
static void break_loop(const uint32_t *dotdot, const struct chk_dedge *e,
		       uint32_t *first, const uint32_t *path, size_t np,
		       uint32_t v)
{
	size_t a = np;
	uint32_t top = CHK_NONE;

	while (a > 0 && path[a - 1] != v)
		a--;
	if (a == 0)
		return;		/* not on this path: no loop */
	for (size_t k = a - 1; k < np && top == CHK_NONE; k++)
		if (e[first[path[k]]].d != dotdot[path[k]])
			top = path[k];
	if (top == CHK_NONE) {
		top = path[a - 1];
		for (size_t k = a; k < np; k++)
			if (path[k] < top)
				top = path[k];
	}
	first[top] = CHK_NONE;
}

int chk_dir_names(uint32_t n, uint32_t root, const uint32_t *dotdot,
		  const struct chk_dedge *e, size_t ne,
		  int (*own)(void *ctx, size_t i), void *ctx, uint32_t *first)
{
	int a, b;
	uint32_t *key = NULL, *kstart = NULL, *kids = NULL, *estart = NULL;
	uint32_t *eby = NULL, *queue = NULL, *path = NULL;
	uint8_t *st = NULL;
	size_t qn = 0;
	int rc = -ENOMEM;

	for (uint32_t v = 0; v < n; v++)
		first[v] = CHK_NONE;
	/* 2: tentative names */
	for (size_t i = 0; i < ne; i++) {
		uint32_t t = e[i].t, d = e[i].d;

		if (t >= n || d >= n || t == root || t == d)
			continue;
		if (first[t] == CHK_NONE) {
			first[t] = (uint32_t)i;
			continue;
		}
		a = d == dotdot[t];
		b = e[first[t]].d == dotdot[t];
		if (a > b || (a == b && own && !own(ctx, first[t]) &&
			      own(ctx, i)))
			first[t] = (uint32_t)i;
	}
	key = malloc(((size_t)n > ne ? (size_t)n : ne) * sizeof(*key) + 1);
	st = calloc((size_t)n + 1, 1);
	queue = malloc(((size_t)n + 1) * sizeof(*queue));
	path = malloc(((size_t)n + 1) * sizeof(*path));
	if (!key || !st || !queue || !path)
		goto out;
	/* the directories named, by the directory of their name */
	for (uint32_t v = 0; v < n; v++)
		key[v] = first[v] == CHK_NONE ? CHK_NONE : e[first[v]].d;
	if (group_by(n, n, key, &kstart, &kids))
		goto out;
	for (size_t i = 0; i < ne; i++)
		key[i] = e[i].d;
	if (group_by(n, ne, key, &estart, &eby))
		goto out;
	/* 3: from the root, first the tentative names, then any entry */
	if (root < n) {
		st[root] = ST_OK;
		queue[qn++] = root;
		for (size_t q = 0; q < qn; q++)
			for (uint32_t k = kstart[queue[q]];
			     k < kstart[queue[q] + 1]; k++)
				if (st[kids[k]] != ST_OK) {
					st[kids[k]] = ST_OK;
					queue[qn++] = kids[k];
				}
		for (size_t q = 0; q < qn; q++) {
			uint32_t v = queue[q];

			for (uint32_t k = kstart[v]; k < kstart[v + 1]; k++)
				if (st[kids[k]] != ST_OK) {
					st[kids[k]] = ST_OK;
					queue[qn++] = kids[k];
				}
			for (uint32_t k = estart[v]; k < estart[v + 1]; k++) {
				uint32_t i = eby[k], t = e[i].t;

				if (t >= n || t == root || t == v ||
				    st[t] == ST_OK)
					continue;
				first[t] = i;
				st[t] = ST_OK;
				queue[qn++] = t;
			}
		}
	}
	/* 4: loops among the rest */
	for (uint32_t s = 0; s < n; s++) {
		size_t np = 0;
		uint32_t v = s;

		while (st[v] == ST_NEW && first[v] != CHK_NONE) {
			st[v] = ST_PATH;
			path[np++] = v;
			v = e[first[v]].d;
		}
		if (st[v] == ST_PATH)
			break_loop(dotdot, e, first, path, np, v);
		for (size_t k = 0; k < np; k++)
			st[path[k]] = ST_DONE;
	}
	rc = 0;
out:
	free(key);
	free(kstart);
	free(kids);
	free(estart);
	free(eby);
	free(queue);
	free(path);
	free(st);
	return rc;
}

int chk_dir_above(uint32_t n, const uint32_t *first,
		  const struct chk_dedge *e, uint32_t t, uint32_t d)
{
	uint32_t v = d;

	/* first names form a tree: the climb ends; bounded all the same,
	 * as a deep tree with many second names would cost their product */
	for (uint32_t steps = 0; v < n && steps <= CHK_ABOVE_MAX; steps++) {
		if (v == t)
			return 1;
		if (first[v] == CHK_NONE)
			return 0;
		v = e[first[v]].d;
	}
	return 0;
}
