/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the format layer returns the public error codes (R4_E*,
 * r4_strerror), defined in include/r4/errors.h; r4_strerror is
 * implemented here, in format/errors.c. */
#ifndef R4_FORMAT_ERRORS_H
#define R4_FORMAT_ERRORS_H

#include "r4/errors.h"

#endif
