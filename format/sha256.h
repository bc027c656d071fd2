/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: SHA-256 (FIPS 180-4), pure: no I/O, no allocation. */
#ifndef R4_FORMAT_SHA256_H
#define R4_FORMAT_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct fmt_sha256 {
	uint32_t h[8];
	uint64_t len;
	uint8_t buf[64];
	size_t used;
};

void fmt_sha256_init(struct fmt_sha256 *c);
void fmt_sha256_update(struct fmt_sha256 *c, const void *data, size_t len);
/* Finish: the 32-byte digest. */
void fmt_sha256_final(struct fmt_sha256 *c, uint8_t out[32]);
/* Finish: the digest as 64 hex digits and a NUL. */
void fmt_sha256_hex(struct fmt_sha256 *c, char out[65]);

#endif
