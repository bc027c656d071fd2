/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: a transaction's scratch file (txn_spill): the new blocks its
 * ring lets go wait there, not on the volume, until the commit reads
 * them back. The file is sparse: block nr at byte nr * block size, so
 * a block spilled again takes its old place and the commit, which
 * writes in block order, reads the file front to back. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <unistd.h>
#include "libimage/txn/txn_int.h"
#include "libimage/util/err.h"
#include "libimage/util/tmpfiles.h"

/* The cache's miss: a block the file holds (spilled, no buffer). */
static int sp_under(void *ctx, uint64_t nr, uint8_t *buf,
		    struct r4_error *err)
{
	struct txn *t = ctx;
	struct tb e = tb_peek(&t->map, nr);
	int rc;

	if (!e.spilled || e.b || !t->sp_dev)
		return 0;
	rc = io_read(t->sp_dev, buf, t->vol->blksize,
		     nr * t->vol->blksize, err);
	return rc ? rc : 1;
}

int txn_sp_open(struct txn *t, struct r4_error *err)
{
	const char *dir = r4i_scratch_dir();
	char name[4096];
	int fd, rc;

	rc = r4i_scratch_open("r4txn", &fd);	/* unlinked at once */
	if (rc)
		return r4i_fail(err, rc, "%s: cannot make the transaction's "
			       "temporary file in %s: %s", t->vol->dev->path,
			       dir, r4_strerror(rc));
	snprintf(name, sizeof(name), "%s/r4txn", dir);
	rc = io_open_fd_rw(fd, name, &t->sp_dev, err);
	close(fd);
	if (rc)
		return rc;
	t->vol->cache.under = sp_under;
	t->vol->cache.under_ctx = t;
	return 0;
}

int txn_sp_read(struct txn *t, uint64_t nr, size_t n, uint8_t *buf,
		struct r4_error *err)
{
	uint32_t bs = t->vol->blksize;

	if (!t->sp_dev)
		return r4i_fail(err, R4_EINVAL, "%s: block %llu has no bytes "
			       "(no buffer, no temporary file)",
			       t->vol->dev->path, (unsigned long long)nr);
	return io_read(t->sp_dev, buf, n * bs, nr * bs, err);
}

void txn_sp_release(struct txn *t, int revert)
{
	struct io_cache *c = &t->vol->cache;
	struct tb *e, v;
	uint64_t nr = 0;

	if (!t->sp_dev)
		return;
	for (size_t i = 0; revert && (e = tb_next(&t->map, &i));)
		if (e->spilled && !e->b)
			io_cache_forget(c, e->nr);
	while (revert && tbc_next(&t->map, &nr, ~1u, &v))
		if (v.spilled)
			io_cache_forget(c, v.nr);
	if (c->under_ctx == t) {
		c->under = NULL;
		c->under_ctx = NULL;
	}
	io_close(t->sp_dev);
	t->sp_dev = NULL;
}
