/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the journal's overlay, one layer of a read-only open's device
 * chain (over the file; see txn.h). Reads of a block a committed,
 * not yet played transaction overwrites are served from its wandered
 * copy; writes never reach a read-only device. The layer wraps the
 * device as the fault and undo backends of libimage/io do, and goes
 * with the device (io_close). */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/txn/txn.h"
#include "libimage/util/err.h"

struct ovl_priv {
	struct io_dev lower;	/* the wrapped backend */
	uint32_t bs;
	size_t n;
	uint64_t *from, *to;	/* from[] sorted, one pair a block */
};

static int ovl_lookup(const struct ovl_priv *p, uint64_t blk, uint64_t *to)
{
	size_t lo = 0, hi = p->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->from[mid] == blk) {
			*to = p->to[mid];
			return 1;
		}
		if (p->from[mid] < blk)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* A read split at block boundaries, each piece from its block. */
static int ovl_pread(struct io_dev *dev, void *buf, size_t len, uint64_t off)
{
	struct ovl_priv *p = dev->priv;
	uint8_t *b = buf;

	while (len > 0) {
		uint64_t blk = off / p->bs, to, src = off;
		size_t piece = p->bs - (size_t)(off % p->bs);
		int rc;

		if (piece > len)
			piece = len;
		if (ovl_lookup(p, blk, &to))
			src = to * p->bs + off % p->bs;
		rc = p->lower.ops->pread(&p->lower, b, piece, src);
		if (rc)
			return rc;
		b += piece;
		off += piece;
		len -= piece;
	}
	return 0;
}

static int ovl_pwrite(struct io_dev *dev, const void *buf, size_t len,
		      uint64_t off)
{
	return -EROFS;
}

static int ovl_sync(struct io_dev *dev)
{
	return 0;
}

static int ovl_resize(struct io_dev *dev, uint64_t size)
{
	return -EROFS;
}

static void ovl_free(struct ovl_priv *p)
{
	free(p->from);
	free(p->to);
	free(p);
}

static void ovl_close(struct io_dev *dev)
{
	struct ovl_priv *p = dev->priv;

	p->lower.ops->close(&p->lower);
	ovl_free(p);
}

static const struct io_ops ovl_ops = {
	.pread = ovl_pread, .pwrite = ovl_pwrite, .sync = ovl_sync,
	.resize = ovl_resize, .close = ovl_close
};

static struct ovl_priv *ovl_of(const struct r4_vol *vol)
{
	return vol->dev->ops == &ovl_ops ? vol->dev->priv : NULL;
}

struct pair {
	uint64_t from, to;
	size_t seq;
};

static int cmp_pair(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;

	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The pairs sorted by from, the last pair of each block kept. */
static int ovl_fill(struct ovl_priv *p, const uint64_t *from,
		    const uint64_t *to, size_t n)
{
	struct pair *v = malloc(n * sizeof(*v));
	size_t k = 0;

	p->from = malloc(n * sizeof(uint64_t));
	p->to = malloc(n * sizeof(uint64_t));
	if (!v || !p->from || !p->to) {
		free(v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		v[i] = (struct pair){ from[i], to[i], i };
	qsort(v, n, sizeof(*v), cmp_pair);
	for (size_t i = 0; i < n; i++) {
		if (i + 1 < n && v[i + 1].from == v[i].from)
			continue;
		p->from[k] = v[i].from;
		p->to[k++] = v[i].to;
	}
	free(v);
	p->n = k;
	return 0;
}

int txn_overlay_set(struct r4_vol *vol, const uint64_t *from,
		    const uint64_t *to, size_t n, struct r4_error *err)
{
	struct io_dev *dev = vol->dev;
	struct ovl_priv *p;

	txn_overlay_drop(vol);
	if (!n)
		return 0;
	if (!dev->readonly)
		return r4i_fail(err, R4_EINVAL, "%s: the journal's overlay is "
			       "for read-only opens", dev->path);
	p = calloc(1, sizeof(*p));
	if (!p || ovl_fill(p, from, to, n)) {
		if (p)
			ovl_free(p);
		return r4i_fail(err, -ENOMEM, "%s: out of memory", dev->path);
	}
	p->bs = vol->blksize;
	p->lower = *dev;
	dev->ops = &ovl_ops;
	dev->priv = p;
	return 0;
}

void txn_overlay_drop(struct r4_vol *vol)
{
	struct ovl_priv *p = ovl_of(vol);

	if (!p)
		return;
	vol->dev->ops = p->lower.ops;
	vol->dev->priv = p->lower.priv;
	ovl_free(p);
}

size_t txn_overlay_pairs(const struct r4_vol *vol, const uint64_t **from,
			 const uint64_t **to)
{
	const struct ovl_priv *p = ovl_of(vol);

	*from = p ? p->from : NULL;
	*to = p ? p->to : NULL;
	return p ? p->n : 0;
}

int txn_read_under(struct r4_vol *vol, void *buf, size_t len, uint64_t off)
{
	struct ovl_priv *p = ovl_of(vol);

	if (p)
		return p->lower.ops->pread(&p->lower, buf, len, off);
	return vol->dev->ops->pread(vol->dev, buf, len, off);
}
