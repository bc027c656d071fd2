/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the undo device backend (r4fsck -z). Once armed, every device
 * opened read-write in this process is wrapped: before a write reaches
 * the device, the old contents of each UNDO_UNIT-byte unit it touches
 * (the first time only) are appended to the undo file and made durable
 * (fsync), so the file always holds what a write may have destroyed,
 * even after a crash. The undo file (format 2):
 *
 *   header (32 bytes): "R4UNDO02", the device size when the file was
 *   started (8, little-endian), flags (4: 1 = an --undo began writing),
 *   8 reserved, CRC-32C of the 28 bytes before it (4);
 *   records: offset (8), length (4), CRC-32C of those 12 bytes and the
 *   old bytes (4), the old bytes;
 *   trailer, rewritten each time a wrapped device closes (a later open
 *   in the same run cuts it off and appends): "R4UNDOT2", the number of
 *   records (8), the device size the repair left (8), the master super
 *   block's uuid (16), SHA-256 of the master and format40 super blocks
 *   as the repair left them (32), SHA-256 of each record's unit as the
 *   repair left it (32 each); then the trailer's length (8), its
 *   CRC-32C (4) and "R4UNDOE2".
 *
 * r4_undo_apply checks all of it before it writes anything: a file of
 * format 1, damaged, cut or without a trailer (the repair did not
 * finish) is refused; so is a device whose uuid, super blocks, size or
 * any unit it would restore differ from what the repair left (another
 * volume, or one changed since). Then it sets the header's flag and
 * puts every record back (in any order: each unit is saved once),
 * cutting an image grown since back to the header's size. A cut while
 * it writes leaves a mix of old and repaired units; a rerun accepts
 * each unit as either and finishes. */
#ifndef R4_LIBIMAGE_IO_UNDO_H
#define R4_LIBIMAGE_IO_UNDO_H

#include <stdint.h>
#include "libimage/io/dev.h"

#define UNDO_UNIT 4096u

/* Called by io_open for a read-write device: wrap it when armed. */
int io_undo_maybe_attach(struct io_dev *dev, struct r4_error *err);

#endif
