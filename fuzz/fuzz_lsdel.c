/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit fuzz target for the deleted-object scanner (libimage/forensic):
 * the input is a volume image; every block of it is also given to the
 * node scanner as an old node of a volume whose mkfs id it carries
 * (so the id check does not stop the bytes early), under both key
 * policies; then the volume is opened and lsdel, and undel of every
 * object it lists, run over it. fuzz/standalone.c runs it without
 * libFuzzer. */
#include "config.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "r4/r4.h"
#include "r4/forensic.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BS 4096
#define MAX_UNDEL 64

struct fz {
	struct r4_vol *vol;
	unsigned n;
	uint64_t bytes;
};

static int sink(void *ctx, uint64_t off, const void *buf, size_t len)
{
	struct fz *f = ctx;

	(void)off;
	if (len)	/* touch the bytes: a bad pointer shows */
		f->bytes += ((const uint8_t *)buf)[0] +
			    ((const uint8_t *)buf)[len - 1];
	return 0;
}

static int gap(void *ctx, uint64_t off, uint64_t len)
{
	(void)ctx; (void)off; (void)len;
	return 0;
}

static int on_deleted(void *ctx, const struct r4_deleted *d)
{
	struct fz *f = ctx;
	struct r4_error err = { 0 };

	if (f->n++ < MAX_UNDEL)
		r4_undel(f->vol, d->st.oid, NULL, sink, gap, f, &err);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct r4_error err = { 0 };
	struct fz f = { 0 };
	char path[64];
	int fd;

	for (size_t off = 0; off + BS <= size; off += BS) {
		const uint8_t *b = data + off;
		uint32_t id = (uint32_t)b[12] | (uint32_t)b[13] << 8 |
			      (uint32_t)b[14] << 16 | (uint32_t)b[15] << 24;

		r4_lsdel_scan_node(b, BS, id, 1, &err);
		r4_lsdel_scan_node(b, BS, id, 0, &err);
	}
	fd = memfd_create("r4fuzz", 0);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (r4_vol_open(path, R4_OPEN(R4_OPEN_RDONLY), &f.vol, &err) == 0) {
		r4_lsdel(f.vol, on_deleted, &f, &err);
		r4_vol_close(f.vol, NULL);
	}
	close(fd);
	return 0;
}
