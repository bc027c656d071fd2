/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Compressed-file clusters (doc/compress.md): geometry, the stored form
 * of a disk cluster, the compression modes, and hand-built clusters for
 * each compression plugin: compressed, raw, last partial cluster, hole,
 * and corrupt ones (bad checksum, damaged stream, wrong length, bytes
 * after the stream). */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "format/cluster.h"
#include "format/checksum.h"
#include "format/endian.h"
#include "format/errors.h"
#include "format/plugin.h"
#include "libimage/util/compress.h"
#include "libimage/obj/cluster.h"

static const char *const alg_name[3] = { "lzo1", "gzip1", "zstd1" };

/* Text-like bytes that compress well, and noise that does not. */
static void fill_text(uint8_t *p, size_t n, unsigned seed)
{
	static const char *const w[] = { "reiser4 ", "cluster ", "ctail ",
		"compress ", "the ", "of ", "file\n", "kernel ", "disk " };
	size_t i = 0;

	while (i < n) {
		const char *s = w[(seed = seed * 1103515245u + 12345u) >> 16 & 7];

		for (; *s && i < n; s++)
			p[i++] = (uint8_t)*s;
	}
}

static void fill_noise(uint8_t *p, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		p[i] = (uint8_t)seed;
	}
}

static void test_geometry(void)
{
	is_int(fmt_cluster_shift_of(FMT_CLUSTER_64K), 16, "64K: shift 16");
	is_int(fmt_cluster_shift_of(FMT_CLUSTER_4K), 12, "4K: shift 12");
	is_int(fmt_cluster_shift_of(5), 0, "cluster id 5 is unknown");
	is_int(fmt_cluster_id_of_shift(14), FMT_CLUSTER_16K, "shift 14: 16K");
	is_int(fmt_cluster_id_of_shift(17), -1, "shift 17: none");
	is_int(fmt_cluster_lsize(200001, 0, 16), 65536, "full cluster");
	is_int(fmt_cluster_lsize(200001, 3, 16), 200001 - 3 * 65536,
	       "last partial cluster");
	is_int(fmt_cluster_lsize(200001, 4, 16), 0, "past the end");
	is_int(fmt_cluster_lsize(65536, 1, 16), 0, "exactly one cluster");
	is_int(fmt_cluster_lsize(UINT64_MAX, UINT64_MAX, 12), 0,
	       "index overflow");
	is_int(fmt_compress_min_size(FMT_COMPRESS_LZO1), 256, "lzo1 min");
	is_int(fmt_compress_min_size(FMT_COMPRESS_GZIP1), 64, "gzip1 min");
	is_int(fmt_compress_min_size(FMT_COMPRESS_ZSTD1), 256, "zstd1 min");
}

static void test_form(void)
{
	uint8_t dc[64];
	enum fmt_dc_form f;
	size_t sl;
	const char *why;

	memset(dc, 7, sizeof(dc));
	is_int(fmt_dc_open(dc, 40, 40, &f, &sl, &why), 0, "len == lsize");
	ok(f == FMT_DC_RAW && sl == 40, "... is raw");
	is_int(fmt_dc_open(dc, 41, 40, &f, &sl, &why), R4_ECORRUPT,
	       "len > lsize is corrupt");
	is_int(fmt_dc_open(dc, 4, 40, &f, &sl, &why), R4_ECORRUPT,
	       "4 bytes cannot hold a stream and its checksum");
	is_int(fmt_dc_open(dc, 0, 40, &f, &sl, &why), R4_ECORRUPT,
	       "empty disk cluster");
	fmt_dc_seal(dc, 20);
	is_int(get_le32(dc + 20), fmt_adler32(dc, 20),
	       "seal appends the Adler-32 of the stream, little-endian");
	is_int(fmt_dc_open(dc, 24, 40, &f, &sl, &why), 0, "len < lsize");
	ok(f == FMT_DC_PACKED && sl == 20, "... is a 20-byte stream");
	dc[3] ^= 1;
	is_int(fmt_dc_open(dc, 24, 40, &f, &sl, &why), R4_ECSUM,
	       "a flipped stream bit fails the checksum");
	ok(why && strstr(why, "Adler"), "... and says so");
	ok(fmt_dc_keep(100, 95), "95 + 4 < 100: kept");
	ok(!fmt_dc_keep(100, 96), "96 + 4 == 100: stored raw");
}

static void test_modes(void)
{
	struct fmt_cmode m;

	fmt_cmode_init(&m, FMT_CMODE_NONE);
	ok(!fmt_cmode_try(&m, FMT_COMPRESS_LZO1, 0, 65536), "none: never");
	fmt_cmode_init(&m, FMT_CMODE_FORCE);
	ok(fmt_cmode_try(&m, FMT_COMPRESS_LZO1, 9, 65536), "force: always");
	ok(!fmt_cmode_try(&m, FMT_COMPRESS_LZO1, 9, 255),
	   "force: not under lzo1's 256 bytes");
	ok(fmt_cmode_try(&m, FMT_COMPRESS_GZIP1, 9, 64), "gzip1: from 64");
	fmt_cmode_init(&m, FMT_CMODE_ULTIM);
	fmt_cmode_after(&m, 0, 0);
	ok(fmt_cmode_try(&m, FMT_COMPRESS_ZSTD1, 1, 65536),
	   "ultim: a partial cluster does not turn it off");
	fmt_cmode_after(&m, 0, 1);
	ok(!fmt_cmode_try(&m, FMT_COMPRESS_ZSTD1, 2, 65536),
	   "ultim: off for good after an incompressible full cluster");
	fmt_cmode_after(&m, 1, 1);
	ok(!fmt_cmode_try(&m, FMT_COMPRESS_ZSTD1, 3, 65536), "... even later");
	fmt_cmode_init(&m, FMT_CMODE_LATTD);
	fmt_cmode_after(&m, 0, 1);
	is_int(m.factor, 2, "lattd: factor doubles on a discard");
	ok(!fmt_cmode_try(&m, FMT_COMPRESS_LZO1, 3, 65536) &&
	   fmt_cmode_try(&m, FMT_COMPRESS_LZO1, 4, 65536),
	   "lattd off: only lattice points are tried");
	for (int i = 0; i < 10; i++)
		fmt_cmode_after(&m, 0, 1);
	is_int(m.factor, 32, "lattd: factor stops at 32");
	fmt_cmode_after(&m, 1, 1);
	ok(m.on && m.factor == 1, "lattd: a kept cluster turns it back on");
	fmt_cmode_init(&m, FMT_CMODE_CONV);
	fmt_cmode_after(&m, 0, 1);
	ok(fmt_cmode_try(&m, FMT_COMPRESS_LZO1, 5, 65536),
	   "conv: every cluster stays tried");
	ok(fmt_conv_keeps(32767, 65536) && !fmt_conv_keeps(32768, 65536),
	   "conv: compressible = stream under half the cluster");
}

/* Build the disk cluster of plain[0..lsize) as the writer would; *len
 * its length. Returns 1 when compressed. */
static int build_dc(struct r4_codec *c, const uint8_t *plain, size_t lsize,
		    uint8_t *dc, size_t cap, size_t *len)
{
	size_t sl;

	if (lsize >= fmt_compress_min_size(r4_codec_id(c)) &&
	    !r4_codec_compress(c, plain, lsize, dc, cap - 4, &sl) &&
	    fmt_dc_keep(lsize, sl)) {
		*len = fmt_dc_seal(dc, sl);
		return 1;
	}
	memcpy(dc, plain, lsize);
	*len = lsize;
	return 0;
}

/* Read a disk cluster back the way the read path does. */
static int read_dc(struct r4_codec *c, const uint8_t *dc, size_t len,
		   size_t lsize, uint8_t *out, const char **why)
{
	enum fmt_dc_form f;
	size_t sl;
	int rc = fmt_dc_open(dc, len, lsize, &f, &sl, why);

	if (rc)
		return rc;
	if (f == FMT_DC_RAW) {
		memcpy(out, dc, lsize);
		return 0;
	}
	return r4_codec_decompress(c, dc, sl, out, lsize, why);
}

static void test_alg(unsigned alg)
{
	static const unsigned shifts[] = { 12, 14, 16 };
	const char *n = alg_name[alg];
	size_t cap = r4_codec_bound(alg, 65536);
	uint8_t *plain = malloc(65536), *dc = malloc(cap), *out = malloc(65536);
	struct r4_codec *c;
	const char *why;
	size_t len, sl;
	int rc;

	c = r4_codec_new(alg, &rc);
	ok(c && rc == 0, "%s: codec", n);
	if (!c || !plain || !dc || !out)
		goto out;
	for (unsigned k = 0; k < 3; k++) {
		size_t cs = (size_t)1 << shifts[k];

		fill_text(plain, cs, 1 + k);
		ok(build_dc(c, plain, cs, dc, cap, &len) && len < cs / 2,
		   "%s %zuK: text compresses (%zu bytes)", n, cs >> 10, len);
		memset(out, 0, cs);
		is_int(read_dc(c, dc, len, cs, out, &why), 0,
		       "%s %zuK: compressed cluster reads", n, cs >> 10);
		is_mem(out, plain, cs, "%s %zuK: ... exactly", n, cs >> 10);

		fill_noise(plain, cs, 77 + k);
		ok(!build_dc(c, plain, cs, dc, cap, &len) && len == cs,
		   "%s %zuK: noise is stored raw", n, cs >> 10);
		is_int(read_dc(c, dc, len, cs, out, &why), 0,
		       "%s %zuK: raw cluster reads", n, cs >> 10);
		is_mem(out, plain, cs, "%s %zuK: ... exactly", n, cs >> 10);
	}
	/* last partial cluster: 1000 text bytes of a 64K cluster */
	fill_text(plain, 1000, 9);
	ok(build_dc(c, plain, 1000, dc, cap, &len), "%s: partial cluster "
	   "compressed (%zu bytes)", n, len);
	is_int(read_dc(c, dc, len, 1000, out, &why), 0,
	       "%s: partial cluster reads", n);
	is_mem(out, plain, 1000, "%s: ... exactly", n);
	/* the same stream against a wrong logical size */
	is_int(read_dc(c, dc, len, 1001, out, &why), R4_ECORRUPT,
	       "%s: stream shorter than the logical cluster: corrupt (%s)", n,
	       why ? why : "-");
	is_int(read_dc(c, dc, len, 999, out, &why), R4_ECORRUPT,
	       "%s: stream longer than the logical cluster: corrupt (%s)", n,
	       why ? why : "-");
	/* a damaged stream with a good checksum */
	sl = len - 4;
	dc[sl / 2] ^= 0xff;
	dc[sl / 3] ^= 0x5a;
	fmt_dc_seal(dc, sl);
	rc = read_dc(c, dc, len, 1000, out, &why);
	ok(rc == R4_ECORRUPT || (rc == 0 && memcmp(out, plain, 1000)),
	   "%s: damaged stream: an error (%s) or other bytes, never a crash",
	   n, why ? why : "-");
	/* bytes after the end of the stream */
	build_dc(c, plain, 1000, dc, cap, &len);
	sl = len - 4;
	memset(dc + sl, 0, 3);
	len = fmt_dc_seal(dc, sl + 3);
	is_int(read_dc(c, dc, len, 1000, out, &why), R4_ECORRUPT,
	       "%s: bytes after the stream: corrupt (%s)", n, why ? why : "-");
	/* a truncated stream */
	build_dc(c, plain, 1000, dc, cap, &len);
	sl = len - 4;
	len = fmt_dc_seal(dc, sl - 5);
	is_int(read_dc(c, dc, len, 1000, out, &why), R4_ECORRUPT,
	       "%s: truncated stream: corrupt (%s)", n, why ? why : "-");
	/* a bad checksum */
	build_dc(c, plain, 1000, dc, cap, &len);
	dc[len - 1] ^= 1;
	is_int(read_dc(c, dc, len, 1000, out, &why), R4_ECSUM,
	       "%s: bad checksum", n);
	/* small clusters are never tried */
	fill_text(plain, 63, 3);
	ok(!build_dc(c, plain, 63, dc, cap, &len) && len == 63,
	   "%s: 63 bytes stored raw", n);
	/* a hole: no disk cluster reads as zeros */
	{
		struct obj_dc hole = { 0, 0, 0 };
		struct r4_objref ref = { 0x29, 0, 0x2a };
		struct r4_error e = { 0, "" };

		memset(out, 0xee, 4096);
		is_int(obj_dc_decode(NULL, &ref, c, 0, dc, &hole, 4096, out,
				     &e), 0, "%s: hole decodes", n);
		ok(out[0] == 0 && out[4095] == 0 &&
		   !memcmp(out, out + 1, 4095), "%s: ... as zeros", n);
	}
out:
	r4_codec_free(c);
	free(plain);
	free(dc);
	free(out);
}

/* The stream formats themselves: gzip1 is raw deflate (no zlib header),
 * zstd1 a zstd frame (magic 28 b5 2f fd). */
static void test_stream_formats(void)
{
	uint8_t plain[4096], dc[8192];
	struct r4_codec *g, *z;
	size_t sl = 0;
	int rc;

	fill_text(plain, sizeof(plain), 5);
	g = r4_codec_new(FMT_COMPRESS_GZIP1, &rc);
	z = r4_codec_new(FMT_COMPRESS_ZSTD1, &rc);
	ok(g && !r4_codec_compress(g, plain, sizeof(plain), dc, sizeof(dc),
				   &sl) && !(dc[0] == 0x78 && (dc[0] << 8 |
					     dc[1]) % 31 == 0),
	   "gzip1 stream has no zlib header");
	ok(z && !r4_codec_compress(z, plain, sizeof(plain), dc, sizeof(dc),
				   &sl) && dc[0] == 0x28 && dc[1] == 0xb5 &&
	   dc[2] == 0x2f && dc[3] == 0xfd, "zstd1 stream is a zstd frame");
	ok(!r4_codec_new(7, &rc) && rc == R4_EUNSUPP,
	   "compression plugin 7 is unknown");
	r4_codec_free(g);
	r4_codec_free(z);
}

int main(void)
{
	test_geometry();
	test_form();
	test_modes();
	for (unsigned a = 0; a < 3; a++)
		test_alg(a);
	test_stream_formats();
	return tap_done();
}
