/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests: the entry encoder (libimage/obj/encode.c) both the builder
 * and the editor use, and the containers of libimage/util (vec, u64map).
 * The editor's r4_mkdir is driven on a volume r4_mkfs makes, so the test
 * needs no oracle. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tap.h"
#include "r4/r4.h"
#include "r4/read.h"
#include "r4/edit.h"
#include "libimage/obj/encode.h"
#include "r4/util.h"
#include "format/plugin.h"

static void test_time(void)
{
	uint32_t ns = 7;

	is_u64(enc_time(1700000000, 123, &ns), 1700000000, "time: in range");
	is_int(ns, 123, "time: ns kept");
	is_u64(enc_time(-1, 5, &ns), 0, "time: before 1970 is 0");
	is_int(ns, 0, "time: and loses its ns");
	is_u64(enc_time((int64_t)UINT32_MAX + 1, 5, &ns), UINT32_MAX,
	       "time: after 2106 is the last second");
	is_int(ns, 0, "time: and loses its ns");
	is_u64(enc_time(100, 1500000000u, &ns), 100,
	       "time: ns >= 10^9 keeps the seconds");
	is_int(ns, 0, "time: ns >= 10^9 is dropped");
	is_u64(enc_time(100, 999999999u, &ns), 100, "time: last ns");
	is_int(ns, 999999999, "time: 999999999 ns kept");
}

static void test_stat(void)
{
	struct r4_attr a = { .mode = 0644, .uid = 1, .gid = 2, .atime = 10,
			     .mtime = 20, .ctime = 30 };
	struct enc_attr ea;
	struct fmt_stat st;

	enc_attr(&a, S_IFREG, &ea);
	enc_stat(&ea, &st);
	is_int(st.mode, S_IFREG | 0644, "stat: type and mode");
	is_u64(st.mask, 1u << FMT_SDEXT_LW | 1u << FMT_SDEXT_UNIX,
	       "stat: lw + unix without ns");
	a.mtime_ns = 1500000000u;
	enc_attr(&a, S_IFDIR, &ea);
	enc_stat(&ea, &st);
	is_u64(st.mask, 1u << FMT_SDEXT_LW | 1u << FMT_SDEXT_UNIX,
	       "stat: a dropped ns asks no large times");
	a.ctime_ns = 1;
	enc_attr(&a, 0, &ea);
	enc_stat(&ea, &st);
	ok(st.mask & 1u << FMT_SDEXT_LT, "stat: large times for 1 ns");
	is_int(st.mode & S_IFMT, 0, "stat: type 0 keeps the mode's type");
	enc_stat_symlink(&st, "abc", 3);
	ok(st.mask & 1u << FMT_SDEXT_SYMLINK, "stat: symlink extension");
	is_u64(st.size, 3, "stat: symlink size");
	is_u64(enc_rdev(4095, 1048575), (uint64_t)4095 << 20 | 1048575,
	       "rdev: 12 + 20 bits");
}

static void test_checks(void)
{
	struct r4_error err = { 0, "", 0 };
	struct r4_entry e = { .path = "d", .type = R4_ENT_CHR };
	size_t max = enc_symlink_max(4096 - 28 - 30);
	char *t = malloc(max + 2);

	e.rdev_major = 4095;
	e.rdev_minor = 1048575;
	is_int(enc_check_entry(&e, 4000, &err), 0, "check: largest device");
	e.rdev_major = 4096;
	is_int(enc_check_entry(&e, 4000, &err), R4_ERANGE,
	       "check: major 4096");
	e.rdev_major = 1;
	e.rdev_minor = 1048576;
	err.msg[0] = '\0';
	is_int(enc_check_entry(&e, 4000, &err), R4_ERANGE,
	       "check: minor 2^20");
	is_str(err.msg, "d: device 1:1048576 does not fit (major < 4096, "
	       "minor < 1048576)", "check: the device message");
	memset(t, 'x', max + 1);
	t[max + 1] = '\0';
	err.msg[0] = '\0';
	is_int(enc_check_symlink("s", t, 4096 - 28 - 30, &err), R4_ERANGE,
	       "check: symlink one byte too long");
	t[max] = '\0';
	is_int(enc_check_symlink("s", t, 4096 - 28 - 30, &err), 0,
	       "check: longest symlink");
	is_int(enc_check_symlink("s", "", 4000, &err), R4_EINVAL,
	       "check: empty symlink");
	free(t);
	is_int(enc_check_name("p", 255, &err), 0, "check: 255-byte name");
	is_int(enc_check_name("p", 256, &err), R4_EINVAL,
	       "check: 256-byte name");
}

static void test_names(void)
{
	const char *p = "//a/./bc/../d", *n;

	is_int(enc_next_name(&p, &n), 1, "names: a");
	ok(*n == 'a', "names: a is a");
	is_int(enc_next_name(&p, &n), 2, "names: '.' skipped, bc");
	is_int(enc_next_name(&p, &n), -1, "names: '..' is -1");
	is_int(enc_next_name(&p, &n), 1, "names: d");
	is_int(enc_next_name(&p, &n), 0, "names: the end");
}

static void test_tails(void)
{
	ok(enc_tails(FMT_POLICY_SMART, 4096, 16384), "tails: 4 blocks");
	ok(!enc_tails(FMT_POLICY_SMART, 4096, 16385), "tails: past 4 blocks");
	ok(enc_tails(FMT_POLICY_SMART, 1024, 4096), "tails: 4 1K blocks");
	ok(!enc_tails(FMT_POLICY_SMART, 1024, 4097),
	   "tails: the rule follows the block size");
	ok(enc_tails(FMT_POLICY_TAILS, 4096, 1 << 30), "tails: always");
	ok(!enc_tails(FMT_POLICY_EXTENTS, 4096, 1), "tails: never");
}

static void test_units(void)
{
	struct enc_units s = { NULL, 0, 0 };

	enc_unit_add(&s, 0, 2);
	enc_unit_add(&s, 0, 3);
	enc_unit_add(&s, 100, 1);
	enc_unit_add(&s, 101, 4);
	enc_unit_add(&s, 200, 1);
	enc_unit_add(&s, 300, 0);
	is_int(s.n, 3, "units: holes and runs merged");
	is_u64(s.u[0].width, 5, "units: one hole of 5");
	is_u64(s.u[1].width, 5, "units: 100+5");
	is_u64(enc_units_bytes(&s, 4096), 6 * 4096, "units: bytes");
	free(s.u);
}

static void test_containers(void)
{
	struct r4_u64map m;
	uint64_t *v, sum = 0;
	size_t cap = 0, n = 0, i;
	int *a = NULL, fine = 1, added;

	for (int k = 0; k < 1000; k++) {
		if (R4_RESERVE(a, cap, n + 1, 4))
			break;
		a[n++] = k;
	}
	is_int(n, 1000, "vec: 1000 elements");
	ok(cap >= 1000 && cap < 2048, "vec: capacity doubled (%zu)", cap);
	free(a);

	r4_u64map_init(&m, sizeof(uint64_t));
	ok(!r4_u64map_find(&m, 5), "map: empty");
	for (uint64_t k = 0; k < 5000; k++) {
		v = r4_u64map_get(&m, k * 7919 + (k & 1 ? UINT64_MAX - 10000 :
						  0), &added);
		if (!v || !added)
			fine = 0;
		else
			*v = k;
	}
	ok(fine, "map: 5000 inserts");
	is_int(m.n, 5000, "map: 5000 keys");
	for (uint64_t k = 0; k < 5000; k++) {
		v = r4_u64map_find(&m, k * 7919 + (k & 1 ? UINT64_MAX - 10000 :
						   0));
		if (!v || *v != k)
			fine = 0;
	}
	ok(fine, "map: every key finds its value");
	for (uint64_t k = 0; k < 5000; k += 2)
		if (r4_u64map_del(&m, k * 7919) != 1)
			fine = 0;
	ok(fine && m.n == 2500, "map: half deleted");
	ok(!r4_u64map_find(&m, 0), "map: a deleted key is gone");
	for (i = r4_u64map_next(&m, 0); i < m.cap;
	     i = r4_u64map_next(&m, i + 1))
		sum += *(uint64_t *)r4_u64map_val(&m, i);
	is_u64(sum, 2500ULL * 2500, "map: the walk sees the odd values");
	r4_u64map_fini(&m);

	r4_u64map_init(&m, 0);
	is_int(r4_u64set_add(&m, UINT64_MAX), 0, "set: add UINT64_MAX");
	is_int(r4_u64set_add(&m, UINT64_MAX), 1, "set: again");
	is_int(r4_u64set_add(&m, 0), 0, "set: add 0");
	ok(r4_u64map_find(&m, 0) && !r4_u64map_find(&m, 1), "set: find");
	r4_u64map_fini(&m);
}

/* The editor's r4_mkdir stores what the builder would: a nanosecond
 * field of 1.5e9 is dropped, never stored. */
static void test_mkdir_ns(void)
{
	const char *tmp = getenv("TMPDIR");
	struct r4_error err = { 0, "", 0 };
	struct r4_mkfs_opts o;
	struct r4_attr a = { .mode = S_IFDIR | 0755, .atime = 1000,
			     .mtime = 2000, .ctime = 3000,
			     .atime_ns = 5, .mtime_ns = 1500000000u };
	struct r4_objref ref;
	struct r4_stat st;
	struct r4_vol *v = NULL;
	struct r4_txn *x = NULL;
	char path[256];
	int fd, rc;

	snprintf(path, sizeof(path), "%s/r4encXXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	fd = mkstemp(path);
	ok(fd >= 0, "mkdir: a temporary file");
	if (fd < 0)
		return;
	close(fd);
	r4_mkfs_opts_init(&o);
	o.size_bytes = 32 << 20;
	o.create_file = 1;
	rc = r4_mkfs(path, &o, NULL, &err);
	if (!rc)
		rc = r4_vol_open(path, R4_OPEN(R4_OPEN_RDWR), &v, &err);
	if (!rc)
		rc = r4_txn_begin(v, &x, &err);
	if (!rc)
		rc = r4_mkdir(x, "/d", &a, &err);
	if (!rc)
		rc = r4_txn_commit(x, &err);
	else
		r4_txn_abort(x);
	if (!rc)
		rc = r4_lookup(v, "/d", &ref, &err);
	if (!rc)
		rc = r4_stat(v, &ref, &st, &err);
	is_int(rc, 0, "mkdir: made and read back (%s)", err.msg);
	if (!rc) {
		is_int(st.mtime, 2000, "mkdir: mtime kept");
		is_int(st.mtime_ns, 0, "mkdir: mtime_ns 1.5e9 dropped");
		is_int(st.atime_ns, 5, "mkdir: atime_ns kept");
	}
	if (v)
		r4_vol_close(v, NULL);
	unlink(path);
}

int main(void)
{
	test_time();
	test_stat();
	test_checks();
	test_names();
	test_tails();
	test_units();
	test_containers();
	test_mkdir_ns();
	return tap_done();
}
