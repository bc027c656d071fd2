/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: growable arrays. An array is a pointer and a capacity the
 * caller keeps (with its own count), so a struct needs no new member:
 *
 *	if (R4_RESERVE(v, cap, n + 1, 16))
 *		return -ENOMEM;
 *	v[n++] = x;
 */
#ifndef R4_LIBIMAGE_UTIL_VEC_H
#define R4_LIBIMAGE_UTIL_VEC_H

#include <stddef.h>

/* Room for need elements of elem bytes in the array whose pointer is at
 * pp (a T **) and whose capacity is *cap: the capacity doubles from
 * first (or from need, when larger). 0, or -ENOMEM with the array and
 * *cap untouched. */
int r4_reserve(void *pp, size_t *cap, size_t need, size_t elem,
	       size_t first);

#define R4_RESERVE(arr, cap, need, first) \
	r4_reserve(&(arr), &(cap), (need), sizeof(*(arr)), (first))

#endif
