/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the copy-on-write tree engine (libimage/tree/modify.c) under
 * load: thousands of names in one directory grow the tree to height 3+
 * and removing them shrinks it back, every node freed; each step judged
 * by fsck.reiser4, r4_check and r4ref's manifest (r4_check alone when
 * reiser4progs is missing). The number of checks is declared up front. */
#include "config.h"
#include <sys/stat.h>
#include "tap.h"
#include "edit_util.h"
#include "libimage/obj/edit_int.h"
#include "libimage/obj/write.h"
#include "libimage/txn/txn.h"
#include "format/node.h"

#define NFILES 2000
/* small tail files: 2000 of them need more than one twig */
#define FSIZE(i) (100 + (i) % 50)

static void name_of(char *buf, size_t len, unsigned i)
{
	/* short, 8..23-byte and long (stored) names, mixed */
	if (i % 7 == 0)
		snprintf(buf, len, "/big/a_rather_long_file_name_number_%05u",
			 i);
	else if (i % 3 == 0)
		snprintf(buf, len, "/big/file%05u.c", i);
	else
		snprintf(buf, len, "/big/f%u", i);
}

static int fill(struct r4_vol *v, unsigned from, unsigned to, int remove,
		struct edit_stats *st)
{
	struct r4_error err = { 0, "", 0 };
	struct r4_attr a;
	struct r4_txn *t;
	char name[128];
	int rc = r4_txn_begin(v, &t, &err);

	tap_require(rc == 0, "r4_txn_begin: %d %s", rc, err.msg);
	eu_attr(&a, S_IFREG | 0644);
	for (unsigned i = from; !rc && i < to; i++) {
		struct eu_data d = { FSIZE(i), 0, i, { 0 } };

		name_of(name, sizeof(name), i);
		rc = remove ? r4_unlink(t, name, &err) :
			      r4_create(t, name, &a, d.size, eu_data_fn, &d,
					&err);
	}
	if (st)
		edit_stats(t, st);
	if (rc) {
		printf("# %s: %s\n", name, err.msg);
		r4_txn_abort(t);
		return rc;
	}
	rc = r4_txn_commit(t, &err);
	if (rc)
		printf("# commit: %s\n", err.msg);
	return rc;
}

static void host_names(unsigned from, unsigned to, int remove)
{
	char name[128], path[512];

	for (unsigned i = from; i < to; i++) {
		name_of(name, sizeof(name), i);
		snprintf(path, sizeof(path), "%s/host%s", eu_dir, name);
		if (remove)
			unlink(path);
		snprintf(path, sizeof(path), "host%s", name);
		if (!remove)
			eu_host_file(path, FSIZE(i), i);
	}
}

static void judge(const char *what)
{
	eu_judge("v.img", "host", NULL, what);
}

static unsigned height(void)
{
	struct r4_super_info si;
	struct r4_vol *v;

	if (eu_open("v.img", &v))
		return 0;
	r4_vol_super(v, &si);
	eu_close(v);
	return si.tree_height;
}

static void big_dir(const char *spec)
{
	struct r4_error err = { 0, "", 0 };
	struct edit_stats st;
	struct r4_attr a;
	struct r4_txn *t;
	struct r4_vol *v;
	uint64_t free0;
	char hp[512];

	printf("# volume -o '%s'\n", spec);
	EU_SETUP("rm -rf '%s/host' '%s/v.img'", eu_dir, eu_dir);
	snprintf(hp, sizeof(hp), "%s/host/big", eu_dir);
	EU_SETUP("mkdir -p '%s'", hp);
	if (!ok(eu_mkfs("v.img", 64, spec) == 0, "r4_mkfs") ||
	    !ok(eu_open("v.img", &v) == 0, "open read-write"))
		return;
	eu_attr(&a, S_IFDIR | 0755);
	ok(!r4_txn_begin(v, &t, &err) && !r4_mkdir(t, "/big", &a, &err) &&
	   !r4_txn_commit(t, &err), "mkdir /big %s", err.msg);
	eu_close(v);
	free0 = eu_free("v.img");
	judge("mkdir /big");

	if (!ok(!eu_open("v.img", &v), "reopen"))
		tap_bail("cannot reopen v.img");
	ok(!fill(v, 0, NFILES, 0, &st), "%d names in one transaction", NFILES);
	printf("# one transaction of %d inserts: %llu node images, %llu "
	       "blocks allocated, %llu freed, %llu written at commit, "
	       "height %u\n", NFILES,
	       (unsigned long long)st.nodes_written,
	       (unsigned long long)st.nodes_alloc,
	       (unsigned long long)st.nodes_freed,
	       (unsigned long long)st.nodes_dirty, st.height);
	/* each node is decoded once, then found decoded by the next
	 * inserts of the transaction (libimage/tree/modify.c) */
	ok(st.dec_hits > 8 * st.dec_misses, "nodes decoded %llu times, "
	   "found decoded %llu times", (unsigned long long)st.dec_misses,
	   (unsigned long long)st.dec_hits);
	eu_close(v);
	host_names(0, NFILES, 0);
	ok(height() >= 3, "the tree grew to height %u", height());
	judge("2000 names");

	/* one name per transaction: the copy-on-write cost */
	if (!ok(!eu_open("v.img", &v), "reopen"))
		tap_bail("cannot reopen v.img");
	uint64_t w = 0, al = 0, dirty = 0;
	int rc = 0;
	for (unsigned i = NFILES; !rc && i < NFILES + 20; i++) {
		rc = fill(v, i, i + 1, 0, &st);
		w += st.nodes_written;
		al += st.nodes_alloc;
		dirty += st.nodes_dirty;
	}
	ok(!rc, "20 more names, one transaction each");
	printf("# per inserted file (own transaction, height %u): %.1f node "
	       "images built, %.1f node blocks allocated, %.1f node blocks "
	       "written at commit\n", st.height, w / 20.0, al / 20.0,
	       dirty / 20.0);
	eu_close(v);
	host_names(NFILES, NFILES + 20, 0);
	judge("20 more");

	if (!ok(!eu_open("v.img", &v), "reopen"))
		tap_bail("cannot reopen v.img");
	ok(!fill(v, 0, NFILES / 2, 1, &st), "remove half");
	eu_close(v);
	host_names(0, NFILES / 2, 1);
	judge("half removed");

	if (!ok(!eu_open("v.img", &v), "reopen"))
		tap_bail("cannot reopen v.img");
	ok(!fill(v, NFILES / 2, NFILES + 20, 1, &st), "remove the rest");
	eu_close(v);
	host_names(NFILES / 2, NFILES + 20, 1);
	judge("all removed");
	is_int(height(), 2, "the tree shrank to height 2");
	is_u64(eu_free("v.img"), free0, "every block came back");
}

/* Tails and extents interleaved at the twig level: files of mixed
 * sizes made in a shuffled order, then removed in another. */
#define NMIX 300

static uint64_t mix_size(unsigned i)
{
	static const uint64_t s[] = { 0, 10, 3000, 16384, 16385, 20000,
				      70000, 5000, 123457 };

	return s[(i * 7) % (sizeof(s) / sizeof(s[0]))];
}

static int mix_step(struct r4_vol *v, unsigned *order, unsigned n,
		    int remove)
{
	struct r4_error err = { 0, "", 0 };
	struct r4_attr a;
	struct r4_txn *t;
	char name[64], rel[512];
	int rc = r4_txn_begin(v, &t, &err);

	tap_require(rc == 0, "r4_txn_begin: %d %s", rc, err.msg);
	eu_attr(&a, S_IFREG | 0644);
	for (unsigned k = 0; !rc && k < n; k++) {
		unsigned i = order[k];
		struct eu_data d = { mix_size(i), 0, i, { 0 } };

		snprintf(name, sizeof(name), "/mix/m%u", i);
		snprintf(rel, sizeof(rel), "host%s", name);
		if (remove) {
			rc = r4_unlink(t, name, &err);
			snprintf(rel, sizeof(rel), "%s/host%s", eu_dir, name);
			unlink(rel);
		} else {
			rc = r4_create(t, name, &a, d.size, eu_data_fn, &d,
				       &err);
			eu_host_file(rel, d.size, i);
		}
	}
	if (rc) {
		printf("# %s: %s\n", name, err.msg);
		r4_txn_abort(t);
		return rc;
	}
	return r4_txn_commit(t, &err);
}

static void mixed(void)
{
	struct r4_error err = { 0, "", 0 };
	unsigned order[NMIX];
	struct r4_attr a;
	struct r4_txn *t;
	struct r4_vol *v;
	uint64_t free0;

	printf("# tails and extents interleaved\n");
	EU_SETUP("rm -rf '%s/host' '%s/v.img' && mkdir -p '%s/host/mix'",
		 eu_dir, eu_dir, eu_dir);
	if (!ok(eu_mkfs("v.img", 64, "") == 0, "r4_mkfs") ||
	    !ok(eu_open("v.img", &v) == 0, "open read-write"))
		return;
	eu_attr(&a, S_IFDIR | 0755);
	ok(!r4_txn_begin(v, &t, &err) && !r4_mkdir(t, "/mix", &a, &err) &&
	   !r4_txn_commit(t, &err), "mkdir /mix %s", err.msg);
	eu_close(v);
	free0 = eu_free("v.img");
	for (unsigned i = 0; i < NMIX; i++)
		order[i] = (i * 113) % NMIX;	/* 113 is prime to 300 */
	ok(!eu_open("v.img", &v) && !mix_step(v, order, NMIX, 0),
	   "%d files, shuffled", NMIX);
	eu_close(v);
	judge("mixed files");
	for (unsigned i = 0; i < NMIX; i++)
		order[i] = (i * 71 + 5) % NMIX;
	ok(!eu_open("v.img", &v) && !mix_step(v, order, NMIX / 2, 1),
	   "remove half, shuffled");
	eu_close(v);
	judge("mixed, half removed");
	ok(!eu_open("v.img", &v) && !mix_step(v, order + NMIX / 2,
					      NMIX - NMIX / 2, 1),
	   "remove the rest");
	eu_close(v);
	judge("mixed, all removed");
	is_u64(eu_free("v.img"), free0, "every block came back");
	is_int(height(), 2, "height 2 again");
}

/* Files made in key order (ascending names, so ascending object ids):
 * each insert lands at the end of a leaf, and a leaf that overflows
 * there keeps what it holds, full, rather than splitting in halves;
 * compressed files' ctail items (raw clusters here) are cut to fill a
 * leaf as tails are. The leaves must come out nearly full. */
#define NSEQ 400

struct leaf_fill {
	uint64_t leaves, free;
};

static int leaf_count(void *ctx, uint64_t blk, unsigned level,
		      const uint8_t *node)
{
	struct leaf_fill *f = ctx;
	struct fmt_node_header h;

	(void)blk;
	if (level == FMT_NODE_LEAF_LEVEL &&
	    !fmt_node_header_decode(node, 4096, &h)) {
		f->leaves++;
		f->free += h.free_space;
	}
	return 0;
}

static void in_order(const char *spec, int ccreg)
{
	struct r4_error err = { 0, "", 0 };
	struct leaf_fill f = { 0, 0 };
	struct r4_attr a;
	struct r4_txn *t;
	struct r4_vol *v;
	char name[64], rel[512];
	int rc, same = 1;

	printf("# files in key order, -o '%s'\n", spec);
	EU_SETUP("rm -rf '%s/host' '%s/v.img' && mkdir -p '%s/host/seq'",
		 eu_dir, eu_dir, eu_dir);
	if (!ok(eu_mkfs("v.img", 64, spec) == 0, "r4_mkfs") ||
	    !ok(eu_open("v.img", &v) == 0, "open read-write"))
		return;
	rc = r4_txn_begin(v, &t, &err);
	eu_attr(&a, S_IFDIR | 0755);
	rc = rc ? rc : r4_mkdir(t, "/seq", &a, &err);
	eu_attr(&a, S_IFREG | 0644);
	for (unsigned i = 0; !rc && i < NSEQ; i++) {
		struct eu_data d = { 1100 + (i * 1237) % 2800, 0, i, { 0 } };

		snprintf(name, sizeof(name), "/seq/s%04u", i);
		snprintf(rel, sizeof(rel), "host%s", name);
		rc = r4_create(t, name, &a, d.size, eu_data_fn, &d, &err);
		eu_host_file(rel, d.size, i);
	}
	if (!rc)
		rc = r4_txn_commit(t, &err);
	else
		r4_txn_abort(t);
	ok(!rc, "%d files in one transaction %s", NSEQ, err.msg);
	ok(!r4_tree_walk(v, leaf_count, &f, &err), "walk %s", err.msg);
	/* measured: 25 bytes free a leaf (tails), 28 (ctails); 184 and
	 * 202 when leaves split in halves, 1,206 when ctails are not cut */
	ok(f.leaves && f.free / f.leaves < 100, "%llu leaves, %llu bytes "
	   "free in each on average", (unsigned long long)f.leaves,
	   (unsigned long long)(f.leaves ? f.free / f.leaves : 0));
	for (unsigned i = 0; ccreg && i < NSEQ; i++) {
		struct eu_data d = { 1100 + (i * 1237) % 2800, 0, i, { 0 } };
		static uint8_t got[4000];
		struct r4_objref o;
		size_t n = 0;
		uint64_t off;
		const void *b;
		size_t len;

		snprintf(name, sizeof(name), "/seq/s%04u", i);
		if (r4_lookup(v, name, &o, &err) ||
		    r4_read(v, &o, 0, got, sizeof(got), &n, &err) ||
		    n != d.size || eu_data_fn(&d, &off, &b, &len, &err) != 1 ||
		    memcmp(got, b, len)) {
			printf("# %s reads back wrong (%zu bytes) %s\n", name,
			       n, err.msg);
			same = 0;
			break;
		}
	}
	eu_close(v);
	if (ccreg) {
		/* r4ref cannot read compressed bodies: r4_read instead */
		ok(same, "every file reads back exactly");
		if (eu_have_fsck())
			ok(eu_fsck("v.img"), "fsck.reiser4 says consistent");
		else
			tap_skip(1, "fsck.reiser4 not installed");
		ok(eu_check("v.img"), "r4_check is clean");
	} else {
		judge("files in key order");
	}
}

/* tree_mod_lazy (what r4pack add uses): the same changes with leaf
 * writes deferred make the same image, byte for byte; reads in the
 * middle of the transaction see every change. Files go into 30
 * directories in a scrambled order (many leaves, inserts in front of a
 * leaf's first key and after the last), some are removed again, and
 * one directory gets long names enough to cut its entry item. */
#define NLAZY 1500

static void lazy_name(char *buf, size_t len, unsigned j)
{
	if (j % 4 == 0)
		snprintf(buf, len, "/wide/a_long_name_to_fill_directory_items"
			 "_quickly_%05u", j);
	else
		snprintf(buf, len, "/l%02u/f%05u", j % 30, j);
}

static int lazy_run(const char *img, int lazy, unsigned *bad,
		    struct tree_mod_stats *st)
{
	struct r4_error err = { 0, "", 0 };
	struct r4_attr a;
	struct r4_txn *t;
	struct r4_vol *v;
	char name[128];
	int rc;

	if (eu_open(img, &v))
		return -1;
	rc = r4_txn_begin(v, &t, &err);
	if (!rc && lazy)
		rc = tree_mod_lazy(&t->mod, &err);
	eu_attr(&a, S_IFDIR | 0755);
	for (unsigned d = 0; !rc && d < 31; d++) {
		if (d < 30)
			snprintf(name, sizeof(name), "/l%02u", d);
		else
			snprintf(name, sizeof(name), "/wide");
		rc = r4_mkdir(t, name, &a, &err);
	}
	eu_attr(&a, S_IFREG | 0644);
	for (unsigned i = 0; !rc && i < NLAZY; i++) {
		unsigned j = (i * 7919u) % NLAZY;
		struct eu_data d = { (j * 37u) % 3000, 0, j, { 0 } };

		lazy_name(name, sizeof(name), j);
		rc = r4_create(t, name, &a, d.size, eu_data_fn, &d, &err);
		if (!rc && i % 97 == 96) {
			/* the file just made reads back now */
			static uint8_t got[3000];
			struct eu_data e = { (j * 37u) % 3000, 0, j, { 0 } };
			struct r4_objref o;
			size_t n = 0;
			uint64_t off;
			const void *b = NULL;
			size_t len = 0;

			rc = r4_lookup(v, name, &o, &err);
			if (!rc)
				rc = r4_read(v, &o, 0, got, sizeof(got), &n,
					     &err);
			if (!rc && e.size)
				eu_data_fn(&e, &off, &b, &len, &err);
			if (!rc && (n != e.size || (n && memcmp(got, b, n))))
				(*bad)++;
		}
		if (!rc && i % 151 == 150) {
			lazy_name(name, sizeof(name),
				  ((i - 3) * 7919u) % NLAZY);
			rc = r4_unlink(t, name, &err);
		}
	}
	*st = t->mod.st;
	if (rc) {
		printf("# %s: %s\n", name, err.msg);
		r4_txn_abort(t);
	} else if ((rc = r4_txn_commit(t, &err))) {
		printf("# commit: %s\n", err.msg);
	}
	eu_close(v);
	return rc;
}

static void lazy_same(void)
{
	struct tree_mod_stats s0, s1;
	unsigned bad0 = 0, bad1 = 0;
	uint64_t enc0, enc1;

	printf("# deferred leaf writes\n");
	EU_SETUP("rm -f '%s/e.img' '%s/l.img'", eu_dir, eu_dir);
	tap_require(eu_mkfs("e.img", 64, "") == 0, "r4_mkfs");
	EU_SETUP("cp '%s/e.img' '%s/l.img'", eu_dir, eu_dir);
	ok(lazy_run("e.img", 0, &bad0, &s0) == 0, "written at once");
	ok(lazy_run("l.img", 1, &bad1, &s1) == 0, "written deferred");
	ok(!bad0 && !bad1, "files read back in the transaction (%u, %u "
	   "wrong)", bad0, bad1);
	ok(s1.deferred > NLAZY && s1.synced > 0 && !s0.deferred,
	   "%llu leaf rewrites deferred, %llu leaves written for readers "
	   "or at commit", (unsigned long long)s1.deferred,
	   (unsigned long long)s1.synced);
	/* nodes a split or merge makes are deferred too: each encoded once
	 * when it leaves the cache, not once per split */
	enc0 = s0.nodes_written;
	enc1 = s1.synced + (s1.nodes_written - s1.deferred);
	ok(enc1 * 2 < enc0, "deferred: %llu nodes encoded, at once: %llu",
	   (unsigned long long)enc1, (unsigned long long)enc0);
	ok(s1.nodes_written == s0.nodes_written && s1.splits == s0.splits,
	   "the same node changes (%llu, %llu splits)",
	   (unsigned long long)s1.nodes_written,
	   (unsigned long long)s1.splits);
	ok(eu_sh("cmp -s '%s/e.img' '%s/l.img'", eu_dir, eu_dir) == 0,
	   "the two images are the same, byte for byte");
	ok(eu_check("l.img"), "r4_check is clean");
	if (eu_have_fsck())
		ok(eu_fsck("l.img"), "fsck.reiser4 says consistent");
	else
		tap_skip(1, "fsck.reiser4 not installed");
}

/* An add's stream (r4pack add: r4_txn_add_entry, leaf writes deferred):
 * the lookups each entry makes (is the name there, the directory item,
 * the directory's stat data) read the deferred leaves as they are
 * (tree_mod_peek), they do not write them; names added twice replace
 * the first file, and every file reads back after the commit. */
#define NADD 900
#define ADD_SIZE(i, pass) (((i) * 53u + (pass) * 701u) % 2500)

static int add_run(const char *img, struct tree_mod_stats *st)
{
	struct r4_error err = { 0, "", 0 };
	struct eu_data d;
	struct r4_txn *t;
	struct r4_vol *v;
	char name[64];
	int rc;

	if (eu_open(img, &v))
		return -1;
	rc = r4_txn_begin(v, &t, &err);
	for (unsigned pass = 0; pass < 2; pass++) {
		for (unsigned i = 0; !rc && i < NADD; i += pass ? 7 : 1) {
			struct r4_entry e = { .path = name,
					      .type = R4_ENT_REG,
					      .mode = 0644,
					      .data = eu_data_fn,
					      .data_ctx = &d };

			memset(&d, 0, sizeof(d));
			d.size = e.size = ADD_SIZE(i, pass);
			d.seed = i + pass * 10000;
			snprintf(name, sizeof(name), "a%u/f%05u",
				 i / (NADD / 3), i);
			rc = r4_txn_add_entry(t, &e, &err);
		}
	}
	*st = t->mod.st;
	if (rc) {
		printf("# %s: %s\n", name, err.msg);
		r4_txn_abort(t);
	} else if ((rc = r4_txn_commit(t, &err))) {
		printf("# commit: %s\n", err.msg);
	}
	eu_close(v);
	return rc;
}

/* Files whose content is not what add_run wrote. */
static unsigned add_bad(const char *img)
{
	static uint8_t got[3000];
	struct r4_error err = { 0, "", 0 };
	struct r4_vol *v;
	unsigned bad = 0;
	char name[64];

	if (eu_open(img, &v))
		return NADD;
	for (unsigned i = 0; i < NADD; i++) {
		unsigned pass = i % 7 == 0;
		struct eu_data e = { ADD_SIZE(i, pass), 0, i + pass * 10000,
				     { 0 } };
		struct r4_objref o;
		const void *b = NULL;
		size_t n = 0, len = 0;
		uint64_t off;

		snprintf(name, sizeof(name), "/a%u/f%05u", i / (NADD / 3), i);
		if (r4_lookup(v, name, &o, &err) ||
		    r4_read(v, &o, 0, got, sizeof(got), &n, &err)) {
			bad++;
			continue;
		}
		if (e.size)
			eu_data_fn(&e, &off, &b, &len, &err);
		if (n != e.size || (n && memcmp(got, b, n)))
			bad++;
	}
	eu_close(v);
	return bad;
}

static void add_lookups(void)
{
	struct tree_mod_stats s;

	printf("# an add's lookups read deferred leaves\n");
	EU_SETUP("rm -f '%s/a.img'", eu_dir);
	tap_require(eu_mkfs("a.img", 64, "") == 0, "r4_mkfs");
	ok(add_run("a.img", &s) == 0, "%u files added, %u again", NADD,
	   (NADD + 6) / 7);
	/* a leaf written at each lookup: some 3 per 5 deferred rewrites */
	ok(s.deferred > NADD && s.synced * 4 < s.deferred,
	   "%llu leaf rewrites deferred, %llu leaves written for readers "
	   "or at commit", (unsigned long long)s.deferred,
	   (unsigned long long)s.synced);
	is_u64(add_bad("a.img"), 0, "every file reads back, the second "
	       "add's where it replaced one");
	ok(eu_check("a.img"), "r4_check is clean");
	if (eu_have_fsck())
		ok(eu_fsck("a.img"), "fsck.reiser4 says consistent");
	else
		tap_skip(1, "fsck.reiser4 not installed");
	/* nodes written before the commit (txn_write_behind), most of them
	 * read again later: the same files */
	EU_SETUP("rm -f '%s/w.img'", eu_dir);
	tap_require(eu_mkfs("w.img", 64, "") == 0, "r4_mkfs");
	obj_add_write_behind(16);
	ok(add_run("w.img", &s) == 0, "the same add, 16 node blocks kept");
	obj_add_write_behind(2048);
	is_u64(add_bad("w.img"), 0, "every file reads back");
	ok(eu_check("w.img"), "r4_check is clean");
	if (eu_have_fsck())
		ok(eu_fsck("w.img"), "fsck.reiser4 says consistent");
	else
		tap_skip(1, "fsck.reiser4 not installed");
}

/* What r4pack add does before and while it replaces a file of a
 * directory it is filling (the sink's look at the name: r4_txn_mode;
 * the old file's stat data, body items and entry) reads the deferred
 * leaves as they are: no leaf is written for it. */
#define NREP 240
static void replace_reads(void)
{
	struct r4_error err = { 0, "", 0 };
	struct eu_data d;
	struct r4_txn *t;
	struct r4_vol *v;
	uint64_t in_look = 0, in_rep = 0, s0;
	unsigned regs = 0;
	char name[64];
	int rc;

	EU_SETUP("rm -f '%s/r.img'", eu_dir);
	tap_require(eu_mkfs("r.img", 64, "") == 0, "r4_mkfs");
	tap_require(eu_open("r.img", &v) == 0, "open r.img");
	rc = r4_txn_begin(v, &t, &err);
	for (unsigned i = 0; !rc && i < NREP + NREP / 3; i++) {
		unsigned f = i < NREP ? i : (i - NREP) * 3;
		struct r4_entry e = { .path = name, .type = R4_ENT_REG,
				      .mode = 0644, .data = eu_data_fn,
				      .data_ctx = &d };
		uint32_t mode = 0;

		memset(&d, 0, sizeof(d));
		d.size = e.size = ADD_SIZE(f, i >= NREP);
		d.seed = i;
		snprintf(name, sizeof(name), "r/f%05u", f);
		s0 = t->mod.st.synced;
		if (i >= NREP && !r4_txn_mode(t, name, &mode, &err))
			regs += S_ISREG(mode);
		in_look += t->mod.st.synced - s0;
		s0 = t->mod.st.synced;
		rc = r4_txn_add_entry(t, &e, &err);
		if (i >= NREP)
			in_rep += t->mod.st.synced - s0;
	}
	ok(!rc && !r4_txn_commit(t, &err), "%u files added, %u replaced: %s",
	   NREP, NREP / 3, rc ? err.msg : "committed");
	if (rc)
		r4_txn_abort(t);
	eu_close(v);
	is_int(regs, NREP / 3, "r4_txn_mode finds each name a regular file");
	is_u64(in_look, 0, "no leaf written for the looks");
	is_u64(in_rep, 0, "no leaf written for the replaced files' reads");
	ok(eu_check("r.img"), "r4_check is clean");
}

/* One record of block ownership, the transaction's (txn_alloc_in): a
 * tree writer rewrites in place the nodes it allocated in its scope,
 * and moves any other, even one its transaction allocated before the
 * writer began (as the repair's and repacker's writers need: their
 * images stay as they were). */
static void scope_rule(void)
{
	struct r4_error err = { 0, "", 0 };
	struct io_block *b = NULL;
	struct r4_attr a;
	struct r4_txn *t;
	struct r4_vol *v;
	uint64_t mine = 0, other = 0, r0, r1, r2, r3;
	uint32_t s1, s2;
	int rc;

	EU_SETUP("rm -f '%s/s.img'", eu_dir);
	tap_require(eu_mkfs("s.img", 64, "") == 0, "r4_mkfs");
	tap_require(eu_open("s.img", &v) == 0, "open s.img");
	tap_require(!r4_txn_begin(v, &t, &err), "begin: %s", err.msg);
	s1 = txn_scope_begin(t->t);
	s2 = txn_scope_begin(t->t);
	rc = txn_alloc_in(t->t, s1, 0, &mine, &err) ||
	     txn_alloc(t->t, 0, &other, &err) ||
	     txn_new(t->t, mine, &b, &err);
	if (b)
		txn_put(t->t, b);
	ok(!rc && s1 && s2 != s1 && txn_owns_in(t->t, mine, s1) &&
	   !txn_owns_in(t->t, mine, s2) && !txn_owns_in(t->t, mine, 0) &&
	   txn_owns(t->t, other) && !txn_owns_in(t->t, other, s1) &&
	   txn_scope_blocks(t->t, s1) == 1, "a block is owned in the scope "
	   "it was allocated in only (%s)", rc ? err.msg : "ok");
	rc = txn_free(t->t, mine, 1, &err) || txn_free(t->t, other, 1, &err);
	ok(!rc && !txn_owns_in(t->t, mine, s1) &&
	   !txn_scope_blocks(t->t, s1), "a freed block is owned no more");
	{
		uint64_t again = 0;

		rc = txn_alloc_in(t->t, s2, mine, &again, &err);
		ok(!rc && again == mine && txn_owns_in(t->t, mine, s2) &&
		   !txn_owns_in(t->t, mine, s1), "a block freed and allocated "
		   "again belongs to the scope of its new allocation only");
		if (!rc)
			rc = txn_free(t->t, again, 1, &err);
	}

	eu_attr(&a, S_IFDIR | 0755);
	r0 = t->mod.root;
	rc = r4_mkdir(t, "/a", &a, &err);
	r1 = t->mod.root;
	/* a new writer on the same transaction, as the repair makes one */
	tree_mod_fini(&t->mod);
	if (!rc)
		rc = tree_mod_init(&t->mod, v, t->t, &err);
	if (!rc)
		rc = r4_mkdir(t, "/b", &a, &err);
	r2 = t->mod.root;
	if (!rc)
		rc = r4_mkdir(t, "/c", &a, &err);
	r3 = t->mod.root;
	ok(!rc && r1 != r0, "the first writer moves the root (%s)",
	   rc ? err.msg : "ok");
	ok(r2 != r1, "a node allocated before the writer's scope moves: "
	   "root %llu -> %llu", (unsigned long long)r1,
	   (unsigned long long)r2);
	ok(r3 == r2, "a node allocated in the writer's scope is rewritten in "
	   "place: root %llu -> %llu", (unsigned long long)r2,
	   (unsigned long long)r3);
	ok(!r4_txn_commit(t, &err), "commit: %s", err.msg);
	eu_close(v);
	ok(eu_check("s.img"), "r4_check is clean");
}

int main(void)
{
	plan(77 + 8 + 8 + 8 + 5 + 5 + 5 + 8);
	eu_init("test_modify");
	big_dir("");
	big_dir("node=node41,hash=tea_hash,fibration=lexic_fibre");
	mixed();
	in_order("", 0);
	in_order("create=ccreg40,compressMode=none", 1);
	lazy_same();
	add_lookups();
	replace_reads();
	scope_rule();
	eu_fini();
	return tap_done();
}
