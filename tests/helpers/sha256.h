/* SPDX-License-Identifier: GPL-2.0-or-later */
/* SHA-256 (FIPS 180-4) for the test helpers: r4manifest --sha256 prints
 * the same lines as sha256sum, to compare with the kernel's lists. */
#ifndef R4_TESTS_SHA256_H
#define R4_TESTS_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct sha256 {
	uint32_t h[8];
	uint64_t total;
	uint8_t blk[64];
	size_t fill;
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t len);
void sha256_final(struct sha256 *s, uint8_t out[32]);

#endif
