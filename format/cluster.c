/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: compressed-file cluster rules (doc/compress.md §2-§4). */
#include "cluster.h"
#include "checksum.h"
#include "endian.h"
#include "errors.h"
#include "plugin.h"

_Static_assert(FMT_CLUSTER_64K == 0 && FMT_CLUSTER_4K == 4,
	       "cluster plugin ids run 64K..4K");

/* doc/compress.md §2.1: id k is a cluster of 64 KiB >> k. */
unsigned fmt_cluster_shift_of(unsigned cluster_id)
{
	return cluster_id <= FMT_CLUSTER_4K ? 16 - cluster_id : 0;
}

int fmt_cluster_id_of_shift(unsigned shift)
{
	return shift >= 12 && shift <= 16 ? (int)(16 - shift) : -1;
}

/* doc/compress.md §2.2 */
uint32_t fmt_cluster_lsize(uint64_t fsize, uint64_t index, unsigned shift)
{
	uint64_t start, csize = (uint64_t)1 << shift;

	if (shift > 16 || index > (UINT64_MAX >> shift))
		return 0;
	start = index << shift;
	if (start >= fsize)
		return 0;
	return (uint32_t)(fsize - start < csize ? fsize - start : csize);
}

/* doc/compress.md §4.1 */
size_t fmt_compress_min_size(unsigned compress_id)
{
	switch (compress_id) {
	case FMT_COMPRESS_LZO1: return 256;
	case FMT_COMPRESS_GZIP1: return 64;
	case FMT_COMPRESS_ZSTD1: return 256;
	default: return 0;
	}
}

/* doc/compress.md §3.2: the length alone tells the two forms apart. */
int fmt_dc_open(const uint8_t *dc, size_t len, size_t lsize,
		enum fmt_dc_form *form, size_t *stream_len, const char **why)
{
	const char *dummy;

	if (!why)
		why = &dummy;
	*why = NULL;
	if (len == 0 || lsize == 0) {
		*why = "empty disk or logical cluster";
		return R4_ECORRUPT;
	}
	if (len > lsize) {
		*why = "disk cluster longer than its logical cluster";
		return R4_ECORRUPT;
	}
	if (len == lsize) {
		*form = FMT_DC_RAW;
		*stream_len = len;
		return 0;
	}
	if (len <= FMT_DC_SUM_SIZE) {
		*why = "compressed disk cluster too short for its checksum";
		return R4_ECORRUPT;
	}
	if (fmt_adler32(dc, len - FMT_DC_SUM_SIZE) !=
	    get_le32(dc + len - FMT_DC_SUM_SIZE)) {
		*why = "bad Adler-32 checksum";
		return R4_ECSUM;
	}
	*form = FMT_DC_PACKED;
	*stream_len = len - FMT_DC_SUM_SIZE;
	return 0;
}

/* doc/compress.md §4.2 */
int fmt_dc_keep(size_t lsize, size_t stream_len)
{
	return stream_len + FMT_DC_SUM_SIZE < lsize;
}

size_t fmt_dc_seal(uint8_t *buf, size_t stream_len)
{
	put_le32(buf + stream_len, fmt_adler32(buf, stream_len));
	return stream_len + FMT_DC_SUM_SIZE;
}

/* doc/compress.md §4.3 */
#define LATTICE_MIN 1u
#define LATTICE_MAX 32u

void fmt_cmode_init(struct fmt_cmode *m, unsigned mode)
{
	m->mode = mode;
	m->on = 1;
	m->factor = LATTICE_MIN;
}

int fmt_cmode_try(const struct fmt_cmode *m, unsigned compress_id,
		  uint64_t index, size_t lsize)
{
	size_t min = fmt_compress_min_size(compress_id);

	if (lsize == 0 || (min && lsize < min))
		return 0;
	switch (m->mode) {
	case FMT_CMODE_NONE:
		return 0;
	case FMT_CMODE_FORCE:
		return 1;
	case FMT_CMODE_LATTD:
		return m->on || (m->factor ? index % m->factor == 0 :
				 index == 0);
	default:	/* ultim, conv: while compression is on */
		return m->on;
	}
}

void fmt_cmode_after(struct fmt_cmode *m, int kept, int complete)
{
	if (m->mode == FMT_CMODE_LATTD) {
		if (kept) {
			m->on = 1;
			m->factor = LATTICE_MIN;
		} else if (complete) {
			m->on = 0;
			if (m->factor < LATTICE_MAX)
				m->factor <<= 1;
		}
	} else if (m->mode == FMT_CMODE_ULTIM && !kept && complete) {
		m->on = 0;
	}
}

/* doc/compress.md §4.4: compressible when the stream is under half. */
int fmt_conv_keeps(size_t stream_len, size_t cluster_size)
{
	return stream_len < (cluster_size >> 1);
}
