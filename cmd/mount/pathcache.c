/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4mount: paths to objects, with a cache of the names already looked up.
 *
 * Every FUSE request names its object by a path from the root. Walking
 * it costs, per component, a directory item search and a check of a
 * directory's ".." (one_name); the cache keeps each answer by (directory
 * object id, name) -> object, so a walk goes from the root through
 * cached names to the first one it does not know. Object ids are stable
 * (a commit moves blocks, never ids) and no block number or node is
 * kept, so entries live across commits. A name's answer changes only
 * when that name of that directory changes: every change the mount makes
 * to a name (create, mkdir, mknod, symlink, link, unlink, rmdir, rename
 * from and to) forgets the name first (r4m_forget); a renamed directory
 * keeps the entries below it (they are keyed by its id, which the rename
 * keeps), while its old path, no longer a name, resolves no more. A
 * directory is removed or replaced only when empty, and each of its
 * names was forgotten when it went, so nothing is kept below a removed
 * directory (its id is never handed out again). An aborted transaction or a
 * failed commit forgets everything (r4m_forget_all). "." and ".." are
 * never cached. At most PC_MAX entries: when full, the cache is emptied
 * and fills again from the walks that follow. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../common/common.h"
#include "r4/r4.h"
#include "r4/read.h"
#include "mount.h"

#define PC_BUCKETS (1u << 16)
#define PC_MAX (1u << 17)

struct pc_ent {
	struct pc_ent *next;
	uint64_t parent;	/* the directory's object id */
	struct r4_objref ref;	/* what its name names */
	uint32_t hash;
	uint16_t len;
	char name[];
};

static struct pc_ent **pc_tab;	/* PC_BUCKETS chains, made when needed */
static size_t pc_count;

/* The bucket hash of name (len bytes) in directory parent (FNV-1a). */
static uint32_t pc_hash(uint64_t parent, const char *name, size_t len)
{
	uint64_t h = 1469598103934665603ull ^ parent;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)name[i]) * 1099511628211ull;
	return (uint32_t)(h ^ (h >> 32));
}

/* The cached entry of name in parent, or NULL. */
static struct pc_ent *pc_find(uint64_t parent, const char *name, size_t len)
{
	uint32_t h = pc_hash(parent, name, len);

	if (!pc_tab)
		return NULL;
	for (struct pc_ent *e = pc_tab[h % PC_BUCKETS]; e; e = e->next)
		if (e->hash == h && e->parent == parent && e->len == len &&
		    !memcmp(e->name, name, len))
			return e;
	return NULL;
}

/* Forget every name kept. */
void r4m_forget_all(void)
{
	if (!pc_tab)
		return;
	for (size_t b = 0; b < PC_BUCKETS; b++)
		while (pc_tab[b]) {
			struct pc_ent *e = pc_tab[b];

			pc_tab[b] = e->next;
			free(e);
		}
	pc_count = 0;
}

/* Remember that name in parent names ref (a full cache is emptied
 * first; no memory: not remembered). */
static void pc_add(uint64_t parent, const char *name, size_t len,
		   const struct r4_objref *ref)
{
	uint32_t h = pc_hash(parent, name, len);
	struct pc_ent *e;

	if (len > UINT16_MAX)
		return;
	if (!pc_tab && !(pc_tab = calloc(PC_BUCKETS, sizeof(*pc_tab))))
		return;
	if (pc_count >= PC_MAX)
		r4m_forget_all();
	e = malloc(sizeof(*e) + len);
	if (!e)
		return;
	e->parent = parent;
	e->ref = *ref;
	e->hash = h;
	e->len = (uint16_t)len;
	memcpy(e->name, name, len);
	e->next = pc_tab[h % PC_BUCKETS];
	pc_tab[h % PC_BUCKETS] = e;
	pc_count++;
}

/* Drop the entry of name in parent, if cached. */
static void pc_drop(uint64_t parent, const char *name, size_t len)
{
	uint32_t h = pc_hash(parent, name, len);
	struct pc_ent **pp;

	if (!pc_tab)
		return;
	for (pp = &pc_tab[h % PC_BUCKETS]; *pp; pp = &(*pp)->next) {
		struct pc_ent *e = *pp;

		if (e->hash == h && e->parent == parent && e->len == len &&
		    !memcmp(e->name, name, len)) {
			*pp = e->next;
			free(e);
			pc_count--;
			return;
		}
	}
}

/* Whether dir's entry names a directory through its one name: a
 * directory is served below the directory its ".." names only, and the
 * root below none (its name is in no directory). Any other entry naming
 * a directory (a second name: a loop when it names one above it) answers
 * EIO, so the tree served is a tree and every walk of it ends. One
 * lookup per directory in the path; the inode number is the object id. */
static int one_name(const char *path, size_t plen,
		    const struct r4_objref *root, const struct r4_objref *dir,
		    const struct r4_objref *ref)
{
	struct r4_error err = { 0 };
	struct r4_objref up;
	int rc = r4_lookup_at(vol, ref, "..", 2, &up, &err);

	if (rc == -ENOTDIR)
		return 0;	/* not a directory */
	if (!rc && ref->oid != root->oid && up.oid == dir->oid)
		return 0;
	if (opt_debug || opt_foreground) {
		if (rc)
			fprintf(stderr, "%s: %.*s: a directory without a "
				"readable \"..\" (%s): EIO (run r4fsck)\n",
				r4cmd_prog, (int)plen, path,
				err.msg[0] ? err.msg : r4_strerror(rc));
		else
			fprintf(stderr, "%s: %.*s: a second name of directory "
				"%llx (%s): EIO (run r4fsck)\n", r4cmd_prog,
				(int)plen, path, (unsigned long long)ref->oid,
				ref->oid == root->oid ? "the root" :
				"its \"..\" names another directory");
	}
	return -EIO;
}

/* One component (p, len bytes) of path in cur: from the cache, else
 * looked up, checked (one_name) and remembered. */
static int step(const char *path, const char *p, size_t len,
		const struct r4_objref *root, const struct r4_objref *cur,
		struct r4_objref *next, struct r4_error *err)
{
	int dots = p[0] == '.' && (len == 1 || (len == 2 && p[1] == '.'));
	struct pc_ent *e = dots ? NULL : pc_find(cur->oid, p, len);
	int rc;

	if (e) {
		*next = e->ref;
		return 0;
	}
	rc = r4_lookup_at(vol, cur, p, len, next, err);
	if (!rc && (rc = one_name(path, (size_t)(p + len - path), root, cur,
				  next))) {
		err->code = rc;
		snprintf(err->msg, sizeof(err->msg), "%.*s: a directory with "
			 "a second name or no \"..\"",
			 (int)(p + len - path), path);
		return rc;
	}
	if (!rc && !dots)
		pc_add(cur->oid, p, len, next);
	return rc;
}

/* path from the root through kept names; the library's codes. */
int r4m_walk(const char *path, struct r4_objref *ref, struct r4_error *err)
{
	struct r4_objref root = { 0, 0, 0 }, cur, next;
	const char *p = path, *q;
	int rc = path[0] == '/' ? r4_root(vol, &root, err) : R4_EINVAL;

	cur = root;
	while (!rc) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		q = strchr(p, '/');
		if (!q)
			q = p + strlen(p);
		rc = step(path, p, (size_t)(q - p), &root, &cur, &next, err);
		cur = next;
		p = q;
	}
	if (!rc)
		*ref = cur;
	return rc;
}

/* The transactions' resolver (r4_txn_set_resolver): r4m_walk. */
int r4m_txn_resolve(void *ctx, const char *path, struct r4_objref *out,
		    struct r4_error *err)
{
	(void)ctx;
	return r4m_walk(path, out, err);
}

/* path to its object, with an errno for FUSE. */
int r4m_resolve(const char *path, struct r4_objref *ref)
{
	struct r4_error err = { 0 };
	int rc = r4m_walk(path, ref, &err);

	/* A name no entry can hold (too long) is not there. */
	if (rc == R4_EINVAL)
		return -ENAMETOOLONG;
	if (rc == -EIO)
		return rc;	/* one_name said so */
	if (rc && rc != R4_ENOTFOUND)
		r4m_logerr("lookup", path, &err);
	return rc ? r4m_to_errno(rc) : 0;
}

/* Forget the name of path before it changes. */
void r4m_forget(const char *path)
{
	struct r4_error err = { 0 };
	size_t n = strlen(path), s;
	struct r4_objref dir;
	char *pp;

	while (n > 1 && path[n - 1] == '/')
		n--;
	for (s = n; s > 0 && path[s - 1] != '/'; s--)
		;
	if (!pc_count || s == n)
		return;
	pp = strndup(path, s);
	if (!pp) {
		r4m_forget_all();	/* no memory to find it: all of it */
		return;
	}
	if (!r4m_walk(pp, &dir, &err))
		pc_drop(dir.oid, path + s, n - s);
	free(pp);
}
