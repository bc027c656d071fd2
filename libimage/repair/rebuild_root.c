/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the tree rebuild (rebuild.c says what it does): the root
 * directory's stat data made anew when no item holds it or the one that
 * does is not a directory's. */
#include "config.h"
#include <string.h>
#include "libimage/repair/rebuild.h"
#include "libimage/util/err.h"
#include "format/item.h"
#include "format/super.h"

/* Whether the root directory's stat data (key k) is there and a
 * directory's; the ones that are not are dropped (*bad set): a root
 * that is not a directory (a damaged mode) cannot be mended from the
 * objects' side, it is made anew. */
static int root_sd_good(struct rb *b, const struct fmt_key *k, int *bad)
{
	struct fmt_stat st;

	for (size_t i = 0; i < b->n; i++) {
		struct ritem *p = &b->it[i];

		if (fmt_key_cmp(&p->key, k) || p->pid != FMT_ITEM_STAT40)
			continue;
		if (!fmt_stat_decode(p->body, p->len, &st) &&
		    (st.mask & (1u << FMT_SDEXT_LW)) &&
		    (st.mode & 0170000) == 0040000)
			return 1;
		p->pid = DROPPED;
		b->items_dropped++;
		*bad = 1;
	}
	return 0;
}

/* A new root directory's stat data: mode 0755, nlink 2, the plugin set
 * of the backup copy when it has one (*pset set). */
static void new_root_sd(struct rb *b, struct fmt_stat *st, int *pset)
{
	struct chk *c = &b->R->c;
	struct fmt_backup bk;

	memset(st, 0, sizeof(*st));
	st->mask = (1u << FMT_SDEXT_LW) | (1u << FMT_SDEXT_UNIX);
	st->mode = 040755;
	st->nlink = 2;
	st->size = 0;
	*pset = 0;
	if (vol_read_block(c->vol, fmt_blk_backup0(c->bs), b->buf,
			   "backup block", NULL))
		return;
	fmt_backup_decode(b->buf, &bk);
	if (!bk.has_pset)
		return;
	*pset = 1;
	st->mask |= 1u << FMT_SDEXT_PSET;
	for (unsigned i = FMT_PSET_PERM; i < FMT_PSET_COUNT; i++) {
		st->pset.member[st->pset.count] = (uint16_t)i;
		st->pset.id[st->pset.count++] = (uint16_t)bk.pset[i];
	}
}

/* The root directory's stat data, when no item holds it or the one that
 * does is not a directory's. */
int rb_root_sd(struct rb *b)
{
	struct fmt_stat st;
	struct fmt_key k;
	uint8_t body[512];
	size_t len;
	int rc, root_bad = 0, pset;

	k.el[0] = (FMT_ROOT_LOCALITY << 4) | FMT_KEY_SD;
	k.el[1] = 0;
	k.el[2] = FMT_ROOT_OID;
	k.el[3] = 0;
	if (root_sd_good(b, &k, &root_bad))
		return 0;
	new_root_sd(b, &st, &pset);
	rc = fmt_stat_size(&st, &len);
	if (!rc && len <= sizeof(body))
		rc = fmt_stat_encode(&st, body, len);
	if (rc)
		return rc;
	rc = rb_push(b, &k, FMT_ITEM_STAT40, body, len);
	if (!rc)
		rep_action(b->R, R4_CHK_SD, R4_CHECK_NO_BLOCK, FMT_ROOT_OID,
			   R4_LOSS_NONE, 0, "the root directory's stat data "
			   "was %s: made anew (mode 0755%s)", root_bad ?
			   "not a directory's" : "lost", pset ?
			   ", plugin set from the backup copy" : "");
	return rc;
}
