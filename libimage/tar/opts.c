/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: archive options: id maps, exclusion patterns, time clamp, and
 * path cleaning. */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "libimage/util/err.h"
#include "libimage/tar/tar.h"

void r4_archive_opts_init(struct r4_archive_opts *o)
{
	memset(o, 0, sizeof(*o));
}

void r4_archive_opts_free(struct r4_archive_opts *o)
{
	if (!o)
		return;
	free(o->uid_map);
	free(o->gid_map);
	for (size_t i = 0; i < o->exclude_len; i++)
		free(o->exclude[i]);
	free(o->exclude);
	o->uid_map = o->gid_map = NULL;
	o->exclude = NULL;
	o->uid_map_len = o->gid_map_len = o->exclude_len = 0;
}

static int parse_id(const char *s, char **end, uint32_t *out)
{
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, end, 10);
	if (errno || v > UINT32_MAX)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

int r4_archive_add_idmap(struct r4_archive_opts *o, int gid,
			 const char *spec, struct r4_error *err)
{
	struct r4_id_pair **map = gid ? &o->gid_map : &o->uid_map;
	size_t *len = gid ? &o->gid_map_len : &o->uid_map_len;
	const char *p = spec;

	for (;;) {
		struct r4_id_pair pr, *grown;
		char *end;

		if (parse_id(p, &end, &pr.from) || *end != ':' ||
		    parse_id(end + 1, &end, &pr.to) ||
		    (*end && *end != ','))
			return r4i_fail(err, R4_EINVAL, "'%s' is not an id map "
				       "(FROM:TO[,FROM:TO...], decimal ids)",
				       spec);
		grown = realloc(*map, (*len + 1) * sizeof(**map));
		if (!grown)
			return r4i_fail(err, -ENOMEM, "id map: out of memory");
		*map = grown;
		(*map)[(*len)++] = pr;
		if (!*end)
			return 0;
		p = end + 1;
	}
}

int r4_archive_skip_file(struct r4_archive_opts *o, const char *path,
			 struct r4_error *err)
{
	struct stat st;

	if (stat(path, &st))
		return 0;
	for (size_t i = 0; i < o->skip_len; i++)
		if (o->skip[i].dev == (uint64_t)st.st_dev &&
		    o->skip[i].ino == (uint64_t)st.st_ino)
			return 0;	/* named already */
	if (o->skip_len == sizeof(o->skip) / sizeof(o->skip[0]))
		return r4i_fail(err, R4_ERANGE, "%s: too many files to leave "
			       "out", path);
	o->skip[o->skip_len].dev = (uint64_t)st.st_dev;
	o->skip[o->skip_len++].ino = (uint64_t)st.st_ino;
	return 0;
}

int r4_archive_add_exclude(struct r4_archive_opts *o, const char *pattern,
			   struct r4_error *err)
{
	char **grown, *copy;

	if (!*pattern)
		return r4i_fail(err, R4_EINVAL, "empty exclude pattern");
	grown = realloc(o->exclude, (o->exclude_len + 1) * sizeof(*grown));
	if (!grown)
		return r4i_fail(err, -ENOMEM, "exclude: out of memory");
	o->exclude = grown;
	if (!(copy = strdup(pattern)))
		return r4i_fail(err, -ENOMEM, "exclude: out of memory");
	o->exclude[o->exclude_len++] = copy;
	return 0;
}

char *tar_path_clean(const char *in, int *flags)
{
	size_t n = strlen(in);
	char *out = malloc(n + 1), *q = out;
	const char *p = in;

	*flags = 0;
	if (!out)
		return NULL;
	if (*p == '/')
		*flags |= TAR_PATH_ABS;
	while (*p) {
		const char *c = p;
		size_t len;

		while (*p && *p != '/')
			p++;
		len = (size_t)(p - c);
		while (*p == '/')
			p++;
		if (!len || (len == 1 && c[0] == '.'))
			continue;
		if (len == 2 && c[0] == '.' && c[1] == '.')
			*flags |= TAR_PATH_DOTDOT;
		if (q != out)
			*q++ = '/';
		memcpy(q, c, len);
		q += len;
	}
	*q = '\0';
	return out;
}

static int match_runs(const char *pat, const char *path)
{
	size_t n = strlen(path);
	char *buf = malloc(n + 1);
	int hit = 0;

	if (!buf)
		return 0;
	for (size_t s = 0; s < n && !hit; s++) {
		if (s && path[s - 1] != '/')
			continue;
		for (size_t e = s + 1; e <= n && !hit; e++) {
			if (e < n && path[e] != '/')
				continue;
			memcpy(buf, path + s, e - s);
			buf[e - s] = '\0';
			hit = !fnmatch(pat, buf, 0);
		}
	}
	free(buf);
	return hit;
}

int tar_excluded(const struct r4_archive_opts *o, const char *path)
{
	for (size_t i = 0; i < o->exclude_len; i++)
		if (match_runs(o->exclude[i], path))
			return 1;
	return 0;
}

static uint32_t map_id(const struct r4_id_pair *map, size_t len, uint32_t id)
{
	for (size_t i = 0; i < len; i++)
		if (map[i].from == id)
			return map[i].to;
	return id;
}

static void clamp(const struct r4_archive_opts *o, int64_t *t, uint32_t *ns)
{
	if (*t > o->mtime_clamp ||
	    (*t == o->mtime_clamp && *ns)) {
		*t = o->mtime_clamp;
		*ns = 0;
	}
}

void tar_apply_opts(const struct r4_archive_opts *o, struct r4_entry *e)
{
	if (o->all_root) {
		e->uid = e->gid = 0;
	} else {
		e->uid = map_id(o->uid_map, o->uid_map_len, e->uid);
		e->gid = map_id(o->gid_map, o->gid_map_len, e->gid);
	}
	if (o->clamp_mtime) {
		clamp(o, &e->mtime, &e->mtime_ns);
		clamp(o, &e->atime, &e->atime_ns);
		clamp(o, &e->ctime, &e->ctime_ns);
	}
}

void tar_warn(const struct r4_archive_opts *o, const char *fmt, ...)
{
	char line[R4_ERRMSG_MAX];
	va_list ap;

	if (!o->warn)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	o->warn(o->cb_ctx, line);
}
