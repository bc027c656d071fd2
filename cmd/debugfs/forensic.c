/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4debugfs: the forensic commands: lsdel, undel, bodyfile, dumpblock,
 * hash (and rdump --manifest). None of them writes to the volume. */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../common/common.h"
#include "debugfs.h"
#include "r4/util.h"
#include "r4/forensic.h"
#include "format/sha256.h"

#define CHUNK (1u << 20)

/* ---- A walk of every object under a path --------------------------------- */

typedef int (*walk_fn)(struct dbg *d, void *ctx, const char *path,
		       const struct r4_objref *ref, const struct r4_stat *st);

/* On r4_walk (the library's one namespace walk: any depth, each
 * directory once): each object's stat data to fn, in the walk's order;
 * a directory whose mode says it is not one is not entered. */
struct walk {
	struct dbg *d;
	walk_fn fn;
	void *ctx;
	struct r4_u64map dirs;	/* oid -> path (char *) of the directories
				 * entered, for the warning of a second
				 * name */
	struct r4_error *err;	/* the walk's, for a directory it left */
	int rc;
};

#define WALK_STOP (-ECANCELED)	/* fn said stop */

static int walk_dir_first(struct walk *w, uint64_t oid, const char *path)
{
	char **first = r4_u64map_get(&w->dirs, oid, NULL);

	if (!first)
		return dbg_fail(NULL, path, -ENOMEM);
	free(*first);
	*first = strdup(path);
	return 0;
}

static int walk_entry(void *ctx, const struct r4_walk_entry *e)
{
	struct walk *w = ctx;
	struct r4_error err = { 0 };
	struct r4_stat st;
	char **first;
	int rc;

	if (e->leave) {
		if (e->error) {	/* a damaged directory: said, then on */
			dbg_fail(w->err, e->path, e->error);
			w->rc = DBG_FAIL;
		}
		return 0;
	}
	if (memchr(e->name, '\0', e->name_len))
		return R4_WALK_SKIP;
	rc = r4_stat(w->d->vol, &e->target, &st, &err);
	if (rc) {
		dbg_fail(&err, e->path, rc);
		w->rc = DBG_FAIL;
		return R4_WALK_SKIP;
	}
	if (w->fn(w->d, w->ctx, e->path, &e->target, &st))
		return WALK_STOP;
	if (!S_ISDIR(st.mode))
		return R4_WALK_SKIP;
	if (e->again) {
		/* a second name (a loop when above): not again */
		first = r4_u64map_find(&w->dirs, e->target.oid);
		r4cmd_warnf("%s: not walked: a second name of the directory "
			    "walked as %s (run r4fsck)", e->path,
			    first && *first ? *first : "?");
		return 0;
	}
	return walk_dir_first(w, e->target.oid, e->path) ? WALK_STOP : 0;
}

static int walk_tree(struct dbg *d, const char *path, walk_fn fn, void *ctx)
{
	struct r4_error err = { 0 };
	struct walk w = { d, fn, ctx, { 0 }, &err, DBG_OK };
	struct r4_objref ref;
	struct r4_stat st;
	int rc;

	r4_u64map_init(&w.dirs, sizeof(char *));
	if (dbg_resolve(d, path, &ref))
		return DBG_FAIL;
	rc = r4_stat(d->vol, &ref, &st, &err);
	if (rc) {
		dbg_fail(&err, path, rc);
		return DBG_FAIL;
	}
	rc = fn(d, ctx, path, &ref, &st) ? WALK_STOP : 0;
	if (!rc && S_ISDIR(st.mode))
		rc = walk_dir_first(&w, ref.oid, path) ? WALK_STOP :
		     r4_walk(d->vol, &ref, path, 0, walk_entry, &w, &err);
	if (rc && rc != WALK_STOP)
		dbg_fail(&err, path, rc);
	for (size_t i = r4_u64map_next(&w.dirs, 0); i < w.dirs.cap;
	     i = r4_u64map_next(&w.dirs, i + 1))
		free(*(char **)r4_u64map_val(&w.dirs, i));
	r4_u64map_fini(&w.dirs);
	return rc ? DBG_FAIL : w.rc;
}

/* ---- hash / manifest ---------------------------------------------------- */

/* sha256 of a regular file's bytes as the read API gives them. */
static int file_sha256(struct dbg *d, const char *path,
		       const struct r4_objref *ref, char hex[65])
{
	struct r4_error err = { 0 };
	uint8_t sha[32];
	int rc = r4_sha256_file(d->vol, ref, sha, &err);

	if (rc)
		return dbg_fail(&err, path, rc);
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", sha[i]);
	return DBG_OK;
}

struct hash_ctx {
	int n;
	int failed;
};

static int hash_one(struct dbg *d, void *ctx, const char *path,
		    const struct r4_objref *ref, const struct r4_stat *st)
{
	struct hash_ctx *h = ctx;
	char hex[65];

	if (!S_ISREG(st->mode))
		return 0;
	if (file_sha256(d, path, ref, hex)) {
		h->failed = 1;
		return 0;
	}
	if (d->json) {
		printf("%s{", h->n ? "," : "");
		r4cmd_json_name("path", path, strlen(path));
		printf(",\"oid\":");
		r4cmd_json_u64(st->oid);
		printf(",\"size\":");
		r4cmd_json_u64(st->size);
		printf(",\"sha256\":\"%s\"}", hex);
	} else {
		printf("%s  ", hex);
		dbg_put_name(path, strlen(path));
		putchar('\n');
	}
	h->n++;
	return 0;
}

int dbg_manifest(struct dbg *d, const char *path)
{
	struct hash_ctx h = { 0, 0 };
	int rc;

	if (d->json)
		putchar('[');
	rc = walk_tree(d, path, hash_one, &h);
	if (d->json)
		printf("]\n");
	return rc || h.failed ? DBG_FAIL : DBG_OK;
}

int dbg_hash(struct dbg *d, int argc, const char **argv)
{
	if (argc != 2)
		return dbg_usage(argv[0]);
	return dbg_manifest(d, argv[1]);
}

/* ---- bodyfile ----------------------------------------------------------- */

/* The mode as TSK's body files write it: "r/rrw-r--r--" (name type /
 * meta type and permissions). */
static void tsk_mode(unsigned mode, char out[16])
{
	char t = S_ISREG(mode) ? 'r' : S_ISDIR(mode) ? 'd' :
		 S_ISLNK(mode) ? 'l' : S_ISCHR(mode) ? 'c' :
		 S_ISBLK(mode) ? 'b' : S_ISFIFO(mode) ? 'p' :
		 S_ISSOCK(mode) ? 'h' : '-';
	char perm[12];

	dbg_mode_str(mode, perm);
	snprintf(out, 16, "%c/%c%s", t, t, perm + 1);
}

/* A name in a body file: '|' would end the field, so it is escaped
 * with the other control bytes. */
static void body_name(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c == 0x7f || c == '|' || c == '\\')
			printf("\\x%02x", c);
		else
			putchar(c);
	}
}

static void body_line(const char *name, size_t len, const char *suffix,
		      const struct r4_stat *st)
{
	char mode[16];

	tsk_mode(st->mode, mode);
	printf("0|");
	body_name(name, len);
	printf("%s|%" PRIu64 "|%s|%u|%u|%" PRIu64 "|%" PRId64 "|%" PRId64
	       "|%" PRId64 "|0\n", suffix, st->oid, mode, st->uid, st->gid,
	       st->size, st->atime, st->mtime, st->ctime);
}

static int body_one(struct dbg *d, void *ctx, const char *path,
		    const struct r4_objref *ref, const struct r4_stat *st)
{
	(void)d;
	(void)ctx;
	(void)ref;
	body_line(path, strlen(path), "", st);
	return 0;
}

static int first_path(void *ctx, const char *path)
{
	snprintf(ctx, 4096, "%s", path);
	return 1;	/* one is enough */
}

static int body_del(void *ctx, const struct r4_deleted *x)
{
	struct dbg *d = ctx;
	struct r4_error err = { 0 };
	uint64_t dir = x->name_len ? x->parent : x->st.locality;
	char *name = malloc(4096 + 300);
	char tail[300];
	size_t n;

	if (!name)
		return -ENOMEM;
	/* Under the former directory's path while it exists (else
	 * "<oid N>"), the former name where one survives (else
	 * "<oid N>" of the object), and TSK's "(deleted)" mark. */
	name[0] = '\0';
	if (r4_oid_paths(d->vol, dir, first_path, name, &err) < 0 ||
	    !name[0])
		snprintf(name, 4096, "<oid %" PRIu64 ">", dir);
	if (x->name_len)
		snprintf(tail, sizeof(tail), "%.*s", (int)x->name_len,
			 x->name);
	else
		snprintf(tail, sizeof(tail), "<oid %" PRIu64 ">", x->st.oid);
	n = strlen(name);
	snprintf(name + n, 4096 + 300 - n, "%s%s",
		 n && name[n - 1] == '/' ? "" : "/", tail);
	body_line(name, strlen(name), " (deleted)", &x->st);
	free(name);
	return 0;
}

int dbg_bodyfile(struct dbg *d, int argc, const char **argv)
{
	struct r4_error err = { 0 };
	int rc;

	if (argc > 2)
		return dbg_usage(argv[0]);
	rc = walk_tree(d, argc == 2 ? argv[1] : "/", body_one, NULL);
	if (argc == 2 && strcmp(argv[1], "/"))
		return rc;
	/* Deleted objects belong to no path: with the whole volume. */
	if (r4_lsdel(d->vol, body_del, d, &err))
		rc = dbg_fail(&err, "lsdel", err.code);
	return rc;
}

/* ---- lsdel / undel ------------------------------------------------------ */

struct lsdel_ctx {
	struct dbg *d;
	int n;
	int orphans;
	struct former *f;
};

static void put_time(const char *key, int64_t s, uint32_t ns)
{
	printf(",\"%s\":%" PRId64 ",\"%s_ns\":%u", key, s, key, ns);
}

/* The kind of safe link the tree holds for an orphan. */
static const char *safe_link_name(const struct r4_deleted *x,
				  const char *none)
{
	if (!x->orphan || x->safe_link < 0)
		return none;
	return x->safe_link == R4_SAFELINK_UNLINK ? "\"unlink\"" :
	       "\"truncate\"";
}

/* ",\"key\":value", exact above 2^53 (a string there). */
static void put_u64(const char *key, uint64_t v)
{
	printf(",\"%s\":", key);
	r4cmd_json_u64(v);
}

static void del_json(const struct r4_deleted *x, const struct former *f)
{
	char path[4096];

	printf("{\"oid\":");
	r4cmd_json_u64(x->st.oid);
	put_u64("locality", x->st.locality);
	printf(",\"mode\":%u,\"nlink\":%u,\"uid\":%u,\"gid\":%u",
	       x->st.mode, x->st.nlink, x->st.uid, x->st.gid);
	put_u64("size", x->st.size);
	put_time("atime", x->st.atime, x->st.atime_ns);
	put_time("mtime", x->st.mtime, x->st.mtime_ns);
	put_time("ctime", x->st.ctime, x->st.ctime_ns);
	putchar(',');
	if (x->name_len)
		r4cmd_json_name("name", x->name, x->name_len);
	else
		printf("\"name\":null");
	if (f) {
		dbg_former_path(f, x, path, sizeof(path));
		putchar(',');
		r4cmd_json_name("path", path, strlen(path));
	}
	printf(",\"plugin\":%u", x->st.object_plugin);
	put_u64("parent", x->parent);
	put_u64("found", x->found);
	put_u64("recoverable", x->recoverable);
	put_u64("sd_block", x->st.sd_block);
	printf(",\"orphan\":%s,\"safe_link\":%s}",
	       x->orphan ? "true" : "false", safe_link_name(x, "null"));
}

static int lsdel_collect(void *ctx, const struct r4_deleted *x)
{
	struct lsdel_ctx *c = ctx;

	return dbg_former_add(c->f, x);
}

static int lsdel_one(void *ctx, const struct r4_deleted *x)
{
	struct lsdel_ctx *c = ctx;
	char mode[12], when[32], path[4096];

	if (c->d->json) {
		if (c->n)
			putchar(',');
		del_json(x, c->f);
	} else {
		dbg_mode_str(x->st.mode, mode);
		dbg_iso_time(x->st.mtime, when);
		printf("0x%" PRIx64 "\t%s\t%" PRIu64 "\t%" PRIu64 "/%" PRIu64
		       " (%u%%)\t%s\t", x->st.oid, mode,
		       x->st.size, x->recoverable, x->st.size,
		       x->st.size ? (unsigned)(x->recoverable * 100 /
					       x->st.size) : 100, when);
		dbg_former_path(c->f, x, path, sizeof(path));
		dbg_put_name(path, strlen(path));
		if (x->orphan)
			printf("\t(orphan: in the tree, no name%s%s)",
			       x->safe_link < 0 ? "" : "; safe link ",
			       x->safe_link < 0 ? "" :
			       x->safe_link == R4_SAFELINK_UNLINK ? "unlink" :
			       "truncate");
		putchar('\n');
	}
	c->n++;
	c->orphans += x->orphan != 0;
	return 0;
}

int dbg_lsdel(struct dbg *d, int argc, const char **argv)
{
	struct r4_error err = { 0 };
	struct lsdel_ctx c = { d, 0, 0, NULL };
	struct r4_lsdel_stats st = { 0, 0 };
	int rc;

	if (argc != 1)
		return dbg_usage(argv[0]);
	/* every object first: a deleted file's folder may be one too */
	rc = dbg_former_init(d, &c.f);
	if (!rc)
		rc = r4_lsdel_ex(d->vol, lsdel_collect, &c, &st, &err);
	if (d->json)
		putchar('[');
	else
		printf("oid\tmode\tsize\trecoverable\tmtime (UTC)\t"
		       "former path\n");
	for (size_t i = 0; c.f && !rc && i < c.f->n; i++)
		rc = lsdel_one(&c, c.f->v[i]);
	if (d->json)
		printf("]\n");
	else if (!rc)
		printf("scanned %" PRIu64 " free block(s) and %" PRIu64
		       " block(s) of a pending transaction\n", st.free_blocks,
		       st.journal_blocks);
	if (d->json)
		;
	else if (c.orphans)
		printf("%d deleted object(s), %d of them orphans\n", c.n,
		       c.orphans);
	else
		printf("%d deleted object(s)\n", c.n);
	dbg_former_free(c.f);
	return rc ? dbg_fail(&err, "lsdel", rc) : DBG_OK;
}

struct undel_ctx {
	struct dbg *d;
	int fd;
	const char *host;
	int nmiss;
};

int dbg_pwrite_all(int fd, uint64_t off, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t w = pwrite(fd, p, len, (off_t)off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		off += (uint64_t)w;
		len -= (size_t)w;
	}
	return 0;
}

static int undel_data(void *ctx, uint64_t off, const void *buf, size_t len)
{
	struct undel_ctx *u = ctx;

	return dbg_pwrite_all(u->fd, off, buf, len);
}

static int undel_gap(void *ctx, uint64_t off, uint64_t len)
{
	struct undel_ctx *u = ctx;

	if (u->d->json) {
		printf("%s{\"offset\":", u->nmiss ? "," : "");
		r4cmd_json_u64(off);
		put_u64("length", len);
		putchar('}');
	} else
		fprintf(stderr, "%s: undel: bytes %" PRIu64 "..%" PRIu64
			" (%" PRIu64 " bytes) did not survive\n", r4cmd_prog,
			off, off + len - 1, len);
	u->nmiss++;
	return 0;
}

int dbg_undel(struct dbg *d, int argc, const char **argv)
{
	struct r4_error err = { 0 };
	struct undel_ctx u = { d, -1, NULL, 0 };
	struct r4_outfile o;
	struct r4_deleted x;
	uint64_t oid;
	int rc;

	if (argc == 3 && !strcmp(argv[1], "--all"))
		return dbg_undel_all(d, argv[2]);
	if (argc != 3)
		return dbg_usage(argv[0]);
	if (dbg_parse_u64(argv[1], &oid) || !oid) {
		fprintf(stderr, "%s: undel: '%s' is not an object id\n",
			r4cmd_prog, argv[1]);
		return DBG_USAGE;
	}
	/* HOSTFILE itself is touched only when everything was read: the
	 * bytes go to a new file in its folder, renamed over it at the
	 * end (dbg_out_open). */
	u.host = argv[2];
	if (dbg_out_open(d, "undel", argv[2], 0, 0600, &o))
		return DBG_FAIL;
	u.fd = o.fd;
	if (d->json)
		printf("{\"missing\":[");
	rc = r4_undel(d->vol, oid, &x, undel_data, undel_gap, &u, &err);
	if (!rc && ftruncate(u.fd, (off_t)x.st.size))
		rc = -errno;
	if (rc) {
		r4_outfile_abort(&o);
	} else if (r4_outfile_commit(&o, argv[2], &err)) {
		rc = err.code;
	}
	if (d->json) {
		printf("]");
		if (!rc) {
			printf(",\"object\":");
			del_json(&x, NULL);
		}
		printf("}\n");
	}
	if (rc) {
		if (err.msg[0])
			return dbg_fail(&err, "undel", rc);
		fprintf(stderr, "%s: undel: %s: %s\n", r4cmd_prog, argv[2],
			strerror(-rc));
		return DBG_FAIL;
	}
	if (!d->json)
		printf("object 0x%" PRIx64 ": %" PRIu64 " of %" PRIu64
		       " bytes recovered into %s%s\n", oid, x.recoverable,
		       x.st.size, argv[2], u.nmiss ? " (ranges missing: "
		       "see above)" : "");
	return DBG_OK;
}

/* ---- dumpblock ---------------------------------------------------------- */

/* All len bytes of p to fd: 0 or -errno (-EIO when nothing went). */
static int write_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int dbg_dumpblock(struct dbg *d, int argc, const char **argv)
{
	struct r4_error err = { 0 };
	struct r4_outfile o;
	struct fmt_sha256 c;
	char hex[65];
	uint64_t blk;
	int fd = STDOUT_FILENO, cls = -1, rc;

	if (argc != 2 && argc != 3)
		return dbg_usage(argv[0]);
	if (dbg_parse_block(d, argv[1], &blk))
		return DBG_FAIL;
	if (dbg_read(d, blk))
		return DBG_FAIL;
	r4_block_class(d->vol, blk, &cls, &err);
	if (argc == 3) {
		/* A new file in HOSTFILE's folder, renamed over it. */
		if (dbg_out_open(d, "dumpblock", argv[2], 0, 0666, &o))
			return DBG_FAIL;
		fd = o.fd;
	} else if (d->json) {
		fd = -1;	/* JSON: the description only */
	} else if (dbg_out_stdout(d, "dumpblock")) {
		return DBG_FAIL;
	}
	fflush(stdout);
	rc = fd >= 0 ? write_all(fd, d->buf, d->si.blksize) : 0;
	if (rc)
		fprintf(stderr, "%s: dumpblock: %s: %s\n", r4cmd_prog,
			argc == 3 ? argv[2] : "standard output",
			strerror(-rc));
	if (argc == 3 && dbg_out_end("dumpblock", argv[2], &o,
				     rc ? DBG_FAIL : DBG_OK))
		return DBG_FAIL;
	if (rc)
		return DBG_FAIL;
	if (d->json) {
		fmt_sha256_init(&c);
		fmt_sha256_update(&c, d->buf, d->si.blksize);
		fmt_sha256_hex(&c, hex);
		printf("{\"block\":");
		r4cmd_json_u64(blk);
		printf(",\"size\":%u,\"class\":\"%s\",\"sha256\":\"%s\"}\n",
		       d->si.blksize, r4_block_class_name(cls), hex);
	}
	return DBG_OK;
}
