/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: a tiny TAP producer for the C unit tests. Each check prints one
 * "ok N - name" or "not ok N - name" line (with file:line and the values
 * on failure) and the test goes on; tap_done() prints the plan and
 * returns the exit status. */
#ifndef R4_TESTS_TAP_H
#define R4_TESTS_TAP_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_n, tap_failed;

static inline int tap_ok(int cond, const char *file, int line,
			 const char *fmt, ...)
{
	va_list ap;

	tap_n++;
	printf("%s %d - ", cond ? "ok" : "not ok", tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!cond) {
		tap_failed++;
		printf("#   failed at %s:%d\n", file, line);
	}
	fflush(stdout);
	return cond;
}

#define ok(cond, ...) tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

#define is_int(got, want, ...) do { \
	long long g_ = (long long)(got), w_ = (long long)(want); \
	if (!tap_ok(g_ == w_, __FILE__, __LINE__, __VA_ARGS__)) \
		printf("#   got %lld, want %lld\n", g_, w_); \
} while (0)

#define is_u64(got, want, ...) do { \
	uint64_t g_ = (uint64_t)(got), w_ = (uint64_t)(want); \
	if (!tap_ok(g_ == w_, __FILE__, __LINE__, __VA_ARGS__)) \
		printf("#   got 0x%" PRIx64 ", want 0x%" PRIx64 "\n", g_, w_); \
} while (0)

#define is_str(got, want, ...) do { \
	const char *g_ = (got), *w_ = (want); \
	if (!tap_ok(g_ && w_ && strcmp(g_, w_) == 0, __FILE__, __LINE__, \
		    __VA_ARGS__)) \
		printf("#   got \"%s\", want \"%s\"\n", g_ ? g_ : "(null)", \
		       w_ ? w_ : "(null)"); \
} while (0)

#define is_mem(got, want, len, ...) do { \
	size_t l_ = (len); \
	const unsigned char *g_ = (const unsigned char *)(got); \
	const unsigned char *w_ = (const unsigned char *)(want); \
	if (!tap_ok(memcmp(g_, w_, l_) == 0, __FILE__, __LINE__, \
		    __VA_ARGS__)) { \
		for (size_t i_ = 0; i_ < l_; i_++) \
			if (g_[i_] != w_[i_]) { \
				printf("#   first difference at byte %zu: " \
				       "got 0x%02x, want 0x%02x\n", i_, \
				       g_[i_], w_[i_]); \
				break; \
			} \
	} \
} while (0)

static inline void tap_skip(int n, const char *why)
{
	for (int i = 0; i < n; i++)
		printf("ok %d # SKIP %s\n", ++tap_n, why);
}

static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif
