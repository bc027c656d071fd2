/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4manifest IMAGE: print the manifest of a volume (the format of
 * `r4ref manifest`, see tests/helpers/README.md) reading it through
 * r4kit's own read API (include/r4/read.h). A test helper: it lets the
 * tests compare our reader with libreiser4 and with the source tree.
 * r4manifest --sha256 IMAGE: instead, one `sha256sum` line ("HEX  ./path")
 * per regular file, in path order, to compare with the kernel's lists.
 * Exit 0 ok, 1 some object could not be read, 2 cannot open. */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "r4/r4.h"
#include "r4/read.h"
#include "format/sha256.h"

#define FNV64_OFFSET 0xcbf29ce484222325ULL
#define FNV64_PRIME 0x100000001b3ULL
#define MAX_DEPTH 1024

struct rec {
	char *path;
	char type;
	unsigned mode;
	uint64_t uid, gid;
	int64_t size, mtime, nlink;
	char *target;
	int has_rdev;
	unsigned rmaj, rmin;
	const char *hstr;	/* NULL: print hash */
	uint64_t hash;
	uint8_t sha[32];
	uint64_t ida, idb;
	size_t label;
};

struct ctx {
	struct r4_vol *vol;
	struct rec *v;
	size_t n, cap;
	int errors;
	unsigned depth;
	char *buf;		/* read buffer */
	int sha;		/* --sha256 */
};

static const size_t RBUF = 1 << 20;

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p) {
		fprintf(stderr, "r4manifest: out of memory\n");
		exit(2);
	}
	return p;
}

static void put_escaped(const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c == 0x7f || c == '\\')
			printf("\\x%02x", c);
		else
			putchar(c);
	}
}

static char type_of(unsigned mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return 'f';
	case S_IFDIR: return 'd';
	case S_IFLNK: return 'l';
	case S_IFCHR: return 'c';
	case S_IFBLK: return 'b';
	case S_IFIFO: return 'p';
	case S_IFSOCK: return 's';
	default: return '?';
	}
}

static void fail(struct ctx *c, const char *path, const struct r4_error *e)
{
	fprintf(stderr, "r4manifest: %s: %s\n", path, e->msg[0] ? e->msg
		: r4_strerror(e->code));
	c->errors++;
}

static int unalloc_fn(void *ctx, const struct r4_blkmap *m)
{
	if (m->kind == R4_BLK_UNALLOCATED)
		*(int *)ctx = 1;
	return 0;
}

static void content(struct ctx *c, struct rec *r, const struct r4_objref *o,
		    uint64_t size)
{
	struct r4_error e = { 0, "", 0 };
	uint64_t off = 0, h = FNV64_OFFSET;
	size_t got, i;
	int unalloc = 0;
	struct fmt_sha256 sh;

	fmt_sha256_init(&sh);
	if (r4_file_blocks(c->vol, o, unalloc_fn, &unalloc, &e))
		goto bad;
	while (off < size) {
		if (r4_read(c->vol, o, off, c->buf, RBUF, &got, &e) || !got)
			goto bad;
		for (i = 0; i < got; i++) {
			h ^= (unsigned char)c->buf[i];
			h *= FNV64_PRIME;
		}
		if (c->sha)
			fmt_sha256_update(&sh, c->buf, got);
		off += got;
	}
	fmt_sha256_final(&sh, r->sha);
	r->hash = h;
	r->hstr = unalloc ? "UNALLOC" : NULL;
	return;
bad:
	r->hstr = "ERR";
	fail(c, r->path, &e);
}

static void walk(struct ctx *c, const char *path, const struct r4_objref *o);

struct dctx {
	struct ctx *c;
	const char *dir;
};

static int dirent_fn(void *ctx, const char *name, size_t len,
		     const struct r4_objref *t)
{
	struct dctx *d = ctx;
	size_t dl = strlen(d->dir);
	char *p;

	if ((len == 1 && name[0] == '.') ||
	    (len == 2 && name[0] == '.' && name[1] == '.'))
		return 0;
	p = xrealloc(NULL, dl + len + 2);
	memcpy(p, d->dir, dl);
	if (dl == 0 || d->dir[dl - 1] != '/')
		p[dl++] = '/';
	memcpy(p + dl, name, len);
	p[dl + len] = '\0';
	walk(d->c, p, t);
	free(p);
	return 0;
}

static struct rec *rec_new(struct ctx *c, const char *path)
{
	struct rec *r;

	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 256;
		c->v = xrealloc(c->v, c->cap * sizeof(*c->v));
	}
	r = &c->v[c->n++];
	memset(r, 0, sizeof(*r));
	r->path = strdup(path);
	r->hstr = "-";
	return r;
}

static void walk(struct ctx *c, const char *path, const struct r4_objref *o)
{
	struct r4_error e = { 0, "", 0 };
	struct r4_stat st;
	struct r4_objref back = { 0, 0, 0 };
	struct rec *r = rec_new(c, path);
	struct dctx d = { c, path };
	char tgt[4096];

	r->ida = o->locality;
	r->idb = o->oid;
	/* Every name must also be found by hashing it (r4_lookup). */
	if (r4_lookup(c->vol, path, &back, &e) || back.oid != o->oid ||
	    back.locality != o->locality || back.ordering != o->ordering) {
		if (!e.msg[0])
			snprintf(e.msg, sizeof(e.msg), "r4_lookup found "
				 "another object (%llx)",
				 (unsigned long long)back.oid);
		fail(c, path, &e);
		e.msg[0] = '\0';
	}
	if (r4_stat(c->vol, o, &st, &e)) {
		r->type = '?';
		r->size = r->nlink = -1;
		fail(c, path, &e);
		return;
	}
	r->type = type_of(st.mode);
	r->mode = st.mode & 07777;
	r->uid = st.uid;
	r->gid = st.gid;
	r->mtime = st.mtime;
	r->size = r->type == 'd' ? -1 : (int64_t)st.size;
	r->nlink = r->type == 'd' ? -1 : (int64_t)st.nlink;
	r->has_rdev = r->type == 'c' || r->type == 'b';
	r->rmaj = r4_rdev_major(st.rdev);
	r->rmin = r4_rdev_minor(st.rdev);
	if (r->type == 'l') {
		if (r4_readlink(c->vol, o, tgt, sizeof(tgt), NULL, &e))
			fail(c, path, &e);
		else
			r->target = strdup(tgt);
	} else if (r->type == 'f') {
		content(c, r, o, st.size);
	} else if (r->type == 'd' && c->depth < MAX_DEPTH) {
		c->depth++;
		if (r4_readdir(c->vol, o, dirent_fn, &d, &e))
			fail(c, path, &e);
		c->depth--;
	}
}

static int rec_cmp(const void *a, const void *b)
{
	return strcmp(((const struct rec *)a)->path,
		      ((const struct rec *)b)->path);
}

/* Identity labels in order of first path (quadratic-free via sort). */
struct ident { uint64_t a, b; size_t idx; };

static int ident_cmp(const void *x, const void *y)
{
	const struct ident *p = x, *q = y;

	if (p->a != q->a)
		return p->a < q->a ? -1 : 1;
	if (p->b != q->b)
		return p->b < q->b ? -1 : 1;
	return p->idx < q->idx ? -1 : (p->idx > q->idx);
}

static void label(struct ctx *c)
{
	struct ident *ids = xrealloc(NULL, (c->n + 1) * sizeof(*ids));
	size_t *first = xrealloc(NULL, (c->n + 1) * sizeof(*first));
	size_t i, next = 1;

	qsort(c->v, c->n, sizeof(*c->v), rec_cmp);
	for (i = 0; i < c->n; i++)
		ids[i] = (struct ident){ c->v[i].ida, c->v[i].idb, i };
	qsort(ids, c->n, sizeof(*ids), ident_cmp);
	/* first[i] = index of the first record with i's identity */
	for (i = 0; i < c->n; i++)
		first[ids[i].idx] = i && ids[i].a == ids[i - 1].a &&
			ids[i].b == ids[i - 1].b ? first[ids[i - 1].idx]
						 : ids[i].idx;
	for (i = 0; i < c->n; i++)
		c->v[i].label = first[i] == i ? next++ : c->v[first[i]].label;
	free(ids);
	free(first);
}

static void print_sha(struct ctx *c)
{
	for (size_t i = 0; i < c->n; i++) {
		struct rec *r = &c->v[i];

		if (r->type == 'f' && !r->hstr) {
			for (int k = 0; k < 32; k++)
				printf("%02x", r->sha[k]);
			printf("  .%s\n", r->path);
		}
		free(r->path);
		free(r->target);
	}
}

static void print(struct ctx *c)
{
	for (size_t i = 0; i < c->n; i++) {
		struct rec *r = &c->v[i];

		put_escaped(r->path);
		printf("\t%c\t%04o\t%" PRIu64 "\t%" PRIu64, r->type, r->mode,
		       r->uid, r->gid);
		if (r->size < 0)
			fputs("\t-", stdout);
		else
			printf("\t%" PRId64, r->size);
		printf("\t%" PRId64, r->mtime);
		if (r->nlink < 0)
			fputs("\t-", stdout);
		else
			printf("\t%" PRId64, r->nlink);
		putchar('\t');
		if (r->target)
			put_escaped(r->target);
		else
			putchar('-');
		if (r->has_rdev)
			printf("\t%u:%u", r->rmaj, r->rmin);
		else
			fputs("\t-", stdout);
		if (r->hstr)
			printf("\t%s", r->hstr);
		else
			printf("\t%016" PRIx64, r->hash);
		printf("\t%zu\n", r->label);
		free(r->path);
		free(r->target);
	}
}

int main(int argc, char **argv)
{
	struct r4_error e = { 0, "", 0 };
	struct ctx c;
	struct r4_objref root;
	int rc;

	memset(&c, 0, sizeof(c));
	if (argc == 3 && !strcmp(argv[1], "--sha256")) {
		c.sha = 1;
		argv++;
		argc--;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: r4manifest [--sha256] IMAGE\n");
		return 2;
	}
	if (r4_vol_open(argv[1], R4_OPEN(R4_OPEN_RDONLY), &c.vol, &e)) {
		fprintf(stderr, "r4manifest: %s\n", e.msg);
		return 2;
	}
	c.buf = xrealloc(NULL, RBUF);
	r4_root(c.vol, &root, &e);
	walk(&c, "/", &root);
	/* the labels need the sorted order; the first record is "/" */
	label(&c);
	if (c.sha)
		print_sha(&c);
	else
		print(&c);
	free(c.v);
	free(c.buf);
	rc = r4_vol_close(c.vol, &e);
	(void)rc;
	return c.errors ? 1 : 0;
}
