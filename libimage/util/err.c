/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "libimage/util/err.h"

#define ERR_HEAD 160		/* bytes kept before the cut of a long message */
#define ERR_CUT " [...] "

/* Step back from i to the start of a UTF-8 character. */
static size_t char_start(const char *s, size_t i)
{
	while (i > 0 && ((unsigned char)s[i] & 0xc0) == 0x80)
		i--;
	return i;
}

/* A message longer than the buffer (a path thousands of folders deep,
 * say) keeps its beginning and its end, where the reason is, and says
 * where it was cut. */
static void cut_middle(char *msg, size_t size, const char *full, size_t n)
{
	size_t head = char_start(full, ERR_HEAD);
	size_t tail = size - 1 - head - strlen(ERR_CUT);
	size_t from = n - tail;

	while (from < n && ((unsigned char)full[from] & 0xc0) == 0x80)
		from++;
	snprintf(msg, size, "%.*s%s%s", (int)head, full, ERR_CUT, full + from);
}

static int vfail(struct r4_error *err, int keep, int code, const char *fmt,
		 va_list ap)
{
	va_list again;
	int n;

	if (!err)
		return code;
	if (keep && err->msg[0])
		return code;
	err->code = code;
	err->pid = 0;
	va_copy(again, ap);
	n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	if (n >= (int)sizeof(err->msg)) {
		char *full = malloc((size_t)n + 1);

		if (full) {
			vsnprintf(full, (size_t)n + 1, fmt, again);
			cut_middle(err->msg, sizeof(err->msg), full, (size_t)n);
			free(full);
		}
	}
	va_end(again);
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
