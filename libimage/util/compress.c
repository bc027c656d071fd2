/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: lzo1, gzip1 and zstd1 codecs (doc/compress.md §3.3). */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <lzo/lzo1x.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>
#include "libimage/util/compress.h"
#include "format/errors.h"
#include "format/plugin.h"

/* doc/compress.md §3.3: gzip1 with the kernel's parameters (level 1 is
 * zlib's fastest level that still looks for matches; memory levels 7 to 9
 * cost the same CPU on the Linux source's fs/ folder, 9 is the kernel's). */
#define GZIP1_LEVEL 1
#define GZIP1_WBITS 15
#define GZIP1_MEMLEVEL 9
/* zstd1: the kernel's level 3. It reads any zstd frame, so the level is
 * r4kit's choice; level 2 (or 1) was measured: on the Linux source the
 * build took 7% less CPU (13 to 18% less in the compressor) for a 3%
 * larger image, which does not bring the build near its target, while
 * the image is kept: the kernel's level stays. */
#define ZSTD1_LEVEL 3

struct r4_codec {
	unsigned id;
	void *lzo_wrk;		/* lzo1: LZO1X_1_MEM_COMPRESS bytes */
	z_stream def, inf;	/* gzip1 */
	int def_ready, inf_ready;
	ZSTD_CCtx *zc;		/* zstd1 */
	ZSTD_DCtx *zd;
};

static int lzo_ready;

struct r4_codec *r4_codec_new(unsigned compress_id, int *rc)
{
	struct r4_codec *c;

	if (compress_id > FMT_COMPRESS_ZSTD1) {
		*rc = R4_EUNSUPP;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		*rc = -ENOMEM;
		return NULL;
	}
	c->id = compress_id;
	*rc = 0;
	if (compress_id == FMT_COMPRESS_LZO1 && !__atomic_load_n(&lzo_ready,
							      __ATOMIC_ACQUIRE)) {
		if (lzo_init() != LZO_E_OK) {
			free(c);
			*rc = R4_EUNSUPP;
			return NULL;
		}
		__atomic_store_n(&lzo_ready, 1, __ATOMIC_RELEASE);
	}
	return c;
}

void r4_codec_free(struct r4_codec *c)
{
	if (!c)
		return;
	free(c->lzo_wrk);
	if (c->def_ready)
		deflateEnd(&c->def);
	if (c->inf_ready)
		inflateEnd(&c->inf);
	ZSTD_freeCCtx(c->zc);
	ZSTD_freeDCtx(c->zd);
	free(c);
}

unsigned r4_codec_id(const struct r4_codec *c)
{
	return c->id;
}

size_t r4_codec_bound(unsigned compress_id, size_t slen)
{
	size_t b;

	switch (compress_id) {
	case FMT_COMPRESS_LZO1:
		b = slen + slen / 16 + 64 + 3;
		break;
	case FMT_COMPRESS_GZIP1:
		b = compressBound((uLong)slen) + 16;
		break;
	default:
		b = ZSTD_compressBound(slen);
		break;
	}
	return b + 4;
}

static int lzo_compress(struct r4_codec *c, const uint8_t *src, size_t slen,
			uint8_t *dst, size_t dcap, size_t *dlen)
{
	lzo_uint out = dcap;

	if (dcap < slen + slen / 16 + 64 + 3)
		return R4_ENOSPC;	/* liblzo writes without a bound */
	if (!c->lzo_wrk) {
		c->lzo_wrk = malloc(LZO1X_1_MEM_COMPRESS);
		if (!c->lzo_wrk)
			return -ENOMEM;
	}
	if (lzo1x_1_compress(src, slen, dst, &out, c->lzo_wrk) != LZO_E_OK)
		return R4_ENOSPC;
	*dlen = out;
	return 0;
}

static int gzip_compress(struct r4_codec *c, const uint8_t *src, size_t slen,
			 uint8_t *dst, size_t dcap, size_t *dlen)
{
	int zr;

	if (!c->def_ready) {
		memset(&c->def, 0, sizeof(c->def));
		if (deflateInit2(&c->def, GZIP1_LEVEL, Z_DEFLATED,
				 -GZIP1_WBITS, GZIP1_MEMLEVEL,
				 Z_DEFAULT_STRATEGY) != Z_OK)
			return -ENOMEM;
		c->def_ready = 1;
	} else if (deflateReset(&c->def) != Z_OK) {
		return -ENOMEM;
	}
	c->def.next_in = (Bytef *)(uintptr_t)src;
	c->def.avail_in = (uInt)slen;
	c->def.next_out = dst;
	c->def.avail_out = (uInt)dcap;
	zr = deflate(&c->def, Z_FINISH);
	if (zr != Z_STREAM_END)
		return R4_ENOSPC;
	*dlen = dcap - c->def.avail_out;
	return 0;
}

static int zstd_compress(struct r4_codec *c, const uint8_t *src, size_t slen,
			 uint8_t *dst, size_t dcap, size_t *dlen)
{
	size_t r;

	if (!c->zc) {
		c->zc = ZSTD_createCCtx();
		if (!c->zc)
			return -ENOMEM;
	}
	r = ZSTD_compressCCtx(c->zc, dst, dcap, src, slen, ZSTD1_LEVEL);
	if (ZSTD_isError(r))
		return R4_ENOSPC;
	*dlen = r;
	return 0;
}

int r4_codec_compress(struct r4_codec *c, const uint8_t *src, size_t slen,
		      uint8_t *dst, size_t dcap, size_t *dlen)
{
	switch (c->id) {
	case FMT_COMPRESS_LZO1:
		return lzo_compress(c, src, slen, dst, dcap, dlen);
	case FMT_COMPRESS_GZIP1:
		return gzip_compress(c, src, slen, dst, dcap, dlen);
	default:
		return zstd_compress(c, src, slen, dst, dcap, dlen);
	}
}

static int lzo_decompress(const uint8_t *src, size_t slen, uint8_t *dst,
			  size_t dlen, const char **why)
{
	lzo_uint out = dlen;
	int r = lzo1x_decompress_safe(src, slen, dst, &out, NULL);

	if (r != LZO_E_OK) {
		*why = r == LZO_E_OUTPUT_OVERRUN ? "lzo1 stream longer than "
		       "the cluster" : r == LZO_E_INPUT_NOT_CONSUMED ?
		       "bytes after the end of the lzo1 stream" :
		       "malformed lzo1 stream";
		return R4_ECORRUPT;
	}
	if (out != dlen) {
		*why = "lzo1 stream shorter than the cluster";
		return R4_ECORRUPT;
	}
	return 0;
}

/* One raw-deflate stream from src into dst (the codec's inflater made
 * once, reset for each stream): inflate's result, Z_MEM_ERROR when the
 * inflater cannot be made or reset. */
static int inflate_all(struct r4_codec *c, const uint8_t *src, size_t slen,
		       uint8_t *dst, size_t cap)
{
	if (!c->inf_ready) {
		memset(&c->inf, 0, sizeof(c->inf));
		if (inflateInit2(&c->inf, -GZIP1_WBITS) != Z_OK)
			return Z_MEM_ERROR;
		c->inf_ready = 1;
	} else if (inflateReset(&c->inf) != Z_OK) {
		return Z_MEM_ERROR;
	}
	c->inf.next_in = (Bytef *)(uintptr_t)src;
	c->inf.avail_in = (uInt)slen;
	c->inf.next_out = dst;
	c->inf.avail_out = (uInt)cap;
	return inflate(&c->inf, Z_FINISH);
}

/* The codec's zstd decompression context, made once: NULL when out of
 * memory. */
static ZSTD_DCtx *zstd_dctx(struct r4_codec *c)
{
	if (!c->zd)
		c->zd = ZSTD_createDCtx();
	return c->zd;
}

static int gzip_decompress(struct r4_codec *c, const uint8_t *src,
			   size_t slen, uint8_t *dst, size_t dlen,
			   const char **why)
{
	int zr = inflate_all(c, src, slen, dst, dlen);

	if (zr == Z_MEM_ERROR)
		return -ENOMEM;
	if (zr != Z_STREAM_END) {
		*why = zr == Z_DATA_ERROR ? "malformed gzip1 (deflate) stream" :
		       c->inf.avail_out == 0 ? "gzip1 stream longer than the "
		       "cluster" : "gzip1 stream ends early";
		return R4_ECORRUPT;
	}
	if (c->inf.avail_out != 0) {
		*why = "gzip1 stream shorter than the cluster";
		return R4_ECORRUPT;
	}
	if (c->inf.avail_in != 0) {
		*why = "bytes after the end of the gzip1 stream";
		return R4_ECORRUPT;
	}
	return 0;
}

static int zstd_decompress(struct r4_codec *c, const uint8_t *src,
			   size_t slen, uint8_t *dst, size_t dlen,
			   const char **why)
{
	size_t r;

	if (!zstd_dctx(c))
		return -ENOMEM;
	r = ZSTD_decompressDCtx(c->zd, dst, dlen, src, slen);
	if (ZSTD_isError(r)) {
		*why = ZSTD_getErrorCode(r) == ZSTD_error_dstSize_tooSmall ?
		       "zstd1 frame longer than the cluster" :
		       "malformed zstd1 frame";
		return R4_ECORRUPT;
	}
	if (r != dlen) {
		*why = "zstd1 frame shorter than the cluster";
		return R4_ECORRUPT;
	}
	return 0;
}

int r4_codec_decompress(struct r4_codec *c, const uint8_t *src, size_t slen,
			uint8_t *dst, size_t dlen, const char **why)
{
	const char *dummy;

	if (!why)
		why = &dummy;
	*why = NULL;
	switch (c->id) {
	case FMT_COMPRESS_LZO1:
		return lzo_decompress(src, slen, dst, dlen, why);
	case FMT_COMPRESS_GZIP1:
		return gzip_decompress(c, src, slen, dst, dlen, why);
	default:
		return zstd_decompress(c, src, slen, dst, dlen, why);
	}
}

int r4_codec_decompress_len(struct r4_codec *c, const uint8_t *src,
			    size_t slen, uint8_t *dst, size_t dcap,
			    size_t *dlen)
{
	if (c->id == FMT_COMPRESS_LZO1) {
		lzo_uint out = dcap;

		if (lzo1x_decompress_safe(src, slen, dst, &out, NULL) !=
		    LZO_E_OK)
			return R4_ECORRUPT;
		*dlen = out;
		return 0;
	}
	if (c->id == FMT_COMPRESS_GZIP1) {
		int zr = inflate_all(c, src, slen, dst, dcap);

		if (zr == Z_MEM_ERROR)
			return -ENOMEM;
		if (zr != Z_STREAM_END || c->inf.avail_in != 0)
			return R4_ECORRUPT;
		*dlen = dcap - c->inf.avail_out;
		return 0;
	}
	if (!zstd_dctx(c))
		return -ENOMEM;
	{
		size_t r = ZSTD_decompressDCtx(c->zd, dst, dcap, src, slen);

		if (ZSTD_isError(r))
			return R4_ECORRUPT;
		*dlen = r;
	}
	return 0;
}
