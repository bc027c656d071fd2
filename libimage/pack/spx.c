/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: streamed extent data for the packer (BD_SPX).
 *
 * A file whose data is read while the entries are added (standard
 * input, a compressed archive, another format, a sparse member) cannot
 * be written where the tree will want it: its blocks go to the spool
 * file, from a block boundary, each block its chunks touch padded with
 * zeros to a whole one, and a map says which file blocks those are
 * (units of PACK_SPX_DATA) and which are holes. When the tree reaches
 * the file (items.c), its runs are handed out and copied into place
 * from the spool by the writer, as the data of a tar file is (data.c):
 * the layout, and the bytes, of a build that read the file there. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include "libimage/pack/packer.h"
#include "libimage/util/err.h"

/* Spool writer of a BD_SPX file: the blocks its chunks touch, in file
 * order, each padded with zeros to a whole block. */
struct spxw {
	struct r4_pack *b;
	struct enc_units *map;
	uint64_t next;		/* first file block not yet in the map */
	uint64_t cur;		/* file block being spooled, or UINT64_MAX */
	uint64_t fpos;		/* file byte the spool's end stands for */
};

/* Map n more blocks: data (PACK_SPX_DATA) or a hole (0). */
static int spx_map(struct enc_units *map, uint64_t start, uint64_t n)
{
	struct fmt_extent40_unit *l = map->n ? &map->u[map->n - 1] : NULL;

	if (l && l->start == start) {
		l->width += n;
		return 0;
	}
	return enc_unit_add(map, start, n);
}

/* The rest of block cur padded with zeros (none being spooled: none). */
static int spx_pad(struct spxw *w, struct r4_error *err)
{
	uint64_t end, n;

	if (w->cur == UINT64_MAX)
		return 0;
	end = (w->cur + 1) * w->b->bs;
	n = end - w->fpos;
	w->fpos = end;
	return n ? pack_spool_put(w->b, NULL, n, err) : 0;
}

static int spx_chunk(struct spxw *w, uint64_t off, const uint8_t *p,
		     size_t len, struct r4_error *err)
{
	uint32_t bs = w->b->bs;
	int rc = 0;

	while (len && !rc) {
		uint64_t i = off / bs;
		size_t n = bs - (size_t)(off % bs);

		if (w->cur != i) {	/* chunks come in order: i > cur */
			rc = spx_pad(w, err);
			if (!rc && i > w->next &&
			    spx_map(w->map, 0, i - w->next))
				rc = -ENOMEM;
			if (!rc && spx_map(w->map, PACK_SPX_DATA, 1))
				rc = -ENOMEM;
			if (rc)
				return rc == -ENOMEM ? r4i_fail(err, rc,
					"out of memory") : rc;
			/* a fixed size the data alone overflows fails now,
			 * not after the spool took all of it */
			if (++w->b->spx_blocks > w->b->limit && w->b->limit)
				return pack_full(w->b, err);
			w->cur = i;
			w->next = i + 1;
			w->fpos = i * bs;
		}
		if (off > w->fpos)
			rc = pack_spool_put(w->b, NULL, off - w->fpos, err);
		n = n < len ? n : len;
		if (!rc)
			rc = pack_spool_put(w->b, p, n, err);
		p += n;
		off += n;
		len -= n;
		w->fpos = off;
	}
	return rc;
}

int pack_data_take_spx(struct r4_pack *b, struct bobj *o, r4_data_fn fn,
		       void *ctx, const char *path, struct r4_error *err)
{
	struct spxw w = { b, &o->u.reg->ext, 0, UINT64_MAX, 0 };
	uint64_t pos = 0, off, nblk = (o->size + b->bs - 1) / b->bs;
	const void *buf;
	size_t len;
	int rc = pack_spool_put(b, NULL, (b->bs - b->spool_len % b->bs) % b->bs,
			   err);

	o->u.reg->ext.n = 0;
	o->u.reg->spool_off = b->spool_len;
	while (!rc && (rc = enc_chunk_next(fn, ctx, path, &off, &buf, &len,
					   err)) > 0) {
		rc = enc_chunk_check(path, o->size, pos, off, len, err);
		if (!rc)
			rc = spx_chunk(&w, off, buf, len, err);
		pos = off + len;
	}
	if (!rc)
		rc = spx_pad(&w, err);
	if (!rc && nblk > w.next && spx_map(w.map, 0, nblk - w.next))
		rc = r4i_fail(err, -ENOMEM, "out of memory");
	o->data = BD_SPX;
	return rc;
}

/* got more blocks handed to the copy: the copy phase's progress. */
static void spx_progress(struct r4_pack *b, uint64_t got)
{
	b->spx_copied += got * b->bs;
	if (b->o.copy_progress)
		b->o.copy_progress(b->o.progress_ctx, b->spx_copied,
				   b->spx_blocks * b->bs);
}

void pack_spx_done(struct r4_pack *b)
{
	uint64_t total = b->spx_blocks * b->bs;

	if (!b->spx_blocks || b->spx_copied >= total)
		return;
	b->spx_copied = total;
	if (b->o.copy_progress)
		b->o.copy_progress(b->o.progress_ctx, total, total);
}

int pack_data_spx_extents(struct r4_pack *b, struct bobj *o,
			  const char *path, struct r4_error *err)
{
	struct enc_units *map = &o->u.reg->ext, got_units = { 0 };
	uint64_t soff = o->u.reg->spool_off;
	int rc = 0;

	for (size_t k = 0; !rc && k < map->n; k++) {
		uint64_t w = map->u[k].width, start, got;

		if (!map->u[k].start) {
			if (enc_unit_add(&got_units, 0, w))
				rc = r4i_fail(err, -ENOMEM, "out of memory");
			continue;
		}
		while (!rc && w) {
			rc = pack_alloc_run(b, w, &start, &got, err);
			if (!rc && enc_unit_add(&got_units, start, got))
				rc = r4i_fail(err, -ENOMEM, "out of memory");
			if (!rc)
				rc = pack_copy_submit(b, b->spool, start * b->bs,
						 soff, got * b->bs, path, err);
			b->data_blocks += rc ? 0 : got;
			soff += got * b->bs;
			w -= rc ? w : got;
			if (!rc)
				spx_progress(b, got);
		}
	}
	if (map->cap)	/* else the spill's record holds it */
		free(map->u);
	*map = got_units;
	o->data = BD_EXTENTS;
	return rc;
}
