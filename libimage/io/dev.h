/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: device access. The only code that touches file descriptors.
 * A device is an image file or a block device behind a small table of
 * operations, so other backends can stack over the file under the same
 * calls: each open builds its own chain (io_open_opts): the file, then
 * for a read-write open the fault backend of a test (io/fault.h) and the
 * undo backend (io/undo.h) when its r4_open_opts names them, and for a
 * read-only open the journal's overlay (libimage/txn/overlay.c). Nothing
 * here is process-wide. */
#ifndef R4_LIBIMAGE_IO_DEV_H
#define R4_LIBIMAGE_IO_DEV_H

#include <stddef.h>
#include <stdint.h>
#include "r4/r4.h"

struct io_dev;

struct io_ops {
	/* Whole transfers: return 0, -errno, or R4_ERANGE for a read past
	 * the end of the device. */
	int (*pread)(struct io_dev *dev, void *buf, size_t len, uint64_t off);
	int (*pwrite)(struct io_dev *dev, const void *buf, size_t len,
		      uint64_t off);
	int (*sync)(struct io_dev *dev);
	int (*resize)(struct io_dev *dev, uint64_t size);
	void (*close)(struct io_dev *dev);
};

struct io_dev {
	const struct io_ops *ops;
	void *priv;
	char *path;
	uint64_t size;		/* bytes: of the window when there is one */
	int readonly;
	int is_blkdev;
	/* The size cannot change (a block device, or a window): a write
	 * past the end is refused, io_resize too. */
	int fixed;
	/* A window (io_open_win): its first byte in the file or device. */
	int window;
	uint64_t base;
	uint64_t reads, writes, bytes_read, bytes_written, syncs;
	/* A read-only IO_NOLOCK open of an image a writer holds: the
	 * one-line note that says so (else NULL). */
	char *lock_note;
};

enum io_open_flags {
	IO_RDONLY = 0,
	IO_RDWR = 1,
	IO_CREATE = 2,	/* create the image file if it does not exist */
	IO_FORCE = 4,	/* open even when mounted (read-only only) */
	IO_NOLOCK = 8,	/* read-only only: take no lock (forensic reads) */
	IO_WAIT = 16	/* wait for the image without end instead of failing */
};
/* Bits 16 to 31: wait at most this many seconds for a busy image. */
#define IO_WAIT_SHIFT 16

/* The IO_ wait and lock flags for the R4_OPEN_ flags f. */
static inline unsigned io_lock_flags(unsigned f)
{
	return ((f & R4_OPEN_WAIT) ? IO_WAIT : 0) |
	       ((f & R4_OPEN_NOLOCK) ? IO_NOLOCK : 0) |
	       ((f >> 16) << IO_WAIT_SHIFT);
}

/* Open path. Nothing else may be using the image: a mounted device or
 * image is refused, and for writing an image file attached to a loop
 * device too (a block device opened for writing is opened O_EXCL);
 * then the POSIX and OFD locks of other processes are tested (F_OFD_GETLK)
 * and a flock(2) and an OFD lock (F_OFD_SETLK) are taken on the whole
 * file, exclusive for writing, shared for reading: one writer at a
 * time, no reader beside it, whoever the other program is (a virtual
 * machine holds POSIX or OFD locks). A busy image fails at once with
 * R4_EBUSY, err->pid the holder's process id when the kernel tells it
 * (IO_WAIT and IO_WAIT_SHIFT: tried again every 100 ms); IO_NOLOCK on a
 * read-only open takes no lock and notes a writer in dev->lock_note.
 * With IO_CREATE a missing
 * file is created; *created tells the caller whether it was, so a failed
 * mkfs can remove it. */
int io_open(const char *path, unsigned flags, struct io_dev **out,
	    int *created, struct r4_error *err);
/* A window of a file or device: size bytes from byte offset (size 0:
 * to the end). */
struct io_window {
	uint64_t offset, size;
};
/* io_open with a window (NULL or all zero: the whole file). Every read
 * and write is then relative to win->offset and bounded by the
 * window's end (dev->size is the window's size, dev->fixed is set);
 * the locks stay on the whole file. A window that does not lie inside
 * the file or device is R4_ERANGE; a missing file is not created. */
int io_open_win(const char *path, unsigned flags,
		const struct io_window *win, struct io_dev **out,
		int *created, struct r4_error *err);
void io_close(struct io_dev *dev);
/* The file under the plain file backend dev: its device and inode
 * numbers and the window's first byte (the fault backend tells two opens
 * of one file by them). 0, -EOPNOTSUPP for another backend, or -errno. */
int io_file_id(const struct io_dev *dev, uint64_t id[3]);

int io_read(struct io_dev *dev, void *buf, size_t len, uint64_t off,
	    struct r4_error *err);
int io_write(struct io_dev *dev, const void *buf, size_t len, uint64_t off,
	     struct r4_error *err);
int io_sync(struct io_dev *dev, struct r4_error *err);

/* A read-only device over a duplicate of the open descriptor fd (a
 * regular file the caller keeps open, e.g. an archive), named name in
 * messages; io_close closes the duplicate only. */
int io_open_fd(int fd, const char *name, struct io_dev **out,
	       struct r4_error *err);
/* The same, for reading and writing (fd open so: a scratch file). */
int io_open_fd_rw(int fd, const char *name, struct io_dev **out,
		  struct r4_error *err);
/* Copy len bytes from byte src_off of src to byte dst_off of dst in the
 * kernel (copy_file_range(2)): no file data passes through user space.
 * 0 when all were copied; -EOPNOTSUPP, err untouched, when this cannot
 * be done here: either device is not a plain file or device (a test or
 * undo backend: then nothing is tried) or the kernel refused (another
 * file system, an old kernel, a block device); *done then says how many
 * bytes were copied before, and the caller copies the rest otherwise.
 * The kernel copying nothing before the end is -EOPNOTSUPP too (a
 * short source is then found by the caller's read). Else -errno with
 * err filled. */
int io_copy(struct io_dev *dst, uint64_t dst_off, struct io_dev *src,
	    uint64_t src_off, uint64_t len, uint64_t *done,
	    struct r4_error *err);
/* Give back the file space of len bytes from off of a plain file (a
 * hole is left; the size stays): a scratch file's bytes no longer
 * needed. Best effort: 0, or -EOPNOTSUPP when not done (another
 * backend, a device, a file system without holes). */
int io_punch(struct io_dev *dev, uint64_t off, uint64_t len);

/* Set the size of an image file (sparse growth); refused for devices. */
int io_resize(struct io_dev *dev, uint64_t size, struct r4_error *err);

/* Where an open learns what is mounted (tests: made-up tables; NULL or
 * NULL fields: /proc/self/mountinfo and /sys/block). */
struct io_mount_tables {
	const char *mountinfo, *sysblock;
};
/* 1 when path (a block device, or an image file behind a loop device)
 * is mounted, with the mount point in where; 0 when not; -errno. */
int io_is_mounted(const char *path, const struct io_mount_tables *t,
		  char *where, size_t len);
/* io_open_win with the lock, wait and window of o (NULL: none): flags
 * holds the IO_ access flags; o's R4_OPEN_NOLOCK counts for read-only
 * opens only. A read-write device is wrapped in o's fault backend, then
 * in its undo backend (each when named). */
int io_open_opts(const char *path, unsigned flags,
		 const struct r4_open_opts *o, struct io_dev **out,
		 int *created, struct r4_error *err);
/* 1 when the image file path is attached to a loop device (its name in
 * loop, where it is mounted in where: "" when not), else 0. */
int io_loop_attached(const char *path, const struct io_mount_tables *t,
		     char *loop, size_t looplen, char *where, size_t len);

#endif
