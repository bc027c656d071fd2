/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the host files a command writes (a tarball, a recovered file,
 * a block): where they may go and how they get there, shared by
 * r4pack extract and r4debugfs (see r4_outfile_open in r4/r4.h).
 *
 * Nothing at the output's name is created, truncated or removed before
 * r4_outfile_commit: the bytes go to a new temporary file in the same
 * folder, which the commit renames over the name (or links to it when
 * the name must be new), after an fsync of its bytes, then syncs the
 * folder: a file committed is durable (unless R4_OUT_NOSYNC: the caller
 * makes many files durable at once). A failed run removes its temporary
 * file and nothing else. */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "libimage/util/err.h"
#include "libimage/util/tmpfiles.h"

static mode_t umask_now(void)
{
	mode_t m = umask(022);

	umask(m);
	return m;
}

static const char *kind(mode_t m)
{
	return S_ISCHR(m) ? "a character device" :
	       S_ISBLK(m) ? "a block device" :
	       S_ISFIFO(m) ? "a FIFO" :
	       S_ISSOCK(m) ? "a socket" :
	       S_ISDIR(m) ? "a directory" : "not a regular file";
}

/* 1 when st is the image (the same inode, or the same block device
 * through another node). */
static int is_image(const struct stat *st, const char *image)
{
	struct stat img;

	if (!image || stat(image, &img))
		return 0;
	if (img.st_dev == st->st_dev && img.st_ino == st->st_ino)
		return 1;
	return S_ISBLK(img.st_mode) && S_ISBLK(st->st_mode) &&
	       img.st_rdev == st->st_rdev;
}

int r4_outfile_check_fd(int fd, const char *name, const char *image,
			const char *use, struct r4_error *err)
{
	struct stat st;

	if (fstat(fd, &st) || !is_image(&st, image))
		return 0;
	return r4i_fail(err, R4_EINVAL, "%s: is the image being %s (%s); "
			"refusing to write into it", name, use, image);
}

/* Where the file goes: o->final (or o->direct for a node written
 * straight into). */
static int target(struct r4_outfile *o, const char *out, const char *image,
		  unsigned flags, const char *use, struct r4_error *err)
{
	struct stat st, lst;

	if (!*out)
		return r4i_fail(err, R4_EINVAL, "an empty file name");
	if (stat(out, &st)) {
		if (errno != ENOENT)
			return r4i_fail(err, -errno, "%s: %s", out,
					strerror(errno));
		if (!lstat(out, &lst))
			return r4i_fail(err, R4_EINVAL, "%s: a symbolic link "
					"to nothing; refusing to write through "
					"it", out);
		o->final = strdup(out);
		return o->final ? 0 : r4i_fail(err, -ENOMEM, "out of memory");
	}
	if (is_image(&st, image))
		return r4i_fail(err, R4_EINVAL, "%s: is the image being %s "
				"(%s); refusing to overwrite it", out, use,
				image);
	if (S_ISDIR(st.st_mode))
		return r4i_fail(err, -EISDIR, "%s: is a directory", out);
	if (!S_ISREG(st.st_mode)) {
		if (!(flags & R4_OUT_SPECIAL))
			return r4i_fail(err, R4_EINVAL, "%s: is %s; refusing "
					"to write into it", out,
					kind(st.st_mode));
		o->direct = 1;
		return 0;
	}
	if (flags & R4_OUT_NOREPLACE)
		return r4i_fail(err, -EEXIST, "%s: exists already", out);
	/* Through a symbolic link: the file it names is replaced, in its
	 * own folder (as tar -f follows it). */
	o->final = lstat(out, &lst) || !S_ISLNK(lst.st_mode) ? strdup(out) :
		   realpath(out, NULL);
	return o->final ? 0 : r4i_fail(err, -errno ? -errno : -ENOMEM,
				       "%s: %s", out, strerror(errno ? errno :
							       ENOMEM));
}

int r4_outfile_open(struct r4_outfile *o, const char *out, const char *image,
		    unsigned flags, unsigned mode, const char *use,
		    struct r4_error *err)
{
	size_t n;
	int rc;

	memset(o, 0, sizeof(*o));
	o->fd = -1;
	o->flags = flags;
	rc = target(o, out, image, flags, use, err);
	if (rc)
		return rc;
	if (o->direct) {
		/* A FIFO without a reader waits here for one (a pipe to
		 * another program is what R4_OUT_SPECIAL asks for). */
		o->fd = open(out, O_WRONLY | O_NOCTTY | O_CLOEXEC);
		if (o->fd < 0)
			return r4i_fail(err, -errno, "%s: %s", out,
					strerror(errno));
		/* The node may have been swapped since the check. */
		rc = r4_outfile_check_fd(o->fd, out, image, use, err);
		if (rc) {
			close(o->fd);
			o->fd = -1;
		}
		return rc;
	}
	n = strlen(o->final) + 16;
	if (!(o->tmp = malloc(n))) {
		free(o->final);
		o->final = NULL;
		return r4i_fail(err, -ENOMEM, "out of memory");
	}
	snprintf(o->tmp, n, "%s.r4tmpXXXXXX", o->final);
	r4_tmpfile_block();
	o->fd = mkostemp(o->tmp, O_CLOEXEC);
	if (o->fd >= 0)
		r4_tmpfile_add(o->tmp);	/* removed on a signal */
	r4_tmpfile_unblock();
	if (o->fd < 0) {
		int e = errno;

		free(o->tmp);
		free(o->final);
		o->tmp = o->final = NULL;
		return r4i_fail(err, -e, "%s: %s", out, strerror(e));
	}
	fchmod(o->fd, (mode_t)mode & 07777 & ~umask_now());
	return 0;
}

static void release(struct r4_outfile *o)
{
	if (o->tmp) {
		r4_tmpfile_forget(o->tmp);
		free(o->tmp);
	}
	free(o->final);
	o->tmp = o->final = NULL;
	o->fd = -1;
}

void r4_outfile_abort(struct r4_outfile *o)
{
	if (o->fd >= 0)
		close(o->fd);
	if (o->tmp)
		unlink(o->tmp);
	release(o);
}

/* tmp renamed to final only if final does not exist: 0 or -1 (errno
 * EEXIST when it does). */
static int put_new(const char *tmp, const char *final)
{
	if (!renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_NOREPLACE))
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -1;
	/* a file system without RENAME_NOREPLACE: a new link fails
	 * on an existing name as well */
	if (link(tmp, final))
		return -1;
	unlink(tmp);
	return 0;
}

/* tmp (written and closed) put at final: renamed over it, or with
 * R4_OUT_NOREPLACE only if the name is free. 0, or -errno said. */
static int place(struct r4_outfile *o, const char *out, struct r4_error *err)
{
	if (!(o->flags & R4_OUT_NOREPLACE)) {
		if (rename(o->tmp, o->final))
			return r4i_fail(err, -errno, "%s: %s", out,
					strerror(errno));
	} else if (put_new(o->tmp, o->final)) {
		/* made meanwhile by someone else: theirs stays */
		return r4i_fail(err, -errno, "%s: %s%s", out, strerror(errno),
				errno == EEXIST ?
				" (refusing to overwrite it)" : "");
	}
	return 0;
}

int r4_outfile_commit(struct r4_outfile *o, const char *out,
		      struct r4_error *err)
{
	int rc = 0, fd = o->fd;
	int sync = o->tmp && !(o->flags & R4_OUT_NOSYNC);

	o->fd = -1;
	/* the bytes on disk before the name: a power cut must leave the
	 * old bytes or the new, never an empty or short file under it */
	if (fd >= 0 && sync && fsync(fd))
		rc = r4i_fail(err, -errno, "%s: %s", out, strerror(errno));
	if (fd >= 0 && close(fd) && !rc)
		rc = r4i_fail(err, -errno, "%s: %s", out, strerror(errno));
	if (!rc && o->tmp && (rc = place(o, out, err))) {
		unlink(o->tmp);
	} else if (!rc && sync && (rc = r4_sync_dir(o->final))) {
		/* in place: only its name may not outlive a power cut */
		rc = r4i_fail(err, rc, "%s: written and in place, but its "
			      "folder could not be synced (a power cut may "
			      "still lose it): %s", out, strerror(-rc));
	} else if (rc && o->tmp) {
		unlink(o->tmp);
	}
	release(o);
	return rc;
}

int r4_sync_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd))
		rc = -errno;
	close(fd);
	return rc;
}

/* A folder this process may not open for reading (a drop box, mode
 * 0333) or whose file system cannot fsync a folder (EINVAL, EBADF) is
 * made durable another way (sync_whole); on a read-only file system
 * (EROFS) there is nothing to sync. */
static int dir_unsyncable(int e, int at_open)
{
	if (at_open)
		return e == EACCES || e == EPERM;
	return e == EINVAL || e == EBADF || e == EROFS;
}

/* The file system that holds path, synced whole (syncfs of the file
 * itself; sync(2) when this process may not open it): its new entry
 * in a folder that could not be synced alone is on disk after this.
 * 0 or -errno. */
static int sync_whole(const char *path)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), rc = 0;

	if (fd < 0) {
		sync();
		return 0;
	}
	if (syncfs(fd))
		rc = -errno;
	close(fd);
	return rc;
}

int r4_sync_dir(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	int fd, rc = 0, e = 0;

	if (!slash)
		dir = strdup(".");
	else
		dir = strndup(path, slash == path ? 1 : (size_t)(slash - path));
	if (!dir)
		return -ENOMEM;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		rc = dir_unsyncable(e, 1) ? 0 : -e;
	} else {
		if (fsync(fd)) {
			e = errno;
			rc = dir_unsyncable(e, 0) ? 0 : -e;
		}
		close(fd);
	}
	free(dir);
	/* skipped (not failed): the whole file system instead */
	if (!rc && e && e != EROFS)
		rc = sync_whole(path);
	return rc;
}
