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
#include "r4/repair.h"
#include "libimage/io/undo.h"
#include "libimage/repair/undofile.h"
#include "libimage/txn/txn.h"
#include "libimage/util/err.h"
#include "format/sha256.h"
#include "format/super.h"

#define put_le io_undo_put_le
#define get_le io_undo_get_le
#define fget undo_fget
#define bad undo_bad
#define load rep_undo_load
#define set_applying rep_undo_set_applying
#define write_plan rep_undo_write_plan

/* Is dev the volume the file t belongs to, in the state the repair left
 * (its uuid and the sum of its super blocks)? Once an --undo began
 * writing (applying), the blocks alone decide. sum: 32 bytes of room. */
static int check_identity(struct io_dev *dev, const char *path,
			  const char *image, const uint8_t *t, int applying,
			  uint8_t *sum, struct r4_error *err)
{
	uint8_t uuid[FMT_UUID_SIZE];
	int rc = io_undo_identity(dev, dev->size, uuid, sum);

	if (rc)
		return r4i_fail(err, rc, "%s: cannot read the super blocks",
				image);
	if (!applying && memcmp(uuid, t + 24, FMT_UUID_SIZE))
		return r4i_fail(err, R4_EINVAL, "%s: the undo file %s belongs "
				"to another volume (another uuid); nothing "
				"changed", image, path);
	if (!applying && memcmp(sum, t + 24 + FMT_UUID_SIZE, 32))
		return r4i_fail(err, R4_EINVAL, "%s: changed since the repair "
				"that wrote %s (its super block differs from "
				"what the repair left): refused, nothing "
				"changed", image, path);
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
	uint8_t sum[32], *buf = malloc(UNDO_UNIT);
	struct fmt_sha256 c;
	int rc;

	if (!buf)
		return r4i_fail(err, -ENOMEM, "%s: out of memory", path);
	rc = check_identity(dev, path, image, t, applying, sum, err);
	if (rc)
		goto out;
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

/* The blocks to restore in pr (*nb of them, ascending): the records'
 * units, then the journal blocks no record holds, x (*nx of them: kept
 * as they are now, their bytes saved in the plan; an earlier run's plan
 * names them). A short unit: R4_EUNSUPP in why. */
static int list_blocks(struct r4_vol *vol, const struct urec *r, uint64_t n,
		       const struct plan *p, struct pair *pr, size_t *nb,
		       uint64_t *x, size_t *nx, struct r4_error *why)
{
	uint32_t bs = vol->blksize;
	uint64_t jh = fmt_blk_journal_header(bs), jf = fmt_blk_journal_footer(bs);
	int have_jh = 0, have_jf = 0;

	for (uint64_t i = 0; i < n; i++) {
		if (r[i].len != UNDO_UNIT)
			return r4i_fail(why, R4_EUNSUPP, "%s: a short unit at "
					"the end of the device", vol->dev->path);
		pr[(*nb)++] = (struct pair){ r[i].off / UNDO_UNIT, r[i].at, -1 };
		have_jh |= r[i].off / UNDO_UNIT == jh;
		have_jf |= r[i].off / UNDO_UNIT == jf;
	}
	if (p->present) {
		*nx = p->nx;
		memcpy(x, p->blk + p->ns, *nx * sizeof(*x));
	} else {
		if (!have_jh)
			x[(*nx)++] = jh;
		if (!have_jf)
			x[(*nx)++] = jf;
	}
	for (size_t i = 0; i < *nx; i++)
		pr[(*nb)++] = (struct pair){ x[i], AT_DEV, (int)i };
	qsort(pr, *nb, sizeof(*pr), cmp_pair);
	return 0;
}

/* The sorted pairs pr into blk and at; a block twice: the file is bad. */
static int unpair(const char *path, const struct pair *pr, size_t nb,
		  uint64_t *blk, uint64_t *at, struct r4_error *err)
{
	for (size_t i = 0; i < nb; i++) {
		blk[i] = pr[i].blk;
		at[i] = pr[i].at;
		if (i && blk[i] == blk[i - 1])
			return bad(err, path, "a block is restored twice");
	}
	return 0;
}

/* No plan yet: pick the scratch blocks for tr (txn_restore_plan;
 * R4_EUNSUPP or R4_ENOSPC with the reason in why: nothing written) and
 * append them with the extra blocks x as the plan p to the undo file. */
static int make_plan(struct r4_vol *vol, FILE *f, const char *path,
		     uint8_t *hdr, const struct txn_restore *tr,
		     const uint64_t *x, size_t nx, struct plan *p,
		     struct r4_error *why, struct r4_error *err)
{
	uint64_t *scratch = NULL;
	size_t ns = 0;
	int rc = txn_restore_plan(vol, tr, &scratch, &ns, why);

	if (rc == R4_EUNSUPP || rc == R4_ENOSPC)
		return rc;
	if (rc) {
		*err = *why;
		return rc;
	}
	p->blk = malloc((ns + nx) * sizeof(*p->blk));
	if (!p->blk) {
		free(scratch);
		return r4i_fail(err, -ENOMEM, "%s: out of memory", path);
	}
	memcpy(p->blk, scratch, ns * sizeof(*scratch));
	memcpy(p->blk + ns, x, nx * sizeof(*x));
	free(scratch);
	p->ns = ns;
	p->nx = nx;
	return write_plan(f, path, hdr, vol->dev, p, err);
}

/* With the plan p in the file: the bytes of the extra blocks (at, by
 * pr's order) and of the scratch blocks (*sat) are in it; a scratch
 * block that is also restored: the plan is bad. */
static int locate(const char *path, const struct plan *p,
		  const struct pair *pr, size_t nb, const uint64_t *blk,
		  uint64_t *at, uint64_t **satp, struct r4_error *err)
{
	size_t ns = p->ns;
	uint64_t *sat;

	for (size_t i = 0; i < nb; i++)
		if (pr[i].extra >= 0)
			at[i] = p->data_at + (ns + (size_t)pr[i].extra) *
					     UNDO_UNIT;
	sat = *satp = malloc((ns ? ns : 1) * sizeof(*sat));
	if (!sat)
		return r4i_fail(err, -ENOMEM, "%s: out of memory", path);
	for (size_t i = 0; i < ns; i++) {
		sat[i] = p->data_at + i * UNDO_UNIT;
		for (size_t k = 0; k < nb; k++)
			if (blk[k] == p->blk[i])
				return bad(err, path, "the restore plan names "
					   "a restored block as scratch");
	}
	return 0;
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
	struct pair *pr = calloc(n + 2, sizeof(*pr));
	uint64_t *blk = calloc(n + 2, sizeof(*blk));
	uint64_t *at = calloc(n + 2, sizeof(*at)), *sat = NULL, x[2];
	size_t nb = 0, nx = 0;
	int rc = 0;
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
	rc = list_blocks(vol, r, n, p, pr, &nb, x, &nx, why);
	if (!rc)
		rc = unpair(path, pr, nb, blk, at, err);
	if (rc)
		goto out;
	tr = (struct txn_restore){ nb, blk, old_bytes, &c, limit };
	if (!p->present)
		rc = make_plan(vol, f, path, hdr, &tr, x, nx, p, why, err);
	if (!rc)
		rc = locate(path, p, pr, nb, blk, at, &sat, err);
	if (rc)
		goto out;
	c.sat = sat;
	/* a cut after the commit point of an earlier run: replay first */
	if (vol->jh.last_committed_tx != vol->jf.last_flushed_tx) {
		unsigned replayed;

		rc = txn_replay(vol, &replayed, err);
		if (rc)
			goto out;
	}
	rc = txn_restore_run(vol, &tr, p->blk, p->ns, scratch_bytes, err);
out:
	free(pr);
	free(blk);
	free(at);
	free(sat);
	return rc;
}

/* The volume image opened read-write (*vol, its device *dev), or when it
 * does not open as one, the raw device (*raw, *dev; why the volume did
 * not open in why). */
static int open_target(const char *image, const struct r4_open_opts *open,
		       struct r4_vol **vol, struct io_dev **raw,
		       struct io_dev **dev, struct r4_error *why,
		       struct r4_error *err)
{
	struct r4_error verr = { 0 };
	struct r4_open_opts o = { 0 };
	int rc;

	if (open)
		o = *open;
	o.flags = R4_OPEN_RDWR | (o.flags & ~(unsigned)(R4_OPEN_NOLOCK |
							R4_OPEN_NO_REPLAY |
							R4_OPEN_FORCE));
	rc = vol_open(image, &o, vol, &verr);

	if (rc == R4_EBUSY) {
		*err = verr;
		return rc;
	}
	if (!rc) {
		*dev = (*vol)->dev;
		return 0;
	}
	*why = verr;
	rc = io_open_opts(image, IO_RDWR, &o, raw, NULL, err);
	if (!rc)
		*dev = *raw;
	return rc;
}

/* The device is as big as the repair left it (or, once an --undo began
 * writing, as big as before the repair), and can be cut back. */
static int check_size(struct io_dev *dev, const char *path,
		      const char *image, uint64_t pre, uint64_t post,
		      int applying, struct r4_error *err)
{
	if (dev->size != post && !(applying && dev->size == pre))
		return r4i_fail(err, R4_EINVAL, "%s: %llu bytes, but the "
				"repair that wrote %s left %llu: changed since, "
				"refused, nothing changed", image,
				(unsigned long long)dev->size, path,
				(unsigned long long)post);
	if (dev->fixed && pre != post)
		return r4i_fail(err, R4_EINVAL, "%s: a block device or window "
				"cannot be cut back to %llu bytes", image,
				(unsigned long long)pre);
	return 0;
}

/* Put the n records back unit by unit (buf: room for one unit), after
 * flagging the file as being applied; info->units counts them. */
static int unit_by_unit(FILE *f, const char *path, uint8_t *hdr,
			struct io_dev *dev, const struct urec *r, uint64_t n,
			uint8_t *buf, struct r4_undo_info *info,
			struct r4_error *err)
{
	int rc = 0;

	if (!(get_le(hdr + 16, 4) & UNDO_APPLYING) && set_applying(f, hdr))
		return r4i_fail(err, -EIO, "%s: cannot write the undo file; "
				"nothing changed", path);
	for (uint64_t i = 0; i < n && !rc; i++) {
		if (fget(f, buf, r[i].len, r[i].at))
			return r4i_fail(err, -EIO, "%s: cannot read record %llu",
					path, (unsigned long long)i);
		rc = io_write(dev, buf, r[i].len, r[i].off, err);
		if (!rc)
			info->units++;
	}
	return rc;
}

/* The undo file being applied, loaded and checked whole. */
struct ufile {
	FILE *f;
	const char *path;
	uint8_t hdr[UNDO_HDR], *t;	/* header, trailer */
	struct urec *r;
	uint64_t n;
	struct plan plan;
};

/* Put the blocks back onto dev (vol: the volume on it, or NULL): as one
 * journaled step when the volume opened and no unit-by-unit --undo was
 * cut before, else (or when the journal cannot carry it: the reason in
 * why, then in info) unit by unit; then cut the device back to pre
 * bytes. */
static int put_back(struct r4_vol *vol, struct io_dev *dev, struct ufile *u,
		    const char *image, uint64_t pre, int applying,
		    uint8_t *buf, struct r4_error *why,
		    struct r4_undo_info *info, struct r4_error *err)
{
	int rc = 0;

	if (vol && applying && !u->plan.present) {
		/* an --undo (unit by unit) was cut: go on the same way */
		why->code = R4_EUNSUPP;
		snprintf(why->msg, sizeof(why->msg), "%s: an earlier --undo "
			 "of it wrote unit by unit", image);
	}
	if (vol && !why->code) {
		rc = one_step(vol, u->f, u->path, u->hdr, u->r, u->n, &u->plan,
			      (pre < dev->size ? pre : dev->size) / UNDO_UNIT,
			      why, err);
		if (rc && rc != R4_EUNSUPP && rc != R4_ENOSPC)
			return rc;
		info->one_step = !rc;
		info->units = rc ? 0 : u->n;
		rc = 0;
	}
	if (!info->one_step) {
		snprintf(info->why, sizeof(info->why), "%s", why->msg);
		rc = unit_by_unit(u->f, u->path, u->hdr, dev, u->r, u->n, buf,
				  info, err);
	}
	if (!rc && dev->size > pre)
		rc = io_resize(dev, pre, err);
	if (!rc)
		rc = io_sync(dev, err);
	return rc;
}

int r4_undo_apply(const char *undo_path, const char *image,
		  struct r4_undo_info *info, const struct r4_open_opts *open,
		  struct r4_error *err)
{
	uint8_t *buf = malloc(UNDO_UNIT);
	struct ufile u = { .f = fopen(undo_path, "r+b"), .path = undo_path };
	struct r4_error why = { 0 };
	struct r4_vol *vol = NULL;
	struct io_dev *dev = NULL, *raw = NULL;
	uint64_t pre, post, skip = UINT64_MAX, skip2 = UINT64_MAX;
	int rc = 0, applying;

	memset(info, 0, sizeof(*info));
	if (!buf || !u.f) {
		rc = r4i_fail(err, buf ? -errno : -ENOMEM, "%s: %s",
			     undo_path, buf ? strerror(errno)
					    : "out of memory");
		goto out;
	}
	rc = load(u.f, undo_path, u.hdr, &u.r, &u.n, &u.t, &u.plan, err);
	if (rc)
		goto out;
	pre = get_le(u.hdr + 8, 8);
	post = get_le(u.t + 16, 8);
	applying = (get_le(u.hdr + 16, 4) & UNDO_APPLYING) != 0;
	rc = open_target(image, open, &vol, &raw, &dev, &why, err);
	if (!rc)
		rc = check_size(dev, undo_path, image, pre, post, applying, err);
	if (rc)
		goto out;
	if (vol && applying && u.plan.present) {
		skip = fmt_blk_journal_header(vol->blksize) * vol->blksize;
		skip2 = fmt_blk_journal_footer(vol->blksize) * vol->blksize;
	}
	rc = check_state(dev, u.f, undo_path, image, u.t, u.r, u.n, applying,
			 skip, skip2, err);
	if (!rc)
		rc = put_back(vol, dev, &u, image, pre, applying, buf, &why,
			      info, err);
out:
	if (vol)
		vol_free(vol);
	if (raw)
		io_close(raw);
	if (u.f)
		fclose(u.f);
	free(buf);
	free(u.r);
	free(u.t);
	free(u.plan.blk);
	return rc;
}
