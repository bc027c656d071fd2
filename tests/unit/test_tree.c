/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libimage/tree: search, cursor and walk over r4mkfs-made volumes, and
 * the read API's basics (root readdir, lookup of lost+found). */
#include "tap.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "r4/r4.h"
#include "r4/read.h"
#include "r4/pack.h"
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

/* ---- the seek hint of a read-only volume ---- */

/* A volume of n empty files in 16 directories, made by the packer: a
 * tree of three levels or more. */
static int make_many(unsigned n)
{
	struct r4_error err = { 0, "", 0 };
	struct r4_pack_opts o;
	struct r4_pack *b;
	struct r4_entry e;
	char name[64];

	unlink(path);
	r4_pack_opts_init(&o);
	o.mkfs.have_uuid = 1;
	o.mkfs.reproducible = 1;
	o.mkfs.mkfs_time = 1700000000;
	memset(o.mkfs.uuid, 0x5a, sizeof(o.mkfs.uuid));
	if (r4_pack_begin(path, &o, &b, &err))
		return -1;
	memset(&e, 0, sizeof(e));
	e.path = "";
	e.type = R4_ENT_DIR;
	e.mode = 0755;
	for (unsigned i = 0; i <= n + 16; i++) {
		int rc = r4_pack_add(b, &e, &err);

		if (rc) {
			printf("# add %s: %s\n", e.path, err.msg);
			r4_pack_abort(b);
			return -1;
		}
		e.path = name;
		if (i < 16) {
			snprintf(name, sizeof(name), "d%02u", i);
		} else {
			snprintf(name, sizeof(name), "d%02u/f%06u", i % 16, i);
			e.type = R4_ENT_REG;
			e.mode = 0644;
		}
	}
	return r4_pack_finish(b, NULL, &err) ? -1 : 0;
}

struct keys {
	struct r4_vol *vol;
	struct fmt_key *k;
	size_t n, cap;
};

static int leaf_keys(void *ctx, uint64_t blk, unsigned level,
		     const uint8_t *node)
{
	struct keys *ks = ctx;
	struct r4_error err = { 0, "", 0 };
	struct tree_item it;

	if (level != FMT_NODE_LEAF_LEVEL)
		return 0;
	for (unsigned i = 0; i < tree_node_nr(node); i++) {
		if (tree_node_item(ks->vol, node, blk, i, &it, &err))
			return -1;
		if (ks->n == ks->cap) {
			ks->cap = ks->cap ? ks->cap * 2 : 1024;
			ks->k = realloc(ks->k, ks->cap * sizeof(*ks->k));
			if (!ks->k)
				return -1;
		}
		ks->k[ks->n++] = it.key;
	}
	return 0;
}

/* Where a seek lands, and the item after it: "blk:pos:blk:pos". */
static void seek_at(struct r4_vol *vol, const struct fmt_key *k, int ge,
		    char *out, size_t cap)
{
	struct r4_error err = { 0, "", 0 };
	struct tree_cursor c;
	struct tree_item a = { 0 }, b = { 0 };
	int r1, r2 = -1;

	tree_cursor_init(&c, vol);
	r1 = ge ? tree_seek_ge(&c, k, &err) : tree_seek_le(&c, k, &err);
	if (!r1)
		r1 = tree_cur(&c, &a, &err);
	if (!r1 && !(r2 = tree_next(&c, &err)))
		r2 = tree_cur(&c, &b, &err);
	snprintf(out, cap, "%d %llu:%u %d %llu:%u", r1,
		 (unsigned long long)a.blk, a.pos, r2,
		 (unsigned long long)b.blk, b.pos);
	tree_cursor_fini(&c);
}

/* Every leaf key, and a key just past each, in a shuffled order, by
 * seek_le and seek_ge: the hinted descents land where fresh ones do. */
static void test_hint(void)
{
	struct r4_error err = { 0, "", 0 };
	struct keys ks = { 0 };
	struct r4_vol *vol;
	char a[96], b[96];
	size_t bad = 0, probes = 0;
	uint64_t hits;

	ok(make_many(12000) == 0, "a volume of 12,000 files");
	ok(r4_vol_open(path, R4_OPEN(R4_OPEN_RDONLY), &vol, &err) == 0, "open");
	ok(vol->sb.tree_height >= 3, "tree height %u", vol->sb.tree_height);
	ks.vol = vol;
	ok(tree_walk(vol, leaf_keys, &ks, &err) == 0 && ks.n > 12000,
	   "%zu leaf keys", ks.n);
	srand(29);
	for (size_t i = 0; i < 3 * ks.n; i++) {
		struct fmt_key k = ks.k[(size_t)rand() % ks.n];

		if (i % 3 == 1)
			k.el[3]++;	/* between two items, or past the last */
		else if (i % 3 == 2 && k.el[3])
			k.el[3]--;
		for (int ge = 0; ge < 2; ge++) {
			seek_at(vol, &k, ge, a, sizeof(a));
			vol->hint.valid = 0;	/* a fresh descent */
			seek_at(vol, &k, ge, b, sizeof(b));
			probes++;
			if (strcmp(a, b) && bad++ < 3)
				printf("# key %llx:%llx:%llx:%llx %s: hinted "
				       "%s, fresh %s\n",
				       (unsigned long long)k.el[0],
				       (unsigned long long)k.el[1],
				       (unsigned long long)k.el[2],
				       (unsigned long long)k.el[3],
				       ge ? "ge" : "le", a, b);
		}
	}
	is_int((int)bad, 0, "%zu seeks: a hinted one lands where a fresh one "
	       "does", probes);
	hits = vol->hint.hits;
	vol->hint.hits = 0;
	vol->hint.valid = 0;
	seek_at(vol, &ks.k[ks.n / 2], 0, a, sizeof(a));
	seek_at(vol, &ks.k[ks.n / 2 + 1], 0, a, sizeof(a));
	ok(hits > probes / 4 && vol->hint.hits == 1, "the hint served %llu "
	   "descents; a neighbour's key takes it",
	   (unsigned long long)hits);
	is_int((int)pinned(vol), 0, "no block left pinned");
	free(ks.k);
	r4_vol_close(vol, &err);
	unlink(path);
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
	test_hint();
	unlink(path);
	return tap_done();
}
