/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: large buffers asked for huge pages (hugemem.h). */
#include "config.h"
#include <stdlib.h>
#include <sys/mman.h>
#ifdef HAVE_MALLOC_TRIM
#include <malloc.h>
#endif
#include "libimage/util/hugemem.h"

#define HUGE_PAGE (2u << 20)

void *r4i_alloc_huge(size_t bytes)
{
	void *p = NULL;

	if (bytes < HUGE_PAGE)
		return malloc(bytes);
	if (posix_memalign(&p, HUGE_PAGE, bytes))
		return NULL;
#ifdef MADV_HUGEPAGE
	madvise(p, bytes, MADV_HUGEPAGE);	/* a hint: failure is fine */
#endif
	return p;
}

void r4i_heap_trim(void)
{
#ifdef HAVE_MALLOC_TRIM
	malloc_trim(0);
#endif
}
