/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The codec floor of a compressed build (issue 29, goal 2): the bytes of
 * every regular file under DIR, cut into clusters as a ccreg40 file is
 * (cluster k holds bytes [k * C, (k + 1) * C) of its file; the last one
 * is short), each cluster compressed once with stock liblzo2, zlib or
 * libzstd at the parameters of r4kit's plugins (libimage/util/compress.c,
 * doc/compress.md §3.3) on THREADS threads, and nothing else: no image,
 * no tree. Each thread takes the next file and reads it as r4pack does,
 * in chunks of 256 KiB (a whole number of clusters), compressing each
 * chunk's clusters just after reading it, while they are in the cache
 * (reading every file into memory first, 203 MiB, made the codecs read
 * their input out of the cache: a floor above r4pack). It prints the
 * wall seconds of the reads and the compression, the CPU seconds of the
 * process and the bytes in and out, so that bench/codec-floor.sh can
 * divide r4pack's time by it.
 *
 *   codec-floor lzo1|gzip1|zstd1 CLUSTER_BYTES THREADS DIR
 *
 * Built by bench/codec-floor.sh: cc -O2 codec-floor.c -llzo2 -lz -lzstd
 * -lpthread. Not part of r4kit: a yardstick. */
#define _GNU_SOURCE
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

#define CHUNK (256u << 10)	/* r4pack's read of a directory's files */

static char **paths;		/* the regular files, in nftw's order */
static size_t npaths, cappaths;
static size_t csize, chunk;
static enum algo algo;
static atomic_size_t next;
static atomic_ullong in_total, out_total, cl_total;

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "codec-floor: out of memory\n");
		exit(2);
	}
	return p;
}

/* Note one regular file (read later, by a worker). */
static int add_file(const char *path, const struct stat *st, int flag,
		    struct FTW *f)
{
	(void)f;
	if (flag != FTW_F || !S_ISREG(st->st_mode) || !st->st_size)
		return 0;
	if (npaths == cappaths) {
		cappaths = cappaths ? cappaths * 2 : 1024;
		paths = realloc(paths, cappaths * sizeof(*paths));
		if (!paths) {
			fprintf(stderr, "codec-floor: out of memory\n");
			exit(2);
		}
	}
	paths[npaths] = strdup(path);
	if (!paths[npaths++]) {
		fprintf(stderr, "codec-floor: out of memory\n");
		exit(2);
	}
	return 0;
}

struct codec {
	size_t cap;
	uint8_t *dst;
	void *wrk;
	ZSTD_CCtx *zc;
	z_stream z;
};

/* Compress one cluster; the bytes it came to. */
static size_t squeeze(struct codec *k, const uint8_t *p, size_t len)
{
	if (algo == LZO1) {
		lzo_uint n = k->cap;

		lzo1x_1_compress(p, len, k->dst, &n, k->wrk);
		return n;
	}
	if (algo == GZIP1) {
		deflateReset(&k->z);
		k->z.next_in = (Bytef *)(uintptr_t)p;
		k->z.avail_in = (uInt)len;
		k->z.next_out = k->dst;
		k->z.avail_out = (uInt)k->cap;
		deflate(&k->z, Z_FINISH);
		return k->cap - k->z.avail_out;
	} else {
		size_t r = ZSTD_compressCCtx(k->zc, k->dst, k->cap, p, len, 3);

		return ZSTD_isError(r) ? len : r;
	}
}

static void *worker(void *arg)
{
	struct codec k;
	uint8_t *buf = xmalloc(chunk);
	unsigned long long in = 0, out = 0, ncl = 0;
	size_t i;

	(void)arg;
	memset(&k, 0, sizeof(k));
	k.cap = csize + csize / 16 + 4096;
	k.dst = xmalloc(k.cap);
	k.wrk = xmalloc(LZO1X_1_MEM_COMPRESS);
	k.zc = ZSTD_createCCtx();
	if (deflateInit2(&k.z, 1, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY) !=
	    Z_OK || !k.zc) {
		fprintf(stderr, "codec-floor: codec setup failed\n");
		exit(2);
	}
	while ((i = atomic_fetch_add(&next, 1)) < npaths) {
		int fd = open(paths[i], O_RDONLY);
		ssize_t n;

		if (fd < 0)
			continue;
		/* a chunk at a time, its clusters compressed at once */
		while ((n = read(fd, buf, chunk)) > 0) {
			for (size_t off = 0; off < (size_t)n; off += csize) {
				size_t len = (size_t)n - off < csize ?
					     (size_t)n - off : csize;

				out += squeeze(&k, buf + off, len);
				ncl++;
			}
			in += (size_t)n;
		}
		close(fd);
	}
	atomic_fetch_add(&in_total, in);
	atomic_fetch_add(&out_total, out);
	atomic_fetch_add(&cl_total, ncl);
	deflateEnd(&k.z);
	ZSTD_freeCCtx(k.zc);
	free(k.wrk);
	free(k.dst);
	free(buf);
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
	/* a whole number of clusters, 256 KiB at least */
	chunk = (CHUNK > csize ? CHUNK : csize) / csize * csize;
	th = xmalloc(sizeof(*th) * (size_t)nth);
	t0 = now();
	c0 = cpu();
	for (long i = 0; i < nth; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	for (long i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	printf("%s cluster %zu threads %ld: %llu clusters, %llu bytes in, "
	       "%llu out, wall %.3f s, cpu %.3f s\n", argv[1], csize, nth,
	       (unsigned long long)cl_total, (unsigned long long)in_total,
	       (unsigned long long)out_total, now() - t0, cpu() - c0);
	return 0;
}
