/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: a finished image file written onto a block device or into a
 * partition (include/r4/pack.h, r4_pack_place): what r4pack create does
 * when a build in several steps (layers) cannot be written in place,
 * since a failure part way would leave a half-built volume there. The
 * image is built whole in a file first; only then is the target
 * touched. */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "r4/pack.h"
#include "libimage/io/dev.h"
#include "libimage/util/err.h"

#define PLACE_CHUNK (1u << 20)
/* Written whole, holes as zeros: what lies before the master super
 * block (doc/format.md §1.2), so no old boot sector or file system
 * signature is left for blkid to find beside the new volume. */
#define PLACE_ZERO_HEAD 65536u
/* runs are placed in whole blocks (r4mkfs and r4pack make 4096 only) */
#define PLACE_GRAIN 4096u

int r4_pack_target_size(const char *target, const struct r4_open_opts *o,
			uint64_t *bytes, struct r4_error *err)
{
	struct r4_open_opts ro = *o;
	struct io_dev *dev = NULL;
	int rc;

	ro.flags = (o->flags & ~(unsigned)R4_OPEN_RDWR) | R4_OPEN_NOLOCK;
	rc = io_open_opts(target, IO_RDONLY, &ro, &dev, NULL, err);
	if (!rc)
		*bytes = dev->size;
	io_close(dev);
	return rc;
}

/* Copy [off, end) of the image file (fd) onto dst. */
static int place_run(int fd, const char *image, struct io_dev *dst,
		     uint64_t off, uint64_t end, char *buf,
		     struct r4_error *err)
{
	while (off < end) {
		size_t want = end - off < PLACE_CHUNK ? (size_t)(end - off) :
			      PLACE_CHUNK;
		ssize_t n = pread(fd, buf, want, (off_t)off);
		int rc;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return r4i_fail(err, n ? -errno : -EIO, "%s: cannot "
				       "read at byte %llu: %s", image,
				       (unsigned long long)off,
				       n ? strerror(errno) : "short file");
		if ((rc = io_write(dst, buf, (size_t)n, off, err)))
			return rc;
		off += (uint64_t)n;
	}
	return 0;
}

/* The data runs of the image file (SEEK_DATA / SEEK_HOLE), the first
 * PLACE_ZERO_HEAD bytes whole. Each run is widened to whole grains of
 * PLACE_GRAIN bytes (the block size): a block the build
 * wrote only in part (a file's last partial block copied into a new
 * file, whose rest reads as zeros) can be a hole in its rest when the
 * host file system's blocks are smaller than the image's, and that rest
 * must reach the target as zeros, not as what the target held. */
static int place_runs(int fd, const char *image, uint64_t size,
		      struct io_dev *dst, char *buf, struct r4_error *err)
{
	uint64_t head = size < PLACE_ZERO_HEAD ? size : PLACE_ZERO_HEAD;
	uint64_t done = head;
	off_t s = (off_t)head;
	int rc = place_run(fd, image, dst, 0, head, buf, err);

	while (!rc && (uint64_t)s < size) {
		uint64_t a, z;
		off_t e;

		s = lseek(fd, s, SEEK_DATA);
		if (s < 0)
			return errno == ENXIO ? 0 :
			       r4i_fail(err, -errno, "%s: %s", image,
					strerror(errno));
		e = lseek(fd, s, SEEK_HOLE);
		if (e < 0 || (uint64_t)e > size)
			e = (off_t)size;
		a = (uint64_t)s / PLACE_GRAIN * PLACE_GRAIN;
		z = ((uint64_t)e + PLACE_GRAIN - 1) / PLACE_GRAIN * PLACE_GRAIN;
		if (a < done)
			a = done;
		if (z > size)
			z = size;
		rc = place_run(fd, image, dst, a, z, buf, err);
		done = z;
		s = (off_t)z;
	}
	return rc;
}

int r4_pack_place(const char *image, const char *target,
		  const struct r4_open_opts *o, struct r4_error *err)
{
	struct io_dev *dst = NULL;
	char *buf = malloc(PLACE_CHUNK);
	int fd = open(image, O_RDONLY | O_CLOEXEC), rc;
	uint64_t size;
	off_t end;

	if (fd < 0 || !buf) {
		rc = r4i_fail(err, fd < 0 ? -errno : -ENOMEM, "%s: %s", image,
			      fd < 0 ? strerror(errno) : "out of memory");
		goto out;
	}
	if ((end = lseek(fd, 0, SEEK_END)) < 0) {
		rc = r4i_fail(err, -errno, "%s: %s", image, strerror(errno));
		goto out;
	}
	size = (uint64_t)end;
	rc = io_open_opts(target, IO_RDWR, o, &dst, NULL, err);
	if (!rc && size > dst->size)
		rc = r4i_fail(err, R4_ERANGE, "%s: the image (%llu bytes) does "
			      "not fit in %llu bytes", target,
			      (unsigned long long)size,
			      (unsigned long long)dst->size);
	if (!rc)
		rc = place_runs(fd, image, size, dst, buf, err);
	if (!rc)
		rc = io_sync(dst, err);
out:
	io_close(dst);
	if (fd >= 0)
		close(fd);
	free(buf);
	return rc;
}
