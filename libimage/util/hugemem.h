/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: large buffers asked for huge pages, where filling them page by
 * page would cost a fault every 4 KiB (the block cache's slabs, the
 * checker's sorted runs); the heap's free pages given back. */
#ifndef R4_LIBIMAGE_UTIL_HUGEMEM_H
#define R4_LIBIMAGE_UTIL_HUGEMEM_H

#include <stddef.h>

/* bytes of memory, freed with free(): under 2 MiB plain malloc, else on
 * a 2 MiB boundary with the kernel asked for huge pages (a hint: where
 * it gives none, ordinary pages). NULL when out of memory. */
void *r4i_alloc_huge(size_t bytes);

/* The heap's free pages given back to the system where the C library
 * can (malloc_trim): after a phase that freed much, before one whose
 * large allocations are mapped anew and would not reuse them. */
void r4i_heap_trim(void);

#endif
