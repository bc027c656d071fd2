/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: helpers of the volume-changing unit tests (test_modify,
 * test_edit): volumes from r4_mkfs or r4ref, a host directory mirroring
 * what the volume should hold, and the three judges: fsck.reiser4
 * --check, r4_check, and r4ref's manifest against manifest-dir.
 * r4_check (ours) always judges; the oracle's judges skip only when the
 * oracle is not installed (a failing or crashing oracle fails the
 * check). A setup step that fails ends the test (tap_bail), and so does
 * a volume that does not close cleanly (a block left referenced). */
#ifndef R4_TESTS_EDIT_UTIL_H
#define R4_TESTS_EDIT_UTIL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include "r4/r4.h"
#include "r4/check.h"
#include "r4/edit.h"
#include "tap.h"

#define EU_TIME 1700000000

static char eu_dir[256];

static int eu_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int eu_sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = system(cmd);
	return rc == -1 ? -1 : WEXITSTATUS(rc);
}

static inline int eu_have(const char *prog)
{
	return eu_sh("command -v %s >/dev/null 2>&1", prog) == 0;
}

/* The oracles, looked up once: fsck.reiser4 (reiser4progs) and r4ref
 * (tests/helpers, built on libreiser4). */
static inline int eu_have_fsck(void)
{
	static int have = -1;

	if (have < 0)
		have = eu_have("fsck.reiser4");
	return have;
}

static inline int eu_have_r4ref(void)
{
	static int have = -1;
	const char *built = getenv("R4_HAVE_R4REF");

	if (have < 0)
		have = eu_have("r4ref");
	/* configure found libreiser4 (make check says so): r4ref must be
	 * there */
	tap_require(have || !built || strcmp(built, "1"),
		    "r4ref not found although libreiser4 is installed");
	return have;
}

/* A shell step of the set-up: its failure ends the test. */
#define EU_SETUP(...) do { \
	int rc_ = eu_sh(__VA_ARGS__); \
	tap_require(rc_ == 0, "set-up command failed (%d) at %s:%d", rc_, \
		    __FILE__, __LINE__); \
} while (0)

/* Close a volume: anything but 0 (a transaction left open, a cache
 * block still referenced) ends the test. */
static inline void eu_close(struct r4_vol *v)
{
	struct r4_error err = { 0, "", 0 };
	int rc = r4_vol_close(v, &err);

	tap_require(rc == 0, "r4_vol_close: %d %s", rc, err.msg);
}

/* A scratch directory for this test (kept when KEEP is set). */
static inline void eu_init(const char *name)
{
	const char *tmp = getenv("TMPDIR");
	char sde[32];

	snprintf(eu_dir, sizeof(eu_dir), "%s/%s.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp", name);
	tap_require(mkdtemp(eu_dir), "mkdtemp %s failed", eu_dir);
	snprintf(sde, sizeof(sde), "%d", EU_TIME);
	setenv("SOURCE_DATE_EPOCH", sde, 1);
}

static inline void eu_fini(void)
{
	if (!getenv("KEEP"))
		eu_sh("rm -rf '%s'", eu_dir);
}

/* r4_mkfs a volume of 'mib' MiB at dir/name with -o spec (may be ""). */
static inline int eu_mkfs(const char *name, unsigned mib, const char *spec)
{
	struct r4_mkfs_opts o;
	struct r4_error err = { 0, "", 0 };
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", eu_dir, name);
	r4_mkfs_opts_init(&o);
	o.size_bytes = (uint64_t)mib << 20;
	o.create_file = 1;
	o.mkfs_time = EU_TIME;
	/* New files follow the root's plugin set as the kernel's do: reg40
	 * here, since r4ref (libreiser4) cannot read ccreg40 bodies back. */
	if (r4_mkfs_override(&o, "create=reg40", &err) ||
	    (*spec && r4_mkfs_override(&o, spec, &err)))
		return -1;
	if (r4_mkfs(path, &o, NULL, &err)) {
		printf("# r4_mkfs: %s\n", err.msg);
		return -1;
	}
	return 0;
}

/* Give every object of a host tree the test time. */
static inline void eu_touch(const char *host)
{
	EU_SETUP("find '%s/%s' -exec touch -h -d @%d {} +", eu_dir, host,
		 EU_TIME);
}

/* fsck.reiser4 --check says consistent. */
static inline int eu_fsck(const char *img)
{
	int rc = eu_sh("fsck.reiser4 --check -f -y '%s/%s' >'%s/fsck.log' "
		       "2>&1 && grep -q 'FS is consistent' '%s/fsck.log'",
		       eu_dir, img, eu_dir, eu_dir);

	if (rc)
		eu_sh("tail -n 15 '%s/fsck.log' | sed 's/^/# /'", eu_dir);
	return rc == 0;
}

static inline void eu_problem(void *ctx, const struct r4_check_problem *p)
{
	(void)ctx;
	printf("# r4_check: %s: %s\n", r4_check_code_name(p->code), p->msg);
}

/* Our checker finds nothing. */
static inline int eu_check(const char *img)
{
	struct r4_check_opts o = { 0 };
	struct r4_check_report rep;
	struct r4_error err = { 0, "", 0 };
	struct r4_vol *v;
	char path[512];
	int rc;

	o.problem = eu_problem;
	o.max_reports = 10;
	snprintf(path, sizeof(path), "%s/%s", eu_dir, img);
	if (r4_vol_open(path, R4_OPEN(R4_OPEN_RDONLY), &v, &err)) {
		printf("# open: %s\n", err.msg);
		return 0;
	}
	rc = r4_check(v, &o, &rep, &err);
	eu_close(v);
	if (rc)
		printf("# r4_check failed: %s\n", err.msg);
	return !rc && rep.problems == 0;
}

/* r4ref manifest of the image equals manifest-dir of the host tree
 * (every host object gets the test time first, then 'fix', a shell
 * command run in the host tree, may change that; NULL for none). */
static inline int eu_manifest_fix(const char *img, const char *host,
				  const char *fix)
{
	int rc;

	eu_touch(host);
	if (fix)
		EU_SETUP("cd '%s/%s' && %s", eu_dir, host, fix);
	rc = eu_sh("cd '%s' && r4ref manifest '%s' >m.img 2>m.err && "
		   "r4ref manifest-dir '%s' >m.dir && cmp -s m.img m.dir",
		   eu_dir, img, host);
	if (rc)
		eu_sh("cd '%s' && diff m.dir m.img | head -20 | "
		      "sed 's/^/# /'; head -5 m.err | sed 's/^/# /'", eu_dir);
	return rc == 0;
}

static inline int eu_manifest(const char *img, const char *host)
{
	return eu_manifest_fix(img, host, NULL);
}

/* The three judges as checks: "what: fsck.reiser4 says consistent",
 * "what: r4_check is clean", "what: manifest as expected"; the oracle's
 * two skip when it is not installed. */
static inline void eu_judge(const char *img, const char *host,
			    const char *fix, const char *what)
{
	if (eu_have_fsck())
		ok(eu_fsck(img), "%s: fsck.reiser4 says consistent", what);
	else
		tap_skip(1, "fsck.reiser4 not installed");
	ok(eu_check(img), "%s: r4_check is clean", what);
	if (eu_have_r4ref())
		ok(eu_manifest_fix(img, host, fix), "%s: manifest as expected",
		   what);
	else
		tap_skip(1, "r4ref (libreiser4) not built");
}

static inline int eu_open(const char *img, struct r4_vol **v)
{
	struct r4_error err = { 0, "", 0 };
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", eu_dir, img);
	if (r4_vol_open(path, R4_OPEN(R4_OPEN_RDWR), v, &err)) {
		printf("# open %s: %s\n", path, err.msg);
		return -1;
	}
	r4_vol_set_clock(*v, EU_TIME);
	return 0;
}

static inline uint64_t eu_free(const char *img)
{
	struct r4_super_info si;
	struct r4_vol *v;

	if (eu_open(img, &v))
		return 0;
	r4_vol_super(v, &si);
	eu_close(v);
	return si.free_blocks;
}

static inline void eu_attr(struct r4_attr *a, uint32_t mode)
{
	memset(a, 0, sizeof(*a));
	a->mode = mode;
	a->atime = a->mtime = a->ctime = EU_TIME;
}

/* A data source: a byte pattern of 'size' bytes in 10000-byte chunks. */
struct eu_data {
	uint64_t size, pos;
	unsigned seed;
	uint8_t buf[10000];
};

static inline int eu_data_fn(void *ctx, uint64_t *off, const void **buf,
		      size_t *len, struct r4_error *err)
{
	struct eu_data *d = ctx;
	size_t n;

	(void)err;
	if (d->pos >= d->size)
		return 0;
	n = d->size - d->pos < sizeof(d->buf) ? (size_t)(d->size - d->pos) :
						 sizeof(d->buf);
	for (size_t i = 0; i < n; i++)
		d->buf[i] = (uint8_t)((d->pos + i) * 7 + d->seed +
				      (d->pos + i) / 251);
	*off = d->pos;
	*buf = d->buf;
	*len = n;
	d->pos += n;
	return 1;
}

/* The same bytes into a host file. */
static inline int eu_host_file(const char *rel, uint64_t size, unsigned seed)
{
	struct eu_data d = { size, 0, seed, { 0 } };
	char path[1024];
	uint64_t off;
	const void *b;
	size_t len;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", eu_dir, rel);
	f = fopen(path, "wb");
	tap_require(f, "cannot create %s", path);
	while (eu_data_fn(&d, &off, &b, &len, NULL) > 0)
		tap_require(fwrite(b, 1, len, f) == len, "cannot write %s",
			    path);
	tap_require(fclose(f) == 0, "cannot write %s", path);
	return 0;
}

#endif
