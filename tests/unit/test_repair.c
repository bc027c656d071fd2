/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the problem table (libimage/check/problems.c) for the repair:
 * every code the checker reports has one row, with its name, a context,
 * a message template and a fix class; a fix text exactly when the class
 * says the repair fixes it; preen only for what fsck(8)'s preen may
 * touch (space, counters, status block, backups, journal) and for the
 * compressed-file layouts the Reiser4 kernel cannot take whose fix
 * changes no byte a file reads (doc/compress.md §7). */
#include "config.h"
#include <string.h>
#include "tap.h"
#include "r4/check.h"
#include "r4/repair.h"

static int preen_allowed(int code)
{
	switch (code) {
	case R4_CHK_STATUS: case R4_CHK_BACKUP: case R4_CHK_JOURNAL:
	case R4_CHK_BITMAP_CSUM: case R4_CHK_BITMAP_TAIL:
	case R4_CHK_SPACE_LEAK: case R4_CHK_SPACE_FREE:
	case R4_CHK_FREE_COUNT: case R4_CHK_OID: case R4_CHK_FILE_COUNT:
	case R4_CHK_JOURNAL_PENDING:
	/* compressed files the kernel cannot take: no byte changes */
	case R4_CHK_CC_HOLE0: case R4_CHK_CC_UNMERGED: case R4_CHK_CC_CONV:
		return 1;
	/* tail items the kernel reads short, joined: no byte changes */
	case R4_CHK_TAIL_UNMERGED:
		return 1;
	default:
		return 0;
	}
}

int main(void)
{
	for (int k = 1; k < R4_CHK_CODE_COUNT; k++) {
		const struct r4_problem_info *pi = r4_problem_info(k);

		ok(pi != NULL, "code %d (%s) has a row", k,
		   r4_check_code_name(k));
		if (!pi)
			continue;
		ok(pi->code == k && pi->name &&
		   !strcmp(pi->name, r4_check_code_name(k)) &&
		   strcmp(pi->name, "?"), "row %d: code and name", k);
		ok(pi->context && pi->context[0] && pi->summary &&
		   pi->summary[0], "row %s: context and template", pi->name);
		ok((pi->fix_class == R4_FIX_NONE) == (pi->fix == NULL),
		   "row %s: a fix text exactly when it is fixed", pi->name);
		ok(pi->fix_class != R4_FIX_PREEN || preen_allowed(k),
		   "row %s: preen only for space, counters, status, backups "
		   "and the journal", pi->name);
	}
	/* the compressed-file layouts of doc/compress.md §6: their names,
	 * classes and the words a user searches for */
	{
		static const struct {
			int code;
			const char *name;
			int cls;
			const char *says;
		} cc[] = {
			{ R4_CHK_CC_HOLE0, "ccreg-leading-hole", R4_FIX_PREEN,
			  "panics reading this file" },
			{ R4_CHK_CC_UNMERGED, "ccreg-unmerged", R4_FIX_PREEN,
			  "unmerged" },
			{ R4_CHK_CC_CONV, "ccreg-conv", R4_FIX_PREEN,
			  "conv" },
			{ R4_CHK_CC_CROSS, "ccreg-crossing", R4_FIX_YES,
			  "crosses the cluster end" },
			{ R4_CHK_TAIL_UNMERGED, "tail-unmerged", R4_FIX_PREEN,
			  "reads the file short" },
		};

		for (size_t i = 0; i < sizeof(cc) / sizeof(cc[0]); i++) {
			const struct r4_problem_info *pi =
				r4_problem_info(cc[i].code);

			ok(pi && !strcmp(pi->name, cc[i].name) &&
			   pi->fix_class == cc[i].cls &&
			   strstr(pi->summary, cc[i].says) &&
			   strstr(pi->summary, "{path}") &&
			   strstr(pi->context, "path") && pi->fix &&
			   strstr(pi->fix, "kernel"),
			   "row %s: class, message and fix", cc[i].name);
		}
	}
	ok(r4_problem_info(0) == NULL && r4_problem_info(R4_CHK_CODE_COUNT)
	   == NULL && r4_problem_info(-1) == NULL, "no row outside the codes");
	return tap_done();
}
