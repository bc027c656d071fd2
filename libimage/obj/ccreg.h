/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: reading the clusters of compressed (ccreg40) files
 * (doc/compress.md): the plugins that govern a file, one disk cluster
 * gathered from its ctail40 items, one logical cluster decoded. */
#ifndef R4_LIBIMAGE_OBJ_CCREG_H
#define R4_LIBIMAGE_OBJ_CCREG_H

#include <stddef.h>
#include <stdint.h>
#include "r4/r4.h"
#include "libimage/obj/obj.h"

struct r4_codec;

/* What decides a ccreg40 file's clusters (doc/compress.md §5): each
 * member from the file's own plugin set, else the root's, else the
 * kernel default (lzo1, conv, 64K). */
struct obj_ccreg {
	unsigned shift;		/* 12..16 */
	unsigned compress;	/* FMT_COMPRESS_* */
	unsigned cmode;		/* FMT_CMODE_* */
};
int obj_ccreg_params(struct r4_vol *vol, const struct r4_objref *obj,
		  const struct obj_sd *sd, struct obj_ccreg *out,
		  struct r4_error *err);

/* One disk cluster as found in the tree. */
struct obj_dc {
	size_t len;		/* 0: no item (a hole) */
	uint64_t blk;		/* leaf of the first item */
	unsigned items;
};
/* Gather disk cluster 'index' of obj into buf (1 << shift bytes) by the
 * rules of doc/compress.md §3.1. Errors name the object, the cluster
 * and the leaf. */
int obj_dc_load(struct r4_vol *vol, const struct r4_objref *obj,
		unsigned shift, uint64_t index, uint8_t *buf,
		struct obj_dc *dc, struct r4_error *err);

/* Decode a loaded disk cluster into out (lsize bytes): raw copy or
 * checksum + decompression (doc/compress.md §3.2). A hole (len 0)
 * gives zeros. */
int obj_dc_decode(struct r4_vol *vol, const struct r4_objref *obj,
		  struct r4_codec *codec, uint64_t index, const uint8_t *buf,
		  const struct obj_dc *dc, size_t lsize, uint8_t *out,
		  struct r4_error *err);

/* Read [off, off + len) of a ccreg40 file of fsize bytes into buf
 * (len already clipped to the file). */
int obj_ccreg_read(struct r4_vol *vol, const struct r4_objref *obj,
		const struct obj_sd *sd, uint64_t off, uint8_t *buf,
		size_t len, struct r4_error *err);

/* Check every cluster of a ccreg40 file: layout, checksum and a test
 * decompression; clusters past the end are an error too. *clusters
 * (may be NULL) counts the disk clusters seen. */
int obj_ccreg_verify(struct r4_vol *vol, const struct r4_objref *obj,
		  const struct obj_sd *sd, uint64_t *clusters,
		  struct r4_error *err);

#endif
