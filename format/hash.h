/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the directory-entry hash plugins (doc/format.md §3).
 *
 * A hash turns the tail of a long name (the bytes from character 15 on,
 * large keys; from character 7 on, short keys) into the offset word of
 * the entry key. Ids are the on-disk plugin ids of enum fmt_hash_id in
 * format/plugin.h: rupasov 0, r5 1, tea 2, fnv1 3, deg 4.
 *
 * Two code bases compute these hashes and they do not always agree:
 *
 * - rupasov: reiser4progs widens its powers of ten as unsigned 32-bit
 *   values, the kernel as signed ones, so inputs that start with a byte
 *   below '0' or are 13 bytes or longer hash differently (section 3.2).
 * - r5 and fnv1: the kernel stops at the first NUL byte, reiser4progs
 *   uses the length. Real names hold no NUL, so this never shows.
 *
 * By default every function here computes what reiser4progs computes,
 * because reiser4progs 1.2.2 wrote the volumes we must read and match
 * byte for byte. OR FMT_HASH_KERNEL into a hash id to get the kernel
 * module's arithmetic instead (for volumes whose rupasov directories
 * were filled by the kernel). FMT_HASH_KERNEL is a selector for this
 * API only: it is never stored on disk, and fmt_key_entry() accepts it
 * in its hash_id argument. */
#ifndef R4_FORMAT_HASH_H
#define R4_FORMAT_HASH_H

#include <stddef.h>
#include <stdint.h>

/* OR into a hash id: compute as the kernel module does. */
#define FMT_HASH_KERNEL 0x100u

/* The value every name hashes to under deg (testing only). */
#define FMT_HASH_DEG_VALUE 0xc0c0c0c010101010ULL

/* Hash 'len' bytes at 'buf' with plugin hash_id (optionally OR'ed with
 * FMT_HASH_KERNEL) into *out. Returns 0, or R4_EUNSUPP for an unknown
 * id (then *out is left alone). */
int fmt_hash(unsigned hash_id, const void *buf, size_t len, uint64_t *out);

/* True when hash_id (with or without FMT_HASH_KERNEL) is known. */
int fmt_hash_known(unsigned hash_id);

/* The single hashes, reiser4progs arithmetic. */
uint64_t fmt_hash_r5(const void *buf, size_t len);
uint64_t fmt_hash_rupasov(const void *buf, size_t len);
uint64_t fmt_hash_tea(const void *buf, size_t len);
uint64_t fmt_hash_fnv1(const void *buf, size_t len);
uint64_t fmt_hash_deg(const void *buf, size_t len);

/* rupasov with the kernel module's signed 32-bit powers of ten. */
uint64_t fmt_hash_rupasov_kernel(const void *buf, size_t len);

#endif
