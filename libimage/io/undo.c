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
#include "format/checksum.h"
#include "format/sha256.h"
#include "format/super.h"

#define UNDO_MAGIC_V1 "R4UNDO01"
#define UNDO_MAGIC "R4UNDO02"
#define UNDO_TRAILER "R4UNDOT2"
#define UNDO_END "R4UNDOE2"
#define UNDO_HDR 32		/* magic, size, flags, reserved, crc */
#define UNDO_REC 16		/* offset, length, crc */
#define UNDO_END_LEN 20		/* trailer length, crc, end magic */
#define UNDO_TRAILER_FIXED (8 + 8 + 8 + FMT_UUID_SIZE + 32)
#define UNDO_APPLYING 1u	/* header flag: --undo began writing */

static struct {
	FILE *f;
	char *path;
	uint64_t *set;		/* saved unit numbers + 1, open addressing */
	size_t cap, used;
	uint64_t units;
	uint64_t *rec_off;	/* the records, in file order */
	uint32_t *rec_len;
	size_t nrec, caprec;
	long trailer_at;	/* where the trailer starts, 0: none yet */
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

/* CRC-32C (initial and final inversion) of a then b. */
static uint32_t crc2(const void *a, size_t alen, const void *b, size_t blen)
{
	uint32_t c = ~0u;

	if (alen)
		c = fmt_crc32c_raw(c, a, alen);
	return ~fmt_crc32c_raw(c, b, blen);
}

static int rec_add(uint64_t off, uint32_t len)
{
	if (undo.nrec == undo.caprec) {
		size_t nc = undo.caprec ? undo.caprec * 2 : 256;
		uint64_t *o = realloc(undo.rec_off, nc * sizeof(*o));
		uint32_t *l;

		if (!o)
			return -ENOMEM;
		undo.rec_off = o;
		l = realloc(undo.rec_len, nc * sizeof(*l));
		if (!l)
			return -ENOMEM;
		undo.rec_len = l;
		undo.caprec = nc;
	}
	undo.rec_off[undo.nrec] = off;
	undo.rec_len[undo.nrec++] = len;
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
	uint8_t buf[UNDO_UNIT], rec[UNDO_REC];
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
		put_le(rec + 12, crc2(rec, 12, buf, n), 4);
		if (fwrite(rec, 1, sizeof(rec), undo.f) != sizeof(rec) ||
		    fwrite(buf, 1, n, undo.f) != n)
			return -EIO;
		rc = rec_add(at, (uint32_t)n);
		if (!rc)
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

/* The volume's identity on device d of size bytes: the uuid of its
 * master super block and a SHA-256 of the master and format40 super
 * blocks (zeros where the device is too short to hold them). */
static int identity(struct io_dev *d, uint64_t size,
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
static int unit_sum(struct io_dev *d, uint64_t off, uint32_t len,
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
	size_t len = UNDO_TRAILER_FIXED + undo.nrec * 32;
	uint8_t *t = malloc(len + UNDO_END_LEN), *e;
	long at = 0;
	int rc;

	if (!t)
		return -ENOMEM;
	memcpy(t, UNDO_TRAILER, 8);
	put_le(t + 8, undo.nrec, 8);
	put_le(t + 16, size, 8);
	rc = identity(&p->lower, size, t + 24, t + 24 + FMT_UUID_SIZE);
	for (size_t i = 0; !rc && i < undo.nrec; i++)
		rc = unit_sum(&p->lower, undo.rec_off[i], undo.rec_len[i],
			      t + UNDO_TRAILER_FIXED + i * 32);
	e = t + len;
	put_le(e, len, 8);
	put_le(e + 8, crc2(NULL, 0, t, len), 4);
	memcpy(e + 12, UNDO_END, 8);
	if (!rc && (fflush(undo.f) || fseek(undo.f, 0, SEEK_END) ||
		    (at = ftell(undo.f)) < 0))
		rc = -EIO;
	if (!rc) {
		if (fwrite(t, 1, len + UNDO_END_LEN, undo.f) !=
		    len + UNDO_END_LEN || fflush(undo.f) ||
		    fsync(fileno(undo.f))) {
			rc = -EIO;
			if (ftruncate(fileno(undo.f), at) == 0)
				fseek(undo.f, 0, SEEK_END);
		} else {
			undo.trailer_at = at;
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
	(void)write_trailer(p, dev->size);
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
	uint8_t hdr[UNDO_HDR];

	if (!undo.f)
		return 0;
	if (ftell(undo.f) == 0) {
		memset(hdr, 0, sizeof(hdr));
		memcpy(hdr, UNDO_MAGIC, 8);
		put_le(hdr + 8, dev->size, 8);
		put_le(hdr + 28, crc2(NULL, 0, hdr, 28), 4);
		if (fwrite(hdr, 1, sizeof(hdr), undo.f) != sizeof(hdr) ||
		    fflush(undo.f) || fsync(fileno(undo.f)))
			return r4i_fail(err, -EIO, "%s: cannot write the undo "
				       "file", undo.path);
	} else if (undo.trailer_at) {
		/* another open of the same run: its records go on after
		 * the last one, and its close writes the trailer again */
		if (fflush(undo.f) ||
		    ftruncate(fileno(undo.f), undo.trailer_at) ||
		    fseek(undo.f, 0, SEEK_END))
			return r4i_fail(err, -EIO, "%s: cannot write the undo "
				       "file", undo.path);
		undo.trailer_at = 0;
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
	free(undo.rec_off);
	free(undo.rec_len);
	memset(&undo, 0, sizeof(undo));
}

/* One record of a file being applied. */
struct urec {
	uint64_t off, at;	/* on the device; of its bytes in the file */
	uint32_t len;
};

static int bad(struct r4_error *err, const char *path, const char *what)
{
	return r4i_fail(err, R4_ECORRUPT, "%s: %s; nothing changed", path,
		       what);
}

/* Read len bytes at off of the undo file; 0 or -1. */
static int fget(FILE *f, void *buf, size_t len, uint64_t off)
{
	if (fseeko(f, (off_t)off, SEEK_SET) || fread(buf, 1, len, f) != len)
		return -1;
	return 0;
}

/* Parse and verify the whole file: header, records and trailer. */
static int load(FILE *f, const char *path, uint8_t *hdr, struct urec **recs,
		uint64_t *nrec, uint8_t **trailer, struct r4_error *err)
{
	uint8_t end[UNDO_END_LEN], rh[UNDO_REC], *buf = NULL, *t = NULL;
	uint64_t fsize, tlen, tstart, n = 0, pos, pre, post;
	struct urec *r = NULL;
	off_t sz;
	int rc = 0;

	if (fseeko(f, 0, SEEK_END) || (sz = ftello(f)) < 0)
		return r4i_fail(err, -EIO, "%s: cannot read", path);
	fsize = (uint64_t)sz;
	if (fsize < 8 || fget(f, hdr, 8, 0))
		return bad(err, path, "not an r4fsck undo file");
	if (!memcmp(hdr, UNDO_MAGIC_V1, 8))
		return bad(err, path, "an undo file of format 1 (R4UNDO01), "
			   "made by an older r4fsck: it records neither the "
			   "volume nor the state it belongs to, so it cannot "
			   "be checked and is refused");
	if (memcmp(hdr, UNDO_MAGIC, 8))
		return bad(err, path, "not an r4fsck undo file");
	if (fsize < UNDO_HDR + UNDO_END_LEN || fget(f, hdr, UNDO_HDR, 0) ||
	    get_le(hdr + 28, 4) != crc2(NULL, 0, hdr, 28))
		return bad(err, path, "the header is damaged (checksum)");
	if (fget(f, end, UNDO_END_LEN, fsize - UNDO_END_LEN) ||
	    memcmp(end + 12, UNDO_END, 8))
		return bad(err, path, "incomplete: no closing record (the "
			   "repair that wrote it did not finish, or the file "
			   "was cut)");
	tlen = get_le(end, 8);
	if (tlen < UNDO_TRAILER_FIXED ||
	    tlen > fsize - UNDO_HDR - UNDO_END_LEN)
		return bad(err, path, "the closing record is damaged (length)");
	tstart = fsize - UNDO_END_LEN - tlen;
	t = malloc(tlen);
	if (!t)
		return r4i_fail(err, -ENOMEM, "%s: out of memory", path);
	if (fget(f, t, tlen, tstart) || memcmp(t, UNDO_TRAILER, 8) ||
	    get_le(end + 8, 4) != crc2(NULL, 0, t, tlen)) {
		rc = bad(err, path, "the closing record is damaged (checksum)");
		goto out;
	}
	n = get_le(t + 8, 8);
	post = get_le(t + 16, 8);
	pre = get_le(hdr + 8, 8);
	if (n > (tlen - UNDO_TRAILER_FIXED) / 32 ||
	    tlen != UNDO_TRAILER_FIXED + n * 32) {
		rc = bad(err, path, "the closing record is damaged (record "
			 "count)");
		goto out;
	}
	if (pre < FMT_MASTER_OFFSET + UNDO_UNIT || pre > post) {
		rc = bad(err, path, "the header's device size is impossible");
		goto out;
	}
	r = calloc(n ? n : 1, sizeof(*r));
	buf = malloc(UNDO_UNIT);
	if (!r || !buf) {
		rc = r4i_fail(err, -ENOMEM, "%s: out of memory", path);
		goto out;
	}
	pos = UNDO_HDR;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t off, len;

		if (pos + UNDO_REC > tstart || fget(f, rh, UNDO_REC, pos)) {
			rc = bad(err, path, "truncated (fewer records than "
				 "the closing record counts)");
			goto out;
		}
		off = get_le(rh, 8);
		len = get_le(rh + 8, 4);
		if (len == 0 || len > UNDO_UNIT || off % UNDO_UNIT ||
		    off + len > post || pos + UNDO_REC + len > tstart ||
		    fget(f, buf, len, pos + UNDO_REC) ||
		    get_le(rh + 12, 4) != crc2(rh, 12, buf, len)) {
			char what[96];

			snprintf(what, sizeof(what), "record %llu is damaged",
				 (unsigned long long)i);
			rc = bad(err, path, what);
			goto out;
		}
		r[i] = (struct urec){ off, pos + UNDO_REC, (uint32_t)len };
		pos += UNDO_REC + len;
	}
	if (pos != tstart)
		rc = bad(err, path, "damaged (bytes between the last record "
			 "and the closing record)");
out:
	free(buf);
	if (rc) {
		free(r);
		free(t);
		return rc;
	}
	*recs = r;
	*nrec = n;
	*trailer = t;
	return 0;
}

/* Does every block the file will restore hold what the repair left?
 * (Or, once an --undo began writing, that or its old bytes.) */
static int check_state(struct io_dev *dev, FILE *f, const char *path,
		       const char *image, const uint8_t *t,
		       const struct urec *r, uint64_t n, int applying,
		       struct r4_error *err)
{
	uint8_t uuid[FMT_UUID_SIZE], sum[32], *buf = malloc(UNDO_UNIT);
	struct fmt_sha256 c;
	int rc;

	if (!buf)
		return r4i_fail(err, -ENOMEM, "%s: out of memory", path);
	rc = identity(dev, dev->size, uuid, sum);
	if (rc) {
		rc = r4i_fail(err, rc, "%s: cannot read the super blocks",
			     image);
		goto out;
	}
	if (!applying && memcmp(uuid, t + 24, FMT_UUID_SIZE)) {
		rc = r4i_fail(err, R4_EINVAL, "%s: the undo file %s belongs to "
			     "another volume (another uuid); nothing changed",
			     image, path);
		goto out;
	}
	if (!applying && memcmp(sum, t + 24 + FMT_UUID_SIZE, 32)) {
		rc = r4i_fail(err, R4_EINVAL, "%s: changed since the repair "
			     "that wrote %s (its super block differs from what "
			     "the repair left): refused, nothing changed",
			     image, path);
		goto out;
	}
	for (uint64_t i = 0; i < n; i++) {
		const uint8_t *want = t + UNDO_TRAILER_FIXED + i * 32;
		int same;

		rc = unit_sum(dev, r[i].off, r[i].len, sum);
		if (rc) {
			rc = r4i_fail(err, rc, "%s: cannot read block %llu",
				     image, (unsigned long long)
				     (r[i].off / UNDO_UNIT));
			goto out;
		}
		same = !memcmp(sum, want, 32);
		if (!same && applying) {	/* put back already? */
			uint8_t old[32];

			if (fget(f, buf, r[i].len, r[i].at)) {
				rc = bad(err, path, "cannot be read");
				goto out;
			}
			fmt_sha256_init(&c);
			fmt_sha256_update(&c, buf, r[i].len);
			fmt_sha256_final(&c, old);
			same = !memcmp(sum, old, 32);
		}
		if (!same) {
			rc = r4i_fail(err, R4_EINVAL, "%s: changed since the "
				     "repair that wrote %s (block %llu no "
				     "longer holds what the repair left): "
				     "refused, nothing changed", image, path,
				     (unsigned long long)(r[i].off / UNDO_UNIT));
			goto out;
		}
	}
out:
	free(buf);
	return rc;
}

/* Mark the file: an --undo is writing (a rerun after a cut then takes
 * blocks already put back). */
static int set_applying(FILE *f, uint8_t *hdr)
{
	put_le(hdr + 16, get_le(hdr + 16, 4) | UNDO_APPLYING, 4);
	put_le(hdr + 28, crc2(NULL, 0, hdr, 28), 4);
	if (fseeko(f, 0, SEEK_SET) || fwrite(hdr, 1, UNDO_HDR, f) != UNDO_HDR ||
	    fflush(f) || fsync(fileno(f)))
		return -1;
	return 0;
}

int r4_undo_apply(const char *undo_path, const char *image,
		  uint64_t *units, unsigned lock, struct r4_error *err)
{
	uint8_t hdr[UNDO_HDR], *buf = malloc(UNDO_UNIT), *t = NULL;
	struct io_dev *dev = NULL;
	struct urec *r = NULL;
	FILE *f = fopen(undo_path, "r+b");
	uint64_t n = 0, pre, post;
	int rc = 0, applying;

	*units = 0;
	if (!buf || !f) {
		rc = r4i_fail(err, buf ? -errno : -ENOMEM, "%s: %s",
			     undo_path, buf ? strerror(errno)
					    : "out of memory");
		goto out;
	}
	rc = load(f, undo_path, hdr, &r, &n, &t, err);
	if (rc)
		goto out;
	pre = get_le(hdr + 8, 8);
	post = get_le(t + 16, 8);
	applying = (get_le(hdr + 16, 4) & UNDO_APPLYING) != 0;
	rc = io_open(image, IO_RDWR | io_lock_flags(lock &
		     ~(unsigned)R4_OPEN_NOLOCK), &dev, NULL, err);
	if (rc)
		goto out;
	if (dev->size != post && !(applying && dev->size == pre)) {
		rc = r4i_fail(err, R4_EINVAL, "%s: %llu bytes, but the repair "
			     "that wrote %s left %llu: changed since, refused, "
			     "nothing changed", image,
			     (unsigned long long)dev->size, undo_path,
			     (unsigned long long)post);
		goto out;
	}
	if (dev->is_blkdev && pre != post) {
		rc = r4i_fail(err, R4_EINVAL, "%s: a block device cannot be "
			     "cut back to %llu bytes", image,
			     (unsigned long long)pre);
		goto out;
	}
	rc = check_state(dev, f, undo_path, image, t, r, n, applying, err);
	if (rc)
		goto out;
	if (!applying && set_applying(f, hdr)) {
		rc = r4i_fail(err, -EIO, "%s: cannot write the undo file; "
			     "nothing changed", undo_path);
		goto out;
	}
	for (uint64_t i = 0; i < n && !rc; i++) {
		if (fget(f, buf, r[i].len, r[i].at)) {
			rc = r4i_fail(err, -EIO, "%s: cannot read record %llu",
				     undo_path, (unsigned long long)i);
			break;
		}
		rc = io_write(dev, buf, r[i].len, r[i].off, err);
		if (!rc)
			(*units)++;
	}
	if (!rc && dev->size > pre)
		rc = io_resize(dev, pre, err);
	if (!rc)
		rc = io_sync(dev, err);
out:
	if (dev)
		io_close(dev);
	if (f)
		fclose(f);
	free(buf);
	free(r);
	free(t);
	return rc;
}
