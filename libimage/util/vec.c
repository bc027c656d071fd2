/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: growable arrays (see vec.h). */
#include "config.h"
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/util/vec.h"

int r4_reserve(void *pp, size_t *cap, size_t need, size_t elem,
	       size_t first)
{
	size_t nc = *cap ? *cap : first;
	void *p, *old;

	if (need <= *cap)
		return 0;
	while (nc < need) {
		if (nc > SIZE_MAX / 2)
			return -ENOMEM;
		nc = nc ? nc * 2 : need;
	}
	if (!elem || nc > SIZE_MAX / elem)
		return -ENOMEM;
	memcpy(&old, pp, sizeof(old));	/* *pp is a T *, not a void * */
	p = realloc(old, nc * elem);
	if (!p)
		return -ENOMEM;
	memcpy(pp, &p, sizeof(p));
	*cap = nc;
	return 0;
}
