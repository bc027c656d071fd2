/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The codec floor of a compressed build (issue 29, goal 2): the bytes of
 * every regular file under DIR, cut into clusters as a ccreg40 file is
 * (cluster k holds bytes [k * C, (k + 1) * C) of its file; the last one
 * is short), each cluster compressed once with stock liblzo2, zlib or
 * libzstd at the parameters of r4kit's plugins (libimage/util/compress.c,
 * doc/compress.md §3.3) on THREADS threads, and nothing else: no image,
 * no tree, no file reads while timed (the files are read into memory
 * first). It prints the wall seconds of the compression alone, the CPU
 * seconds of the process and the bytes in and out, so that
 * bench/codec-floor.sh can divide r4pack's time by it.
 *
 *   codec-floor lzo1|gzip1|zstd1 CLUSTER_BYTES THREADS DIR
 *
 * Built by bench/codec-floor.sh: cc -O2 codec-floor.c -llzo2 -lz -lzstd
 * -lpthread. Not part of r4kit: a yardstick. */
#define _GNU_SOURCE
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
#include <zlib.h>
#include <zstd.h>

enum algo { LZO1, GZIP1, ZSTD1 };

struct cl {			/* one cluster: where its bytes are */
	const uint8_t *p;
	size_t len;
};

static struct cl *cls;
static size_t ncl, capcl;
static size_t csize;
static enum algo algo;
static atomic_size_t next;
static atomic_ullong out_total;

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "codec-floor: out of memory\n");
		exit(2);
	}
	return p;
}

/* Read one file whole and cut it into clusters. */
static int add_file(const char *path, const struct stat *st, int flag,
		    struct FTW *f)
{
	uint8_t *buf;
	FILE *fp;
	size_t n;

	(void)f;
	if (flag != FTW_F || !S_ISREG(st->st_mode) || !st->st_size)
		return 0;
	fp = fopen(path, "rb");
	if (!fp)
		return 0;
	buf = xmalloc((size_t)st->st_size);
	n = fread(buf, 1, (size_t)st->st_size, fp);
	fclose(fp);
	for (size_t off = 0; off < n; off += csize) {
		if (ncl == capcl) {
			capcl = capcl ? capcl * 2 : 4096;
			cls = realloc(cls, capcl * sizeof(*cls));
			if (!cls) {
				fprintf(stderr, "codec-floor: out of memory\n");
				exit(2);
			}
		}
		cls[ncl].p = buf + off;
		cls[ncl++].len = n - off < csize ? n - off : csize;
	}
	return 0;
}

static void *worker(void *arg)
{
	size_t cap = csize + csize / 16 + 4096;
	uint8_t *dst = xmalloc(cap);
	void *wrk = xmalloc(LZO1X_1_MEM_COMPRESS);
	ZSTD_CCtx *zc = ZSTD_createCCtx();
	unsigned long long out = 0;
	z_stream z;
	size_t i;

	(void)arg;
	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, 1, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY) !=
	    Z_OK || !zc) {
		fprintf(stderr, "codec-floor: codec setup failed\n");
		exit(2);
	}
	while ((i = atomic_fetch_add(&next, 1)) < ncl) {
		const struct cl *c = &cls[i];

		if (algo == LZO1) {
			lzo_uint n = cap;

			lzo1x_1_compress(c->p, c->len, dst, &n, wrk);
			out += n;
		} else if (algo == GZIP1) {
			deflateReset(&z);
			z.next_in = (Bytef *)(uintptr_t)c->p;
			z.avail_in = (uInt)c->len;
			z.next_out = dst;
			z.avail_out = (uInt)cap;
			deflate(&z, Z_FINISH);
			out += cap - z.avail_out;
		} else {
			size_t r = ZSTD_compressCCtx(zc, dst, cap, c->p,
						     c->len, 3);

			out += ZSTD_isError(r) ? c->len : r;
		}
	}
	atomic_fetch_add(&out_total, out);
	deflateEnd(&z);
	ZSTD_freeCCtx(zc);
	free(wrk);
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
	unsigned long long in = 0;
	pthread_t *th;
	double t0, c0;
	long nth;

	if (argc != 5) {
		fprintf(stderr, "usage: codec-floor lzo1|gzip1|zstd1 "
			"CLUSTER_BYTES THREADS DIR\n");
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
	for (size_t i = 0; i < ncl; i++)
		in += cls[i].len;
	th = xmalloc(sizeof(*th) * (size_t)nth);
	t0 = now();
	c0 = cpu();
	for (long i = 0; i < nth; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	for (long i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	printf("%s cluster %zu threads %ld: %zu clusters, %llu bytes in, "
	       "%llu out, wall %.3f s, cpu %.3f s\n", argv[1], csize, nth,
	       ncl, in, (unsigned long long)out_total, now() - t0, cpu() - c0);
	return 0;
}
