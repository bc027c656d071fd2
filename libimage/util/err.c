/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdarg.h>
#include <stdio.h>
#include "config.h"
#include "libimage/util/err.h"

static int vfail(struct r4_error *err, int keep, int code, const char *fmt,
		 va_list ap)
{
	if (!err)
		return code;
	if (keep && err->msg[0])
		return code;
	err->code = code;
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	return code;
}

int r4i_fail(struct r4_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(err, 1, code, fmt, ap);
	va_end(ap);
	return code;
}

int r4i_fail_over(struct r4_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(err, 0, code, fmt, ap);
	va_end(ap);
	return code;
}

const char *r4_version(void)
{
	return PACKAGE_VERSION;
}
