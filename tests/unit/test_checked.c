/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the checked mark of the tree writer's cached items
 * (tree_mod_mark_checked, libimage/tree/path.c). A name's lookup in an
 * add (obj_find_in_txn) verifies the directory item once and marks it,
 * so the add of the name that follows does not verify the same bytes
 * again; an entry's add or removal splices the item from verified bytes
 * and marks what it put (tree_mod_mark_put), which stays sound. The
 * mark must go whenever the item's bytes change otherwise: an item put
 * again by a writer that vouches for nothing, a stat data overwritten
 * in place in its cached leaf (tmod_dc_put); it is refused for bytes
 * other than the item's; an item read from a node carries none. */
#include "config.h"
#include <sys/stat.h>
#include "tap.h"
#include "edit_util.h"
#include "libimage/obj/edit_int.h"
#include "libimage/obj/obj.h"
#include "libimage/obj/write.h"
#include "libimage/tree/modify.h"
#include "format/item.h"
#include "format/key.h"
#include "format/plugin.h"
#include "libimage/vol/volume.h"

#define NC 300

static int add_files(struct r4_txn *t, unsigned n)
{
	struct r4_error err = { 0, "", 0 };
	struct eu_data d;
	char name[64];
	int rc = 0;

	for (unsigned i = 0; !rc && i < n; i++) {
		struct r4_entry e = { .path = name, .type = R4_ENT_REG,
				      .mode = 0644, .data = eu_data_fn,
				      .data_ctx = &d };

		memset(&d, 0, sizeof(d));
		d.size = e.size = i % 50;
		d.seed = i;
		snprintf(name, sizeof(name), "c/f%05u", i);
		rc = r4_txn_add_entry(t, &e, &err);
	}
	if (rc)
		printf("# %s: %s\n", name, err.msg);
	return rc;
}

/* The item at or before name's entry key, as the transaction has it. */
static int peek_name(struct r4_txn *t, const struct obj_dir *d,
		     const char *name, struct tree_peek *pk, uint8_t **buf,
		     size_t *cap)
{
	struct r4_error err = { 0, "", 0 };
	struct fmt_key k;

	if (fmt_key_entry(&k, t->vol->keypol, d->ref.oid, name, strlen(name),
			  (unsigned)d->hash, (unsigned)d->fibre))
		return -1;
	return tree_mod_peek(&t->mod, &k, pk, buf, cap, &err);
}

/* The item at or before name's key holds sound bytes (the cde40
 * reader's verify) and carries the mark. */
static int marked_sound(struct r4_txn *t, const struct obj_dir *d,
			const char *name, uint8_t **buf, size_t *cap)
{
	struct tree_peek pk;

	return !peek_name(t, d, name, &pk, buf, cap) && pk.checked &&
	       !fmt_cde40_verify(*buf, pk.len, t->vol->keypol, NULL);
}

static void dir_items(struct r4_txn *t)
{
	struct r4_error err = { 0, "", 0 };
	struct eu_data dd;
	/* a small directory: its one item takes the name, no split */
	struct r4_entry e = { .path = "e", .type = R4_ENT_DIR,
			      .mode = 0755 };
	struct r4_entry e2 = { .path = "e/g-new", .type = R4_ENT_REG,
			       .mode = 0644, .data = eu_data_fn,
			       .data_ctx = &dd };
	struct r4_objref ref;
	struct tree_peek pk;
	struct obj_dir d;
	uint8_t *buf = NULL, *other;
	size_t cap = 0, len = 0;
	const char *name;

	memset(&dd, 0, sizeof(dd));
	tap_require(!edit_split(t, "/c/f00007", &d, &name, &len, &err),
		    "edit_split: %s", err.msg);
	tap_require(!peek_name(t, &d, name, &pk, &buf, &cap), "peek");
	/* the same bytes put again by a writer that vouches for nothing:
	 * the item marked first (its bytes are the ones peeked) */
	other = malloc(pk.len);
	tap_require(other != NULL, "malloc");
	memcpy(other, buf, pk.len);
	tap_require(tree_mod_mark_checked(&t->mod, &pk, buf) == 1 &&
		    !peek_name(t, &d, name, &pk, &buf, &cap) && pk.checked,
		    "the item marked before it is put again");
	ok(!tree_replace(&t->mod, 1, &pk.key, pk.pid, other, pk.len, &err) &&
	   !peek_name(t, &d, name, &pk, &buf, &cap) && !pk.checked,
	   "an item put again by tree_replace is not marked");
	other[pk.len - 1] ^= 1;
	ok(!tree_mod_mark_checked(&t->mod, &pk, other),
	   "a mark for other bytes than the item's is refused");
	ok(!tree_mod_mark_put(&t->mod, &pk.key, pk.pid, other, pk.len) &&
	   !tree_mod_mark_put(&t->mod, &pk.key, FMT_ITEM_TAIL40, buf,
			      pk.len),
	   "so is a mark of a put for other bytes or another plugin");
	free(other);
	ok(!peek_name(t, &d, name, &pk, &buf, &cap) && !pk.checked,
	   "and the item stays unmarked");
	ok(!obj_find_in_txn(t, &d, name, len, &ref, &err),
	   "the lookup finds the name");
	ok(!peek_name(t, &d, name, &pk, &buf, &cap) && pk.checked,
	   "the lookup marked the item it verified");
	ok(!r4_unlink(t, "/c/f00007", &err), "unlink: %s", err.msg);
	ok(marked_sound(t, &d, name, &buf, &cap),
	   "an entry removed: the item spliced from verified bytes is "
	   "marked (no lookup since), and its bytes verify");
	ok(obj_find_in_txn(t, &d, name, len, &ref, &err) == R4_ENOTFOUND,
	   "the name is gone");
	ok(!r4_txn_add_entry(t, &e, &err) &&
	   !r4_txn_add_entry(t, &e2, &err) &&
	   !edit_split(t, "/e/g-new", &d, &name, &len, &err) &&
	   marked_sound(t, &d, name, &buf, &cap),
	   "a name added: the item it was spliced into is marked, and its "
	   "bytes verify: %s", err.msg);
	free(buf);
}

/* A same-size stat data written over the cached one in place. */
static void sd_in_place(struct r4_txn *t)
{
	struct r4_error err = { 0, "", 0 };
	struct r4_objref ref;
	struct tree_peek pk;
	struct obj_dir d;
	struct fmt_key k;
	uint8_t *buf = NULL;
	size_t cap = 0, len = 0;
	const char *name;
	uint64_t q0;

	tap_require(!edit_split(t, "/c/f00009", &d, &name, &len, &err) &&
		    !obj_find_in_txn(t, &d, name, len, &ref, &err),
		    "lookup: %s", err.msg);
	obj_sd_key(t->vol, &ref, &k);
	tap_require(!tree_mod_peek(&t->mod, &k, &pk, &buf, &cap, &err) &&
		    !fmt_key_cmp(&pk.key, &k), "peek the stat data");
	ok(tree_mod_mark_checked(&t->mod, &pk, buf), "stat data marked");
	buf[pk.len - 1] ^= 1;	/* same size, other bytes */
	q0 = t->mod.st.quick;
	ok(!tree_replace(&t->mod, 1, &k, pk.pid, buf, pk.len, &err) &&
	   t->mod.st.quick == q0 + 1, "replaced in its cached leaf (the "
	   "quick path): %s", err.msg);
	buf[pk.len - 1] ^= 1;
	ok(!tree_mod_peek(&t->mod, &k, &pk, &buf, &cap, &err) && !pk.checked,
	   "the stat data overwritten in place lost the mark");
	ok(!tree_replace(&t->mod, 1, &k, pk.pid, buf, pk.len, &err),
	   "the stat data put back");
	free(buf);
}

int main(void)
{
	struct r4_error err = { 0, "", 0 };
	struct r4_txn *t;
	struct r4_vol *v;

	plan(14);
	eu_init("test_checked");
	tap_require(eu_mkfs("c.img", 64, "") == 0, "r4_mkfs");
	tap_require(eu_open("c.img", &v) == 0, "open");
	tap_require(!r4_txn_begin(v, &t, &err), "begin: %s", err.msg);
	tap_require(!add_files(t, NC), "adds");
	dir_items(t);
	sd_in_place(t);
	r4_txn_abort(t);
	eu_close(v);
	eu_fini();
	return tap_done();
}
