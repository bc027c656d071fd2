/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: every row of the problem table (libimage/check/problems.c):
 * one row per code, a unique stable name, a pass that exists and fits
 * the fix class, a summary whose fields ({block}, {item}, {key}, {oid},
 * {path}) are the ones the row's context says its reports name; and
 * every message of the checker and of the repair's checks before the
 * open (libimage/check/messages.h): a code with a row, a template that
 * parses, and call sites (read from the sources of libimage/check and
 * libimage/repair under $top_srcdir) that pass exactly the fields its template
 * names, of their kinds; every message used, every code with one. */
#include "config.h"
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "r4/check.h"
#include "libimage/check/say.h"

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

/* ---- the messages and their call sites ---- */

/* The fields a template names, as a bit set (bit f for field f); -1
 * when it does not parse: an unclosed brace, an unknown field, a style
 * on a string, an alternative without its '|'. */
static long long template_fields(const char *t)
{
	long long set = 0;
	int depth = 0;

	for (const char *p = t; *p; p++) {
		const char *q = p + 1;
		int f;

		if (*p == '}') {
			if (--depth < 0)
				return -1;
			continue;
		}
		if (*p == '|' && !depth)
			return -1;
		if (*p != '{')
			continue;
		while (*q >= 'a' && *q <= 'z')
			q++;
		f = chk_field_find(p + 1, (size_t)(q - p - 1));
		if (!f || !strchr("}:?~", *q) || !*q)
			return -1;
		if (*q == ':' && chk_field_kind(f) != 'u')
			return -1;
		if (*q == '~' && chk_field_kind(f) != 'u')
			return -1;
		if ((*q == '?' || *q == '~') && !strchr(q, '|'))
			return -1;
		set |= 1LL << f;
		if (*q == '}') {
			p = q;
		} else if (*q == ':') {
			p = strchr(q, '}');
			if (!p)
				return -1;
		} else {
			depth++;
			p = q;
		}
	}
	return depth ? -1 : set;
}

/* The reporting macros and relays a call site uses: the argument that
 * names the message and the fields the callee adds itself. */
static const struct {
	const char *name;
	int id_arg;
	const char *implied;
} callers[] = {
	{ "CHK_SAY", 1, "" }, { "CHK_SAY0", 1, "" },
	{ "CHK_OBJ_SAY", 2, "kind oid" }, { "CHK_OBJ_SAY0", 2, "kind oid" },
	{ "CHK_ENT_SAY", 2, "name dir tkey" },
	{ "CHK_ENT_SAY0", 2, "name dir tkey" },
	{ "CHK_NOTE", 1, "" },
	{ "ext_problem", 1, "unit start width" },
	{ "tell", 2, "" }, { "say_into", 2, "" },
};

struct use {
	unsigned calls;		/* call sites naming the message */
	unsigned bad;		/* of them, with other fields */
};

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1))) {
		buf[fread(buf, 1, (size_t)n, f)] = '\0';
	}
	fclose(f);
	return buf;
}

/* The end of the call whose '(' is at p (past its ')'), skipping
 * strings and character constants; NULL when it does not close. */
static const char *call_end(const char *p)
{
	int depth = 0;

	for (; *p; p++) {
		if (*p == '"' || *p == '\'') {
			char q = *p;

			for (p++; *p && *p != q; p++)
				if (*p == '\\' && p[1])
					p++;
			if (!*p)
				return NULL;
		} else if (*p == '(') {
			depth++;
		} else if (*p == ')' && --depth == 0) {
			return p + 1;
		}
	}
	return NULL;
}

/* Start of argument k (0-based) of the call at open ('('), and its end
 * in *end; NULL when the call has fewer. */
static const char *call_arg(const char *open, const char *stop, int k,
			    const char **end)
{
	int depth = 0, n = 0;
	const char *start = open + 1;

	for (const char *p = open; p < stop; p++) {
		if (*p == '(' || *p == '{' || *p == '[') {
			depth++;
		} else if (*p == ')' || *p == '}' || *p == ']') {
			if (--depth == 0) {
				if (n == k) {
					*end = p;
					return start;
				}
				return NULL;
			}
		} else if (*p == ',' && depth == 1) {
			if (n == k) {
				*end = p;
				return start;
			}
			n++;
			start = p + 1;
		}
	}
	return NULL;
}

static int msg_by_name(const char *p, size_t len)
{
	const struct chk_msg_row *m;

	for (unsigned i = 0; (m = chk_msg_row(i)) != NULL; i++)
		if (strlen(m->id_name) == len && !memcmp(m->id_name, p, len))
			return m->id;
	return CHK_M_NONE;
}

/* The fields a call passes (CHK_U(f, ...) and CHK_S(f, ...), of their
 * kinds) and those its callee adds; -1 on a field of the wrong kind or
 * an unknown one. */
static long long call_fields(const char *p, const char *end,
			     const char *implied)
{
	long long set = 0;

	for (const char *w = implied; *w;) {
		size_t n = strcspn(w, " ");

		set |= 1LL << chk_field_find(w, n);
		w += n + (w[n] == ' ');
	}
	for (; (p = strstr(p, "CHK_")) != NULL && p < end; p += 4) {
		const char *f = p + 6, *q = f;
		int field;

		if ((p[4] != 'U' && p[4] != 'S') || p[5] != '(')
			continue;
		while (*q >= 'a' && *q <= 'z')
			q++;
		field = chk_field_find(f, (size_t)(q - f));
		if (!field || *q != ',' ||
		    chk_field_kind(field) != (p[4] == 'U' ? 'u' : 's'))
			return -1;
		set |= 1LL << field;
	}
	return set;
}

/* One call site at p (its callee's name), of caller k: every message it
 * may name must have exactly its fields. */
static void scan_call(const char *file, const char *src, const char *p,
		      unsigned k, struct use *use)
{
	const char *open = p + strlen(callers[k].name), *end, *a, *aend;
	unsigned line = 1, named = 0;
	long long got;

	for (const char *q = src; q < p; q++)
		line += *q == '\n';
	end = call_end(open);
	a = end ? call_arg(open, end, callers[k].id_arg, &aend) : NULL;
	if (!a) {
		ok(0, "%s:%u: %s call parses", file, line, callers[k].name);
		return;
	}
	got = call_fields(aend, end, callers[k].implied);
	for (const char *t = a; (t = strstr(t, "CHK_M_")) && t < aend;) {
		const char *q = t + 6;
		int id;

		while (isupper((unsigned char)*q) || isdigit((unsigned char)*q)
		       || *q == '_')
			q++;
		id = msg_by_name(t + 6, (size_t)(q - t - 6));
		named++;
		if (!id) {
			ok(0, "%s:%u: %.*s is a message", file, line,
			   (int)(q - t), t);
		} else {
			use[id].calls++;
			if (got != template_fields(chk_msg_info(id)->text)) {
				use[id].bad++;
				ok(0, "%s:%u: the fields passed are the ones "
				   "of %s's template", file, line,
				   chk_msg_info(id)->id_name);
			}
		}
		t = q;
	}
	if (!named)
		ok(0, "%s:%u: %s names its message (CHK_M_...)", file, line,
		   callers[k].name);
}

static int is_ident(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

static unsigned scan_file(const char *dir, const char *name,
			  struct use *use)
{
	char path[8192];
	char *src;
	unsigned calls = 0;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    (int)sizeof(path))
		tap_bail("path too long: %s/%s", dir, name);
	src = slurp(path);
	tap_require(src != NULL, "read %s", path);
	for (unsigned k = 0; k < sizeof(callers) / sizeof(callers[0]); k++) {
		size_t n = strlen(callers[k].name);

		for (const char *p = src; (p = strstr(p, callers[k].name));
		     p += n) {
			if ((p > src && is_ident(p[-1])) || p[n] != '(')
				continue;
			/* the definition of a relay: not a call */
			if (p > src + 5 && !strncmp(p - 5, "void ", 5))
				continue;
			scan_call(name, src, p, k, use);
			calls++;
		}
	}
	free(src);
	return calls;
}

/* The renderer: styles, alternatives, plurals, nesting, a field not
 * given, a cut at the buffer's end. */
static void check_render(void)
{
	char out[256], small[8];

	chk_render(chk_msg_info(CHK_M_NLINK)->text,
		   (const struct chk_arg[]){ CHK_S(kind, "file"),
					     CHK_U(oid, 0x2a), CHK_U(have, 3),
					     CHK_U(n, 1), CHK_U(root, 1),
					     CHK_ARGS_END }, out, sizeof(out));
	ok(!strcmp(out, "file 2a: nlink is 3, but 1 entry name it (+1 for "
		   "the root)"), "NLINK renders: %s", out);
	chk_render(chk_msg_info(CHK_M_NLINK)->text,
		   (const struct chk_arg[]){ CHK_S(kind, "directory"),
					     CHK_U(oid, 0x10000),
					     CHK_U(have, 0), CHK_U(n, 2),
					     CHK_U(root, 0), CHK_ARGS_END },
		   out, sizeof(out));
	ok(!strcmp(out, "directory 10000: nlink is 0, but 2 entries name "
		   "it"), "NLINK renders its plural: %s", out);
	chk_render("{path?{path} (object {oid})|{oid}} {mode:o6} "
		   "{status} {next:#x} {n:x} {what}",
		   (const struct chk_arg[]){ CHK_S(path, ""), CHK_U(oid, 255),
					     CHK_U(mode, 0755),
					     CHK_U(status, 2), CHK_U(next, 17),
					     CHK_U(n, 31), CHK_ARGS_END },
		   out, sizeof(out));
	ok(!strcmp(out, "ff 000755 0x2 0x11 1f ?"), "styles, nesting and a "
	   "field not given: %s", out);
	chk_render("{path?{path} (object {oid})|{oid}}",
		   (const struct chk_arg[]){ CHK_S(path, "/a/b"),
					     CHK_U(oid, 255), CHK_ARGS_END },
		   out, sizeof(out));
	ok(!strcmp(out, "/a/b (object ff)"), "the first alternative: %s",
	   out);
	chk_render("{what} and more", (const struct chk_arg[]){
		   CHK_S(what, "0123456789"), CHK_ARGS_END }, small,
		   sizeof(small));
	ok(!strcmp(small, "0123456"), "cut at the buffer's end: %s", small);
}

static void check_messages(void)
{
	const char *top = getenv("top_srcdir");
	struct use use[CHK_M_COUNT] = { { 0, 0 } };
	int has_msg[R4_CHK_CODE_COUNT] = { 0 };
	const struct chk_msg_row *m;
	char dir[4096];
	struct dirent *de;
	unsigned calls = 0, files = 0, n = 0;
	DIR *d;

	for (unsigned i = 0; (m = chk_msg_row(i)) != NULL; i++, n++) {
		ok(m->id == (int)i + 1 && chk_msg_info(m->id) == m,
		   "message %s: found by its id", m->id_name);
		ok(r4_problem_info(m->code) != NULL, "message %s: code %d has "
		   "a row", m->id_name, m->code);
		ok(template_fields(m->text) >= 0, "message %s: the template "
		   "parses: %s", m->id_name, m->text);
		if (m->code > 0 && m->code < R4_CHK_CODE_COUNT)
			has_msg[m->code] = 1;
	}
	ok(n == CHK_M_COUNT - 1, "%u message rows for %d ids", n,
	   CHK_M_COUNT - 1);
	/* the checker, and the repair's checks before the open */
	for (unsigned r = 0; r < 2; r++) {
		snprintf(dir, sizeof(dir), "%s/libimage/%s", top ? top : ".",
			 r ? "repair" : "check");
		d = opendir(dir);
		tap_require(d != NULL, "open %s (set top_srcdir)", dir);
		while ((de = readdir(d)) != NULL) {
			size_t l = strlen(de->d_name);

			if (l < 3 || strcmp(de->d_name + l - 2, ".c"))
				continue;
			calls += scan_file(dir, de->d_name, use);
			files++;
		}
		closedir(d);
	}
	ok(files >= 10 && calls >= 80, "%u call sites in %u files of "
	   "libimage/check and libimage/repair", calls, files);
	for (int id = CHK_M_NONE + 1; id < CHK_M_COUNT; id++)
		ok(use[id].calls > 0 && !use[id].bad, "message %s: used by "
		   "%u call site(s), all with its template's fields",
		   chk_msg_info(id)->id_name, use[id].calls);
	for (int k = 1; k < R4_CHK_CODE_COUNT; k++)
		ok(has_msg[k], "code %s: the checker or the repair's "
		   "checks before the open have a message for it",
		   r4_check_code_name(k));
}

static void check_rows(void)
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
}

int main(void)
{
	check_rows();
	check_messages();
	check_render();
	return tap_done();
}
