/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the object operations of r4/edit.h on volumes made by r4_mkfs
 * and by r4ref (libreiser4): every scenario is mirrored in a host
 * directory, committed, then judged by fsck.reiser4 --check, r4_check
 * and r4ref manifest == manifest-dir (r4_check alone when reiser4progs
 * is missing). The number of checks is declared up front. */
#include "config.h"
#include <errno.h>
#include <sys/stat.h>
#include "tap.h"
#include "edit_util.h"
#include "r4/read.h"
#include "libimage/obj/obj.h"
#include "libimage/obj/write.h"
#include "libimage/obj/ccreg.h"
#include "format/plugin.h"

static struct r4_vol *V;
static struct r4_txn *T;
static struct r4_error E;
static const char *IMG = "v.img";

/* Open the volume and begin a transaction: a failure ends the test. */
static int begin(void)
{
	int rc;

	memset(&E, 0, sizeof(E));
	tap_require(eu_open(IMG, &V) == 0, "cannot open %s", IMG);
	rc = r4_txn_begin(V, &T, &E);
	if (rc) {
		r4_vol_close(V, NULL);
		tap_bail("r4_txn_begin: %d %s", rc, E.msg);
	}
	return 0;
}

static int commit(void)
{
	int rc = r4_txn_commit(T, &E);

	if (rc)
		printf("# commit: %s\n", E.msg);
	if (r4_vol_close(V, &E))
		rc = -1;
	return rc;
}

/* Shell in the host tree. */
#define HOST(...) do { \
	char c_[2048]; \
	snprintf(c_, sizeof(c_), __VA_ARGS__); \
	EU_SETUP("cd '%s/host' && %s", eu_dir, c_); \
} while (0)

#define OKE(expr, ...) do { \
	int r_ = (expr); \
	if (!ok(r_ == 0, __VA_ARGS__)) \
		printf("#   rc %d: %s\n", r_, E.msg); \
} while (0)

static void judge(const char *what, const char *fix)
{
	eu_judge(IMG, "host", fix, what);
}

static struct r4_attr A(uint32_t mode)
{
	struct r4_attr a;

	eu_attr(&a, mode);
	return a;
}

static int mkfile(const char *path, uint64_t size, unsigned seed)
{
	struct eu_data d = { size, 0, seed, { 0 } };
	struct r4_attr a = A(S_IFREG | 0644);
	char rel[512];

	snprintf(rel, sizeof(rel), "host%s", path);
	eu_host_file(rel, size, seed);
	return r4_create(T, path, &a, size, eu_data_fn, &d, &E);
}

/* A sparse file: size bytes, data only in [at, at + n) (the pattern of
 * eu_data from 'at' on), the same in the host folder. */
struct sparse_src {
	struct eu_data d;
	uint64_t at;
};

static int sparse_fn(void *ctx, uint64_t *off, const void **buf,
		     size_t *len, struct r4_error *err)
{
	struct sparse_src *s = ctx;
	int rc = eu_data_fn(&s->d, off, buf, len, err);

	*off += s->at;
	return rc;
}

static int mksparse(const char *path, uint64_t at, uint64_t n,
		    unsigned seed)
{
	struct sparse_src s = { { n, 0, seed, { 0 } }, at };
	struct r4_attr a = A(S_IFREG | 0644);
	uint64_t off;
	const void *b;
	size_t len;
	char host[1024];
	FILE *f;

	snprintf(host, sizeof(host), "%s/host%s", eu_dir, path);
	f = fopen(host, "wb");
	tap_require(f, "cannot create %s", host);
	while (sparse_fn(&s, &off, &b, &len, NULL) > 0)
		tap_require(!fseek(f, (long)off, SEEK_SET) &&
			    fwrite(b, 1, len, f) == len, "cannot write %s",
			    host);
	tap_require(!ftruncate(fileno(f), (off_t)(at + n)) && !fclose(f),
		    "cannot write %s", host);
	s.d.pos = 0;
	return r4_create(T, path, &a, at + n, sparse_fn, &s, &E);
}

/* The length of disk cluster 0 of a ccreg40 file, -1 on an error. */
static long dc0_len(const char *path)
{
	static uint8_t buf[65536];
	struct r4_objref ref;
	struct obj_sd sd;
	struct obj_ccreg cc;
	struct obj_dc dc;
	int rc = r4_lookup(V, path, &ref, &E);

	if (!rc)
		rc = obj_sd_get(V, &ref, &sd, &E);
	if (rc)
		return -1;
	rc = obj_ccreg_params(V, &ref, &sd, &cc, &E);
	obj_sd_put(&sd);
	if (!rc)
		rc = obj_dc_load(V, &ref, cc.shift, 0, buf, &dc, &E);
	return rc ? -1 : (long)dc.len;
}

/* The compressMode member a file's stat data stores, -1 if none. */
static int pset_cmode(const char *path)
{
	struct r4_objref ref;
	struct obj_sd sd;
	int rc = r4_lookup(V, path, &ref, &E), v;

	if (rc || obj_sd_get(V, &ref, &sd, &E))
		return -2;
	v = obj_pset_find(&sd.st.pset, FMT_PSET_CMODE);
	obj_sd_put(&sd);
	return v;
}

static int mkd(const char *path)
{
	struct r4_attr a = A(S_IFDIR | 0755);

	HOST("mkdir .%s", path);
	return r4_mkdir(T, path, &a, &E);
}

static const uint64_t sizes[] = {
	0, 1, 100, 4095, 4096, 4097, 16383, 16384, 16385, 40000, 65536,
	102400
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void files(void)
{
	char p[64];

	if (begin())
		return;
	OKE(mkd("/files"), "mkdir /files");
	for (size_t i = 0; i < NSIZES; i++) {
		snprintf(p, sizeof(p), "/files/f%llu",
			 (unsigned long long)sizes[i]);
		OKE(mkfile(p, sizes[i], (unsigned)i), "create %s", p);
	}
	OKE(commit(), "commit");
	judge("files of 0..100 KiB", NULL);
}

static void dirs(void)
{
	if (begin())
		return;
	OKE(mkd("/d1"), "mkdir /d1");
	OKE(mkd("/d1/d2"), "mkdir /d1/d2");
	OKE(mkd("/d1/d2/d3"), "mkdir /d1/d2/d3");
	OKE(mkd("/d1/e"), "mkdir /d1/e");
	is_int(r4_rmdir(T, "/d1/d2", &E), -ENOTEMPTY, "rmdir of a "
	       "non-empty directory is refused");
	is_int(r4_mkdir(T, "/d1", &(struct r4_attr){ .mode = 0755 }, &E),
	       R4_EEXIST, "mkdir of an existing name is refused");
	OKE(r4_rmdir(T, "/d1/d2/d3", &E), "rmdir /d1/d2/d3");
	HOST("rmdir d1/d2/d3");
	OKE(commit(), "commit");
	judge("mkdir/rmdir", NULL);
}

static void links(void)
{
	struct r4_attr a;

	if (begin())
		return;
	OKE(r4_link(T, "/files/f100", "/d1/hard", &E), "link");
	HOST("ln files/f100 d1/hard");
	OKE(r4_link(T, "/files/f40000", "/d1/e/big_hard_link_with_a_long_"
		    "name_over_23", &E), "link with a long name");
	HOST("ln files/f40000 d1/e/big_hard_link_with_a_long_name_over_23");
	OKE(mkfile("/d1/gone", 5000, 9), "create /d1/gone");
	OKE(r4_link(T, "/d1/gone", "/d1/gone2", &E), "link /d1/gone2");
	OKE(r4_unlink(T, "/d1/gone", &E), "unlink one name");
	HOST("ln d1/gone d1/gone2 && rm d1/gone");
	a = A(S_IFLNK | 0777);
	OKE(r4_symlink(T, "/sym", "files/f100", &a, &E), "symlink");
	HOST("ln -s files/f100 sym");
	char target[1001];
	memset(target, 'x', 1000);
	target[1000] = 0;
	OKE(r4_symlink(T, "/d1/longsym", target, &a, &E), "long symlink");
	HOST("ln -s %s d1/longsym", target);
	a = A(S_IFCHR | 0600);
	a.rdev_major = 1;
	a.rdev_minor = 3;
	OKE(r4_mknod(T, "/dev_null", &a, &E), "char device");
	HOST("mknod -m 600 dev_null c 1 3");
	a = A(S_IFBLK | 0660);
	a.rdev_major = 8;
	a.rdev_minor = 17;
	OKE(r4_mknod(T, "/d1/sdb1", &a, &E), "block device");
	HOST("mknod -m 660 d1/sdb1 b 8 17");
	a = A(S_IFIFO | 0644);
	OKE(r4_mknod(T, "/d1/fifo", &a, &E), "fifo");
	HOST("mkfifo -m 644 d1/fifo");
	a = A(S_IFSOCK | 0755);
	OKE(r4_mknod(T, "/d1/sock", &a, &E), "socket");
	HOST("python3 -c \"import socket as s; x=s.socket(s.AF_UNIX); "
	     "x.bind('d1/sock')\" && chmod 755 d1/sock");
	OKE(commit(), "commit");
	judge("links, symlinks, devices", NULL);
}

static void renames(void)
{
	if (begin())
		return;
	OKE(r4_rename(T, "/files/f1", "/files/one", &E), "rename in a dir");
	HOST("mv files/f1 files/one");
	OKE(r4_rename(T, "/files/f4096", "/d1/e/f4096", &E),
	    "rename across directories");
	HOST("mv files/f4096 d1/e/f4096");
	OKE(mkd("/d1/e/sub"), "mkdir");
	OKE(mkfile("/d1/e/sub/x", 300, 3), "file in it");
	OKE(r4_rename(T, "/d1/e", "/files/e_moved", &E),
	    "rename a directory across directories");
	HOST("mv d1/e files/e_moved");
	OKE(r4_rename(T, "/files/f100", "/files/f0", &E),
	    "rename over an existing file");
	HOST("mv files/f100 files/f0");
	OKE(mkd("/empty"), "mkdir /empty");
	OKE(r4_rename(T, "/d1/d2", "/empty", &E),
	    "rename a directory over an empty one");
	HOST("rmdir empty && mv d1/d2 empty");
	is_int(r4_rename(T, "/files", "/files/e_moved/sub/in", &E), R4_EINVAL,
	       "moving a directory below itself is refused");
	is_int(r4_rename(T, "/sym", "/files", &E), -EISDIR,
	       "a file over a directory is refused");
	OKE(r4_rename(T, "/sym", "/sym", &E), "rename onto itself");
	OKE(commit(), "commit");
	judge("rename", NULL);
}

static void attrs(void)
{
	struct r4_attr a = A(0);

	if (begin())
		return;
	a.mode = 04711;
	a.uid = 1000;
	a.gid = 100;
	a.mtime = 1234567890;
	a.atime = 1234567000;
	OKE(r4_setattr(T, "/files/f16384", &a, R4_ATTR_MODE | R4_ATTR_UID |
		       R4_ATTR_GID | R4_ATTR_MTIME | R4_ATTR_ATIME, &E),
	    "setattr of a file");
	a.mode = 01777;
	OKE(r4_setattr(T, "/d1", &a, R4_ATTR_MODE, &E), "chmod of a dir");
	a.mtime_ns = 5;
	OKE(r4_setattr(T, "/sym", &a, R4_ATTR_UID | R4_ATTR_MTIME, &E),
	    "setattr of a symlink (with nanoseconds)");
	OKE(commit(), "commit");
	judge("setattr", "chown 1000:100 files/f16384 && "
	      "chmod 4711 files/f16384 && "
	      "touch -h -d @1234567890 files/f16384 && chmod 1777 d1 && "
	      "chown -h 1000 sym && touch -h -d @1234567890 sym");
}

static void truncs(void)
{
	static const struct { const char *p; uint64_t to; } t[] = {
		{ "/files/f102400", 5000 },	/* extents, shorter */
		{ "/files/f65536", 200000 },	/* extents, hole */
		{ "/files/f16383", 50 },	/* tails, shorter */
		{ "/files/f4097", 10000 },	/* tails, longer */
		{ "/files/f16385", 0 },		/* extents to nothing */
		{ "/files/f4095", 30000 },	/* tails become extents */
		{ "/files/f40000", 40001 },	/* one byte more */
	};

	if (begin())
		return;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		OKE(r4_truncate(T, t[i].p, t[i].to, &E), "truncate %s to %llu",
		    t[i].p, (unsigned long long)t[i].to);
		HOST("truncate -s %llu .%s", (unsigned long long)t[i].to,
		     t[i].p);
	}
	OKE(commit(), "commit");
	judge("truncate", "chown 1000:100 files/f16384 && "
	      "chmod 4711 files/f16384 && "
	      "touch -h -d @1234567890 files/f16384 && chmod 1777 d1 && "
	      "chown -h 1000 sym && touch -h -d @1234567890 sym");
}

static void rmtree(void)
{
	uint64_t free0 = eu_free(IMG);

	if (begin())
		return;
	OKE(mkd("/tree"), "mkdir /tree");
	OKE(mkd("/tree/a"), "mkdir /tree/a");
	OKE(mkd("/tree/a/b"), "mkdir /tree/a/b");
	for (unsigned i = 0; i < 40; i++) {
		char p[64];

		snprintf(p, sizeof(p), "/tree/%s/file%u", i % 2 ? "a" : "a/b",
			 i);
		OKE(mkfile(p, i * 1500, i), "create %s", p);
	}
	OKE(r4_link(T, "/files/f0", "/tree/a/b/outside", &E),
	    "a link to a file outside");
	OKE(commit(), "commit");
	if (begin())
		return;
	OKE(r4_remove_tree(T, "/tree", &E), "remove_tree /tree");
	HOST("rm -rf tree");
	OKE(commit(), "commit");
	is_u64(eu_free(IMG), free0, "remove_tree gave every block back");
	judge("remove_tree", "chown 1000:100 files/f16384 && "
	      "chmod 4711 files/f16384 && "
	      "touch -h -d @1234567890 files/f16384 && chmod 1777 d1 && "
	      "chown -h 1000 sym && touch -h -d @1234567890 sym");
}

/* A tar-like stream through r4_txn_add_entry. */
static void add_stream(void)
{
	struct eu_data d1 = { 3000, 0, 11, { 0 } };
	struct eu_data d2 = { 50000, 0, 12, { 0 } };
	struct r4_entry e[] = {
		{ .path = "t/a/b/file", .type = R4_ENT_REG, .mode = 0640,
		  .size = 3000, .data = eu_data_fn, .data_ctx = &d1 },
		{ .path = "t/dir", .type = R4_ENT_DIR, .mode = 0700 },
		{ .path = "t/dir", .type = R4_ENT_DIR, .mode = 0750, .uid = 7 },
		{ .path = "t/hard", .type = R4_ENT_HARDLINK,
		  .target = "t/a/b/file" },
		{ .path = "t/sym", .type = R4_ENT_SYMLINK, .mode = 0777,
		  .target = "a/b/file" },
		{ .path = "t/a/b/file", .type = R4_ENT_REG, .mode = 0600,
		  .size = 50000, .data = eu_data_fn, .data_ctx = &d2 },
		{ .path = "t/dev", .type = R4_ENT_CHR, .mode = 0600,
		  .rdev_major = 4, .rdev_minor = 64 },
		{ .path = "t/sym", .type = R4_ENT_FIFO, .mode = 0600 },
		{ .path = "files/f0", .type = R4_ENT_REG, .mode = 0644 },
	};

	if (begin())
		return;
	for (size_t i = 0; i < sizeof(e) / sizeof(e[0]); i++) {
		e[i].atime = e[i].mtime = e[i].ctime = EU_TIME;
		OKE(r4_txn_add_entry(T, &e[i], &E), "add %s", e[i].path);
	}
	OKE(commit(), "commit");
	HOST("mkdir -p t/a/b t/dir && chmod 750 t/dir && chown 7 t/dir");
	eu_host_file("host/t/hard", 3000, 11);
	eu_host_file("host/t/a/b/file", 50000, 12);
	HOST("chmod 640 t/hard");
	HOST("chmod 600 t/a/b/file && ln -s a/b/file t/sym && "
	     "mknod -m 600 t/dev c 4 64 && rm t/sym && mkfifo -m 600 t/sym && "
	     "rm files/f0 && : > files/f0");
	judge("add_entry stream", "chown 1000:100 files/f16384 && "
	      "chmod 4711 files/f16384 && "
	      "touch -h -d @1234567890 files/f16384 && chmod 1777 d1 && "
	      "chown -h 1000 sym && touch -h -d @1234567890 sym");
}

/* r4_txn_add_entry reuses the directory the last path reached (same
 * prefix); a path operation in between makes it walk again. */
#define PCACHE_CHECKS 9
static void add_parent_cache(void)
{
	struct eu_data d1 = { 100, 0, 21, { 0 } };
	struct eu_data d2 = { 200, 0, 22, { 0 } };
	struct r4_entry e1 = { .path = "p/q/f1", .type = R4_ENT_REG,
			       .mode = 0644, .size = 100, .data = eu_data_fn,
			       .data_ctx = &d1 };
	struct r4_entry e2 = { .path = "p/q/f2", .type = R4_ENT_REG,
			       .mode = 0644, .size = 200, .data = eu_data_fn,
			       .data_ctx = &d2 };
	struct r4_objref o;

	if (begin())
		return;
	OKE(r4_txn_add_entry(T, &e1, &E), "add p/q/f1");
	OKE(r4_rename(T, "/p/q", "/p/r", &E), "rename /p/q to /p/r");
	OKE(r4_txn_add_entry(T, &e2, &E), "add p/q/f2 (p/q made again)");
	OKE(commit(), "commit");
	if (begin())
		return;
	OKE(r4_lookup(V, "/p/r/f1", &o, &E), "/p/r/f1 is there");
	OKE(r4_lookup(V, "/p/q/f2", &o, &E), "/p/q/f2 is there");
	ok(r4_lookup(V, "/p/r/f2", &o, &E) == R4_ENOTFOUND,
	   "/p/r/f2 is not");
	OKE(r4_remove_tree(T, "/p", &E), "remove_tree /p");
	OKE(commit(), "commit");
}

/* Abort forgets everything; a commit after a refused call is fine. */
static void aborts(void)
{
	uint64_t free0 = eu_free(IMG);
	struct r4_attr a = A(S_IFDIR | 0755);
	struct eu_data d = { 90000, 0, 1, { 0 } };

	if (begin())
		return;
	OKE(r4_mkdir(T, "/aborted", &a, &E), "mkdir");
	OKE(r4_create(T, "/aborted/f", &a, 90000, eu_data_fn, &d, &E),
	    "create");
	OKE(r4_remove_tree(T, "/files", &E), "remove_tree /files");
	r4_txn_abort(T);
	eu_close(V);
	is_u64(eu_free(IMG), free0, "abort: free blocks as before");
	judge("abort", "chown 1000:100 files/f16384 && "
	      "chmod 4711 files/f16384 && "
	      "touch -h -d @1234567890 files/f16384 && chmod 1777 d1 && "
	      "chown -h 1000 sym && touch -h -d @1234567890 sym");
}

/* doc/compress.md §5.1: a new file takes its plugins from the parent
 * directory's heir set first (the kernel's grab_plugin_pset: the
 * ancestor's hset member, else its pset member), and its stat data
 * stores only the members that differ from the root's, plus the file
 * plugin. Here the root says reg40 (eu_mkfs) and /heir's heir set says
 * ccreg40, zstd1, 16K clusters: /heir/f is compressed that way, a file
 * beside /heir stays reg40. */
#define HEIR_CHECKS 17
static void heir(void)
{
	struct r4_objref ref;
	struct obj_sd sd;
	int rc;

	if (begin())
		return;
	OKE(mkd("/heir"), "mkdir /heir");
	OKE(commit(), "commit");
	if (begin())
		return;
	rc = r4_lookup(V, "/heir", &ref, &E);
	if (!rc)
		rc = obj_sd_get(V, &ref, &sd, &E);
	if (!rc) {
		sd.st.mask |= 1u << FMT_SDEXT_HSET;
		sd.st.hset.count = 3;
		sd.st.hset.member[0] = FMT_PSET_COMPRESSION;
		sd.st.hset.id[0] = FMT_COMPRESS_ZSTD1;
		sd.st.hset.member[1] = FMT_PSET_CLUSTER;
		sd.st.hset.id[1] = FMT_CLUSTER_16K;
		sd.st.hset.member[2] = FMT_PSET_CREATE;
		sd.st.hset.id[2] = FMT_OBJ_CCREG40;
		rc = obj_sd_write(T, &ref, &sd.st, 0, &E);
		obj_sd_put(&sd);
	}
	rc = rc ? rc : commit();
	OKE(rc, "an heir set on /heir (create=ccreg40, zstd1, 16K)");
	if (begin())
		return;
	OKE(mkfile("/heir/f", 100000, 7), "create /heir/f");
	OKE(mkfile("/heir/small", 100, 8), "create /heir/small");
	OKE(mkfile("/beside", 100000, 9), "create /beside");
	OKE(mksparse("/heir/lead", 40000, 1000, 10), "create /heir/lead "
	    "(a hole, then data in cluster 2)");
	OKE(mksparse("/heir/empty", 40000, 0, 11), "create /heir/empty "
	    "(holes only)");
	OKE(commit(), "commit");
	tap_require(eu_open(IMG, &V) == 0, "cannot open %s", IMG);
	rc = r4_lookup(V, "/heir/f", &ref, &E);
	if (!rc)
		rc = obj_sd_get(V, &ref, &sd, &E);
	if (!rc) {
		const struct fmt_pset *ps = &sd.st.pset;

		ok(sd.plugin == FMT_OBJ_CCREG40 && ps->count == 4 &&
		   obj_pset_find(ps, FMT_PSET_FILE) == FMT_OBJ_CCREG40 &&
		   obj_pset_find(ps, FMT_PSET_COMPRESSION) ==
		   FMT_COMPRESS_ZSTD1 &&
		   obj_pset_find(ps, FMT_PSET_CLUSTER) == FMT_CLUSTER_16K &&
		   obj_pset_find(ps, FMT_PSET_CMODE) == FMT_CMODE_LATTD &&
		   sd.st.rdev_or_bytes % 16384 == 0,
		   "/heir/f: ccreg40, its stat data stores file, compress, "
		   "cluster and compressMode lattd (conv kept it compressed "
		   "past its first cluster, as the kernel's "
		   "disable_conversion)");
		obj_sd_put(&sd);
	} else {
		ok(0, "/heir/f: %s", E.msg);
	}
	ok(pset_cmode("/heir/small") == -1, "/heir/small: no compressMode "
	   "stored (one cluster: conv stays, as the kernel leaves it)");
	ok(dc0_len("/heir/lead") > 0, "/heir/lead: cluster 0 has an item "
	   "(zeros: the kernel panics reading a file that starts with a "
	   "hole cluster)");
	ok(dc0_len("/heir/empty") == 0, "/heir/empty: holes only, no item");
	rc = r4_lookup(V, "/beside", &ref, &E);
	if (!rc)
		rc = obj_sd_get(V, &ref, &sd, &E);
	if (!rc) {
		ok(sd.plugin == FMT_OBJ_REG40 &&
		   !(sd.st.mask & (1u << FMT_SDEXT_PSET)),
		   "/beside: reg40, no plugin set (the root's create)");
		obj_sd_put(&sd);
	} else {
		ok(0, "/beside: %s", E.msg);
	}
	{
		static uint8_t got[100000];
		FILE *f;
		char host[512];
		static uint8_t want[100000];
		size_t n = 0;

		snprintf(host, sizeof(host), "%s/host/heir/f", eu_dir);
		f = fopen(host, "rb");
		rc = r4_lookup(V, "/heir/f", &ref, &E);
		if (!rc)
			rc = r4_read(V, &ref, 0, got, sizeof(got), &n, &E);
		ok(!rc && f && fread(want, 1, sizeof(want), f) == n &&
		   n == sizeof(got) && !memcmp(got, want, n),
		   "/heir/f reads back exactly");
		if (f)
			fclose(f);
	}
	eu_close(V);
	if (eu_have_fsck())
		ok(eu_fsck(IMG), "heir: fsck.reiser4 says consistent");
	else
		tap_skip(1, "fsck.reiser4 not installed");
	ok(eu_check(IMG), "heir: r4_check is clean");
}

/* The plan of new files is kept for the next file of the same
 * directory (obj_new_plan): it must follow a change of the directory's
 * heir set, or of the transaction's create profile, made between two
 * files of one transaction. */
#define PLAN_CHECKS 10
static int plugin_of(const char *path)
{
	struct r4_objref ref;
	struct obj_sd sd;
	int rc = r4_lookup(V, path, &ref, &E), p;

	if (rc || obj_sd_get(V, &ref, &sd, &E))
		return -1;
	p = sd.plugin;
	obj_sd_put(&sd);
	return p;
}

static void plan_cache(void)
{
	const uint16_t cc[R4_PT_COUNT] = { [R4_PT_CREATE] = FMT_OBJ_CCREG40 };
	struct r4_objref ref;
	struct obj_sd sd;
	int rc;

	if (begin())
		return;
	OKE(mkd("/pl"), "mkdir /pl");
	OKE(mkd("/pl2"), "mkdir /pl2");
	OKE(mkfile("/pl/a", 5000, 31), "create /pl/a (the root's reg40)");
	rc = r4_lookup(V, "/pl", &ref, &E);
	if (!rc)
		rc = obj_sd_get(V, &ref, &sd, &E);
	if (!rc) {
		sd.st.mask |= 1u << FMT_SDEXT_HSET;
		sd.st.hset.count = 1;
		sd.st.hset.member[0] = FMT_PSET_CREATE;
		sd.st.hset.id[0] = FMT_OBJ_CCREG40;
		rc = obj_sd_write(T, &ref, &sd.st, 0, &E);
		obj_sd_put(&sd);
	}
	OKE(rc, "an heir set create=ccreg40 on /pl, same transaction");
	OKE(mkfile("/pl/b", 5000, 32), "create /pl/b");
	OKE(mkfile("/pl2/a", 5000, 33), "create /pl2/a");
	OKE(r4_txn_set_create(T, cc, 1u << R4_PT_CREATE, &E),
	    "create=ccreg40 for the rest of the transaction");
	OKE(mkfile("/pl2/b", 5000, 34), "create /pl2/b");
	OKE(commit(), "commit");
	tap_require(eu_open(IMG, &V) == 0, "cannot open %s", IMG);
	ok(plugin_of("/pl/a") == FMT_OBJ_REG40 &&
	   plugin_of("/pl/b") == FMT_OBJ_CCREG40 &&
	   plugin_of("/pl2/a") == FMT_OBJ_REG40 &&
	   plugin_of("/pl2/b") == FMT_OBJ_CCREG40,
	   "/pl/a, /pl2/a reg40; /pl/b (heir set), /pl2/b (profile) "
	   "ccreg40: got %d %d %d %d", plugin_of("/pl/a"),
	   plugin_of("/pl/b"), plugin_of("/pl2/a"), plugin_of("/pl2/b"));
	eu_close(V);
}

/* Name lookups halve a directory item (obj_dir_find): every name of a
 * directory of 300 short and 300 long names (the long ones share their
 * first 40 bytes) is found, with its own object; names between them,
 * before and after them are not. */
#define LOOKUP_CHECKS 6
static void lookups(void)
{
	struct r4_attr a = A(S_IFREG | 0644);
	struct r4_objref o, seen[600];
	char p[160];
	int rc = 0, found = 0, absent = 0, distinct = 1;

	if (begin())
		return;
	OKE(mkd("/lk"), "mkdir /lk");
	for (int i = 0; i < 600 && !rc; i++) {
		if (i < 300)
			snprintf(p, sizeof(p), "/lk/n%03d", i);
		else
			snprintf(p, sizeof(p), "/lk/a-long-name-that-is-stored-"
				 "in-the-entry-%03d", i);
		rc = r4_create(T, p, &a, 0, NULL, NULL, &E);
	}
	OKE(rc, "600 files in /lk");
	OKE(commit(), "commit");
	tap_require(eu_open(IMG, &V) == 0, "cannot open %s", IMG);
	for (int i = 0; i < 600; i++) {
		if (i < 300)
			snprintf(p, sizeof(p), "/lk/n%03d", i);
		else
			snprintf(p, sizeof(p), "/lk/a-long-name-that-is-stored-"
				 "in-the-entry-%03d", i);
		if (!r4_lookup(V, p, &seen[i], &E))
			found++;
		for (int j = 0; j < i && distinct; j++)
			distinct = seen[j].oid != seen[i].oid;
	}
	for (int i = 0; i < 300; i++) {
		snprintf(p, sizeof(p), i % 3 == 0 ? "/lk/n%03dx" :
			 i % 3 == 1 ? "/lk/m%03d" : "/lk/a-long-name-that-is-"
			 "stored-in-the-entry-%03d", i);
		absent += r4_lookup(V, p, &o, &E) == R4_ENOTFOUND;
	}
	is_int(found, 600, "every name of /lk is found");
	ok(distinct, "each name leads to its own object");
	is_int(absent, 300, "names not in /lk are not found");
	eu_close(V);
}

static void on_mkfs(void)
{
	printf("# volume made by r4_mkfs (formatting smart)\n");
	EU_SETUP("rm -rf '%s/host' '%s/v.img' && mkdir '%s/host'", eu_dir,
		 eu_dir, eu_dir);
	if (!ok(eu_mkfs(IMG, 64, "") == 0, "r4_mkfs"))
		return;
	files();
	dirs();
	links();
	renames();
	attrs();
	truncs();
	rmtree();
	add_stream();
	add_parent_cache();
	aborts();
	heir();		/* last: r4ref's manifest cannot read ccreg40 */
	plan_cache();
	lookups();
}

/* A libreiser4-made volume (formatting=tails) with content: its checks. */
#define R4REF_CHECKS 13
static void on_r4ref(void)
{
	struct r4_attr a = A(S_IFDIR | 0755);

	printf("# volume made by r4ref (libreiser4, formatting tails)\n");
	if (!eu_have_r4ref()) {
		tap_skip(R4REF_CHECKS, "r4ref (libreiser4) not built");
		return;
	}
	EU_SETUP("rm -rf '%s/host' '%s/v.img' && mkdir -p '%s/host/src/s' && "
	      "cd '%s/host' && seq 1 3000 > src/numbers && "
	      "echo hi > src/s/hi && ln -s numbers src/n && "
	      "mkdir src/empty && find . -exec touch -h -d @%d {} + && "
	      "truncate -s 64M ../v.img && r4ref mkfs -o formatting=tails -o create=reg40 "
	      "../v.img . >/dev/null 2>&1", eu_dir, eu_dir, eu_dir, eu_dir,
	      EU_TIME);
	judge("r4ref volume", NULL);
	if (begin())
		return;
	OKE(r4_mkdir(T, "/src/new", &a, &E), "mkdir in it");
	HOST("mkdir src/new");
	OKE(mkfile("/src/new/big", 70000, 5), "a 70000-byte file (tails)");
	OKE(r4_rename(T, "/src/numbers", "/src/new/numbers", &E), "rename");
	HOST("mv src/numbers src/new/numbers");
	OKE(r4_remove_tree(T, "/src/s", &E), "remove_tree");
	HOST("rm -rf src/s");
	OKE(r4_rmdir(T, "/src/empty", &E), "rmdir");
	HOST("rmdir src/empty");
	OKE(r4_truncate(T, "/src/new/numbers", 7000, &E), "truncate");
	HOST("truncate -s 7000 src/new/numbers");
	OKE(commit(), "commit");
	judge("changes to an r4ref volume", NULL);
}

int main(void)
{
	plan(161 + HEIR_CHECKS + PCACHE_CHECKS + PLAN_CHECKS +
	     LOOKUP_CHECKS);
	eu_init("test_edit");
	on_mkfs();
	on_r4ref();
	eu_fini();
	return tap_done();
}
