/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: unit tests of the directory-entry hashes (doc/format.md §3).
 * The vectors of section 3.6 were read back from cde40 units that
 * libreiser4 wrote (all but the kernel rupasov column, which emulates the
 * kernel's integer rules); the entry offsets of section 2.8 come from
 * real volumes too. */
#include <string.h>

#include "tap.h"
#include "format/errors.h"
#include "format/hash.h"
#include "format/plugin.h"

struct vec {
	const char *in;
	uint64_t r5, tea, fnv1, rup_progs, rup_kernel;
};

static const struct vec vecs[] = {
	{ "a", 0x42f2ULL, 0xcc651ba83f18dad5ULL, 0xaf63bd4c8601b7beULL,
	  0x3e5280ULL, 0x3e5280ULL },
	{ "hello", 0x11990232ULL, 0x17f360656f58ad0dULL,
	  0x7b495389bdbdd4c7ULL, 0x4f88180ULL, 0x4f88180ULL },
	{ "0123456789", 0x140c53e4db6cULL, 0x59e566464fd79dfbULL,
	  0xc3f080735df30b0cULL, 0x3ae24c480ULL, 0x3ae24c480ULL },
	{ "abcdefghijk", 0x1bd2b73230f0aULL, 0x9f1ab227fee42e83ULL,
	  0x3ef4388da1c0b903ULL, 0x68680b73380ULL, 0x68680b73380ULL },
	{ "e_name_exceeding_inline", 0x5d4e3fac56451c6ULL,
	  0xbee56e18e3014d9eULL, 0x445c168f691a2b5bULL, 0x9ea19e773c80ULL,
	  0x1aa19e773c80ULL },
	{ ".bashrc", 0x4101fd388ULL, 0x99e0fc58092aa447ULL,
	  0x2ed4f92e2c2ff5e6ULL, 0x801b6dd180ULL, 0x1b6dd180ULL },
};

static void test_vectors(void)
{
	for (size_t i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++) {
		const struct vec *v = &vecs[i];
		size_t n = strlen(v->in);
		uint64_t h = 0;

		is_u64(fmt_hash_r5(v->in, n), v->r5, "r5(\"%s\")", v->in);
		is_u64(fmt_hash_tea(v->in, n), v->tea, "tea(\"%s\")", v->in);
		is_u64(fmt_hash_fnv1(v->in, n), v->fnv1, "fnv1(\"%s\")",
		       v->in);
		is_u64(fmt_hash_rupasov(v->in, n), v->rup_progs,
		       "rupasov progs(\"%s\")", v->in);
		is_u64(fmt_hash_rupasov_kernel(v->in, n), v->rup_kernel,
		       "rupasov kernel(\"%s\")", v->in);
		is_u64(fmt_hash_deg(v->in, n), 0xc0c0c0c010101010ULL,
		       "deg(\"%s\")", v->in);

		/* The same through the id switch. */
		is_int(fmt_hash(FMT_HASH_R5, v->in, n, &h), 0, "fmt_hash r5");
		is_u64(h, v->r5, "fmt_hash r5(\"%s\")", v->in);
		fmt_hash(FMT_HASH_TEA, v->in, n, &h);
		is_u64(h, v->tea, "fmt_hash tea(\"%s\")", v->in);
		fmt_hash(FMT_HASH_FNV1, v->in, n, &h);
		is_u64(h, v->fnv1, "fmt_hash fnv1(\"%s\")", v->in);
		fmt_hash(FMT_HASH_RUPASOV, v->in, n, &h);
		is_u64(h, v->rup_progs, "fmt_hash rupasov defaults to progs "
		       "(\"%s\")", v->in);
		fmt_hash(FMT_HASH_RUPASOV | FMT_HASH_KERNEL, v->in, n, &h);
		is_u64(h, v->rup_kernel, "fmt_hash rupasov|KERNEL(\"%s\")",
		       v->in);
		fmt_hash(FMT_HASH_DEG, v->in, n, &h);
		is_u64(h, FMT_HASH_DEG_VALUE, "fmt_hash deg(\"%s\")", v->in);
	}
}

/* Offsets of long-name entry keys seen on disk (section 2.8): the hash
 * of the bytes from character 15 on. */
static void test_entry_offsets(void)
{
	is_u64(fmt_hash_r5("pqrstuvwx", 9), 0x0000043f6322bc1dULL,
	       "r5 of the tail of abcdefghijklmnopqrstuvwx");
	is_u64(fmt_hash_r5("e_name_exceeding_inline", 23),
	       0x05d4e3fac56451c6ULL,
	       "r5 of the tail of a_very_long_file_name_exceeding_inline");
}

/* Where the flavours may differ and where they must not. */
static void test_kernel_flavour(void)
{
	static const char nul[] = "ab\0cd";
	uint64_t h = 0;

	/* Kernel r5 and fnv1 stop at a NUL; progs hashes the length. */
	fmt_hash(FMT_HASH_R5 | FMT_HASH_KERNEL, nul, 5, &h);
	is_u64(h, fmt_hash_r5("ab", 2), "kernel r5 stops at NUL");
	fmt_hash(FMT_HASH_R5, nul, 5, &h);
	ok(h != fmt_hash_r5("ab", 2), "progs r5 hashes past NUL");
	fmt_hash(FMT_HASH_FNV1 | FMT_HASH_KERNEL, nul, 5, &h);
	is_u64(h, fmt_hash_fnv1("ab", 2), "kernel fnv1 stops at NUL");
	fmt_hash(FMT_HASH_TEA | FMT_HASH_KERNEL, "hello", 5, &h);
	is_u64(h, fmt_hash_tea("hello", 5), "tea has one flavour");

	/* rupasov agrees for digits-first short inputs, differs for a
	 * first byte below '0' and for 13+ bytes. */
	is_u64(fmt_hash_rupasov("9abc", 4), fmt_hash_rupasov_kernel("9abc", 4),
	       "rupasov flavours agree on 9abc");
	ok(fmt_hash_rupasov("#", 1) == fmt_hash_rupasov_kernel("#", 1),
	   "rupasov flavours agree on a single byte below '0'");
	ok(fmt_hash_rupasov("abcdefghijklm", 13) !=
	   fmt_hash_rupasov_kernel("abcdefghijklm", 13),
	   "rupasov flavours differ at 13 bytes");
	/* Empty input: both read a NUL first byte; progs' unsigned
	 * len - 1 also zeroes the weights of positions 40..255 (values
	 * from libreiser4 and from the kernel function built with -fwrapv). */
	is_u64(fmt_hash_rupasov("", 0), 0x7fffffe800ULL, "rupasov progs \"\"");
	is_u64(fmt_hash_rupasov_kernel("", 0), 0x3e2200ULL,
	       "rupasov kernel \"\"");
	is_u64(fmt_hash_rupasov("#", 1), 0x3e3380ULL, "rupasov progs \"#\"");
}

/* TEA takes its input in 16-byte blocks, then a 0..15-byte tail; every
 * tail length must reach the state (no two lengths of one prefix agree,
 * and the result depends on every byte). */
static void test_tea_tails(void)
{
	char buf[40];
	uint64_t prev = 0;
	int distinct = 1, sensitive = 1;

	memset(buf, 'q', sizeof(buf));
	for (size_t n = 0; n <= sizeof(buf); n++) {
		uint64_t h = fmt_hash_tea(buf, n);

		if (n && h == prev)
			distinct = 0;
		prev = h;
		for (size_t i = 0; i < n; i++) {
			buf[i] = 'r';
			if (fmt_hash_tea(buf, n) == h)
				sensitive = 0;
			buf[i] = 'q';
		}
	}
	ok(distinct, "tea: each length gives a new value");
	ok(sensitive, "tea: every byte of every tail length counts");
}

static void test_ids(void)
{
	uint64_t h = 0x1234;

	is_int(fmt_hash(5, "a", 1, &h), R4_EUNSUPP, "hash id 5 unknown");
	is_u64(h, 0x1234, "output untouched on error");
	is_int(fmt_hash(FMT_HASH_KERNEL | 7, "a", 1, &h), R4_EUNSUPP,
	       "hash id 7|KERNEL unknown");
	ok(!fmt_hash_known(5), "5 not known");
	for (unsigned id = FMT_HASH_RUPASOV; id <= FMT_HASH_DEG; id++) {
		ok(fmt_hash_known(id), "hash %u known", id);
		ok(fmt_hash_known(id | FMT_HASH_KERNEL), "hash %u|KERNEL known",
		   id);
	}
}

int main(void)
{
	test_vectors();
	test_entry_offsets();
	test_kernel_flavour();
	test_tea_tails();
	test_ids();
	return tap_done();
}
