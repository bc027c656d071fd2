/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libimage/io: the file backend and the block cache. */
#include "tap.h"
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include "libimage/io/dev.h"
#include "libimage/io/cache.h"
#include "libimage/io/fault.h"
#include "libimage/io/undo.h"
#include "r4/repair.h"
#include <sys/stat.h>
#include "libimage/util/err.h"
#include "format/errors.h"

static char path[64];

static void test_dev(void)
{
	struct r4_error err = { 0 };
	struct io_dev *dev = NULL;
	uint8_t buf[4096], back[4096];
	int created = 0;

	is_int(io_open(path, IO_RDWR, &dev, &created, &err), -ENOENT,
	       "missing file without IO_CREATE");
	ok(strstr(err.msg, path) != NULL, "the error names the file: %s",
	   err.msg);
	r4i_error_clear(&err);
	is_int(io_open(path, IO_RDWR | IO_CREATE, &dev, &created, &err), 0,
	       "create");
	is_int(created, 1, "created is reported");
	is_int(io_resize(dev, 1 << 20, &err), 0, "sparse resize");
	is_u64(dev->size, 1 << 20, "size follows resize");
	memset(buf, 0xa5, sizeof(buf));
	is_int(io_write(dev, buf, sizeof(buf), 8192, &err), 0, "write");
	is_int(io_read(dev, back, sizeof(back), 8192, &err), 0, "read back");
	is_mem(back, buf, sizeof(buf), "same bytes");
	is_int(io_read(dev, back, sizeof(back), (1 << 20) - 100, &err),
	       R4_ERANGE, "read past the end");
	ok(strstr(err.msg, "past the end") != NULL, "says past the end: %s",
	   err.msg);
	is_int(io_sync(dev, NULL), 0, "sync");
	io_close(dev);
	is_int(io_open(path, IO_RDONLY, &dev, NULL, NULL), 0, "reopen ro");
	is_int(io_write(dev, buf, 10, 0, NULL), -EROFS, "no writes when ro");
	io_close(dev);
	is_int(io_is_mounted(path, NULL, NULL, 0), 0, "an image file is not mounted");
}

/* A window (a partition): offsets relative to its start, nothing read
 * or written outside it, no resize, the locks on the whole file. */
static void test_window(void)
{
	struct io_window w = { 65536, 131072 }, past = { 1 << 20, 4096 };
	struct r4_error err = { 0 };
	struct io_dev *dev = NULL, *whole = NULL;
	uint8_t buf[4096], back[4096];
	uint64_t done;

	tap_must(io_open_win(path, IO_RDWR, &w, &dev, NULL, &err));
	is_u64(dev->size, 131072, "the size is the window's");
	memset(buf, 0x3c, sizeof(buf));
	is_int(io_write(dev, buf, sizeof(buf), 131072 - 4096, &err), 0,
	       "write the window's last block");
	is_int(io_write(dev, buf, sizeof(buf), 131072 - 100, &err), R4_ERANGE,
	       "a write across the window's end is refused");
	ok(strstr(err.msg, "past the end of the window") != NULL, "%s",
	   err.msg);
	r4i_error_clear(&err);
	is_int(io_read(dev, back, 10, 131072 - 5, &err), R4_ERANGE,
	       "a read across the window's end is refused");
	is_int(io_resize(dev, 1 << 20, NULL), -ENOTSUP, "no resize");
	is_int(io_copy(dev, 131072, dev, 0, 4096, &done, NULL), R4_ERANGE,
	       "io_copy past the window's end is refused");
	is_int(io_open(path, IO_RDONLY, &whole, NULL, &err), R4_EBUSY,
	       "the whole file is locked");
	r4i_error_clear(&err);
	io_close(dev);
	tap_must(io_open(path, IO_RDONLY, &whole, NULL, &err));
	tap_must(io_read(whole, back, sizeof(back), 65536 + 131072 - 4096,
			 &err));
	is_mem(back, buf, sizeof(back), "written at the window's offset");
	tap_must(io_read(whole, back, 4096, 65536 + 131072, &err));
	ok(back[0] != 0x3c, "nothing after the window's end");
	io_close(whole);
	is_int(io_open_win(path, IO_RDONLY, &past, &dev, NULL, &err),
	       R4_ERANGE, "a window past the file's end: %s", err.msg);
}

static void test_cache(void)
{
	struct io_dev *dev = NULL;
	struct io_cache c;
	struct io_block *b, *b2;
	struct r4_error err = { 0 };

	io_open(path, IO_RDWR, &dev, NULL, NULL);
	is_int(io_cache_init(&c, dev, 4096, 16, NULL), 0, "cache init");
	is_int(io_cache_get(&c, 2, &b, NULL), 0, "get block 2");
	is_int(b->data[0], 0xa5, "block 2 read from disk");
	is_int(io_cache_get(&c, 2, &b2, NULL), 0, "get it again");
	ok(b == b2 && b->ref == 2, "same block, two references");
	io_cache_put(&c, b2);
	memset(b->data, 0x11, 4096);
	io_cache_dirty(&c, b);
	io_cache_put(&c, b);
	/* Fill the cache well past its size: the dirty block must stay. */
	for (uint64_t i = 10; i < 100; i++) {
		tap_must(io_cache_get(&c, i, &b2, NULL));
		io_cache_put(&c, b2);
	}
	ok(c.count <= 17, "clean blocks are evicted (%zu cached)", c.count);
	is_int(io_cache_get(&c, 2, &b, NULL), 0, "dirty block still cached");
	is_int(b->data[0], 0x11, "with its new bytes");
	/* Write it back as a commit does: write, then mark it clean. */
	is_int(io_write(dev, b->data, 4096, 2 * 4096, NULL), 0, "write back");
	io_cache_clean(&c, b);
	io_cache_put(&c, b);
	is_int(io_cache_get(&c, 1000000, &b, &err), R4_ERANGE,
	       "a block past the device");
	ok(strstr(err.msg, "block 1000000") != NULL, "names the block: %s",
	   err.msg);
	is_int(io_cache_new(&c, 3, &b, NULL), 0, "new block");
	is_int(b->data[0], 0, "zero-filled");
	is_int((int)io_cache_fini(&c), 1, "a leaked reference is counted");
	io_close(dev);
	tap_must(io_open(path, IO_RDONLY, &dev, NULL, NULL));
	{
		uint8_t x[1];

		tap_must(io_read(dev, x, 1, 8192, NULL));
		is_int(x[0], 0x11, "the dirty block reached the disk");
	}
	io_close(dev);
}

/* io_cache_read: cached blocks (a dirty one not yet written) win over
 * the disk, the others come from the device in runs, nothing is kept. */
static void test_cache_read(void)
{
	struct io_dev *dev = NULL;
	struct io_cache c;
	struct io_block *b;
	struct r4_error err = { 0 };
	uint8_t buf[6 * 4096];
	size_t before;

	tap_must(io_open(path, IO_RDWR, &dev, NULL, NULL));
	for (unsigned i = 20; i < 26; i++) {
		memset(buf, (int)i, 4096);
		tap_must(io_write(dev, buf, 4096, (uint64_t)i * 4096, NULL));
	}
	tap_must(io_cache_init(&c, dev, 4096, 16, NULL));
	tap_must(io_cache_get(&c, 22, &b, NULL));
	memset(b->data, 0x77, 4096);
	io_cache_dirty(&c, b);
	io_cache_put(&c, b);
	before = c.count;
	dev->reads = 0;
	is_int(io_cache_read(&c, 20, 6, buf, &err), 0, "read 6 blocks");
	ok(buf[0] == 20 && buf[4095] == 20 && buf[4096] == 21 &&
	   buf[3 * 4096] == 23 && buf[6 * 4096 - 1] == 25,
	   "uncached blocks come from the disk");
	ok(buf[2 * 4096] == 0x77 && buf[3 * 4096 - 1] == 0x77,
	   "the dirty cached block wins over the disk");
	is_u64(dev->reads, 2, "two runs, two device reads");
	is_u64(c.count, before, "nothing new is kept in the cache");
	is_int(io_cache_read(&c, 254, 4, buf, &err), R4_ERANGE,
	       "a run past the device");
	ok(strstr(err.msg, "block 256") != NULL,
	   "names the first block past the end: %s", err.msg);
	tap_must(io_cache_get(&c, 22, &b, NULL));
	io_cache_discard(&c, b);
	is_int((int)io_cache_fini(&c), 0, "no reference left");
	io_close(dev);
}

/* Block buffers come from slabs and are recycled: hundreds of pinned
 * blocks (more than a slab) each keep their own bytes while others are
 * discarded and their buffers given to new blocks. */
#define NBUF 1200
static int all_intact(struct io_block **b, const uint64_t *nr, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < 4096; k += 512)
			if (b[i]->data[k] != (uint8_t)(nr[i] * 7 + 1) ||
			    b[i]->data[4095] != (uint8_t)nr[i])
				return 0;
	return 1;
}

static void fill(struct io_block *b, uint64_t nr)
{
	memset(b->data, (int)(uint8_t)(nr * 7 + 1), 4096);
	b->data[4095] = (uint8_t)nr;
}

static void test_cache_buffers(void)
{
	static struct io_block *b[NBUF];
	static uint64_t nr[NBUF];
	struct io_dev *dev = NULL;
	struct io_cache c;
	int zero = 1;

	tap_must(io_open(path, IO_RDWR, &dev, NULL, NULL));
	tap_must(io_resize(dev, 16u << 20, NULL));
	tap_must(io_cache_init(&c, dev, 4096, 16, NULL));
	for (size_t i = 0; i < NBUF; i++) {
		nr[i] = 500 + i;
		tap_must(io_cache_new(&c, nr[i], &b[i], NULL));
		fill(b[i], nr[i]);
	}
	ok(all_intact(b, nr, NBUF), "%d pinned new blocks keep their own "
	   "bytes", NBUF);
	/* every other one goes; new blocks take their buffers */
	for (size_t i = 0; i < NBUF; i += 2)
		io_cache_discard(&c, b[i]);
	for (size_t i = 0; i < NBUF; i += 2) {
		nr[i] = 1800 + i / 2;
		tap_must(io_cache_new(&c, nr[i], &b[i], NULL));
		for (size_t k = 0; k < 4096; k++)
			zero &= b[i]->data[k] == 0;
		fill(b[i], nr[i]);
	}
	ok(zero, "a recycled buffer starts zero-filled");
	ok(all_intact(b, nr, NBUF), "after recycling, each block still has "
	   "its own bytes");
	for (size_t i = 0; i < NBUF; i++)
		io_cache_put(&c, b[i]);
	is_int((int)io_cache_fini(&c), 0, "no reference left");
	io_close(dev);
}

/* io_cache_trim: the clean unpinned blocks go, and so does every slab
 * of buffers none of whose blocks is left (not the first, small one, nor
 * the last, still being carved); a pinned block keeps its slab and its
 * bytes, and the buffers handed out after the trim are each a block's
 * own. Slabs: 64 blocks, then 512 each (cache.c); under AddressSanitizer
 * every buffer is its own allocation and no slab goes. */
#define NTRIM (64 + 4 * 512 + 10)
static void test_cache_trim(void)
{
	static struct io_block *b[NTRIM];
	static uint64_t nr[NTRIM];
	struct io_dev *dev = NULL;
	struct io_cache c;
	size_t keep = 64 + 512 + 100, slabs, gone;	/* in the third slab */

	tap_must(io_open(path, IO_RDWR, &dev, NULL, NULL));
	tap_must(io_resize(dev, 32u << 20, NULL));
	tap_must(io_cache_init(&c, dev, 4096, 16, NULL));
	for (size_t i = 0; i < NTRIM; i++) {
		nr[i] = 100 + i;
		tap_must(io_cache_new(&c, nr[i], &b[i], NULL));
		fill(b[i], nr[i]);
	}
	slabs = c.nslab;
	for (size_t i = 0; i < NTRIM; i++)
		if (i != keep)
			io_cache_put(&c, b[i]);
	gone = io_cache_trim(&c);
	is_int((int)gone, slabs ? 3 : 0, "the slabs with no block left go");
	is_int((int)c.count, 1, "only the pinned block stays cached");
	ok(all_intact(&b[keep], &nr[keep], 1), "the pinned block keeps its "
	   "bytes");
	b[0] = b[keep];
	nr[0] = nr[keep];
	for (size_t i = 1; i < NTRIM; i++) {
		nr[i] = 3000 + i;
		tap_must(io_cache_new(&c, nr[i], &b[i], NULL));
		fill(b[i], nr[i]);
	}
	ok(all_intact(b, nr, NTRIM), "after the trim, each new block has its "
	   "own buffer");
	for (size_t i = 0; i < NTRIM; i++)
		io_cache_put(&c, b[i]);
	is_int((int)io_cache_fini(&c), 0, "no reference left");
	io_close(dev);
}

/* io_cache_trim and a dirty block: unpinned but not yet written, it
 * stays (so does its slab) with its bytes; once clean, a second trim
 * takes it and its slab. */
static void test_cache_trim_dirty(void)
{
	static struct io_block *b[NTRIM];
	static uint64_t nr[NTRIM];
	struct io_dev *dev = NULL;
	struct io_cache c;
	struct io_block *d;
	size_t dirty = 64 + 3 * 512 + 7, slabs, gone;	/* the fifth slab */

	tap_must(io_open(path, IO_RDWR, &dev, NULL, NULL));
	tap_must(io_resize(dev, 32u << 20, NULL));
	tap_must(io_cache_init(&c, dev, 4096, 16, NULL));
	for (size_t i = 0; i < NTRIM; i++) {
		nr[i] = 100 + i;
		tap_must(io_cache_new(&c, nr[i], &b[i], NULL));
		fill(b[i], nr[i]);
	}
	slabs = c.nslab;
	io_cache_dirty(&c, b[dirty]);
	for (size_t i = 0; i < NTRIM; i++)
		io_cache_put(&c, b[i]);
	gone = io_cache_trim(&c);
	is_int((int)gone, slabs ? 3 : 0, "a dirty block keeps its slab (the "
	       "other three full ones go)");
	tap_must(io_cache_get(&c, nr[dirty], &d, NULL));
	ok(all_intact(&d, &nr[dirty], 1), "and its bytes");
	io_cache_clean(&c, d);
	io_cache_put(&c, d);
	gone = io_cache_trim(&c);
	is_int((int)gone, slabs ? 1 : 0, "clean, it goes with its slab");
	is_int((int)c.count, 0, "nothing left cached");
	is_int((int)io_cache_fini(&c), 0, "no reference left");
	io_close(dev);
}

/* A message longer than R4_ERRMSG_MAX keeps its start and its end
 * (where the reason is), cut in the middle on a character boundary. */
static void test_long_message(void)
{
	struct r4_error err = { 0 };
	char longp[4000];
	size_t n;

	for (n = 0; n + 3 < sizeof(longp); n += 3)
		memcpy(longp + n, "\xc3\xa9/", 3);	/* "é/" */
	longp[n] = '\0';
	r4i_fail(&err, R4_EINVAL, "%s: the reason at the end", longp);
	n = strlen(err.msg);
	ok(n < sizeof(err.msg) && n > sizeof(err.msg) - 10,
	   "the buffer is used (%zu bytes)", n);
	ok(n > 30 && !strcmp(err.msg + n - 23, ": the reason at the end"),
	   "the end is kept: ...%s", err.msg + n - 30);
	ok(!strncmp(err.msg, "\xc3\xa9/\xc3\xa9/", 6), "the start is kept");
	ok(strstr(err.msg, " [...] ") != NULL, "the cut is marked");
	{
		int good = 1;

		for (size_t i = 0; i < n; i++) {
			unsigned char c = (unsigned char)err.msg[i];

			if (c == 0xc3 && (unsigned char)err.msg[i + 1] != 0xa9)
				good = 0;
			if (c == 0xa9 && (i == 0 ||
					  (unsigned char)err.msg[i - 1] != 0xc3))
				good = 0;
		}
		ok(good, "no character is cut in two");
	}
	r4i_error_clear(&err);
	r4i_fail(&err, R4_EINVAL, "%s", "short");
	is_str(err.msg, "short", "a short message is whole");
}

static long file_size(const char *p)
{
	struct stat st;

	return stat(p, &st) ? -1 : (long)st.st_size;
}

/* Open p read-write with opts o, write one unit of byte c at off,
 * close. */
static int write_one(const char *p, const struct r4_open_opts *o, int c,
		     uint64_t off)
{
	struct r4_error err = { 0 };
	uint8_t buf[UNDO_UNIT];
	struct io_dev *dev;
	int rc = io_open_opts(p, IO_RDWR, o, &dev, NULL, &err);

	if (rc) {
		printf("# open %s: %s\n", p, err.msg);
		return rc;
	}
	memset(buf, c, sizeof(buf));
	rc = io_write(dev, buf, sizeof(buf), off, &err);
	io_close(dev);
	return rc;
}

/* The byte at off of p. */
static int byte_at(const char *p, uint64_t off)
{
	uint8_t c = 0;
	int fd = open(p, O_RDONLY);

	if (fd < 0 || pread(fd, &c, 1, (off_t)off) != 1)
		c = 0xff;
	if (fd >= 0)
		close(fd);
	return c;
}

/* The backends belong to one open: an undo file or a fault given to one
 * open does not reach the next open of the same process. */
static void test_backends(void)
{
	struct r4_open_opts with = { 0 }, without = { 0 };
	struct io_fault_spec cut = { .mode = IO_FAULT_CUT_AFTER, .n = 1 };
	struct r4_error err = { 0 };
	struct r4_undo *u = NULL;
	char upath[80];
	long one;

	snprintf(upath, sizeof(upath), "%s.undo", path);
	tap_must(write_one(path, NULL, 0, 0));
	tap_require(!r4_undo_create(upath, &u, &err), "undo: %s", err.msg);
	with.undo = u;
	is_int(write_one(path, &with, 1, 0), 0, "an open with the undo file");
	one = file_size(upath);
	ok(one >= (long)(UNDO_HDR + UNDO_REC + UNDO_UNIT), "it saved the "
	   "unit it overwrote (%ld bytes)", one);
	is_int(write_one(path, &without, 2, 4096), 0, "then an open without");
	is_int(file_size(upath), one, "the open without saved nothing");
	is_int(write_one(path, &with, 3, 8192), 0, "an open with it again");
	ok(file_size(upath) > one, "extends the same undo file");
	r4_undo_close(u);
	unlink(upath);

	/* one power object, two opens: one cut; an open without it is not
	 * cut */
	with = (struct r4_open_opts){ 0 };
	with.fault = io_fault_new(&cut, NULL, NULL);
	tap_require(with.fault != NULL, "fault");
	write_one(path, &with, 4, 0);
	write_one(path, &with, 5, 4096);
	write_one(path, &without, 6, 8192);
	io_fault_put(with.fault);
	is_int(byte_at(path, 0), 4, "the first write of the power object "
	       "reached the file");
	is_int(byte_at(path, 4096), 2, "its second open's write was cut");
	is_int(byte_at(path, 8192), 6, "the open without a fault wrote");
}

/* io_fault_parse reads what io_fault_format prints; bad specs refused. */
static void test_fault_parse(void)
{
	static const char *const good[] = {
		"count", "fail-write=1", "cut-after=12", "torn-write=3",
		"drop-unsynced=7", "keep-subset=9", "keep-subset=9:4"
	};
	static const char *const bad[] = {
		"", "cut-after=", "cut-after=0", "cut-after=-1", "cut-after= 1",
		"cut-after=1x", "cut-after=1:2", "keep-subset=:3",
		"keep-subset=3:", "keep-subset=3:-1", "keep-subset=3:1:2",
		"keep-subset=0:1", "keep-last=1", "count=1"
	};
	struct io_fault_spec s;
	char buf[64];
	int rc;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		rc = io_fault_parse(good[i], &s);
		is_int(rc, 0, "parse %s", good[i]);
		io_fault_format(&s, buf, sizeof(buf));
		is_str(buf, good[i], "and print it back");
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		is_int(io_fault_parse(bad[i], &s), R4_EINVAL, "refuse '%s'",
		       bad[i]);
	tap_must(io_fault_parse("keep-subset=5:77", &s));
	ok(s.mode == IO_FAULT_KEEP_SUBSET && s.n == 5 && s.seed == 77,
	   "keep-subset=5:77: write 5, seed 77");
	tap_must(io_fault_parse("keep-subset=5:0", &s));
	io_fault_format(&s, buf, sizeof(buf));
	is_str(buf, "keep-subset=5", "seed 0 is no seed");
}

/* Power lost at write n of: 1 2 sync 3 4 5 6 (one byte each, at
 * offsets 1..6, all 0 before). The result: which bytes are on disk. */
static unsigned keep_subset_run(uint64_t n, uint64_t seed)
{
	struct io_fault_spec spec = { .mode = IO_FAULT_KEEP_SUBSET, .n = n, .seed = seed };
	struct r4_open_opts o = { 0 };
	struct r4_error err = { 0 };
	struct io_dev *dev;
	uint8_t zero[8] = { 0 }, c = 1;
	unsigned on = 0;

	tap_must(write_one(path, NULL, 0, 0));
	o.fault = io_fault_new(&spec, NULL, NULL);
	tap_require(o.fault && !io_open_opts(path, IO_RDWR, &o, &dev, NULL,
					     &err), "open: %s", err.msg);
	io_fault_put(o.fault);
	io_write(dev, zero, 8, 0, &err);
	for (uint64_t k = 1; k <= 6; k++, c++) {
		io_write(dev, &c, 1, k, &err);
		if (k == 2)
			io_sync(dev, &err);
	}
	io_sync(dev, &err);
	io_close(dev);
	for (int k = 1; k <= 6; k++)
		if (byte_at(path, k))
			on |= 1u << k;
	return on;
}

/* keep-subset: the cut write lands; of the writes since the last sync
 * before it none (no seed) or a subset (a seed); the synced ones stay;
 * the later ones never land. */
static void test_keep_subset(void)
{
	unsigned on, seen_some = 0, seen_none = 0;

	/* write 1 is the zeroing write: byte k is write k + 1 */
	is_int(keep_subset_run(6, 0), (1 << 1) | (1 << 2) | (1 << 5),
	       "keep-subset=6: write 6 lands, 4 and 5 lost, 2 and 3 synced");
	is_int(keep_subset_run(4, 0), (1 << 1) | (1 << 2) | (1 << 3),
	       "keep-subset=4: the first write after the sync lands");
	is_int(keep_subset_run(7, 0), (1 << 1) | (1 << 2) | (1 << 6),
	       "keep-subset=7: the last write lands alone");
	for (uint64_t seed = 1; seed <= 16; seed++) {
		on = keep_subset_run(7, seed);
		if ((on & 0x46) != 0x46 || (on & ~0x7eu))
			ok(0, "seed %llu: 0x%x misses the synced or the cut "
			   "write", (unsigned long long)seed, on);
		if (on & 0x38)
			seen_some = 1;
		if ((on & 0x38) != 0x38)
			seen_none = 1;
	}
	ok(seen_some && seen_none, "keep-subset=7:1..16: the synced writes "
	   "and write 7 always, of writes 4-6 some kept, some lost");
	is_int(keep_subset_run(7, 3), keep_subset_run(7, 3),
	       "the same seed keeps the same subset");
}

/* Open p read-write with power f, sync, close. */
static void sync_one(const char *p, struct r4_fault *f)
{
	struct r4_open_opts o = { .fault = f };
	struct r4_error err = { 0 };
	struct io_dev *dev;

	tap_require(!io_open_opts(p, IO_RDWR, &o, &dev, NULL, &err),
		    "open %s: %s", p, err.msg);
	tap_must(io_sync(dev, &err));
	io_close(dev);
}

/* The byte at off of p as an open with power f reads it. */
static int byte_via(const char *p, struct r4_fault *f, uint64_t off)
{
	struct r4_open_opts o = { .fault = f };
	struct r4_error err = { 0 };
	struct io_dev *dev;
	uint8_t c = 0xff;

	if (!io_open_opts(p, IO_RDWR, &o, &dev, NULL, &err)) {
		if (io_read(dev, &c, 1, off, &err))
			c = 0xff;
		io_close(dev);
	}
	return c;
}

/* Held writes (drop-unsynced, keep-subset) belong to the file, not to
 * the open: a close leaves them held, a later open reads them, a sync
 * through any open of the same file writes them, the end of a run
 * without a cut writes them; the cut loses them. */
static void test_held_file(void)
{
	struct io_fault_spec never = { .mode = IO_FAULT_DROP_UNSYNCED, .n = 99 };
	struct r4_open_opts o = { 0 };

	tap_must(write_one(path, NULL, 0, 0));
	o.fault = io_fault_new(&never, NULL, NULL);
	tap_must(write_one(path, &o, 7, 0));
	is_int(byte_at(path, 0), 0, "a close leaves an unsynced write held");
	is_int(byte_via(path, o.fault, 0), 7, "a later open reads it");
	is_int(byte_at(path, 0), 0, "still held");
	sync_one(path, o.fault);
	is_int(byte_at(path, 0), 7, "a sync through a later open writes it");
	tap_must(write_one(path, &o, 8, 0));
	io_fault_end(o.fault);
	is_int(byte_at(path, 0), 8, "the end of a run without a cut too");
	tap_must(write_one(path, &o, 9, 0));
	io_fault_put(o.fault);
	is_int(byte_at(path, 0), 9, "and dropping the last reference");
}

/* Power lost at write 3 (drop-unsynced) of: a write to path, one open;
 * sync_path: then a sync of path through another open, else of other;
 * two writes to other. path's byte 0 after it. */
static int held_cut_run(const char *other, int sync_path)
{
	struct io_fault_spec drop3 = { .mode = IO_FAULT_DROP_UNSYNCED, .n = 3 };
	struct r4_open_opts o = { 0 };

	tap_must(write_one(path, NULL, 1, 0));
	tap_must(write_one(other, NULL, 1, 0));
	o.fault = io_fault_new(&drop3, NULL, NULL);
	tap_must(write_one(path, &o, 5, 0));
	sync_one(sync_path ? path : other, o.fault);
	tap_must(write_one(other, &o, 6, 0));
	tap_must(write_one(other, &o, 7, 0));
	io_fault_put(o.fault);
	return byte_at(path, 0);
}

/* The cut at a write to another file: the held writes of an open
 * closed before are lost, unless their file was synced since (through
 * any open of it); the sync of another file does not keep them; with
 * keep-subset a seed may keep them (written through a new open). */
static void test_held_cut(void)
{
	char other[80];
	int kept = 0, lost = 0, fd;

	snprintf(other, sizeof(other), "%s.o", path);
	fd = open(other, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	tap_require(fd >= 0, "create %s", other);
	close(fd);
	is_int(held_cut_run(other, 0), 1, "a write held by a closed open is "
	       "lost at the cut (a sync of another file did not keep it)");
	is_int(held_cut_run(other, 1), 5, "a sync of its file through a "
	       "later open made it durable");
	for (uint64_t seed = 1; seed <= 16; seed++) {
		struct io_fault_spec ks = { .mode = IO_FAULT_KEEP_SUBSET, .n = 2,
					    .seed = seed };
		struct r4_open_opts o = { 0 };

		tap_must(write_one(path, NULL, 1, 0));
		tap_must(write_one(other, NULL, 1, 0));
		o.fault = io_fault_new(&ks, NULL, NULL);
		tap_must(write_one(path, &o, 5, 0));
		tap_must(write_one(other, &o, 6, 0));
		io_fault_put(o.fault);
		if (byte_at(other, 0) != 6)
			ok(0, "seed %llu: the cut write did not land",
			   (unsigned long long)seed);
		kept |= byte_at(path, 0) == 5;
		lost |= byte_at(path, 0) == 1;
	}
	ok(kept && lost, "keep-subset=2:1..16: the held write of the closed "
	   "open kept by some seeds, lost by others");
	unlink(other);
}

/* The power cut stops the undo file too: after it, no record, no
 * closing record (an undo file of a repair the power cut short has
 * none), in this open and the next. */
static void test_undo_cut(void)
{
	struct io_fault_spec cut = { .mode = IO_FAULT_CUT_AFTER, .n = 1 };
	struct r4_open_opts o = { 0 };
	struct r4_error err = { 0 };
	struct r4_undo *u = NULL;
	char upath[80];

	snprintf(upath, sizeof(upath), "%s.undo", path);
	unlink(upath);
	tap_must(write_one(path, NULL, 0, 0));
	tap_must(write_one(path, NULL, 0, 4096));
	tap_require(!r4_undo_create(upath, &u, &err), "undo: %s", err.msg);
	o.undo = u;
	o.fault = io_fault_new(&cut, NULL, NULL);
	write_one(path, &o, 1, 0);
	is_int(file_size(upath), (long)(UNDO_HDR + UNDO_REC + UNDO_UNIT),
	       "the cut write's unit saved before it, no closing record");
	write_one(path, &o, 2, 4096);
	is_int(file_size(upath), (long)(UNDO_HDR + UNDO_REC + UNDO_UNIT),
	       "after the cut another open saves nothing");
	io_fault_put(o.fault);
	r4_undo_close(u);
	unlink(upath);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	int fd;

	snprintf(path, sizeof(path), "%s/r4ioXXXXXX", tmp ? tmp : "/tmp");
	fd = mkstemp(path);
	tap_require(fd >= 0, "mkstemp %s failed", path);
	close(fd);
	unlink(path);
	test_dev();
	test_window();
	test_cache();
	test_cache_read();
	test_cache_buffers();
	test_cache_trim();
	test_cache_trim_dirty();
	test_long_message();
	test_backends();
	test_fault_parse();
	test_keep_subset();
	test_held_file();
	test_held_cut();
	test_undo_cut();
	unlink(path);
	return tap_done();
}
