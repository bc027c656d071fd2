/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4debugfs: where deleted objects were (their former paths), and
 * undel --all DIR: every recoverable deleted object in one scan of the
 * free space, under its former path in DIR, never over a file. */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "debugfs.h"
#include "../common/common.h"
#include "format/sha256.h"
#include "r4/forensic.h"
#include "r4/util.h"

/* ---- former paths -------------------------------------------------------- */


static int live_dir(void *ctx, const struct r4_walk_entry *e)
{
	struct former *f = ctx;
	char **p;

	if (e->leave || !e->is_dir)
		return e->leave ? 0 : R4_WALK_SKIP;
	if (e->again)
		return R4_WALK_SKIP;
	if (!(p = r4_u64map_get(&f->live, e->target.oid, NULL)))
		return -ENOMEM;
	free(*p);
	*p = strndup(e->path, e->path_len);
	return *p ? 0 : -ENOMEM;
}

int dbg_former_init(struct dbg *d, struct former **out)
{
	struct r4_error err = { 0 };
	struct former *f = calloc(1, sizeof(*f));
	struct r4_objref root;
	char **p;
	int rc;

	*out = f;
	if (!f)
		return -ENOMEM;
	r4_u64map_init(&f->live, sizeof(char *));
	r4_u64map_init(&f->dead, sizeof(struct r4_deleted *));
	rc = r4_lookup(d->vol, "/", &root, &err);
	if (!rc && !(p = r4_u64map_get(&f->live, root.oid, NULL)))
		rc = -ENOMEM;
	if (!rc && !(*p = strdup("")))
		rc = -ENOMEM;
	/* a damaged tree: the folders it could walk still name paths */
	if (!rc)
		r4_walk(d->vol, &root, "", 0, live_dir, f, &err);
	return rc;
}

int dbg_former_add(struct former *f, const struct r4_deleted *x)
{
	struct r4_deleted **slot, **v;

	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 64;

		if (!(v = realloc(f->v, cap * sizeof(*v))))
			return -ENOMEM;
		f->v = v;
		f->cap = cap;
	}
	if (!(f->v[f->n] = malloc(sizeof(*x))))
		return -ENOMEM;
	*f->v[f->n] = *x;
	if (!(slot = r4_u64map_get(&f->dead, x->st.oid, NULL)))
		return -ENOMEM;
	*slot = f->v[f->n++];
	return 0;
}

void dbg_former_free(struct former *f)
{
	if (!f)
		return;
	for (size_t i = r4_u64map_next(&f->live, 0); i < f->live.cap;
	     i = r4_u64map_next(&f->live, i + 1))
		free(*(char **)r4_u64map_val(&f->live, i));
	r4_u64map_fini(&f->live);
	r4_u64map_fini(&f->dead);
	for (size_t i = 0; i < f->n; i++)
		free(f->v[i]);
	free(f->v);
	free(f);
}

/* Append s (len bytes) to buf at *o (cap bytes, kept NUL-ended). */
static void put(char *buf, size_t cap, size_t *o, const char *s, size_t len)
{
	if (*o + len >= cap)
		len = *o + 1 < cap ? cap - *o - 1 : 0;
	memcpy(buf + *o, s, len);
	*o += len;
	buf[*o] = '\0';
}

/* The folder that held x, as a path: a live directory's, a deleted
 * directory's former path, or "/?0xOID" for one nothing tells. */
static void folder_path(const struct former *f, uint64_t oid, char *buf,
			size_t cap, size_t *o, unsigned depth)
{
	char **live = r4_u64map_find(&f->live, oid);
	struct r4_deleted **dead = r4_u64map_find(&f->dead, oid);
	char tmp[32];

	if (live) {
		put(buf, cap, o, *live, strlen(*live));
		return;
	}
	if (dead && S_ISDIR((*dead)->st.mode) && (*dead)->name_len &&
	    depth < 64 && (*dead)->parent != oid) {
		folder_path(f, (*dead)->parent, buf, cap, o, depth + 1);
		put(buf, cap, o, "/", 1);
		put(buf, cap, o, (*dead)->name, (*dead)->name_len);
		return;
	}
	snprintf(tmp, sizeof(tmp), "/?0x%" PRIx64, oid);
	put(buf, cap, o, tmp, strlen(tmp));
}

void dbg_former_path(const struct former *f, const struct r4_deleted *x,
		     char *buf, size_t cap)
{
	size_t o = 0;
	char tmp[32];

	buf[0] = '\0';
	if (x->orphan || !x->parent) {
		snprintf(tmp, sizeof(tmp), "/?0x%" PRIx64, x->st.oid);
		put(buf, cap, &o, tmp, strlen(tmp));
		return;
	}
	folder_path(f, x->parent, buf, cap, &o, 0);
	put(buf, cap, &o, "/", 1);
	if (x->name_len) {
		put(buf, cap, &o, x->name, x->name_len);
	} else {
		snprintf(tmp, sizeof(tmp), "?0x%" PRIx64, x->st.oid);
		put(buf, cap, &o, tmp, strlen(tmp));
	}
}

void dbg_iso_time(int64_t s, char out[32])
{
	struct tm tm;
	time_t t = (time_t)s;

	if (!gmtime_r(&t, &tm) ||
	    !strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(out, 32, "@%" PRId64, s);
}

/* ---- undel --all --------------------------------------------------------- */

struct all {
	struct dbg *d;
	const char *dir;
	struct former *f;
	FILE *manifest;
	int fd;			/* the object's file, or -1 */
	struct r4_outfile o;
	char rel[8192];		/* where it goes, under dir */
	uint64_t files, bytes, partial, failed;
	uint64_t planned, ended;	/* regular files (--progress-fd) */
};

/* dir + rel's folders made (mode 0700); a file in the way: the object
 * goes to rel + ".0xOID" in the nearest folder instead (said). */
static int make_dirs(struct all *a, const char *rel)
{
	char path[8192 + 4096];
	size_t dl = strlen(a->dir);

	snprintf(path, sizeof(path), "%s/%s", a->dir, rel);
	for (char *p = path + dl + 1; (p = strchr(p, '/')); p++) {
		struct stat st;

		*p = '\0';
		if (mkdir(path, 0700) && errno != EEXIST)
			return -errno;
		if (stat(path, &st) || !S_ISDIR(st.st_mode))
			return -ENOTDIR;
		*p = '/';
	}
	return 0;
}

/* The former path made a path under DIR: no leading or doubled '/', a
 * "." or ".." component (a name a damaged or hostile old node can hold)
 * kept as "#." or "#..", so that nothing is written outside DIR; a
 * folder nothing names ("?0x...") as "#0x...". */
static void safe_rel(const char *former, char *out, size_t cap)
{
	size_t o = 0;

	out[0] = '\0';
	for (const char *p = former; *p;) {
		size_t len = strcspn(p, "/");

		if (len) {
			int dots = (len == 1 && p[0] == '.') ||
				   (len == 2 && p[0] == '.' && p[1] == '.');

			if (o)
				put(out, cap, &o, "/", 1);
			if (dots)
				put(out, cap, &o, "#", 1);
			put(out, cap, &o, p, len);
		}
		p += len + (p[len] == '/');
	}
	for (char *q = out; *q; q++)
		if (*q == '?')
			*q = '#';
	if (!o)
		put(out, cap, &o, "#", 1);
}

static int all_begin(void *ctx, const struct r4_deleted *x)
{
	struct all *a = ctx;
	char former[4096], path[8192 + 4096];
	struct stat st;

	a->fd = -1;
	if (!S_ISREG(x->st.mode))
		return 1;	/* folders are made for the files in them */
	dbg_former_path(a->f, x, former, sizeof(former));
	safe_rel(former, a->rel, sizeof(a->rel));
	snprintf(path, sizeof(path), "%s/%s", a->dir, a->rel);
	/* never over a file: a name already there (from this run or
	 * before) gets the object's id */
	if (make_dirs(a, a->rel) || !lstat(path, &st))
		snprintf(a->rel + strlen(a->rel),
			 sizeof(a->rel) - strlen(a->rel), ".0x%" PRIx64,
			 x->st.oid);
	snprintf(path, sizeof(path), "%s/%s", a->dir, a->rel);
	if (make_dirs(a, a->rel) ||
	    dbg_out_open(a->d, "undel", path,
			 R4_OUT_NOREPLACE | R4_OUT_NOSYNC, 0600, &a->o)) {
		a->failed++;
		return 1;
	}
	a->fd = a->o.fd;
	return 0;
}

static int all_data(void *ctx, uint64_t off, const void *buf, size_t len)
{
	struct all *a = ctx;

	return dbg_pwrite_all(a->fd, off, buf, len);
}

static int all_gap(void *ctx, uint64_t off, uint64_t len)
{
	(void)ctx;
	(void)off;
	(void)len;
	return 0;	/* counted from recoverable: holes read as zeros */
}

/* sha256 of the first size bytes of fd into hex. */
static int fd_sha256(int fd, uint64_t size, char hex[65])
{
	struct fmt_sha256 c;
	uint8_t buf[65536];
	uint64_t off = 0;

	fmt_sha256_init(&c);
	while (off < size) {
		ssize_t n = pread(fd, buf, size - off < sizeof(buf) ?
				  (size_t)(size - off) : sizeof(buf),
				  (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		fmt_sha256_update(&c, buf, (size_t)n);
		off += (uint64_t)n;
	}
	fmt_sha256_hex(&c, hex);
	return 0;
}

static int all_end(void *ctx, const struct r4_deleted *x, int rc)
{
	struct all *a = ctx;
	char former[4096], hex[65] = "-";
	char path[8192 + 4096];

	if (a->fd < 0)
		return 0;
	snprintf(path, sizeof(path), "%s/%s", a->dir, a->rel);
	if (!rc && ftruncate(a->fd, (off_t)x->st.size))
		rc = -errno;
	if (!rc && fd_sha256(a->fd, x->st.size, hex))
		rc = -EIO;
	rc = dbg_out_end("undel", path, &a->o, rc ? DBG_FAIL : DBG_OK);
	a->fd = -1;
	if (r4cmd_progress_events())
		r4cmd_progress("undel --all", ++a->ended, a->planned);
	if (rc) {
		a->failed++;
		return 0;	/* said; on with the others */
	}
	a->files++;
	a->bytes += x->recoverable;
	a->partial += x->recoverable < x->st.size;
	dbg_former_path(a->f, x, former, sizeof(former));
	fprintf(a->manifest, "0x%" PRIx64 "\t%" PRIu64 "/%" PRIu64 "\t%s\t",
		x->st.oid, x->recoverable, x->st.size, hex);
	r4cmd_put_escaped(a->manifest, former, strlen(former), 1);
	fputc('\t', a->manifest);
	r4cmd_put_escaped(a->manifest, a->rel, strlen(a->rel), 1);
	fputc('\n', a->manifest);
	return 0;
}

static int all_plan(void *ctx, const struct r4_deleted *x)
{
	struct all *a = ctx;

	if (S_ISREG(x->st.mode))
		a->planned++;
	return dbg_former_add(a->f, x);
}

/* undel --all DIR */
/* What undel --all did: one line, or its JSON members. */
static void all_summary(const struct all *a, const char *mpath)
{
	if (a->d->json) {
		putchar('{');
		r4cmd_json_name("dir", a->dir, strlen(a->dir));
		putchar(',');
		r4cmd_json_name("manifest", mpath, strlen(mpath));
		printf(",\"recovered\":%" PRIu64 ",\"bytes\":%" PRIu64
		       ",\"partial\":%" PRIu64 ",\"failed\":%" PRIu64 "}\n",
		       a->files, a->bytes, a->partial, a->failed);
	} else {
		printf("%" PRIu64 " deleted file(s) recovered into %s (%"
		       PRIu64 " bytes, %" PRIu64 " of them in part), listed "
		       "in %s%s\n", a->files, a->dir, a->bytes, a->partial,
		       mpath, a->failed ? "; some could not be written "
		       "(above)" : "");
	}
}

static int sync_dir_tree(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc;

	if (fd < 0) {
		r4cmd_errorf("undel: %s: %s", dir, strerror(errno));
		return DBG_FAIL;
	}
	rc = dbg_sync_tree("undel", fd, dir);
	close(fd);
	return rc;
}

int dbg_undel_all(struct dbg *d, const char *dir)
{
	struct r4_error err = { 0 };
	struct all a = { .d = d, .dir = dir, .fd = -1 };
	struct r4_undel_all_fns fns = { all_plan, all_begin, all_data,
					all_gap, all_end, &a };
	char mpath[4096 + 16];
	struct stat st;
	int rc;

	if (mkdir(dir, 0700) && errno != EEXIST) {
		fprintf(stderr, "%s: undel: %s: %s\n", r4cmd_prog, dir,
			strerror(errno));
		return DBG_FAIL;
	}
	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "%s: undel: %s: not a folder\n", r4cmd_prog,
			dir);
		return DBG_FAIL;
	}
	snprintf(mpath, sizeof(mpath), "%s/MANIFEST", dir);
	rc = open(mpath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (rc < 0 || !(a.manifest = fdopen(rc, "w"))) {
		fprintf(stderr, "%s: undel: %s: %s (an earlier recovery is "
			"there: give another folder)\n", r4cmd_prog, mpath,
			strerror(errno));
		if (rc >= 0)
			close(rc);
		return DBG_FAIL;
	}
	fprintf(a.manifest, "oid\trecovered/size\tsha256\tformer path\t"
		"saved as\n");
	rc = dbg_former_init(d, &a.f);
	r4cmd_progress_kind("undel", "files");
	if (!rc)
		rc = r4_undel_all(d->vol, &fns, &err);
	if (!rc && r4cmd_progress_events()) {
		r4cmd_progress_end();
		r4cmd_progress_finish();
	}
	if (fclose(a.manifest) && !rc)
		rc = -errno;
	dbg_former_free(a.f);
	if (rc)
		return dbg_fail(&err, "undel --all", rc);
	/* the summary says what was written; then the files, folders and
	 * MANIFEST synced at once (each file unsynced): a failure is the
	 * last line, the summary not lost */
	all_summary(&a, mpath);
	fflush(stdout);
	rc = sync_dir_tree(dir);
	return a.failed || rc ? DBG_FAIL : DBG_OK;
}
