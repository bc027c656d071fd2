/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the clusters of compressed (ccreg40) files, doc/compress.md:
 * logical cluster geometry, the stored form of a disk cluster (a
 * checksummed compressed stream or the raw bytes) and the compression
 * mode rules that decide which clusters are tried. Pure: no I/O, no
 * compression library (the codecs live in libimage/util/compress.c). */
#ifndef R4_FORMAT_CLUSTER_H
#define R4_FORMAT_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

/* Bytes of the Adler-32 that ends a compressed disk cluster (§3.2). */
#define FMT_DC_SUM_SIZE 4
/* Largest cluster (64 KiB, shift 16). */
#define FMT_CLUSTER_MAX (1u << 16)

/* Cluster plugin id (FMT_CLUSTER_64K..4K) to its shift (16..12), 0 for
 * an unknown id (§2.1). */
unsigned fmt_cluster_shift_of(unsigned cluster_id);
/* Shift (12..16) to the cluster plugin id, -1 when out of range. */
int fmt_cluster_id_of_shift(unsigned shift);

/* Bytes of a file of fsize bytes that fall into logical cluster 'index'
 * (0 when the cluster starts at or past the end), §2.2. */
uint32_t fmt_cluster_lsize(uint64_t fsize, uint64_t index, unsigned shift);

/* Smallest logical cluster a compression plugin is tried on (§4.1):
 * 256 for lzo1 and zstd1, 64 for gzip1; 0 for an unknown plugin. */
size_t fmt_compress_min_size(unsigned compress_id);

/* The stored form of a disk cluster (§3.2). */
enum fmt_dc_form { FMT_DC_RAW = 0, FMT_DC_PACKED = 1 };

/* Classify the len-byte disk cluster dc of a logical cluster holding
 * lsize bytes. RAW when len == lsize; PACKED when len < lsize, after
 * checking the trailing Adler-32 (*stream_len = len - 4). R4_ECORRUPT
 * when len is 0, longer than lsize or too short to hold a checksum,
 * R4_ECSUM for a checksum mismatch; *why (may be NULL) says which. */
int fmt_dc_open(const uint8_t *dc, size_t len, size_t lsize,
		enum fmt_dc_form *form, size_t *stream_len, const char **why);

/* True when a stream of stream_len bytes is worth storing for a logical
 * cluster of lsize bytes: stream + checksum shorter than lsize (§4.2). */
int fmt_dc_keep(size_t lsize, size_t stream_len);
/* Append the Adler-32 of buf[0..stream_len) after it (buf must have 4
 * more bytes); returns the disk cluster length. */
size_t fmt_dc_seal(uint8_t *buf, size_t stream_len);

/* Compression mode state of one file being written (§4.3). */
struct fmt_cmode {
	unsigned mode;		/* enum fmt_cmode_id */
	int on;			/* compression currently on */
	unsigned factor;	/* lattice factor (lattd) */
};
void fmt_cmode_init(struct fmt_cmode *m, unsigned mode);
/* Whether cluster 'index' of lsize bytes is given to the compressor. */
int fmt_cmode_try(const struct fmt_cmode *m, unsigned compress_id,
		  uint64_t index, size_t lsize);
/* After a try: kept = the stream was stored, complete = the logical
 * cluster was full. Updates the state as the mode's hooks do. */
void fmt_cmode_after(struct fmt_cmode *m, int kept, int complete);
/* conv mode (§4.4): does a file whose first (full) cluster compressed
 * to stream_len bytes stay a compressed file? */
int fmt_conv_keeps(size_t stream_len, size_t cluster_size);

#endif
