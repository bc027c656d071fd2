/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: item bodies for the tree's item lists (ibody.c). */
#ifndef R4_LIBIMAGE_TREE_IBODY_H
#define R4_LIBIMAGE_TREE_IBODY_H

#include <stddef.h>

/* A body with room for len bytes; NULL when out of memory (or len
 * absurd). */
void *ibody_alloc(size_t len);
/* Give p (from ibody_alloc or ibody_realloc; NULL is fine) back. */
void ibody_free(void *p);
/* Body p with room for len bytes, its bytes kept (as realloc: the old
 * one stays when it fails). */
void *ibody_realloc(void *p, size_t len);

#endif
