/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: fibrations (doc/format.md §2.7). Bytes are read unsigned;
 * the kernel reads them as (signed) char, which changes the sum only by
 * multiples of 256 and so leaves the low 7 bits alone. */
#include "format/fibre.h"

#include "format/errors.h"
#include "format/plugin.h"

static unsigned byte_at(const char *name, size_t i)
{
	return (unsigned char)name[i];
}

unsigned fmt_fibre_lexic(const char *name, size_t len)
{
	(void)name;
	(void)len;
	return 0;
}

unsigned fmt_fibre_dot_o(const char *name, size_t len)
{
	return len > 2 && name[len - 2] == '.' && name[len - 1] == 'o';
}

unsigned fmt_fibre_ext_1(const char *name, size_t len)
{
	if (len > 2 && name[len - 2] == '.')
		return byte_at(name, len - 1) & FMT_FIBRE_MASK;
	return 0;
}

unsigned fmt_fibre_ext_3(const char *name, size_t len)
{
	if (len > 4 && name[len - 4] == '.')
		return (byte_at(name, len - 3) + byte_at(name, len - 2) +
			byte_at(name, len - 1)) & FMT_FIBRE_MASK;
	return 0;
}

int fmt_fibre(unsigned fibre_id, const char *name, size_t len)
{
	switch (fibre_id) {
	case FMT_FIBRE_LEXIC:
		return (int)fmt_fibre_lexic(name, len);
	case FMT_FIBRE_DOT_O:
		return (int)fmt_fibre_dot_o(name, len);
	case FMT_FIBRE_EXT_1:
		return (int)fmt_fibre_ext_1(name, len);
	case FMT_FIBRE_EXT_3:
		return (int)fmt_fibre_ext_3(name, len);
	default:
		return R4_EUNSUPP;
	}
}
