/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the undo device backend and r4_undo_apply (see undo.h). */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "r4/repair.h"
#include "libimage/io/undo.h"
#include "libimage/util/err.h"

#define UNDO_MAGIC "R4UNDO01"

static struct {
	FILE *f;
	char *path;
	uint64_t *set;		/* saved unit numbers + 1, open addressing */
	size_t cap, used;
	uint64_t units;
} undo;

struct undo_priv {
	struct io_dev lower;
};

static size_t slot(uint64_t u, size_t cap)
{
	return (size_t)((u * 0x9E3779B97F4A7C15ULL) >> 20) & (cap - 1);
}

static int set_has(uint64_t u)
{
	if (!undo.cap)
		return 0;
	for (size_t i = slot(u, undo.cap);; i = (i + 1) & (undo.cap - 1)) {
		if (undo.set[i] == u + 1)
			return 1;
		if (!undo.set[i])
			return 0;
	}
}

static int set_add(uint64_t u)
{
	size_t i;

	if ((undo.used + 1) * 2 > undo.cap) {
		size_t nc = undo.cap ? undo.cap * 2 : 1024;
		uint64_t *s = calloc(nc, sizeof(*s)), *old = undo.set;

		if (!s)
			return -ENOMEM;
		for (size_t k = 0; k < undo.cap; k++) {
			if (!old[k])
				continue;
			i = slot(old[k] - 1, nc);
			while (s[i])
				i = (i + 1) & (nc - 1);
			s[i] = old[k];
		}
		free(old);
		undo.set = s;
		undo.cap = nc;
	}
	i = slot(u, undo.cap);
	while (undo.set[i])
		i = (i + 1) & (undo.cap - 1);
	undo.set[i] = u + 1;
	undo.used++;
	return 0;
}

static void put_le(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* Save the old contents of the units [off, off + len) touches. */
static int save(struct undo_priv *p, uint64_t off, size_t len)
{
	uint8_t buf[UNDO_UNIT], rec[12];
	uint64_t first = off / UNDO_UNIT, last, size = p->lower.size;
	int wrote = 0, rc;

	if (!len)
		return 0;
	last = (off + len - 1) / UNDO_UNIT;
	for (uint64_t u = first; u <= last; u++) {
		uint64_t at = u * UNDO_UNIT;
		size_t n = UNDO_UNIT;

		if (set_has(u) || at >= size)
			continue;
		if (at + n > size)
			n = (size_t)(size - at);
		rc = p->lower.ops->pread(&p->lower, buf, n, at);
		if (rc)
			return rc;
		put_le(rec, at, 8);
		put_le(rec + 8, n, 4);
		if (fwrite(rec, 1, sizeof(rec), undo.f) != sizeof(rec) ||
		    fwrite(buf, 1, n, undo.f) != n)
			return -EIO;
		rc = set_add(u);
		if (rc)
			return rc;
		undo.units++;
		wrote = 1;
	}
	if (wrote && (fflush(undo.f) || fsync(fileno(undo.f))))
		return -errno ? -errno : -EIO;
	return 0;
}

static int undo_pread(struct io_dev *dev, void *buf, size_t len, uint64_t off)
{
	struct undo_priv *p = dev->priv;

	return p->lower.ops->pread(&p->lower, buf, len, off);
}

static int undo_pwrite(struct io_dev *dev, const void *buf, size_t len,
		       uint64_t off)
{
	struct undo_priv *p = dev->priv;
	int rc = save(p, off, len);

	return rc ? rc : p->lower.ops->pwrite(&p->lower, buf, len, off);
}

static int undo_sync(struct io_dev *dev)
{
	struct undo_priv *p = dev->priv;

	return p->lower.ops->sync(&p->lower);
}

/* Growing only (r4fsck -y extends a truncated image): the new tail
 * held nothing, and the undo file's device size says where to cut it
 * again. A shrink would lose bytes the undo file does not hold. */
static int undo_resize(struct io_dev *dev, uint64_t size)
{
	struct undo_priv *p = dev->priv;
	int rc;

	if (size < p->lower.size)
		return -EPERM;
	rc = p->lower.ops->resize(&p->lower, size);
	if (!rc)
		dev->size = size;
	return rc;
}

static void undo_close(struct io_dev *dev)
{
	struct undo_priv *p = dev->priv;

	p->lower.ops->close(&p->lower);
	free(p);
}

static const struct io_ops undo_ops = {
	.pread = undo_pread, .pwrite = undo_pwrite, .sync = undo_sync,
	.resize = undo_resize, .close = undo_close
};

int io_undo_maybe_attach(struct io_dev *dev, struct r4_error *err)
{
	struct undo_priv *p;
	uint8_t hdr[16];

	if (!undo.f)
		return 0;
	if (ftell(undo.f) == 0) {
		memcpy(hdr, UNDO_MAGIC, 8);
		put_le(hdr + 8, dev->size, 8);
		if (fwrite(hdr, 1, sizeof(hdr), undo.f) != sizeof(hdr) ||
		    fflush(undo.f) || fsync(fileno(undo.f)))
			return r4i_fail(err, -EIO, "%s: cannot write the undo "
				       "file", undo.path);
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return r4i_fail(err, -ENOMEM, "%s: out of memory", dev->path);
	p->lower = *dev;
	dev->ops = &undo_ops;
	dev->priv = p;
	return 0;
}

int r4_undo_start(const char *path, struct r4_error *err)
{
	if (undo.f)
		return r4i_fail(err, R4_EBUSY, "%s: an undo file is already "
			       "open", path);
	undo.f = fopen(path, "wbx");
	if (!undo.f)
		return r4i_fail(err, -errno, "%s: cannot create the undo file "
			       "(it must not exist): %s", path,
			       strerror(errno));
	undo.path = strdup(path);
	return 0;
}

void r4_undo_finish(void)
{
	if (undo.f)
		fclose(undo.f);
	free(undo.path);
	free(undo.set);
	memset(&undo, 0, sizeof(undo));
}

int r4_undo_apply(const char *undo_path, const char *image,
		  uint64_t *units, unsigned lock, struct r4_error *err)
{
	uint8_t hdr[16], rec[12], *buf = malloc(UNDO_UNIT);
	struct io_dev *dev = NULL;
	FILE *f = fopen(undo_path, "rb");
	int rc = 0;

	*units = 0;
	if (!buf || !f) {
		rc = r4i_fail(err, buf ? -errno : -ENOMEM, "%s: %s",
			     undo_path, buf ? strerror(errno)
					    : "out of memory");
		goto out;
	}
	if (fread(hdr, 1, sizeof(hdr), f) != sizeof(hdr) ||
	    memcmp(hdr, UNDO_MAGIC, 8)) {
		rc = r4i_fail(err, R4_ECORRUPT, "%s: not an r4fsck undo file",
			     undo_path);
		goto out;
	}
	rc = io_open(image, IO_RDWR | io_lock_flags(lock &
		     ~(unsigned)R4_OPEN_NOLOCK), &dev, NULL, err);
	if (rc)
		goto out;
	/* A device grown since (a truncated image extended by the repair)
	 * is cut back to its old size once the records are back. */
	if (dev->size != get_le(hdr + 8, 8) &&
	    (dev->size < get_le(hdr + 8, 8) || dev->is_blkdev)) {
		rc = r4i_fail(err, R4_EINVAL, "%s: %llu bytes, but the undo "
			     "file %s was made for a device of %llu bytes",
			     image, (unsigned long long)dev->size, undo_path,
			     (unsigned long long)get_le(hdr + 8, 8));
		goto out;
	}
	for (;;) {
		size_t got = fread(rec, 1, sizeof(rec), f);
		uint64_t off = get_le(rec, 8), n = get_le(rec + 8, 4);

		if (got == 0 && feof(f))
			break;
		if (got != sizeof(rec) || n == 0 || n > UNDO_UNIT ||
		    off % UNDO_UNIT || off + n > dev->size ||
		    fread(buf, 1, n, f) != n) {
			rc = r4i_fail(err, R4_ECORRUPT, "%s: record %llu is "
				     "truncated or out of range; %llu units "
				     "were put back", undo_path,
				     (unsigned long long)*units,
				     (unsigned long long)*units);
			break;
		}
		rc = io_write(dev, buf, n, off, err);
		if (rc)
			break;
		(*units)++;
	}
	if (!rc && dev->size > get_le(hdr + 8, 8))
		rc = io_resize(dev, get_le(hdr + 8, 8), err);
	if (!rc)
		rc = io_sync(dev, err);
out:
	if (dev)
		io_close(dev);
	if (f)
		fclose(f);
	free(buf);
	return rc;
}
