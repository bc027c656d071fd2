/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the undo file as r4_undo_apply (libimage/repair/undo.c) reads
 * and extends it (format in libimage/io/undo.h): load and verify it,
 * append the restore plan, flag that an --undo began writing. */
#ifndef R4_LIBIMAGE_REPAIR_UNDOFILE_H
#define R4_LIBIMAGE_REPAIR_UNDOFILE_H

#include <stdint.h>
#include <stdio.h>
#include "libimage/io/dev.h"
#include "libimage/util/err.h"

/* One record of a file being applied. */
struct urec {
	uint64_t off, at;	/* on the device; of its bytes in the file */
	uint32_t len;
};

/* The restore plan of an earlier --undo (or none). */
struct plan {
	int present;
	uint64_t ns, nx;	/* scratch blocks, extra blocks */
	uint64_t *blk;		/* ns scratch, then nx extra */
	uint64_t data_at;	/* file offset of blk[0]'s bytes */
};

/* A damaged undo file: R4_ECORRUPT, naming what. */
static inline int undo_bad(struct r4_error *err, const char *path,
			   const char *what)
{
	return r4i_fail(err, R4_ECORRUPT, "%s: %s; nothing changed", path,
			what);
}

/* Read len bytes at off of the undo file; 0 or -1. */
static inline int undo_fget(FILE *f, void *buf, size_t len, uint64_t off)
{
	if (fseeko(f, (off_t)off, SEEK_SET) || fread(buf, 1, len, f) != len)
		return -1;
	return 0;
}

/* Parse and verify the whole file: header (hdr, UNDO_HDR bytes),
 * records (*recs, *nrec) and trailer (*trailer), and the plan when the
 * header says one is there. */
int rep_undo_load(FILE *f, const char *path, uint8_t *hdr,
		  struct urec **recs, uint64_t *nrec, uint8_t **trailer,
		  struct plan *plan, struct r4_error *err);

/* Mark the file: an --undo is writing (a rerun after a cut then takes
 * blocks already put back); 0 or -1. */
int rep_undo_set_applying(FILE *f, uint8_t *hdr);

/* Append the plan p (its blocks' bytes read from dev now) at the base
 * length, then flag it. */
int rep_undo_write_plan(FILE *f, const char *path, uint8_t *hdr,
			struct io_dev *dev, struct plan *p,
			struct r4_error *err);

#endif
