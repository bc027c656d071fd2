/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4debugfs: ls, stat, cat, dump: objects by path, through the read
 * path of r4/read.h. */
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
#include "../common/common.h"
#include "r4/read.h"
#include "debugfs.h"
#include "format/key.h"
#include "r4/util.h"

#define CHUNK 65536
#define TARGET_MAX 4096

int dbg_fail(const struct r4_error *err, const char *what, int code)
{
	/* what is often a name from the image: r4cmd_errorf escapes it */
	if (err && err->msg[0])
		r4cmd_errorf("%s: %s", what, err->msg);
	else
		r4cmd_errorf("%s: %s", what, code == -ENOTDIR ?
			     "not a directory" : r4_strerror(code));
	return DBG_FAIL;
}

/* ---- Host output files ---------------------------------------------------- */

int dbg_out_open(struct dbg *d, const char *cmd, const char *out,
		 unsigned flags, unsigned mode, struct r4_outfile *o)
{
	struct r4_error err = { 0 };
	int rc = r4_outfile_open(o, out, r4_vol_path(d->vol), flags, mode,
				 "read", &err);

	if (!rc)
		return DBG_OK;
	if (rc == -EEXIST && (flags & R4_OUT_NOREPLACE))
		r4cmd_errorf("%s: %s (r4debugfs never overwrites)", cmd,
			     err.msg);
	else
		dbg_fail(&err, cmd, rc);
	return DBG_FAIL;
}

int dbg_out_end(const char *cmd, const char *out, struct r4_outfile *o,
		int rc)
{
	struct r4_error err = { 0 };

	if (rc != DBG_OK) {
		r4_outfile_abort(o);
		return rc;
	}
	if (r4_outfile_commit(o, out, &err))
		return dbg_fail(&err, cmd, err.code);
	return DBG_OK;
}

/* syncfs(2) covers only the file system of the folder fd (a tree that
 * spans a mount below it is not synced there), and before Linux 5.8 it
 * reports no writeback error: success there is no proof. */
int dbg_sync_tree(const char *cmd, int fd, const char *dir)
{
	if (!syncfs(fd))
		return DBG_OK;
	r4cmd_errorf("%s: %s: what was written could not be synced (a "
		     "power cut may lose it): %s", cmd, dir, strerror(errno));
	return DBG_FAIL;
}

int dbg_out_stdout(struct dbg *d, const char *cmd)
{
	struct r4_error err = { 0 };

	if (r4_outfile_check_fd(STDOUT_FILENO, "standard output",
				r4_vol_path(d->vol), "read", &err))
		return dbg_fail(&err, cmd, err.code);
	return DBG_OK;
}

int dbg_resolve(struct dbg *d, const char *path, struct r4_objref *ref)
{
	struct r4_error err = { 0 };
	int rc;

	if (path[0] != '/') {
		fprintf(stderr, "%s: %s: paths start with '/'\n", r4cmd_prog,
			path);
		return DBG_FAIL;
	}
	rc = r4_lookup(d->vol, path, ref, &err);
	if (rc == R4_ENOTFOUND)
		fprintf(stderr, "%s: %s: no such file or directory\n",
			r4cmd_prog, path);
	else if (rc)
		return dbg_fail(&err, path, rc);
	return rc ? DBG_FAIL : DBG_OK;
}

static const char *plugin_name(unsigned id)
{
	static const char *const names[] = { "reg40", "dir40", "sym40",
					     "spl40", "ccreg40" };

	return id < sizeof(names) / sizeof(names[0]) ? names[id] : "unknown";
}

static void time_str(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!gmtime_r(&tt, &tm) ||
	    !strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(buf, len, "%" PRId64, t);
}

/* ---- ls ----------------------------------------------------------------- */

static int collect(void *ctx, const char *name, size_t len,
		   const struct r4_objref *target)
{
	struct dlist *l = ctx;

	if (R4_RESERVE(l->v, l->cap, l->n + 1, 64))
		return -ENOMEM;
	l->v[l->n].name = malloc(len + 1);
	if (!l->v[l->n].name)
		return -ENOMEM;
	memcpy(l->v[l->n].name, name, len);
	l->v[l->n].name[len] = '\0';
	l->v[l->n].len = len;
	l->v[l->n].ref = *target;
	l->n++;
	return 0;
}

void dbg_dlist_free(struct dlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].name);
	free(l->v);
	l->v = NULL;
	l->n = l->cap = 0;
}

int dbg_list_dir(struct dbg *d, const struct r4_objref *dir,
		 struct dlist *l, struct r4_error *err)
{
	int rc = r4_readdir(d->vol, dir, collect, l, err);

	if (rc)
		dbg_dlist_free(l);
	return rc;
}

static void ls_long_text(const struct r4_stat *st, const struct dent *e,
			 const char *target)
{
	char mode[11], tm[32];

	dbg_mode_str(st->mode, mode);
	time_str(st->mtime, tm, sizeof(tm));
	printf("%s %4" PRIu32 " %5" PRIu32 " %5" PRIu32 " ", mode, st->nlink,
	       st->uid, st->gid);
	if (S_ISCHR(st->mode) || S_ISBLK(st->mode))
		printf("%4" PRIu32 ", %4" PRIu32, r4_rdev_major(st->rdev),
		       r4_rdev_minor(st->rdev));
	else
		printf("%10" PRIu64, st->size);
	printf(" %s ", tm);
	dbg_put_name(e->name, e->len);
	if (target) {
		printf(" -> ");
		dbg_put_name(target, strlen(target));
	}
	putchar('\n');
}

static void ls_json(const struct r4_stat *st, const struct dent *e,
		    const char *dir, const char *target, int first)
{
	printf("%s{", first ? "" : ",");
	r4cmd_json_name("name", e->name, e->len);
	putchar(',');
	if (dir) {
		/* The entry's full path: DIR/NAME. */
		size_t dl = strlen(dir), n = dl + 1 + e->len;
		char *p = malloc(n + 1);

		if (p) {
			memcpy(p, dir, dl);
			if (!dl || dir[dl - 1] != '/')
				p[dl++] = '/';
			memcpy(p + dl, e->name, e->len);
			r4cmd_json_name("path", p, dl + e->len);
			free(p);
		}
	} else {
		r4cmd_json_name("path", e->name, e->len);
	}
	printf(",\"oid\":");
	r4cmd_json_u64(e->ref.oid);
	printf(",\"locality\":");
	r4cmd_json_u64(e->ref.locality);
	if (st) {
		printf(",\"mode\":%" PRIu32 ",\"nlink\":%" PRIu32 ",\"uid\":%"
		       PRIu32 ",\"gid\":%" PRIu32 ",\"size\":", st->mode,
		       st->nlink, st->uid, st->gid);
		r4cmd_json_u64(st->size);
		printf(",\"mtime\":");
		r4cmd_json_i64(st->mtime);
		if (S_ISCHR(st->mode) || S_ISBLK(st->mode))
			printf(",\"major\":%u,\"minor\":%u",
			       r4_rdev_major(st->rdev), r4_rdev_minor(st->rdev));
	}
	if (target) {
		putchar(',');
		r4cmd_json_name("target", target, strlen(target));
	}
	putchar('}');
}

/* One ls line (or JSON element); DBG_FAIL if the object cannot be read. */
static int ls_one(struct dbg *d, const struct dent *e, const char *dir,
		  int lng, int first)
{
	struct r4_error err = { 0 };
	struct r4_stat st;
	char target[TARGET_MAX];
	const char *tp = NULL;
	int rc;

	if (!lng) {
		if (d->json)
			ls_json(NULL, e, dir, NULL, first);
		else {
			dbg_put_name(e->name, e->len);
			putchar('\n');
		}
		return DBG_OK;
	}
	rc = r4_stat(d->vol, &e->ref, &st, &err);
	if (rc)
		return dbg_fail(&err, e->name, rc);
	if (S_ISLNK(st.mode)) {
		rc = r4_readlink(d->vol, &e->ref, target, sizeof(target), NULL,
				 &err);
		if (rc)
			return dbg_fail(&err, e->name, rc);
		tp = target;
	}
	if (d->json)
		ls_json(&st, e, dir, tp, first);
	else
		ls_long_text(&st, e, tp);
	return DBG_OK;
}

static int ls_parse(int argc, const char **argv, int *lng, const char **p)
{
	*lng = 0;
	*p = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-l"))
			*lng = 1;
		else if (argv[i][0] == '-' || *p)
			return -1;
		else
			*p = argv[i];
	}
	if (!*p)
		*p = "/";
	return 0;
}

int dbg_ls(struct dbg *d, int argc, const char **argv)
{
	struct r4_error err = { 0 };
	struct dlist l = { 0 };
	struct r4_objref ref;
	const char *path;
	int lng, rc;

	if (ls_parse(argc, argv, &lng, &path))
		return dbg_usage(argv[0]);
	if (dbg_resolve(d, path, &ref))
		return DBG_FAIL;
	rc = dbg_list_dir(d, &ref, &l, &err);
	if (rc == -ENOTDIR) {
		struct dent one = { (char *)path, strlen(path), ref };

		if (d->json)
			putchar('[');
		rc = ls_one(d, &one, NULL, lng, 1);
		if (d->json)
			printf("]\n");
		return rc;
	}
	if (rc)
		return dbg_fail(&err, path, rc);
	if (d->json)
		putchar('[');
	for (size_t i = 0; i < l.n; i++)
		if (ls_one(d, &l.v[i], path, lng, i == 0))
			rc = DBG_FAIL;
	if (d->json)
		printf("]\n");
	dbg_dlist_free(&l);
	return rc ? DBG_FAIL : DBG_OK;
}

/* ---- stat --------------------------------------------------------------- */

static void stat_text(const char *path, const struct r4_stat *st,
		      const char *target)
{
	char mode[11], t[3][32], ks[FMT_KEY_STR_MAX];
	struct fmt_key k;

	dbg_mode_str(st->mode, mode);
	time_str(st->atime, t[0], sizeof(t[0]));
	time_str(st->mtime, t[1], sizeof(t[1]));
	time_str(st->ctime, t[2], sizeof(t[2]));
	printf("path:        ");
	dbg_put_name(path, strlen(path));
	printf("\nobject:      oid 0x%" PRIx64 ", locality 0x%" PRIx64
	       ", ordering 0x%" PRIx64 "\n", st->oid, st->locality,
	       st->ordering);
	fmt_key_sd(&k, st->locality, st->ordering, st->oid);
	fmt_key_str(&k, ks, sizeof(ks));
	printf("key:         [%s]\n", ks);
	printf("plugin:      %s (%u)\n", plugin_name(st->object_plugin),
	       st->object_plugin);
	printf("mode:        0%06o (%s)\n", st->mode, mode);
	printf("nlink:       %" PRIu32 "\n", st->nlink);
	printf("uid:         %" PRIu32 "\ngid:         %" PRIu32 "\n",
	       st->uid, st->gid);
	printf("size:        %" PRIu64 "\nbytes:       %" PRIu64 "\n",
	       st->size, st->bytes);
	if (S_ISCHR(st->mode) || S_ISBLK(st->mode))
		printf("rdev:        %u:%u\n", r4_rdev_major(st->rdev),
		       r4_rdev_minor(st->rdev));
	printf("atime:       %" PRId64 ".%09" PRIu32 " (%s UTC)\n", st->atime,
	       st->atime_ns, t[0]);
	printf("mtime:       %" PRId64 ".%09" PRIu32 " (%s UTC)\n", st->mtime,
	       st->mtime_ns, t[1]);
	printf("ctime:       %" PRId64 ".%09" PRIu32 " (%s UTC)\n", st->ctime,
	       st->ctime_ns, t[2]);
	printf("sd mask:     0x%" PRIx64 "\nflags:       0x%" PRIx32 "\n",
	       st->sd_mask, st->flags);
	if (st->hash_id >= 0)
		printf("hash:        %d\nfibration:   %d\n", st->hash_id,
		       st->fibration_id);
	if (st->formatting_id >= 0)
		printf("formatting:  %d\n", st->formatting_id);
	printf("stat data:   block %" PRIu64 ", item %u\n", st->sd_block,
	       st->sd_item);
	if (target) {
		printf("target:      ");
		dbg_put_name(target, strlen(target));
		putchar('\n');
	}
}

#define J(name, fmt, v) printf(",\"" name "\":%" fmt, v)
#define JU(name, v) (printf(",\"" name "\":"), r4cmd_json_u64(v))
#define JI(name, v) (printf(",\"" name "\":"), r4cmd_json_i64(v))

static void stat_json(const char *path, const struct r4_stat *st,
		      const char *target)
{
	putchar('{');
	r4cmd_json_name("path", path, strlen(path));
	JU("oid", st->oid);
	JU("locality", st->locality);
	JU("ordering", st->ordering);
	printf(",\"plugin\":\"%s\"", plugin_name(st->object_plugin));
	J("mode", PRIu32, st->mode);
	J("nlink", PRIu32, st->nlink);
	J("uid", PRIu32, st->uid);
	J("gid", PRIu32, st->gid);
	JU("size", st->size);
	JU("bytes", st->bytes);
	JU("rdev", st->rdev);
	JI("atime", st->atime);
	J("atime_ns", PRIu32, st->atime_ns);
	JI("mtime", st->mtime);
	J("mtime_ns", PRIu32, st->mtime_ns);
	JI("ctime", st->ctime);
	J("ctime_ns", PRIu32, st->ctime_ns);
	JU("sd_mask", st->sd_mask);
	J("flags", PRIu32, st->flags);
	J("hash", "d", st->hash_id);
	J("fibration", "d", st->fibration_id);
	J("formatting", "d", st->formatting_id);
	J("sd_block", PRIu64, st->sd_block);
	J("sd_item", "u", st->sd_item);
	if (target) {
		putchar(',');
		r4cmd_json_name("target", target, strlen(target));
	}
	printf("}\n");
}

int dbg_stat(struct dbg *d, int argc, const char **argv)
{
	struct r4_error err = { 0 };
	struct r4_objref ref;
	struct r4_stat st;
	char target[TARGET_MAX];
	int rc;

	if (argc != 2)
		return dbg_usage(argv[0]);
	if (dbg_resolve(d, argv[1], &ref))
		return DBG_FAIL;
	rc = r4_stat(d->vol, &ref, &st, &err);
	if (rc)
		return dbg_fail(&err, argv[1], rc);
	if (S_ISLNK(st.mode)) {
		rc = r4_readlink(d->vol, &ref, target, sizeof(target), NULL,
				 &err);
		if (rc)
			return dbg_fail(&err, argv[1], rc);
	}
	if (d->json)
		stat_json(argv[1], &st, S_ISLNK(st.mode) ? target : NULL);
	else
		stat_text(argv[1], &st, S_ISLNK(st.mode) ? target : NULL);
	return DBG_OK;
}

/* ---- cat, dump ---------------------------------------------------------- */

/* Write n bytes of buf (zeros when buf is NULL) to fd. */
static int put_all(int fd, const uint8_t *buf, uint64_t n, uint8_t *zero)
{
	while (n) {
		size_t k = n < CHUNK ? (size_t)n : CHUNK;
		ssize_t w = write(fd, buf ? buf : zero, k);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		n -= (uint64_t)w;
		if (buf)
			buf += w;
	}
	return 0;
}

/* Bytes off..end of the file to fd (at base + off when seekable). */
static int copy_run(struct dbg *d, const struct r4_objref *ref, uint64_t off,
		    uint64_t end, int fd, off_t base, uint8_t *buf,
		    struct r4_error *err)
{
	if (base >= 0 && lseek(fd, base + (off_t)off, SEEK_SET) < 0)
		return -errno;
	while (off < end) {
		size_t want = end - off < CHUNK ? (size_t)(end - off) : CHUNK;
		size_t got = 0;
		int rc = r4_read(d->vol, ref, off, buf, want, &got, err);

		if (!rc && got != want) {
			snprintf(err->msg, sizeof(err->msg), "short read at "
				 "%llu", (unsigned long long)off);
			rc = err->code = R4_ECORRUPT;
		}
		if (!rc)
			rc = put_all(fd, buf, got, NULL);
		if (rc)
			return rc;
		off += got;
	}
	return 0;
}

/* Only the data runs are read (r4_file_runs): holes are skipped in a
 * regular output file (lseek, then ftruncate to the size) so it stays
 * sparse, and written as zeros to a pipe or terminal. */
int dbg_copy_out(struct dbg *d, const char *path, const struct r4_objref *ref,
		 int fd)
{
	struct r4_error err = { 0 };
	uint8_t *buf = malloc(CHUNK), *zero = calloc(1, CHUNK);
	uint64_t *runs = NULL, pos = 0;
	size_t n = 0;
	struct r4_stat st;
	struct stat hs;
	off_t base = -1;
	int rc = buf && zero ? 0 : -ENOMEM;

	if (!rc)
		rc = r4_stat(d->vol, ref, &st, &err);
	if (!rc && S_ISDIR(st.mode))
		rc = -EISDIR;
	else if (!rc && !S_ISREG(st.mode))
		rc = R4_EINVAL;
	if (!rc)
		rc = r4_file_runs(d->vol, ref, st.size, &runs, &n, &err);
	if (!rc && !fstat(fd, &hs) && S_ISREG(hs.st_mode))
		base = lseek(fd, 0, SEEK_CUR);
	for (size_t i = 0; !rc && i < n; i++) {
		uint64_t a = runs[2 * i], e = a + runs[2 * i + 1];

		if (base < 0)
			rc = put_all(fd, NULL, a - pos, zero);
		if (!rc)
			rc = copy_run(d, ref, a, e, fd, base, buf, &err);
		pos = e;
	}
	if (!rc && base >= 0 && (st.size > (uint64_t)INT64_MAX - (uint64_t)base ||
				 ftruncate(fd, base + (off_t)st.size)))
		rc = errno ? -errno : -EFBIG;
	else if (!rc && base < 0)
		rc = put_all(fd, NULL, st.size - pos, zero);
	free(buf);
	free(zero);
	free(runs);
	if (rc == -EISDIR)
		fprintf(stderr, "%s: %s: is a directory\n", r4cmd_prog, path);
	else if (rc == R4_EINVAL && !err.msg[0])
		fprintf(stderr, "%s: %s: not a regular file\n", r4cmd_prog,
			path);
	else if (rc)
		dbg_fail(&err, path, rc);
	return rc ? DBG_FAIL : DBG_OK;
}

int dbg_cat(struct dbg *d, int argc, const char **argv)
{
	struct r4_objref ref;
	int rc;

	if (argc != 2)
		return dbg_usage(argv[0]);
	if (dbg_resolve(d, argv[1], &ref))
		return DBG_FAIL;
	if (dbg_out_stdout(d, argv[0]))
		return DBG_FAIL;
	fflush(stdout);
	rc = dbg_copy_out(d, argv[1], &ref, STDOUT_FILENO);
	return rc;
}

int dbg_dump(struct dbg *d, int argc, const char **argv)
{
	struct r4_error err = { 0 };
	struct r4_outfile o;
	struct r4_objref ref;
	struct r4_stat st;
	int rc;

	if (argc != 3)
		return dbg_usage(argv[0]);
	if (dbg_resolve(d, argv[1], &ref))
		return DBG_FAIL;
	rc = r4_stat(d->vol, &ref, &st, &err);
	if (rc)
		return dbg_fail(&err, argv[1], rc);
	if (!S_ISREG(st.mode)) {
		fprintf(stderr, "%s: %s: not a regular file\n", r4cmd_prog,
			argv[1]);
		return DBG_FAIL;
	}
	/* A new file only: HOSTFILE appears once the copy is complete. */
	if (dbg_out_open(d, "dump", argv[2], R4_OUT_NOREPLACE, st.mode, &o))
		return DBG_FAIL;
	rc = dbg_copy_out(d, argv[1], &ref, o.fd);
	/* its permission bits as they are, umask aside */
	if (!rc && fchmod(o.fd, st.mode & 07777))
		rc = dbg_fail(NULL, argv[2], -errno);
	return dbg_out_end("dump", argv[2], &o, rc);
}
