/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4mount: mount a Reiser4 image or device read-only through FUSE.
 *
 *   r4mount [-f] [-d] [-o OPTIONS] IMAGE|DEVICE MOUNTPOINT
 *
 * The volume is opened read-only (O_RDONLY): a pending journal is read
 * through in memory, never written. With -o rw (rw.c) it is opened
 * read-write and every change goes through the library's transactions. Every request is served from the
 * library's read API; a damaged object answers EIO and the rest keeps
 * being served. The library's block cache is not thread-safe, so the
 * FUSE loop always runs single-threaded.
 *
 * Exit codes: 0 mounted and later unmounted cleanly; 1 FUSE failed (not
 * available, mount refused, loop error); 2 bad command line; 8 the image
 * cannot be opened. */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "../common/common.h"
#include "r4/r4.h"
#include "r4/read.h"
#include "r4/journal.h"
#include "mount.h"

enum { EXIT_OK = 0, EXIT_FUSE = 1, EXIT_USAGE = 2, EXIT_OPEN = 8 };

/* Longest name a format40 directory entry can hold in a 4 KiB node,
 * as statfs reports it (namemax). */
#define R4M_NAMEMAX 3976

struct r4_vol *vol;
struct r4_super_info si;
int opt_debug, opt_foreground;

/* Log a library failure (foreground and debug runs show it). */
void r4m_logerr(const char *what, const char *path,
		   const struct r4_error *err)
{
	if (opt_debug)
		fprintf(stderr, "%s: %s %s: %s\n", r4cmd_prog, what, path,
			err->msg[0] ? err->msg : r4_strerror(err->code));
}

/* The errno FUSE gets for a library code: a missing name is ENOENT,
 * what the library cannot read yet is EOPNOTSUPP, damage is EIO. */
int r4m_to_errno(int code)
{
	switch (code) {
	case R4_ENOTFOUND:
		return -ENOENT;
	case -ENOTDIR: case -EISDIR: case -ENOMEM: case -ENAMETOOLONG:
		return code;
	case R4_EUNSUPP:
		return -EOPNOTSUPP;
	default:
		return -EIO;
	}
}

static void fill_stat(const struct r4_stat *s, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = (ino_t)s->oid;
	st->st_mode = (mode_t)s->mode;
	st->st_nlink = (nlink_t)s->nlink;
	st->st_uid = (uid_t)s->uid;
	st->st_gid = (gid_t)s->gid;
	st->st_size = (off_t)s->size;
	if (S_ISCHR(s->mode) || S_ISBLK(s->mode))
		st->st_rdev = makedev(r4_rdev_major(s->rdev),
				      r4_rdev_minor(s->rdev));
	st->st_blksize = (blksize_t)si.blksize;
	st->st_blocks = (blkcnt_t)((s->bytes + 511) / 512);
	st->st_atim.tv_sec = (time_t)s->atime;
	st->st_atim.tv_nsec = s->atime_ns;
	st->st_mtim.tv_sec = (time_t)s->mtime;
	st->st_mtim.tv_nsec = s->mtime_ns;
	st->st_ctim.tv_sec = (time_t)s->ctime;
	st->st_ctim.tv_nsec = s->ctime_ns;
}

static int stat_ref(const char *path, const struct r4_objref *ref,
		    struct stat *st)
{
	struct r4_error err = { 0 };
	struct r4_stat s;
	int rc = r4_stat(vol, ref, &s, &err);

	if (rc) {
		r4m_logerr("stat", path, &err);
		return rc == R4_ENOTFOUND ? -EIO : r4m_to_errno(rc);
	}
	fill_stat(&s, st);
	return 0;
}

/* ---- The operations ---------------------------------------------------- */


static void *r4m_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	(void)conn;
	/* Inode numbers are object ids: hard links share one. */
	cfg->use_ino = 1;
	cfg->readdir_ino = 1;
	if (r4m_rw) {
		/* After the fork of the daemon: the timer thread. */
		if (r4m_rw_start())
			fprintf(stderr, "%s: no commit timer thread: changes "
				"commit on fsync and at unmount only\n",
				r4cmd_prog);
		/* Nothing cached: every request sees the transaction. */
		cfg->entry_timeout = 0;
		cfg->attr_timeout = 0;
		cfg->negative_timeout = 0;
		cfg->hard_remove = 0;
		return NULL;
	}
	/* Nothing changes under a read-only mount: cache for long. */
	cfg->entry_timeout = 3600;
	cfg->attr_timeout = 3600;
	cfg->negative_timeout = 3600;
	cfg->kernel_cache = 1;
	return NULL;
}

static int u_getattr(const char *path, struct stat *st,
		       struct fuse_file_info *fi)
{
	struct r4_objref ref;
	int rc;

	if (fi && fi->fh)
		ref = ((struct r4m_file *)(uintptr_t)fi->fh)->ref;
	else if ((rc = r4m_resolve(path, &ref)))
		return rc;
	return stat_ref(path, &ref, st);
}

static int u_readlink(const char *path, char *buf, size_t len)
{
	struct r4_error err = { 0 };
	struct r4_objref ref;
	int rc = r4m_resolve(path, &ref);

	if (rc)
		return rc;
	rc = r4_readlink(vol, &ref, buf, len, NULL, &err);
	if (rc) {
		r4m_logerr("readlink", path, &err);
		return rc == -EINVAL ? -EINVAL : r4m_to_errno(rc);
	}
	return 0;
}

static int u_open(const char *path, struct fuse_file_info *fi)
{
	struct r4_error err = { 0 };
	struct r4m_file *f;
	struct r4_stat s;
	int rc;

	if ((fi->flags & O_ACCMODE) != O_RDONLY && !r4m_rw)
		return -EROFS;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	rc = r4m_resolve(path, &f->ref);
	if (!rc) {
		rc = r4_stat(vol, &f->ref, &s, &err);
		if (rc) {
			r4m_logerr("stat", path, &err);
			rc = -EIO;
		}
	}
	if (rc) {
		free(f);
		return rc;
	}
	f->size = s.size;
	fi->fh = (uint64_t)(uintptr_t)f;
	fi->keep_cache = !r4m_rw;
	return 0;
}

static int u_read(const char *path, char *buf, size_t len, off_t off,
		    struct fuse_file_info *fi)
{
	struct r4m_file *f = (struct r4m_file *)(uintptr_t)fi->fh;
	struct r4_error err = { 0 };
	size_t got = 0;
	int rc;

	if (off < 0)
		return -EINVAL;
	rc = r4_read(vol, &f->ref, (uint64_t)off, buf, len, &got, &err);
	if (rc) {
		r4m_logerr("read", path, &err);
		return r4m_to_errno(rc);
	}
	return (int)got;
}

static int r4m_release(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	free((void *)(uintptr_t)fi->fh);
	return 0;
}

/* A directory listing: taken once at opendir (one walk of the entries
 * in key order) and served from there, so that offsets are indexes into
 * a list that cannot change under a read-only mount: a huge directory
 * is not walked again from its start for every chunk. */
struct r4m_dent {
	uint64_t oid;
	char *name;
};
struct r4m_dir {
	struct r4m_file f;	/* first: getattr reads fi->fh as a file */
	struct r4m_dent *v;
	size_t n, cap;
	char *names;		/* the names, one allocation per chunk */
	size_t nused, ncap;
	char **chunks;
	size_t nchunks;
};

static char *dir_strdup(struct r4m_dir *d, const char *s, size_t len)
{
	char *p;

	if (d->nused + len + 1 > d->ncap) {
		size_t cap = len + 1 > 65536 ? len + 1 : 65536;
		char **c = realloc(d->chunks, (d->nchunks + 1) *
				   sizeof(*c));

		if (!c)
			return NULL;
		d->chunks = c;
		d->names = malloc(cap);
		if (!d->names)
			return NULL;
		d->chunks[d->nchunks++] = d->names;
		d->ncap = cap;
		d->nused = 0;
	}
	p = d->names + d->nused;
	memcpy(p, s, len);
	p[len] = '\0';
	d->nused += len + 1;
	return p;
}

static int dir_add(void *ctx, const char *name, size_t len,
		   const struct r4_objref *target)
{
	struct r4m_dir *d = ctx;

	if (!len || memchr(name, '\0', len) || memchr(name, '/', len))
		return 0;	/* a name no path can hold: not listed */
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 64;
		struct r4m_dent *v = realloc(d->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		d->v = v;
		d->cap = cap;
	}
	d->v[d->n].oid = target->oid;
	d->v[d->n].name = dir_strdup(d, name, len);
	if (!d->v[d->n].name)
		return -ENOMEM;
	d->n++;
	return 0;
}

static void dir_free(struct r4m_dir *d)
{
	for (size_t i = 0; i < d->nchunks; i++)
		free(d->chunks[i]);
	free(d->chunks);
	free(d->v);
	free(d);
}

static int u_opendir(const char *path, struct fuse_file_info *fi)
{
	struct r4_error err = { 0 };
	struct r4m_dir *d = calloc(1, sizeof(*d));
	int rc;

	if (!d)
		return -ENOMEM;
	rc = r4m_resolve(path, &d->f.ref);
	if (!rc) {
		rc = r4_readdir(vol, &d->f.ref, dir_add, d, &err);
		if (rc) {
			r4m_logerr("readdir", path, &err);
			rc = r4m_to_errno(rc);
		}
	}
	if (rc) {
		dir_free(d);
		return rc;
	}
	fi->fh = (uint64_t)(uintptr_t)d;
	fi->cache_readdir = !r4m_rw;
	fi->keep_cache = !r4m_rw;
	return 0;
}

static int r4m_readdir(const char *path, void *buf, fuse_fill_dir_t fill,
		       off_t off, struct fuse_file_info *fi,
		       enum fuse_readdir_flags flags)
{
	struct r4m_dir *d = (struct r4m_dir *)(uintptr_t)fi->fh;
	struct stat st;

	(void)path;
	(void)flags;
	if (off < 0)
		return -EINVAL;
	memset(&st, 0, sizeof(st));
	for (size_t i = (size_t)off; i < d->n; i++) {
		st.st_ino = (ino_t)d->v[i].oid;
		if (fill(buf, d->v[i].name, &st, (off_t)(i + 1), 0))
			break;
	}
	return 0;
}

static int r4m_releasedir(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	dir_free((struct r4m_dir *)(uintptr_t)fi->fh);
	return 0;
}

static int u_statfs(const char *path, struct statvfs *sv)
{
	(void)path;
	memset(sv, 0, sizeof(*sv));
	sv->f_bsize = si.blksize;
	sv->f_frsize = si.blksize;
	sv->f_blocks = si.block_count;
	sv->f_bfree = r4m_free_blocks();
	sv->f_bavail = sv->f_bfree;
	sv->f_files = si.file_count;
	sv->f_ffree = 0;
	sv->f_favail = 0;
	memcpy(&sv->f_fsid, si.uuid, sizeof(sv->f_fsid));
	sv->f_flag = r4m_rw ? 0 : ST_RDONLY;
	sv->f_namemax = R4M_NAMEMAX;
	return 0;
}

static int u_access(const char *path, int mask)
{
	struct r4_objref ref;
	int rc = r4m_resolve(path, &ref);

	if (rc)
		return rc;
	return (mask & W_OK) && !r4m_rw ? -EROFS : 0;
}

/* Every request that reads the volume holds the big lock (rw.c): the
 * commit timer changes what the block cache holds. */
static void r4m_destroy(void *data)
{
	(void)data;
	if (r4m_rw)
		r4m_rw_stop();
}

static int r4m_getattr(const char *path, struct stat *st,
		       struct fuse_file_info *fi)
{
	int rc;

	r4m_lock();
	rc = u_getattr(path, st, fi);
	r4m_unlock();
	return rc;
}

static int r4m_readlink(const char *path, char *buf, size_t len)
{
	int rc;

	r4m_lock();
	rc = u_readlink(path, buf, len);
	r4m_unlock();
	return rc;
}

static int r4m_open(const char *path, struct fuse_file_info *fi)
{
	int rc;

	r4m_lock();
	rc = u_open(path, fi);
	r4m_unlock();
	return rc;
}

static int r4m_read(const char *path, char *buf, size_t len, off_t off,
		    struct fuse_file_info *fi)
{
	int rc;

	r4m_lock();
	rc = u_read(path, buf, len, off, fi);
	r4m_unlock();
	return rc;
}

static int r4m_opendir(const char *path, struct fuse_file_info *fi)
{
	int rc;

	r4m_lock();
	rc = u_opendir(path, fi);
	r4m_unlock();
	return rc;
}

static int r4m_statfs(const char *path, struct statvfs *sv)
{
	int rc;

	r4m_lock();
	rc = u_statfs(path, sv);
	r4m_unlock();
	return rc;
}

static int r4m_access(const char *path, int mask)
{
	int rc;

	r4m_lock();
	rc = u_access(path, mask);
	r4m_unlock();
	return rc;
}

static struct fuse_operations r4m_ops = {
	.init = r4m_init,
	.destroy = r4m_destroy,
	.getattr = r4m_getattr,
	.readlink = r4m_readlink,
	.open = r4m_open,
	.read = r4m_read,
	.release = r4m_release,
	.opendir = r4m_opendir,
	.readdir = r4m_readdir,
	.releasedir = r4m_releasedir,
	.statfs = r4m_statfs,
	.access = r4m_access,
};

/* ---- Command line ----------------------------------------------------- */

#define MAX_OPTS 32

static int opt_single;
static const char *mount_opts[MAX_OPTS];
static int nr_opts;

static struct poptOption mount_options[] = {
	{ "options", 'o', POPT_ARG_STRING, NULL, 'o',
	  "mount options, comma-separated: ro (the default), rw, "
	  "commit=SECONDS (rw: 5), allow_other, ...", "OPTIONS" },
	{ "foreground", 'f', POPT_ARG_NONE, &opt_foreground, 0,
	  "stay in the foreground", NULL },
	{ "debug", 'd', POPT_ARG_NONE, &opt_debug, 0,
	  "print every FUSE request and every read error (implies -f)",
	  NULL },
	{ "single", 's', POPT_ARG_NONE, &opt_single, 0,
	  "single-threaded (always the case; accepted for compatibility)",
	  NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_window_options, 0,
	  "Partitions:", NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_lock_options, 0,
	  "Locking:", NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_common_options, 0,
	  "Common options:", NULL },
	POPT_AUTOHELP
	POPT_TABLEEND
};

/* Take rw, ro and commit=SECONDS out of the i-th -o list: they are
 * r4mount's; the rest goes to FUSE. */
static int filter_opts(int i)
{
	char *o = (char *)mount_opts[i], *w = o, *save = NULL, *tok;
	char *copy = strdup(o);

	if (!copy) {
		r4cmd_errorf("out of memory");
		return -1;
	}
	*w = '\0';
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long v;

		if (!strcmp(tok, "rw") || !strcmp(tok, "ro")) {
			r4m_rw = tok[1] == 'w';
			continue;
		}
		if (!strncmp(tok, "commit=", 7)) {
			v = strtoul(tok + 7, &end, 10);
			if (!tok[7] || *end || !v || v > 86400) {
				r4cmd_errorf("-o %s: seconds from 1 to 86400",
					     tok);
				free(copy);
				return -1;
			}
			r4m_commit_secs = (unsigned)v;
			continue;
		}
		if (w != o)
			*w++ = ',';
		memmove(w, tok, strlen(tok) + 1);
		w += strlen(tok);
	}
	free(copy);
	return 0;
}

#define USAGE "[-f] [-d] [-o OPTIONS] IMAGE|DEVICE MOUNTPOINT"

static int parse_cmdline(poptContext ctx, const char **image,
			 const char **mnt)
{
	int rc;

	while ((rc = poptGetNextOpt(ctx)) > 0) {
		if (rc != 'o')
			continue;
		if (nr_opts == MAX_OPTS) {
			r4cmd_errorf("-o: at most %d times", MAX_OPTS);
			return EXIT_USAGE;
		}
		mount_opts[nr_opts++] = poptGetOptArg(ctx);
	}
	if (rc < -1)
		return r4cmd_popt_error(ctx, rc, EXIT_USAGE);
	if (r4cmd_show_version)
		return EXIT_OK;
	if (r4cmd_lock_parse(EXIT_USAGE))
		return EXIT_USAGE;
	*image = poptGetArg(ctx);
	*mnt = poptGetArg(ctx);
	if (!*image || !*mnt || poptPeekArg(ctx)) {
		r4cmd_errorf(!*image ? "no image given" : !*mnt ?
			     "no mount point given" : "too many arguments");
		fprintf(stderr, "Usage: %s " USAGE "\n", r4cmd_prog);
		return EXIT_USAGE;
	}
	for (int i = 0; i < nr_opts; i++)
		if (filter_opts(i))
			return EXIT_USAGE;
	return r4cmd_window_parse(*image, EXIT_USAGE, EXIT_OPEN);
}

/* FUSE needs /dev/fuse and fusermount3 (or root): say so in one line
 * before trying. */
static int fuse_available(void)
{
	int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		r4cmd_errorf("FUSE is not available: /dev/fuse: %s (load the "
			     "fuse module, or run where /dev/fuse is usable)",
			     strerror(errno));
		return 0;
	}
	close(fd);
	return 1;
}

/* Open the image: read-write for -o rw (an exclusive lock for the
 * mount's life), else read-only; a volume whose status block says it
 * needs repair is mounted read-only, with a line saying so. */
static int open_vol(const char *image)
{
	struct r4_error err = { 0 };
	unsigned how = r4m_rw ? R4_OPEN_RDWR : R4_OPEN_RDONLY | R4_OPEN_FORCE;

	if (r4_vol_open(image, r4cmd_open(how | r4cmd_lock_flags()), &vol,
			&err)) {
		r4cmd_error(&err, image, err.code);
		return r4cmd_busy_exit(&err, EXIT_OPEN);
	}
	r4cmd_lock_note(vol);
	r4_vol_super(vol, &si);
	if (r4m_rw && si.status) {
		fprintf(stderr, "%s: %s: the volume needs repair (status "
			"%#llx%s%s): mounted read-only; run r4fsck\n",
			r4cmd_prog, image, (unsigned long long)si.status,
			si.status_msg[0] ? ": " : "", si.status_msg);
		r4_vol_close(vol, NULL);
		r4m_rw = 0;
		return open_vol(image);
	}
	r4m_xattr_ops(&r4m_ops);
	if (r4m_rw)
		r4m_rw_ops(&r4m_ops);
	return EXIT_OK;
}

/* FUSE's command line for the mount of image on mnt, in fargv (room
 * for 8 + 2 * MAX_OPTS) with the fsname option in fsname: its length. */
static int fuse_args(const char **fargv, char *fsname, size_t size,
		     const char *image, const char *mnt)
{
	size_t j = 0;
	int fargc = 0;

	/* fsname: the image path with FUSE's option separators escaped. */
	j += (size_t)snprintf(fsname, size, "subtype=reiser4,fsname=");
	for (const char *p = image; *p && j + 3 < size; p++) {
		if (*p == ',' || *p == '\\')
			fsname[j++] = '\\';
		fsname[j++] = *p;
	}
	fsname[j] = '\0';
	fargv[fargc++] = r4cmd_prog;
	fargv[fargc++] = mnt;
	fargv[fargc++] = "-s";
	if (opt_foreground)
		fargv[fargc++] = "-f";
	if (opt_debug)
		fargv[fargc++] = "-d";
	fargv[fargc++] = r4m_rw ? "-orw,default_permissions" :
				  "-oro,default_permissions";
	fargv[fargc++] = "-o";
	fargv[fargc++] = fsname;
	for (int i = 0; i < nr_opts; i++) {
		if (!mount_opts[i][0])
			continue;
		fargv[fargc++] = "-o";
		fargv[fargc++] = mount_opts[i];
	}
	fargv[fargc] = NULL;
	return fargc;
}

static int run(const char *image, const char *mnt)
{
	const char *fargv[8 + 2 * MAX_OPTS];
	char fsname[4200];
	int fargc, rc;
	struct stat mst;

	if (stat(mnt, &mst)) {
		r4cmd_errorf("%s: %s", mnt, strerror(errno));
		return EXIT_USAGE;
	}
	if (!S_ISDIR(mst.st_mode)) {
		r4cmd_errorf("%s: not a directory", mnt);
		return EXIT_USAGE;
	}
	if ((rc = open_vol(image)))
		return rc;
	if (r4_vol_overlaid(vol))
		fprintf(stderr, "%s: %s: %u committed transaction(s) of the "
			"journal replayed in memory (the image is not "
			"written)\n", r4cmd_prog, image, r4_vol_overlaid(vol));
	else if (r4_vol_journal_msg(vol)[0])
		r4cmd_warnf("%s: the journal could not be read through, the "
			    "blocks are served as they are: %s", image,
			    r4_vol_journal_msg(vol));
	if (!fuse_available()) {
		r4_vol_close(vol, NULL);
		return EXIT_FUSE;
	}
	fargc = fuse_args(fargv, fsname, sizeof(fsname), image, mnt);
	rc = fuse_main(fargc, (char **)fargv, &r4m_ops, NULL);
	r4_vol_close(vol, NULL);
	return rc ? EXIT_FUSE : EXIT_OK;
}

int main(int argc, const char **argv)
{
	const char *image = NULL, *mnt = NULL;
	poptContext ctx;
	int rc;

	r4cmd_init(argv[0]);
	r4cmd_wait_argv(argc, argv);
	ctx = poptGetContext(r4cmd_prog, argc, argv, mount_options, 0);
	poptSetOtherOptionHelp(ctx, USAGE);
	rc = parse_cmdline(ctx, &image, &mnt);
	if (rc == EXIT_OK && r4cmd_show_version)
		r4cmd_print_version();
	else if (rc == EXIT_OK)
		rc = run(image, mnt);
	for (int i = 0; i < nr_opts; i++)
		free((void *)mount_opts[i]);
	poptFreeContext(ctx);
	return rc;
}
