/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the generator of the fuzz harnesses' seeded mutations
 * (xorshift64): the same seed, the same mutations on every machine. */
#ifndef R4_FUZZ_XORSHIFT_H
#define R4_FUZZ_XORSHIFT_H

#include <stdint.h>

static inline uint64_t fuzz_xorshift(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

#endif
