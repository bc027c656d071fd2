/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the three compression plugins of ccreg40 files as codecs
 * (doc/compress.md §3.3): lzo1 = LZO1X-1, gzip1 = raw deflate level 1,
 * zstd1 = one zstd frame at level 3. No I/O. One context per thread. */
#ifndef R4_LIBIMAGE_UTIL_COMPRESS_H
#define R4_LIBIMAGE_UTIL_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

struct r4_codec;

/* A codec for compression plugin 'compress_id' (FMT_COMPRESS_*). NULL
 * with *rc = R4_EUNSUPP for an unknown plugin, -ENOMEM when out of
 * memory. */
struct r4_codec *r4_codec_new(unsigned compress_id, int *rc);
void r4_codec_free(struct r4_codec *c);
unsigned r4_codec_id(const struct r4_codec *c);

/* Room the compressor may need for slen input bytes (worst case, plus
 * the 4-byte checksum the caller appends). */
size_t r4_codec_bound(unsigned compress_id, size_t slen);

/* Compress src into dst (dcap bytes, at least r4_codec_bound less 4).
 * 0 and *dlen on success; R4_ENOSPC when the output did not fit (the
 * caller then stores the cluster raw); -ENOMEM. */
int r4_codec_compress(struct r4_codec *c, const uint8_t *src, size_t slen,
		      uint8_t *dst, size_t dcap, size_t *dlen);

/* Decompress the stream src (slen bytes) into exactly dlen bytes.
 * R4_ECORRUPT (with *why) when the stream is malformed, ends early,
 * has bytes left over, or does not yield exactly dlen bytes. */
int r4_codec_decompress(struct r4_codec *c, const uint8_t *src, size_t slen,
			uint8_t *dst, size_t dlen, const char **why);

/* Decompress the stream src (slen bytes) into at most dcap bytes, the
 * length it yields in *dlen: for a disk cluster whose logical size is not
 * known (the repair, when a file's size is). R4_ECORRUPT when the stream
 * is malformed, has bytes left over or yields more than dcap. */
int r4_codec_decompress_len(struct r4_codec *c, const uint8_t *src,
			    size_t slen, uint8_t *dst, size_t dcap,
			    size_t *dlen);

#endif
