/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4mount -o rw: the requests that change the volume.
 *
 * One mutex (the big lock) serializes every FUSE request (the loop is
 * single-threaded anyway) and the commit timer. Changes gather in one
 * open transaction of the library's editor (r4/edit.h), begun by the
 * first change after a commit; it commits on fsync and fsyncdir, at
 * unmount, when it is commit= seconds old (the timer thread), and when
 * it has allocated LARGE_TXN blocks. A commit is atomic: after a crash
 * or kill -9 the volume is as after the last commit (the journal replays
 * on the next read-write open or r4fsck -p). A change that fails half
 * way poisons the transaction: it is aborted (everything since the last
 * commit is lost), said in one line, and the request answers EIO; so
 * does a commit that fails. From then on every change answers EROFS
 * (as ext4's errors=remount-ro): requests that returned success were
 * lost with the transaction, and later ones must not be stored on top
 * as if they had not been. */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include "../common/common.h"
#include "r4/edit.h"
#include "mount.h"

/* A transaction that allocated this many blocks commits at once. */
#define LARGE_TXN 16384u
/* Blocks a change other than a write must find free (nodes, journal). */
#define SPARE_BLOCKS 64u
/* The largest body held in tail items, in blocks (the smart tail
 * policy's bound, with room to spare). */
#define TAIL_BLOCKS 8u

int r4m_rw;
unsigned r4m_commit_secs = 5;

static pthread_mutex_t big = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static pthread_t timer;
static int timer_on, timer_stop;
static struct r4_txn *txn;
static time_t txn_born;
static uint64_t txn_free0;
static int broken;		/* a transaction was lost: read-only now */

/* The open transaction is lost: no change is accepted any more. */
static void go_readonly(void)
{
	broken = 1;
	r4m_forget_all();	/* the names looked up may be gone */
	fprintf(stderr, "%s: %s: changes are refused from now on (EROFS); "
		"unmount, then check the volume with r4fsck\n", r4cmd_prog,
		r4_vol_path(vol));
}

void r4m_lock(void)
{
	pthread_mutex_lock(&big);
}

void r4m_unlock(void)
{
	pthread_mutex_unlock(&big);
}

static void say(const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "%s: ", r4cmd_prog);
	fprintf(stderr, fmt, a, b);
	fputc('\n', stderr);
}

/* Commit the open transaction (big lock held): 0 or -EIO. */
static int commit_now(void)
{
	struct r4_error err = { 0 };
	struct r4_txn *t = txn;

	if (!t)
		return 0;
	txn = NULL;
	if (r4_txn_commit(t, &err)) {
		say("%s: commit failed, the changes since the last commit are "
		    "lost: %s", r4_vol_path(vol),
		    err.msg[0] ? err.msg : r4_strerror(err.code));
		r4_vol_super(vol, &si);
		go_readonly();
		return -EIO;
	}
	r4_vol_super(vol, &si);
	return 0;
}

uint64_t r4m_free_blocks(void)
{
	return txn ? r4_txn_blocks_free(txn) : si.free_blocks;
}

/* The transaction for a change, begun when none is open; ENOSPC when
 * fewer than need blocks are free. */
static int ready(uint64_t need, struct r4_txn **out)
{
	struct r4_error err = { 0 };

	if (broken)
		return -EROFS;
	if (!txn) {
		if (r4_txn_begin(vol, &txn, &err)) {
			say("%s: cannot begin a transaction: %s",
			    r4_vol_path(vol), err.msg);
			txn = NULL;
			return -EIO;
		}
		r4_txn_set_resolver(txn, r4m_txn_resolve, NULL);
		txn_born = time(NULL);
		txn_free0 = r4_txn_blocks_free(txn);
	}
	if (r4_txn_blocks_free(txn) < need)
		return -ENOSPC;
	*out = txn;
	return 0;
}

/* A change that failed half way: the open transaction is aborted (the
 * changes since the last commit are lost, said in the log) and the
 * mount goes read-only. */
static int lose(const char *what, const char *path,
		const struct r4_error *err)
{
	say("%s: %s failed half way; the transaction is aborted, the "
	    "changes since the last commit are lost", path, what);
	fprintf(stderr, "%s: %s\n", r4cmd_prog, err->msg);
	r4_txn_abort(txn);
	txn = NULL;
	go_readonly();
	return -EIO;
}

/* The answer to a change: errno for the library's code; a poisoned
 * transaction is aborted; a large one commits. */
static int done(int rc, const char *what, const char *path,
		const struct r4_error *err)
{
	if (rc && txn && r4_txn_failed(txn))
		return lose(what, path, err);
	if (!rc && txn && txn_free0 - r4_txn_blocks_free(txn) >= LARGE_TXN)
		return commit_now();
	switch (rc) {
	case 0:
		return 0;
	case R4_EEXIST:
		return -EEXIST;
	case R4_ENOTFOUND:
		return -ENOENT;
	case R4_ENOSPC:
		return -ENOSPC;
	case R4_EINVAL:
		return -EINVAL;
	case R4_ELOOP:
		return -ELOOP;
	case R4_EUNSUPP:
		return -EOPNOTSUPP;
	default:
		if (rc < 0 && rc > -4096)
			return rc;
		fprintf(stderr, "%s: %s %s: %s: EIO (run r4fsck)\n",
			r4cmd_prog, what, path,
			err->msg[0] ? err->msg : r4_strerror(rc));
		return -EIO;
	}
}

static void now_attr(struct r4_attr *a, uint32_t mode)
{
	struct fuse_context *c = fuse_get_context();
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	memset(a, 0, sizeof(*a));
	a->mode = mode;
	a->uid = c ? c->uid : 0;
	a->gid = c ? c->gid : 0;
	a->atime = a->mtime = a->ctime = ts.tv_sec;
	a->atime_ns = a->mtime_ns = a->ctime_ns = (uint32_t)ts.tv_nsec;
}

/* mtime and ctime (mask) of path become now. */
static int touch(struct r4_txn *t, const char *path, unsigned mask,
		 struct r4_error *err)
{
	struct r4_attr a;

	now_attr(&a, 0);
	return r4_setattr(t, path, &a, mask, err);
}

/* ---- namespace ---------------------------------------------------------- */

/* A new object of mode's type at path: a directory, an empty regular
 * file, a device, fifo or socket. */
static int rw_mknod(const char *path, mode_t mode, dev_t rdev)
{
	struct r4_error err = { 0 };
	struct r4_txn *t;
	struct r4_attr a;
	int rc;

	r4m_lock();
	rc = ready(SPARE_BLOCKS, &t);
	if (!rc) {
		now_attr(&a, mode);
		a.rdev_major = major(rdev);
		a.rdev_minor = minor(rdev);
		r4m_forget(path);
		if (S_ISDIR(mode))
			rc = r4_mkdir(t, path, &a, &err);
		else if (S_ISREG(mode))
			rc = r4_create(t, path, &a, 0, NULL, NULL, &err);
		else
			rc = r4_mknod(t, path, &a, &err);
		rc = done(rc, S_ISDIR(mode) ? "mkdir" : "mknod", path, &err);
	}
	r4m_unlock();
	return rc;
}

static int rw_mkdir(const char *path, mode_t mode)
{
	return rw_mknod(path, S_IFDIR | (mode & 07777), 0);
}

static int rw_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	struct r4m_file *f = calloc(1, sizeof(*f));
	int rc;

	if (!f)
		return -ENOMEM;
	rc = rw_mknod(path, S_IFREG | (mode & 07777), 0);
	if (!rc) {
		r4m_lock();
		rc = r4m_resolve(path, &f->ref);
		r4m_unlock();
	}
	if (rc) {
		free(f);
		return rc;
	}
	fi->fh = (uint64_t)(uintptr_t)f;
	return 0;
}

static int rw_symlink(const char *target, const char *path)
{
	struct r4_error err = { 0 };
	struct r4_txn *t;
	struct r4_attr a;
	int rc;

	r4m_lock();
	rc = ready(SPARE_BLOCKS, &t);
	if (!rc) {
		now_attr(&a, S_IFLNK | 0777);
		r4m_forget(path);
		rc = done(r4_symlink(t, path, target, &a, &err), "symlink",
			  path, &err);
	}
	r4m_unlock();
	return rc;
}

static int rw_link(const char *from, const char *to)
{
	struct r4_error err = { 0 };
	struct r4_txn *t;
	int rc;

	r4m_lock();
	rc = ready(SPARE_BLOCKS, &t);
	if (!rc) {
		r4m_forget(to);
		rc = done(r4_link(t, from, to, &err), "link", to, &err);
	}
	r4m_unlock();
	return rc;
}

/* A removal of path by fn (r4_unlink, r4_rmdir), named what. */
static int remove_one(int (*fn)(struct r4_txn *, const char *,
				struct r4_error *),
		      const char *what, const char *path)
{
	struct r4_error err = { 0 };
	struct r4_txn *t;
	int rc;

	r4m_lock();
	rc = ready(SPARE_BLOCKS / 2, &t);
	if (!rc) {
		r4m_forget(path);
		rc = done(fn(t, path, &err), what, path, &err);
	}
	r4m_unlock();
	return rc;
}

static int rw_unlink(const char *path)
{
	return remove_one(r4_unlink, "unlink", path);
}

static int rw_rmdir(const char *path)
{
	return remove_one(r4_rmdir, "rmdir", path);
}

/* A free name beside from for the middle step of an exchange:
 * "DIR/.r4mount-xchg-OID[-N]"; 0, or -ENAMETOOLONG/-EEXIST. */
static int exchange_name(const char *from, uint64_t oid, char *out,
			 size_t cap)
{
	const char *slash = strrchr(from, '/');
	int dir = slash ? (int)(slash - from) : 0;
	struct r4_objref r;

	for (unsigned n = 0; n < 100; n++) {
		int len = n ? snprintf(out, cap, "%.*s/.r4mount-xchg-%llx-%u",
				       dir, from, (unsigned long long)oid, n)
			    : snprintf(out, cap, "%.*s/.r4mount-xchg-%llx",
				       dir, from, (unsigned long long)oid);
		if (len < 0 || (size_t)len >= cap)
			return -ENAMETOOLONG;
		if (r4m_resolve(out, &r) == -ENOENT)
			return 0;
	}
	return -EEXIST;
}

/* RENAME_EXCHANGE as three renames in the open transaction (from to a
 * free name beside it, to to from, that name to to): the commit makes
 * all three at once, so no one sees the middle name on the volume. A
 * failure at the second or third step puts the names back; if even
 * that fails, the transaction is aborted (done()). The kernel checked
 * that neither is an ancestor of the other. */
static int exchange(const char *from, const char *to, uint64_t oid)
{
	struct r4_error err = { 0 }, undo = { 0 };
	char mid[4096];
	struct r4_txn *t;
	int rc = exchange_name(from, oid, mid, sizeof(mid));

	if (!rc)
		rc = ready(3 * SPARE_BLOCKS, &t);
	if (rc)
		return rc;
	if ((rc = r4_rename(t, from, mid, &err)))
		return done(rc, "rename", from, &err);
	if ((rc = r4_rename(t, to, from, &err))) {
		if (!r4_txn_failed(t) && r4_rename(t, mid, from, &undo))
			return lose("rename", from, &undo);
		return done(rc, "rename", from, &err);
	}
	if ((rc = r4_rename(t, mid, to, &err))) {
		if (!r4_txn_failed(t) && (r4_rename(t, from, to, &undo) ||
					  r4_rename(t, mid, from, &undo)))
			return lose("rename", from, &undo);
		return done(rc, "rename", from, &err);
	}
	return done(0, "rename", from, &err);
}

static int rw_rename(const char *from, const char *to, unsigned flags)
{
	struct r4_error err = { 0 };
	struct r4_objref a, b;
	struct r4_txn *t;
	int rc, has_to;

	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE) ||
	    (flags & RENAME_NOREPLACE && flags & RENAME_EXCHANGE))
		return -EINVAL;	/* RENAME_WHITEOUT: no whiteouts here */
	r4m_lock();
	rc = r4m_resolve(from, &a);
	has_to = rc ? 0 : !r4m_resolve(to, &b);
	if (!rc && !has_to && (flags & RENAME_EXCHANGE))
		rc = -ENOENT;
	else if (!rc && has_to && (flags & RENAME_NOREPLACE))
		rc = -EEXIST;
	else if (!rc && has_to && a.oid == b.oid)
		rc = 1;		/* two names of one object: nothing to do */
	if (!rc) {	/* both names change; a replaced directory goes */
		r4m_forget(from);
		r4m_forget(to);
		if (flags & RENAME_EXCHANGE)
			rc = exchange(from, to, a.oid);
		else if (!(rc = ready(SPARE_BLOCKS, &t)))
			rc = done(r4_rename(t, from, to, &err), "rename",
				  from, &err);
	}
	r4m_unlock();
	return rc == 1 ? 0 : rc;
}

/* ---- data and attributes ------------------------------------------------ */

static int rw_write(const char *path, const char *buf, size_t len, off_t off,
		    struct fuse_file_info *fi)
{
	struct r4_error err = { 0 };
	struct r4_txn *t;
	int rc;

	(void)fi;
	if (off < 0)
		return -EINVAL;
	if (len > INT32_MAX)
		len = INT32_MAX;
	r4m_lock();
	rc = ready(SPARE_BLOCKS, &t);
	if (!rc)
		rc = r4_pwrite(t, path, (uint64_t)off, buf, len, &err);
	if (!rc)
		rc = touch(t, path, R4_ATTR_MTIME | R4_ATTR_CTIME, &err);
	rc = done(rc, "write", path, &err);
	r4m_unlock();
	return rc ? rc : (int)len;
}

static int rw_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	struct r4_error err = { 0 };
	struct r4_txn *t;
	int rc;

	(void)fi;
	if (size < 0)
		return -EINVAL;
	r4m_lock();
	/* growing leaves a hole: the blocks are those of a tail body
	 * moved to extents at most (the tail policy's 4 blocks) */
	rc = ready(SPARE_BLOCKS + TAIL_BLOCKS, &t);
	if (!rc)
		rc = r4_truncate(t, path, (uint64_t)size, &err);
	if (!rc)
		rc = touch(t, path, R4_ATTR_MTIME | R4_ATTR_CTIME, &err);
	rc = done(rc, "truncate", path, &err);
	r4m_unlock();
	return rc;
}

/* ---- fallocate ---------------------------------------------------------- */

#define ZERO_CHUNK (256u << 10)

/* The holes of a file (data runs 'runs', then a hole past them) inside
 * [from, to), each widened to whole blocks inside the hole and below
 * 'end': cb gets each one, *blocks the blocks they take. */
static int holes_in(const uint64_t *runs, size_t n, uint64_t from,
		    uint64_t to, uint64_t end, uint64_t bs,
		    int (*cb)(void *, uint64_t, uint64_t), void *ctx,
		    uint64_t *blocks)
{
	uint64_t at = 0;
	int rc = 0;

	for (size_t i = 0; !rc && i <= n; i++) {
		/* hole [at, he): between data runs, then past the size */
		uint64_t he = i < n ? runs[2 * i] : UINT64_MAX;
		uint64_t a = at > from ? at : from, b = he < to ? he : to;

		if (a < b) {
			a = a / bs * bs < at ? at : a / bs * bs;
			b = (b + bs - 1) / bs * bs;
			b = b > he ? he : b;
			b = b > end ? end : b;
			*blocks += (b - a + bs - 1) / bs + 1;
			if (cb)
				rc = cb(ctx, a, b - a);
		}
		if (i < n)
			at = runs[2 * i] + runs[2 * i + 1];
	}
	return rc;
}

struct zfill {
	struct r4_txn *t;
	const char *path;
	struct r4_error *err;
};

/* Zeros written over [off, off + len), a hole. */
static int zfill(void *ctx, uint64_t off, uint64_t len)
{
	static const uint8_t zero[ZERO_CHUNK];
	struct zfill *z = ctx;
	int rc = 0;

	while (!rc && len) {
		size_t n = len < ZERO_CHUNK ? (size_t)len : ZERO_CHUNK;

		rc = r4_pwrite(z->t, z->path, off, zero, n, z->err);
		off += n;
		len -= n;
	}
	return rc;
}

/* Mode 0 and FALLOC_FL_KEEP_SIZE: the holes in the range (and, without
 * KEEP_SIZE, the bytes past the end up to off + len) become written
 * zeros, so that a later write there needs no new block; ENOSPC before
 * any change. */
static int falloc_fill(struct r4_txn *t, const char *path, int keep,
		       uint64_t off, uint64_t len, struct r4_error *err)
{
	struct zfill z = { t, path, err };
	struct r4_objref ref;
	struct r4_stat st;
	uint64_t *runs = NULL, to, end, blocks = 0;
	size_t n = 0;
	int rc = r4m_walk(path, &ref, err);

	if (!rc)
		rc = r4_stat(vol, &ref, &st, err);
	if (rc)
		return rc;
	if (!S_ISREG(st.mode))
		return -ENODEV;
	to = off + len;
	end = keep ? st.size : (to > st.size ? to : st.size);
	to = to > end ? end : to;
	rc = r4_file_runs(vol, &ref, st.size, &runs, &n, err);
	if (!rc)
		holes_in(runs, n, off, to, end, si.blksize, NULL, NULL,
			 &blocks);
	if (!rc && r4_txn_blocks_free(t) < blocks + blocks / 256 +
					     SPARE_BLOCKS + TAIL_BLOCKS)
		rc = R4_ENOSPC;
	if (!rc)
		rc = holes_in(runs, n, off, to, end, si.blksize,
			      zfill, &z, &blocks);
	free(runs);
	return rc;
}

/* fallocate(2): modes 0 and FALLOC_FL_KEEP_SIZE; every other one
 * (PUNCH_HOLE included) is EOPNOTSUPP. */
static int rw_fallocate(const char *path, int mode, off_t off, off_t len,
			struct fuse_file_info *fi)
{
	struct r4_error err = { 0 };
	struct r4_txn *t;
	int rc;

	(void)fi;
	if (mode & ~FALLOC_FL_KEEP_SIZE)
		return -EOPNOTSUPP;
	if (off < 0 || len <= 0 || off > INT64_MAX - len)
		return -EINVAL;
	r4m_lock();
	rc = ready(SPARE_BLOCKS, &t);
	if (!rc)
		rc = falloc_fill(t, path, mode & FALLOC_FL_KEEP_SIZE,
				 (uint64_t)off, (uint64_t)len, &err);
	if (rc == -ENODEV) {
		r4m_unlock();
		return rc;
	}
	rc = done(rc, "fallocate", path, &err);
	r4m_unlock();
	return rc;
}

static int setattr(const char *path, const struct r4_attr *a, unsigned mask)
{
	struct r4_error err = { 0 };
	struct r4_txn *t;
	int rc;

	r4m_lock();
	rc = ready(SPARE_BLOCKS, &t);
	if (!rc)
		rc = done(r4_setattr(t, path, a, mask, &err), "setattr", path,
			  &err);
	r4m_unlock();
	return rc;
}

static int rw_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	struct r4_attr a;

	(void)fi;
	now_attr(&a, mode);
	return setattr(path, &a, R4_ATTR_MODE | R4_ATTR_CTIME);
}

static int rw_chown(const char *path, uid_t uid, gid_t gid,
		    struct fuse_file_info *fi)
{
	unsigned mask = R4_ATTR_CTIME;
	struct r4_attr a;

	(void)fi;
	now_attr(&a, 0);
	if (uid != (uid_t)-1) {
		a.uid = uid;
		mask |= R4_ATTR_UID;
	}
	if (gid != (gid_t)-1) {
		a.gid = gid;
		mask |= R4_ATTR_GID;
	}
	return setattr(path, &a, mask);
}

static int rw_utimens(const char *path, const struct timespec tv[2],
		      struct fuse_file_info *fi)
{
	unsigned mask = R4_ATTR_CTIME;
	struct r4_attr a;

	(void)fi;
	now_attr(&a, 0);
	if (!tv || tv[0].tv_nsec != UTIME_OMIT) {
		mask |= R4_ATTR_ATIME;
		if (tv && tv[0].tv_nsec != UTIME_NOW) {
			a.atime = tv[0].tv_sec;
			a.atime_ns = (uint32_t)tv[0].tv_nsec;
		}
	}
	if (!tv || tv[1].tv_nsec != UTIME_OMIT) {
		mask |= R4_ATTR_MTIME;
		if (tv && tv[1].tv_nsec != UTIME_NOW) {
			a.mtime = tv[1].tv_sec;
			a.mtime_ns = (uint32_t)tv[1].tv_nsec;
		}
	}
	return setattr(path, &a, mask);
}

static int rw_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	int rc;

	(void)path;
	(void)datasync;
	(void)fi;
	r4m_lock();
	rc = commit_now();
	r4m_unlock();
	return rc;
}

void r4m_rw_ops(struct fuse_operations *ops)
{
	ops->mkdir = rw_mkdir;
	ops->mknod = rw_mknod;
	ops->create = rw_create;
	ops->symlink = rw_symlink;
	ops->link = rw_link;
	ops->unlink = rw_unlink;
	ops->rmdir = rw_rmdir;
	ops->rename = rw_rename;
	ops->write = rw_write;
	ops->truncate = rw_truncate;
	ops->fallocate = rw_fallocate;
	ops->chmod = rw_chmod;
	ops->chown = rw_chown;
	ops->utimens = rw_utimens;
	ops->fsync = rw_fsync;
	ops->fsyncdir = rw_fsync;
}

/* ---- extended attributes ------------------------------------------------ */

/* Reiser4 stores no extended attributes and its kernel module has no
 * xattr handlers: the VFS then answers EOPNOTSUPP to getxattr, setxattr
 * and removexattr, and an empty list to listxattr. The same here, on
 * read-only and read-write mounts. */
static int x_get(const char *path, const char *name, char *value,
		 size_t size)
{
	(void)path;
	(void)name;
	(void)value;
	(void)size;
	return -EOPNOTSUPP;
}

static int x_set(const char *path, const char *name, const char *value,
		 size_t size, int flags)
{
	(void)path;
	(void)name;
	(void)value;
	(void)size;
	(void)flags;
	return -EOPNOTSUPP;
}

static int x_list(const char *path, char *list, size_t size)
{
	(void)path;
	(void)list;
	(void)size;
	return 0;
}

static int x_remove(const char *path, const char *name)
{
	(void)path;
	(void)name;
	return -EOPNOTSUPP;
}

void r4m_xattr_ops(struct fuse_operations *ops)
{
	ops->getxattr = x_get;
	ops->setxattr = x_set;
	ops->listxattr = x_list;
	ops->removexattr = x_remove;
}

/* ---- the commit timer --------------------------------------------------- */

static void *timer_main(void *arg)
{
	(void)arg;
	r4m_lock();
	while (!timer_stop) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&wake, &big, &ts);
		if (txn && time(NULL) - txn_born >= (time_t)r4m_commit_secs)
			commit_now();
	}
	r4m_unlock();
	return NULL;
}

int r4m_rw_start(void)
{
	if (pthread_create(&timer, NULL, timer_main, NULL))
		return -1;
	timer_on = 1;
	return 0;
}

void r4m_rw_stop(void)
{
	r4m_lock();
	timer_stop = 1;
	pthread_cond_signal(&wake);
	commit_now();
	r4m_unlock();
	if (timer_on)
		pthread_join(timer, NULL);
	timer_on = 0;
}
