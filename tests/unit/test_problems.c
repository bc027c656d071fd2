/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: every row of the problem table (libimage/check/problems.c):
 * one row per code, a unique stable name, a pass that exists and fits
 * the fix class, a message template whose fields ({block}, {item},
 * {key}, {oid}, {path}) are the ones the row's context says its reports
 * name, and a message format (the checker renders it) whose conversions
 * are the argument kinds the row declares. */
#include "config.h"
#include <ctype.h>
#include <string.h>
#include "tap.h"
#include "r4/check.h"

/* The context word a template field stands for; NULL for a field the
 * message itself fills in ({what}, {n}, ...). */
static const char *field_context(const char *f, size_t len)
{
	static const struct {
		const char *field, *context;
	} map[] = {
		{ "block", "block" }, { "item", "item" }, { "key", "key" },
		{ "oid", "object" }, { "path", "path" },
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strlen(map[i].field) == len &&
		    !memcmp(map[i].field, f, len))
			return map[i].context;
	return NULL;
}

/* Every {field} of the template is closed, is a lower-case word, and a
 * context field only when the context names it. */
static int fields_ok(const struct r4_problem_info *pi)
{
	for (const char *p = pi->summary; (p = strchr(p, '{')) != NULL;) {
		const char *end = strchr(p, '}'), *ctx;

		if (!end || end == p + 1)
			return 0;
		for (const char *q = p + 1; q < end; q++)
			if (!islower((unsigned char)*q))
				return 0;
		ctx = field_context(p + 1, (size_t)(end - p - 1));
		if (ctx && !strstr(pi->context, ctx))
			return 0;
		p = end + 1;
	}
	return !strchr(pi->summary, '}') ||
	       strchr(pi->summary, '{') != NULL;
}

/* The argument kinds of a printf format, as the table spells them ('d',
 * 'u', 'U', 'z', 's'): 0, or -1 for a conversion the table does not
 * use (a width from an argument, a pointer, a float ...). */
static int format_kinds(const char *f, char *out, size_t len)
{
	size_t n = 0;

	for (; *f; f++) {
		char k;

		if (*f != '%')
			continue;
		f++;
		if (*f == '%')
			continue;
		while (*f == '#' || *f == '-' || *f == '0' || *f == ' ')
			f++;
		while (isdigit((unsigned char)*f))
			f++;
		if (f[0] == 'l' && f[1] == 'l' &&
		    (f[2] == 'u' || f[2] == 'x' || f[2] == 'd')) {
			k = f[2] == 'd' ? 'D' : 'U';
			f += 2;
		} else if (f[0] == 'z' && (f[1] == 'u' || f[1] == 'x')) {
			k = 'z';
			f++;
		} else if (*f == 'u' || *f == 'x' || *f == 'X') {
			k = 'u';
		} else if (*f == 'd' || *f == 'i') {
			k = 'd';
		} else if (*f == 's') {
			k = 's';
		} else {
			return -1;
		}
		if (n + 1 >= len)
			return -1;
		out[n++] = k;
	}
	out[n] = '\0';
	return 0;
}

static int format_ok(const struct r4_problem_info *pi)
{
	char kinds[32];

	if (!pi->format || !pi->args)
		return !pi->format && !pi->args;
	return !format_kinds(pi->format, kinds, sizeof(kinds)) &&
	       !strcmp(kinds, pi->args) && !strchr(pi->format, '\n');
}

static int name_ok(const char *name)
{
	if (!name || !name[0] || name[0] == '-')
		return 0;
	for (const char *p = name; *p; p++)
		if (!islower((unsigned char)*p) && !isdigit((unsigned char)*p)
		    && *p != '-' && *p != '+')
			return 0;
	return strcmp(name, "?") != 0;
}

/* The fix class and the pass agree: tree damage is the rebuild's; what
 * preen may fix is fixed at the open, by the space pass, or by the
 * layout pass (no byte a file reads changes). */
static int pass_fits(const struct r4_problem_info *pi)
{
	if ((pi->fix_class == R4_FIX_REBUILD) != (pi->pass == R4_PASS_REBUILD))
		return 0;
	if (pi->fix_class == R4_FIX_PREEN)
		return pi->pass == R4_PASS_OPEN || pi->pass == R4_PASS_SPACE ||
		       pi->pass == R4_PASS_CC_LAYOUT;
	return 1;
}

int main(void)
{
	int rows_of[R4_CHK_CODE_COUNT] = { 0 };
	const struct r4_problem_info *pi;
	unsigned n = 0;

	for (unsigned i = 0; (pi = r4_problem_row(i)) != NULL; i++, n++) {
		int dup = 0;

		ok(pi->code > 0 && pi->code < R4_CHK_CODE_COUNT,
		   "row %u: code %d is a code", i, pi->code);
		if (pi->code > 0 && pi->code < R4_CHK_CODE_COUNT)
			rows_of[pi->code]++;
		ok(name_ok(pi->name), "row %u: name '%s'", i,
		   pi->name ? pi->name : "(null)");
		for (unsigned j = 0; j < i; j++)
			if (pi->name && !strcmp(r4_problem_row(j)->name,
						pi->name))
				dup = 1;
		ok(!dup, "row %s: no other row has its name", pi->name);
		ok(strcmp(r4_fix_pass_name(pi->pass), "?") != 0,
		   "row %s: pass %d exists", pi->name, pi->pass);
		ok(pass_fits(pi), "row %s: pass %s fits its fix class",
		   pi->name, r4_fix_pass_name(pi->pass));
		ok(pi->context && pi->summary && fields_ok(pi),
		   "row %s: the template's fields are in its context",
		   pi->name);
		ok(format_ok(pi), "row %s: the format's conversions are its "
		   "argument kinds '%s'", pi->name,
		   pi->args ? pi->args : "(none)");
		ok(pi->code <= 0 || pi->code >= R4_CHK_CODE_COUNT ||
		   r4_problem_info(pi->code) == pi, "row %s: found by its code",
		   pi->name);
	}
	for (int k = 1; k < R4_CHK_CODE_COUNT; k++)
		ok(rows_of[k] == 1, "code %d: one row (%d)", k, rows_of[k]);
	ok(n == R4_CHK_CODE_COUNT - 1, "%u rows for %d codes", n,
	   R4_CHK_CODE_COUNT - 1);
	ok(!strcmp(r4_check_code_name(0), "?") &&
	   !strcmp(r4_check_code_name(R4_CHK_CODE_COUNT), "?") &&
	   !strcmp(r4_fix_pass_name(0), "?") &&
	   !strcmp(r4_fix_pass_name(R4_PASS_COUNT), "?"),
	   "no name outside the codes and passes");
	return tap_done();
}
