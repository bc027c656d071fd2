/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libimage: r4_mkfs, then r4_vol_open, its validation messages, and the
 * space map. */
#include "tap.h"
#include <errno.h>
#include <unistd.h>
#include "r4/r4.h"
#include "libimage/vol/volume.h"
#include "format/errors.h"
#include "format/endian.h"

static char path[64];

static void poke(uint64_t off, const void *bytes, size_t n)
{
	FILE *f = fopen(path, "r+b");

	tap_require(f, "cannot open %s", path);
	tap_require(fseeko(f, (off_t)off, SEEK_SET) == 0 &&
		    fwrite(bytes, 1, n, f) == n, "cannot write %s", path);
	tap_must(fclose(f));
}

static void make(const char *spec)
{
	struct r4_mkfs_opts o;
	struct r4_error err = { 0 };

	unlink(path);
	r4_mkfs_opts_init(&o);
	o.size_bytes = 64 << 20;
	o.create_file = 1;
	snprintf(o.label, sizeof(o.label), "unit");
	if (spec)
		tap_require(!r4_mkfs_override(&o, spec, &err), "-o %s: %s",
			    spec, err.msg);
	tap_require(!r4_mkfs(path, &o, NULL, &err), "mkfs: %s", err.msg);
}

/* Open must fail with code, and the message must mention want. */
static void open_fails(int code, const char *want, const char *what)
{
	struct r4_vol *vol = NULL;
	struct r4_error err = { 0 };

	is_int(r4_vol_open(path, R4_OPEN(R4_OPEN_RDONLY), &vol, &err), code, "%s", what);
	ok(strstr(err.msg, want) != NULL, "%s: message '%s' has '%s'", what,
	   err.msg, want);
	ok(vol == NULL, "%s: no handle", what);
}

static void test_fresh(void)
{
	struct r4_vol *vol = NULL;
	struct r4_super_info si;
	struct r4_error err = { 0 };
	uint64_t free_blocks = 0;

	make(NULL);
	is_int(r4_vol_open(path, R4_OPEN(R4_OPEN_RDONLY), &vol, &err), 0, "open");
	r4_vol_super(vol, &si);
	is_str(si.label, "unit", "label");
	is_u64(si.block_count, 16384, "block count");
	is_u64(si.free_blocks, 16359, "free blocks");
	is_u64(si.root_block, 23, "root");
	is_int(si.tree_height, 2, "height");
	is_int(si.large_keys, 1, "large keys");
	is_int(si.version, 2, "version");
	ok(si.status_present && si.status == 0, "status block says ok");
	is_int(space_count_free(&vol->space, &free_blocks, &err), 0, "count");
	is_u64(free_blocks, 16359, "bitmap agrees with the super block");
	is_int(space_test(&vol->space, 24, &err), 1, "leaf block used");
	is_int(space_test(&vol->space, 25, &err), 0, "block 25 free");
	is_int(space_test(&vol->space, 16384, &err), R4_ERANGE, "past end");
	tap_must(r4_vol_close(vol, NULL));

	make("key=key_short,node=node41");
	is_int(r4_vol_open(path, R4_OPEN(R4_OPEN_RDONLY), &vol, &err), 0, "open short");
	r4_vol_super(vol, &si);
	is_int(si.large_keys, 0, "short keys");
	is_int(si.node_pid, 1, "node41");
	tap_must(r4_vol_close(vol, NULL));
}

/* Changes reach a volume only through transactions: marking a block in
 * the in-memory space map and closing writes nothing. */
static void test_rw_bitmap(void)
{
	struct r4_vol *vol = NULL;
	struct r4_error err = { 0 };

	make(NULL);
	is_int(r4_vol_open(path, R4_OPEN(R4_OPEN_RDWR), &vol, &err), 0, "open rw");
	is_int(space_mark(&vol->space, 100, 1, &err), 0, "mark 100 used");
	is_int(r4_vol_close(vol, &err), 0, "close");
	is_int(r4_vol_open(path, R4_OPEN(R4_OPEN_RDONLY), &vol, &err), 0, "reopen");
	is_int(space_test(&vol->space, 100, &err), 0,
	       "block 100 still free: no write outside a transaction");
	is_int(vol->space.bad_csum[0], 0, "bitmap checksum intact");
	tap_must(r4_vol_close(vol, NULL));
}

/* space_next_used against space_test block by block, from every
 * block: three regions (the last 64 blocks long, the bits past its end
 * set as mkfs sets them), the middle one left empty, pins in it. */
static void test_next_used(void)
{
	struct r4_vol *vol = NULL;
	struct r4_error err = { 0 };
	struct space *s;
	uint64_t n, out = 0, *next, bad = 0, first_bad = 0;

	unlink(path);
	{
		struct r4_mkfs_opts o;

		r4_mkfs_opts_init(&o);
		o.size_bytes = 256 << 20;
		o.create_file = 1;
		tap_require(!r4_mkfs(path, &o, NULL, &err), "mkfs: %s",
			    err.msg);
	}
	tap_must(r4_vol_open(path, R4_OPEN(R4_OPEN_RDWR), &vol, &err));
	s = &vol->space;
	n = s->block_count;
	is_u64(n, 65536, "256 MiB: 65536 blocks");
	is_u64(s->nregions, 3, "three regions");
	/* region 1 empty but for pins; region 2 only its last block */
	for (uint64_t b = s->bpb; b < n; b++)
		tap_must(space_mark(s, b, 0, &err));
	tap_must(space_mark(s, s->bpb - 1, 1, &err));
	tap_must(space_mark(s, n - 1, 1, &err));
	tap_must(space_pin(s, 40000, 10));
	tap_must(space_pin(s, 40020, 1));
	tap_must(space_mark(s, 50000, 1, &err));	/* after the pins */

	is_int(space_next_used(s, 0, &out, &err), 0, "from 0");
	is_u64(out, 0, "block 0 (reserved) is used");
	is_int(space_next_used(s, s->bpb - 1, &out, &err), 0,
	       "a region's last block");
	is_u64(out, s->bpb - 1, "is found");
	is_int(space_next_used(s, s->bpb, &out, &err), 0, "an empty region");
	is_u64(out, 40000, "skipped to the first pin");
	is_int(space_next_used(s, 40005, &out, &err), 0, "inside a pin");
	is_u64(out, 40005, "is used");
	is_int(space_next_used(s, 40010, &out, &err), 0, "past a pin");
	is_u64(out, 40020, "the next pin");
	is_int(space_next_used(s, 40021, &out, &err), 0, "past the pins");
	is_u64(out, 50000, "a used bit of the same region");
	is_int(space_next_used(s, 50001, &out, &err), 0, "past it");
	is_u64(out, n - 1, "the volume's last block");
	is_int(space_next_used(s, n - 1, &out, &err), 0, "from the last");
	is_u64(out, n - 1, "itself");
	is_int(space_next_used(s, n, &out, &err), 0, "from the end");
	is_u64(out, n, "none: block_count");
	is_int(space_next_used(s, n + 12345, &out, &err), 0, "past the end");
	is_u64(out, n, "none: block_count");

	/* a pin across the boundary of regions 1 and 2 */
	tap_must(space_pin(s, 2 * s->bpb - 5, 10));
	is_int(space_next_used(s, 50001, &out, &err), 0, "before a pin "
	       "across two regions");
	is_u64(out, 2 * s->bpb - 5, "its first block");
	is_int(space_next_used(s, 2 * s->bpb + 2, &out, &err), 0,
	       "inside it, in the next region");
	is_u64(out, 2 * s->bpb + 2, "is used");

	/* every start against a block-by-block answer */
	next = calloc(n + 1, sizeof(*next));
	tap_require(next, "out of memory");
	next[n] = n;
	for (uint64_t b = n; b-- > 0;)
		next[b] = space_test(s, b, &err) == 1 ? b : next[b + 1];
	for (uint64_t b = 0; b <= n; b++)
		if (space_next_used(s, b, &out, &err) || out != next[b]) {
			if (!bad++)
				first_bad = b;
		}
	is_u64(bad, 0, "every start agrees with space_test (first wrong: "
	       "%llu)", (unsigned long long)first_bad);

	/* nothing used after 40021: the end */
	space_unpin(s, 2 * s->bpb - 5, 10);
	tap_must(space_mark(s, 50000, 0, &err));
	tap_must(space_mark(s, n - 1, 0, &err));
	is_int(space_next_used(s, 40021, &out, &err), 0, "an empty tail");
	is_u64(out, n, "none: block_count, not the bits past the end");
	free(next);
	tap_must(r4_vol_close(vol, NULL));
}

/* A block of the cache still referenced at close is a leak, and close
 * says so. */
static void test_leak(void)
{
	struct r4_vol *vol = NULL;
	struct r4_error err = { 0 };
	struct io_block *b;

	make(NULL);
	tap_must(r4_vol_open(path, R4_OPEN(R4_OPEN_RDONLY), &vol, &err));
	tap_must(io_cache_get(&vol->cache, 24, &b, &err));
	is_int(r4_vol_close(vol, &err), R4_EINVAL,
	       "close with a block still referenced fails");
	ok(strstr(err.msg, "1 block(s) of the cache still referenced") != NULL,
	   "the message says so: '%s'", err.msg);
}

static void test_damage(void)
{
	uint8_t b8[8];

	make(NULL);
	poke(65536, "XeIsEr4", 7);
	open_fails(R4_EBADMAGIC, "master super block", "bad master magic");

	make(NULL);
	poke(17 * 4096 + 52, "XeIsEr40", 8);
	open_fails(R4_ECORRUPT, "format40 super block (block 17)",
		   "bad format40 magic");

	make(NULL);
	put_le64(b8, 99999);
	poke(17 * 4096 + 16, b8, 8);
	open_fails(R4_ECORRUPT, "block 17", "root past the end");

	make(NULL);
	tap_must(truncate(path, 8 << 20));
	open_fails(R4_ERANGE, "truncated", "truncated image");

	make(NULL);
	tap_must(truncate(path, 40000));
	open_fails(R4_EBADMAGIC, "too small", "tiny file");

	unlink(path);
	open_fails(-ENOENT, path, "missing file");
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	int fd;

	snprintf(path, sizeof(path), "%s/r4volXXXXXX", tmp ? tmp : "/tmp");
	fd = mkstemp(path);
	tap_require(fd >= 0, "mkstemp %s failed", path);
	close(fd);
	test_fresh();
	test_rw_bitmap();
	test_next_used();
	test_leak();
	test_damage();
	unlink(path);
	return tap_done();
}
