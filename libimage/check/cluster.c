/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the checker's pass over compressed (ccreg40) files: every disk
 * cluster is gathered, its layout, stored form and checksum checked and
 * its stream test-decompressed (doc/compress.md §6). */
#include "config.h"
#include <errno.h>
#include "libimage/check/check.h"
#include "libimage/obj/obj.h"
#include "libimage/obj/cluster.h"
#include "libimage/util/err.h"
#include "format/plugin.h"

void chk_cc_body(struct chk *c, const struct chk_body *b)
{
	struct r4_objref ref = { b->el0 >> 4, b->el1, b->el2 };
	struct fmt_key k = { { b->el0, b->el1, b->el2, 0 } };
	struct r4_error e = { 0, "", 0 };
	struct obj_sd sd;
	uint64_t n = 0;

	if (b->kinds != CHK_BODY_CTAIL) {
		chk_problem(c, R4_CHK_BODY, b->blk, b->item, &k, "object %llx "
			    "mixes ctail40 items with tail or extent items",
			    (unsigned long long)(b->el2 & CHK_OID_MASK));
		return;
	}
	if (obj_sd_get(c->vol, &ref, &sd, &e))
		return;		/* the stat data was reported already */
	if (sd.plugin != FMT_OBJ_CCREG40) {
		chk_problem(c, R4_CHK_BODY, b->blk, b->item, &k, "object %llx "
			    "has ctail40 items but its plugin is %s",
			    (unsigned long long)(b->el2 & CHK_OID_MASK),
			    fmt_object_name(sd.plugin) ?
			    fmt_object_name(sd.plugin) : "unknown");
	} else if (obj_cc_verify(c->vol, &ref, &sd, &n, &e)) {
		chk_problem(c, e.code == -ENOMEM ? R4_CHK_BODY : R4_CHK_CLUSTER,
			    b->blk, b->item, &k, "compressed file: %s",
			    e.msg[0] ? e.msg : r4_strerror(e.code));
	}
	obj_sd_put(&sd);
}

/* 1 when the object is a compressed (ccreg40) file: its holes are
 * clusters without items, so a size past its items is no problem
 * (doc/compress.md §3.4). */
int chk_obj_is_ccreg(const struct chk *c, const struct chk_obj *o)
{
	struct r4_objref ref = { o->el0 >> 4, o->el1, o->el2 };
	struct r4_error e = { 0, "", 0 };
	struct obj_sd sd;
	int yes;

	if (obj_sd_get(c->vol, &ref, &sd, &e))
		return 0;
	yes = sd.plugin == FMT_OBJ_CCREG40;
	obj_sd_put(&sd);
	return yes;
}
