/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the undo device backend (r4fsck -z). A device opened
 * read-write with an undo file (r4_open_opts.undo) is wrapped; an open
 * without one is not, whatever other opens of the process do. Before a
 * write reaches the device, the old contents of each UNDO_UNIT-byte unit
 * it touches (the first time only) are appended to the undo file and
 * made durable (fsync; the new file's directory entry too, before the
 * first write), so the file always holds what a write may have
 * destroyed, even after a crash. The undo file (format 2):
 *
 *   header (32 bytes): "R4UNDO02", the device size when the file was
 *   started (8, little-endian), flags (4: 1 = an --undo began writing,
 *   2 = its plan is there), the base length (8, below), CRC-32C of the
 *   28 bytes before it (4);
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
 * The base length is the length of the file without the restore plan
 * below (0: none written yet). r4_undo_apply (libimage/repair/undo.c) checks all of
 * it before it writes anything: a file of format 1, damaged, cut or
 * without a trailer (the repair did not finish) is refused; so is a
 * device whose uuid, super blocks, size or any unit it would restore
 * differ from what the repair left (another volume, or one changed
 * since). Then it puts every unit back as one step through the journal
 * (libimage/txn, txn_restore_run): first it appends the plan, "R4UNDOP2",
 * the number of scratch blocks (8), of extra blocks (8: the journal
 * header and footer when no record holds them), their block numbers (8
 * each), their bytes as they are now (a unit each), CRC-32C of it all
 * (4); then it sets the flags (1 | 2) and writes. A rerun after a cut
 * takes the same plan: each unit may then hold what the repair left or
 * its old bytes, and the journal blocks anything (the journal, replayed
 * first, decides). A restore the journal cannot carry is written unit
 * by unit (and says so): a cut then leaves a mix that a rerun finishes.
 */
#ifndef R4_LIBIMAGE_IO_UNDO_H
#define R4_LIBIMAGE_IO_UNDO_H

#include <stddef.h>
#include <stdint.h>
#include "libimage/io/dev.h"
#include "format/super.h"

#define UNDO_UNIT 4096u

#define UNDO_MAGIC_V1 "R4UNDO01"
#define UNDO_MAGIC "R4UNDO02"
#define UNDO_TRAILER "R4UNDOT2"
#define UNDO_END "R4UNDOE2"
#define UNDO_PLAN "R4UNDOP2"
#define UNDO_HDR 32		/* magic, size, flags, base length, crc */
#define UNDO_REC 16		/* offset, length, crc */
#define UNDO_END_LEN 20		/* trailer length, crc, end magic */
#define UNDO_TRAILER_FIXED (8 + 8 + 8 + FMT_UUID_SIZE + 32)
#define UNDO_APPLYING 1u	/* header flag: --undo began writing */
#define UNDO_HAS_PLAN 2u	/* header flag: a plan follows the base */

/* Create the undo file path (it must not exist): the handle, one
 * reference held by the caller. */
int io_undo_create(const char *path, struct r4_undo **out,
		   struct r4_error *err);
/* Drop a reference: each device wrapped holds one, and the file closes
 * with the last (accepts NULL). */
void io_undo_put(struct r4_undo *undo);
/* Wrap the read-write device dev in the undo backend of undo (NULL:
 * leave it); several opens with the same handle extend one file. */
int io_undo_attach(struct io_dev *dev, struct r4_undo *undo,
		   struct r4_error *err);

/* Shared with r4_undo_apply. CRC-32C of a then b; little-endian
 * fields; the volume's identity on d (the master super block's uuid,
 * SHA-256 of the master and format40 super blocks); SHA-256 of len
 * bytes at off. */
uint32_t io_undo_crc(const void *a, size_t alen, const void *b, size_t blen);
void io_undo_put_le(uint8_t *p, uint64_t v, unsigned n);
uint64_t io_undo_get_le(const uint8_t *p, unsigned n);
int io_undo_identity(struct io_dev *d, uint64_t size,
		     uint8_t uuid[FMT_UUID_SIZE], uint8_t sum[32]);
int io_undo_unit_sum(struct io_dev *d, uint64_t off, uint32_t len,
		     uint8_t sum[32]);

#endif
