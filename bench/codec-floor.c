/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The codec floor of a compressed build (issue 29, goal 2): the bytes of
 * every regular file under DIR, cut into clusters as a ccreg40 file is
 * (cluster k holds bytes [k * C, (k + 1) * C) of its file; the last one
 * is short), each cluster compressed once with stock liblzo2, zlib or
 * libzstd at the parameters of r4kit's plugins (libimage/util/compress.c,
 * doc/compress.md §3.3) on THREADS threads, and nothing else: no image,
 * no tree. Each thread takes the next file, reads it in chunks of
 * CHUNK bytes into one buffer it reuses (r4pack reads a directory's
 * files in 256 KiB chunks, libimage/tar/dir.c DIR_CHUNK), compresses
 * the chunk's clusters where they lie into one output buffer it also
 * reuses, then reads the next chunk: the reads r4pack cannot avoid, on
 * the same number of threads, and no more. The names are gathered
 * before the clock starts. It prints the wall seconds of the reads and
 * the compression, the CPU seconds of the process and the bytes in and
 * out, so that bench/codec-floor.sh can divide r4pack's time by it.
 *
 * With OUT, it also does two things the format asks of every build that
 * the bare floor leaves out (r4pack cannot skip them): each cluster that
 * compresses to less than itself less 4 bytes gets the Adler-32 a
 * compressed disk cluster ends with (doc/compress.md §3.2; zlib's
 * adler32), and every disk cluster (those, or the plain bytes) is
 * written to the file OUT, back to back in pwrites of 1 MiB, as r4pack
 * writes its image. Still no tree, no walk of the source on the clock.
 *
 *   codec-floor lzo1|gzip1|zstd1 CLUSTER_BYTES THREADS DIR [OUT]
 *
 * Built by bench/codec-floor.sh: cc -O2 codec-floor.c -llzo2 -lz -lzstd
 * -lpthread. Not part of r4kit: a yardstick. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <lzo/lzo1x.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

enum algo { LZO1, GZIP1, ZSTD1 };

/* A chunk: a multiple of the cluster size, so that a chunk holds whole
 * clusters and each file is cut as before. */
#define CHUNK (256u << 10)

struct file {			/* one regular file to read */
	char *path;
	size_t size;
};

static struct file *files;
static size_t nfiles, capfiles;
static size_t csize, chunk;
static enum algo algo;
static atomic_size_t next;
static atomic_ullong in_total, out_total, ncl_total;
static int outfd = -1;		/* OUT, or -1 */
static atomic_ullong outpos;	/* where the next write goes in OUT */
#define WBUF (1u << 20)

struct wbuf {			/* a thread's disk clusters for OUT */
	uint8_t *b;
	size_t n;
};

static void wflush(struct wbuf *w)
{
	unsigned long long at = atomic_fetch_add(&outpos, w->n);

	if (w->n && pwrite(outfd, w->b, w->n, (off_t)at) != (ssize_t)w->n) {
		fprintf(stderr, "codec-floor: cannot write OUT\n");
		exit(2);
	}
	w->n = 0;
}

static void wput(struct wbuf *w, const void *p, size_t n)
{
	if (w->n + n > WBUF)
		wflush(w);
	memcpy(w->b + w->n, p, n);
	w->n += n;
}

/* One disk cluster to OUT: the stream and its Adler-32 when that
 * saves, else the plain bytes. */
static void seal_put(struct wbuf *w, const uint8_t *plain, size_t len,
		     const uint8_t *dst, size_t m)
{
	if (m + 4 < len) {
		uLong a = adler32(1, dst, (uInt)m);
		uint8_t sum[4] = { (uint8_t)a, (uint8_t)(a >> 8),
				   (uint8_t)(a >> 16), (uint8_t)(a >> 24) };

		wput(w, dst, m);
		wput(w, sum, 4);
	} else {
		wput(w, plain, len);
	}
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "codec-floor: out of memory\n");
		exit(2);
	}
	return p;
}

/* Note a file's name (read later, on the clock). */
static int add_file(const char *path, const struct stat *st, int flag,
		    struct FTW *f)
{
	(void)f;
	if (flag != FTW_F || !S_ISREG(st->st_mode) || !st->st_size)
		return 0;
	if (nfiles == capfiles) {
		capfiles = capfiles ? capfiles * 2 : 1024;
		files = realloc(files, capfiles * sizeof(*files));
		if (!files) {
			fprintf(stderr, "codec-floor: out of memory\n");
			exit(2);
		}
	}
	files[nfiles].path = strdup(path);
	if (!files[nfiles].path) {
		fprintf(stderr, "codec-floor: out of memory\n");
		exit(2);
	}
	files[nfiles++].size = (size_t)st->st_size;
	return 0;
}

/* Read up to n bytes at off: fewer only at the end of the file. */
static size_t read_chunk(int fd, uint8_t *buf, size_t n, off_t off)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = pread(fd, buf + got, n - got, off + (off_t)got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	return got;
}

static void *worker(void *arg)
{
	size_t cap = csize + csize / 16 + 4096;
	uint8_t *dst = xmalloc(cap);
	uint8_t *buf = xmalloc(chunk);
	struct wbuf w = { outfd >= 0 ? xmalloc(WBUF) : NULL, 0 };
	void *wrk = xmalloc(LZO1X_1_MEM_COMPRESS);
	ZSTD_CCtx *zc = ZSTD_createCCtx();
	unsigned long long in = 0, out = 0, ncl = 0;
	z_stream z;
	size_t i;

	(void)arg;
	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, 1, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY) !=
	    Z_OK || !zc) {
		fprintf(stderr, "codec-floor: codec setup failed\n");
		exit(2);
	}
	while ((i = atomic_fetch_add(&next, 1)) < nfiles) {
		int fd = open(files[i].path, O_RDONLY | O_CLOEXEC);
		off_t pos = 0;
		size_t n;

		if (fd < 0)
			continue;
		while ((n = read_chunk(fd, buf, chunk, pos)) > 0) {
			pos += (off_t)n;
			in += n;
			for (size_t off = 0; off < n; off += csize) {
				const uint8_t *p = buf + off;
				size_t len = n - off < csize ? n - off : csize;

				size_t m;

				ncl++;
				if (algo == LZO1) {
					lzo_uint lm = cap;

					lzo1x_1_compress(p, len, dst, &lm, wrk);
					m = lm;
				} else if (algo == GZIP1) {
					deflateReset(&z);
					z.next_in = (Bytef *)(uintptr_t)p;
					z.avail_in = (uInt)len;
					z.next_out = dst;
					z.avail_out = (uInt)cap;
					deflate(&z, Z_FINISH);
					m = cap - z.avail_out;
				} else {
					size_t r = ZSTD_compressCCtx(zc, dst,
							cap, p, len, 3);

					m = ZSTD_isError(r) ? len : r;
				}
				out += m;
				if (w.b)
					seal_put(&w, p, len, dst, m);
			}
			if (n < chunk)
				break;
		}
		close(fd);
	}
	if (w.b)
		wflush(&w);
	free(w.b);
	atomic_fetch_add(&in_total, in);
	atomic_fetch_add(&out_total, out);
	atomic_fetch_add(&ncl_total, ncl);
	deflateEnd(&z);
	ZSTD_freeCCtx(zc);
	free(wrk);
	free(buf);
	free(dst);
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
	pthread_t *th;
	double t0, c0;
	long nth;

	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: codec-floor lzo1|gzip1|zstd1 "
			"CLUSTER_BYTES THREADS DIR [OUT]\n");
		return 2;
	}
	if (argc == 6 && (outfd = open(argv[5], O_WRONLY | O_CREAT |
				       O_TRUNC | O_CLOEXEC, 0644)) < 0) {
		fprintf(stderr, "codec-floor: %s: cannot create\n", argv[5]);
		return 2;
	}
	algo = !strcmp(argv[1], "lzo1") ? LZO1 : !strcmp(argv[1], "gzip1") ?
	       GZIP1 : !strcmp(argv[1], "zstd1") ? ZSTD1 : (enum algo)-1;
	csize = strtoul(argv[2], NULL, 0);
	nth = strtol(argv[3], NULL, 0);
	if ((int)algo < 0 || csize < 4096 || nth < 1 || nth > 256) {
		fprintf(stderr, "codec-floor: bad arguments\n");
		return 2;
	}
	if (lzo_init() != LZO_E_OK || nftw(argv[4], add_file, 64, FTW_PHYS)) {
		fprintf(stderr, "codec-floor: %s: cannot read\n", argv[4]);
		return 2;
	}
	/* whole clusters in a chunk: CHUNK rounded up to the cluster */
	chunk = (CHUNK + csize - 1) / csize * csize;
	th = xmalloc(sizeof(*th) * (size_t)nth);
	t0 = now();
	c0 = cpu();
	for (long i = 0; i < nth; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	for (long i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	printf("%s cluster %zu threads %ld chunk %zu: %zu files, %llu "
	       "clusters, %llu bytes in, %llu out, wall %.3f s, cpu %.3f s\n",
	       argv[1], csize, nth, chunk, nfiles,
	       (unsigned long long)ncl_total, (unsigned long long)in_total,
	       (unsigned long long)out_total, now() - t0, cpu() - c0);
	return 0;
}
