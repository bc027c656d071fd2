/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4fsck: what it reports: each problem and fix as text or JSON, the
 * problems found before the open, progress, and the summaries. */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "r4/r4.h"
#include "r4/check.h"
#include "r4/repair.h"
#include "r4/journal.h"
#include "fsck.h"
#include "../common/common.h"

int json_first = 1;
int json_in_actions;	/* the problem list is closed */
int json_first_action = 1;

static void print_text(const struct r4_check_problem *p)
{
	if (p->block != R4_CHECK_NO_BLOCK) {
		printf("block %llu", (unsigned long long)p->block);
		if (p->item >= 0)
			printf(", item %d", p->item);
		if (p->key[0])
			printf(" [%s]", p->key);
		fputs(": ", stdout);
	}
	printf("%s\n", p->msg);
}

static const char *fix_name(int code)
{
	const struct r4_problem_info *pi = r4_problem_info(code);

	if (!pi)
		return "none";
	return pi->fix_class == R4_FIX_PREEN ? "preen" :
	       pi->fix_class == R4_FIX_YES ? "yes" :
	       pi->fix_class == R4_FIX_REBUILD ? "rebuild" : "none";
}

static void print_json(const struct r4_check_problem *p)
{
	const char *code = r4_check_code_name(p->code);

	r4cmd_json_item();
	json_first = 0;
	fputs("{\"code\":", stdout);
	r4cmd_json_str(code, strlen(code));
	if (p->block != R4_CHECK_NO_BLOCK)
		printf(",\"block\":%llu", (unsigned long long)p->block);
	else
		fputs(",\"block\":null", stdout);
	printf(",\"item\":%d,\"key\":", p->item);
	r4cmd_json_str(p->key, strlen(p->key));
	printf(",\"fix\":\"%s\"", fix_name(p->code));
	fputs(",\"message\":", stdout);
	r4cmd_json_str(p->msg, strlen(p->msg));
	putchar('}');
}

void on_problem(void *ctx, const struct r4_check_problem *p)
{
	(void)ctx;
	if (r4cmd_progress_enabled())
		fputs("\r\033[K", stderr);
	if (opt_json)
		print_json(p);
	else if (!r4cmd_quiet)
		print_text(p);
}

static const char *const loss_names[] = {
	"none", "entry-removed", "zeroed", "lost+found", "space-freed",
	"items-dropped", "size-cut"
};

/* Problems found and fixed before the volume is opened (super blocks,
 * the image's size, the journal header): the library tells them
 * through callbacks before any JSON is printed; they are kept here and
 * listed first, as problems and as actions. */
#define PRE_MAX 8
static struct pre {
	int code;
	uint64_t block;
	char problem[2 * R4_ERRMSG_MAX];
	char done[R4_ERRMSG_MAX];
} pre[PRE_MAX];
unsigned npre, npre_done;
uint64_t pre_by_code[R4_CHK_CODE_COUNT];

static struct pre *pre_slot(int code, uint64_t block)
{
	for (unsigned i = 0; i < npre; i++)
		if (pre[i].code == code && pre[i].block == block)
			return &pre[i];
	if (npre == PRE_MAX)
		return NULL;
	pre[npre].code = code;
	pre[npre].block = block;
	if (code > 0 && code < R4_CHK_CODE_COUNT)
		pre_by_code[code]++;
	return &pre[npre++];
}

void on_pre_problem(void *ctx, const struct r4_repair_action *a)
{
	struct pre *p = pre_slot(a->code, a->block);

	(void)ctx;
	if (!p)
		return;
	if (a->code == R4_CHK_JOURNAL && replay_failure[0])
		snprintf(p->problem, sizeof(p->problem), "%s: %s", a->what,
			 replay_failure);
	else
		snprintf(p->problem, sizeof(p->problem), "%s", a->what);
}

static void print_json(const struct r4_check_problem *p);
static void print_action(const struct r4_repair_action *a);

/* A fix made before the open: printed at once as text; kept for the
 * JSON object. */
void on_pre_action(void *ctx, const struct r4_repair_action *a)
{
	struct pre *p = pre_slot(a->code, a->block);

	(void)ctx;
	if (p && !p->done[0]) {
		snprintf(p->done, sizeof(p->done), "%s", a->what);
		if (!p->problem[0])
			snprintf(p->problem, sizeof(p->problem), "%s", a->what);
		npre_done++;
	}
	if (!opt_json && !r4cmd_quiet)
		printf("fixed (%s): %s\n", r4_check_code_name(a->code),
		       a->what);
}

/* The JSON object's head and the problems found before the open: one
 * object on one line (kind "check" or "repair", as mode says), its
 * lists as arrays (cmd/common/common.c, doc/schema/r4fsck-*.json). */
void json_begin(void)
{
	r4cmd_json_begin(mode > 0 ? "repair" : "check", R4CMD_JSON_SCHEMA);
	r4cmd_json_array_begin("problem_list");
	for (unsigned i = 0; i < npre; i++) {
		struct r4_check_problem p = { 0 };

		p.code = pre[i].code;
		p.block = pre[i].block;
		p.item = -1;
		p.key = "";
		p.msg = pre[i].problem;
		print_json(&p);
	}
}

void json_close_problems(void)
{
	if (json_in_actions)
		return;
	r4cmd_json_array_end();
	r4cmd_json_array_begin("actions");
	json_in_actions = 1;
	for (unsigned i = 0; i < npre; i++) {
		struct r4_repair_action a = { 0 };

		if (!pre[i].done[0])
			continue;
		a.code = pre[i].code;
		a.block = pre[i].block;
		a.what = pre[i].done;
		print_action(&a);
	}
}

void on_action(void *ctx, const struct r4_repair_action *a)
{
	const char *code = r4_check_code_name(a->code);

	(void)ctx;
	if (r4cmd_progress_enabled())
		fputs("\r\033[K", stderr);
	if (!opt_json) {
		if (!r4cmd_quiet)
			printf("fixed (%s): %s\n", code, a->what);
		return;
	}
	json_close_problems();
	print_action(a);
}

static void print_action(const struct r4_repair_action *a)
{
	const char *code = r4_check_code_name(a->code);

	r4cmd_json_item();
	json_first_action = 0;
	fputs("{\"code\":", stdout);
	r4cmd_json_str(code, strlen(code));
	if (a->block != R4_CHECK_NO_BLOCK)
		printf(",\"block\":%llu", (unsigned long long)a->block);
	else
		fputs(",\"block\":null", stdout);
	fputs(",\"oid\":", stdout);
	r4cmd_json_u64(a->oid);
	printf(",\"loss\":\"%s\",\"amount\":",
	       a->loss >= 0 && a->loss <= R4_LOSS_CUT ? loss_names[a->loss]
							 : "?");
	r4cmd_json_u64(a->amount);
	fputs(",\"done\":", stdout);
	r4cmd_json_str(a->what, strlen(a->what));
	putchar('}');
}

/* A failure after the object was opened: r4cmd_json_exit closes its
 * open list, adds the error member with the exit code and ends it. */
void json_fail_open(void)
{
}

void on_progress(void *ctx, const char *phase, uint64_t done,
			uint64_t total)
{
	char label[32];

	(void)ctx;
	/* tree: nodes; space: bitmap blocks; super, objects: steps */
	r4cmd_progress_kind(phase, !strcmp(phase, "tree") ? "nodes" :
			    !strcmp(phase, "space") ? "blocks" : "steps");
	snprintf(label, sizeof(label), "checking %-7s", phase);
	r4cmd_progress(label, done, total);
}

#define JSON_FIELDS(X) \
	X(problems) X(reported) X(nodes) X(leaves) X(twigs) X(items) \
	X(extent_blocks) X(objects) X(dirs) X(files) X(symlinks) \
	X(specials) X(entries) X(used_blocks) X(free_blocks)

unsigned replayed, overlaid;

static void print_json_counts(const char *path,
			      const struct r4_check_report *r)
{
	putchar(',');
	r4cmd_json_name("image", path, strlen(path));
#define X(f) r4cmd_json_key(#f); r4cmd_json_u64(r->f);
	JSON_FIELDS(X)
#undef X
	printf(",\"replayed\":%u,\"overlaid\":%u", replayed, overlaid);
	printf(",\"journal_dirty\":%s", r->journal_dirty ? "true" : "false");
}

void print_json_end(const char *path, const struct r4_check_report *r)
{
	r4cmd_json_array_end();
	print_json_counts(path, r);
	printf(",\"clean\":%s", r->problems ? "false" : "true");
	r4cmd_json_end();
}

void print_summary(const char *path, const struct r4_check_report *r)
{
	if (r->problems)
		printf("%s: %llu problem%s found, left uncorrected", path,
		       (unsigned long long)r->problems,
		       r->problems == 1 ? "" : "s");
	else
		printf("%s: no problems found", path);
	printf(" (%llu nodes, %llu objects: %llu directories, %llu files, "
	       "%llu symlinks, %llu special; %llu blocks used, %llu free)\n",
	       (unsigned long long)r->nodes, (unsigned long long)r->objects,
	       (unsigned long long)r->dirs, (unsigned long long)r->files,
	       (unsigned long long)r->symlinks,
	       (unsigned long long)r->specials,
	       (unsigned long long)r->used_blocks,
	       (unsigned long long)r->free_blocks);
	if (r->reported < r->problems)
		printf("%s: %llu problems were not printed (--max-reports)\n",
		       path, (unsigned long long)(r->problems - r->reported));
}
static void codes_line(const uint64_t *by_code, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (int k = 1; k < R4_CHK_CODE_COUNT && o + 1 < len; k++)
		if (by_code[k])
			o += (size_t)snprintf(buf + o, len - o, "%s%s",
					      o ? ", " : "",
					      r4_check_code_name(k));
}

void print_repair_json_end(const char *path,
				  const struct r4_repair_report *r)
{
	if (!json_in_actions)
		json_close_problems();
	r4cmd_json_array_end();
	print_json_counts(path, &r->left);
	printf(",\"mode\":\"%s\"", opt_preen ? "preen" : "fix");
	printf(",\"found\":%llu,\"left\":%llu",
	       (unsigned long long)(r->found.problems + npre),
	       (unsigned long long)r->left.problems);
	fputs(",\"by_code\":{", stdout);
	for (int k = 1, first = 1; k < R4_CHK_CODE_COUNT; k++) {
		uint64_t found = r->found_by_code[k] + pre_by_code[k];

		if (!found && !r->left_by_code[k])
			continue;
		printf("%s\"%s\":{\"found\":%llu,\"left\":%llu,"
		       "\"fix\":\"%s\"}", first ? "" : ",",
		       r4_check_code_name(k), (unsigned long long)found,
		       (unsigned long long)r->left_by_code[k], fix_name(k));
		first = 0;
	}
	putchar('}');
	printf(",\"actions_done\":%llu,\"transactions\":%llu,"
	       "\"rounds\":%llu",
	       (unsigned long long)(r->actions + npre_done),
	       (unsigned long long)r->transactions,
	       (unsigned long long)r->rounds);
	printf(",\"loss\":{\"entries_removed\":%llu,"
	       "\"lost_found\":%llu,\"zeroed_ranges\":%llu,"
	       "\"zeroed_bytes\":%llu,\"blocks_freed\":%llu,"
	       "\"nodes_dropped\":%llu,\"items_dropped\":%llu,"
	       "\"bytes_dropped\":%llu,\"bytes_moved\":%llu,"
	       "\"cut_files\":%llu,\"cut_bytes\":%llu}",
	       (unsigned long long)r->entries_removed,
	       (unsigned long long)r->lost_found,
	       (unsigned long long)r->zeroed_ranges,
	       (unsigned long long)r->zeroed_bytes,
	       (unsigned long long)r->blocks_freed,
	       (unsigned long long)r->nodes_dropped,
	       (unsigned long long)r->items_dropped,
	       (unsigned long long)r->bytes_dropped,
	       (unsigned long long)r->bytes_moved,
	       (unsigned long long)r->cut_files,
	       (unsigned long long)r->cut_bytes);
	printf(",\"rebuilt\":%s", r->rebuilt ? "true" : "false");
	printf(",\"blocks_claimed\":%llu",
	       (unsigned long long)r->blocks_claimed);
	printf(",\"blocks_copied\":%llu",
	       (unsigned long long)r->blocks_copied);
	printf(",\"nodes_spilled\":%llu",
	       (unsigned long long)r->nodes_spilled);
	printf(",\"preen_refused\":%s,\"tree_damaged\":%s",
	       r->preen_refused ? "true" : "false",
	       r->tree_damaged ? "true" : "false");
	printf(",\"clean\":%s", r->left.problems ? "false" : "true");
	r4cmd_json_end();
}

/* What a repair dropped, copied, zeroed, cut or moved: a line each kind
 * (none when nothing went). */
static void print_losses(const char *path, const struct r4_repair_report *r)
{
	if (r->rebuilt)
		printf("%s: the storage tree was rebuilt: %llu node%s and "
		       "%llu item%s dropped (%llu body bytes), %llu body "
		       "bytes moved\n", path,
		       (unsigned long long)r->nodes_dropped,
		       r->nodes_dropped == 1 ? "" : "s",
		       (unsigned long long)r->items_dropped,
		       r->items_dropped == 1 ? "" : "s",
		       (unsigned long long)r->bytes_dropped,
		       (unsigned long long)r->bytes_moved);
	if (r->blocks_copied)
		printf("%s: %llu block%s claimed twice copied for the owner%s "
		       "that did not keep %s (nothing lost)\n", path,
		       (unsigned long long)r->blocks_copied,
		       r->blocks_copied == 1 ? "" : "s",
		       r->blocks_copied == 1 ? "" : "s",
		       r->blocks_copied == 1 ? "it" : "them");
	if (r->entries_removed || r->lost_found || r->zeroed_ranges ||
	    r->blocks_freed || r->cut_files)
		printf("%s: lost or moved: %llu entr%s removed, %llu "
		       "object%s moved to /lost+found, %llu range%s (%llu "
		       "bytes) zeroed, %llu file%s cut (%llu bytes), %llu "
		       "unreferenced block%s freed\n",
		       path, (unsigned long long)r->entries_removed,
		       r->entries_removed == 1 ? "y" : "ies",
		       (unsigned long long)r->lost_found,
		       r->lost_found == 1 ? "" : "s",
		       (unsigned long long)r->zeroed_ranges,
		       r->zeroed_ranges == 1 ? "" : "s",
		       (unsigned long long)r->zeroed_bytes,
		       (unsigned long long)r->cut_files,
		       r->cut_files == 1 ? "" : "s",
		       (unsigned long long)r->cut_bytes,
		       (unsigned long long)r->blocks_freed,
		       r->blocks_freed == 1 ? "" : "s");
}

void print_repair_summary(const char *path,
				 const struct r4_repair_report *r)
{
	char codes[1024];
	uint64_t found = r->found.problems + npre;
	uint64_t actions = r->actions + npre_done;

	if (!found) {
		if (r4cmd_verbose)
			print_summary(path, &r->found);
		return;
	}
	if (r->preen_refused || r->tree_damaged) {
		codes_line(r->left_by_code, codes, sizeof(codes));
		/* preen never rebuilds the tree: -y may fix what it left */
		if (r->preen_refused || opt_preen)
			printf("%s: UNEXPECTED INCONSISTENCY: problems preen "
			       "may not fix (%s); nothing was changed: run "
			       "r4fsck -y\n", path, codes);
		else
			printf("%s: damage the repair cannot fix (%s)\n",
			       path, codes);
	}
	printf("%s: %llu problem%s found, %llu change%s made in %llu "
	       "transaction%s; %llu problem%s left\n", path,
	       (unsigned long long)found, found == 1 ? "" : "s",
	       (unsigned long long)actions, actions == 1 ? "" : "s",
	       (unsigned long long)r->transactions,
	       r->transactions == 1 ? "" : "s",
	       (unsigned long long)r->left.problems,
	       r->left.problems == 1 ? "" : "s");
	print_losses(path, r);
	if (r->left.problems)
		print_summary(path, &r->left);
}

/* Print the problems found before the open and nothing else (the
 * volume is not opened): check and default modes, preen, and what -y
 * cannot fix. */
void print_pre_only(const char *path)
{
	if (opt_json) {
		json_begin();
		r4cmd_json_array_end();
		putchar(',');
		r4cmd_json_name("image", path, strlen(path));
		printf(",\"problems\":%u,\"clean\":false", npre);
		r4cmd_json_end();
		return;
	}
	for (unsigned i = 0; i < npre; i++)
		printf("%s: %s\n", path, pre[i].problem);
}

void print_undo_json(const char *image, const char *file, uint64_t units,
		     int one_step)
{
	r4cmd_json_begin("undo", R4CMD_JSON_SCHEMA);
	putchar(',');
	r4cmd_json_name("image", image, strlen(image));
	putchar(',');
	r4cmd_json_name("undo_file", file, strlen(file));
	r4cmd_json_key("blocks");
	r4cmd_json_u64(units);
	printf(",\"one_step\":%s", one_step ? "true" : "false");
	r4cmd_json_end();
}
