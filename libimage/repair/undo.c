/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: r4_undo_apply (r4fsck --undo): check an undo file (format in
 * libimage/io/undo.h) against the volume, then put its blocks back as one
 * crash-safe step through the journal (txn_restore_run), or, when the
 * journal cannot carry it, unit by unit. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "r4/repair.h"
#include "libimage/io/undo.h"
#include "libimage/txn/txn.h"
#include "libimage/util/err.h"
#include "format/checksum.h"
#include "format/sha256.h"
#include "format/super.h"

#define put_le io_undo_put_le
#define get_le io_undo_get_le
#define crc2 io_undo_crc

/* One record of a file being applied. */
struct urec {
	uint64_t off, at;	/* on the device; of its bytes in the file */
	uint32_t len;
};

/* The restore plan of an earlier --undo (or none). */
struct plan {
	int present;
	uint64_t ns, nx;	/* scratch blocks, extra blocks */
	uint64_t *blk;		/* ns scratch, then nx extra */
	uint64_t data_at;	/* file offset of blk[0]'s bytes */
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

/* The plan at base..fsize: checked whole. */
static int load_plan(FILE *f, const char *path, uint64_t base,
		     uint64_t fsize, struct plan *p, struct r4_error *err)
{
	uint8_t h[24], *buf = malloc(UNDO_UNIT);
	uint64_t nb, len, pos;
	uint32_t c = ~0u;
	int rc = 0;

	if (!buf)
		return r4i_fail(err, -ENOMEM, "%s: out of memory", path);
	if (fsize - base < sizeof(h) + 4 || fget(f, h, sizeof(h), base) ||
	    memcmp(h, UNDO_PLAN, 8)) {
		rc = bad(err, path, "the restore plan of an earlier --undo is "
			 "damaged");
		goto out;
	}
	p->ns = get_le(h + 8, 8);
	p->nx = get_le(h + 16, 8);
	nb = p->ns + p->nx;
	len = fsize - base - sizeof(h) - 4;
	if (p->ns > len / UNDO_UNIT || p->nx > 2 || nb * (8 + UNDO_UNIT) != len) {
		rc = bad(err, path, "the restore plan of an earlier --undo is "
			 "damaged (its size)");
		goto out;
	}
	p->blk = malloc((nb ? nb : 1) * sizeof(*p->blk));
	if (!p->blk) {
		rc = r4i_fail(err, -ENOMEM, "%s: out of memory", path);
		goto out;
	}
	c = fmt_crc32c_raw(c, h, sizeof(h));
	pos = base + sizeof(h);
	for (uint64_t i = 0; i < nb; i++, pos += 8) {
		if (fget(f, buf, 8, pos)) {
			rc = bad(err, path, "cannot be read");
			goto out;
		}
		c = fmt_crc32c_raw(c, buf, 8);
		p->blk[i] = get_le(buf, 8);
	}
	p->data_at = pos;
	for (uint64_t i = 0; i < nb; i++, pos += UNDO_UNIT) {
		if (fget(f, buf, UNDO_UNIT, pos)) {
			rc = bad(err, path, "cannot be read");
			goto out;
		}
		c = fmt_crc32c_raw(c, buf, UNDO_UNIT);
	}
	if (fget(f, buf, 4, pos) || get_le(buf, 4) != (uint32_t)~c) {
		rc = bad(err, path, "the restore plan of an earlier --undo is "
			 "damaged (checksum)");
		goto out;
	}
	p->present = 1;
out:
	free(buf);
	return rc;
}

/* Parse and verify the whole file: header, records and trailer (and the
 * plan, when the header says one is there). */
static int load(FILE *f, const char *path, uint8_t *hdr, struct urec **recs,
		uint64_t *nrec, uint8_t **trailer, struct plan *plan,
		struct r4_error *err)
{
	uint8_t end[UNDO_END_LEN], rh[UNDO_REC], *buf = NULL, *t = NULL;
	uint64_t fsize, tlen, tstart, n = 0, pos, pre, post, base;
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
	/* the records and the trailer end at the base length, when an
	 * --undo recorded one (a plan may follow) */
	base = get_le(hdr + 20, 8);
	if (base && (base > fsize || base < UNDO_HDR + UNDO_END_LEN))
		return bad(err, path, "the header is damaged (length)");
	if (base && (get_le(hdr + 16, 4) & UNDO_HAS_PLAN)) {
		rc = load_plan(f, path, base, fsize, plan, err);
		if (rc)
			return rc;
	}
	if (base)
		fsize = base;
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
 * (Or, once an --undo began writing, that or its old bytes; with its
 * plan, the units at skip1 and skip2 (the journal header and footer)
 * anything: the journal decides.) */
static int check_state(struct io_dev *dev, FILE *f, const char *path,
		       const char *image, const uint8_t *t,
		       const struct urec *r, uint64_t n, int applying,
		       uint64_t skip1, uint64_t skip2, struct r4_error *err)
{
	uint8_t uuid[FMT_UUID_SIZE], sum[32], *buf = malloc(UNDO_UNIT);
	struct fmt_sha256 c;
	int rc;

	if (!buf)
		return r4i_fail(err, -ENOMEM, "%s: out of memory", path);
	rc = io_undo_identity(dev, dev->size, uuid, sum);
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

		if (r[i].off == skip1 || r[i].off == skip2)
			continue;
		rc = io_undo_unit_sum(dev, r[i].off, r[i].len, sum);
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

static int put_hdr(FILE *f, uint8_t *hdr)
{
	put_le(hdr + 28, crc2(NULL, 0, hdr, 28), 4);
	if (fseeko(f, 0, SEEK_SET) || fwrite(hdr, 1, UNDO_HDR, f) != UNDO_HDR ||
	    fflush(f) || fsync(fileno(f)))
		return -1;
	return 0;
}

/* Mark the file: an --undo is writing (a rerun after a cut then takes
 * blocks already put back). */
static int set_applying(FILE *f, uint8_t *hdr)
{
	put_le(hdr + 16, get_le(hdr + 16, 4) | UNDO_APPLYING, 4);
	return put_hdr(f, hdr);
}

/* Append the plan (the scratch blocks s and the extra blocks x with
 * their bytes on dev now) at the base length, then flag it. */
static int write_plan(FILE *f, const char *path, uint8_t *hdr,
		      struct io_dev *dev, struct plan *p,
		      struct r4_error *err)
{
	uint64_t base = get_le(hdr + 20, 8), nb = p->ns + p->nx;
	uint8_t h[24], *buf = malloc(UNDO_UNIT);
	uint32_t c = ~0u;
	off_t sz;
	int rc = 0;

	if (!buf)
		return r4i_fail(err, -ENOMEM, "%s: out of memory", path);
	if (!base) {
		if (fflush(f) || fseeko(f, 0, SEEK_END) || (sz = ftello(f)) < 0)
			goto io;
		base = (uint64_t)sz;
		put_le(hdr + 20, base, 8);
		if (put_hdr(f, hdr))
			goto io;
	}
	if (fflush(f) || ftruncate(fileno(f), (off_t)base) ||
	    fseeko(f, (off_t)base, SEEK_SET))
		goto io;
	memcpy(h, UNDO_PLAN, 8);
	put_le(h + 8, p->ns, 8);
	put_le(h + 16, p->nx, 8);
	c = fmt_crc32c_raw(c, h, sizeof(h));
	if (fwrite(h, 1, sizeof(h), f) != sizeof(h))
		goto io;
	for (uint64_t i = 0; i < nb; i++) {
		put_le(buf, p->blk[i], 8);
		c = fmt_crc32c_raw(c, buf, 8);
		if (fwrite(buf, 1, 8, f) != 8)
			goto io;
	}
	p->data_at = base + sizeof(h) + nb * 8;
	for (uint64_t i = 0; i < nb; i++) {
		rc = dev->ops->pread(dev, buf, UNDO_UNIT, p->blk[i] * UNDO_UNIT);
		if (rc) {
			rc = r4i_fail(err, rc, "%s: cannot read block %llu",
				     dev->path, (unsigned long long)p->blk[i]);
			goto out;
		}
		c = fmt_crc32c_raw(c, buf, UNDO_UNIT);
		if (fwrite(buf, 1, UNDO_UNIT, f) != UNDO_UNIT)
			goto io;
	}
	put_le(buf, ~c, 4);
	if (fwrite(buf, 1, 4, f) != 4 || fflush(f) || fsync(fileno(f)))
		goto io;
	put_le(hdr + 16, get_le(hdr + 16, 4) | UNDO_APPLYING | UNDO_HAS_PLAN,
	       4);
	if (put_hdr(f, hdr))
		goto io;
	p->present = 1;
	goto out;
io:
	rc = r4i_fail(err, -EIO, "%s: cannot write the undo file; nothing "
		     "changed", path);
out:
	free(buf);
	return rc;
}

/* Where the bytes of each block to restore and of each scratch block
 * are: in the undo file, or (an extra block before the plan holds it)
 * on the device. */
#define AT_DEV UINT64_MAX

struct rctx {
	FILE *f;
	const char *path;
	struct io_dev *dev;
	const uint64_t *blk;
	uint64_t *at;		/* per restored block */
	uint64_t *sat;		/* per scratch block */
};

static int rget(struct rctx *c, uint64_t at, uint64_t blk, uint8_t *buf,
		struct r4_error *err)
{
	int rc;

	if (at == AT_DEV) {
		rc = c->dev->ops->pread(c->dev, buf, UNDO_UNIT,
					blk * UNDO_UNIT);
		return rc ? r4i_fail(err, rc, "%s: cannot read block %llu",
				     c->dev->path, (unsigned long long)blk) : 0;
	}
	if (fget(c->f, buf, UNDO_UNIT, at))
		return r4i_fail(err, -EIO, "%s: cannot be read", c->path);
	return 0;
}

static int old_bytes(void *ctx, size_t i, uint8_t *buf, struct r4_error *err)
{
	struct rctx *c = ctx;

	return rget(c, c->at[i], c->blk[i], buf, err);
}

static int scratch_bytes(void *ctx, size_t i, uint8_t *buf,
			 struct r4_error *err)
{
	struct rctx *c = ctx;

	return rget(c, c->sat[i], 0, buf, err);
}

struct pair {
	uint64_t blk, at;
	int extra;		/* -1, or its index among the plan's extras */
};

static int cmp_pair(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;

	return x->blk < y->blk ? -1 : x->blk > y->blk;
}

/* The journaled restore: 0 done; R4_EUNSUPP or R4_ENOSPC with the
 * reason in *why (nothing written to the volume: write unit by unit);
 * else an error. */
static int one_step(struct r4_vol *vol, FILE *f, const char *path,
		    uint8_t *hdr, const struct urec *r, uint64_t n,
		    struct plan *p, uint64_t limit, struct r4_error *why,
		    struct r4_error *err)
{
	uint32_t bs = vol->blksize;
	uint64_t jh = fmt_blk_journal_header(bs), jf = fmt_blk_journal_footer(bs);
	struct pair *pr = calloc(n + 2, sizeof(*pr));
	uint64_t *blk = calloc(n + 2, sizeof(*blk));
	uint64_t *at = calloc(n + 2, sizeof(*at)), *sat = NULL;
	uint64_t *scratch = NULL, x[2];
	size_t nb = 0, ns = 0, nx = 0;
	int have_jh = 0, have_jf = 0, rc = 0;
	struct txn_restore tr;
	struct rctx c = { f, path, vol->dev, blk, at, NULL };

	if (!pr || !blk || !at) {
		rc = r4i_fail(err, -ENOMEM, "%s: out of memory", path);
		goto out;
	}
	if (bs != UNDO_UNIT) {
		rc = r4i_fail(why, R4_EUNSUPP, "%s: blocks of %u bytes",
			     vol->dev->path, bs);
		goto out;
	}
	for (uint64_t i = 0; i < n; i++) {
		if (r[i].len != UNDO_UNIT) {
			rc = r4i_fail(why, R4_EUNSUPP, "%s: a short unit at "
				     "the end of the device", vol->dev->path);
			goto out;
		}
		pr[nb++] = (struct pair){ r[i].off / UNDO_UNIT, r[i].at, -1 };
		have_jh |= r[i].off / UNDO_UNIT == jh;
		have_jf |= r[i].off / UNDO_UNIT == jf;
	}
	/* the journal blocks no record holds are kept as they are now:
	 * saved in the plan */
	if (p->present) {
		nx = p->nx;
		memcpy(x, p->blk + p->ns, nx * sizeof(*x));
	} else {
		if (!have_jh)
			x[nx++] = jh;
		if (!have_jf)
			x[nx++] = jf;
	}
	for (size_t i = 0; i < nx; i++)
		pr[nb++] = (struct pair){ x[i], AT_DEV, (int)i };
	qsort(pr, nb, sizeof(*pr), cmp_pair);
	for (size_t i = 0; i < nb; i++) {
		blk[i] = pr[i].blk;
		at[i] = pr[i].at;
		if (i && blk[i] == blk[i - 1]) {
			rc = bad(err, path, "a block is restored twice");
			goto out;
		}
	}
	tr = (struct txn_restore){ nb, blk, old_bytes, &c, limit };
	if (!p->present) {
		rc = txn_restore_plan(vol, &tr, &scratch, &ns, why);
		if (rc == R4_EUNSUPP || rc == R4_ENOSPC)
			goto out;
		if (rc) {
			*err = *why;
			goto out;
		}
		p->blk = malloc((ns + nx) * sizeof(*p->blk));
		if (!p->blk) {
			rc = r4i_fail(err, -ENOMEM, "%s: out of memory", path);
			goto out;
		}
		memcpy(p->blk, scratch, ns * sizeof(*scratch));
		memcpy(p->blk + ns, x, nx * sizeof(*x));
		p->ns = ns;
		p->nx = nx;
		rc = write_plan(f, path, hdr, vol->dev, p, err);
		if (rc)
			goto out;
	}
	ns = p->ns;
	for (size_t i = 0; i < nb; i++)
		if (pr[i].extra >= 0)
			at[i] = p->data_at + (ns + (size_t)pr[i].extra) *
					     UNDO_UNIT;
	sat = malloc((ns ? ns : 1) * sizeof(*sat));
	if (!sat) {
		rc = r4i_fail(err, -ENOMEM, "%s: out of memory", path);
		goto out;
	}
	for (size_t i = 0; i < ns; i++) {
		sat[i] = p->data_at + i * UNDO_UNIT;
		for (size_t k = 0; k < nb; k++)
			if (blk[k] == p->blk[i]) {
				rc = bad(err, path, "the restore plan names a "
					 "restored block as scratch");
				goto out;
			}
	}
	c.sat = sat;
	/* a cut after the commit point of an earlier run: replay first */
	if (vol->jh.last_committed_tx != vol->jf.last_flushed_tx) {
		unsigned replayed;

		rc = txn_replay(vol, &replayed, err);
		if (rc)
			goto out;
	}
	rc = txn_restore_run(vol, &tr, p->blk, ns, scratch_bytes, err);
out:
	free(pr);
	free(blk);
	free(at);
	free(sat);
	free(scratch);
	return rc;
}

int r4_undo_apply(const char *undo_path, const char *image,
		  struct r4_undo_info *info, unsigned lock,
		  struct r4_error *err)
{
	uint8_t hdr[UNDO_HDR], *buf = malloc(UNDO_UNIT), *t = NULL;
	struct r4_error verr = { 0 }, why = { 0 };
	struct plan plan = { 0 };
	struct r4_vol *vol = NULL;
	struct io_dev *dev = NULL, *raw = NULL;
	struct urec *r = NULL;
	FILE *f = fopen(undo_path, "r+b");
	uint64_t n = 0, pre, post, skip = UINT64_MAX, limit;
	int rc = 0, applying;

	memset(info, 0, sizeof(*info));
	if (!buf || !f) {
		rc = r4i_fail(err, buf ? -errno : -ENOMEM, "%s: %s",
			     undo_path, buf ? strerror(errno)
					    : "out of memory");
		goto out;
	}
	rc = load(f, undo_path, hdr, &r, &n, &t, &plan, err);
	if (rc)
		goto out;
	pre = get_le(hdr + 8, 8);
	post = get_le(t + 16, 8);
	applying = (get_le(hdr + 16, 4) & UNDO_APPLYING) != 0;
	rc = vol_open(image, R4_OPEN_RDWR | (lock & ~(unsigned)R4_OPEN_NOLOCK),
		      &vol, &verr);
	if (rc == R4_EBUSY) {
		*err = verr;
		goto out;
	}
	if (rc) {
		why = verr;
		rc = io_open(image, IO_RDWR | io_lock_flags(lock &
			     ~(unsigned)R4_OPEN_NOLOCK), &raw, NULL, err);
		if (rc)
			goto out;
		dev = raw;
	} else {
		dev = vol->dev;
	}
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
	if (vol && applying && plan.present)
		skip = fmt_blk_journal_header(vol->blksize) * vol->blksize;
	rc = check_state(dev, f, undo_path, image, t, r, n, applying, skip,
			 skip == UINT64_MAX ? skip : fmt_blk_journal_footer(
				 vol->blksize) * vol->blksize, err);
	if (rc)
		goto out;
	limit = (pre < dev->size ? pre : dev->size) / UNDO_UNIT;
	if (vol && applying && !plan.present) {
		/* an --undo (unit by unit) was cut: go on the same way */
		why.code = R4_EUNSUPP;
		snprintf(why.msg, sizeof(why.msg), "%s: an earlier --undo of "
			 "it wrote unit by unit", image);
	}
	if (vol && !why.code) {
		rc = one_step(vol, f, undo_path, hdr, r, n, &plan, limit, &why,
			      err);
		if (!rc) {
			info->one_step = 1;
			info->units = n;
		} else if (rc != R4_EUNSUPP && rc != R4_ENOSPC) {
			goto out;
		}
		rc = 0;
	}
	if (!info->one_step) {
		snprintf(info->why, sizeof(info->why), "%s", why.msg);
		if (!(get_le(hdr + 16, 4) & UNDO_APPLYING) &&
		    set_applying(f, hdr)) {
			rc = r4i_fail(err, -EIO, "%s: cannot write the undo "
				     "file; nothing changed", undo_path);
			goto out;
		}
		for (uint64_t i = 0; i < n && !rc; i++) {
			if (fget(f, buf, r[i].len, r[i].at)) {
				rc = r4i_fail(err, -EIO, "%s: cannot read "
					     "record %llu", undo_path,
					     (unsigned long long)i);
				break;
			}
			rc = io_write(dev, buf, r[i].len, r[i].off, err);
			if (!rc)
				info->units++;
		}
	}
	if (!rc && dev->size > pre)
		rc = io_resize(dev, pre, err);
	if (!rc)
		rc = io_sync(dev, err);
out:
	if (vol)
		vol_free(vol);
	if (raw)
		io_close(raw);
	if (f)
		fclose(f);
	free(buf);
	free(r);
	free(t);
	free(plan.blk);
	return rc;
}
