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

/* What chk_dir_names works on: its arguments and its lists. */
struct names {
	uint32_t n, root;
	const uint32_t *dotdot;
	const struct chk_dedge *e;
	size_t ne;
	uint32_t *first;
	uint32_t *kstart, *kids;	/* directories by the directory of
					 * their tentative name */
	uint32_t *estart, *eby;		/* entries by directory */
	uint32_t *queue, *path;
	uint8_t *st;
};

/* Step 2: the tentative name of every directory. */
static void tentative(struct names *g, int (*own)(void *ctx, size_t i),
		      void *ctx)
{
	const struct chk_dedge *e = g->e;
	uint32_t *first = g->first;
	int a, b;

	for (uint32_t v = 0; v < g->n; v++)
		first[v] = CHK_NONE;
	for (size_t i = 0; i < g->ne; i++) {
		uint32_t t = e[i].t, d = e[i].d;

		if (t >= g->n || d >= g->n || t == g->root || t == d)
			continue;
		if (first[t] == CHK_NONE) {
			first[t] = (uint32_t)i;
			continue;
		}
		a = d == g->dotdot[t];
		b = e[first[t]].d == g->dotdot[t];
		if (a > b || (a == b && own && !own(ctx, first[t]) &&
			      own(ctx, i)))
			first[t] = (uint32_t)i;
	}
}

/* The lists steps 3 and 4 walk: the directories named, by the
 * directory of their tentative name, and the entries by directory. */
static int index_names(struct names *g)
{
	uint32_t n = g->n;
	uint32_t *key = malloc(((size_t)n > g->ne ? (size_t)n : g->ne) *
			       sizeof(*key) + 1);
	int rc = -ENOMEM;

	g->st = calloc((size_t)n + 1, 1);
	g->queue = malloc(((size_t)n + 1) * sizeof(*g->queue));
	g->path = malloc(((size_t)n + 1) * sizeof(*g->path));
	if (!key || !g->st || !g->queue || !g->path)
		goto out;
	for (uint32_t v = 0; v < n; v++)
		key[v] = g->first[v] == CHK_NONE ? CHK_NONE :
			 g->e[g->first[v]].d;
	if (group_by(n, n, key, &g->kstart, &g->kids))
		goto out;
	for (size_t i = 0; i < g->ne; i++)
		key[i] = g->e[i].d;
	if (group_by(n, g->ne, key, &g->estart, &g->eby))
		goto out;
	rc = 0;
out:
	free(key);
	return rc;
}

/* Step 3: from the root, first the tentative names, then any entry. */
static void from_root(struct names *g)
{
	uint32_t *queue = g->queue, *kids = g->kids, *kstart = g->kstart;
	uint8_t *st = g->st;
	size_t qn = 0;

	if (g->root >= g->n)
		return;
	st[g->root] = ST_OK;
	queue[qn++] = g->root;
	for (size_t q = 0; q < qn; q++)
		for (uint32_t k = kstart[queue[q]]; k < kstart[queue[q] + 1];
		     k++)
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
		for (uint32_t k = g->estart[v]; k < g->estart[v + 1]; k++) {
			uint32_t i = g->eby[k], t = g->e[i].t;

			if (t >= g->n || t == g->root || t == v ||
			    st[t] == ST_OK)
				continue;
			g->first[t] = i;
			st[t] = ST_OK;
			queue[qn++] = t;
		}
	}
}

/* Step 4: the loops among the directories step 3 did not reach. */
static void break_loops(struct names *g)
{
	for (uint32_t s = 0; s < g->n; s++) {
		size_t np = 0;
		uint32_t v = s;

		while (g->st[v] == ST_NEW && g->first[v] != CHK_NONE) {
			g->st[v] = ST_PATH;
			g->path[np++] = v;
			v = g->e[g->first[v]].d;
		}
		if (g->st[v] == ST_PATH)
			break_loop(g->dotdot, g->e, g->first, g->path, np, v);
		for (size_t k = 0; k < np; k++)
			g->st[g->path[k]] = ST_DONE;
	}
}

int chk_dir_names(uint32_t n, uint32_t root, const uint32_t *dotdot,
		  const struct chk_dedge *e, size_t ne,
		  int (*own)(void *ctx, size_t i), void *ctx, uint32_t *first)
{
	struct names g;
	int rc;

	memset(&g, 0, sizeof(g));
	g.n = n;
	g.root = root;
	g.dotdot = dotdot;
	g.e = e;
	g.ne = ne;
	g.first = first;
	tentative(&g, own, ctx);
	rc = index_names(&g);
	if (!rc) {
		from_root(&g);
		break_loops(&g);
	}
	free(g.kstart);
	free(g.kids);
	free(g.estart);
	free(g.eby);
	free(g.queue);
	free(g.path);
	free(g.st);
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
