/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the packer's spill (libimage/pack/spill.c, issue 29): what it
 * keeps in memory does not grow with the names spilled (a unit count,
 * not a timing); of two records of one name the later wins, a
 * tombstone hides the earlier ones, from both the search and the
 * directory read back at finish. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "tap.h"
#include "libimage/pack/packer.h"

/* Spill name in directory dir, its size marking which record it is. */
static int put(struct pack_spill *s, uint32_t dir, const char *name,
	       uint64_t size)
{
	struct pack_srec h;

	memset(&h, 0, sizeof(h));
	h.h = pack_spill_hash(dir, name, strlen(name));
	h.dir = dir;
	h.nlen = (uint16_t)strlen(name);
	h.type = 0;	/* R4_ENT_REG */
	h.size = size;
	return pack_spill_put(s, &h, NULL, 0, name, strlen(name), NULL, 0,
			      NULL);
}

/* 400,000 names in 400 directories, a directory after the other, in
 * runs of 1 MiB: the indexes the spill keeps stay under 64 KiB (the
 * 32-bit fingerprints of every name were more than 1.5 MiB). */
static void test_bounded(void)
{
	struct pack_spill *s;
	char name[32];
	int rc = pack_spill_new(&s, 1u << 20);
	size_t most = 0;

	for (uint32_t i = 0; !rc && i < 400000; i++) {
		snprintf(name, sizeof(name), "f%07u", i);
		rc = put(s, 1 + i / 1000, name, 0);
		if (pack_spill_index_bytes(s) > most)
			most = pack_spill_index_bytes(s);
	}
	is_int(rc, 0, "bounded: 400,000 names spilled");
	ok(most < (64u << 10), "bounded: the indexes peak at %zu bytes", most);
	is_int(pack_spill_seal(s), 0, "bounded: sealed");
	pack_spill_free(s);
}

/* The sizes of dir's live records read back, in order, into out. */
static int dir_sizes(struct pack_spill *s, uint32_t dir, char *out,
		     size_t cap)
{
	uint8_t *buf = NULL;
	size_t bcap = 0, len = 0, o = 0;
	int rc = pack_spill_dir(s, dir, &buf, &bcap, &len);

	out[0] = '\0';
	for (size_t at = 0; !rc && at < len;) {
		const struct pack_srec *h = (const void *)(buf + at);

		o += (size_t)snprintf(out + o, cap - o, "%s%.*s=%u",
				      o ? " " : "", (int)h->nlen,
				      pack_srec_name(h), (unsigned)h->size);
		at += h->len;
	}
	free(buf);
	return rc;
}

/* A, B and C in directory 7, run after run (a run every 64 records of
 * filler in directory 9): A twice, B then a tombstone of B, C once. */
static void test_latest(void)
{
	struct pack_spill *s;
	const struct pack_srec *r;
	char got[256], f[32];
	int rc = pack_spill_new(&s, 4096);

	rc = rc ? rc : put(s, 7, "A", 1);
	rc = rc ? rc : put(s, 7, "B", 2);
	for (int i = 0; !rc && i < 200; i++) {
		snprintf(f, sizeof(f), "x%03d", i);
		rc = put(s, 9, f, 0);
	}
	rc = rc ? rc : put(s, 7, "A", 3);
	rc = rc ? rc : put(s, 7, "C", 4);
	is_int(rc, 0, "latest: spilled");
	is_int(pack_spill_find(s, 7, pack_spill_hash(7, "A", 1), "A", 1, &r),
	       1, "latest: A found");
	is_int(r ? (int)r->size : -1, 3, "latest: the later A");
	is_int(pack_spill_gone(s, 7, "B", 1), 0, "latest: B's tombstone");
	is_int(pack_spill_find(s, 7, pack_spill_hash(7, "B", 1), "B", 1, &r),
	       0, "latest: B is gone");
	is_int(pack_spill_find(s, 8, pack_spill_hash(8, "A", 1), "A", 1, &r),
	       0, "latest: no A in another directory");
	is_int(pack_spill_seal(s), 0, "latest: sealed");
	is_int(dir_sizes(s, 7, got, sizeof(got)), 0, "latest: read back");
	/* runs in order of arrival, each sorted by name hash */
	ok(strstr(got, "A=3") && strstr(got, "C=4") && !strstr(got, "A=1") &&
	   !strstr(got, "B="), "latest: the live names: %s", got);
	pack_spill_free(s);
}

int main(void)
{
	test_bounded();
	test_latest();
	return tap_done();
}
