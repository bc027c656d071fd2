/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: a tiny TAP producer for the C unit tests. Each check prints one
 * "ok N - name" or "not ok N - name" line (with file:line and the values
 * on failure) and the test goes on; tap_done() ends the test and returns
 * its exit status.
 *
 * A test must not pass by stopping early:
 *   - plan(N) declares the number of checks up front; tap_done() fails
 *     the test when another number ran (without plan, tap_done() prints
 *     the plan at the end);
 *   - a test that exits without reaching tap_done() (a return or exit()
 *     on the way) fails: an atexit guard prints "Bail out!" and exits 1;
 *   - a setup step that fails calls tap_bail() (or tap_require()), which
 *     ends the test as a failure instead of returning quietly. */
#ifndef R4_TESTS_TAP_H
#define R4_TESTS_TAP_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int tap_n, tap_failed, tap_planned = -1, tap_finished, tap_guarded;

/* Runs at exit: a test that did not reach tap_done() failed. _exit()
 * (not exit()) because this runs inside exit(). */
static void tap_guard(void)
{
	if (tap_finished)
		return;
	printf("Bail out! exited without reaching tap_done() after %d "
	       "check(s)\n", tap_n);
	fflush(stdout);
	_exit(1);
}

static inline void tap_arm(void)
{
	if (!tap_guarded) {
		tap_guarded = 1;
		atexit(tap_guard);
	}
}

/* Declare the number of checks. */
static inline void plan(int n)
{
	tap_arm();
	tap_planned = n;
	printf("1..%d\n", n);
	fflush(stdout);
}

/* End the test now as a failure (a setup step failed). */
static inline void tap_bail(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
static inline void tap_bail(const char *fmt, ...)
{
	va_list ap;

	printf("Bail out! ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" (after %d check(s))\n", tap_n);
	fflush(stdout);
	tap_finished = 1;
	exit(1);
}

#define tap_require(cond, ...) do { \
	if (!(cond)) \
		tap_bail(__VA_ARGS__); \
} while (0)

/* A step that must return 0 (a set-up call, a close): anything else
 * ends the test. */
#define tap_must(expr) do { \
	long long r_ = (long long)(expr); \
	tap_require(r_ == 0, "%s returned %lld at %s:%d", #expr, r_, \
		    __FILE__, __LINE__); \
} while (0)

static inline int tap_ok(int cond, const char *file, int line,
			 const char *fmt, ...)
{
	va_list ap;

	tap_arm();
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
	tap_arm();
	for (int i = 0; i < n; i++)
		printf("ok %d # SKIP %s\n", ++tap_n, why);
}

static inline int tap_done(void)
{
	tap_finished = 1;
	if (tap_planned < 0) {
		printf("1..%d\n", tap_n);
	} else if (tap_n != tap_planned) {
		printf("# planned %d check(s), ran %d\n", tap_planned, tap_n);
		fflush(stdout);
		return 1;
	}
	fflush(stdout);
	return tap_failed ? 1 : 0;
}

#endif
