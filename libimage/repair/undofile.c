/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the undo file as r4_undo_apply reads and extends it
 * (undofile.h; format in libimage/io/undo.h). */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "libimage/io/undo.h"
#include "libimage/repair/undofile.h"
#include "libimage/util/err.h"
#include "format/checksum.h"
#include "format/super.h"

#define put_le io_undo_put_le
#define get_le io_undo_get_le
#define crc2 io_undo_crc
#define fget undo_fget
#define bad undo_bad

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

/* The header: the size of the file (*fsize), the magic, the header's
 * checksum. */
static int load_header(FILE *f, const char *path, uint8_t *hdr,
		       uint64_t *fsize, struct r4_error *err)
{
	off_t sz;

	if (fseeko(f, 0, SEEK_END) || (sz = ftello(f)) < 0)
		return r4i_fail(err, -EIO, "%s: cannot read", path);
	*fsize = (uint64_t)sz;
	if (*fsize < 8 || fget(f, hdr, 8, 0))
		return bad(err, path, "not an r4fsck undo file");
	if (!memcmp(hdr, UNDO_MAGIC_V1, 8))
		return bad(err, path, "an undo file of format 1 (R4UNDO01), "
			   "made by an older r4fsck: it records neither the "
			   "volume nor the state it belongs to, so it cannot "
			   "be checked and is refused");
	if (memcmp(hdr, UNDO_MAGIC, 8))
		return bad(err, path, "not an r4fsck undo file");
	if (*fsize < UNDO_HDR + UNDO_END_LEN || fget(f, hdr, UNDO_HDR, 0) ||
	    get_le(hdr + 28, 4) != crc2(NULL, 0, hdr, 28))
		return bad(err, path, "the header is damaged (checksum)");
	return 0;
}

/* The closing record that ends at fsize: the trailer (*trailer, from
 * *tstart) whole, its record count (*n), and the device sizes the header
 * and the trailer name. */
static int load_trailer(FILE *f, const char *path, const uint8_t *hdr,
			uint64_t fsize, uint8_t **trailer, uint64_t *tstart,
			uint64_t *n, struct r4_error *err)
{
	uint8_t end[UNDO_END_LEN], *t;
	uint64_t tlen, pre, post;
	int rc;

	if (fget(f, end, UNDO_END_LEN, fsize - UNDO_END_LEN) ||
	    memcmp(end + 12, UNDO_END, 8))
		return bad(err, path, "incomplete: no closing record (the "
			   "repair that wrote it did not finish, or the file "
			   "was cut)");
	tlen = get_le(end, 8);
	if (tlen < UNDO_TRAILER_FIXED ||
	    tlen > fsize - UNDO_HDR - UNDO_END_LEN)
		return bad(err, path, "the closing record is damaged (length)");
	*tstart = fsize - UNDO_END_LEN - tlen;
	t = malloc(tlen);
	if (!t)
		return r4i_fail(err, -ENOMEM, "%s: out of memory", path);
	if (fget(f, t, tlen, *tstart) || memcmp(t, UNDO_TRAILER, 8) ||
	    get_le(end + 8, 4) != crc2(NULL, 0, t, tlen)) {
		rc = bad(err, path, "the closing record is damaged (checksum)");
		goto out;
	}
	*n = get_le(t + 8, 8);
	post = get_le(t + 16, 8);
	pre = get_le(hdr + 8, 8);
	if (*n > (tlen - UNDO_TRAILER_FIXED) / 32 ||
	    tlen != UNDO_TRAILER_FIXED + *n * 32) {
		rc = bad(err, path, "the closing record is damaged (record "
			 "count)");
		goto out;
	}
	if (pre < FMT_MASTER_OFFSET + UNDO_UNIT || pre > post) {
		rc = bad(err, path, "the header's device size is impossible");
		goto out;
	}
	*trailer = t;
	return 0;
out:
	free(t);
	return rc;
}

/* The n records from UNDO_HDR up to tstart (*recs), each whole, within
 * the device size post the trailer t names, and nothing after them. */
static int load_records(FILE *f, const char *path, const uint8_t *t,
			uint64_t n, uint64_t tstart, struct urec **recs,
			struct r4_error *err)
{
	uint8_t rh[UNDO_REC], *buf = malloc(UNDO_UNIT);
	uint64_t pos = UNDO_HDR, post = get_le(t + 16, 8);
	struct urec *r = calloc(n ? n : 1, sizeof(*r));
	int rc = 0;

	if (!r || !buf) {
		rc = r4i_fail(err, -ENOMEM, "%s: out of memory", path);
		goto out;
	}
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
	if (rc)
		free(r);
	else
		*recs = r;
	return rc;
}

int rep_undo_load(FILE *f, const char *path, uint8_t *hdr,
		  struct urec **recs, uint64_t *nrec, uint8_t **trailer,
		  struct plan *plan, struct r4_error *err)
{
	uint64_t fsize = 0, tstart = 0, n = 0, base;
	uint8_t *t = NULL;
	int rc = load_header(f, path, hdr, &fsize, err);

	if (rc)
		return rc;
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
	rc = load_trailer(f, path, hdr, fsize, &t, &tstart, &n, err);
	if (rc)
		return rc;
	rc = load_records(f, path, t, n, tstart, recs, err);
	if (rc) {
		free(t);
		return rc;
	}
	*nrec = n;
	*trailer = t;
	return 0;
}

static int put_hdr(FILE *f, uint8_t *hdr)
{
	put_le(hdr + 28, crc2(NULL, 0, hdr, 28), 4);
	if (fseeko(f, 0, SEEK_SET) || fwrite(hdr, 1, UNDO_HDR, f) != UNDO_HDR ||
	    fflush(f) || fsync(fileno(f)))
		return -1;
	return 0;
}

int rep_undo_set_applying(FILE *f, uint8_t *hdr)
{
	put_le(hdr + 16, get_le(hdr + 16, 4) | UNDO_APPLYING, 4);
	return put_hdr(f, hdr);
}

/* Cut the file back to its base length and seek there; the first time,
 * the file's length now becomes the base, recorded in the header. 0 or
 * -1. */
static int at_base(FILE *f, uint8_t *hdr, uint64_t *basep)
{
	uint64_t base = get_le(hdr + 20, 8);
	off_t sz;

	if (!base) {
		if (fflush(f) || fseeko(f, 0, SEEK_END) || (sz = ftello(f)) < 0)
			return -1;
		base = (uint64_t)sz;
		put_le(hdr + 20, base, 8);
		if (put_hdr(f, hdr))
			return -1;
	}
	*basep = base;
	if (fflush(f) || ftruncate(fileno(f), (off_t)base) ||
	    fseeko(f, (off_t)base, SEEK_SET))
		return -1;
	return 0;
}

int rep_undo_write_plan(FILE *f, const char *path, uint8_t *hdr,
			struct io_dev *dev, struct plan *p,
			struct r4_error *err)
{
	uint64_t base, nb = p->ns + p->nx;
	uint8_t h[24], *buf = malloc(UNDO_UNIT);
	uint32_t c = ~0u;
	int rc = 0;

	if (!buf)
		return r4i_fail(err, -ENOMEM, "%s: out of memory", path);
	if (at_base(f, hdr, &base))
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
