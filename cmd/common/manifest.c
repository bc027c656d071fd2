/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: manifests of file contents (r4pack --manifest, r4fsck --verify).
 *
 * A manifest is what sha256sum(1) writes for the volume's regular files
 * seen from its root: "HEX  ./a/b" a line, in byte order of the paths
 * (so `cd EXTRACTED && sha256sum -c MANIFEST` checks an extracted tree).
 * A path holding a newline or a backslash is written as sha256sum does:
 * the line starts with a backslash and the path has them as "\n" and
 * "\\". Reiser4 keeps no checksum of file data; a manifest written when
 * the image is made is how silent damage is found later. */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common.h"
#include "manifest.h"
#include "r4/read.h"
#include "r4/util.h"

struct mline {
	char *path;		/* "./a/b", exact bytes */
	size_t len;
	uint8_t sha[32];
	int seen;		/* verify: met in the volume */
};

struct mlist {
	struct mline *v;
	size_t n, cap;
};

static void mlist_free(struct mlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].path);
	free(l->v);
	l->v = NULL;
	l->n = l->cap = 0;
}

static int mlist_add(struct mlist *l, const char *path, size_t len,
		     const uint8_t sha[32])
{
	struct mline *v;

	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 256;

		if (!(v = realloc(l->v, cap * sizeof(*v))))
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	if (!(l->v[l->n].path = malloc(len + 1)))
		return -ENOMEM;
	memcpy(l->v[l->n].path, path, len);
	l->v[l->n].path[len] = '\0';
	l->v[l->n].len = len;
	memcpy(l->v[l->n].sha, sha, 32);
	l->v[l->n].seen = 0;
	l->n++;
	return 0;
}

static int mline_cmp(const void *a, const void *b)
{
	const struct mline *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->path, y->path, n);

	return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* ---- the volume's side --------------------------------------------------- */

struct msum {
	struct r4_vol *vol;
	struct mlist *out;
	struct r4_error *err;
	const char *image;
	uint64_t unreadable;
	int rc;
};

static int sum_entry(void *ctx, const struct r4_walk_entry *e)
{
	struct msum *m = ctx;
	struct r4_error err = { 0 };
	struct r4_stat st;
	uint8_t sha[32];
	char *p;
	int rc;

	if (e->leave) {
		if (e->error) {
			r4cmd_error(m->err, m->image, e->error);
			m->unreadable++;
		}
		return 0;
	}
	if (r4_stat(m->vol, &e->target, &st, &err)) {
		r4cmd_errorf("%s: %.*s: %s", m->image, (int)e->path_len,
			     e->path, err.msg);
		m->unreadable++;
		return R4_WALK_SKIP;
	}
	if (!S_ISREG(st.mode))
		return e->again ? R4_WALK_SKIP : 0;
	if ((rc = r4_sha256_file(m->vol, &e->target, sha, &err))) {
		r4cmd_errorf("%s: %.*s: %s", m->image, (int)e->path_len,
			     e->path, err.msg);
		m->unreadable++;
		return 0;
	}
	/* "/a/b" from the walk: "./a/b" in the manifest */
	if (!(p = malloc(e->path_len + 2)))
		return -ENOMEM;
	p[0] = '.';
	memcpy(p + 1, e->path, e->path_len);
	rc = mlist_add(m->out, p, e->path_len + 1, sha);
	free(p);
	return rc;
}

/* Every regular file's sum, sorted by path. 0, or an exit-worthy
 * failure said (the volume could not be opened or walked). */
static int volume_sums(const char *image, struct mlist *out,
		       uint64_t *unreadable)
{
	struct r4_error err = { 0 };
	struct r4_vol *vol = NULL;
	struct r4_objref root;
	struct msum m = { 0 };
	int rc;

	if ((rc = r4_vol_open(image, r4cmd_open(R4_OPEN_RDONLY | r4cmd_lock_flags()),
			      &vol, &err))) {
		r4cmd_error(&err, image, rc);
		return rc;
	}
	m.vol = vol;
	m.out = out;
	m.err = &err;
	m.image = image;
	rc = r4_lookup(vol, "/", &root, &err);
	if (!rc)
		rc = r4_walk(vol, &root, "", 0, sum_entry, &m, &err);
	if (rc)
		r4cmd_error(&err, image, rc);
	r4_vol_close(vol, NULL);
	*unreadable = m.unreadable;
	if (!rc)
		qsort(out->v, out->n, sizeof(*out->v), mline_cmp);
	return rc;
}

/* ---- the manifest file --------------------------------------------------- */

static void put_line(FILE *f, const struct mline *l)
{
	int esc = memchr(l->path, '\n', l->len) || memchr(l->path, '\\', l->len);

	if (esc)
		fputc('\\', f);
	for (int i = 0; i < 32; i++)
		fprintf(f, "%02x", l->sha[i]);
	fputs("  ", f);
	for (size_t i = 0; i < l->len; i++) {
		if (esc && l->path[i] == '\n')
			fputs("\\n", f);
		else if (esc && l->path[i] == '\\')
			fputs("\\\\", f);
		else
			fputc(l->path[i], f);
	}
	fputc('\n', f);
}

int r4cmd_manifest_write(const char *image, const char *file)
{
	struct r4_error err = { 0 };
	struct r4_outfile o;
	struct mlist l = { 0 };
	uint64_t bad = 0;
	FILE *f;
	int rc;

	if (volume_sums(image, &l, &bad) || bad) {
		mlist_free(&l);
		r4cmd_errorf("%s: no manifest written", file);
		return -1;
	}
	if ((rc = r4_outfile_open(&o, file, image, 0, 0644, "read", &err))) {
		r4cmd_error(&err, file, rc);
		mlist_free(&l);
		return -1;
	}
	if (!(f = fdopen(dup(o.fd), "w"))) {
		r4cmd_errorf("%s: %s", file, strerror(errno));
		r4_outfile_abort(&o);
		mlist_free(&l);
		return -1;
	}
	for (size_t i = 0; i < l.n; i++)
		put_line(f, &l.v[i]);
	rc = ferror(f) | fflush(f) | fsync(fileno(f));
	fclose(f);
	mlist_free(&l);
	if (rc) {
		r4cmd_errorf("%s: %s", file, strerror(errno));
		r4_outfile_abort(&o);
		return -1;
	}
	if ((rc = r4_outfile_commit(&o, file, &err))) {
		r4cmd_error(&err, file, rc);
		return -1;
	}
	return 0;
}

static int hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' :
	       c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* One manifest line (without its newline) into l: 0, or -1 when it is
 * not one. Paths "/a", "./a" and "a" all name /a. */
static int parse_line(char *s, size_t n, struct mlist *l)
{
	uint8_t sha[32];
	int esc = n && s[0] == '\\';
	size_t i = esc, o;
	char *p;

	if (n < i + 66)
		return -1;
	for (int k = 0; k < 32; k++) {
		int h = hexval(s[i + 2 * k]), lo = hexval(s[i + 2 * k + 1]);

		if (h < 0 || lo < 0)
			return -1;
		sha[k] = (uint8_t)(h << 4 | lo);
	}
	i += 64;
	if (s[i] != ' ' || (s[i + 1] != ' ' && s[i + 1] != '*'))
		return -1;
	i += 2;
	p = s + i;
	n -= i;
	for (size_t k = o = 0; k < n; k++) {
		if (esc && p[k] == '\\' && k + 1 < n &&
		    (p[k + 1] == 'n' || p[k + 1] == '\\')) {
			p[o++] = p[k + 1] == 'n' ? '\n' : '\\';
			k++;
		} else {
			p[o++] = p[k];
		}
	}
	n = o;
	if (n >= 2 && p[0] == '.' && p[1] == '/') {
		p += 1;
		n -= 1;
	} else if (n && p[0] != '/') {
		p -= 1;		/* "a": over the space before it */
		p[0] = '/';
		n += 1;
	}
	if (!n || p[0] != '/')
		return -1;
	p[-1] = '.';
	return mlist_add(l, p - 1, n + 1, sha) ? -2 : 0;
}

static int read_manifest(const char *file, struct mlist *l)
{
	FILE *f = strcmp(file, "-") ? fopen(file, "r") : stdin;
	char *line = NULL;
	size_t cap = 0, no = 0;
	ssize_t n;
	int rc = 0;

	if (!f) {
		r4cmd_errorf("%s: %s", file, strerror(errno));
		return -1;
	}
	while (!rc && (n = getline(&line, &cap, f)) >= 0) {
		no++;
		if (n && line[n - 1] == '\n')
			line[--n] = '\0';
		if (!n)
			continue;
		rc = parse_line(line, (size_t)n, l);
		if (rc == -1)
			r4cmd_errorf("%s: line %zu: not a sha256sum line "
				     "(\"HEX  PATH\")", file, no);
		else if (rc)
			r4cmd_errorf("out of memory");
	}
	if (!rc && ferror(f)) {
		r4cmd_errorf("%s: %s", file, strerror(errno));
		rc = -1;
	}
	free(line);
	if (f != stdin)
		fclose(f);
	if (!rc)
		qsort(l->v, l->n, sizeof(*l->v), mline_cmp);
	return rc ? -1 : 0;
}

static void report(const char *image, const char *what,
		   const struct mline *m, int json)
{
	if (json) {
		/* an item of the "findings" array of r4fsck's object */
		r4cmd_json_item();
		fputs("{\"status\":", stdout);
		r4cmd_json_str(what, strlen(what));
		fputs(",", stdout);
		r4cmd_json_name("path", m->path + 1, m->len - 1);
		fputs("}", stdout);
		return;
	}
	printf("%s: ", image);
	r4cmd_put_escaped(stdout, m->path + 1, m->len - 1, 1);
	printf(": %s\n", what);
}

int r4cmd_manifest_verify(const char *image, const char *file, int json,
			  struct r4cmd_verify *v)
{
	struct mlist want = { 0 }, have = { 0 };
	size_t i = 0, j = 0;

	memset(v, 0, sizeof(*v));
	if (read_manifest(file, &want))
		return -1;
	if (volume_sums(image, &have, &v->unreadable)) {
		mlist_free(&want);
		return -1;
	}
	/* both sorted: a merge */
	while (i < want.n || j < have.n) {
		int c = i == want.n ? 1 : j == have.n ? -1 :
			mline_cmp(&want.v[i], &have.v[j]);

		if (c < 0) {
			v->missing++;
			report(image, "missing", &want.v[i++], json);
		} else if (c > 0) {
			v->added++;
			report(image, "new", &have.v[j++], json);
		} else {
			v->files++;
			if (memcmp(want.v[i].sha, have.v[j].sha, 32)) {
				v->differ++;
				report(image, "contents differ", &have.v[j],
				       json);
			}
			i++;
			j++;
		}
	}
	mlist_free(&want);
	mlist_free(&have);
	return 0;
}
