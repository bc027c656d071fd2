/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the headers of an uncompressed tar file read here, without
 * libarchive. Only the header blocks are needed (the build takes file
 * data from where it lies): each is read in a 16 KiB window from a
 * header not in the last one, so small files' bytes between headers
 * come along but larger files' are skipped. The entries are what
 * libarchive 3.6 makes of the same headers (ustar, GNU, pax 'x' and 'g',
 * GNU long names 'L' and 'K'); a header this reader does not take
 * exactly as libarchive does (another type, sparse files, ACLs,
 * charsets, pax texts not in ASCII, a damaged or short header, anything
 * unexpected) ends this reader's part: libarchive, which has read the
 * archive from its start, skips the entries taken here and reads the
 * rest itself, its state between headers its own (read.c). Every field
 * is bounds-checked; a value this reader cannot parse strictly goes to
 * libarchive, which says what is wrong.
 *
 * What libarchive carries from header to header is followed here:
 * whether its format is pax (a ustar hard link's size then counts:
 * o->pax) and whether it has read a link text (an empty one is then "",
 * not none: o->linked). An entry with an empty link field and a link
 * from a pax linkpath or a 'K' header before any link text was read
 * libarchive 3.6 takes without its link: left to it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "libimage/util/err.h"
#include "libimage/util/tmpfiles.h"
#include "libimage/tar/tar.h"

#define OWN_WIN (16u << 10)	/* bytes read at a header not in the window */
#define OWN_BODY_MAX (1u << 20)	/* libarchive refuses longer 'L' 'K' 'x' 'g' */
#define OWN_SPECIALS 8		/* special headers before one entry, at most */
#define OWN_CHUNK (64u << 10)	/* data handed to the build at a time */

enum { OWN_ENTRY, OWN_END, OWN_ODD };

/* One entry's header sequence as it is parsed. */
struct own_hdr {
	int type;		/* R4_ENT_* */
	char tflag, gnu;
	char name[257], link[101];
	const char *path, *target;
	uint64_t size, data;	/* data: bytes after the header */
	int64_t uid, gid, t[3];	/* t: mtime, atime, ctime */
	uint32_t ns[3], mode;
	int tset[3];		/* atime, ctime given */
	uint64_t rmaj, rmin;
	unsigned nx;		/* SCHILY.xattr records */
	const char *xfirst;	/* the last one's name (libarchive's first) */
	int caps, x, l, k;	/* 'x', 'L', 'K' seen */
	int plink;		/* a pax linkpath seen */
	int linked;		/* o->linked before this header */
};

static int blank(const uint8_t *h)
{
	for (size_t i = 0; i < 512; i++)
		if (h[i])
			return 0;
	return 1;
}

/* n bytes at off, in the window or read into it; NULL: fewer there. */
static const uint8_t *own_at(struct tar_own *o, uint64_t off, size_t n)
{
	size_t want = n > OWN_WIN ? n : OWN_WIN;
	ssize_t got;

	if (off >= o->woff && n <= o->wlen && off - o->woff <= o->wlen - n)
		return o->win + (off - o->woff);
	if (want > o->wcap) {
		uint8_t *p = realloc(o->win, want);

		if (!p)
			return NULL;
		o->win = p;
		o->wcap = want;
	}
	do
		got = pread(o->fd, o->win, want, (off_t)off);
	while (got < 0 && errno == EINTR);
	o->woff = off;
	o->wlen = got > 0 ? (size_t)got : 0;
	return got >= 0 && (size_t)got >= n ? o->win : NULL;
}

/* A numeric field as libarchive reads it: octal after blanks, or base
 * 256 (0x80 then big-endian); -1 for what is read strictly elsewhere
 * (signs, other digits after the number, huge values). */
static int own_num(const uint8_t *p, size_t n, uint64_t *v)
{
	size_t i = 0;

	*v = 0;
	if (p[0] == 0x80) {
		for (i = 1; i < n; i++) {
			if (*v >> 54)
				return -1;
			*v = *v << 8 | p[i];
		}
		return 0;
	}
	while (i < n && (p[i] == ' ' || p[i] == '\t'))
		i++;
	for (; i < n && p[i] >= '0' && p[i] <= '7'; i++) {
		if (*v >> 58)
			return -1;
		*v = *v << 3 | (uint64_t)(p[i] - '0');
	}
	return i < n && p[i] && p[i] != ' ' ? -1 : 0;
}

/* The unsigned sum of the header against its field. */
static int own_sum(const uint8_t *h)
{
	uint64_t want, sum = 8 * ' ';

	for (size_t i = 0; i < 512; i++)
		if (i < 148 || i >= 156)
			sum += h[i];
	for (size_t i = 148; i < 156; i++)
		if (h[i] && h[i] != ' ' && (h[i] < '0' || h[i] > '7'))
			return -1;
	return own_num(h + 148, 8, &want) || want != sum ? -1 : 0;
}

/* A pax text: printable ASCII only (libarchive converts pax texts from
 * UTF-8 to the locale's charset and may warn; the names of ustar and
 * GNU headers it takes as they are, outside Windows). */
static int own_ascii(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			return -1;
	return 0;
}

/* Decimal (pax): 1 to 18 digits, nothing else. */
static int own_dec(const char *s, uint64_t *v)
{
	size_t i;

	*v = 0;
	for (i = 0; s[i] >= '0' && s[i] <= '9'; i++) {
		if (i == 18)
			return -1;
		*v = *v * 10 + (uint64_t)(s[i] - '0');
	}
	return i && !s[i] ? 0 : -1;
}

/* A pax time: seconds, then '.' and digits of which 9 count. */
static int own_time(const char *s, int64_t *t, uint32_t *ns)
{
	char sec[20];
	size_t i = strspn(s, "0123456789");
	uint64_t v;
	uint32_t m = 100000000;

	if (!i || i > 18 || (s[i] && s[i] != '.'))
		return -1;
	memcpy(sec, s, i);
	sec[i] = 0;
	if (own_dec(sec, &v))
		return -1;
	*t = (int64_t)v;
	*ns = 0;
	if (!s[i])
		return 0;
	for (s += i + 1; *s >= '0' && *s <= '9'; s++, m /= 10)
		*ns += m * (uint32_t)(*s - '0');
	return *s ? -1 : 0;
}

/* One pax record's key and value (NUL-terminated, vlen bytes). */
static int pax_key(struct own_hdr *e, const char *key, char *val,
		   size_t vlen)
{
	static const char *const ignored[] = { "uname", "gname", "comment",
		"charset", "SCHILY.dev", "SCHILY.ino", "SCHILY.nlink" };
	uint64_t v;

	if (!strncmp(key, "SCHILY.xattr.", 13) && key[13]) {
		e->nx++;
		e->xfirst = key + 13;
		e->caps |= !strcmp(key + 13, "security.capability");
		return 0;
	}
	if (strlen(val) != vlen)
		return -1;
	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
		if (!strcmp(key, ignored[i]))
			return own_ascii(val);
	if (!strcmp(key, "path") || !strcmp(key, "linkpath")) {
		e->plink |= key[0] == 'l';
		if (own_ascii(val))
			return -1;
		if (*val)
			*(key[0] == 'p' ? &e->path : &e->target) = val;
		return 0;
	}
	if (!strcmp(key, "mtime") || !strcmp(key, "atime") ||
	    !strcmp(key, "ctime")) {
		int i = key[0] == 'm' ? 0 : key[0] == 'a' ? 1 : 2;

		e->tset[i] = 1;
		return own_time(val, &e->t[i], &e->ns[i]);
	}
	if (own_dec(val, &v))
		return -1;
	if (!strcmp(key, "size"))
		e->data = v;
	else if (!strcmp(key, "uid"))
		e->uid = (int64_t)v;
	else if (!strcmp(key, "gid"))
		e->gid = (int64_t)v;
	else if (!strcmp(key, "SCHILY.devmajor"))
		e->rmaj = v;
	else if (!strcmp(key, "SCHILY.devminor"))
		e->rmin = v;
	else
		return -1;
	return 0;
}

/* The records "LEN KEY=VALUE\n" of a pax body (n bytes, in place). */
static int pax_parse(struct own_hdr *e, char *p, size_t n)
{
	while (n) {
		size_t len = 0, i = 0;
		char *eq;

		for (; i < n && p[i] != ' '; i++) {
			if (p[i] < '0' || p[i] > '9' || len > 99999)
				return -1;
			len = len * 10 + (size_t)(p[i] - '0');
		}
		if (i >= n || len > n || len <= i + 2 || p[len - 1] != '\n' ||
		    p[i + 1] == '=')
			return -1;
		p[len - 1] = 0;
		eq = memchr(p + i + 1, '=', len - i - 2);
		if (!eq || memchr(p + i + 1, 0, (size_t)(eq - p) - i - 1))
			return -1;
		*eq = 0;
		if (pax_key(e, p + i + 1, eq + 1, (size_t)(p + len - 1 - eq - 1)))
			return -1;
		p += len;
		n -= len;
	}
	return 0;
}

/* A special header's body (size bytes at off) kept in *buf. */
static int own_body(struct tar_own *o, uint64_t off, uint64_t size,
		    char **buf)
{
	const uint8_t *b;
	char *p;

	if (size > OWN_BODY_MAX ||
	    !(b = own_at(o, off, (size_t)(size + 511) & ~(size_t)511)) ||
	    !(p = realloc(*buf, (size_t)size + 1)))
		return -1;
	memcpy(p, b, (size_t)size);
	p[size] = 0;
	*buf = p;
	return 0;
}

/* The names of a ustar or GNU header (libarchive's: a ustar prefix
 * joined with a '/'; a GNU header has none). */
static void own_names(const uint8_t *h, struct own_hdr *e)
{
	size_t n = 0, p = e->gnu ? 0 : strnlen((const char *)h + 345, 155);

	if (p) {
		memcpy(e->name, h + 345, p);
		n = p;
		if (e->name[n - 1] != '/')
			e->name[n++] = '/';
	}
	p = strnlen((const char *)h, 100);
	memcpy(e->name + n, h, p);
	e->name[n + p] = 0;
	p = strnlen((const char *)h + 157, 100);
	memcpy(e->link, h + 157, p);
	e->link[p] = 0;
}

/* The type, and the bytes of data after the header as libarchive skips
 * them (a hard link's size counts in pax archives only; a ustar one
 * outside pax libarchive decides by looking ahead: not here). */
static int own_type(struct tar_own *o, struct own_hdr *e, uint64_t size)
{
	static const char flags[] = "0\0" "1" "2" "3" "4" "5" "6";
	static const int types[] = { R4_ENT_REG, R4_ENT_REG, R4_ENT_HARDLINK,
		R4_ENT_SYMLINK, R4_ENT_CHR, R4_ENT_BLK, R4_ENT_DIR,
		R4_ENT_FIFO };
	size_t i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (e->tflag == flags[i])
			break;
	if (i == sizeof(types) / sizeof(types[0]))
		return -1;
	e->type = types[i];
	e->data = e->type == R4_ENT_REG ? size : 0;
	if (e->type == R4_ENT_HARDLINK && size && !e->gnu) {
		if (!o->pax)
			return -1;
		e->data = size;
	}
	return 0;
}

/* The fields of the entry's own header h. */
static int own_fields(struct tar_own *o, const uint8_t *h,
		      struct own_hdr *e)
{
	uint64_t mode, uid, gid, size, t[3] = { 0, 0, 0 };

	e->gnu = !memcmp(h + 257, "ustar  ", 8);
	if (!e->gnu && memcmp(h + 257, "ustar", 5))
		return -1;
	if (e->gnu)
		o->pax = 0;
	if (own_num(h + 100, 8, &mode) || own_num(h + 108, 8, &uid) ||
	    own_num(h + 116, 8, &gid) || own_num(h + 124, 12, &size) ||
	    own_num(h + 136, 12, &t[0]))
		return -1;
	if (e->gnu && (h[386] || h[483] || own_num(h + 345, 12, &t[1]) ||
		       own_num(h + 357, 12, &t[2])))
		return -1;
	e->tflag = (char)h[156];
	if ((e->tflag == '3' || e->tflag == '4') &&
	    (own_num(h + 329, 8, &e->rmaj) || own_num(h + 337, 8, &e->rmin)))
		return -1;
	e->mode = (uint32_t)mode & 07777;
	e->uid = (int64_t)uid;
	e->gid = (int64_t)gid;
	for (int i = 0; i < 3; i++) {
		e->t[i] = (int64_t)t[i];
		e->tset[i] = t[i] > 0;
	}
	own_names(h, e);
	return own_type(o, e, size);
}

/* The last component starts with "._" (libarchive reads a Mac OS
 * metadata blob there). */
static int own_mac(const char *p)
{
	const char *b = p;

	for (; *p; p++)
		if (p[0] == '/' && p[1])
			b = p + 1;
	return b[0] == '.' && b[1] == '_' && b[2];
}

/* The names and overrides after the header: pax records, then long
 * names; what libarchive would take differently is odd. */
static int own_finish(struct tar_own *o, struct own_hdr *e)
{
	int link = e->type == R4_ENT_SYMLINK || e->type == R4_ENT_HARDLINK;
	size_t n;

	e->path = e->name;
	e->target = link ? e->link : NULL;
	if (e->x) {
		if ((e->l || e->k) || pax_parse(e, o->pbuf, o->plen))
			return -1;
	}
	if (e->l)
		e->path = o->lbuf;
	if (e->k)
		e->target = o->kbuf;
	o->linked |= e->plink;
	/* an empty link is "" once libarchive has read one (o->linked),
	 * else none, which libarchive takes as it will (the mode's type) */
	if ((e->target && !link) ||
	    (link && (!e->target || (!*e->target && !e->linked))))
		return -1;
	/* libarchive 3.6 drops a link read only from a linkpath or 'K'
	 * when the header's own field is empty and no link was read */
	if (link && !e->link[0] && !e->linked)
		return -1;
	n = strlen(e->path);
	if (!n || own_mac(e->path))
		return -1;
	if (e->path[n - 1] == '/' && (e->type == R4_ENT_REG ||
				      (e->type == R4_ENT_HARDLINK && e->data)))
		return -1;
	if (e->type == R4_ENT_REG || e->type == R4_ENT_HARDLINK)
		e->size = e->data;
	return 0;
}

/* A special header ('x', 'g', 'L', 'K') h at pos: its body kept. */
static int own_special(struct tar_own *o, const uint8_t *h, uint64_t pos,
		       struct own_hdr *e)
{
	char t = (char)h[156];	/* h is in the window own_body reads over */
	uint64_t size;
	int *seen;
	char **buf;

	if (own_num(h + 124, 12, &size) || size > OWN_BODY_MAX)
		return -1;
	if (t == 'g') {
		o->pax = 1;
		return pos + 512 + ((size + 511) & ~511ull) > o->size ? -1 : 0;
	}
	seen = t == 'x' ? &e->x : t == 'L' ? &e->l : &e->k;
	buf = t == 'x' ? &o->pbuf : t == 'L' ? &o->lbuf : &o->kbuf;
	if (*seen || own_body(o, pos + 512, size, buf))
		return -1;
	*seen = 1;
	if (t == 'x') {
		o->pax = 1;
		o->plen = (size_t)size;
	}
	return 0;
}

/* The header sequence of one entry at *pos: OWN_ENTRY (then *pos is
 * the next one's and *data where its data lies), OWN_END or OWN_ODD. */
static int own_seq(struct tar_own *o, uint64_t *pos, struct own_hdr *e,
		   uint64_t *data)
{
	uint64_t at = *pos, size;
	const uint8_t *h;

	memset(e, 0, sizeof(*e));
	for (int n = 0;; n++) {
		if (!(h = own_at(o, at, 512)))
			return !n && at == o->size ? OWN_END : OWN_ODD;
		if (!h[0] && blank(h))
			return n ? OWN_ODD : OWN_END;
		if (!h[0] || own_sum(h) || n == OWN_SPECIALS)
			return OWN_ODD;
		if (!strchr("xgLK", h[156]) || !h[156])
			break;
		if (own_num(h + 124, 12, &size) || own_special(o, h, at, e))
			return OWN_ODD;
		at += 512 + ((size + 511) & ~511ull);
	}
	e->linked = o->linked;
	o->linked |= h[157] != 0;
	if (own_fields(o, h, e) || own_finish(o, e))
		return OWN_ODD;
	*data = at + 512;
	size = (e->data + 511) & ~511ull;
	if (e->data > o->size || size > o->size - *data)
		return OWN_ODD;
	*pos = *data + size;
	return OWN_ENTRY;
}

/* Data of an entry read from the archive file (for a build that does
 * not take it from where it lies: compressed files, hard links with
 * data). */
struct own_data {
	const struct tar_own *o;
	const char *entry;
	uint64_t off, size, next;
	uint8_t *buf;
};

static int own_data_fn(void *ctx, uint64_t *off, const void **buf,
		       size_t *len, struct r4_error *err)
{
	struct own_data *d = ctx;
	size_t n = d->size - d->next > OWN_CHUNK ? OWN_CHUNK :
		   (size_t)(d->size - d->next);
	int rc;

	if (!n)
		return 0;
	if (!d->buf && !(d->buf = malloc(OWN_CHUNK)))
		return r4i_fail(err, -ENOMEM, "%s: out of memory",
			       d->o->s->source);
	rc = r4i_pread_all(d->o->fd, d->buf, n, d->off + d->next);
	if (rc)
		return r4i_fail(err, rc, "%s: '%s': %s", d->o->s->source,
			       d->entry, rc == -EIO ? "the input ends early "
			       "(truncated?)" : strerror(-rc));
	*off = d->next;
	*buf = d->buf;
	*len = n;
	d->next += n;
	return 1;
}

/* The entry e, its data at off, into the sink (as arc_entry does). */
static int own_deliver(struct tar_own *o, const struct own_hdr *h,
		       uint64_t off, struct r4_error *err)
{
	struct tar_sink *s = o->s;
	struct r4_entry e = { .path = h->path, .type = h->type };
	struct own_data d = { .o = o, .entry = h->path, .off = off,
			      .size = h->size };
	size_t n;
	int rc;

	s->pend_caps = h->caps;
	s->pend_xattrs = h->nx;
	snprintf(s->pend_xattr, sizeof(s->pend_xattr), "%s",
		 h->xfirst ? h->xfirst : "ACL");
	e.mode = h->mode;
	e.uid = tar_arc_id(s, "uid", h->path, h->uid);
	e.gid = tar_arc_id(s, "gid", h->path, h->gid);
	e.mtime = e.atime = e.ctime = h->t[0];
	e.mtime_ns = e.atime_ns = e.ctime_ns = h->ns[0];
	if (h->tset[1]) {
		e.atime = h->t[1];
		e.atime_ns = h->ns[1];
	}
	if (h->tset[2]) {
		e.ctime = h->t[2];
		e.ctime_ns = h->ns[2];
	}
	e.target = h->target;
	if (e.type == R4_ENT_CHR || e.type == R4_ENT_BLK) {
		e.rdev_major = (uint32_t)h->rmaj;
		e.rdev_minor = (uint32_t)h->rmin;
	}
	if (e.type == R4_ENT_REG || (e.type == R4_ENT_HARDLINK && h->size)) {
		e.size = h->size;
		e.data = own_data_fn;
		e.data_ctx = &d;
		if (e.type == R4_ENT_REG && e.size) {
			e.data_file = s->source;
			e.data_fd = o->fd;
			e.data_off = off;
		}
	}
	n = strnlen(h->path, TAR_LAST_LEN - 1);	/* snprintf's, faster */
	memcpy(o->last, h->path, n);
	o->last[n] = 0;
	(*o->count)++;
	rc = tar_sink_add(s, &e, err);
	free(d.buf);
	if (s->opts->progress && s->src_size)
		s->opts->progress(s->opts->cb_ctx, off + h->size, s->src_size);
	return rc;
}

int tar_own_run(struct tar_own *o, uint64_t pos, struct r4_error *err)
{
	struct own_hdr h;
	uint64_t data;
	int rc = 0;

	while (!rc) {
		int r = own_seq(o, &pos, &h, &data);

		if (r == OWN_END)
			break;
		if (r == OWN_ODD) {
			o->hand = pos;
			return 1;
		}
		rc = own_deliver(o, &h, data, err);
	}
	return rc ? rc : tar_sink_finish(o->s, err);
}

void tar_own_free(struct tar_own *o)
{
	free(o->win);
	free(o->pbuf);
	free(o->lbuf);
	free(o->kbuf);
	o->win = NULL;
	o->pbuf = o->lbuf = o->kbuf = NULL;
}

int tar_own_scan(int fd, uint64_t size, int (*fn)(void *ctx,
		 const struct tar_own_ent *e), void *ctx, int *end,
		 uint64_t *hand)
{
	struct tar_own o = { .fd = fd, .size = size };
	struct own_hdr h;
	uint64_t pos = 0, data;
	int n = 0, r;

	while ((r = own_seq(&o, &pos, &h, &data)) == OWN_ENTRY) {
		struct tar_own_ent e = { .path = h.path, .target = h.target,
			.type = h.type, .size = h.size, .data_off = data,
			.next = pos, .mode = h.mode, .uid = h.uid,
			.gid = h.gid, .mtime = h.t[0], .mtime_ns = h.ns[0],
			.atime = h.t[1], .atime_ns = h.ns[1],
			.ctime = h.t[2], .ctime_ns = h.ns[2],
			.aset = h.tset[1], .cset = h.tset[2], .rmaj = h.rmaj,
			.rmin = h.rmin, .nx = h.nx };

		n++;
		if (fn(ctx, &e))
			break;
	}
	*end = r == OWN_END;
	*hand = pos;
	tar_own_free(&o);
	return n;
}
