/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the entry encoder (see encode.h). */
#include "config.h"
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include "libimage/obj/encode.h"
#include "libimage/util/err.h"
#include "r4/util.h"
#include "format/plugin.h"

#define ENC_MAJOR_MAX 0xfffu	/* 12 bits above a 20-bit minor */
#define ENC_MINOR_MAX 0xfffffu

/* ---- attributes --------------------------------------------------------- */

uint32_t enc_type_bits(enum r4_entry_type t)
{
	switch (t) {
	case R4_ENT_REG: return S_IFREG;
	case R4_ENT_DIR: return S_IFDIR;
	case R4_ENT_SYMLINK: return S_IFLNK;
	case R4_ENT_CHR: return S_IFCHR;
	case R4_ENT_BLK: return S_IFBLK;
	case R4_ENT_FIFO: return S_IFIFO;
	case R4_ENT_SOCK: return S_IFSOCK;
	case R4_ENT_HARDLINK: return 0;
	}
	return 0;
}

void enc_entry_attr(const struct r4_entry *e, struct r4_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->mode = enc_type_bits(e->type) | (e->mode & 07777);
	a->uid = e->uid;
	a->gid = e->gid;
	a->atime = e->atime;
	a->mtime = e->mtime;
	a->ctime = e->ctime;
	a->atime_ns = e->atime_ns;
	a->mtime_ns = e->mtime_ns;
	a->ctime_ns = e->ctime_ns;
	a->rdev_major = e->rdev_major;
	a->rdev_minor = e->rdev_minor;
}

uint32_t enc_time(int64_t t, uint32_t ns, uint32_t *ns_out)
{
	if (t < 0 || t > (int64_t)UINT32_MAX || ns >= 1000000000u) {
		*ns_out = 0;
		return t < 0 ? 0 : t > (int64_t)UINT32_MAX ? UINT32_MAX :
		       (uint32_t)t;
	}
	*ns_out = ns;
	return (uint32_t)t;
}

void enc_attr(const struct r4_attr *a, uint32_t type, struct enc_attr *out)
{
	out->mode = (type ? type : a->mode & S_IFMT) | (a->mode & 07777);
	out->uid = a->uid;
	out->gid = a->gid;
	out->atime = enc_time(a->atime, a->atime_ns, &out->atime_ns);
	out->mtime = enc_time(a->mtime, a->mtime_ns, &out->mtime_ns);
	out->ctime = enc_time(a->ctime, a->ctime_ns, &out->ctime_ns);
}

void enc_implicit_dir(uint32_t uid, uint32_t gid, uint32_t now,
		      struct r4_attr *out)
{
	memset(out, 0, sizeof(*out));
	out->mode = S_IFDIR | 0755;
	out->uid = uid;
	out->gid = gid;
	out->atime = out->mtime = out->ctime = now;
}

/* ---- stat data ---------------------------------------------------------- */

void enc_stat(const struct enc_attr *a, struct fmt_stat *st)
{
	memset(st, 0, sizeof(*st));
	st->mask = 1u << FMT_SDEXT_LW | 1u << FMT_SDEXT_UNIX;
	if (a->atime_ns || a->mtime_ns || a->ctime_ns)
		st->mask |= 1u << FMT_SDEXT_LT;
	st->mode = (uint16_t)a->mode;
	st->nlink = 1;
	st->uid = a->uid;
	st->gid = a->gid;
	st->atime = a->atime;
	st->mtime = a->mtime;
	st->ctime = a->ctime;
	st->atime_ns = a->atime_ns;
	st->mtime_ns = a->mtime_ns;
	st->ctime_ns = a->ctime_ns;
}

void enc_stat_symlink(struct fmt_stat *st, const char *target, size_t len)
{
	st->mask |= 1u << FMT_SDEXT_SYMLINK;
	st->symlink = (const uint8_t *)target;
	st->symlink_len = len;
	st->size = len;
	st->rdev_or_bytes = 0;	/* what fsck.reiser4 expects */
}

uint64_t enc_rdev(uint32_t major, uint32_t minor)
{
	return (uint64_t)major << 20 | minor;
}

void enc_stat_dir(struct fmt_stat *st, enum fmt_key_policy pol)
{
	st->nlink = 2;
	st->size = 2;
	st->rdev_or_bytes = enc_entry_bytes(pol, 1) + enc_entry_bytes(pol, 2);
}

/* ---- checks ------------------------------------------------------------- */

size_t enc_symlink_max(size_t max_item)
{
	size_t sd = 2 + FMT_SDEXT_LW_SIZE + FMT_SDEXT_UNIX_SIZE +
		    FMT_SDEXT_LT_SIZE + 1;

	return max_item > sd ? max_item - sd : 0;
}

int enc_check_symlink(const char *path, const char *target,
		      size_t max_item, struct r4_error *err)
{
	size_t max = enc_symlink_max(max_item);

	if (!target || !*target)
		return r4i_fail(err, R4_EINVAL, "%s: symlink without a target",
			       path);
	if (strlen(target) > max)
		return r4i_fail(err, R4_ERANGE, "%s: symlink target of %zu "
			       "bytes is longer than %zu", path,
			       strlen(target), max);
	return 0;
}

int enc_check_rdev(const char *path, uint32_t major, uint32_t minor,
		   struct r4_error *err)
{
	if (major > ENC_MAJOR_MAX || minor > ENC_MINOR_MAX)
		return r4i_fail(err, R4_ERANGE, "%s: device %u:%u does not fit "
			       "(major < %u, minor < %u)", path, major, minor,
			       ENC_MAJOR_MAX + 1, ENC_MINOR_MAX + 1);
	return 0;
}

int enc_check_entry(const struct r4_entry *e, size_t max_item,
		    struct r4_error *err)
{
	if (!e->path)
		return r4i_fail(err, R4_EINVAL, "an entry without a path");
	switch (e->type) {
	case R4_ENT_SYMLINK:
		return enc_check_symlink(e->path, e->target, max_item, err);
	case R4_ENT_HARDLINK:
		if (!e->target || !*e->target)
			return r4i_fail(err, R4_EINVAL, "%s: hard link without "
				       "a target", e->path);
		return 0;
	case R4_ENT_CHR: case R4_ENT_BLK:
		return enc_check_rdev(e->path, e->rdev_major, e->rdev_minor,
				      err);
	case R4_ENT_REG: case R4_ENT_DIR: case R4_ENT_FIFO: case R4_ENT_SOCK:
		return 0;
	}
	return r4i_fail(err, R4_EINVAL, "%s: unknown entry type %d", e->path,
		       (int)e->type);
}

long enc_next_name(const char **p, const char **name)
{
	const char *s = *p;
	size_t n;

	for (;;) {
		while (*s == '/')
			s++;
		n = strcspn(s, "/");
		if (n == 1 && s[0] == '.') {
			s++;
			continue;
		}
		break;
	}
	*name = s;
	*p = s + n;
	if (n == 2 && s[0] == '.' && s[1] == '.')
		return -1;
	return (long)n;
}

int enc_check_name(const char *path, size_t n, struct r4_error *err)
{
	if (n > ENC_NAME_MAX)
		return r4i_fail(err, R4_EINVAL, "%s: a name is longer than %d "
			       "bytes", path, ENC_NAME_MAX);
	return 0;
}

int enc_dotdot(const char *path, struct r4_error *err)
{
	return r4i_fail(err, R4_EINVAL, "%s: '..' in a path", path);
}

/* ---- directory entries -------------------------------------------------- */

size_t enc_entry_bytes(enum fmt_key_policy pol, size_t len)
{
	return fmt_cde40_entry_bytes(pol, fmt_entry_name_stored(pol, len) ?
				     len : 0);
}

void enc_cde_entry(struct fmt_cde40_entry *e, enum fmt_key_policy pol,
		   const struct fmt_key *k, const struct fmt_key *target,
		   const char *name, size_t len)
{
	memset(e, 0, sizeof(*e));
	e->ordering = k->el[1];
	e->objectid = k->el[2];
	e->offset = k->el[3];
	e->target = *target;
	if (fmt_entry_name_stored(pol, len)) {
		e->name = (const uint8_t *)name;
		e->name_len = len;
	}
}

/* ---- file bodies -------------------------------------------------------- */

int enc_tails(unsigned policy, uint32_t blksize, uint64_t size)
{
	switch (policy) {
	case FMT_POLICY_EXTENTS:
		return 0;
	case FMT_POLICY_TAILS:
		return 1;
	default:	/* smart: the kernel's "4blocks" */
		return size <= 4 * (uint64_t)blksize;
	}
}

int enc_unit_add(struct enc_units *s, uint64_t start, uint64_t width)
{
	struct fmt_extent40_unit *l = s->n ? &s->u[s->n - 1] : NULL;

	if (!width)
		return 0;
	if (l && ((!start && !l->start) ||
		  (start && l->start && l->start + l->width == start))) {
		l->width += width;
		return 0;
	}
	if (R4_RESERVE(s->u, s->cap, s->n + 1, 8))
		return -ENOMEM;
	s->u[s->n].start = start;
	s->u[s->n++].width = width;
	return 0;
}

uint64_t enc_units_bytes(const struct enc_units *s, uint32_t blksize)
{
	uint64_t n = 0;

	for (size_t i = 0; i < s->n; i++)
		n += s->u[i].start ? s->u[i].width * blksize : 0;
	return n;
}

int enc_chunk_next(r4_data_fn fn, void *ctx, const char *path,
		   uint64_t *off, const void **buf, size_t *len,
		   struct r4_error *err)
{
	int rc = fn ? fn(ctx, off, buf, len, err) : 0;

	if (rc < 0)
		return r4i_fail(err, rc, "%s: cannot read the data: %s", path,
			       r4_strerror(rc));
	return rc;
}

int enc_chunk_check(const char *path, uint64_t size, uint64_t pos,
		    uint64_t off, size_t len, struct r4_error *err)
{
	if (off < pos)
		return r4i_fail(err, R4_EINVAL, "%s: data chunk at offset %llu "
			       "is out of order", path,
			       (unsigned long long)off);
	if (off > size || len > size - off)
		return r4i_fail(err, R4_EINVAL, "%s: data is longer than its "
			       "size (%llu bytes)", path,
			       (unsigned long long)size);
	return 0;
}

int enc_data_empty(r4_data_fn fn, void *ctx, const char *path,
		   struct r4_error *err)
{
	const void *buf;
	size_t len = 0;
	uint64_t off = 0;
	int rc = enc_chunk_next(fn, ctx, path, &off, &buf, &len, err);

	if (rc > 0 && len)
		return enc_chunk_check(path, 0, 0, off, len, err);
	return rc < 0 ? rc : 0;
}
