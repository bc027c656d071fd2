/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the tree writer's quick way (tmod_dc_put, libimage/tree/
 * dcache.c): a change to a leaf this writer deferred is made in the
 * leaf's cached list when the general way would only defer the result.
 * An add stream run both ways (tree_mod.general set: never the quick
 * way) must make the same image, byte for byte: files in many
 * directories in a scrambled order (a batch over many leaves, keys
 * between existing items, leaves that split in the middle), tails of
 * several items (neighbours that join), names added again (stat data
 * and tails replaced, directory items changed in place; the
 * directories' stat data patched by their accounts, tree_mod_patch;
 * leaves under half a node changed in place when no neighbour has room
 * for them; leaves that overflow split without level_set, alone or
 * shared with a neighbour, their twigs deferred in place; six
 * directories' files emptied, leaves freed, then new files among them),
 * then checked by r4_check and fsck.reiser4. */
#include "config.h"
#include <sys/stat.h>
#include "tap.h"
#include "edit_util.h"
#include "libimage/obj/edit_int.h"
#include "libimage/obj/write.h"

#define NQ 1200
/* 0 to 9,999 bytes: one to three tail items a file */
#define QSIZE(i, pass) ((((i) * 2654435761u) >> 7) % (pass ? 9000u : 10000u))

static int q_run(const char *img, int general, struct tree_mod_stats *st)
{
	struct r4_error err = { 0, "", 0 };
	struct eu_data d;
	struct r4_txn *t;
	struct r4_vol *v;
	char name[96];
	int rc;

	if (eu_open(img, &v))
		return -1;
	rc = r4_txn_begin(v, &t, &err);
	if (!rc)
		t->mod.general = general;
	for (unsigned pass = 0; !rc && pass < 3; pass++) {
		for (unsigned k = 0; !rc && k < NQ; k += pass ? 5 : 1) {
			unsigned i = (k * 7919u) % NQ;
			struct r4_entry e = { .path = name,
					      .type = R4_ENT_REG,
					      .mode = 0644,
					      .data = eu_data_fn,
					      .data_ctx = &d };

			memset(&d, 0, sizeof(d));
			d.size = e.size = QSIZE(i + pass, pass);
			d.seed = i + pass * 10000;
			snprintf(name, sizeof(name), i % 9 ? "q%02u/f%05u" :
				 "q%02u/a_longer_name_for_the_entry_items_%05u",
				 i % 23, i);
			rc = r4_txn_add_entry(t, &e, &err);
		}
	}
	/* the files of six directories made empty (their tails removed:
	 * leaves freed, twigs left under half a node), then new files
	 * among them */
	for (unsigned k = 0; !rc && k < 2 * NQ; k++) {
		unsigned i = (k * 7919u) % NQ;
		struct r4_entry e = { .path = name, .type = R4_ENT_REG,
				      .mode = 0644, .data = eu_data_fn,
				      .data_ctx = &d };

		if (i % 23 < 5 || i % 23 > 10)
			continue;
		memset(&d, 0, sizeof(d));
		d.size = e.size = k < NQ ? 0 : QSIZE(i + 7, 0);
		d.seed = i + 50000;
		snprintf(name, sizeof(name), k < NQ ? (i % 9 ? "q%02u/f%05u" :
			 "q%02u/a_longer_name_for_the_entry_items_%05u") :
			 "q%02u/g%05u", i % 23, i);
		rc = r4_txn_add_entry(t, &e, &err);
	}
	*st = t->mod.st;
	if (rc) {
		printf("# %s: %s\n", name, err.msg);
		r4_txn_abort(t);
	} else if ((rc = r4_txn_commit(t, &err))) {
		printf("# commit: %s\n", err.msg);
	}
	eu_close(v);
	return rc;
}

int main(void)
{
	struct tree_mod_stats sg, sq;

	plan(9);
	eu_init("test_dcput");
	EU_SETUP("rm -f '%s/g.img' '%s/q.img'", eu_dir, eu_dir);
	tap_require(eu_mkfs("g.img", 96, "") == 0, "r4_mkfs");
	EU_SETUP("cp '%s/g.img' '%s/q.img'", eu_dir, eu_dir);
	ok(q_run("g.img", 1, &sg) == 0, "the general way only");
	ok(q_run("q.img", 0, &sq) == 0, "with the quick way");
	ok(!sg.quick && sq.quick > NQ && sq.splits > 100,
	   "%llu changes the quick way (%llu splits between them)",
	   (unsigned long long)sq.quick, (unsigned long long)sq.splits);
	ok(!sg.quick_small && sq.quick_small >= 10,
	   "%llu of them into a leaf under half a node whose neighbours "
	   "have no room for it", (unsigned long long)sq.quick_small);
	ok(!sg.quick_split && sq.quick_split >= 100 &&
	   sq.quick_shared >= 10 && sq.quick_twig >= 100,
	   "%llu leaves split the quick way (%llu shared with a neighbour; "
	   "%llu twigs deferred)", (unsigned long long)sq.quick_split,
	   (unsigned long long)sq.quick_shared,
	   (unsigned long long)sq.quick_twig);
	ok(!sg.patched && sq.patched >= 10,
	   "%llu of them directories' stat data patched (tree_mod_patch)",
	   (unsigned long long)sq.patched);
	ok(eu_sh("cmp -s '%s/g.img' '%s/q.img'", eu_dir, eu_dir) == 0,
	   "the two images are the same, byte for byte");
	ok(eu_check("q.img"), "r4_check is clean");
	if (eu_have_fsck())
		ok(eu_fsck("q.img"), "fsck.reiser4 says consistent");
	else
		tap_skip(1, "fsck.reiser4 not installed");
	eu_fini();
	return tap_done();
}
