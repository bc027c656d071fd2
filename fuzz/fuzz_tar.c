/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit fuzz target for the own tar header reader (libimage/tar/
 * tarhdr.c), differential: the input is a tar file; every entry the own
 * reader takes must be the entry libarchive reads there (name, type,
 * link, mode, owner, times, devices, size, number of extended
 * attributes, where the data lies); where the own reader sees the end,
 * libarchive must too. Where it leaves a header to libarchive, a second
 * libarchive reader passes over the entries it took from the start, as
 * r4pack does (read.c), and its entries from there to its end (or
 * error) must be those of libarchive reading alone. Memory errors show
 * under the sanitizer build.
 *
 * Built for libFuzzer with --enable-fuzzing. Without it (make check),
 * main() mutates each tar file named N times (seeded): bytes of its
 * header blocks changed (their checksums made right again half the
 * time, so that the fields behind them are parsed), blocks cut off:
 * fuzz_tar_standalone [-n N] TAR... */
#include "config.h"
#include "fuzz/xorshift.h"
#include <archive.h>
#include <archive_entry.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "libimage/tar/tar.h"

struct cmp {
	struct archive *a;
	uint64_t size;
};

static int same(const char *x, const char *y)
{
	return (!x && !y) || (x && y && !strcmp(x, y));
}

static void fail(const char *what, const char *path)
{
	fprintf(stderr, "fuzz_tar: '%s': %s differs from libarchive's\n",
		path ? path : "(none)", what);
	abort();
}

/* The times other than the mtime against libarchive's. */
static void check_times(const struct tar_own_ent *e, struct archive_entry *ae)
{
	if (e->aset != !!archive_entry_atime_is_set(ae) ||
	    e->cset != !!archive_entry_ctime_is_set(ae) ||
	    (e->aset && (e->atime != archive_entry_atime(ae) ||
			 e->atime_ns != (uint32_t)archive_entry_atime_nsec(ae))) ||
	    (e->cset && (e->ctime != archive_entry_ctime(ae) ||
			 e->ctime_ns != (uint32_t)archive_entry_ctime_nsec(ae))))
		fail("the atime or ctime", e->path);
}

/* The entry the own reader took against libarchive's next one. */
static int check(void *ctx, const struct tar_own_ent *e)
{
	struct cmp *c = ctx;
	struct archive_entry *ae;
	int r = archive_read_next_header(c->a, &ae);
	int hard = e->type == R4_ENT_HARDLINK, dev = e->type == R4_ENT_CHR ||
		   e->type == R4_ENT_BLK;

	if (r != ARCHIVE_OK)
		fail("the header's acceptance", e->path);
	if (e->data_off > c->size || e->next > c->size || e->next < e->data_off)
		fail("the data's place", e->path);
	if (e->data_off != (uint64_t)archive_filter_bytes(c->a, 0))
		fail("the data's offset", e->path);
	if (!same(e->path, archive_entry_pathname(ae)))
		fail("the name", e->path);
	if (!same(hard ? e->target : NULL, archive_entry_hardlink(ae)) ||
	    !same(e->type == R4_ENT_SYMLINK ? e->target : NULL,
		  archive_entry_symlink(ae)))
		fail("the link", e->path);
	if ((e->mode & 07777) != (archive_entry_perm(ae) & 07777) ||
	    e->uid != archive_entry_uid(ae) || e->gid != archive_entry_gid(ae))
		fail("the mode or owner", e->path);
	if (e->mtime != archive_entry_mtime(ae) ||
	    e->mtime_ns != (uint32_t)archive_entry_mtime_nsec(ae))
		fail("the mtime", e->path);
	check_times(e, ae);
	if (dev && (e->rmaj != archive_entry_rdevmajor(ae) ||
		    e->rmin != archive_entry_rdevminor(ae)))
		fail("the device", e->path);
	if (e->nx != (unsigned)archive_entry_xattr_count(ae) ||
	    archive_entry_acl_types(ae))
		fail("the extended attributes", e->path);
	if ((e->type == R4_ENT_REG || (hard && e->size)) &&
	    (int64_t)e->size != archive_entry_size(ae))
		fail("the size", e->path);
	return 0;
}

static struct archive *lib_open(const uint8_t *data, size_t size)
{
	struct archive *a = archive_read_new();

	if (!a || archive_read_set_format(a, ARCHIVE_FORMAT_TAR) ||
	    archive_read_open_memory(a, data, size))
		abort();
	return a;
}

static const char *str(const char *s)
{
	return s ? s : "";
}

/* One entry of the hand-over reader b against the lone reader's a. */
static void check_lib(struct archive *a, struct archive_entry *x,
		      struct archive *b, struct archive_entry *y)
{
	const char *p = archive_entry_pathname(x);

	if (archive_read_header_position(a) != archive_read_header_position(b) ||
	    archive_filter_bytes(a, 0) != archive_filter_bytes(b, 0))
		fail("the hand-over's place", p);
	if (!same(p, archive_entry_pathname(y)) ||
	    !same(archive_entry_hardlink(x), archive_entry_hardlink(y)) ||
	    !same(archive_entry_symlink(x), archive_entry_symlink(y)) ||
	    archive_entry_mode(x) != archive_entry_mode(y) ||
	    archive_entry_size(x) != archive_entry_size(y) ||
	    archive_entry_mtime(x) != archive_entry_mtime(y) ||
	    archive_entry_rdev(x) != archive_entry_rdev(y) ||
	    archive_entry_xattr_count(x) != archive_entry_xattr_count(y) ||
	    strcmp(str(archive_error_string(a)), str(archive_error_string(b))))
		fail("the hand-over's entry", p);
}

/* After the own reader left the header at hand: a second libarchive
 * reader passes over what it took (tar_arc_skip_to, read.c's), then
 * reads on; its entries must be those of a, which reads on alone. */
static void hand_over(struct archive *a, const uint8_t *data, size_t size,
		      uint64_t hand)
{
	struct archive *b = lib_open(data, size);
	struct archive_entry *x, *y;
	int ra, rb = tar_arc_skip_to(b, &y, archive_read_next_header(b, &y),
				     hand);

	for (;;) {
		ra = archive_read_next_header(a, &x);
		if (ra != rb)
			fail("the hand-over's result", NULL);
		if (ra != ARCHIVE_OK && ra != ARCHIVE_WARN)
			break;
		check_lib(a, x, b, y);
		rb = archive_read_next_header(b, &y);
	}
	archive_read_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct archive_entry *ae;
	struct cmp c = { .size = size };
	int fd = memfd_create("fuzz_tar", 0), end;
	uint64_t hand;

	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
		abort();
	c.a = lib_open(data, size);
	tar_own_scan(fd, size, check, &c, &end, &hand);
	if (end && archive_read_next_header(c.a, &ae) != ARCHIVE_EOF) {
		fprintf(stderr, "fuzz_tar: an end libarchive does not see\n");
		abort();
	}
	if (!end)
		hand_over(c.a, data, size, hand);
	archive_read_free(c.a);
	close(fd);
	return 0;
}

#ifndef R4_FUZZ_LIBFUZZER
static uint64_t rng = 0x9E3779B97F4A7C15ULL;

static uint64_t next(void)
{
	return fuzz_xorshift(&rng);
}

/* The header block at b given its right unsigned checksum. */
static void reseal(uint8_t *b)
{
	unsigned sum = 8 * ' ';

	for (int i = 0; i < 512; i++)
		if (i < 148 || i >= 156)
			sum += b[i];
	snprintf((char *)b + 148, 8, "%06o", sum & 0777777);
	b[155] = ' ';
}

/* A mutation of the n bytes of seed into buf; its size. */
static size_t mutate(const uint8_t *seed, size_t n, uint8_t *buf)
{
	size_t blocks = n / 512, len = n;
	unsigned k = 1 + (unsigned)(next() % 4);

	memcpy(buf, seed, n);
	if (!blocks)
		return n;
	for (unsigned i = 0; i < k; i++) {
		size_t blk = (size_t)(next() % blocks) * 512;
		size_t at = blk + (next() % 4 ? next() % 350 : next() % 512);
		static const uint8_t vals[] = { 0, ' ', '0', '7', '/', '.',
			0x80, 0xff, 'x', 'L', 'K', 'g', '1', '2', '5', '\n' };

		buf[at] = next() % 2 ? vals[next() % sizeof(vals)] :
			  (uint8_t)next();
		if (next() % 2)
			reseal(buf + blk);
	}
	if (next() % 8 == 0)
		len = (size_t)(next() % (n + 1));
	return len;
}

int main(int argc, char **argv)
{
	unsigned long runs = 200;
	int i = 1;

	if (argc > 2 && !strcmp(argv[1], "-n")) {
		runs = strtoul(argv[2], NULL, 10);
		i = 3;
	}
	for (; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		static uint8_t seed[1 << 20], buf[1 << 20];
		size_t n;

		if (!f) {
			perror(argv[i]);
			return 1;
		}
		n = fread(seed, 1, sizeof(seed), f);
		fclose(f);
		LLVMFuzzerTestOneInput(seed, n);
		for (unsigned long r = 0; r < runs; r++)
			LLVMFuzzerTestOneInput(buf, mutate(seed, n, buf));
		printf("fuzz_tar: %s: %lu mutations, no difference\n", argv[i],
		       runs);
	}
	return 0;
}
#endif
