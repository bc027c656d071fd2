/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4debugfs: print file, blocks, icheck, ncheck: from objects to their
 * items and blocks, and back. */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../common/common.h"
#include "r4/read.h"
#include "debugfs.h"
#include "r4/forensic.h"

static const char *kind_name(int kind)
{
	static const char *const names[] = { "data", "hole", "unallocated",
					     "tail", "node", "stat data" };

	return kind >= 0 && kind < 6 ? names[kind] : "unknown";
}

/* ---- blocks, print file ------------------------------------------------- */

static int json_piece(void *ctx, const struct r4_blkmap *m)
{
	int *first = ctx;

	printf("%s{\"offset\":", *first ? "" : ",");
	*first = 0;
	r4cmd_json_u64(m->file_off);
	printf(",\"length\":");
	r4cmd_json_u64(m->len);
	printf(",\"kind\":\"%s\"", kind_name(m->kind));
	if (m->kind == R4_BLK_DATA || m->kind == R4_BLK_TAIL) {
		printf(",\"block\":");
		r4cmd_json_u64(m->blk);
	}
	printf(",\"count\":");
	r4cmd_json_u64(m->count);
	putchar('}');
	return 0;
}

static int print_piece(void *ctx, const struct r4_blkmap *m)
{
	(void)ctx;
	printf("  file offset %" PRIu64 ", %" PRIu64 " bytes: %s", m->file_off,
	       m->len, kind_name(m->kind));
	if (m->kind == R4_BLK_DATA && m->count > 1)
		printf(" blocks %" PRIu64 "-%" PRIu64, m->blk,
		       m->blk + m->count - 1);
	else if (m->kind == R4_BLK_DATA || m->kind == R4_BLK_TAIL)
		printf(" block %" PRIu64, m->blk);
	else if (m->count)
		printf(" (%" PRIu64 " blocks)", m->count);
	putchar('\n');
	return 0;
}

static int list_blocks(struct dbg *d, const char *path,
		       const struct r4_objref *ref)
{
	struct r4_error err = { 0 };
	int rc = r4_file_blocks(d->vol, ref, print_piece, NULL, &err);

	return rc ? dbg_fail(&err, path, rc) : DBG_OK;
}

int dbg_blocks(struct dbg *d, int argc, const char **argv)
{
	struct r4_objref ref;

	if (argc != 2)
		return dbg_usage(argv[0]);
	if (dbg_resolve(d, argv[1], &ref))
		return DBG_FAIL;
	if (d->json) {
		struct r4_error err = { 0 };
		int first = 1, rc;

		putchar('{');
		r4cmd_json_name("path", argv[1], strlen(argv[1]));
		printf(",\"pieces\":[");
		rc = r4_file_blocks(d->vol, &ref, json_piece, &first, &err);
		if (rc)
			return dbg_fail(&err, argv[1], rc);
		printf("]}\n");
		return DBG_OK;
	}
	printf("%s:\n", argv[1]);
	return list_blocks(d, argv[1], &ref);
}

struct items_ctx {
	struct dbg *d;
	uint8_t *node;
	int rc;
};

static int print_one_item(void *ctx, const struct r4_item_loc *it)
{
	struct items_ctx *c = ctx;
	struct r4_error err = { 0 };
	int rc;

	printf("block %" PRIu64 " (level %u), ", it->blk, it->level);
	rc = r4_vol_read_block(c->d->vol, it->blk, c->node, &err);
	if (rc) {
		printf("unreadable\n");
		dbg_fail(&err, "print file", rc);
		c->rc = DBG_FAIL;
		return 0;
	}
	if (dbg_print_item(c->d, c->node, it->pos))
		c->rc = DBG_FAIL;
	return 0;
}

int dbg_print_file(struct dbg *d, int argc, const char **argv)
{
	struct r4_error err = { 0 };
	struct items_ctx c = { .d = d, .rc = DBG_OK };
	struct r4_objref ref;
	struct r4_stat st;
	int rc;

	if (argc != 2)
		return dbg_usage(argv[0]);
	if (dbg_resolve(d, argv[1], &ref))
		return DBG_FAIL;
	c.node = malloc(d->si.blksize);
	if (!c.node)
		return dbg_fail(NULL, argv[1], -ENOMEM);
	rc = r4_obj_items(d->vol, &ref, print_one_item, &c, &err);
	free(c.node);
	if (rc)
		return dbg_fail(&err, argv[1], rc);
	if (!r4_stat(d->vol, &ref, &st, &err) && st.object_plugin ==
	    R4_OBJ_REG40) {
		printf("body:\n");
		if (list_blocks(d, argv[1], &ref))
			return DBG_FAIL;
	}
	return c.rc;
}

/* ---- icheck, ncheck ------------------------------------------------------ */

struct paths_ctx {
	int json, n;
};

static int print_path(void *ctx, const char *path)
{
	struct paths_ctx *p = ctx;

	if (p->json) {
		size_t len = strlen(path);

		if (p->n)
			putchar(',');
		/* a path that is not UTF-8: {"path": lossy, "path_b64":
		 * its bytes} in the array's place (man/r4debugfs.8, JSON) */
		if (r4cmd_utf8_valid(path, len)) {
			r4cmd_json_str(path, len);
		} else {
			putchar('{');
			r4cmd_json_name("path", path, len);
			putchar('}');
		}
	} else {
		printf("%s", p->n ? " " : "");
		dbg_put_name(path, strlen(path));
	}
	p->n++;
	return 0;
}

/* The paths of oid: " /a /b" (text) or ["/a","/b"] (JSON). */
static int print_paths(struct dbg *d, uint64_t oid)
{
	struct r4_error err = { 0 };
	struct paths_ctx p = { d->json, 0 };
	int rc;

	if (d->json)
		putchar('[');
	rc = r4_oid_paths(d->vol, oid, print_path, &p, &err);
	if (d->json)
		putchar(']');
	else if (!p.n)
		printf("(no path)");
	if (rc) {
		fflush(stdout);
		dbg_fail(&err, "path walk", rc);
	}
	return rc ? DBG_FAIL : DBG_OK;
}

/* What a block no tree item points at is (libimage/forensic). */
static const char *unowned_class(struct dbg *d, uint64_t blk)
{
	struct r4_error err = { 0 };
	int cls;

	if (r4_block_class(d->vol, blk, &cls, &err))
		return "unreadable bitmap";
	switch (cls) {
	case R4_BC_FIXED: return "fixed metadata";
	case R4_BC_BACKUP: return "backup super block";
	case R4_BC_JOURNAL: return "journal";
	case R4_BC_FREE: return "free";
	}
	return "used, not referenced by the tree";
}

/* The same, as the JSON key word (r4_block_class_name). */
static const char *unowned_key(struct dbg *d, uint64_t blk)
{
	struct r4_error err = { 0 };
	int cls;

	if (r4_block_class(d->vol, blk, &cls, &err))
		return "unreadable";
	return r4_block_class_name(cls);
}

static int icheck_one(struct dbg *d, uint64_t blk, int first)
{
	struct r4_error err = { 0 };
	struct r4_objref owner;
	int kind = 0, rc;

	rc = r4_block_owner(d->vol, blk, &owner, &kind, &err);
	if (rc && rc != R4_ENOTFOUND) {
		if (d->json) {
			printf("%s{\"block\":", first ? "" : ",");
			r4cmd_json_u64(blk);
			printf(",\"error\":true}");
		}
		return dbg_fail(&err, "icheck", rc);
	}
	if (d->json) {
		printf("%s{\"block\":", first ? "" : ",");
		r4cmd_json_u64(blk);
		if (rc) {
			printf(",\"class\":\"%s\",\"owner\":null}",
			       unowned_key(d, blk));
			return DBG_OK;
		}
		printf(",\"class\":\"owned\",\"kind\":\"%s\",\"oid\":",
		       kind_name(kind));
		r4cmd_json_u64(owner.oid);
		printf(",\"locality\":");
		r4cmd_json_u64(owner.locality);
		printf(",\"paths\":");
		rc = print_paths(d, owner.oid);
		putchar('}');
		return rc;
	}
	if (rc) {
		printf("%" PRIu64 "\tnot used by the tree: %s\n", blk,
		       unowned_class(d, blk));
		return DBG_OK;
	}
	printf("%" PRIu64 "\t%s\toid 0x%" PRIx64 "\t", blk, kind_name(kind),
	       owner.oid);
	rc = print_paths(d, owner.oid);
	putchar('\n');
	return rc;
}

int dbg_icheck(struct dbg *d, int argc, const char **argv)
{
	int rc = DBG_OK, n = 0;
	uint64_t blk;

	if (argc < 2)
		return dbg_usage(argv[0]);
	if (d->json)
		putchar('[');
	for (int i = 1; i < argc; i++) {
		if (dbg_parse_block(d, argv[i], &blk)) {
			rc = DBG_FAIL;
			continue;
		}
		if (icheck_one(d, blk, !n++))
			rc = DBG_FAIL;
	}
	if (d->json)
		printf("]\n");
	return rc;
}

int dbg_ncheck(struct dbg *d, int argc, const char **argv)
{
	int rc = DBG_OK, n = 0;
	uint64_t oid;

	if (argc < 2)
		return dbg_usage(argv[0]);
	if (d->json)
		putchar('[');
	for (int i = 1; i < argc; i++) {
		if (dbg_parse_u64(argv[i], &oid)) {
			fprintf(stderr, "%s: ncheck: '%s' is not an object id\n",
				r4cmd_prog, argv[i]);
			rc = DBG_FAIL;
			continue;
		}
		if (d->json) {
			printf("%s{\"oid\":", n++ ? "," : "");
			r4cmd_json_u64(oid);
			printf(",\"paths\":");
		} else
			printf("0x%" PRIx64 "\t", oid);
		if (print_paths(d, oid))
			rc = DBG_FAIL;
		printf(d->json ? "}" : "\n");
	}
	if (d->json)
		printf("]\n");
	return rc;
}
