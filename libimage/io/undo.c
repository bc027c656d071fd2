/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the undo device backend (see undo.h); r4_undo_apply is in
 * libimage/repair/undo.c. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "r4/util.h"
#include "libimage/io/fault.h"
#include "libimage/io/undo.h"
#include "libimage/util/err.h"
#include "format/checksum.h"
#include "format/sha256.h"
#include "format/super.h"

struct r4_undo {
	FILE *f;
	char *path;
	uint64_t *set;		/* saved unit numbers + 1, open addressing */
	size_t cap, used;
	uint64_t units;
	uint64_t *rec_off;	/* the records, in file order */
	uint32_t *rec_len;
	size_t nrec, capoff, caplen;	/* rec_off, rec_len grow apart */
	long trailer_at;	/* where the trailer starts, 0: none yet */
	unsigned refs;		/* the creator's and one per device */
};

struct undo_priv {
	struct io_dev lower;
	struct r4_undo *u;
};

static size_t slot(uint64_t u, size_t cap)
{
	return (size_t)((u * 0x9E3779B97F4A7C15ULL) >> 20) & (cap - 1);
}

static int set_has(const struct r4_undo *undo, uint64_t u)
{
	if (!undo->cap)
		return 0;
	for (size_t i = slot(u, undo->cap);; i = (i + 1) & (undo->cap - 1)) {
		if (undo->set[i] == u + 1)
			return 1;
		if (!undo->set[i])
			return 0;
	}
}

static int set_add(struct r4_undo *undo, uint64_t u)
{
	size_t i;

	if ((undo->used + 1) * 2 > undo->cap) {
		size_t nc = undo->cap ? undo->cap * 2 : 1024;
		uint64_t *s = calloc(nc, sizeof(*s)), *old = undo->set;

		if (!s)
			return -ENOMEM;
		for (size_t k = 0; k < undo->cap; k++) {
			if (!old[k])
				continue;
			i = slot(old[k] - 1, nc);
			while (s[i])
				i = (i + 1) & (nc - 1);
			s[i] = old[k];
		}
		free(old);
		undo->set = s;
		undo->cap = nc;
	}
	i = slot(u, undo->cap);
	while (undo->set[i])
		i = (i + 1) & (undo->cap - 1);
	undo->set[i] = u + 1;
	undo->used++;
	return 0;
}

/* CRC-32C (initial and final inversion) of a then b. */
uint32_t io_undo_crc(const void *a, size_t alen, const void *b, size_t blen)
{
	uint32_t c = ~0u;

	if (alen)
		c = fmt_crc32c_raw(c, a, alen);
	return ~fmt_crc32c_raw(c, b, blen);
}

static int rec_add(struct r4_undo *undo, uint64_t off, uint32_t len)
{
	if (R4_RESERVE(undo->rec_off, undo->capoff, undo->nrec + 1, 256) ||
	    R4_RESERVE(undo->rec_len, undo->caplen, undo->nrec + 1, 256))
		return -ENOMEM;
	undo->rec_off[undo->nrec] = off;
	undo->rec_len[undo->nrec++] = len;
	return 0;
}

void io_undo_put_le(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

uint64_t io_undo_get_le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* Save the old contents of the units [off, off + len) touches. */
static int save(struct undo_priv *p, uint64_t off, size_t len)
{
	struct r4_undo *undo = p->u;
	uint8_t buf[UNDO_UNIT], rec[UNDO_REC];
	uint64_t first = off / UNDO_UNIT, last, size = p->lower.size;
	int wrote = 0, rc;

	/* a test's power cut (io/fault.h) stops the undo file's writes
	 * too: the machine is off */
	if (!len || io_fault_down(&p->lower))
		return 0;
	last = (off + len - 1) / UNDO_UNIT;
	for (uint64_t u = first; u <= last; u++) {
		uint64_t at = u * UNDO_UNIT;
		size_t n = UNDO_UNIT;

		if (set_has(undo, u) || at >= size)
			continue;
		if (at + n > size)
			n = (size_t)(size - at);
		rc = p->lower.ops->pread(&p->lower, buf, n, at);
		if (rc)
			return rc;
		io_undo_put_le(rec, at, 8);
		io_undo_put_le(rec + 8, n, 4);
		io_undo_put_le(rec + 12, io_undo_crc(rec, 12, buf, n), 4);
		if (fwrite(rec, 1, sizeof(rec), undo->f) != sizeof(rec) ||
		    fwrite(buf, 1, n, undo->f) != n)
			return -EIO;
		rc = rec_add(undo, at, (uint32_t)n);
		if (!rc)
			rc = set_add(undo, u);
		if (rc)
			return rc;
		undo->units++;
		wrote = 1;
	}
	if (wrote && (fflush(undo->f) || fsync(fileno(undo->f))))
		return -errno ? -errno : -EIO;
	return 0;
}

/* The volume's identity on device d of size bytes: the uuid of its
 * master super block and a SHA-256 of the master and format40 super
 * blocks (zeros where the device is too short to hold them). */
int io_undo_identity(struct io_dev *d, uint64_t size,
		    uint8_t uuid[FMT_UUID_SIZE], uint8_t sum[32])
{
	uint8_t buf[UNDO_UNIT];
	struct fmt_sha256 c;
	struct fmt_master m;
	uint32_t bs;
	int rc;

	memset(uuid, 0, FMT_UUID_SIZE);
	fmt_sha256_init(&c);
	if (size >= FMT_MASTER_OFFSET + UNDO_UNIT) {
		rc = d->ops->pread(d, buf, UNDO_UNIT, FMT_MASTER_OFFSET);
		if (rc)
			return rc;
		fmt_master_decode(buf, &m);
		memcpy(uuid, m.uuid, FMT_UUID_SIZE);
		fmt_sha256_update(&c, buf, UNDO_UNIT);
		bs = m.blksize;
		if (bs < 512 || bs > 65536 || (bs & (bs - 1)))
			bs = UNDO_UNIT;
		if (size >= FMT_MASTER_OFFSET + bs + UNDO_UNIT) {
			rc = d->ops->pread(d, buf, UNDO_UNIT,
					   FMT_MASTER_OFFSET + bs);
			if (rc)
				return rc;
			fmt_sha256_update(&c, buf, UNDO_UNIT);
		}
	}
	fmt_sha256_final(&c, sum);
	return 0;
}

/* SHA-256 of the len bytes at off on d. */
int io_undo_unit_sum(struct io_dev *d, uint64_t off, uint32_t len,
		    uint8_t sum[32])
{
	uint8_t buf[UNDO_UNIT];
	struct fmt_sha256 c;
	int rc = d->ops->pread(d, buf, len, off);

	if (rc)
		return rc;
	fmt_sha256_init(&c);
	fmt_sha256_update(&c, buf, len);
	fmt_sha256_final(&c, sum);
	return 0;
}

/* The trailer, written each time a wrapped device closes (and cut off
 * again when another opens): what the volume looks like now that the
 * repair wrote it. "R4UNDOT2", the number of records, the device size,
 * the uuid, the SHA-256 of the super blocks, the SHA-256 of each
 * record's unit as it is now; then its length, its CRC32C and
 * "R4UNDOE2". Without it (the repair did not finish) --undo refuses
 * the file. */
static int write_trailer(struct undo_priv *p, uint64_t size)
{
	struct r4_undo *undo = p->u;
	size_t len = UNDO_TRAILER_FIXED + undo->nrec * 32;
	uint8_t *t = malloc(len + UNDO_END_LEN), *e;
	long at = 0;
	int rc;

	if (!t)
		return -ENOMEM;
	memcpy(t, UNDO_TRAILER, 8);
	io_undo_put_le(t + 8, undo->nrec, 8);
	io_undo_put_le(t + 16, size, 8);
	rc = io_undo_identity(&p->lower, size, t + 24, t + 24 + FMT_UUID_SIZE);
	for (size_t i = 0; !rc && i < undo->nrec; i++)
		rc = io_undo_unit_sum(&p->lower, undo->rec_off[i], undo->rec_len[i],
			      t + UNDO_TRAILER_FIXED + i * 32);
	e = t + len;
	io_undo_put_le(e, len, 8);
	io_undo_put_le(e + 8, io_undo_crc(NULL, 0, t, len), 4);
	memcpy(e + 12, UNDO_END, 8);
	if (!rc && (fflush(undo->f) || fseek(undo->f, 0, SEEK_END) ||
		    (at = ftell(undo->f)) < 0))
		rc = -EIO;
	if (!rc) {
		if (fwrite(t, 1, len + UNDO_END_LEN, undo->f) !=
		    len + UNDO_END_LEN || fflush(undo->f) ||
		    fsync(fileno(undo->f))) {
			rc = -EIO;
			if (ftruncate(fileno(undo->f), at) == 0)
				fseek(undo->f, 0, SEEK_END);
		} else {
			undo->trailer_at = at;
		}
	}
	free(t);
	return rc;
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

	/* A trailer that cannot be written leaves a file --undo refuses
	 * (incomplete), never one that would be trusted. */
	if (!io_fault_down(&p->lower))
		(void)write_trailer(p, dev->size);
	p->lower.ops->close(&p->lower);
	io_undo_put(p->u);
	free(p);
}

static const struct io_ops undo_ops = {
	.pread = undo_pread, .pwrite = undo_pwrite, .sync = undo_sync,
	.resize = undo_resize, .close = undo_close
};

/* The header, when the file is new; else cut off the trailer of the
 * open before (another open of the same run: its records go on after
 * the last one, and its close writes the trailer again). */
static int undo_extend(struct r4_undo *undo, uint64_t size,
		       struct r4_error *err)
{
	uint8_t hdr[UNDO_HDR];

	if (ftell(undo->f) == 0) {
		memset(hdr, 0, sizeof(hdr));
		memcpy(hdr, UNDO_MAGIC, 8);
		io_undo_put_le(hdr + 8, size, 8);
		io_undo_put_le(hdr + 28, io_undo_crc(NULL, 0, hdr, 28), 4);
		/* the new file's entry too: the volume changes next, and
		 * an undo file lost with the power would be no undo */
		if (fwrite(hdr, 1, sizeof(hdr), undo->f) != sizeof(hdr) ||
		    fflush(undo->f) || fsync(fileno(undo->f)) ||
		    r4_sync_dir(undo->path))
			return r4i_fail(err, -EIO, "%s: cannot write the undo "
				       "file", undo->path);
	} else if (undo->trailer_at) {
		if (fflush(undo->f) ||
		    ftruncate(fileno(undo->f), undo->trailer_at) ||
		    fseek(undo->f, 0, SEEK_END))
			return r4i_fail(err, -EIO, "%s: cannot write the undo "
				       "file", undo->path);
		undo->trailer_at = 0;
	}
	return 0;
}

int io_undo_attach(struct io_dev *dev, struct r4_undo *undo,
		   struct r4_error *err)
{
	struct undo_priv *p;
	int rc;

	if (!undo)
		return 0;
	rc = io_fault_down(dev) ? 0 : undo_extend(undo, dev->size, err);
	if (rc)
		return rc;
	p = calloc(1, sizeof(*p));
	if (!p)
		return r4i_fail(err, -ENOMEM, "%s: out of memory", dev->path);
	p->lower = *dev;
	p->u = undo;
	undo->refs++;
	dev->ops = &undo_ops;
	dev->priv = p;
	return 0;
}

int io_undo_create(const char *path, struct r4_undo **out,
		   struct r4_error *err)
{
	struct r4_undo *undo = calloc(1, sizeof(*undo));

	*out = NULL;
	if (!undo || !(undo->path = strdup(path))) {
		free(undo);
		return r4i_fail(err, -ENOMEM, "%s: out of memory", path);
	}
	undo->f = fopen(path, "wbx");
	if (!undo->f) {
		int e = errno;

		free(undo->path);
		free(undo);
		return r4i_fail(err, -e, "%s: cannot create the undo file "
			       "(it must not exist): %s", path, strerror(e));
	}
	undo->refs = 1;
	*out = undo;
	return 0;
}

void io_undo_put(struct r4_undo *undo)
{
	if (!undo || --undo->refs)
		return;
	fclose(undo->f);
	free(undo->path);
	free(undo->set);
	free(undo->rec_off);
	free(undo->rec_len);
	free(undo);
}
