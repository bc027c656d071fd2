/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the checksums of the format (section 11). */
#ifndef R4_FORMAT_CHECKSUM_H
#define R4_FORMAT_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

/* zlib Adler-32 with the usual start value 1 (bitmap blocks, ctail
 * clusters). */
uint32_t fmt_adler32(const void *buf, size_t len);
/* Continue an Adler-32 over more bytes. */
uint32_t fmt_adler32_update(uint32_t adler, const void *buf, size_t len);

/* CRC-32C (Castagnoli, reflected 0x82F63B78) register update with no
 * initial or final inversion: node41 uses crc = fmt_crc32c_raw(~0, ...)
 * and stores the register as it stands. */
uint32_t fmt_crc32c_raw(uint32_t crc, const void *buf, size_t len);

#endif
