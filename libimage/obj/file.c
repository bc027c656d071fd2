/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: regular file bodies (tail40 and extent40 items), symlinks;
 * compressed (ccreg40) bodies through libimage/obj/ccreg_read.c. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "libimage/obj/obj.h"
#include "libimage/obj/ccreg.h"
#include "format/cluster.h"
#include "libimage/vol/volume.h"
#include "libimage/util/err.h"
#include "libimage/tree/tree.h"
#include "format/plugin.h"
#include "format/sha256.h"
#include "r4/util.h"

/* One piece of the body handed to a body visitor. */
typedef int (*body_fn)(void *ctx, const struct tree_item *it,
		       const struct r4_blkmap *m);

/* Visit the units of an extent item. */
static int extent_units(struct r4_vol *vol, const struct tree_item *it,
			body_fn fn, void *ctx, struct r4_error *err)
{
	struct fmt_extent40_unit u;
	struct r4_blkmap m;
	uint64_t off = fmt_key_offset(&it->key), end;
	int n = fmt_extent40_units(it->body, it->len), rc;

	if (n < 0)
		return r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu, item %u: "
			       "extent40 body of %zu bytes", obj_vol_name(vol),
			       (unsigned long long)it->blk, it->pos, it->len);
	for (int i = 0; i < n; i++) {
		fmt_extent40_unit(it->body, it->len, (unsigned)i, &u);
		m.file_off = off;
		m.blk = 0;
		m.count = u.width;
		m.len = u.width * vol->blksize;
		m.kind = fmt_extent40_kind(&u) == FMT_EXTENT_HOLE ?
			 R4_BLK_HOLE : fmt_extent40_kind(&u) ==
			 FMT_EXTENT_UNALLOCATED ? R4_BLK_UNALLOCATED :
			 R4_BLK_DATA;
		if (m.kind == R4_BLK_DATA) {
			m.blk = u.start;
			if (fmt_extent40_unit_end(&u, &end) ||
			    u.start < fmt_blk_first_usable(vol->blksize) ||
			    end > vol->sb.block_count)
				return r4i_fail(err, R4_ERANGE, "%s: tree node "
					       "%llu, item %u, unit %d: blocks "
					       "%llu+%llu are outside the "
					       "volume", obj_vol_name(vol),
					       (unsigned long long)it->blk,
					       it->pos, i,
					       (unsigned long long)u.start,
					       (unsigned long long)u.width);
		}
		if (u.width == 0 || u.width > UINT64_MAX / vol->blksize ||
		    m.len > UINT64_MAX - off)
			return r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu, "
				       "item %u, unit %d: width %llu",
				       obj_vol_name(vol),
				       (unsigned long long)it->blk, it->pos,
				       i, (unsigned long long)u.width);
		rc = fn(ctx, it, &m);
		if (rc)
			return rc;
		off += m.len;
	}
	return 0;
}

static int body_item(struct r4_vol *vol, const struct tree_item *it,
		     body_fn fn, void *ctx, struct r4_error *err)
{
	struct r4_blkmap m;
	uint64_t end;

	switch (it->plugin_id) {
	case FMT_ITEM_TAIL40:
		if (fmt_tail40_end(fmt_key_offset(&it->key), it->len, &end))
			return r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu, "
				       "item %u: tail offset overflows",
				       obj_vol_name(vol),
				       (unsigned long long)it->blk, it->pos);
		m.file_off = fmt_key_offset(&it->key);
		m.len = it->len;
		m.blk = it->blk;
		m.count = 1;
		m.kind = R4_BLK_TAIL;
		return fn(ctx, it, &m);
	case FMT_ITEM_EXTENT40:
		return extent_units(vol, it, fn, ctx, err);
	case FMT_ITEM_CTAIL40:
		return r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu, item %u: "
			       "ctail40 item in the body of an ordinary "
			       "(reg40) file", obj_vol_name(vol),
			       (unsigned long long)it->blk, it->pos);
	default:
		return r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu, item %u: "
			       "item plugin %u in a file body",
			       obj_vol_name(vol), (unsigned long long)it->blk,
			       it->pos, it->plugin_id);
	}
}

/* Visit the body items of obj that may cover [from, to). */
static int body_walk(struct r4_vol *vol, const struct r4_objref *obj,
		     uint64_t from, uint64_t to, body_fn fn, void *ctx,
		     struct r4_error *err)
{
	struct tree_cursor c;
	struct tree_item it;
	struct fmt_key k;
	int rc;

	fmt_key_body(&k, obj->locality, vol->keypol == FMT_KEY_LARGE ?
		     obj->ordering : 0, obj->oid, from);
	tree_cursor_init(&c, vol);
	rc = tree_seek_le(&c, &k, err);
	if (!rc) {
		rc = tree_cur(&c, &it, err);
		if (!rc && !obj_is_body(obj, &it.key))
			rc = tree_next(&c, err);
	} else if (rc == R4_ENOTFOUND) {
		rc = tree_seek_ge(&c, &k, err);
	}
	while (!rc) {
		rc = tree_cur(&c, &it, err);
		if (rc || !obj_is_body(obj, &it.key) ||
		    fmt_key_offset(&it.key) >= to)
			break;
		rc = body_item(vol, &it, fn, ctx, err);
		if (!rc)
			rc = tree_next(&c, err);
	}
	tree_cursor_fini(&c);
	return rc == R4_ENOTFOUND ? 0 : rc;
}

struct rd {
	struct r4_vol *vol;
	uint8_t *buf;
	uint64_t off, len;	/* the wanted range */
	struct r4_error *err;
	const struct r4_objref *obj;
	uint64_t size;
	uint64_t cov;		/* items cover off..cov */
};

/* The kernel reads a reg40 file through its items: a byte below the
 * size that no item holds is a read error (doc/format.md §7.2). */
static int size_past_body(struct r4_vol *vol, const struct r4_objref *obj,
			  uint64_t at, uint64_t size, struct r4_error *err)
{
	return r4i_fail(err, R4_ECORRUPT, "%s: object %llx: size %llu runs "
		       "past the body (no item holds byte %llu)",
		       obj_vol_name(vol), (unsigned long long)obj->oid,
		       (unsigned long long)size, (unsigned long long)at);
}

/* Coverage: pieces come in file order from the one holding r->off. */
static int covered(struct rd *r, const struct r4_blkmap *m)
{
	if (m->file_off > r->cov && r->cov < r->off + r->len)
		return size_past_body(r->vol, r->obj, r->cov, r->size, r->err);
	if (m->file_off + m->len > r->cov)
		r->cov = m->file_off + m->len;
	return 0;
}

static int read_piece(void *ctx, const struct tree_item *it,
		      const struct r4_blkmap *m)
{
	struct rd *r = ctx;
	uint64_t lo = m->file_off > r->off ? m->file_off : r->off;
	uint64_t hi = m->file_off + m->len, want_end = r->off + r->len;
	struct io_block *b;
	int rc = covered(r, m);

	if (rc)
		return rc;
	if (hi > want_end)
		hi = want_end;
	if (lo >= hi)
		return 0;
	if (m->kind == R4_BLK_TAIL) {
		memcpy(r->buf + (lo - r->off), it->body + (lo - m->file_off),
		       (size_t)(hi - lo));
		return 0;
	}
	if (m->kind != R4_BLK_DATA) {
		/* holes and unallocated units read as 0 */
		memset(r->buf + (lo - r->off), 0, (size_t)(hi - lo));
		return 0;
	}
	while (lo < hi) {
		uint32_t bs = r->vol->blksize;
		uint64_t rel = lo - m->file_off;
		uint64_t blk = m->blk + rel / bs;
		size_t in = (size_t)(rel % bs);
		size_t n = bs - in;

		if (!in && hi - lo >= bs) {
			/* whole blocks: straight into the caller's buffer */
			uint64_t k = (hi - lo) / bs;

			rc = io_cache_read(&r->vol->cache, blk, k,
					   r->buf + (lo - r->off), r->err);
			if (rc)
				return rc;
			lo += k * bs;
			continue;
		}
		if (n > hi - lo)
			n = (size_t)(hi - lo);
		rc = io_cache_get(&r->vol->cache, blk, &b, r->err);
		if (rc)
			return rc;
		memcpy(r->buf + (lo - r->off), b->data + in, n);
		io_cache_put(&r->vol->cache, b);
		lo += n;
	}
	return 0;
}

static int reg_sd(struct r4_vol *vol, const struct r4_objref *obj,
		  struct obj_sd *sd, struct r4_error *err)
{
	int rc = obj_sd_get(vol, obj, sd, err);

	if (rc)
		return rc;
	if (sd->plugin == FMT_OBJ_REG40 || sd->plugin == FMT_OBJ_CCREG40)
		return 0;
	obj_sd_put(sd);
	return r4i_fail(err, sd->plugin == FMT_OBJ_DIR40 ? -EISDIR : R4_EINVAL,
		       "%s: object %llx is not a regular file (plugin %u)",
		       obj_vol_name(vol), (unsigned long long)obj->oid,
		       sd->plugin);
}

int r4_read(struct r4_vol *vol, const struct r4_objref *obj, uint64_t off,
	    void *buf, size_t len, size_t *got, struct r4_error *err)
{
	struct rd r = { vol, buf, off, len, err, obj, 0, off };
	struct obj_sd sd;
	int rc = reg_sd(vol, obj, &sd, err);

	*got = 0;
	if (rc)
		return rc;
	r.size = sd.st.size;
	if (off >= sd.st.size)
		r.len = 0;
	else if (len > sd.st.size - off)
		r.len = sd.st.size - off;
	if (sd.plugin == FMT_OBJ_CCREG40) {
		rc = obj_ccreg_read(vol, obj, &sd, off, buf, (size_t)r.len, err);
		obj_sd_put(&sd);
		if (!rc)
			*got = (size_t)r.len;
		return rc;
	}
	obj_sd_put(&sd);
	if (!r.len)
		return 0;
	/* the pieces fill every byte: data, tails, zeros for holes; a gap
	 * is the size_past_body error */
	rc = body_walk(vol, obj, off, off + r.len, read_piece, &r, err);
	if (!rc && r.cov < off + r.len)
		rc = size_past_body(vol, obj, r.cov, r.size, err);
	if (!rc)
		*got = (size_t)r.len;
	return rc;
}

/* r4_file_runs: data pieces merged; for reg40 also the coverage. */
struct runs {
	uint64_t *v;
	size_t n, cap;
	uint64_t size, cov;
	int reg;		/* check coverage (reg40) */
	int fail;		/* coverage broken at cov */
};

static int run_piece(void *ctx, const struct r4_blkmap *m)
{
	struct runs *s = ctx;
	uint64_t a = m->file_off, b;

	if (s->reg && a > s->cov && s->cov < s->size && !s->fail)
		s->fail = 1;
	if (!s->fail && a + m->len > s->cov)
		s->cov = a + m->len;
	if ((m->kind != R4_BLK_DATA && m->kind != R4_BLK_TAIL) ||
	    a >= s->size)
		return 0;
	b = m->len > s->size - a ? s->size : a + m->len;
	if (s->n && a <= s->v[2 * s->n - 2] + s->v[2 * s->n - 1]) {
		uint64_t *end = &s->v[2 * s->n - 1], st = s->v[2 * s->n - 2];

		if (b > st + *end)
			*end = b - st;
		return 0;
	}
	if (R4_RESERVE(s->v, s->cap, 2 * s->n + 2, 32))
		return -ENOMEM;
	s->v[2 * s->n] = a;
	s->v[2 * s->n + 1] = b - a;
	s->n++;
	return 0;
}

int r4_file_runs(struct r4_vol *vol, const struct r4_objref *obj,
		 uint64_t size, uint64_t **runs, size_t *n,
		 struct r4_error *err)
{
	struct runs s = { .size = size };
	struct obj_sd sd;
	int rc = reg_sd(vol, obj, &sd, err);

	*runs = NULL;
	*n = 0;
	if (rc)
		return rc;
	s.reg = sd.plugin == FMT_OBJ_REG40;
	obj_sd_put(&sd);
	rc = r4_file_blocks(vol, obj, run_piece, &s, err);
	if (rc == -ENOMEM)
		rc = r4i_fail(err, rc, "%s: object %llx: out of memory",
			     obj_vol_name(vol), (unsigned long long)obj->oid);
	if (!rc && s.reg && (s.fail || s.cov < size))
		rc = size_past_body(vol, obj, s.cov, size, err);
	if (rc) {
		free(s.v);
		return rc;
	}
	*runs = s.v;
	*n = s.n;
	return 0;
}

struct bm {
	r4_block_fn fn;
	void *ctx;
	struct r4_vol *vol;
	uint64_t size;		/* ccreg40: file size and cluster shift */
	unsigned shift;
};

static int map_piece(void *ctx, const struct tree_item *it,
		     const struct r4_blkmap *m)
{
	struct bm *b = ctx;

	(void)it;
	return b->fn(b->ctx, m);
}

/* ccreg40: one piece per ctail40 item, covering the logical cluster it
 * belongs to (doc/compress.md §3.1). */
static int map_ctail(void *ctx, const struct tree_item *it)
{
	struct bm *b = ctx;
	struct r4_blkmap m;
	uint64_t idx = fmt_key_offset(&it->key) >> b->shift;

	if (it->plugin_id != FMT_ITEM_CTAIL40)
		return r4i_fail(NULL, R4_ECORRUPT, "not a ctail");
	m.file_off = idx << b->shift;
	m.len = fmt_cluster_lsize(b->size, idx, b->shift);
	m.blk = it->blk;
	m.count = 1;
	m.kind = R4_BLK_TAIL;
	return b->fn(b->ctx, &m);
}

static int ccreg_blocks(struct r4_vol *vol, const struct r4_objref *obj,
		     struct bm *b, struct r4_error *err)
{
	struct tree_cursor c;
	struct tree_item it;
	struct fmt_key k;
	int rc;

	fmt_key_body(&k, obj->locality, vol->keypol == FMT_KEY_LARGE ?
		     obj->ordering : 0, obj->oid, 0);
	tree_cursor_init(&c, vol);
	rc = tree_seek_ge(&c, &k, err);
	while (!rc) {
		rc = tree_cur(&c, &it, err);
		if (rc || !obj_is_body(obj, &it.key))
			break;
		rc = map_ctail(b, &it);
		if (rc == R4_ECORRUPT)
			rc = r4i_fail(err, rc, "%s: tree node %llu, item %u: "
				     "item plugin %u in the body of a "
				     "compressed file", obj_vol_name(vol),
				     (unsigned long long)it.blk, it.pos,
				     it.plugin_id);
		if (!rc)
			rc = tree_next(&c, err);
	}
	tree_cursor_fini(&c);
	return rc == R4_ENOTFOUND ? 0 : rc;
}

int r4_file_blocks(struct r4_vol *vol, const struct r4_objref *obj,
		   r4_block_fn fn, void *ctx, struct r4_error *err)
{
	struct bm b = { fn, ctx, vol, 0, 0 };
	struct obj_sd sd;
	struct obj_ccreg cc;
	int rc = reg_sd(vol, obj, &sd, err);

	if (rc)
		return rc;
	if (sd.plugin == FMT_OBJ_CCREG40) {
		rc = obj_ccreg_params(vol, obj, &sd, &cc, err);
		b.size = sd.st.size;
		b.shift = cc.shift;
		obj_sd_put(&sd);
		return rc ? rc : ccreg_blocks(vol, obj, &b, err);
	}
	obj_sd_put(&sd);
	return body_walk(vol, obj, 0, UINT64_MAX, map_piece, &b, err);
}

int r4_readlink(struct r4_vol *vol, const struct r4_objref *obj, char *buf,
		size_t len, size_t *tlen, struct r4_error *err)
{
	struct obj_sd sd;
	size_t n;
	int rc = obj_sd_get(vol, obj, &sd, err);

	if (rc)
		return rc;
	if (sd.plugin != FMT_OBJ_SYM40 ||
	    !fmt_stat_has(&sd.st, FMT_SDEXT_SYMLINK)) {
		obj_sd_put(&sd);
		return r4i_fail(err, R4_EINVAL, "%s: object %llx is not a "
			       "symlink", obj_vol_name(vol),
			       (unsigned long long)obj->oid);
	}
	if (tlen)
		*tlen = sd.st.symlink_len;
	if (len) {
		n = sd.st.symlink_len < len - 1 ? sd.st.symlink_len : len - 1;
		memcpy(buf, sd.st.symlink, n);
		buf[n] = '\0';
	}
	obj_sd_put(&sd);
	return 0;
}

int r4_sha256_file(struct r4_vol *vol, const struct r4_objref *obj,
		   uint8_t out[32], struct r4_error *err)
{
	const size_t chunk = 1u << 20;
	struct fmt_sha256 c;
	uint8_t *buf = malloc(chunk);
	uint64_t off = 0;
	size_t got;
	int rc;

	if (!buf)
		return r4i_fail(err, -ENOMEM, "out of memory");
	fmt_sha256_init(&c);
	do {
		rc = r4_read(vol, obj, off, buf, chunk, &got, err);
		if (rc)
			break;
		fmt_sha256_update(&c, buf, got);
		off += got;
	} while (got == chunk);
	free(buf);
	if (!rc)
		fmt_sha256_final(&c, out);
	return rc;
}
