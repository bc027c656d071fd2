/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the builder's namespace. Objects (what an SD describes) and
 * names (directory entries) are kept apart, so hard links are several
 * names of one object. Names are found through one hash table keyed by
 * (directory, name). A later entry for a path replaces the earlier one,
 * as tar does: a directory over a directory only takes the new
 * attributes, anything else gets a new object under the old name. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "libimage/pack/build.h"
#include "libimage/pack/cluster.h"
#include "libimage/util/err.h"

#define S_DIR 0040000u

static uint64_t name_hash(const struct bobj *dir, const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ (uint64_t)(uintptr_t)dir;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 0x100000001b3ULL;
	return h ^ (h >> 29);
}

static struct bent *lookup(struct r4_build *b, const struct bobj *dir,
			   const char *s, size_t n)
{
	struct bent *e = b->htab[name_hash(dir, s, n) & (b->hsize - 1)];

	for (; e; e = e->hnext)
		if (e->dir == dir && e->len == n && !memcmp(e->name, s, n))
			return e;
	return NULL;
}

static int grow_hash(struct r4_build *b)
{
	size_t nsize = b->hsize * 2;
	struct bent **t = calloc(nsize, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < b->hsize; i++) {
		struct bent *e = b->htab[i], *next;

		for (; e; e = next) {
			size_t h = name_hash(e->dir, e->name, e->len) &
				   (nsize - 1);

			next = e->hnext;
			e->hnext = t[h];
			t[h] = e;
		}
	}
	free(b->htab);
	b->htab = t;
	b->hsize = nsize;
	return 0;
}

static struct bobj *new_obj(struct r4_build *b, enum r4_entry_type type)
{
	struct bobj *o;

	if (b->nobj == b->capobjs) {
		size_t n = b->capobjs ? b->capobjs * 2 : 1024;
		struct bobj **t = realloc(b->objs, n * sizeof(*t));

		if (!t)
			return NULL;
		b->objs = t;
		b->capobjs = n;
	}
	o = calloc(1, sizeof(*o));
	if (o) {
		o->type = type;
		b->objs[b->nobj++] = o;
	}
	return o;
}

static int add_kid(struct bobj *dir, struct bent *e)
{
	if (dir->nkids == dir->capkids) {
		size_t n = dir->capkids ? dir->capkids * 2 : 8;
		struct bent **t = realloc(dir->kids, n * sizeof(*t));

		if (!t)
			return -ENOMEM;
		dir->kids = t;
		dir->capkids = n;
	}
	dir->kids[dir->nkids++] = e;
	return 0;
}

static struct bent *new_ent(struct r4_build *b, struct bobj *dir,
			    const char *s, size_t n, struct bobj *obj)
{
	struct bent *e;
	size_t h;

	if (b->hcount * 2 >= b->hsize && grow_hash(b))
		return NULL;
	e = calloc(1, sizeof(*e) + n + 1);
	if (!e)
		return NULL;
	if (add_kid(dir, e)) {
		free(e);
		return NULL;
	}
	memcpy(e->name, s, n);
	e->len = (uint16_t)n;
	e->dir = dir;
	e->obj = obj;
	h = name_hash(dir, s, n) & (b->hsize - 1);
	e->hnext = b->htab[h];
	b->htab[h] = e;
	b->hcount++;
	return e;
}

int pack_ns_init(struct r4_build *b, struct r4_error *err)
{
	b->hsize = 4096;
	b->htab = calloc(b->hsize, sizeof(*b->htab));
	b->root = b->htab ? new_obj(b, R4_ENT_DIR) : NULL;
	if (!b->root)
		return r4_fail(err, -ENOMEM, "out of memory");
	b->root->mode = 0755;
	b->root->uid = (uint32_t)getuid();
	b->root->gid = (uint32_t)getgid();
	b->root->atime = b->root->mtime = b->root->ctime = b->m.now;
	return 0;
}

void pack_ns_fini(struct r4_build *b)
{
	for (size_t i = 0; b->htab && i < b->hsize; i++) {
		struct bent *e = b->htab[i], *next;

		for (; e; e = next) {
			next = e->hnext;
			free(e);
		}
	}
	free(b->htab);
	b->htab = NULL;
	free(b->wc_path);
	b->wc_path = NULL;
	b->wc_n = 0;
	for (size_t i = 0; i < b->nobj; i++) {
		free(b->objs[i]->target);
		free(b->objs[i]->ext);
		free(b->objs[i]->kids);
		free(b->objs[i]);
	}
	free(b->objs);
	b->objs = NULL;
	b->nobj = 0;
}

static const char *path_up(const struct bent *e, char *buf, size_t len,
			   size_t *pos)
{
	if (!e)
		return buf;
	if (e->dir && e->dir->primary)
		path_up(e->dir->primary, buf, len, pos);
	if (*pos && *pos + 1 < len)
		buf[(*pos)++] = '/';
	for (size_t i = 0; i < e->len && *pos + 1 < len; i++)
		buf[(*pos)++] = e->name[i];
	buf[*pos] = '\0';
	return buf;
}

const char *pack_ns_path(const struct bent *e, char *buf, size_t len)
{
	size_t pos = 0;

	buf[0] = '\0';
	return path_up(e, buf, len, &pos);
}

const char *pack_ns_obj_path(const struct bobj *o, char *buf, size_t len)
{
	return o->primary ? pack_ns_path(o->primary, buf, len) : ".";
}

/* Next path component of *p: skips "/" runs and "." components.
 * Returns its length (0 at the end), -1 for "..". */
static long next_comp(const char **p, const char **comp)
{
	const char *s = *p;
	size_t n;

	for (;;) {
		while (*s == '/')
			s++;
		n = strcspn(s, "/");
		if (n == 1 && s[0] == '.') {
			s++;
			continue;
		}
		break;
	}
	*comp = s;
	*p = s + n;
	if (n == 2 && s[0] == '.' && s[1] == '.')
		return -1;
	return (long)n;
}

/* Bytes path and the cached path have in common. */
static size_t wc_common(const struct r4_build *b, const char *path)
{
	size_t i = 0;

	if (!b->wc_n)
		return 0;
	while (path[i] && path[i] == b->wc_path[i])
		i++;
	return i;
}

/* Remember path's directories for the next walk (archives list a
 * directory's names together). */
static void wc_save(struct r4_build *b, const char *path, size_t k,
		    const size_t *end, struct bobj *const *dir)
{
	size_t len = strlen(path) + 1;

	b->wc_n = 0;
	if (len > b->wc_cap) {
		char *t = realloc(b->wc_path, len);

		if (!t)
			return;
		b->wc_path = t;
		b->wc_cap = len;
	}
	memcpy(b->wc_path, path, len);
	memcpy(b->wc_end, end, k * sizeof(*end));
	memcpy(b->wc_dir, dir, k * sizeof(*dir));
	b->wc_n = k;
}

/* Walk to the directory holding the last component of path, making
 * missing directories; *name / *nlen: the last component (nlen 0 for
 * the root itself). A component that ends before the bytes path shares
 * with the previous walk's path is the same directory (names are only
 * replaced through pack_ns_add, which forgets the cache). */
static int walk(struct r4_build *b, const char *path, int create,
		struct bobj **dir, const char **name, size_t *nlen,
		struct r4_error *err)
{
	struct bobj *d = b->root, *dirs[32];
	const char *p = path, *c, *nc;
	long n = next_comp(&p, &c), nn;
	size_t same = wc_common(b, path), k = 0, ends[32];

	for (; n > 0; n = nn, c = nc, k++) {
		struct bent *e;
		size_t end = (size_t)(c + n - path);

		nn = next_comp(&p, &nc);
		if (nn == 0)
			break;
		if (nn < 0)
			return r4_fail(err, R4_EINVAL, "%s: '..' in a path",
				       path);
		if (n > BUILD_MAX_NAME)
			break;
		if (k < b->wc_n && end < same && b->wc_end[k] == end) {
			d = b->wc_dir[k];
		} else {
			e = lookup(b, d, c, (size_t)n);
			if (!e && !create)
				return R4_ENOTFOUND;
			if (!e) {
				struct bobj *o = new_obj(b, R4_ENT_DIR);

				if (!o || !(e = new_ent(b, d, c, (size_t)n, o)))
					return r4_fail(err, -ENOMEM,
						       "out of memory");
				o->mode = 0755;
				o->uid = b->root->uid;
				o->gid = b->root->gid;
				o->atime = o->mtime = o->ctime = b->m.now;
			}
			if (e->obj->type != R4_ENT_DIR)
				return r4_fail(err, R4_EINVAL, "%s: '%.*s' on "
					       "its way is not a directory",
					       path, (int)(c + n - path), path);
			d = e->obj;
		}
		if (k < 32) {
			ends[k] = end;
			dirs[k] = d;
		}
	}
	if (n < 0)
		return r4_fail(err, R4_EINVAL, "%s: '..' in a path", path);
	if (n > BUILD_MAX_NAME)
		return r4_fail(err, R4_EINVAL, "%s: a name is longer than %d "
			       "bytes", path, BUILD_MAX_NAME);
	if (create)
		wc_save(b, path, k < 32 ? k : 32, ends, dirs);
	*dir = d;
	*name = c;
	*nlen = (size_t)n;
	return 0;
}

static uint32_t clamp_time(int64_t t, uint32_t ns, uint32_t *ns_out)
{
	if (t < 0 || t > (int64_t)UINT32_MAX || ns >= 1000000000u) {
		*ns_out = 0;
		return t < 0 ? 0 : t > (int64_t)UINT32_MAX ? UINT32_MAX :
		       (uint32_t)t;
	}
	*ns_out = ns;
	return (uint32_t)t;
}

static void set_attrs(struct r4_build *b, struct bobj *o,
		      const struct r4_entry *e)
{
	(void)b;
	o->mode = e->mode & 07777;
	o->uid = e->uid;
	o->gid = e->gid;
	o->atime = clamp_time(e->atime, e->atime_ns, &o->atime_ns);
	o->mtime = clamp_time(e->mtime, e->mtime_ns, &o->mtime_ns);
	o->ctime = clamp_time(e->ctime, e->ctime_ns, &o->ctime_ns);
}

static int check_entry(struct r4_build *b, const struct r4_entry *e,
		       struct r4_error *err)
{
	size_t max_target;

	if (!e->path)
		return r4_fail(err, R4_EINVAL, "an entry without a path");
	switch (e->type) {
	case R4_ENT_SYMLINK:
		/* lw + unix + large times + target + NUL in one leaf item */
		max_target = b->bs - fmt_node_header_size(b->m.sb.node_pid) -
			     fmt_item_header_size(b->pol) - 2 -
			     FMT_SDEXT_LW_SIZE - FMT_SDEXT_UNIX_SIZE -
			     FMT_SDEXT_LT_SIZE - 1;
		if (!e->target || !*e->target)
			return r4_fail(err, R4_EINVAL, "%s: symlink without "
				       "a target", e->path);
		if (strlen(e->target) > max_target)
			return r4_fail(err, R4_ERANGE, "%s: symlink target "
				       "of %zu bytes is longer than %zu",
				       e->path, strlen(e->target), max_target);
		return 0;
	case R4_ENT_HARDLINK:
		if (!e->target || !*e->target)
			return r4_fail(err, R4_EINVAL, "%s: hard link without "
				       "a target", e->path);
		return 0;
	case R4_ENT_CHR: case R4_ENT_BLK:
		if (e->rdev_major > 0xfff || e->rdev_minor > 0xfffff)
			return r4_fail(err, R4_ERANGE, "%s: device %u:%u does "
				       "not fit (major < 4096, minor < "
				       "1048576)", e->path, e->rdev_major,
				       e->rdev_minor);
		return 0;
	case R4_ENT_REG:
		if (!e->data && e->size && !b->o.source)
			return r4_fail(err, R4_EINVAL, "%s: no data and no "
				       "data source", e->path);
		return 0;
	case R4_ENT_DIR: case R4_ENT_FIFO: case R4_ENT_SOCK:
		return 0;
	}
	return r4_fail(err, R4_EINVAL, "%s: unknown entry type %d", e->path,
		       (int)e->type);
}

static int tails_for(const struct r4_build *b, uint64_t size)
{
	switch (b->o.mkfs.plugin[R4_PT_FORMATTING]) {
	case FMT_POLICY_EXTENTS:
		return 0;
	case FMT_POLICY_TAILS:
		return 1;
	default:	/* smart: the kernel's "4blocks" rule */
		return size <= 4 * (uint64_t)b->bs;
	}
}

static int make_obj(struct r4_build *b, const struct r4_entry *e,
		    struct bobj **out, struct r4_error *err)
{
	struct bobj *o = new_obj(b, e->type);

	if (!o)
		return r4_fail(err, -ENOMEM, "out of memory");
	set_attrs(b, o, e);
	switch (e->type) {
	case R4_ENT_SYMLINK:
		o->target = strdup(e->target);
		if (!o->target)
			return r4_fail(err, -ENOMEM, "out of memory");
		o->size = strlen(e->target);
		break;
	case R4_ENT_CHR: case R4_ENT_BLK:
		o->rdev = e->rdev_major << 20 | e->rdev_minor;
		break;
	case R4_ENT_REG:
		o->size = e->size;
		o->tails = tails_for(b, e->size);
		o->cc = pack_cc_initial(b);
		o->data = e->size && !e->data ? BD_DEFERRED : BD_NONE;
		break;
	default:
		break;
	}
	*out = o;
	return 0;
}

static int link_target(struct r4_build *b, const struct r4_entry *e,
		       struct bobj **out, struct r4_error *err)
{
	struct bobj *d;
	struct bent *t;
	const char *name;
	size_t n;
	int rc = walk(b, e->target, 0, &d, &name, &n, err);

	if (rc == R4_ENOTFOUND || (!rc && n && !(t = lookup(b, d, name, n))))
		return r4_fail(err, R4_ENOTFOUND, "%s: hard link to '%s', "
			       "which is not in the archive", e->path,
			       e->target);
	if (rc)
		return rc;
	if (!n || t->obj->type == R4_ENT_DIR)
		return r4_fail(err, R4_EINVAL, "%s: hard link to '%s', which "
			       "is a directory", e->path, e->target);
	*out = t->obj;
	return 0;
}

int pack_ns_add(struct r4_build *b, const struct r4_entry *e, struct bobj **obj,
	   struct r4_error *err)
{
	struct bobj *d, *o = NULL;
	struct bent *old;
	const char *name;
	size_t n;
	int rc = check_entry(b, e, err);

	*obj = NULL;
	if (!rc && e->type == R4_ENT_HARDLINK)
		rc = link_target(b, e, &o, err);	/* before any mkdir */
	if (!rc)
		rc = walk(b, e->path, 1, &d, &name, &n, err);
	if (rc)
		return rc;
	if (!n) {	/* the root itself */
		if (e->type != R4_ENT_DIR)
			return r4_fail(err, R4_EINVAL, "%s: the root must be a "
				       "directory", e->path);
		set_attrs(b, b->root, e);
		return 0;
	}
	old = lookup(b, d, name, n);
	if (old && old->obj->type == R4_ENT_DIR && e->type == R4_ENT_DIR) {
		set_attrs(b, old->obj, e);
		return 0;
	}
	if (old && old->obj->type == R4_ENT_DIR && old->obj->nkids)
		return r4_fail(err, R4_EEXIST, "%s: would replace a directory "
			       "that is not empty", e->path);
	if (e->type != R4_ENT_HARDLINK) {
		rc = make_obj(b, e, &o, err);
		if (rc)
			return rc;
	}
	if (old) {
		old->obj = o;
		b->wc_n = 0;	/* the cached directories may be gone */
	}
	else if (!new_ent(b, d, name, n, o))
		return r4_fail(err, -ENOMEM, "out of memory");
	if (e->type == R4_ENT_REG && e->data)
		*obj = o;
	return 0;
}
