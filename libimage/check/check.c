/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: r4_check(), the read-only checker: set-up, problem reporting
 * and the order of the phases (super blocks, tree, backups, space,
 * objects). */
#include "config.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/check/check.h"
#include "libimage/util/err.h"
#include "format/bitmap.h"
#include "format/super.h"

void chk_name_str(const uint8_t *name, size_t len, char *buf, size_t buflen)
{
	size_t o = 0;

	if (!buflen)
		return;
	for (size_t i = 0; i < len && o + 5 < buflen; i++) {
		uint8_t ch = name[i];

		if (ch < 0x20 || ch == 0x7f || ch == '\'' || ch == '\\')
			o += (size_t)snprintf(buf + o, buflen - o, "\\x%02x",
					      ch);
		else
			buf[o++] = (char)ch;
	}
	buf[o] = '\0';
}

void chk_progress(struct chk *c, const char *phase, uint64_t done,
		  uint64_t total)
{
	if (c->opts && c->opts->progress)
		c->opts->progress(c->opts->progress_ctx, phase, done, total);
}

int chk_is_bitmap_blk(const struct chk *c, uint64_t blk)
{
	uint64_t bpb = fmt_bitmap_bpb(c->bs);

	if (blk == fmt_blk_bitmap0(c->bs))
		return 1;
	return blk && blk % bpb == 0 && blk < c->blocks;
}

const char *chk_block_owner(const struct chk *c, uint64_t blk)
{
	if (blk < c->first_usable)
		return "the reserved area";
	if (chk_is_bitmap_blk(c, blk))
		return "a bitmap block";
	for (size_t i = 0; i < c->nbackups; i++)
		if (c->backups[i] == blk)
			return "a backup block";
	if (chk_map_test(&c->ext, blk))
		return "file data of an extent";
	return "a tree node";
}

/* Mark what the layout owns: the reserved area up to the first usable
 * block (boot area, master, format40, bitmap 0, journal, status, backup
 * 0) and every backup block. The other bitmap blocks are not put in the
 * map (one per region would allocate every chunk of a huge sparse
 * volume): chk_is_bitmap_blk() answers for them. */
static int mark_layout(struct chk *c)
{
	int rc = 0;

	for (uint64_t b = 0; b < c->first_usable && b < c->blocks && rc >= 0;
	     b++)
		rc = chk_map_set(&c->used, b);
	for (size_t i = 0; i < c->nbackups && rc >= 0; i++)
		if (c->backups[i] < c->blocks)
			rc = chk_map_set(&c->used, c->backups[i]);
	return rc < 0 ? rc : 0;
}

static int chk_init(struct chk *c)
{
	struct r4_vol *vol = c->vol;
	size_t n;

	c->bs = vol->blksize;
	c->blocks = vol->sb.block_count;
	c->first_usable = fmt_blk_first_usable(c->bs);
	c->pol = vol->keypol;
	c->next_oid = vol->sb.next_oid;
	if (vol->jf.last_flushed_tx && vol->jf.next_oid > c->next_oid)
		c->next_oid = vol->jf.next_oid;
	if (chk_map_init(&c->used, c->blocks, fmt_bitmap_bpb(c->bs)) ||
	    chk_map_init(&c->ext, c->blocks, fmt_bitmap_bpb(c->bs)))
		return -ENOMEM;
	n = fmt_backup_blocks(c->blocks, c->bs, NULL, 0);
	c->backups = calloc(n ? n : 1, sizeof(*c->backups));
	if (!c->backups)
		return -ENOMEM;
	c->nbackups = fmt_backup_blocks(c->blocks, c->bs, c->backups, n);
	for (size_t i = 0; i < sizeof(c->buf) / sizeof(c->buf[0]); i++) {
		c->buf[i] = malloc(c->bs);
		if (!c->buf[i])
			return -ENOMEM;
	}
	c->scratch = malloc(c->bs);
	if (!c->scratch)
		return -ENOMEM;
	return mark_layout(c);
}

static void chk_fini(struct chk *c)
{
	chk_map_fini(&c->used);
	chk_map_fini(&c->ext);
	free(c->backups);
	for (size_t i = 0; i < sizeof(c->buf) / sizeof(c->buf[0]); i++)
		free(c->buf[i]);
	chk_node_read_reset(c);
	free(c->scratch);
	chk_tables_free(c);
	chk_stream_free(c);
}

int chk_run(struct chk *c)
{
	int rc;

	memset(c->rep, 0, sizeof(*c->rep));
	rc = chk_init(c);
	if (rc)
		rc = r4i_fail(c->err, rc, "%s: out of memory for the check",
			     c->vol->dev->path);
	if (!rc)
		rc = chk_super(c);
	if (!rc)
		rc = chk_tree(c);
	if (!rc)
		rc = chk_backups(c);
	if (!rc)
		rc = chk_space(c);
	if (!rc)
		rc = chk_semantic(c);
	if (rc && chk_stream_error(c))
		r4i_fail(c->err, chk_stream_error(c), "%s: temporary file for "
			 "the check (in $TMPDIR, else /tmp): %s",
			 c->vol->dev->path, r4_strerror(chk_stream_error(c)));
	else if (rc == -ENOMEM)
		r4i_fail(c->err, rc, "%s: out of memory for the check",
			c->vol->dev->path);
	return rc;
}

void chk_ranked_free(struct chk *c)
{
	if (c->has_ranked)
		chk_runs_free(&c->ranked);
	c->has_ranked = 0;
}

void chk_tables_free(struct chk *c)
{
	chk_ranked_free(c);
	free(c->objs);
	free(c->ents);
	free(c->bodies);
	free(c->second);
	free(c->tunm);
	free(c->fixes);
	c->fixes = NULL;
	c->nfixes = c->capfixes = 0;
	c->objs = NULL;
	c->ents = NULL;
	c->bodies = NULL;
	c->second = NULL;
	c->tunm = NULL;
	c->nobjs = c->capobjs = c->nents = c->capents = 0;
	c->nbodies = c->capbodies = c->ntunm = c->captunm = 0;
}

void chk_release(struct chk *c)
{
	chk_fini(c);
}

int chk_setup(struct chk *c)
{
	return chk_init(c);
}

int r4_check(struct r4_vol *vol, const struct r4_check_opts *opts,
	     struct r4_check_report *report, struct r4_error *err)
{
	struct chk c;
	int rc;

	memset(&c, 0, sizeof(c));
	c.vol = vol;
	c.opts = opts;
	c.rep = report;
	c.err = err;
	memset(report, 0, sizeof(*report));
	rc = opts && opts->tables ? 0 : chk_stream_start(&c);
	if (rc)
		rc = r4i_fail(err, rc, "%s: out of memory for the check",
			     vol->dev->path);
	else
		rc = chk_run(&c);
	chk_fini(&c);
	return rc;
}
