/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libimage/tree: search, cursor and walk over r4mkfs-made volumes, and
 * the read API's basics (root readdir, lookup of lost+found). */
#include "tap.h"
#include <errno.h>
#include <unistd.h>
#include <sys/stat.h>
#include "r4/r4.h"
#include "r4/read.h"
#include "libimage/vol/volume.h"
#include "libimage/tree/tree.h"
#include "format/errors.h"
#include "format/node.h"
#include "format/plugin.h"

static char path[64];

static int make(int lost_found, const char *spec)
{
	struct r4_mkfs_opts o;
	struct r4_error err = { 0, "", 0 };

	unlink(path);
	r4_mkfs_opts_init(&o);
	o.size_bytes = 64 << 20;
	o.create_file = 1;
	o.lost_found = lost_found;
	if (spec && r4_mkfs_override(&o, spec, &err))
		return -1;
	if (r4_mkfs(path, &o, NULL, &err)) {
		printf("# mkfs: %s\n", err.msg);
		return -1;
	}
	return 0;
}

struct names {
	char buf[8][32];
	unsigned n;
	struct r4_objref t[8];
};

static int collect(void *ctx, const char *name, size_t len,
		   const struct r4_objref *target)
{
	struct names *nm = ctx;

	if (nm->n < 8 && len < 32) {
		memcpy(nm->buf[nm->n], name, len);
		nm->buf[nm->n][len] = '\0';
		nm->t[nm->n] = *target;
	}
	nm->n++;
	return 0;
}

static int count_nodes(void *ctx, uint64_t blk, unsigned level,
		       const uint8_t *node)
{
	(void)blk;
	(void)node;
	((unsigned *)ctx)[level]++;
	return 0;
}

static void test_plain(void)
{
	struct r4_error err = { 0, "", 0 };
	struct r4_vol *vol;
	struct r4_objref root, o;
	struct r4_stat st;
	struct names nm = { .n = 0 };
	unsigned levels[12] = { 0 };

	ok(make(0, NULL) == 0, "mkfs");
	ok(r4_vol_open(path, R4_OPEN(R4_OPEN_RDONLY), &vol, &err) == 0, "open: %s",
	   err.msg);
	r4_root(vol, &root, &err);
	is_int(r4_stat(vol, &root, &st, &err), 0, "stat root: %s", err.msg);
	ok(S_ISDIR(st.mode), "root is a directory");
	is_int(st.object_plugin, R4_OBJ_DIR40, "dir40");
	is_u64(st.size, 2, "root size 2 entries");
	is_int(st.hash_id, 1, "r5 hash from the root pset");
	is_int(st.fibration_id, 2, "ext_1 fibration from the root pset");
	is_int(r4_readdir(vol, &root, collect, &nm, &err), 0, "readdir: %s",
	       err.msg);
	is_int(nm.n, 2, "two entries");
	is_str(nm.buf[0], ".", "first .");
	is_str(nm.buf[1], "..", "then ..");
	is_u64(nm.t[0].oid, 42, ". is root");
	is_u64(nm.t[1].oid, 42, ".. is root");
	is_int(r4_lookup(vol, "/", &o, &err), 0, "lookup /");
	is_u64(o.oid, 42, "/ is root");
	err.msg[0] = 0;
	is_int(r4_lookup(vol, "/lost+found", &o, &err), R4_ENOTFOUND,
	       "no lost+found without -s");
	ok(strstr(err.msg, "lost+found") != NULL, "message names it: %s",
	   err.msg);
	is_int(r4_tree_walk(vol, count_nodes, levels, &err), 0, "walk");
	is_int(levels[2], 1, "one twig (root)");
	is_int(levels[1], 1, "one leaf");
	tap_must(r4_vol_close(vol, &err));
}

static void test_lost_found(void)
{
	struct r4_error err = { 0, "", 0 };
	struct r4_vol *vol;
	struct r4_objref o, back;
	struct r4_stat st;
	struct names nm = { .n = 0 };

	ok(make(1, NULL) == 0, "mkfs -s");
	ok(r4_vol_open(path, R4_OPEN(R4_OPEN_RDONLY), &vol, &err) == 0, "open");
	is_int(r4_lookup(vol, "/lost+found", &o, &err), 0,
	       "lookup /lost+found: %s", err.msg);
	ok(o.oid >= 0x10000, "lost+found has a regular oid");
	is_int(r4_lookup(vol, "//lost+found/", &o, &err), 0, "extra slashes");
	is_int(r4_stat(vol, &o, &st, &err), 0, "stat");
	ok(S_ISDIR(st.mode), "a directory");
	is_int(r4_lookup(vol, "/lost+found/..", &back, &err), 0, "..");
	is_u64(back.oid, 42, ".. of lost+found is root");
	is_int(r4_readdir(vol, &o, collect, &nm, &err), 0, "readdir");
	is_int(nm.n, 2, ". and ..");
	nm.n = 0;
	r4_root(vol, &o, &err);
	r4_readdir(vol, &o, collect, &nm, &err);
	is_int(nm.n, 3, "root has 3 entries");
	is_int(r4_lookup(vol, "/lost+found/x/y", &o, &err), R4_ENOTFOUND,
	       "missing");
	r4_lookup(vol, "/lost+found", &o, &err);
	{
		char b[8];
		size_t got = 1;

		is_int(r4_read(vol, &o, 0, b, sizeof(b), &got, &err), -EISDIR,
		       "read of a directory");
	}
	tap_must(r4_vol_close(vol, &err));
}

static unsigned pinned(struct r4_vol *vol)
{
	unsigned n = 0;

	for (size_t i = 0; i < vol->cache.nbuckets; i++)
		for (struct io_block *b = vol->cache.hash[i]; b; b = b->hnext)
			n += b->ref;
	return n;
}

/* Cursor: next from the first item visits every item in key order. */
static void test_cursor(void)
{
	struct r4_error err = { 0, "", 0 };
	struct r4_vol *vol;
	struct tree_cursor c;
	struct tree_item it;
	struct fmt_key k, prev;
	unsigned n = 0;
	int rc, ordered = 1;

	ok(make(1, NULL) == 0, "mkfs -s");
	ok(r4_vol_open(path, R4_OPEN(R4_OPEN_RDONLY), &vol, &err) == 0, "open");
	tree_cursor_init(&c, vol);
	fmt_key_min(&k);
	rc = tree_seek_ge(&c, &k, &err);
	is_int(rc, 0, "seek to the first item");
	while (!rc) {
		tree_cur(&c, &it, &err);
		if (n && fmt_key_cmp(&prev, &it.key) >= 0)
			ordered = 0;
		prev = it.key;
		n++;
		rc = tree_next(&c, &err);
	}
	is_int(rc, R4_ENOTFOUND, "ends");
	ok(ordered, "ascending keys");
	is_int(n, 4, "root SD, root entries, lost+found SD and entries");
	/* Backwards from the largest key. */
	fmt_key_max(&k);
	rc = tree_seek_le(&c, &k, &err);
	n = 0;
	while (!rc) {
		n++;
		rc = tree_prev(&c, &err);
	}
	is_int(n, 4, "same count backwards");
	fmt_key_min(&k);
	is_int(tree_seek_le(&c, &k, &err), R4_ENOTFOUND,
	       "nothing at or before the smallest key");
	tree_cursor_fini(&c);
	is_int(pinned(vol), 0, "no block left pinned");
	tap_must(r4_vol_close(vol, &err));
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	int fd;

	snprintf(path, sizeof(path), "%s/r4treeXXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	fd = mkstemp(path);
	tap_require(fd >= 0, "mkstemp %s failed", path);
	close(fd);
	test_plain();
	test_lost_found();
	test_cursor();
	unlink(path);
	return tap_done();
}
