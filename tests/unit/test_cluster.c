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
#include <zlib.h>
#include <zstd.h>
#include "tap.h"
#include "format/cluster.h"
#include "format/checksum.h"
#include "format/endian.h"
#include "format/errors.h"
#include "format/plugin.h"
#include "libimage/util/compress.h"
#include "libimage/obj/ccreg.h"

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
static int pack_dc(struct r4_codec *c, const uint8_t *plain, size_t lsize,
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
		ok(pack_dc(c, plain, cs, dc, cap, &len) && len < cs / 2,
		   "%s %zuK: text compresses (%zu bytes)", n, cs >> 10, len);
		memset(out, 0, cs);
		is_int(read_dc(c, dc, len, cs, out, &why), 0,
		       "%s %zuK: compressed cluster reads", n, cs >> 10);
		is_mem(out, plain, cs, "%s %zuK: ... exactly", n, cs >> 10);

		fill_noise(plain, cs, 77 + k);
		ok(!pack_dc(c, plain, cs, dc, cap, &len) && len == cs,
		   "%s %zuK: noise is stored raw", n, cs >> 10);
		is_int(read_dc(c, dc, len, cs, out, &why), 0,
		       "%s %zuK: raw cluster reads", n, cs >> 10);
		is_mem(out, plain, cs, "%s %zuK: ... exactly", n, cs >> 10);
	}
	/* last partial cluster: 1000 text bytes of a 64K cluster */
	fill_text(plain, 1000, 9);
	ok(pack_dc(c, plain, 1000, dc, cap, &len), "%s: partial cluster "
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
	pack_dc(c, plain, 1000, dc, cap, &len);
	sl = len - 4;
	memset(dc + sl, 0, 3);
	len = fmt_dc_seal(dc, sl + 3);
	is_int(read_dc(c, dc, len, 1000, out, &why), R4_ECORRUPT,
	       "%s: bytes after the stream: corrupt (%s)", n, why ? why : "-");
	/* a truncated stream */
	pack_dc(c, plain, 1000, dc, cap, &len);
	sl = len - 4;
	len = fmt_dc_seal(dc, sl - 5);
	is_int(read_dc(c, dc, len, 1000, out, &why), R4_ECORRUPT,
	       "%s: truncated stream: corrupt (%s)", n, why ? why : "-");
	/* a bad checksum */
	pack_dc(c, plain, 1000, dc, cap, &len);
	dc[len - 1] ^= 1;
	is_int(read_dc(c, dc, len, 1000, out, &why), R4_ECSUM,
	       "%s: bad checksum", n);
	/* small clusters are never tried */
	fill_text(plain, 63, 3);
	ok(!pack_dc(c, plain, 63, dc, cap, &len) && len == 63,
	   "%s: 63 bytes stored raw", n);
	/* a hole: no disk cluster reads as zeros */
	{
		struct obj_dc hole = { 0, 0, 0 };
		struct r4_objref ref = { 0x29, 0, 0x2a };
		struct r4_error e = { 0, "", 0 };

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

/* Disk clusters the kernel wrote: the one ctail40 item of /dir1/text_256
 * (256 bytes, one cluster of 64K) in the kernel-written test images
 * zstd1 and gzip1 (tests' kernel-images: the edward6/reiser4 module's
 * own output), stream and Adler-32 as they are on disk. */
static const uint8_t kernel_zstd1_dc[187] = {
	0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x48, 0x75, 0x05, 0x00, 0x06, 0x90, 0x2a,
	0x14, 0x90, 0x01, 0x0e, 0xc0, 0x74, 0x8b, 0xa5, 0x25, 0xfb, 0x24, 0xbf,
	0xe9, 0x5d, 0x52, 0x14, 0x35, 0x6a, 0x62, 0x2a, 0x1c, 0x24, 0x00, 0x24,
	0x00, 0x24, 0x00, 0x9b, 0x63, 0x24, 0x9f, 0xf2, 0x0d, 0x00, 0x4b, 0x05,
	0x4e, 0x13, 0x4f, 0x72, 0xb8, 0x73, 0x39, 0xcf, 0xb4, 0x91, 0x1c, 0x4b,
	0x5f, 0xd0, 0xb9, 0x0a, 0xf9, 0x25, 0xde, 0x1c, 0x36, 0xf3, 0x69, 0x61,
	0x1e, 0x82, 0x1d, 0x47, 0xc4, 0x56, 0x1a, 0xa4, 0x9b, 0xef, 0xf6, 0x3c,
	0x02, 0xa0, 0xce, 0x61, 0x41, 0x67, 0x01, 0xf1, 0xe1, 0xed, 0xfe, 0x19,
	0x18, 0xda, 0x22, 0xe2, 0xe8, 0x13, 0x9d, 0x1c, 0xcb, 0x8d, 0x4f, 0x14,
	0x6d, 0x19, 0x0f, 0x79, 0x3a, 0xce, 0x7d, 0xeb, 0xac, 0xa9, 0x32, 0x89,
	0xf7, 0x2d, 0x88, 0x57, 0xc5, 0x74, 0x44, 0x56, 0x6a, 0xc3, 0xf4, 0x81,
	0xd5, 0x02, 0x2b, 0x81, 0x35, 0x17, 0x0a, 0xb9, 0xef, 0x0c, 0xb7, 0x31,
	0xd5, 0x22, 0x03, 0xf9, 0x4c, 0x6c, 0x53, 0x68, 0xdc, 0x3e, 0xc6, 0xa2,
	0xa2, 0xac, 0xdf, 0xaa, 0x16, 0xaf, 0xa8, 0x77, 0x80, 0x98, 0x49, 0xfc,
	0x5c, 0x5c, 0x41, 0x90, 0x66, 0x7f, 0xc3, 0xb4, 0xab, 0xbb, 0xb5, 0xa7,
	0x7e, 0xfd, 0x00, 0xfd, 0x50, 0x45, 0x63,
};
static const uint8_t kernel_gzip1_dc[172] = {
	0x0d, 0xca, 0x49, 0x92, 0x05, 0x21, 0x08, 0x05, 0xc0, 0xfd, 0x3f, 0xc5,
	0xbb, 0x9a, 0x56, 0x69, 0x61, 0x08, 0x48, 0x38, 0x60, 0x70, 0xfb, 0xee,
	0x5c, 0xa7, 0x53, 0x65, 0xa1, 0xb3, 0x20, 0x62, 0x79, 0x3a, 0x9e, 0x03,
	0xc9, 0x1b, 0x3c, 0x1a, 0xf4, 0x14, 0xa9, 0xa1, 0x17, 0x32, 0x4d, 0x7c,
	0x72, 0x15, 0x3c, 0xc1, 0xdf, 0x3e, 0xbf, 0xd7, 0xd0, 0x78, 0x4a, 0x29,
	0x62, 0x28, 0xcd, 0x86, 0x56, 0xcc, 0x98, 0x56, 0x84, 0x87, 0x40, 0xf9,
	0xa9, 0x27, 0x32, 0x15, 0x86, 0xbb, 0x4d, 0x9e, 0x23, 0x5f, 0x8c, 0x46,
	0x89, 0xf7, 0xef, 0x61, 0x41, 0x38, 0xc4, 0x74, 0x74, 0x39, 0x77, 0x10,
	0xe4, 0xf1, 0x7d, 0xc3, 0xe8, 0x22, 0xf9, 0xa4, 0xfd, 0xa0, 0xdb, 0xd7,
	0x6e, 0x8e, 0xf3, 0x41, 0x6f, 0xf7, 0x75, 0xea, 0xc0, 0x22, 0x55, 0x10,
	0x35, 0x43, 0x22, 0xe9, 0x5b, 0xe3, 0xe2, 0xfc, 0x6f, 0x14, 0x4d, 0x02,
	0x4f, 0xd8, 0xc9, 0x4e, 0x4a, 0x1b, 0xd1, 0x4b, 0x82, 0x75, 0x79, 0xdf,
	0x43, 0x26, 0x98, 0xab, 0xdf, 0xf1, 0x3a, 0x76, 0x4b, 0x64, 0x5b, 0x1d,
	0x7e, 0xb5, 0x0d, 0x2b, 0x05, 0x31, 0x23, 0x2f, 0xbb, 0x4b, 0x20, 0x7f,
	0x00, 0x4e, 0x0c, 0x8f,
};
static const char kernel_text_256[] =
	"vhflmhus mmpbrv cu mbt loi nuemfynw mrpmvrlfm cylgtu\n"
	"dp ilrmeemp eiponf ryrpemlom nlcfuybhel vvprlrobw oihalt\n"
	"clm yv mpnokmuwoh mcvtwyphw avrhtc kpgiwbyug nwkvsufo shnn "
	"hhip ahmktnyw uavr enam va tapuaat ykea pkmdduhpm rskwodv "
	"tiahptnv vwniopee yrybspwsm m";

/* The kernel's bytes read exactly; and a stream from the compressor at
 * the kernel's own parameters (doc/compress.md §3.3: zstd level 3, deflate
 * level 1 with 15 window bits and memory level 9) reads too, whatever
 * parameters r4kit itself compresses with. And the other way: what r4kit
 * compresses inflates with the kernel's raw-deflate window bits and
 * decompresses as one zstd frame, outside the codec. */
static void test_kernel_streams(void)
{
	static const struct {
		unsigned alg;
		const uint8_t *dc;
		size_t len;
	} k[] = {
		{ FMT_COMPRESS_ZSTD1, kernel_zstd1_dc, sizeof(kernel_zstd1_dc) },
		{ FMT_COMPRESS_GZIP1, kernel_gzip1_dc, sizeof(kernel_gzip1_dc) },
	};
	size_t cap = r4_codec_bound(FMT_COMPRESS_ZSTD1, 65536) +
		     r4_codec_bound(FMT_COMPRESS_GZIP1, 65536);
	uint8_t *plain = malloc(65536), *dc = malloc(cap), *out = malloc(65536);
	const char *why;
	size_t len;

	if (!plain || !dc || !out) {
		ok(0, "kernel streams: memory");
		goto out;
	}
	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		const char *n = alg_name[k[i].alg];
		struct r4_codec *c;
		int rc;

		c = r4_codec_new(k[i].alg, &rc);
		ok(c != NULL, "%s: codec", n);
		if (!c)
			continue;
		memset(out, 0xee, 256);
		why = NULL;
		is_int(read_dc(c, k[i].dc, k[i].len, 256, out, &why), 0,
		       "%s: the kernel's disk cluster reads (%s)", n,
		       why ? why : "-");
		is_mem(out, kernel_text_256, 256, "%s: ... exactly", n);
		/* one byte short of the stream the kernel wrote: corrupt */
		memcpy(dc, k[i].dc, k[i].len - 4);
		len = fmt_dc_seal(dc, k[i].len - 5);
		is_int(read_dc(c, dc, len, 256, out, &why), R4_ECORRUPT,
		       "%s: the kernel's stream cut short: corrupt", n);

		/* a 64K text cluster at the kernel's parameters */
		fill_text(plain, 65536, 21);
		if (k[i].alg == FMT_COMPRESS_ZSTD1) {
			size_t r = ZSTD_compress(dc, cap - 4, plain, 65536, 3);

			len = ZSTD_isError(r) ? 0 : r;
		} else {
			z_stream z;

			memset(&z, 0, sizeof(z));
			len = 0;
			if (deflateInit2(&z, 1, Z_DEFLATED, -15, 9,
					 Z_DEFAULT_STRATEGY) == Z_OK) {
				z.next_in = plain;
				z.avail_in = 65536;
				z.next_out = dc;
				z.avail_out = (uInt)(cap - 4);
				if (deflate(&z, Z_FINISH) == Z_STREAM_END)
					len = z.total_out;
				deflateEnd(&z);
			}
		}
		ok(len > 0 && len < 32768, "%s: kernel-parameter stream made "
		   "(%zu bytes)", n, len);
		len = fmt_dc_seal(dc, len);
		memset(out, 0, 65536);
		is_int(read_dc(c, dc, len, 65536, out, &why), 0,
		       "%s: a kernel-parameter stream reads", n);
		is_mem(out, plain, 65536, "%s: ... exactly", n);

		/* r4kit's stream, read without the codec */
		fill_text(plain, 65536, 22);
		ok(pack_dc(c, plain, 65536, dc, cap, &len), "%s: r4kit "
		   "compresses 64K of text", n);
		memset(out, 0, 65536);
		if (k[i].alg == FMT_COMPRESS_ZSTD1) {
			size_t r = ZSTD_decompress(out, 65536, dc, len - 4);

			ok(!ZSTD_isError(r) && r == 65536 &&
			   ZSTD_findFrameCompressedSize(dc, len - 4) == len - 4,
			   "zstd1: r4kit's stream is one zstd frame of the "
			   "cluster, nothing after it");
		} else {
			z_stream z;
			int zr = Z_DATA_ERROR;

			memset(&z, 0, sizeof(z));
			if (inflateInit2(&z, -15) == Z_OK) {
				z.next_in = dc;
				z.avail_in = (uInt)(len - 4);
				z.next_out = out;
				z.avail_out = 65536;
				zr = inflate(&z, Z_FINISH);
				ok(zr == Z_STREAM_END && z.avail_in == 0 &&
				   z.total_out == 65536, "gzip1: r4kit's stream "
				   "inflates as raw deflate with the kernel's "
				   "15 window bits");
				inflateEnd(&z);
			} else {
				ok(0, "gzip1: inflateInit2");
			}
		}
		is_mem(out, plain, 65536, "%s: ... exactly", n);
		r4_codec_free(c);
	}
out:
	free(plain);
	free(dc);
	free(out);
}

int main(void)
{
	test_geometry();
	test_form();
	test_modes();
	for (unsigned a = 0; a < 3; a++)
		test_alg(a);
	test_stream_formats();
	test_kernel_streams();
	return tap_done();
}
