/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the in-place sort of the checker's sorted runs (libimage/check
 * only). glibc's qsort is a merge sort through a copy of the array (a
 * fresh allocation as large as the records: page faults, a second pass
 * over memory) calling the comparison through a pointer; this is an
 * introsort (quicksort on the median of three, heapsort past 2 log2 n
 * levels, insertion sort for the small pieces) on the records
 * themselves. chk_sort_inline(base, n, size, cmp) with a constant size
 * and a static cmp is compiled into the caller with cmp inlined (the
 * records' sorters in stream.c); chk_sort() is the same for any cmp.
 *
 * It is not stable: records that compare equal may come out in any
 * order. Every comparison of the check's runs breaks ties by where a
 * record was found (node and item, or the order put), so only
 * identical records compare equal and the output is the one a stable
 * sort gives. */
#ifndef R4_LIBIMAGE_CHECK_SORT_H
#define R4_LIBIMAGE_CHECK_SORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Largest record (bytes) sorted here; larger ones go to qsort (the
 * check's records are under 100 bytes). */
#define CHK_SORT_MAXREC 256
/* Pieces this small are left to the final insertion sort. */
#define CHK_SORT_SMALL 12

typedef int (*chk_sort_cmp)(const void *, const void *);

#define CHK_SORT_AI static inline __attribute__((always_inline))

CHK_SORT_AI void chk_sort_swap(uint8_t *a, uint8_t *b, size_t size)
{
	uint8_t t[CHK_SORT_MAXREC];

	memcpy(t, a, size);
	memcpy(a, b, size);
	memcpy(b, t, size);
}

/* Heapsort of n records at a: the bound on a quicksort that a hostile
 * order of keys would make quadratic. */
CHK_SORT_AI void chk_sort_sift(uint8_t *a, size_t i, size_t n, size_t size,
			       chk_sort_cmp cmp)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;

		if (l < n && cmp(a + l * size, a + m * size) > 0)
			m = l;
		if (l + 1 < n && cmp(a + (l + 1) * size, a + m * size) > 0)
			m = l + 1;
		if (m == i)
			return;
		chk_sort_swap(a + i * size, a + m * size, size);
		i = m;
	}
}

CHK_SORT_AI void chk_sort_heap(uint8_t *a, size_t n, size_t size,
			       chk_sort_cmp cmp)
{
	for (size_t i = n / 2; i-- > 0;)
		chk_sort_sift(a, i, n, size, cmp);
	for (size_t k = n; k-- > 1;) {
		chk_sort_swap(a, a + k * size, size);
		chk_sort_sift(a, 0, k, size, cmp);
	}
}

/* Partition the n > 2 records at a around the median of the first, the
 * middle and the last; the pivot's place is returned, those before it
 * are not greater, those after not smaller. */
CHK_SORT_AI size_t chk_sort_part(uint8_t *a, size_t n, size_t size,
				 chk_sort_cmp cmp)
{
	uint8_t *m = a + n / 2 * size, *z = a + (n - 1) * size;
	size_t i = 1, j = n - 1;

	if (cmp(m, a) < 0)
		chk_sort_swap(m, a, size);
	if (cmp(z, m) < 0) {
		chk_sort_swap(z, m, size);
		if (cmp(m, a) < 0)
			chk_sort_swap(m, a, size);
	}
	/* pivot first; the last record (not smaller) stops the scan up,
	 * the pivot itself the scan down */
	chk_sort_swap(a, m, size);
	for (;;) {
		while (cmp(a + i * size, a) < 0)
			i++;
		while (cmp(a + j * size, a) > 0)
			j--;
		if (i >= j)
			break;
		chk_sort_swap(a + i * size, a + j * size, size);
		i++;
		j--;
	}
	chk_sort_swap(a, a + j * size, size);
	return j;
}

/* Insertion sort: each record moves at most CHK_SORT_SMALL places
 * once the quicksort has left only small unsorted pieces. */
CHK_SORT_AI void chk_sort_insert(uint8_t *a, size_t n, size_t size,
				 chk_sort_cmp cmp)
{
	uint8_t t[CHK_SORT_MAXREC];

	for (size_t i = 1; i < n; i++) {
		size_t j = i;

		if (cmp(a + (i - 1) * size, a + i * size) <= 0)
			continue;
		memcpy(t, a + i * size, size);
		do {
			memcpy(a + j * size, a + (j - 1) * size, size);
			j--;
		} while (j > 0 && cmp(a + (j - 1) * size, t) > 0);
		memcpy(a + j * size, t, size);
	}
}

CHK_SORT_AI void chk_sort_inline(void *base, size_t n, size_t size,
				chk_sort_cmp cmp)
{
	/* the larger piece waits on the stack, the smaller is sorted
	 * first: at most log2(n) pieces wait */
	struct { uint8_t *a; size_t n; unsigned depth; } st[64];
	uint8_t *a = base;
	size_t all = n;
	unsigned depth = 0, top = 0;

	if (size > CHK_SORT_MAXREC) {
		qsort(base, n, size, cmp);
		return;
	}
	for (size_t k = n; k > 1; k >>= 1)
		depth += 2;
	for (;;) {
		while (n > CHK_SORT_SMALL) {
			size_t p, rn;

			if (depth-- == 0) {
				chk_sort_heap(a, n, size, cmp);
				break;
			}
			p = chk_sort_part(a, n, size, cmp);
			rn = n - p - 1;
			if (p < rn) {
				st[top].a = a + (p + 1) * size;
				st[top].n = rn;
				st[top++].depth = depth;
				n = p;
			} else {
				st[top].a = a;
				st[top].n = p;
				st[top++].depth = depth;
				a += (p + 1) * size;
				n = rn;
			}
		}
		if (!top)
			break;
		top--;
		a = st[top].a;
		n = st[top].n;
		depth = st[top].depth;
	}
	chk_sort_insert(base, all, size, cmp);
}

void chk_sort(void *base, size_t n, size_t size, chk_sort_cmp cmp);

#endif
