/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: filling the caller's error record. */
#ifndef R4_LIBIMAGE_ERR_H
#define R4_LIBIMAGE_ERR_H

#include "r4/r4.h"

/* Record code and a printf-style message in err (which may be NULL) and
 * return code, so callers write `return r4i_fail(err, -EIO, "...")`. A
 * record that already holds a message is not overwritten: the first,
 * innermost failure is the one the user sees. */
int r4i_fail(struct r4_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* As r4i_fail, but always replaces any earlier message. */
int r4i_fail_over(struct r4_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static inline void r4i_error_clear(struct r4_error *err)
{
	if (err) {
		err->code = 0;
		err->msg[0] = '\0';
	}
}

#endif
