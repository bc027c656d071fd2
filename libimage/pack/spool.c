/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the packer's spool: bytes that wait until the tree reaches
 * their file (tails, compressed clusters, streamed extent data).
 *
 * Its first bytes, up to a budget (r4_pack_opts.spool_memory), are kept
 * in an anonymous mapping reserved at first use (MAP_NORESERVE: pages
 * are taken only as they are written); past it they go to the spool
 * file, at the same offsets (the file has a hole in front), through a
 * write buffer handed to the writer thread. Streamed extent data is
 * then written into place straight from memory: one copy of each byte
 * fewer than through the file, no page of the file to allocate and
 * punch out again. The memory is kept until the build ends (given back
 * piecemeal it would split the huge pages and cost a fault for each
 * page again); the file's ranges are punched out once copied. Tails are
 * read back with a memcpy, or from the file through a small window. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "libimage/pack/packer.h"
#include "libimage/util/err.h"

#define SPOOL_MEM_MAX (1ull << 30)	/* the default budget's ceiling */
#define SPOOL_WIN_FILL (64u << 10)	/* a window read from the file */
#define SPOOL_HUGE (2u << 20)		/* a huge page */

/* Whether the kernel gives huge pages to a mapping that asks for them:
 * its transparent huge page mode is not "never" (a machine fact, as the
 * RAM's size; unknown counts as yes). */
static int huge_pages_on(void)
{
	char buf[128] = { 0 };
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	size_t n = 0;

	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	return !n || !strstr(buf, "[never]");
}

/* The memory limit of this process's control group in bytes (cgroup v2
 * memory.max, else v1's limit), or 0 when none is set or readable: a
 * build in a container must not size itself by the host's RAM. */
static uint64_t cgroup_limit(void)
{
	static const char *const files[] = {
		"/sys/fs/cgroup/memory.max",
		"/sys/fs/cgroup/memory/memory.limit_in_bytes",
	};
	unsigned long long v;

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		FILE *f = fopen(files[i], "r");
		int got;

		if (!f)
			continue;
		got = fscanf(f, "%llu", &v);
		fclose(f);
		if (got == 1)
			return (uint64_t)v;
	}
	return 0;
}

/* The default budget: the smaller of 1 GiB and an eighth of the RAM
 * (or of the control group's limit, when lower); none where huge pages
 * are off (taking memory a 4 KiB page at a time costs more than the
 * spool file: bench/RESULTS.md §12). */
static uint64_t spool_mem_default(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	uint64_t ram = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz
					    : 0, cg = cgroup_limit();

	if (!huge_pages_on())
		return 0;
	if (cg && cg < ram)
		ram = cg;
	return ram / 8 < SPOOL_MEM_MAX ? ram / 8 : SPOOL_MEM_MAX;
}

/* Reserve the memory part at first use (none when the budget is 0 or
 * the mapping fails: then everything goes to the file), on a 2 MiB
 * boundary and asked for huge pages: a fault per 4 KiB page written
 * costs more than the copy itself on some machines (virtual ones). */
static void spool_mem_map(struct r4_pack *b)
{
	uint64_t cap = b->o.spool_memory < 0 ? spool_mem_default()
					     : (uint64_t)b->o.spool_memory;
	size_t len;
	uint8_t *m, *a;

	b->smem_tried = 1;
	cap = cap / SPOOL_HUGE * SPOOL_HUGE;	/* whole blocks and pages */
	if (!cap || cap + SPOOL_HUGE != (size_t)(cap + SPOOL_HUGE))
		return;
	len = (size_t)cap + SPOOL_HUGE;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return;
	a = m + (SPOOL_HUGE - (uintptr_t)m % SPOOL_HUGE) % SPOOL_HUGE;
	if (a > m)
		munmap(m, (size_t)(a - m));
	if (a + cap < m + len)
		munmap(a + cap, (size_t)(m + len - (a + cap)));
#ifdef MADV_HUGEPAGE
	madvise(a, (size_t)cap, MADV_HUGEPAGE);	/* a hint: may fail */
#endif
	b->smem = a;
	b->smem_cap = cap;
	b->swr.start = cap;	/* the file's part starts past it */
}

/* Write out the file part's buffer. */
static int spool_submit(struct r4_pack *b, struct r4_error *err)
{
	int rc = 0;

	if (b->swr.n)
		rc = pack_submit(b, b->spool, &b->swr.buf, b->swr.n,
				 b->swr.start, err);
	b->swr.start += b->swr.n;
	b->swr.n = 0;
	return rc;
}

/* Append to the file part, through its buffer. */
static int spool_put_file(struct r4_pack *b, const uint8_t *p, uint64_t len,
			  struct r4_error *err)
{
	size_t cap = (size_t)PACK_WBUF_BLOCKS * b->bs;

	if (!b->swr.buf && !(b->swr.buf = malloc(cap)))
		return r4i_fail(err, -ENOMEM, "out of memory");
	while (len) {
		size_t k = cap - b->swr.n;
		int rc;

		if (!k && (rc = spool_submit(b, err)))
			return rc;
		k = cap - b->swr.n;
		k = len < k ? (size_t)len : k;
		if (p) {
			memcpy(b->swr.buf + b->swr.n, p, k);
			p += k;
		} else {
			memset(b->swr.buf + b->swr.n, 0, k);
		}
		b->swr.n += k;
		b->spool_len += k;
		len -= k;
	}
	return 0;
}

/* Populate the memory ahead of the bytes [start, end) about to be
 * written, 2 MiB at a time: one call instead of a fault for each page
 * where huge pages are not to be had (best effort: a kernel without it
 * faults them). Whole 2 MiB pieces of a run of zeros before start
 * (never written) are skipped, not populated. */
static void spool_mem_populate(struct r4_pack *b, uint64_t start,
			       uint64_t end)
{
#ifdef MADV_POPULATE_WRITE
	start -= start % SPOOL_HUGE;
	if (b->smem_pop < start)
		b->smem_pop = start;
	while (b->smem_pop < end && b->smem_pop < b->smem_cap) {
		madvise(b->smem + b->smem_pop, SPOOL_HUGE,
			MADV_POPULATE_WRITE);
		b->smem_pop += SPOOL_HUGE;
	}
#else
	(void)b;
	(void)start;
	(void)end;
#endif
}

int pack_spool_put(struct r4_pack *b, const void *p, uint64_t len,
		   struct r4_error *err)
{
	const uint8_t *src = p;

	if (!b->smem_tried)
		spool_mem_map(b);
	if (b->spool_len < b->smem_cap && len) {
		uint64_t room = b->smem_cap - b->spool_len;
		size_t k = (size_t)(len < room ? len : room);

		/* zeros: the mapping's pages are zero until written, and
		 * never written twice */
		if (src) {
			spool_mem_populate(b, b->spool_len, b->spool_len + k);
			memcpy(b->smem + b->spool_len, src, k);
		}
		b->spool_len += k;
		len -= k;
		src = src ? src + k : NULL;
	}
	return len ? spool_put_file(b, src, len, err) : 0;
}

int pack_spool_seal(struct r4_pack *b, struct r4_error *err)
{
	int rc = spool_submit(b, err);

	return rc ? rc : pack_img_wait(b, err);
}

void pack_spool_fini(struct r4_pack *b)
{
	free(b->swr.buf);
	free(b->srd.buf);
	b->swr.buf = b->srd.buf = NULL;
	if (b->smem)
		munmap(b->smem, (size_t)b->smem_cap);
	b->smem = NULL;
	b->smem_cap = 0;
}

/* Read file-part bytes through a window of PACK_WBUF_BLOCKS blocks,
 * filled SPOOL_WIN_FILL bytes at a time (tails are read in key order,
 * far apart in the spool: a big fill would be read for one tail). */
static int spool_get_file(struct r4_pack *b, uint8_t *dst, size_t n,
			  uint64_t off, struct r4_error *err)
{
	size_t cap = (size_t)PACK_WBUF_BLOCKS * b->bs;
	struct sbuf *w = &b->srd;

	if (n > cap / 2 || off + n > b->spool_len)
		return io_read(b->spool, dst, n, off, err);
	if (!w->buf && !(w->buf = malloc(cap)))
		return r4i_fail(err, -ENOMEM, "out of memory");
	if (!w->n || off < w->start || off + n > w->start + w->n) {
		uint64_t start = off / b->bs * b->bs;
		size_t len = off + n - start > SPOOL_WIN_FILL ?
			     (size_t)(off + n - start) : SPOOL_WIN_FILL;
		int rc;

		if (len > b->spool_len - start)
			len = (size_t)(b->spool_len - start);
		rc = io_read(b->spool, w->buf, len, start, err);
		w->n = 0;
		if (rc)
			return rc;
		w->start = start;
		w->n = len;
	}
	memcpy(dst, w->buf + (off - w->start), n);
	return 0;
}

int pack_spool_get(struct r4_pack *b, uint8_t *dst, size_t n, uint64_t off,
		   struct r4_error *err)
{
	if (off < b->smem_cap) {
		size_t k = off + n <= b->smem_cap ? n :
			   (size_t)(b->smem_cap - off);

		if (off + k > b->spool_len)
			return r4i_fail(err, R4_ERANGE, "spool: read past "
				       "its end");
		memcpy(dst, b->smem + off, k);
		dst += k;
		off += k;
		n -= k;
	}
	return n ? spool_get_file(b, dst, n, off, err) : 0;
}

int pack_spool_copy_mem(const struct cbatch *cb, const struct copy1 *c,
			uint64_t *done, struct r4_error *err)
{
	uint64_t k;
	int rc;

	*done = 0;
	if (!cb->mem || c->soff >= cb->mem_cap)
		return 0;
	/* whole blocks: the spool pads each streamed block with zeros,
	 * and memory past what was written reads as zeros */
	k = (c->len + cb->bs - 1) / cb->bs * cb->bs;
	if (k > cb->mem_cap - c->soff)
		k = cb->mem_cap - c->soff;
	rc = io_write(cb->dev, cb->mem + c->soff, (size_t)k, c->off, err);
	if (rc)
		return rc;
	*done = k < c->len ? k : c->len;
	return 0;
}
