/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4debugfs: the commands that change the volume (-w): each one is a
 * transaction of its own (begin, the operation, commit), or with
 * --atomic every command of the run joins one transaction that commits
 * at the end only when all of them succeeded (dbg_edit_finish). */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "r4/edit.h"
#include "../common/common.h"
#include "debugfs.h"

#define WRITE_CHUNK (1u << 20)

/* ---- the transaction around each command ------------------------------- */

/* Ready to change the volume: refuse without -w, join or begin. */
static int edit_begin(struct dbg *d, const char *cmd)
{
	struct r4_error err = { 0 };

	if (!d->writable) {
		fprintf(stderr, "%s: %s: read-only: give -w\n", r4cmd_prog,
			cmd);
		return DBG_FAIL;
	}
	if (d->aborted) {
		fprintf(stderr, "%s: %s: skipped: the transaction was "
			"aborted\n", r4cmd_prog, cmd);
		return DBG_FAIL;
	}
	if (d->txn)
		return DBG_OK;
	if (r4_txn_begin(d->vol, &d->txn, &err))
		return dbg_fail(&err, d->image, err.code);
	return DBG_OK;
}

static int commit(struct dbg *d)
{
	struct r4_error err = { 0 };
	struct r4_txn *t = d->txn;

	d->txn = NULL;
	if (r4_txn_commit(t, &err)) {
		dbg_fail(&err, d->image, err.code);
		return DBG_FAIL;
	}
	r4_vol_super(d->vol, &d->si);
	return DBG_OK;
}

/* After the operation: report a failure (what: the path), abort (with
 * --atomic: the whole run), or commit (without --atomic). */
static int edit_end(struct dbg *d, int rc, const struct r4_error *err,
		    const char *what)
{
	if (rc) {
		dbg_fail(err, what, rc);
		dbg_edit_abort(d);
		return DBG_FAIL;
	}
	return d->atomic ? DBG_OK : commit(d);
}

void dbg_edit_abort(struct dbg *d)
{
	if (d->txn) {
		r4_txn_abort(d->txn);
		d->txn = NULL;
	}
	if (d->atomic)
		d->aborted = 1;
}

int dbg_edit_finish(struct dbg *d, int ok)
{
	if (!ok || d->aborted) {
		if (d->atomic && (d->txn || d->aborted))
			fprintf(stderr, "%s: %s: a command failed: the "
				"transaction was aborted, nothing was "
				"changed\n", r4cmd_prog, d->image);
		dbg_edit_abort(d);
		return DBG_FAIL;
	}
	return d->txn ? commit(d) : DBG_OK;
}

/* ---- small helpers ------------------------------------------------------ */

/* Fill err for a failure found here; returns code. */
#define efail r4cmd_fail

static int need_abs(const char *path)
{
	if (path[0] == '/')
		return 0;
	fprintf(stderr, "%s: %s: paths start with '/'\n", r4cmd_prog, path);
	return -1;
}

static int64_t now(void)
{
	const char *sde = getenv("SOURCE_DATE_EPOCH");

	if (sde && *sde)
		return (int64_t)strtoll(sde, NULL, 10);
	return (int64_t)time(NULL);
}

/* Attributes of a new object of type 'type' owned by root, times now. */
static void new_attr(struct r4_attr *a, uint32_t mode)
{
	memset(a, 0, sizeof(*a));
	a->mode = mode;
	a->atime = a->mtime = a->ctime = now();
}

static int parse_u32(const char *s, uint32_t *out, int base)
{
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, base);
	if (errno || *end || v > UINT32_MAX)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* ---- mkdir, rm, rmdir, mv, ln ------------------------------------------- */

int dbg_mkdir(struct dbg *d, int argc, const char **argv)
{
	struct r4_error err = { 0 };
	struct r4_attr a;

	if (argc != 2)
		return dbg_usage(argv[0]);
	if (need_abs(argv[1]) || edit_begin(d, argv[0]))
		return DBG_FAIL;
	new_attr(&a, S_IFDIR | 0755);
	return edit_end(d, r4_mkdir(d->txn, argv[1], &a, &err), &err,
			argv[1]);
}

int dbg_rm(struct dbg *d, int argc, const char **argv)
{
	struct r4_error err = { 0 };
	int rec = argc == 3 && !strcmp(argv[1], "-r");
	const char *path = argv[argc - 1];
	struct r4_objref ref;
	struct r4_stat st;
	int rc;

	if (argc != 2 + rec)
		return dbg_usage(argv[0]);
	if (need_abs(path) || edit_begin(d, argv[0]))
		return DBG_FAIL;
	rc = r4_lookup(d->vol, path, &ref, &err);
	if (!rc)
		rc = r4_stat(d->vol, &ref, &st, &err);
	if (!rc && rec && S_ISDIR(st.mode))
		rc = r4_remove_tree(d->txn, path, &err);
	else if (!rc && S_ISDIR(st.mode))
		rc = efail(&err, -EISDIR, "is a directory (use rm -r "
				 "or rmdir)");
	else if (!rc)
		rc = r4_unlink(d->txn, path, &err);
	return edit_end(d, rc, &err, path);
}

int dbg_rmdir(struct dbg *d, int argc, const char **argv)
{
	struct r4_error err = { 0 };

	if (argc != 2)
		return dbg_usage(argv[0]);
	if (need_abs(argv[1]) || edit_begin(d, argv[0]))
		return DBG_FAIL;
	return edit_end(d, r4_rmdir(d->txn, argv[1], &err), &err, argv[1]);
}

int dbg_mv(struct dbg *d, int argc, const char **argv)
{
	struct r4_error err = { 0 };

	if (argc != 3)
		return dbg_usage(argv[0]);
	if (need_abs(argv[1]) || need_abs(argv[2]) || edit_begin(d, argv[0]))
		return DBG_FAIL;
	return edit_end(d, r4_rename(d->txn, argv[1], argv[2], &err), &err,
			argv[1]);
}

int dbg_ln(struct dbg *d, int argc, const char **argv)
{
	struct r4_error err = { 0 };
	int sym = argc == 4 && !strcmp(argv[1], "-s");
	const char *target = argv[argc - 2], *path = argv[argc - 1];
	struct r4_attr a;
	int rc;

	if (argc != 3 + sym)
		return dbg_usage(argv[0]);
	if (need_abs(path) || (!sym && need_abs(target)) ||
	    edit_begin(d, argv[0]))
		return DBG_FAIL;
	new_attr(&a, S_IFLNK | 0777);
	rc = sym ? r4_symlink(d->txn, path, target, &a, &err)
		 : r4_link(d->txn, target, path, &err);
	return edit_end(d, rc, &err, path);
}

/* ---- mknod, chmod, chown, touch, truncate ------------------------------ */

int dbg_mknod(struct dbg *d, int argc, const char **argv)
{
	struct r4_error err = { 0 };
	struct r4_attr a;
	uint32_t type;

	if (argc < 3 || strlen(argv[2]) != 1 || !strchr("pcbs", argv[2][0]))
		return dbg_usage(argv[0]);
	type = argv[2][0] == 'p' ? S_IFIFO : argv[2][0] == 's' ? S_IFSOCK :
	       argv[2][0] == 'c' ? S_IFCHR : S_IFBLK;
	new_attr(&a, type | 0644);
	if (type == S_IFCHR || type == S_IFBLK) {
		if (argc != 5 || parse_u32(argv[3], &a.rdev_major, 10) ||
		    parse_u32(argv[4], &a.rdev_minor, 10))
			return dbg_usage(argv[0]);
	} else if (argc != 3) {
		return dbg_usage(argv[0]);
	}
	if (need_abs(argv[1]) || edit_begin(d, argv[0]))
		return DBG_FAIL;
	return edit_end(d, r4_mknod(d->txn, argv[1], &a, &err), &err,
			argv[1]);
}

int dbg_chmod(struct dbg *d, int argc, const char **argv)
{
	struct r4_error err = { 0 };
	struct r4_attr a = { 0 };

	if (argc != 3 || parse_u32(argv[1], &a.mode, 8) || a.mode > 07777)
		return dbg_usage(argv[0]);
	if (need_abs(argv[2]) || edit_begin(d, argv[0]))
		return DBG_FAIL;
	a.ctime = now();
	return edit_end(d, r4_setattr(d->txn, argv[2], &a, R4_ATTR_MODE |
				      R4_ATTR_CTIME, &err), &err, argv[2]);
}

int dbg_chown(struct dbg *d, int argc, const char **argv)
{
	struct r4_error err = { 0 };
	struct r4_attr a = { 0 };
	unsigned mask = R4_ATTR_UID | R4_ATTR_CTIME;
	char ids[64], *colon;

	if (argc != 3 || strlen(argv[1]) >= sizeof(ids))
		return dbg_usage(argv[0]);
	snprintf(ids, sizeof(ids), "%s", argv[1]);
	colon = strchr(ids, ':');
	if (colon) {
		*colon = '\0';
		if (parse_u32(colon + 1, &a.gid, 10))
			return dbg_usage(argv[0]);
		mask |= R4_ATTR_GID;
	}
	if (parse_u32(ids, &a.uid, 10))
		return dbg_usage(argv[0]);
	if (need_abs(argv[2]) || edit_begin(d, argv[0]))
		return DBG_FAIL;
	a.ctime = now();
	return edit_end(d, r4_setattr(d->txn, argv[2], &a, mask, &err), &err,
			argv[2]);
}

int dbg_touch(struct dbg *d, int argc, const char **argv)
{
	struct r4_error err = { 0 };
	const char *path = argv[argc - 1];
	struct r4_objref ref;
	struct r4_attr a;
	int64_t t = now();
	int rc;

	if (argc == 4 && !strcmp(argv[1], "-d")) {
		if (r4cmd_parse_time(argv[2], &t)) {
			fprintf(stderr, "%s: touch: '%s' is not a time "
				"(seconds, @seconds or YYYY-MM-DD[THH:MM[:SS]])"
				"\n", r4cmd_prog, argv[2]);
			return dbg_usage(argv[0]);
		}
	} else if (argc != 2) {
		return dbg_usage(argv[0]);
	}
	if (need_abs(path) || edit_begin(d, argv[0]))
		return DBG_FAIL;
	new_attr(&a, S_IFREG | 0644);
	a.atime = a.mtime = t;
	rc = r4_lookup(d->vol, path, &ref, &err);
	if (rc == R4_ENOTFOUND)
		rc = r4_create(d->txn, path, &a, 0, NULL, NULL, &err);
	else if (!rc)
		rc = r4_setattr(d->txn, path, &a, R4_ATTR_ATIME |
				R4_ATTR_MTIME | R4_ATTR_CTIME, &err);
	return edit_end(d, rc, &err, path);
}

int dbg_truncate(struct dbg *d, int argc, const char **argv)
{
	struct r4_error err = { 0 };
	uint64_t size;

	if (argc != 3 || r4cmd_parse_size(argv[1], &size))
		return dbg_usage(argv[0]);
	if (need_abs(argv[2]) || edit_begin(d, argv[0]))
		return DBG_FAIL;
	return edit_end(d, r4_truncate(d->txn, argv[2], size, &err), &err,
			argv[2]);
}

/* ---- write HOSTFILE PATH ------------------------------------------------ */

struct host_data {
	int fd;
	const char *name;
	uint64_t size, pos;
	char *buf;
};

/* r4_data_fn over a host file: its data runs (SEEK_DATA / SEEK_HOLE),
 * the holes left as holes. */
static int host_data_fn(void *ctx, uint64_t *off, const void **buf,
			size_t *len, struct r4_error *err)
{
	struct host_data *h = ctx;
	off_t s, e;
	ssize_t n;
	size_t want;

	if (h->pos >= h->size)
		return 0;
	s = lseek(h->fd, (off_t)h->pos, SEEK_DATA);
	if (s < 0 && errno == ENXIO)
		return 0;
	e = s < 0 ? (off_t)h->size : lseek(h->fd, s, SEEK_HOLE);
	if (s < 0)
		s = (off_t)h->pos;	/* no SEEK_DATA here: all data */
	if (e < 0 || (uint64_t)s >= h->size)
		return e < 0 ? efail(err, -errno, "%s: seek: %s",
					   h->name, strerror(errno)) : 0;
	if ((uint64_t)e > h->size)
		e = (off_t)h->size;
	want = (uint64_t)(e - s) < WRITE_CHUNK ? (size_t)(e - s) : WRITE_CHUNK;
	do
		n = pread(h->fd, h->buf, want, s);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return efail(err, -errno, "%s: read: %s", h->name,
				   strerror(errno));
	if (n == 0)
		return 0;
	h->pos = (uint64_t)s + (uint64_t)n;
	*off = (uint64_t)s;
	*buf = h->buf;
	*len = (size_t)n;
	return 1;
}

static void stat_attr(const struct stat *st, struct r4_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->mode = S_IFREG | (st->st_mode & 07777);
	a->uid = st->st_uid;
	a->gid = st->st_gid;
	a->atime = st->st_atim.tv_sec;
	a->mtime = st->st_mtim.tv_sec;
	a->ctime = st->st_ctim.tv_sec;
	a->atime_ns = (uint32_t)st->st_atim.tv_nsec;
	a->mtime_ns = (uint32_t)st->st_mtim.tv_nsec;
	a->ctime_ns = (uint32_t)st->st_ctim.tv_nsec;
}

/* write replaces a file, never a directory (not even an empty one). */
static int not_a_dir(struct dbg *d, const char *path, struct r4_error *err)
{
	struct r4_objref ref;
	struct r4_stat st;

	if (r4_lookup(d->vol, path, &ref, err) ||
	    r4_stat(d->vol, &ref, &st, err)) {
		memset(err, 0, sizeof(*err));
		return 0;	/* a new name, or the error comes later */
	}
	return S_ISDIR(st.mode) ? efail(err, -EISDIR, "is a directory") : 0;
}

int dbg_write(struct dbg *d, int argc, const char **argv)
{
	struct r4_error err = { 0 };
	struct host_data h = { -1, NULL, 0, 0, NULL };
	struct r4_attr a;
	struct stat st;
	int rc;

	if (argc != 3)
		return dbg_usage(argv[0]);
	if (need_abs(argv[2]) || edit_begin(d, argv[0]))
		return DBG_FAIL;
	h.name = argv[1];
	h.fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (h.fd < 0 || fstat(h.fd, &st) || !S_ISREG(st.st_mode)) {
		fprintf(stderr, "%s: %s: %s\n", r4cmd_prog, argv[1],
			h.fd >= 0 && !S_ISREG(st.st_mode) ?
			"not a regular file" : strerror(errno));
		if (h.fd >= 0)
			close(h.fd);
		dbg_edit_abort(d);
		return DBG_FAIL;
	}
	h.size = (uint64_t)st.st_size;
	h.buf = malloc(WRITE_CHUNK);
	stat_attr(&st, &a);
	rc = h.buf ? not_a_dir(d, argv[2], &err)
		   : efail(&err, -ENOMEM, "out of memory");
	if (!rc)
		rc = r4_create(d->txn, argv[2], &a, h.size, host_data_fn, &h,
			       &err);
	free(h.buf);
	close(h.fd);
	return edit_end(d, rc, &err, argv[2]);
}
