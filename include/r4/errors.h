/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the error codes of the public interface. Functions return 0 on
 * success or a negative value: -errno for system errors, or one of the
 * R4_E* codes below (a reserved range far from any errno) for problems
 * with on-disk data. The format layer returns the same codes, so this
 * header includes nothing else of ours. */
#ifndef R4_ERRORS_H
#define R4_ERRORS_H

enum {
	R4_EBASE = 10000,
	R4_ECORRUPT = -(R4_EBASE + 1),	/* structure is inconsistent */
	R4_EBADMAGIC = -(R4_EBASE + 2),	/* magic string/number wrong */
	R4_ERANGE = -(R4_EBASE + 3),	/* offset/length/block out of bounds */
	R4_EUNSUPP = -(R4_EBASE + 4),	/* valid but unsupported (plugin id...) */
	R4_ECSUM = -(R4_EBASE + 5),	/* checksum mismatch */
	R4_ENOSPC = -(R4_EBASE + 6),	/* volume or node is full */
	R4_ENOTFOUND = -(R4_EBASE + 7),	/* key, name or object not found */
	R4_EEXIST = -(R4_EBASE + 8),	/* already exists */
	R4_EINVAL = -(R4_EBASE + 9),	/* invalid argument from the caller */
	R4_ELOOP = -(R4_EBASE + 10),	/* cycle in the tree or in links */
	R4_EBUSY = -(R4_EBASE + 11),	/* device mounted or in use */
	R4_ELAST = -(R4_EBASE + 12)
};

/* A short text for any code above or for -errno. Never NULL; the string
 * is static and never changes. */
const char *r4_strerror(int err);

#endif
