/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: a directory's stat data inside one transaction while
 * obj_dir_account patches it (tree_mod_patch, libimage/tree/dcache.c):
 * the account of a directory it put lately copies the new bytes over the
 * cached item instead of reading and putting it again. Whoever reads the
 * directory's stat data before the commit (r4_stat through the volume,
 * as r4mount and r4debugfs -w do) must see every entry counted so far,
 * and another writer of it in between (r4pack add's attributes of an
 * existing directory, r4_setattr, rename, unlink, mkdir) must neither be
 * undone by the next patch nor lose a count; after the commit the
 * volume reads the same and checks clean. tree_mod_patch itself
 * refuses where the general way could do more than copy bytes (a leaf
 * under half full: a neighbour may take it) and where the item is not
 * the bytes the caller put. */
#include "config.h"
#include <sys/stat.h>
#include "tap.h"
#include "edit_util.h"
#include "libimage/obj/obj.h"
#include "libimage/obj/write.h"
#include "libimage/tree/modify.h"
#include "format/item.h"
#include "format/plugin.h"

static int add(struct r4_txn *t, const char *path, enum r4_entry_type type,
	       uint32_t mode, uint32_t uid)
{
	struct r4_error err = { 0, "", 0 };
	struct r4_entry e = { .path = path, .type = type, .mode = mode,
			      .uid = uid, .atime = EU_TIME, .mtime = EU_TIME,
			      .ctime = EU_TIME };
	int rc = r4_txn_add_entry(t, &e, &err);

	if (rc)
		printf("# add %s: %s\n", path, err.msg);
	return rc;
}

static int add_files(struct r4_txn *t, const char *fmt, unsigned n)
{
	char name[64];
	int rc = 0;

	for (unsigned i = 0; !rc && i < n; i++) {
		snprintf(name, sizeof(name), fmt, i);
		rc = add(t, name, R4_ENT_REG, 0644, 0);
	}
	return rc;
}

/* /q as the volume reads it now: its size, nlink, mode, uid and mtime
 * must be these. */
static int q_is(struct r4_vol *v, uint64_t size, uint32_t nlink,
		uint32_t mode, uint32_t uid, int64_t mtime, const char *when)
{
	struct r4_error err = { 0, "", 0 };
	struct r4_objref ref;
	struct r4_stat st;

	if (r4_lookup(v, "/q", &ref, &err) || r4_stat(v, &ref, &st, &err)) {
		printf("# %s: %s\n", when, err.msg);
		return 0;
	}
	if (st.size == size && st.nlink == nlink && st.uid == uid &&
	    (st.mode & 07777) == mode && st.mtime == mtime &&
	    st.ctime == mtime)
		return 1;
	printf("# %s: size %llu nlink %u mode %o uid %u mtime %lld ctime "
	       "%lld; expected %llu %u %o %u %lld\n", when,
	       (unsigned long long)st.size, st.nlink, st.mode & 07777, st.uid,
	       (long long)st.mtime, (long long)st.ctime,
	       (unsigned long long)size, nlink, mode, uid, (long long)mtime);
	return 0;
}

/* tree_mod_patch of the root's stat data in transaction t: its size
 * one more (old: the item's bytes, or bytes differing in one); 1, 0 or
 * < 0 as it answers, 2 when the item does not read as it put it. */
static int patch_root(struct r4_txn *t, int wrong_old)
{
	struct r4_error err = { 0, "", 0 };
	struct r4_objref root;
	struct tree_spot spot;
	struct obj_sd sd;
	struct fmt_key k;
	uint8_t nb[512], ob[512];
	int rc = r4_root(t->vol, &root, &err);

	if (!rc)
		rc = obj_sd_get_txn(t, &root, &sd, &err);
	if (rc)
		return rc;
	memset(&spot, 0, sizeof(spot));
	obj_sd_key(t->vol, &root, &k);
	sd.st.size++;
	if (sd.len > sizeof(ob) || fmt_stat_encode(&sd.st, nb, sd.len)) {
		obj_sd_put(&sd);
		return -1;
	}
	memcpy(ob, sd.raw, sd.len);
	ob[sd.len - 1] ^= (uint8_t)wrong_old;
	rc = tree_mod_patch(&t->mod, &spot, &k, FMT_ITEM_STAT40, ob, nb,
			    sd.len, &err);
	obj_sd_put(&sd);
	if (rc != 1 || obj_sd_get_txn(t, &root, &sd, &err))
		return rc;
	rc = memcmp(sd.raw, nb, sd.len) ? 2 : 1;
	obj_sd_put(&sd);
	return rc;
}

/* A fresh volume's only leaf under half full refuses; filled past
 * half by names in the root, it takes the patch, but not for bytes
 * other than the item's. */
static void patch_cases(void)
{
	struct r4_error err = { 0, "", 0 };
	struct r4_txn *t;
	struct r4_vol *v;
	char name[96];
	int rc = 0, r0, r1, r2;

	tap_require(eu_mkfs("p.img", 32, "") == 0, "r4_mkfs");
	tap_require(eu_open("p.img", &v) == 0, "open");
	tap_require(r4_txn_begin(v, &t, &err) == 0, "r4_txn_begin: %s",
		    err.msg);
	rc = add(t, "a", R4_ENT_DIR, 0755, 0);
	r0 = rc ? rc : patch_root(t, 0);
	for (unsigned i = 0; !rc && i < 40; i++) {
		snprintf(name, sizeof(name), "a-name-of-some-length-%04u", i);
		rc = add(t, name, R4_ENT_REG, 0644, 0);
	}
	r1 = rc ? rc : patch_root(t, 1);
	r2 = rc ? rc : patch_root(t, 0);
	ok(r0 == 0, "a leaf under half full: refused (%d)", r0);
	ok(r1 == 0, "bytes other than the item's: refused (%d)", r1);
	ok(r2 == 1, "a leaf at least half full: patched (%d)", r2);
	r4_txn_abort(t);
	eu_close(v);
}

int main(void)
{
	struct r4_error err = { 0, "", 0 };
	const int64_t now = EU_TIME + 1000;
	struct r4_attr a;
	struct r4_txn *t;
	struct r4_vol *v;
	uint64_t p0, p1;

	plan(14);
	eu_init("test_dirsd");
	patch_cases();
	tap_require(eu_mkfs("d.img", 64, "") == 0, "r4_mkfs");
	tap_require(eu_open("d.img", &v) == 0, "open");
	r4_vol_set_clock(v, now);
	tap_require(r4_txn_begin(v, &t, &err) == 0, "r4_txn_begin: %s",
		    err.msg);
	/* 300 names: the leaf of q's stat data is deferred and cached */
	ok(add_files(t, "q/f%03u", 300) == 0 &&
	   q_is(v, 302, 2, 0755, 0, now, "after 300 adds"),
	   "300 adds into q: r4_stat before the commit counts them all");
	p0 = t->mod.st.patched;
	ok(p0 > 200, "the accounts after q's first patched its stat data "
	   "(%llu)", (unsigned long long)p0);
	/* another writer of q's stat data: add's attributes of an existing
	 * directory (read and put the general way; the lookup of q writes
	 * the leaf out, so the next account reads again whatever the
	 * slot holds: test 9's r4_setattr is the one that reaches the
	 * comparison of the slot's bytes) */
	ok(add(t, "q", R4_ENT_DIR, 0700, 7) == 0 &&
	   q_is(v, 302, 2, 0700, 7, EU_TIME, "after q's attributes"),
	   "q's attributes from an add of the directory itself");
	ok(add_files(t, "q/g%03u", 20) == 0 &&
	   q_is(v, 322, 2, 0700, 7, now, "after 20 more adds"),
	   "20 adds after it keep q's mode and owner and count on (the "
	   "values, not the slot's comparison)");
	p1 = t->mod.st.patched;
	ok(p1 >= p0 + 10, "patched again once read again (%llu)",
	   (unsigned long long)(p1 - p0));
	eu_attr(&a, 0750);
	a.uid = 9;
	ok(r4_setattr(t, "/q", &a, R4_ATTR_MODE | R4_ATTR_UID, &err) == 0 &&
	   add_files(t, "q/h%03u", 5) == 0 &&
	   q_is(v, 327, 2, 0750, 9, now, "after r4_setattr"),
	   "r4_setattr of q, then 5 adds: both kept");
	ok(r4_unlink(t, "/q/f000", &err) == 0 &&
	   r4_rename(t, "/q/f001", "/q/a-longer-name-now", &err) == 0 &&
	   r4_mkdir(t, "/q/sub", &a, &err) == 0 &&
	   add_files(t, "q/sub/s%03u", 3) == 0 &&
	   add_files(t, "q/k%03u", 2) == 0 &&
	   q_is(v, 329, 3, 0750, 9, now, "after unlink, rename, mkdir"),
	   "unlink, rename and mkdir in q between the adds: %s", err.msg);
	ok(r4_txn_commit(t, &err) == 0, "commit: %s", err.msg);
	eu_close(v);
	tap_require(eu_open("d.img", &v) == 0, "open again");
	ok(q_is(v, 329, 3, 0750, 9, now, "after the commit"),
	   "the committed volume reads the same");
	eu_close(v);
	ok(eu_check("d.img"), "r4_check is clean");
	if (eu_have_fsck())
		ok(eu_fsck("d.img"), "fsck.reiser4 says consistent");
	else
		tap_skip(1, "fsck.reiser4 not installed");
	eu_fini();
	return tap_done();
}
