/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the undo device backend (r4fsck -z). Once armed, every device
 * opened read-write in this process is wrapped: before a write reaches
 * the device, the old contents of each UNDO_UNIT-byte unit it touches
 * (the first time only) are appended to the undo file and made durable
 * (fsync), so the file always holds what a write may have destroyed,
 * even after a crash. The undo file:
 *
 *   "R4UNDO01" (8 bytes), device size (8, little-endian), then records:
 *   offset (8), length (4), the old bytes.
 *
 * Putting every record back (in any order: each unit is saved once)
 * restores the device as it was when the undo file was started; an
 * image file grown since (the only resize allowed) is cut back to the
 * size the header gives. */
#ifndef R4_LIBIMAGE_IO_UNDO_H
#define R4_LIBIMAGE_IO_UNDO_H

#include <stdint.h>
#include "libimage/io/dev.h"

#define UNDO_UNIT 4096u

/* Called by io_open for a read-write device: wrap it when armed. */
int io_undo_maybe_attach(struct io_dev *dev, struct r4_error *err);

#endif
