/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: r4_walk (libimage/obj/walk.c), the one namespace walk: every
 * entry once, depth first, a directory's entry before its entries and
 * its leave call after them, with full paths at any depth (deeper than
 * the old walkers' guards of 400 and 512 folders and their 8 KiB path
 * buffer), R4_WALK_SKIP, a callback's error, and max_depth (entries
 * deeper are not met) failing with R4_ERANGE naming the directory it
 * would have to enter, never silently; r4_walk_by_name (what r4pack
 * extract walks on) meets each directory's entries sorted by name and
 * the rest alike. The volume is made by r4pack create from a tree
 * written here. */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "r4/r4.h"
#include "r4/read.h"

#define DEEP 700
#define NSEEN 8192
#define NLONG 40	/* names in /n long enough to be hashed in keys */

static char dir[256], img[320];

static struct {
	char *path[NSEEN];
	int leave[NSEEN];
	unsigned depth[NSEEN];
	int n;
	unsigned maxd;
	const char *skip;	/* R4_WALK_SKIP at this path */
	const char *stop;	/* -77 at this path */
	int by_name;		/* r4_walk_by_name */
} t;

static void reset(void)
{
	for (int i = 0; i < t.n; i++)
		free(t.path[i]);
	memset(&t, 0, sizeof(t));
}

static int rec(void *ctx, const struct r4_walk_entry *e)
{
	(void)ctx;
	if (t.n < NSEEN) {
		t.path[t.n] = strdup(e->path);
		t.leave[t.n] = e->leave;
		t.depth[t.n] = e->depth;
		t.n++;
	}
	if (e->depth > t.maxd)
		t.maxd = e->depth;
	if (strlen(e->path) != e->path_len ||
	    e->name != e->path + e->path_len - e->name_len)
		return -99;
	if (t.skip && !e->leave && !strcmp(e->path, t.skip))
		return R4_WALK_SKIP;
	if (t.stop && !strcmp(e->path, t.stop))
		return -77;
	return 0;
}

/* Index of the first record of path (leave as given), or -1. */
static int find(const char *path, int leave)
{
	for (int i = 0; i < t.n; i++)
		if (t.leave[i] == leave && !strcmp(t.path[i], path))
			return i;
	return -1;
}

static int walk(struct r4_vol *v, unsigned max_depth, const char *skip,
		const char *stop, struct r4_error *err)
{
	struct r4_objref root;

	int by_name = t.by_name;

	reset();
	t.by_name = by_name;
	t.skip = skip;
	t.stop = stop;
	if (r4_root(v, &root, err))
		return -1;
	return (by_name ? r4_walk_by_name : r4_walk)(v, &root, "", max_depth,
						       rec, NULL, err);
}

/* The entries of /n met (not leaves), in order, are sorted by name:
 * 1, else 0; *count: how many. */
static int n_sorted(int *count)
{
	const char *last = NULL;
	int sorted = 1;

	*count = 0;
	for (int i = 0; i < t.n; i++) {
		if (t.leave[i] || strncmp(t.path[i], "/n/", 3) ||
		    strchr(t.path[i] + 3, '/'))
			continue;
		if (last && strcmp(last, t.path[i]) >= 0)
			sorted = 0;
		last = t.path[i];
		(*count)++;
	}
	return sorted;
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	struct r4_error err = { 0 };
	struct r4_vol *v = NULL;
	char cmd[1024], *deep;
	size_t dl = 0;
	int rc, ok1 = 1;

	snprintf(dir, sizeof(dir), "%s/r4walkXXXXXX", tmp && *tmp ? tmp :
		 "/tmp");
	tap_require(mkdtemp(dir), "mkdtemp %s failed", dir);
	snprintf(img, sizeof(img), "%s/w.img", dir);
	/* /a/b/c/f, /a/x, /g, /e (empty), and DEEP folders /z/z/.../z/f;
	 * and /n with NLONG files whose names' keys are hashes, not in
	 * name order, and the folder /n/d holding /n/d/f */
	snprintf(cmd, sizeof(cmd), "cd '%s' && mkdir -p src/a/b/c src/e && "
		 "echo f >src/a/b/c/f && echo x >src/a/x && echo g >src/g && "
		 "p=src/$(for i in $(seq %d); do printf z/; done) && "
		 "mkdir -p \"$p\" && echo deep >\"$p\"f && "
		 "mkdir -p src/n/d && echo f >src/n/d/f && for i in $(seq %d); "
		 "do echo $i >src/n/a_long_name_hashed_in_its_key_$i; done && "
		 "r4pack create -q src w.img", dir, DEEP, NLONG);
	tap_require(system(cmd) == 0, "r4pack create of the test tree");
	deep = malloc(DEEP * 2 + 3);
	tap_require(deep != NULL, "malloc");
	for (int i = 0; i < DEEP; i++) {
		memcpy(deep + dl, "/z", 2);
		dl += 2;
	}
	memcpy(deep + dl, "/f", 3);
	tap_require(r4_vol_open(img, R4_OPEN(R4_OPEN_RDONLY), &v, &err) == 0,
		    "open: %s", err.msg);

	rc = walk(v, 0, NULL, NULL, &err);
	is_int(rc, 0, "the whole walk succeeds");
	/* entries: a, e, g, n, z at the root, b, x, c, f below a, the
	 * NLONG files, d and d/f below n, and below the first z DEEP - 1
	 * folders and f; a leave for each directory entered: a, b, c, e,
	 * n, n/d, and the DEEP z folders */
	is_int(t.n, (11 + NLONG + DEEP) + (6 + DEEP),
	       "every entry once, and one leave a directory");
	for (int i = 0; i < t.n; i++)
		for (int j = i + 1; j < t.n; j++)
			if (t.leave[i] == t.leave[j] &&
			    !strcmp(t.path[i], t.path[j]))
				ok1 = 0;
	ok(ok1, "no path met twice");
	ok(find(deep, 0) >= 0, "the file %d folders deep has its full path",
	   DEEP);
	is_int((int)t.maxd, DEEP + 1, "its depth is %d", DEEP + 1);
	ok(find("/a", 0) < find("/a/b", 0) &&
	   find("/a/b", 0) < find("/a/b/c/f", 0) &&
	   find("/a/b/c/f", 0) < find("/a/b/c", 1) &&
	   find("/a/b/c", 1) < find("/a/b", 1) &&
	   find("/a/x", 0) < find("/a", 1) && find("/a/b", 1) < find("/a", 1),
	   "a directory's entry before its entries, its leave after them");
	ok(find("/e", 0) >= 0 && find("/e", 0) + 1 == find("/e", 1),
	   "an empty directory: entry, then leave");
	ok(find("/g", 1) < 0 && find("/a/x", 1) < 0,
	   "no leave for a file");
	ok(find("/.", 0) < 0 && find("/a/.", 0) < 0 && find("/a/..", 0) < 0,
	   "\".\" and \"..\" are left out");

	{
		int n1, n2, s1 = n_sorted(&n1), s2, nall = t.n, same = 1;
		char *keyorder[NSEEN];

		for (int i = 0; i < nall; i++)
			keyorder[i] = strdup(t.path[i]);
		t.by_name = 1;
		rc = walk(v, 0, NULL, NULL, &err);
		is_int(rc, 0, "by name: the whole walk succeeds");
		is_int(t.n, nall, "by name: as many entries and leaves");
		s2 = n_sorted(&n2);
		ok(s2 && n2 == NLONG + 1,
		   "by name: /n's %d entries sorted by name", n2);
		ok(!s1 && n1 == n2, "(in key order they are not: %d)", n1);
		for (int i = 0; i < nall && same; i++)
			same = find(keyorder[i], 0) >= 0 ||
			       find(keyorder[i], 1) >= 0;
		for (int i = 0; i < nall; i++)
			free(keyorder[i]);
		ok(same, "by name: every path of the key-order walk met");
		ok(find(deep, 0) >= 0, "by name: the file %d folders deep",
		   DEEP);
		ok(find("/n/d", 0) + 1 == find("/n/d/f", 0) &&
		   find("/n/d/f", 0) + 1 == find("/n/d", 1),
		   "by name: a directory's entries right after it, then its "
		   "leave");
		rc = walk(v, 0, "/n/d", NULL, &err);
		ok(rc == 0 && find("/n/d", 0) >= 0 && find("/n/d/f", 0) < 0,
		   "by name: R4_WALK_SKIP does not enter");
		rc = walk(v, DEEP, NULL, NULL, &err);
		is_int(rc, R4_ERANGE, "by name: max_depth %d, one folder too "
		       "deep, said", DEEP);
		t.by_name = 0;
	}

	rc = walk(v, 0, "/a", NULL, &err);
	is_int(rc, 0, "a walk with R4_WALK_SKIP succeeds");
	ok(find("/a", 0) >= 0 && find("/a/b", 0) < 0 && find("/a", 1) < 0,
	   "R4_WALK_SKIP: the directory is not entered (no leave)");

	rc = walk(v, 0, NULL, "/a/b", &err);
	is_int(rc, -77, "a callback's error stops the walk and is returned");

	err.code = 0;
	err.msg[0] = '\0';
	rc = walk(v, 2, NULL, NULL, &err);
	is_int(rc, R4_ERANGE, "max_depth 2: R4_ERANGE");
	ok((strstr(err.msg, ": /a/b: ") || strstr(err.msg, ": /z/z: ")) &&
	   strstr(err.msg, "deeper than 2 folders"),
	   "the error names the directory: %s", err.msg);

	err.code = 0;
	err.msg[0] = '\0';
	rc = walk(v, DEEP + 1, NULL, NULL, &err);
	is_int(rc, 0, "max_depth %d: the deepest folder is within it",
	       DEEP + 1);
	rc = walk(v, DEEP, NULL, NULL, &err);
	is_int(rc, R4_ERANGE, "max_depth %d: one folder too deep, said", DEEP);

	reset();
	r4_vol_close(v, NULL);
	free(deep);
	if (!getenv("R4_KEEP_TMP")) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			printf("# could not remove %s\n", dir);
	}
	return tap_done();
}
