/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libimage: the one-pass builder (r4_pack_*). Volumes are built in a
 * temporary folder from entries given here; each is checked by the
 * oracle (fsck.reiser4 --check must say "FS is consistent") and read
 * back with `r4ref manifest` (libreiser4), which must equal the manifest
 * this test expects from its own model of what it added. Without the
 * oracle those checks are skipped; the builder's own results are still
 * checked. */
#include "tap.h"
#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>
#include "r4/pack.h"
#include "r4/read.h"
#include "format/node.h"

#define SDE 1700000000
#define ROOT_MTIME 1600000000

/* ---- file content: a pattern with an optional hole ---- */

struct gen {
	uint64_t size, pos, hole_lo, hole_hi;
	unsigned seed;
};

/* One file is read at a time: one chunk buffer for all. */
static uint8_t genbuf[65536];

static uint8_t pat(const struct gen *g, uint64_t i)
{
	if (i >= g->hole_lo && i < g->hole_hi)
		return 0;
	return (uint8_t)((i * 131 + g->seed + (i >> 12)) & 0xff);
}

static int gen_fn(void *ctx, uint64_t *off, const void **buf, size_t *len,
		  struct r4_error *err)
{
	struct gen *g = ctx;
	size_t n;

	(void)err;
	if (g->pos >= g->hole_lo && g->pos < g->hole_hi)
		g->pos = g->hole_hi;
	if (g->pos >= g->size)
		return 0;
	n = g->size - g->pos < sizeof(genbuf) ? (size_t)(g->size - g->pos) :
						 sizeof(genbuf);
	if (g->pos < g->hole_lo && g->pos + n > g->hole_lo)
		n = (size_t)(g->hole_lo - g->pos);
	for (size_t i = 0; i < n; i++)
		genbuf[i] = pat(g, g->pos + i);
	*off = g->pos;
	*buf = genbuf;
	*len = n;
	g->pos += n;
	return 1;
}

static uint64_t gen_hash(const struct gen *g)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (uint64_t i = 0; i < g->size; i++)
		h = (h ^ pat(g, i)) * 0x100000001b3ULL;
	return h;
}

/* ---- the model: what the manifest must say ---- */

struct mobj {
	char type;
	unsigned mode;
	uint32_t uid, gid;
	uint64_t size, hash;
	int64_t mtime;
	char *target;
	unsigned maj, min;
	struct gen g;		/* regular files */
};

struct mpath {
	char *path;
	int obj;
};

static struct mobj *objs;
static size_t capobjs, cappaths;
/* path -> index: buckets of chains through 'chain' */
#define NBUCKETS 65536
static int bucket[NBUCKETS], *chain;
static struct mpath *paths;
static size_t nobjs, npaths;
static char dir[256], img[300];
static struct r4_pack *b;
static int add_failed;

static void model_reset(void)
{
	for (size_t i = 0; i < nobjs; i++)
		free(objs[i].target);
	for (size_t i = 0; i < npaths; i++)
		free(paths[i].path);
	free(objs);
	free(paths);
	free(chain);
	memset(bucket, 0, sizeof(bucket));
	objs = NULL;
	paths = NULL;
	chain = NULL;
	nobjs = npaths = capobjs = cappaths = 0;
}


static unsigned phash(const char *p)
{
	unsigned h = 2166136261u;

	for (; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	return h % NBUCKETS;
}

static int find_path(const char *p)
{
	for (int i = bucket[phash(p)] - 1; i >= 0; i = chain[i] - 1)
		if (!strcmp(paths[i].path, p))
			return i;
	return -1;
}

static int new_mobj(char type, unsigned mode, uint32_t uid, uint32_t gid,
		    int64_t mtime)
{
	if (nobjs == capobjs) {
		capobjs = capobjs ? capobjs * 2 : 64;
		objs = realloc(objs, capobjs * sizeof(*objs));
	}
	memset(&objs[nobjs], 0, sizeof(*objs));
	objs[nobjs].type = type;
	objs[nobjs].mode = mode;
	objs[nobjs].uid = uid;
	objs[nobjs].gid = gid;
	objs[nobjs].mtime = mtime < 0 ? 0 : mtime > UINT32_MAX ? UINT32_MAX :
			    mtime;
	return (int)nobjs++;
}

static void set_path(const char *p, int obj)
{
	int i = find_path(p);

	if (i >= 0) {
		paths[i].obj = obj;
		return;
	}
	if (npaths == cappaths) {
		cappaths = cappaths ? cappaths * 2 : 64;
		paths = realloc(paths, cappaths * sizeof(*paths));
		chain = realloc(chain, cappaths * sizeof(*chain));
	}
	paths[npaths].path = strdup(p);
	paths[npaths].obj = obj;
	chain[npaths] = bucket[phash(p)];
	bucket[phash(p)] = (int)++npaths;
}

/* Parents the builder makes: 0755, the root's owner, the build time. */
static void model_parents(const char *p)
{
	char buf[8192];

	for (const char *s = strchr(p, '/'); s; s = strchr(s + 1, '/')) {
		snprintf(buf, sizeof(buf), "%.*s", (int)(s - p), p);
		if (find_path(buf) < 0)
			set_path(buf, new_mobj('d', 0755, 0, 0, SDE));
	}
}

static void add_entry(struct r4_entry *e, int obj)
{
	struct r4_error err = { 0 };

	if (r4_pack_add(b, e, &err)) {
		printf("# add %s: %s\n", e->path, err.msg);
		add_failed++;
		return;
	}
	if (obj >= 0 && *e->path) {
		model_parents(e->path);
		set_path(e->path, obj);
	}
}

static void base_entry(struct r4_entry *e, const char *path,
		       enum r4_entry_type t, unsigned mode)
{
	memset(e, 0, sizeof(*e));
	e->path = path;
	e->type = t;
	e->mode = mode;
	e->uid = 1000;
	e->gid = 100;
	e->mtime = e->atime = e->ctime = 1234567890;
}

static void add_dir(const char *p, unsigned mode)
{
	struct r4_entry e;
	int i = find_path(p);

	base_entry(&e, p, R4_ENT_DIR, mode);
	if (i >= 0 && objs[paths[i].obj].type == 'd') {
		struct mobj *o = &objs[paths[i].obj];

		o->mode = mode;
		o->uid = e.uid;
		o->gid = e.gid;
		o->mtime = e.mtime;
		add_entry(&e, -1);
		return;
	}
	add_entry(&e, new_mobj('d', mode, 1000, 100, 1234567890));
}

static void add_file_at(const char *p, uint64_t size, unsigned seed,
			uint64_t hole_lo, uint64_t hole_hi, int stream,
			int64_t mtime, uint32_t uid)
{
	struct r4_entry e;
	int o = new_mobj('f', 0644, uid, 100, mtime);
	struct gen *g = &objs[o].g;

	base_entry(&e, p, R4_ENT_REG, 0644);
	e.uid = uid;
	e.mtime = mtime;
	e.mtime_ns = 5;
	e.size = size;
	objs[o].size = size;
	g->size = size;
	g->seed = seed;
	g->hole_lo = hole_lo;
	g->hole_hi = hole_hi;
	objs[o].hash = gen_hash(g);
	if (stream) {
		e.data = gen_fn;
		e.data_ctx = g;
	}
	add_entry(&e, o);
}

static void add_file(const char *p, uint64_t size, unsigned seed, int stream)
{
	add_file_at(p, size, seed, UINT64_MAX, UINT64_MAX, stream, 1234567890,
		    1000);
}

static void add_link(const char *p, const char *target)
{
	struct r4_entry e;

	base_entry(&e, p, R4_ENT_HARDLINK, 0);
	e.target = target;
	add_entry(&e, paths[find_path(target)].obj);
}

static void add_symlink(const char *p, const char *target)
{
	struct r4_entry e;
	int o = new_mobj('l', 0777, 1000, 100, 1234567890);

	base_entry(&e, p, R4_ENT_SYMLINK, 0777);
	e.target = target;
	objs[o].target = strdup(target);
	objs[o].size = strlen(target);
	add_entry(&e, o);
}

static void add_special(const char *p, enum r4_entry_type t, char type,
			unsigned maj, unsigned min)
{
	struct r4_entry e;
	int o = new_mobj(type, 0600, 70000, 80000, 1234567890);

	base_entry(&e, p, t, 0600);
	e.uid = 70000;
	e.gid = 80000;
	e.rdev_major = maj;
	e.rdev_minor = min;
	objs[o].maj = maj;
	objs[o].min = min;
	add_entry(&e, o);
}

/* Deferred data: the data source finds the model file by path. */
static int src_open(void *src_ctx, const char *path, r4_data_fn *fn,
		    void **ctx, struct r4_error *err)
{
	int i = find_path(path);

	(void)src_ctx;
	(void)err;
	if (i < 0)
		return -ENOENT;
	objs[paths[i].obj].g.pos = 0;
	*fn = gen_fn;
	*ctx = &objs[paths[i].obj].g;
	return 0;
}

static void src_close(void *ctx)
{
	(void)ctx;
}

static const struct r4_data_source src = { src_open, src_close, NULL,
					   0 };

/* Names kept in memory before the spill (-1: the packer's default). */
static int64_t spill_after = -1;
static int64_t spool_memory = -1;
static uint64_t cp_done, cp_total, cp_calls, cp_back;

/* The spool's copy progress: done never goes back. */
static void copy_progress(void *ctx, uint64_t done, uint64_t total)
{
	(void)ctx;
	cp_back += done < cp_done;
	cp_done = done;
	cp_total = total;
	cp_calls++;
}

static void begin_keep(const char *spec, uint64_t size, int keep)
{
	struct r4_pack_opts o;
	struct r4_error err = { 0 };
	struct r4_entry root;

	model_reset();
	add_failed = 0;
	r4_pack_opts_init(&o);
	o.source = &src;
	o.mkfs.have_uuid = 1;
	o.mkfs.reproducible = 1;
	o.mkfs.mkfs_time = 1700000000;
	o.spill_after = spill_after;
	o.spool_memory = spool_memory;
	o.copy_progress = copy_progress;
	cp_done = cp_total = cp_calls = cp_back = 0;
	memset(o.mkfs.uuid, 0x5a, sizeof(o.mkfs.uuid));
	if (spec)
		r4_mkfs_override(&o.mkfs, spec, &err);
	if (size) {
		o.auto_size = 0;
		o.mkfs.size_bytes = size;
	}
	if (!keep)
		unlink(img);
	b = NULL;
	if (r4_pack_begin(img, &o, &b, &err))
		printf("# begin: %s\n", err.msg);
	memset(&root, 0, sizeof(root));
	root.path = "";
	root.type = R4_ENT_DIR;
	root.mode = 0755;
	root.mtime = ROOT_MTIME;
	add_entry(&root, -1);
	set_path("", new_mobj('d', 0755, 0, 0, ROOT_MTIME));
}

static void begin(const char *spec, uint64_t size)
{
	begin_keep(spec, size, 0);
}

static int finish(struct r4_pack_result *res)
{
	struct r4_error err = { 0 };
	int rc = r4_pack_finish(b, res, &err);

	b = NULL;
	if (rc)
		printf("# finish: %s\n", err.msg);
	return rc;
}

/* ---- expected manifest ---- */

static void put_esc(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c == 0x7f || c == '\\')
			fprintf(f, "\\x%02x", c);
		else
			fputc(c, f);
	}
}

static int path_cmp(const void *a, const void *b2)
{
	const struct mpath *x = a, *y = b2;

	return strcmp(x->path[0] ? x->path : "/", y->path[0] ? y->path : "/");
}

static void write_expected(const char *file)
{
	FILE *f = fopen(file, "w");
	int *label = calloc(nobjs, sizeof(int)), next = 1;
	unsigned *links = calloc(nobjs, sizeof(unsigned));
	struct mpath *sorted = malloc(npaths * sizeof(*sorted));

	memcpy(sorted, paths, npaths * sizeof(*sorted));
	qsort(sorted, npaths, sizeof(*sorted), path_cmp);
	for (size_t i = 0; i < npaths; i++)
		links[sorted[i].obj]++;
	for (size_t i = 0; i < npaths; i++) {
		const struct mpath *mp = &sorted[i];
		struct mobj *o = &objs[mp->obj];
		unsigned nlink = links[mp->obj];

		if (!label[mp->obj])
			label[mp->obj] = next++;
		fputc('/', f);
		put_esc(f, mp->path);
		fprintf(f, "\t%c\t%04o\t%u\t%u\t", o->type, o->mode, o->uid,
			o->gid);
		if (o->type == 'd')
			fprintf(f, "-\t%lld\t-\t", (long long)o->mtime);
		else
			fprintf(f, "%llu\t%lld\t%u\t",
				(unsigned long long)o->size,
				(long long)o->mtime, nlink);
		if (o->target)
			put_esc(f, o->target);
		else
			fputc('-', f);
		if (o->type == 'c' || o->type == 'b')
			fprintf(f, "\t%u:%u", o->maj, o->min);
		else
			fputs("\t-", f);
		if (o->type == 'f')
			fprintf(f, "\t%016llx", (unsigned long long)o->hash);
		else
			fputs("\t-", f);
		fprintf(f, "\t%d\n", label[mp->obj]);
	}
	free(label);
	free(links);
	free(sorted);
	fclose(f);
}

static int have(const char *prog)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", prog);
	return system(cmd) == 0;
}

static int sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* The oracle's verdicts on img. */
static void oracle(const char *what, int fsck, const char *reader)
{
	if (fsck && have("fsck.reiser4")) {
		int rc = sh("fsck.reiser4 --check -f -y '%s' >'%s/fsck.out' "
			    "2>&1", img, dir);

		ok(rc == 0 && sh("grep -q 'FS is consistent' '%s/fsck.out'",
				 dir) == 0, "%s: fsck.reiser4 says consistent",
		   what);
		if (rc)
			sh("tail -n 15 '%s/fsck.out' | sed 's/^/# /'", dir);
	} else {
		tap_skip(1, "fsck.reiser4 not used here");
	}
	if (have(reader)) {
		int rc;

		char exp[300];

		snprintf(exp, sizeof(exp), "%s/expected", dir);
		write_expected(exp);
		rc = sh("%s %s '%s' >'%s/got' 2>'%s/got.err'", reader,
			strcmp(reader, "r4ref") ? "" : "manifest", img, dir,
			dir);
		ok(rc == 0 &&
		   sh("cmp -s '%s/got' '%s/expected'", dir, dir) == 0,
		   "%s: %s manifest equals the expected one", what, reader);
		if (sh("cmp -s '%s/got' '%s/expected'", dir, dir))
			sh("diff '%s/expected' '%s/got' | head -n 10 | "
			   "sed 's/^/# /'; head -n 5 '%s/got.err' | "
			   "sed 's/^/# /'", dir, dir, dir);
	} else if (!strcmp(reader, "r4ref") && getenv("R4_HAVE_R4REF") &&
		   !strcmp(getenv("R4_HAVE_R4REF"), "1")) {
		ok(0, "%s: r4ref not found although libreiser4 is installed",
		   what);
	} else {
		tap_skip(1, "manifest reader not built");
	}
}

/* ---- stat data read back through our reader ---- */

static struct r4_vol *vol;

static int st_of(const char *path, struct r4_stat *st)
{
	struct r4_error err = { 0 };
	struct r4_objref o;

	memset(st, 0, sizeof(*st));
	if (r4_lookup(vol, path, &o, &err) || r4_stat(vol, &o, st, &err)) {
		printf("# %s: %s\n", path, err.msg);
		return -1;
	}
	return 0;
}

static void expect_stat(const char *what, const char *path, uint32_t nlink,
			uint64_t size, uint64_t bytes, uint64_t mask)
{
	struct r4_stat st;

	if (st_of(path, &st)) {
		ok(0, "%s: %s found", what, path);
		return;
	}
	is_int(st.nlink, nlink, "%s: %s nlink", what, path);
	is_u64(st.size, size, "%s: %s size", what, path);
	is_u64(st.bytes, bytes, "%s: %s bytes", what, path);
	is_u64(st.sd_mask, mask, "%s: %s stat-data extensions", what, path);
}

static void open_vol(void)
{
	struct r4_error err = { 0 };

	vol = NULL;
	if (r4_vol_open(img, R4_OPEN(R4_OPEN_RDONLY), &vol, &err))
		printf("# open: %s\n", err.msg);
}

static void close_vol(void)
{
	tap_must(r4_vol_close(vol, NULL));
	vol = NULL;
}

/* ---- cases ---- */

static void test_empty(void)
{
	struct r4_pack_result res;

	begin(NULL, 0);
	is_int(finish(&res), 0, "empty: built");
	is_u64(res.files, 0, "empty: no files");
	is_u64(res.dirs, 1, "empty: the root");
	is_u64(res.block_count % 16, 0, "empty: 64 KiB multiple");
	oracle("empty", 1, "r4ref");
}

static const uint64_t sizes[] = { 0, 1, 4095, 4096, 4097, 16383, 16384,
				  16385, 1 << 20 };

/* Every node of the image (a block with a node's header and magic) has
 * zeros between its item bodies and its item headers: the builder
 * opens a node over the bytes of the one before it. */
static void node_gaps(const char *what)
{
	uint8_t blk[4096];
	FILE *f = fopen(img, "rb");
	unsigned long nodes = 0, dirty = 0;

	while (f && fread(blk, 1, sizeof(blk), f) == sizeof(blk)) {
		struct fmt_node_header h;
		size_t i;

		if (fmt_node_header_decode(blk, sizeof(blk), &h) ||
		    h.magic != fmt_node_magic(h.plugin_id) || !h.level ||
		    h.level > FMT_NODE_MAX_LEVEL ||
		    h.free_space_start < fmt_node_header_size(h.plugin_id) ||
		    (size_t)h.free_space_start + h.free_space > sizeof(blk))
			continue;
		nodes++;
		for (i = 0; i < h.free_space; i++)
			if (blk[h.free_space_start + i])
				break;
		dirty += i < h.free_space;
	}
	if (f)
		fclose(f);
	ok(nodes > 1 && !dirty, "%s: the free middle of every node is zero "
	   "(%lu nodes, %lu not)", what, nodes, dirty);
}

static void test_sizes(const char *what, const char *spec, int stream,
		       int fsck, const char *reader)
{
	struct r4_pack_result res;
	char p[64];

	begin(spec, 0);
	add_dir("s", 0750);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		snprintf(p, sizeof(p), "s/f%llu", (unsigned long long)sizes[i]);
		add_file(p, sizes[i], (unsigned)i, stream);
		snprintf(p, sizeof(p), "d/f%llu", (unsigned long long)sizes[i]);
		add_file(p, sizes[i], (unsigned)i + 7, !stream);
	}
	/* 100 MiB with a hole of 60 MiB in the middle, and one that ends in
	 * a hole */
	add_file_at("s/sparse", 100 << 20, 3, 20 << 20, 80 << 20, 1,
		    1234567890, 1000);
	add_file_at("s/tailhole", 3 << 20, 4, 1 << 20, 3 << 20, stream,
		    1234567890, 1000);
	add_file_at("s/smallhole", 10000, 5, 100, 9000, stream, 1234567890,
		    1000);
	is_int(add_failed, 0, "%s: every entry added", what);
	is_int(finish(&res), 0, "%s: built", what);
	if (!spec || strcmp(spec, "formatting=tails"))
		ok(res.block_count < (100 << 20) / 4096, "%s: the hole takes "
		   "no space (%llu blocks)", what,
		   (unsigned long long)res.block_count);
	else	/* tails hold every byte, zeros too */
		ok(res.block_count > (100 << 20) / 4096, "%s: tails hold the "
		   "hole's zeros", what);
	oracle(what, fsck, reader);
	node_gaps(what);
	if (spec)
		return;
	open_vol();
	/* root: 3 + subdirs (its .. is itself); entries 2 + 2 names; 50
	 * bytes per short entry */
	expect_stat(what, "/", 5, 4, 200, 0x13);
	expect_stat(what, "/s", 2, 14, 700, 0x03);
	expect_stat(what, "/s/f4097", 1, 4097, 4097, 0x07);
	expect_stat(what, "/s/f16385", 1, 16385, 5 * 4096, 0x07);
	expect_stat(what, "/s/sparse", 1, 100 << 20, 40 << 20, 0x07);
	expect_stat(what, "/s/tailhole", 1, 3 << 20, 1 << 20, 0x07);
	expect_stat(what, "/s/smallhole", 1, 10000, 10000, 0x07);
	close_vol();
}

static void names_stats(void);

static void test_names(void)
{
	char name[300], p[4096], q[4096];

	begin(NULL, 0);
	memset(name, 'n', 255);
	name[255] = '\0';
	add_file(name, 10, 1, 1);
	name[254] = 'm';
	add_dir(name, 0700);
	snprintf(p, sizeof(p), "%s/inside", name);
	add_file(p, 100, 2, 0);
	/* a deep path: 60 levels, made by the builder */
	p[0] = '\0';
	for (int i = 0; i < 60; i++)
		snprintf(p + strlen(p), sizeof(p) - strlen(p), "%sl%d",
			 i ? "/" : "", i);
	strcpy(q, p);
	strcat(q, "/leaf");
	add_file(q, 5000, 3, 1);
	/* many hard links, across directories */
	add_file("links/orig", 3000, 4, 1);
	for (int i = 0; i < 200; i++) {
		snprintf(p, sizeof(p), "links/%s/l%03d", i % 2 ? "a" : "b", i);
		add_link(p, "links/orig");
	}
	add_file("links/big", 50000, 5, 0);
	add_link("links/a/big2", "links/big");
	add_symlink("sym/rel", "../links/orig");
	add_symlink("sym/abs", "/etc/passwd");
	memset(q, 't', 3000);
	q[3000] = '\0';
	add_symlink("sym/long", q);
	add_special("dev/null", R4_ENT_CHR, 'c', 1, 3);
	add_special("dev/sda", R4_ENT_BLK, 'b', 8, 0);
	add_special("dev/big", R4_ENT_CHR, 'c', 4095, 1048575);
	add_special("dev/fifo", R4_ENT_FIFO, 'p', 0, 0);
	add_special("dev/sock", R4_ENT_SOCK, 's', 0, 0);
	add_file_at("times/before1970", 1, 1, UINT64_MAX, UINT64_MAX, 1,
		    -86400, 70000);
	add_file_at("times/after2038", 1, 1, UINT64_MAX, UINT64_MAX, 1,
		    (int64_t)1 << 31 | 12345, 4000000000u);
	add_file_at("times/after2106", 1, 1, UINT64_MAX, UINT64_MAX, 1,
		    (int64_t)1 << 33, 1);
	add_file("odd/tab\there", 1, 1, 1);
	add_file("odd/back\\slash", 1, 1, 1);
	is_int(add_failed, 0, "names: every entry added");
	is_int(finish(NULL), 0, "names: built");
	oracle("names", 1, "r4ref");
	names_stats();
}

static void names_stats(void)
{
	open_vol();
	expect_stat("names", "/links", 4, 6, 300, 0x03);
	expect_stat("names", "/links/orig", 201, 3000, 3000, 0x07);
	expect_stat("names", "/sym/long", 1, 3000, 0, 0x0b);
	expect_stat("names", "/dev/big", 1, 0, 0, 0x03);
	{
		struct r4_stat st;

		st_of("/dev/big", &st);
		is_u64(st.rdev, 4095u << 20 | 1048575, "names: rdev is "
		       "major << 20 | minor");
		st_of("/times/before1970", &st);
		is_int(st.mtime, 0, "names: times before 1970 are 0");
		is_int(st.mtime_ns, 0, "names: and lose their ns");
		st_of("/times/after2038", &st);
		is_int(st.mtime, (int64_t)1 << 31 | 12345, "names: 2038+ "
		       "fits");
		is_int(st.mtime_ns, 5, "names: ns kept");
		st_of("/times/after2106", &st);
		is_u64(st.mtime, UINT32_MAX, "names: after 2106 is the last "
		       "second");
	}
	close_vol();
}

static void test_bigdir(void)
{
	struct r4_pack_result res;
	char p[64];

	begin(NULL, 0);
	for (int i = 0; i < 30000; i++) {
		snprintf(p, sizeof(p), "big/entry-with-a-long-name-%05d", i);
		add_file(p, (uint64_t)(i % 7) * 100, (unsigned)i, 1);
	}
	is_int(add_failed, 0, "bigdir: every entry added");
	is_int(finish(&res), 0, "bigdir: built");
	ok(res.leaves > 100, "bigdir: spans many leaves (%llu)",
	   (unsigned long long)res.leaves);
	oracle("bigdir", 1, "r4ref");
}

static void test_hash(const char *spec)
{
	char p[128];

	begin(spec, 0);
	for (int i = 0; i < 300; i++) {
		snprintf(p, sizeof(p), "h/%03d-a-name-long-enough-to-be-hashed"
			 "-%d.c", i, i * 7);
		add_file(p, (uint64_t)i, (unsigned)i, 1);
		snprintf(p, sizeof(p), "h/s%d.o", i);
		add_file(p, 1, 1, 1);
	}
	is_int(add_failed, 0, "%s: every entry added", spec);
	is_int(finish(NULL), 0, "%s: built", spec);
	oracle(spec, 1, "r4ref");
}

static void test_replace(void)
{
	begin(NULL, 0);
	add_file("r/a", 100, 1, 1);
	add_link("r/b", "r/a");
	add_file("r/a", 200000, 2, 1);		/* replaces a; b keeps old */
	add_dir("r/d", 0700);
	add_dir("r/d", 0711);			/* attributes only */
	add_file("r/d/x", 1, 1, 1);
	add_symlink("r/s", "x");
	add_file("r/s", 5, 3, 0);		/* a file over a symlink */
	add_dir("r", 0701);
	is_int(add_failed, 0, "replace: every entry added");
	is_int(finish(NULL), 0, "replace: built");
	oracle("replace", 1, "r4ref");
}

/* r4_pack_probe answers the archive reader's questions in one walk;
 * what it found serves only the next add, and only of that path. */
static void test_probe(void)
{
	char same[8];
	size_t bad;
	int t, bt;

	begin(NULL, 0);
	add_file("pa/f", 10, 1, 1);
	add_dir("pb", 0755);
	t = r4_pack_probe(b, "pa/f", &bad, &bt);
	ok(t == R4_ENT_REG && !bad, "probe: a file under a directory");
	t = r4_pack_probe(b, "pa/f/x/y", &bad, &bt);
	ok(t == -1 && bad == 4 && bt == R4_ENT_REG,
	   "probe: a path through a file names the file");
	t = r4_pack_probe(b, "pa/none/y", &bad, &bt);
	ok(t == -1 && !bad, "probe: a path through a missing directory");
	ok(r4_pack_probe(b, "", &bad, &bt) == R4_ENT_DIR && !bad,
	   "probe: the root");
	/* a probe of one path, then the add of another */
	r4_pack_probe(b, "pa/n", &bad, &bt);
	add_file("pb/n", 20, 2, 1);
	/* a probe serves its path's add (another copy of the string),
	 * then a second add of that path replaces the first */
	r4_pack_probe(b, "pa/m", &bad, &bt);
	snprintf(same, sizeof(same), "pa/m");
	add_file(same, 30, 3, 1);
	add_file("pa/m", 40, 4, 1);
	is_int(add_failed, 0, "probe: every entry added");
	is_int(finish(NULL), 0, "probe: built");
	oracle("probe", 1, "r4ref");
}

/* Temporary files of the builder left in the folder. */
static int files_in_dir(void)
{
	char cmd[400];
	FILE *f;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "ls -A '%s' | grep -c 'r4pack\\|r4spool'",
		 dir);
	f = popen(cmd, "r");
	if (f && fscanf(f, "%d", &n) != 1)
		n = -1;
	if (f)
		pclose(f);
	return n;
}

static void expect_add_error(const char *what, struct r4_entry *e,
			     const char *want)
{
	struct r4_error err = { 0 };

	ok(r4_pack_add(b, e, &err) != 0, "%s: refused", what);
	ok(strstr(err.msg, want) != NULL, "%s: message '%s' has '%s'", what,
	   err.msg, want);
}

static void test_errors(void)
{
	struct r4_entry e;
	struct r4_error err = { 0 };
	struct gen g = { .size = 10, .hole_lo = UINT64_MAX,
			 .hole_hi = UINT64_MAX };
	FILE *f;
	char buf[16] = "";

	/* a target that holds something must survive a failed build */
	unlink(img);
	f = fopen(img, "w");
	fputs("keep me", f);
	fclose(f);
	begin_keep(NULL, 0, 1);
	add_file("f", 10, 1, 1);
	base_entry(&e, "nolink", R4_ENT_HARDLINK, 0);
	e.target = "missing/file";
	expect_add_error("link to a missing target", &e,
			 "nolink: hard link to 'missing/file'");
	base_entry(&e, "f/under", R4_ENT_REG, 0644);
	expect_add_error("a path through a file", &e, "f/under");
	base_entry(&e, "a/../b", R4_ENT_DIR, 0755);
	expect_add_error("a path with ..", &e, "a/../b");
	base_entry(&e, "dev", R4_ENT_CHR, 0600);
	e.rdev_major = 5000;
	expect_add_error("a major that does not fit", &e, "dev: device");
	base_entry(&e, "long", R4_ENT_REG, 0644);
	g.size = 10;
	e.size = 5;
	e.data = gen_fn;
	e.data_ctx = &g;
	expect_add_error("data longer than the size", &e,
			 "long: data is longer");
	ok(r4_pack_finish(b, NULL, &err) != 0, "finish after a data error "
	   "fails");
	b = NULL;
	f = fopen(img, "r");
	ok(f && fgets(buf, sizeof(buf), f) && !strcmp(buf, "keep me"),
	   "the target is untouched");
	if (f)
		fclose(f);
	is_int(files_in_dir(), 0, "no temporary file is left");
	/* abort */
	begin(NULL, 0);
	add_file("f", 100000, 1, 1);
	r4_pack_abort(b);
	b = NULL;
	is_int(files_in_dir(), 0, "abort leaves no temporary file");
	/* long names that collide under deg_hash: refused at finish */
	begin("hash=deg_hash", 0);
	add_file("c/the-same-15-ch-first-long-name", 1, 1, 1);
	add_file("c/the-same-15-ch-other-long-name", 1, 1, 1);
	{
		struct r4_error e2 = { 0 };

		ok(r4_pack_finish(b, NULL, &e2) != 0 &&
		   strstr(e2.msg, "the same key"), "deg_hash collision: '%s'",
		   e2.msg);
		b = NULL;
	}
	/* fixed size too small */
	begin(NULL, 1 << 20);
	add_file("big", 2 << 20, 1, 1);
	ok(add_failed == 1, "a file larger than the fixed size is refused");
	ok(finish(NULL) != 0, "and the build fails");
	unlink(img);
}

static void test_fixed_and_repro(void)
{
	struct r4_pack_result res;
	char a[400];

	begin("node=node41", 64 << 20);
	add_file("x/y", 40000, 1, 1);
	add_file("x/z", 400, 2, 0);
	is_int(finish(&res), 0, "fixed: built");
	is_u64(res.block_count, 16384, "fixed: 64 MiB");
	oracle("node41 fixed", 1, "r4ref");
	snprintf(a, sizeof(a), "%s.first", img);
	rename(img, a);
	begin("node=node41", 64 << 20);
	add_file("x/y", 40000, 1, 1);
	add_file("x/z", 400, 2, 0);
	is_int(finish(&res), 0, "repro: built again");
	ok(sh("cmp -s '%s' '%s'", a, img) == 0, "repro: byte-identical");
	unlink(a);
}

/* Names spilled to $TMPDIR (spill_after 0: every name of a
 * file) act as names in memory: a directory whose names are all
 * spilled is not replaced by a file, a spilled file is replaced and
 * linked to, a path through one is refused; the volume reads back. */
static void test_spill(void)
{
	struct r4_entry e;

	spill_after = 0;
	begin(NULL, 0);
	add_file("sd/x", 10, 1, 1);
	add_file("sd/y", 50000, 2, 1);
	base_entry(&e, "sd", R4_ENT_REG, 0644);
	expect_add_error("spill: a directory of spilled names under a file",
			 &e, "sd: would replace a directory that is not empty");
	base_entry(&e, "sd/x/under", R4_ENT_REG, 0644);
	expect_add_error("spill: a path through a spilled file", &e,
			 "sd/x/under");
	add_file("sd/y", 300, 3, 1);		/* replaces a spilled one */
	add_link("sd/z", "sd/x");		/* links to a spilled one */
	add_file("sd/x", 7, 4, 0);		/* z keeps the old x */
	is_int(add_failed, 0, "spill: every entry added");
	is_int(finish(NULL), 0, "spill: built");
	oracle("spill", 1, "r4ref");
	spill_after = -1;
}

/* Streamed data in the spool's memory (2 MiB here), in its file past
 * it (files and tails across the edge), or in the file only: the same
 * image; the copy's progress reaches the streamed blocks' bytes. */
static void spool_build(int64_t mem, const char *name)
{
	char p[64];

	spool_memory = mem;
	begin(NULL, 0);
	for (unsigned i = 0; i < 12; i++) {
		snprintf(p, sizeof(p), "m/f%u", i);
		add_file(p, i % 3 ? 700000 + i * 4099 : 3000 + i, i + 1, 1);
	}
	add_file_at("m/sparse", 5 << 20, 9, 1 << 20, 4 << 20, 1, 1234567890,
		    1000);
	is_int(add_failed, 0, "spool %s: every entry added", name);
	is_int(finish(NULL), 0, "spool %s: built", name);
	ok(cp_calls && !cp_back && cp_done == cp_total && cp_total > (6 << 20),
	   "spool %s: the copy's progress reaches its total (%llu of %llu, "
	   "%llu calls)", name, (unsigned long long)cp_done,
	   (unsigned long long)cp_total, (unsigned long long)cp_calls);
	spool_memory = -1;
}

static void test_spool_memory(void)
{
	char a[400], z[400];

	snprintf(a, sizeof(a), "%s.mem", img);
	snprintf(z, sizeof(z), "%s.file", img);
	spool_build(0, "file only");
	oracle("spool file only", 1, "r4ref");
	rename(img, z);
	spool_build(2 << 20, "2 MiB");
	oracle("spool 2 MiB", 1, "r4ref");
	rename(img, a);
	ok(sh("cmp -s '%s' '%s'", a, z) == 0, "spool: memory and file give "
	   "the same image");
	spool_build((int64_t)1 << 30, "1 GiB");
	ok(sh("cmp -s '%s' '%s'", img, z) == 0, "spool: all in memory, the "
	   "same image");
	unlink(a);
	unlink(z);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	static const char *const hashes[] = { "hash=r5_hash",
		"hash=rupasov_hash", "hash=tea_hash", "hash=fnv1_hash",
		"hash=deg_hash", "fibration=lexic_fibre",
		"fibration=dot_o_fibre", "fibration=ext_3_fibre" };

	snprintf(dir, sizeof(dir), "%s/r4packerXXXXXX", tmp && *tmp ? tmp :
		 "/tmp");
	tap_require(mkdtemp(dir), "mkdtemp %s failed", dir);
	snprintf(img, sizeof(img), "%s/vol.img", dir);
	test_empty();
	test_sizes("sizes", NULL, 1, 1, "r4ref");
	test_sizes("sizes deferred", NULL, 0, 1, "r4ref");
	test_sizes("tails", "formatting=tails", 1, 1, "r4ref");
	test_sizes("extents", "formatting=extents", 0, 1, "r4ref");
	test_sizes("node41", "node=node41", 1, 1, "r4ref");
	/* fsck.reiser4 1.2.2 crashes on short-key volumes (cde40.h), and so
	 * does libreiser4's reader: our own reader checks those. */
	test_sizes("key_short", "key=key_short", 1, 0, "r4manifest");
	test_names();
	test_bigdir();
	for (size_t i = 0; i < sizeof(hashes) / sizeof(hashes[0]); i++)
		test_hash(hashes[i]);
	test_replace();
	test_probe();
	test_errors();
	test_spill();
	test_spool_memory();
	test_fixed_and_repro();
	model_reset();
	if (!getenv("R4_KEEP_TMP"))
		sh("rm -rf '%s'", dir);
	return tap_done();
}
