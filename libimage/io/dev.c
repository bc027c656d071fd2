/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include "libimage/io/dev.h"
#include "libimage/io/fault.h"
#include "libimage/io/undo.h"
#include "libimage/util/err.h"

struct file_priv {
	int fd;
	uint64_t base;	/* the window's first byte */
};

static int file_pread(struct io_dev *dev, void *buf, size_t len,
		      uint64_t off)
{
	struct file_priv *p = dev->priv;
	uint8_t *b = buf;

	while (len > 0) {
		ssize_t n = pread(p->fd, b, len, (off_t)(off + p->base));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return R4_ERANGE;
		b += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

static int file_pwrite(struct io_dev *dev, const void *buf, size_t len,
		       uint64_t off)
{
	struct file_priv *p = dev->priv;
	const uint8_t *b = buf;

	while (len > 0) {
		ssize_t n = pwrite(p->fd, b, len, (off_t)(off + p->base));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		b += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

static int file_sync(struct io_dev *dev)
{
	struct file_priv *p = dev->priv;

	return fsync(p->fd) ? -errno : 0;
}

static int file_resize(struct io_dev *dev, uint64_t size)
{
	struct file_priv *p = dev->priv;

	if (dev->fixed)
		return -ENOTSUP;
	if (ftruncate(p->fd, (off_t)size))
		return -errno;
	dev->size = size;
	return 0;
}

static void file_close(struct io_dev *dev)
{
	struct file_priv *p = dev->priv;

	if (p->fd >= 0)
		close(p->fd);
	free(p);
}

static const struct io_ops file_ops = {
	.pread = file_pread, .pwrite = file_pwrite, .sync = file_sync,
	.resize = file_resize, .close = file_close
};

int io_file_id(const struct io_dev *dev, uint64_t id[3])
{
	const struct file_priv *p = dev->priv;
	struct stat st;

	if (dev->ops != &file_ops || p->fd < 0)
		return -EOPNOTSUPP;
	if (fstat(p->fd, &st))
		return -errno;
	id[0] = (uint64_t)st.st_dev;
	id[1] = (uint64_t)st.st_ino;
	id[2] = p->base;
	return 0;
}

static int dev_size(int fd, const struct stat *st, uint64_t *size)
{
	if (S_ISBLK(st->st_mode)) {
		uint64_t sz = 0;

		if (ioctl(fd, BLKGETSIZE64, &sz))
			return -errno;
		*size = sz;
		return 0;
	}
	*size = (uint64_t)st->st_size;
	return 0;
}

/* A refusal because something else holds the image: R4_EBUSY, with the
 * holder's process id in err when the kernel tells it. */
static int busy(struct r4_error *err, int pid, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int busy(struct r4_error *err, int pid, const char *fmt, ...)
{
	char msg[R4_ERRMSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (err && !err->msg[0]) {
		r4i_fail(err, R4_EBUSY, "%s", msg);
		err->pid = pid > 0 ? pid : 0;
	}
	return R4_EBUSY;
}

/* A mounted device or image is refused (a read-only open with IO_FORCE
 * excepted); for writing, so is an image file attached to a loop
 * device, mounted or not (a virtual machine or another program may be
 * using that device). */
static int check_mounted(const char *path, unsigned flags,
			 const struct io_mount_tables *t, struct r4_error *err)
{
	char where[1024] = "", loop[300] = "";
	int m;

	if ((flags & IO_FORCE) && !(flags & IO_RDWR))
		return 0;
	m = io_is_mounted(path, t, where, sizeof(where));
	if (m > 0)
		return busy(err, 0, "%s: in use: it is mounted on %s; refusing "
			    "to %s it", path, where,
			    (flags & IO_RDWR) ? "write" : "read");
	if ((flags & IO_RDWR) && io_loop_attached(path, t, loop, sizeof(loop),
						  NULL, 0))
		return busy(err, 0, "%s: in use: attached to the loop device "
			    "%s; refusing to write it (detach it first: "
			    "losetup -d %s)", path, loop, loop);
	return 0;
}

static int open_fd(const char *path, unsigned flags, int *created,
		   struct r4_error *err)
{
	int oflags = (flags & IO_RDWR) ? O_RDWR : O_RDONLY;
	struct stat st;
	int fd;

	oflags |= O_CLOEXEC;
	if (stat(path, &st) == 0) {
		if (S_ISBLK(st.st_mode) && (flags & IO_RDWR))
			oflags |= O_EXCL;
		else if (!S_ISBLK(st.st_mode) && !S_ISREG(st.st_mode))
			return r4i_fail(err, R4_EINVAL, "%s: not a regular file "
				       "or block device", path);
	} else if (errno == ENOENT && (flags & IO_CREATE)) {
		oflags |= O_CREAT | O_EXCL;
		*created = 1;
	} else {
		return r4i_fail(err, -errno, "%s: %s", path, strerror(errno));
	}
	fd = open(path, oflags, 0644);
	if (fd < 0) {
		int e = errno;

		*created = 0;
		if (e == EBUSY)
			return busy(err, 0, "%s: in use: the device is mounted "
				    "or opened exclusively", path);
		return r4i_fail(err, -e, "%s: %s", path, strerror(e));
	}
	return fd;
}

/* A whole-file lock request of type type (F_RDLCK, F_WRLCK, F_UNLCK). */
static struct flock whole(short type)
{
	struct flock fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	fl.l_start = 0;
	fl.l_len = 0;
	return fl;
}

/* Does another process hold a POSIX or OFD lock that conflicts with a
 * lock of type type (F_WRLCK: any lock; F_RDLCK: a write lock)? 1 and
 * *pid (-1 when the kernel does not tell: an OFD lock), *wr (the
 * holder's lock is a write lock); 0 when not, or when the file system
 * keeps no such locks. F_OFD_GETLK, or F_GETLK on a kernel without it
 * (it reports OFD locks too, with pid -1). */
static int fcntl_holder(int fd, short type, int *pid, int *wr)
{
	struct flock fl = whole(type);

	if (fcntl(fd, F_OFD_GETLK, &fl)) {
		fl = whole(type);
		if (errno != EINVAL || fcntl(fd, F_GETLK, &fl))
			return 0;
	}
	if (fl.l_type == F_UNLCK)
		return 0;
	*pid = fl.l_pid > 0 ? (int)fl.l_pid : -1;
	*wr = fl.l_type == F_WRLCK;
	return 1;
}

/* "process 1234 holds a write lock (fcntl)" or, for an OFD lock (pid
 * not told), "another process holds an OFD write lock". */
static void holder_text(char *buf, size_t len, int pid, int wr)
{
	if (pid > 0)
		snprintf(buf, len, "process %d holds a POSIX %s lock on it "
			 "(fcntl)", pid, wr ? "write" : "read");
	else
		snprintf(buf, len, "another process holds an OFD %s lock on "
			 "it (fcntl; the kernel does not tell its pid)",
			 wr ? "write" : "read");
}

static const char *busy_hint(unsigned flags)
{
	return (flags & IO_RDWR) ? "; nothing was changed; try again when it "
	       "is done (--wait)" : "; try again when it is done, or read it "
	       "as it is with --no-lock";
}

/* One writer or any number of readers, against r4kit and every other
 * program: first the POSIX and OFD locks of other processes are
 * tested, then a flock(2) and an OFD lock (F_OFD_SETLK) on the whole
 * file are taken, exclusive for writing and shared for reading. Both
 * belong to the open file description: the kernel drops them with the
 * descriptor, also when the process dies. R4_EBUSY when anything holds
 * the image; nothing is kept then. A read-only IO_NOLOCK open takes
 * nothing and, when a writer holds the image, says so in note. */
static int lock_fd(int fd, const char *path, unsigned flags, char *note,
		   size_t notelen, struct r4_error *err)
{
	int writer = (flags & IO_RDWR) != 0;
	short type = writer ? F_WRLCK : F_RDLCK;
	struct flock fl;
	char who[160];
	int pid, wr;

	if ((flags & IO_NOLOCK) && !writer) {
		if (fcntl_holder(fd, F_RDLCK, &pid, &wr)) {
			holder_text(who, sizeof(who), pid, wr);
			snprintf(note, notelen, "%s: in use: %s; reading it as "
				 "it is (--no-lock): what is being written "
				 "may be seen half done", path, who);
		}
		return 0;
	}
	if (fcntl_holder(fd, type, &pid, &wr)) {
		holder_text(who, sizeof(who), pid, wr);
		return busy(err, pid, "%s: in use: %s%s", path, who,
			    busy_hint(flags));
	}
	while (flock(fd, (writer ? LOCK_EX : LOCK_SH) | LOCK_NB)) {
		if (errno == EINTR)
			continue;
		if (errno == EWOULDBLOCK)
			return busy(err, 0, "%s: in use: another program holds "
				    "a flock(2) lock on it (%s)%s", path,
				    writer ? "another r4kit command?" :
				    "a writer", busy_hint(flags));
		if (errno == ENOLCK || errno == EOPNOTSUPP)
			break;	/* no locks on this filesystem */
		return r4i_fail(err, -errno, "%s: cannot lock: %s", path,
			       strerror(errno));
	}
	fl = whole(type);
	while (fcntl(fd, F_OFD_SETLK, &fl)) {
		int e = errno;

		if (e == EINTR)
			continue;
		if (e == EINVAL || e == ENOLCK || e == EOPNOTSUPP)
			return 0;	/* no OFD locks: tested above */
		flock(fd, LOCK_UN);
		if (e == EAGAIN || e == EACCES) {
			pid = -1;
			wr = 1;
			fcntl_holder(fd, type, &pid, &wr);
			holder_text(who, sizeof(who), pid, wr);
			return busy(err, pid, "%s: in use: %s%s", path, who,
				    busy_hint(flags));
		}
		return r4i_fail(err, -e, "%s: cannot lock: %s", path,
			       strerror(e));
	}
	return 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Waiting for a busy image (IO_WAIT: without end; IO_WAIT_SECONDS: at
 * most that long): 1 after a pause of 100 ms when the caller should
 * try again, 0 when the wait is over. */
static int wait_more(unsigned flags, uint64_t start)
{
	unsigned secs = flags >> IO_WAIT_SHIFT;
	struct timespec pause = { 0, 100 * 1000 * 1000 };

	if (!(flags & IO_WAIT) && !secs)
		return 0;
	if (secs && now_ms() - start >= (uint64_t)secs * 1000)
		return 0;
	nanosleep(&pause, NULL);
	return 1;
}

/* Open and lock, again and again while the image is busy and the caller
 * waits. The descriptor, or a negative code. */
static int open_locked(const char *path, unsigned flags,
		       const struct io_mount_tables *t, int *made,
		       char *note, size_t notelen, struct r4_error *err)
{
	uint64_t start = now_ms();
	int fd, rc;

	for (;;) {
		struct r4_error e = { 0 };

		*made = 0;
		note[0] = '\0';
		rc = check_mounted(path, flags, t, &e);
		fd = rc ? rc : open_fd(path, flags, made, &e);
		if (fd < 0)
			rc = fd;
		else {
			rc = lock_fd(fd, path, flags, note, notelen, &e);
			if (!rc)
				return fd;
			close(fd);
			if (*made)
				unlink(path);
		}
		if (rc != R4_EBUSY || !wait_more(flags, start)) {
			if (err && !err->msg[0])
				*err = e;
			return rc;
		}
	}
}

/* Lay the window win over dev (its size is the whole file's). */
static int set_window(struct io_dev *dev, struct file_priv *p,
		      const struct io_window *win, struct r4_error *err)
{
	uint64_t whole = dev->size;

	if (!win || (!win->offset && !win->size))
		return 0;
	if (win->offset > whole || win->size > whole - win->offset)
		return r4i_fail(err, R4_ERANGE, "%s: the window of %llu bytes "
			       "at byte %llu is past the end of the %s "
			       "(%llu bytes)", dev->path,
			       (unsigned long long)(win->size ? win->size :
						    whole - win->offset),
			       (unsigned long long)win->offset,
			       dev->is_blkdev ? "device" : "file",
			       (unsigned long long)whole);
	p->base = dev->base = win->offset;
	dev->size = win->size ? win->size : whole - win->offset;
	dev->fixed = dev->window = 1;
	return 0;
}

int io_open(const char *path, unsigned flags, struct io_dev **out,
	    int *created, struct r4_error *err)
{
	return io_open_win(path, flags, NULL, out, created, err);
}

/* A device over nothing yet (file_ops, fd -1), or NULL. */
static struct io_dev *dev_alloc(const char *path, const char *note)
{
	struct io_dev *dev = calloc(1, sizeof(*dev));
	struct file_priv *p = calloc(1, sizeof(*p));

	if (!dev || !p || !(dev->path = strdup(path)) ||
	    (note[0] && !(dev->lock_note = strdup(note)))) {
		if (dev)
			free(dev->path);
		free(dev);
		free(p);
		return NULL;
	}
	p->fd = -1;
	dev->priv = p;
	dev->ops = &file_ops;
	return dev;
}

/* io_open_win with the mount tables t. */
static int open_win(const char *path, unsigned flags,
		    const struct io_window *win,
		    const struct io_mount_tables *t, struct io_dev **out,
		    int *created, struct r4_error *err)
{
	struct io_dev *dev;
	struct stat st;
	char note[R4_ERRMSG_MAX];
	int made = 0, fd, rc = 0;

	*out = NULL;
	if (created)
		*created = 0;
	if (win && (win->offset || win->size))
		flags &= ~(unsigned)IO_CREATE;
	fd = open_locked(path, flags, t, &made, note, sizeof(note), err);
	if (fd < 0)
		return fd;
	dev = dev_alloc(path, note);
	if (!dev) {
		close(fd);
		if (made)
			unlink(path);
		return r4i_fail(err, -ENOMEM, "%s: out of memory", path);
	}
	((struct file_priv *)dev->priv)->fd = fd;
	dev->readonly = !(flags & IO_RDWR);
	if (fstat(fd, &st))
		rc = r4i_fail(err, -errno, "%s: %s", path, strerror(errno));
	if (!rc) {
		dev->fixed = dev->is_blkdev = S_ISBLK(st.st_mode);
		rc = dev_size(fd, &st, &dev->size);
		if (rc)
			r4i_fail(err, rc, "%s: cannot get the device size: "
				 "%s", path, strerror(-rc));
	}
	if (!rc)
		rc = set_window(dev, dev->priv, win, err);
	if (rc) {
		io_close(dev);
		if (made)
			unlink(path);
		return rc;
	}
	if (created)
		*created = made;
	*out = dev;
	return 0;
}

int io_open_win(const char *path, unsigned flags,
		const struct io_window *win, struct io_dev **out,
		int *created, struct r4_error *err)
{
	return open_win(path, flags, win, NULL, out, created, err);
}

int io_open_opts(const char *path, unsigned flags,
		 const struct r4_open_opts *o, struct io_dev **out,
		 int *created, struct r4_error *err)
{
	struct io_window win = { 0, 0 };
	struct io_mount_tables t = { NULL, NULL };
	unsigned l = 0;
	int made = 0, rc;

	if (o) {
		l = o->flags | o->wait;
		win.offset = o->offset;
		win.size = o->size;
		t.mountinfo = o->mountinfo;
		t.sysblock = o->sysblock;
	}
	if (flags & IO_RDWR)
		l &= ~(unsigned)R4_OPEN_NOLOCK;
	rc = open_win(path, flags | io_lock_flags(l), &win, &t, out, &made,
		      err);
	if (rc || !o || (*out)->readonly)
		goto done;
	/* the chain of this open: file, fault, undo (the undo saves what
	 * the fault backend would let through) */
	rc = io_fault_attach(*out, o->fault, err);
	if (!rc)
		rc = io_undo_attach(*out, o->undo, err);
	if (rc) {
		io_close(*out);
		*out = NULL;
		if (made)
			unlink(path);
		made = 0;
	}
done:
	if (created)
		*created = made;
	return rc;
}

void io_close(struct io_dev *dev)
{
	if (!dev)
		return;
	dev->ops->close(dev);
	free(dev->lock_note);
	free(dev->path);
	free(dev);
}

/* A duplicate of fd as a device, read-only unless rw. */
static int dev_of_fd(int fd, const char *name, int rw, struct io_dev **out,
		     struct r4_error *err)
{
	struct io_dev *dev = calloc(1, sizeof(*dev));
	struct file_priv *p = calloc(1, sizeof(*p));
	struct stat st;
	int rc = 0, dfd = -1;

	*out = NULL;
	if (!dev || !p || !(dev->path = strdup(name)))
		rc = r4i_fail(err, -ENOMEM, "%s: out of memory", name);
	else if ((dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0 || fstat(dfd, &st))
		rc = r4i_fail(err, -errno, "%s: %s", name, strerror(errno));
	else if (!S_ISREG(st.st_mode))
		rc = r4i_fail(err, R4_EINVAL, "%s: not a regular file", name);
	if (rc) {
		if (dfd >= 0)
			close(dfd);
		if (dev)
			free(dev->path);
		free(dev);
		free(p);
		return rc;
	}
	p->fd = dfd;
	dev->priv = p;
	dev->ops = &file_ops;
	dev->readonly = !rw;
	dev->size = (uint64_t)st.st_size;
	*out = dev;
	return 0;
}

int io_open_fd(int fd, const char *name, struct io_dev **out,
	       struct r4_error *err)
{
	return dev_of_fd(fd, name, 0, out, err);
}

int io_open_fd_rw(int fd, const char *name, struct io_dev **out,
		  struct r4_error *err)
{
	return dev_of_fd(fd, name, 1, out, err);
}

int io_punch(struct io_dev *dev, uint64_t off, uint64_t len)
{
	struct file_priv *f = dev->priv;

	if (dev->ops != &file_ops || dev->readonly || dev->is_blkdev ||
	    dev->window || !len)
		return -EOPNOTSUPP;
	if (fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)off, (off_t)len))
		return -EOPNOTSUPP;
	return 0;
}

int io_copy(struct io_dev *dst, uint64_t dst_off, struct io_dev *src,
	    uint64_t src_off, uint64_t len, uint64_t *done,
	    struct r4_error *err)
{
	struct file_priv *d = dst->priv, *s = src->priv;

	*done = 0;
	if (dst->ops != &file_ops || src->ops != &file_ops)
		return -EOPNOTSUPP;
	if (dst->readonly)
		return r4i_fail(err, -EROFS, "%s: opened read-only",
			       dst->path);
	if (src_off > src->size || len > src->size - src_off)
		return -EOPNOTSUPP;	/* the read path says what is short */
	if (dst->fixed && (dst_off > dst->size || len > dst->size - dst_off))
		return r4i_fail(err, R4_ERANGE, "%s: write at byte %llu is past "
			       "the end of the device", dst->path,
			       (unsigned long long)dst_off);
	while (*done < len) {
		loff_t so = (loff_t)(src_off + *done + s->base);
		loff_t dof = (loff_t)(dst_off + *done + d->base);
		size_t want = len - *done > (1u << 30) ? (1u << 30) :
			      (size_t)(len - *done);
		ssize_t n = copy_file_range(s->fd, &so, d->fd, &dof, want, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EXDEV || errno == EINVAL ||
			      errno == ENOSYS || errno == EOPNOTSUPP ||
			      errno == EBADF))
			return -EOPNOTSUPP;
		if (n < 0)
			return r4i_fail(err, -errno, "%s: copy of %llu bytes "
				       "from %s at byte %llu to byte %llu "
				       "failed: %s", dst->path,
				       (unsigned long long)(len - *done),
				       src->path,
				       (unsigned long long)so,
				       (unsigned long long)dof,
				       strerror(errno));
		/* 0 before the end: the source may be short, or the kernel
		 * may not copy these files; the read path tells which */
		if (!n)
			return -EOPNOTSUPP;
		*done += (uint64_t)n;
		dst->writes++;
		dst->bytes_written += (uint64_t)n;
		src->reads++;
		src->bytes_read += (uint64_t)n;
	}
	if (dst_off + len > dst->size)
		dst->size = dst_off + len;
	return 0;
}

int io_read(struct io_dev *dev, void *buf, size_t len, uint64_t off,
	    struct r4_error *err)
{
	int rc;

	if (off > dev->size || len > dev->size - off)
		return r4i_fail(err, R4_ERANGE, "%s: read of %zu bytes at byte "
			       "%llu is past the end of the device (%llu "
			       "bytes): image truncated?", dev->path, len,
			       (unsigned long long)off,
			       (unsigned long long)dev->size);
	rc = dev->ops->pread(dev, buf, len, off);
	dev->reads++;
	dev->bytes_read += len;
	if (rc)
		return r4i_fail(err, rc, "%s: read of %zu bytes at byte %llu "
			       "failed: %s", dev->path, len,
			       (unsigned long long)off, r4_strerror(rc));
	return 0;
}

int io_write(struct io_dev *dev, const void *buf, size_t len, uint64_t off,
	     struct r4_error *err)
{
	int rc;

	if (dev->readonly)
		return r4i_fail(err, -EROFS, "%s: opened read-only",
			       dev->path);
	if (dev->fixed && (off > dev->size || len > dev->size - off))
		return r4i_fail(err, R4_ERANGE, "%s: write at byte %llu is past "
			       "the end of the %s", dev->path,
			       (unsigned long long)off,
			       dev->window ? "window" : "device");
	rc = dev->ops->pwrite(dev, buf, len, off);
	dev->writes++;
	dev->bytes_written += len;
	if (rc)
		return r4i_fail(err, rc, "%s: write of %zu bytes at byte %llu "
			       "failed: %s", dev->path, len,
			       (unsigned long long)off, r4_strerror(rc));
	if (off + len > dev->size)
		dev->size = off + len;
	return 0;
}

int io_sync(struct io_dev *dev, struct r4_error *err)
{
	int rc;

	if (dev->readonly)
		return 0;
	rc = dev->ops->sync(dev);
	dev->syncs++;
	if (rc)
		return r4i_fail(err, rc, "%s: sync failed: %s", dev->path,
			       r4_strerror(rc));
	return 0;
}

int io_resize(struct io_dev *dev, uint64_t size, struct r4_error *err)
{
	int rc;

	if (dev->readonly)
		return r4i_fail(err, -EROFS, "%s: opened read-only",
			       dev->path);
	rc = dev->ops->resize(dev, size);
	if (rc)
		return r4i_fail(err, rc, "%s: cannot set the size to %llu "
			       "bytes: %s", dev->path,
			       (unsigned long long)size, r4_strerror(rc));
	return 0;
}
