/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the cluster encoder of compressed (ccreg40) files, shared by
 * the one-pass builder (libimage/pack/ccreg.c) and the editor
 * (libimage/obj/ccreg_write.c): a file's data read cluster by cluster,
 * every cluster compressed on a small thread pool (clusters are
 * independent), the compression mode's rules applied in order
 * (doc/compress.md §4), each disk cluster handed to a sink. */
#ifndef R4_LIBIMAGE_OBJ_CCREG_ENCODE_H
#define R4_LIBIMAGE_OBJ_CCREG_ENCODE_H

#include <stddef.h>
#include <stdint.h>
#include "r4/r4.h"
#include "r4/pack.h"

struct obj_ccreg_enc;

/* shift 12..16, alg FMT_COMPRESS_*, mode FMT_CMODE_*. */
int obj_ccreg_enc_new(unsigned shift, unsigned alg, unsigned mode,
		  struct obj_ccreg_enc **out, struct r4_error *err);
/* The same with at most 'threads' threads compressing a file's clusters
 * (the caller's included: 1 = none started; 0 = one per online CPU, up
 * to 8). The bytes made never depend on it. */
int obj_ccreg_enc_new_threads(unsigned shift, unsigned alg, unsigned mode,
			  unsigned threads, struct obj_ccreg_enc **out,
			  struct r4_error *err);
/* The online CPUs, 1 to 8. */
unsigned obj_ccreg_enc_cpus(void);
void obj_ccreg_enc_free(struct obj_ccreg_enc *e);
/* 1 when e was made with these parameters. */
int obj_ccreg_enc_is(const struct obj_ccreg_enc *e, unsigned shift,
		     unsigned alg, unsigned mode);
size_t obj_ccreg_enc_csize(const struct obj_ccreg_enc *e);
/* The room one cluster's compression may take (more than the cluster:
 * a codec's worst case, and the checksum). */
size_t obj_ccreg_enc_cap(const struct obj_ccreg_enc *e);
unsigned obj_ccreg_enc_shift(const struct obj_ccreg_enc *e);
unsigned obj_ccreg_enc_mode(const struct obj_ccreg_enc *e);

/* A file's data, read in order (fn may be NULL: no data). */
struct obj_ccreg_rd {
	r4_data_fn fn;
	void *ctx;
	const char *path;
	uint64_t size;
	uint64_t end;		/* end of the last chunk taken */
	uint64_t dense;		/* the data runs without a gap from 0 to
				 * here (the chunks taken so far) */
	const uint8_t *cbuf;	/* current chunk, kept while it lasts */
	uint64_t coff;
	size_t clen;
	int eof;
};
void obj_ccreg_rd_init(struct obj_ccreg_rd *r, r4_data_fn fn, void *ctx,
		   const char *path, uint64_t size);
/* After the last cluster: the reader must have nothing more. */
int obj_ccreg_rd_finish(struct obj_ccreg_rd *r, struct r4_error *err);

/* doc/compress.md §4.4: under conv, a file longer than one cluster whose
 * data runs without a gap from 0 past the first cluster stays compressed
 * only if its first cluster compresses to under half. Reads cluster 0
 * (kept for obj_ccreg_enc_file's c0_done and for the refeed) and sets *keep;
 * other modes, short files and files with a gap there keep. */
int obj_ccreg_enc_conv_first(struct obj_ccreg_enc *e, struct obj_ccreg_rd *r,
			 int *keep, struct r4_error *err);
/* 1 when obj_ccreg_enc_file should reuse the cluster 0 just compressed
 * (zeros, doc/compress.md §3.4.1, when no input data fell in it). */
int obj_ccreg_enc_c0_done(const struct obj_ccreg_enc *e, uint64_t size);

/* A disk cluster: len bytes at dc (len 0, dc NULL: a hole, no items).
 * Cluster 0 is never a hole when a later cluster has data: its zeros
 * come first (doc/compress.md §3.4.1). */
typedef int (*obj_ccreg_sink)(void *sctx, uint64_t idx, const uint8_t *dc,
			   size_t len, struct r4_error *err);
/* Encode every cluster of the file behind r, in order, into sink, from
 * cluster 'first' on (the data before it is not read). */
int obj_ccreg_enc_file(struct obj_ccreg_enc *e, struct obj_ccreg_rd *r,
		       uint64_t first, int c0_done, obj_ccreg_sink sink,
		       void *sctx, struct r4_error *err);
/* Where the next disk cluster may be made: at least need bytes, for a
 * compression to go straight where the sink keeps it (the sink is then
 * handed that address when the cluster stays compressed; otherwise the
 * cluster's bytes from elsewhere, to be put at the same place). NULL:
 * no room there, the encoder's own buffer is used. */
typedef uint8_t *(*obj_ccreg_room)(void *sctx, size_t need);
/* obj_ccreg_enc_file with room (NULL: none). Used only by an encoder
 * made with one thread: one with workers compresses a batch at once,
 * into its own buffers. The bytes handed over are the same. */
int obj_ccreg_enc_file_to(struct obj_ccreg_enc *e, struct obj_ccreg_rd *r,
			  uint64_t first, int c0_done, obj_ccreg_sink sink,
			  obj_ccreg_room room, void *sctx,
			  struct r4_error *err);

/* conv fallback: the data again from the start (cluster 0 from the
 * encoder, then the rest of r) as an r4_data_fn. */
struct obj_ccreg_refeed {
	struct obj_ccreg_rd *rd;
	const uint8_t *c0;
	size_t c0len;
	int stage;
};
void obj_ccreg_refeed_init(struct obj_ccreg_refeed *f, struct obj_ccreg_enc *e,
		       struct obj_ccreg_rd *r);
int obj_ccreg_refeed_fn(void *ctx, uint64_t *off, const void **buf,
		    size_t *len, struct r4_error *err);

#endif
