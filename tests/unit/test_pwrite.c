/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: r4_pwrite (libimage/obj/pwrite.c, pwext.c). Seeded random
 * writes and truncates at random offsets and lengths into a few files
 * (extents, a tail file that grows into extents, an empty one, a sparse
 * one) against an in-memory mirror, read back with r4_read after every
 * change and whole at each commit and after reopening; then
 * r4_check and fsck.reiser4 --check; the same on a volume whose new
 * files are compressed (ccreg40, lzo1, conv, 64K: mkfs's profile). And
 * the cost: a write into an extent body takes blocks for the bytes
 * written, not for the file; one into a compressed file, blocks for the
 * clusters it touches. The seed is R4_SEED when set (printed), else
 * fixed. */
#include "config.h"
#include <errno.h>
#include <sys/stat.h>
#include "tap.h"
#include "edit_util.h"
#include "r4/read.h"
#include "libimage/obj/obj.h"
#include "format/plugin.h"

#define NFILES 4
#define CAP (6u << 20)		/* the largest mirrored file */
#define ROUNDS 5
#define OPS 80			/* changes per round (one transaction) */

static struct r4_vol *V;
static struct r4_txn *T;
static struct r4_error E;
static const char *IMG = "v.img";
static int CC;			/* the volume makes ccreg40 files */
static const char *NAME[NFILES] = { "/big", "/small", "/empty", "/holes" };
static uint8_t *M[NFILES];	/* the mirrors */
static uint64_t SZ[NFILES];
static uint8_t *RB, *WB;	/* read-back and write buffers */
static unsigned long long rnd_state;

static uint64_t rnd(uint64_t n)
{
	rnd_state = rnd_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return n ? (rnd_state >> 17) % n : 0;
}

static void begin(void)
{
	int rc;

	memset(&E, 0, sizeof(E));
	tap_require(eu_open(IMG, &V) == 0, "cannot open %s", IMG);
	rc = r4_txn_begin(V, &T, &E);
	tap_require(rc == 0, "r4_txn_begin: %d %s", rc, E.msg);
}

static int commit(void)
{
	int rc = r4_txn_commit(T, &E);

	if (rc)
		printf("# commit: %s\n", E.msg);
	T = NULL;
	eu_close(V);
	return rc;
}

/* Bytes [off, off + len) of file i read back as the mirror has them. */
static int same(int i, uint64_t off, uint64_t len)
{
	struct r4_objref ref;
	struct r4_stat st;
	size_t got = 0;
	int rc;

	if (off > SZ[i])
		off = SZ[i];
	if (len > SZ[i] - off)
		len = SZ[i] - off;
	rc = r4_lookup(V, NAME[i], &ref, &E);
	if (!rc)
		rc = r4_stat(V, &ref, &st, &E);
	if (!rc && st.size != SZ[i]) {
		printf("# %s: size %llu, expected %llu\n", NAME[i],
		       (unsigned long long)st.size, (unsigned long long)SZ[i]);
		return 0;
	}
	if (!rc && len)
		rc = r4_read(V, &ref, off, RB, (size_t)len, &got, &E);
	if (rc || got != len || memcmp(RB, M[i] + off, (size_t)len)) {
		printf("# %s: bytes %llu+%llu differ (rc %d %s, got %zu)\n",
		       NAME[i], (unsigned long long)off,
		       (unsigned long long)len, rc, E.msg, got);
		return 0;
	}
	return 1;
}

static int all_same(void)
{
	int good = 1;

	for (int i = 0; i < NFILES; i++)
		good &= same(i, 0, SZ[i]);
	return good;
}

/* One random write or truncate; 1 when it went and reads back right. */
static int one_op(void)
{
	int i = (int)rnd(NFILES), kind = (int)rnd(20), rc;
	uint64_t off, len;

	if (kind == 0) {	/* truncate */
		len = rnd(SZ[i] + 300000);
		len = len > CAP ? CAP : len;
		rc = r4_truncate(T, NAME[i], len, &E);
		if (len > SZ[i])
			memset(M[i] + SZ[i], 0, (size_t)(len - SZ[i]));
		SZ[i] = len;
		return rc == 0 && same(i, len > 8192 ? len - 8192 : 0, 16384);
	}
	off = kind < 14 ? rnd(SZ[i] + 1) : kind < 18 ? SZ[i] + rnd(300000) :
							rnd(CAP);
	len = 1 + (kind % 3 == 0 ? rnd(200000) : rnd(20000));
	if (off + len > CAP)
		off = CAP - len;
	for (uint64_t k = 0; k < len; k++)
		WB[k] = (uint8_t)rnd(256);
	rc = r4_pwrite(T, NAME[i], off, WB, (size_t)len, &E);
	if (rc) {
		printf("# pwrite %s %llu+%llu: %d %s\n", NAME[i],
		       (unsigned long long)off, (unsigned long long)len, rc,
		       E.msg);
		return 0;
	}
	if (off > SZ[i])
		memset(M[i] + SZ[i], 0, (size_t)(off - SZ[i]));
	memcpy(M[i] + off, WB, (size_t)len);
	if (off + len > SZ[i])
		SZ[i] = off + len;
	return same(i, off > 4096 ? off - 4096 : 0, len + 8192);
}

static void setup(void)
{
	struct eu_data d = { 1u << 20, 0, 7, { 0 } };
	struct r4_attr a;
	uint64_t off;
	const void *b;
	size_t len;

	eu_attr(&a, S_IFREG | 0644);
	for (int i = 0; i < NFILES; i++)
		if (!M[i])
			M[i] = calloc(1, CAP);
		else
			memset(M[i], 0, CAP);
	if (!RB)
		RB = malloc(CAP);
	if (!WB)
		WB = malloc(CAP);
	tap_require(M[NFILES - 1] && RB && WB, "out of memory");
	tap_require(eu_mkfs(IMG, 128, CC ? "create=ccreg40" : "") == 0,
		    "mkfs failed");
	begin();
	tap_require(!r4_create(T, "/big", &a, d.size, eu_data_fn, &d, &E),
		    "create /big: %s", E.msg);
	d = (struct eu_data){ 100, 0, 9, { 0 } };
	tap_require(!r4_create(T, "/small", &a, d.size, eu_data_fn, &d, &E),
		    "create /small: %s", E.msg);
	tap_require(!r4_create(T, "/empty", &a, 0, NULL, NULL, &E) &&
		    !r4_create(T, "/holes", &a, 0, NULL, NULL, &E) &&
		    !r4_truncate(T, "/holes", 3u << 20, &E),
		    "create: %s", E.msg);
	d = (struct eu_data){ 1u << 20, 0, 7, { 0 } };
	while (eu_data_fn(&d, &off, &b, &len, NULL) > 0)
		memcpy(M[0] + off, b, len);
	d = (struct eu_data){ 100, 0, 9, { 0 } };
	while (eu_data_fn(&d, &off, &b, &len, NULL) > 0)
		memcpy(M[1] + off, b, len);
	SZ[0] = 1u << 20;
	SZ[1] = 100;
	SZ[2] = 0;
	SZ[3] = 3u << 20;
	tap_require(commit() == 0, "set-up commit failed");
}

/* The file plugin of path, -1 on an error. */
static int plugin_of(const char *path)
{
	struct r4_objref ref;
	struct obj_sd sd;
	int rc = r4_lookup(V, path, &ref, &E), p;

	if (rc || obj_sd_get(V, &ref, &sd, &E))
		return -1;
	p = sd.plugin;
	obj_sd_put(&sd);
	return p;
}

/* ROUNDS transactions of OPS random changes: 2 checks a round. */
static void workload(void)
{
	for (int r = 0; r < ROUNDS; r++) {
		int good = 1, n = 0;

		begin();
		for (; n < OPS && good; n++)
			good = one_op();
		ok(good, "round %d: %d writes and truncates read back as the "
		   "mirror", r, n);
		good &= all_same();
		ok(commit() == 0 && good, "round %d: every file whole as the "
		   "mirror, committed", r);
	}
	tap_require(eu_open(IMG, &V) == 0, "reopen");
	ok(all_same(), "after reopening: every file as the mirror");
	if (CC)
		ok(plugin_of("/big") == FMT_OBJ_CCREG40 &&
		   plugin_of("/holes") == FMT_OBJ_CCREG40,
		   "the files are still compressed (ccreg40)");
	eu_close(V);
	ok(eu_check(IMG), "r4_check is clean");
	if (eu_have_fsck())
		ok(eu_fsck(IMG), "fsck.reiser4 --check says consistent");
	else
		tap_skip(1, "fsck.reiser4 not installed");
}

/* Blocks taken by one r4_pwrite of len bytes at off into path. */
static uint64_t cost(const char *path, uint64_t off, size_t len)
{
	uint64_t before = r4_txn_blocks_free(T);

	memset(WB, 0x5a, len);
	if (r4_pwrite(T, path, off, WB, len, &E)) {
		printf("# pwrite %s: %s\n", path, E.msg);
		return UINT64_MAX;
	}
	return before - r4_txn_blocks_free(T);
}

static int count_tails(void *ctx, const struct r4_blkmap *m)
{
	*(int *)ctx += m->kind == R4_BLK_TAIL;
	return 0;
}

/* A tail file written past the tail policy's four blocks becomes
 * extents (the whole body rewritten, as the kernel converts). */
static void grow_tail(void)
{
	struct r4_objref ref;
	struct r4_attr a;
	int tails = 0, rc;

	eu_attr(&a, S_IFREG | 0644);
	begin();
	memset(WB, 'x', 20000);
	rc = r4_create(T, "/t", &a, 0, NULL, NULL, &E);
	if (!rc)
		rc = r4_pwrite(T, "/t", 0, WB, 100, &E);
	if (!rc)
		rc = r4_lookup(V, "/t", &ref, &E);
	if (!rc)
		rc = r4_file_blocks(V, &ref, count_tails, &tails, &E);
	ok(!rc && tails == 1, "100 bytes are a tail item (%d)", tails);
	tails = 0;
	if (!rc)
		rc = r4_pwrite(T, "/t", 100, WB, 19900, &E);
	if (!rc)
		rc = r4_file_blocks(V, &ref, count_tails, &tails, &E);
	ok(!rc && tails == 0, "grown to 20000 bytes: extents only (%d tail "
	   "items)", tails);
	/* an empty file (no body: the rewrite path) written far out:
	 * the hole takes no block, so no ENOSPC on a 128 MiB volume */
	rc = r4_create(T, "/far", &a, 0, NULL, NULL, &E);
	if (!rc)
		rc = r4_pwrite(T, "/far", 1ull << 30, "far", 3, &E);
	ok(rc == 0, "3 bytes at 1 GiB into an empty file (%d %s)", rc, E.msg);
	if (!rc)
		rc = r4_lookup(V, "/far", &ref, &E);
	{
		struct r4_stat st;
		size_t got = 0;
		char b[8] = "xxxxxxx";

		if (!rc)
			rc = r4_stat(V, &ref, &st, &E);
		if (!rc)
			rc = r4_read(V, &ref, (1ull << 30) - 4, b, 7, &got, &E);
		ok(!rc && st.size == (1ull << 30) + 3 && got == 7 &&
		   !memcmp(b, "\0\0\0\0far", 7) && st.bytes == 4096,
		   "it reads back: zeros, then the bytes; one block used");
	}
	ok(commit() == 0, "committed");
}

static void costs(void)
{
	struct eu_data d = { 8u << 20, 0, 3, { 0 } };
	struct r4_attr a;
	struct r4_objref ref;
	struct r4_stat st0, st1;
	uint64_t c;

	eu_attr(&a, S_IFREG | 0644);
	begin();
	tap_require(!r4_create(T, "/eight", &a, d.size, eu_data_fn, &d, &E),
		    "create /eight: %s", E.msg);
	tap_require(commit() == 0, "commit /eight");
	begin();
	c = cost("/eight", 3000000, 1);
	ok(c <= 8, "1 byte into the middle of an 8 MiB file takes %llu "
	   "blocks (at most 8)", (unsigned long long)c);
	c = cost("/eight", 3000000, 100);
	ok(c == 0, "writing that block again in the same transaction takes "
	   "%llu blocks", (unsigned long long)c);
	c = cost("/eight", 8u << 20, 65536);
	ok(c <= 16 + 4, "64 KiB appended takes %llu blocks (16 + nodes)",
	   (unsigned long long)c);
	tap_require(!r4_lookup(V, "/eight", &ref, &E) &&
		    !r4_stat(V, &ref, &st0, &E), "stat /eight");
	c = cost("/eight", 100u << 20, 10);
	tap_require(!r4_stat(V, &ref, &st1, &E), "stat /eight");
	ok(c <= 8 && st1.bytes == st0.bytes + 4096 &&
	   st1.size == (100u << 20) + 10, "10 bytes 92 MiB past the end take "
	   "%llu blocks and one block of bytes (a hole between)",
	   (unsigned long long)c);
	ok(commit() == 0, "committed");
	ok(eu_check(IMG), "r4_check is clean after the cost writes");
	if (eu_have_fsck())
		ok(eu_fsck(IMG), "fsck.reiser4 --check says consistent");
	else
		tap_skip(1, "fsck.reiser4 not installed");
}

/* A write into a big compressed file encodes the clusters it touches
 * again, not the file. */
static void cc_costs(void)
{
	struct eu_data d = { 8u << 20, 0, 3, { 0 } };
	struct r4_attr a;
	uint64_t c;

	eu_attr(&a, S_IFREG | 0644);
	begin();
	tap_require(!r4_create(T, "/eight", &a, d.size, eu_data_fn, &d, &E),
		    "create /eight: %s", E.msg);
	tap_require(commit() == 0, "commit /eight");
	begin();
	c = cost("/eight", 3000000, 4096);
	ok(plugin_of("/eight") == FMT_OBJ_CCREG40 && c <= 16 + 8,
	   "4 KiB into the middle of an 8 MiB compressed file take %llu "
	   "blocks (one 64K cluster and nodes: at most 24)",
	   (unsigned long long)c);
	c = cost("/eight", (8u << 20) + 65536, 10);
	ok(c <= 16 + 8, "10 bytes one cluster past its end take %llu blocks "
	   "(a hole between)", (unsigned long long)c);
	tap_require(!r4_create(T, "/late", &a, 0, NULL, NULL, &E),
		    "create /late: %s", E.msg);
	ok(cost("/late", 200000, 5) != UINT64_MAX, "5 bytes at 200000 into "
	   "an empty compressed file");
	ok(commit() == 0, "committed");
	ok(eu_check(IMG), "r4_check is clean after the cost writes (no "
	   "leading hole)");
	if (eu_have_fsck())
		ok(eu_fsck(IMG), "fsck.reiser4 --check says consistent");
	else
		tap_skip(1, "fsck.reiser4 not installed");
}

int main(void)
{
	const char *seed = getenv("R4_SEED");

	plan(2 * (ROUNDS * 2 + 3) + 1 + 7 + 5 + 6);
	rnd_state = seed ? strtoull(seed, NULL, 0) : 20261206;
	printf("# seed %llu\n", rnd_state);
	eu_init("test_pwrite");
	setup();
	workload();
	costs();
	grow_tail();
	/* the same on a volume of compressed files */
	CC = 1;
	IMG = "c.img";
	setup();
	workload();
	cc_costs();
	eu_fini();
	for (int i = 0; i < NFILES; i++)
		free(M[i]);
	free(RB);
	free(WB);
	return tap_done();
}
