/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the checker's reports: a message's template (messages.h)
 * rendered with the values the report hands over (say.h), then counted
 * and handed to the caller's callback. */
#include "config.h"
#include <stdio.h>
#include <string.h>
#include "libimage/check/check.h"
#include "libimage/check/say.h"

static const struct {
	const char *name;
	char kind, style;
} fields[CHK_F_COUNT] = {
#define CHK_F_ROW(n, k, s) [CHK_F_##n] = { #n, k, s },
	CHK_FIELDS(CHK_F_ROW)
#undef CHK_F_ROW
};

const char *chk_field_name(int f)
{
	return f > CHK_F_NONE && f < CHK_F_COUNT ? fields[f].name : NULL;
}

int chk_field_kind(int f)
{
	return f > CHK_F_NONE && f < CHK_F_COUNT ? fields[f].kind : 0;
}

int chk_field_find(const char *name, size_t len)
{
	for (int f = CHK_F_NONE + 1; f < CHK_F_COUNT; f++)
		if (strlen(fields[f].name) == len &&
		    !memcmp(fields[f].name, name, len))
			return f;
	return CHK_F_NONE;
}

/* Output of the renderer: a buffer filled up to its end. */
struct out {
	char *p;
	size_t n, len;
};

static void put(struct out *o, const char *s, size_t len)
{
	for (size_t i = 0; i < len && o->len + 1 < o->n; i++)
		o->p[o->len++] = s[i];
	o->p[o->len] = '\0';
}

static const struct chk_arg *arg_of(const struct chk_arg *a, int f)
{
	for (; a && a->f != CHK_F_NONE; a++)
		if (a->f == f)
			return a;
	return NULL;
}

/* The end of a part of a template (at stop, or at a '|' or '}' closing
 * it when stop is 0), over nested braces. */
static const char *part_end(const char *t, const char *end, char stop)
{
	int depth = 0;

	for (; t < end; t++) {
		if (*t == '{')
			depth++;
		else if (*t == '}' && depth)
			depth--;
		else if (!depth && (*t == stop || *t == '}'))
			return t;
	}
	return end;
}

static void render(const char *t, const char *end,
		   const struct chk_arg *args, struct out *o);

static void value(const struct chk_arg *a, int f, const char *spec,
		  size_t slen, struct out *o)
{
	char style = fields[f].style, buf[32];
	int n;

	if (!a) {
		put(o, "?", 1);
		return;
	}
	if (fields[f].kind == 's') {
		put(o, a->s ? a->s : "?", strlen(a->s ? a->s : "?"));
		return;
	}
	if (slen)
		style = slen == 2 && spec[0] == '#' ? 'X' : spec[0];
	if (style == 'x')
		n = snprintf(buf, sizeof(buf), "%llx", (unsigned long long)a->u);
	else if (style == 'X')
		n = snprintf(buf, sizeof(buf), "%#llx",
			     (unsigned long long)a->u);
	else if (style == 'o')
		n = snprintf(buf, sizeof(buf), "%06llo",
			     (unsigned long long)a->u);
	else
		n = snprintf(buf, sizeof(buf), "%llu", (unsigned long long)a->u);
	put(o, buf, n > 0 ? (size_t)n : 0);
}

/* One {...} from t (past the '{'); returns the position past its '}'. */
static const char *field(const char *t, const char *end,
			 const struct chk_arg *args, struct out *o)
{
	const char *name = t, *a, *b, *close;
	const struct chk_arg *v;
	int f, yes;

	while (t < end && *t >= 'a' && *t <= 'z')
		t++;
	f = chk_field_find(name, (size_t)(t - name));
	v = f ? arg_of(args, f) : NULL;
	if (t < end && (*t == '?' || *t == '~')) {
		a = t + 1;
		b = part_end(a, end, '|');
		close = part_end(b < end && *b == '|' ? b + 1 : b, end, 0);
		if (*t == '~')
			yes = v && v->u == 1;
		else
			yes = v && (f && fields[f].kind == 's' ?
				    v->s && v->s[0] : v->u != 0);
		if (yes)
			render(a, b, args, o);
		else if (b < close)
			render(b + 1, close, args, o);
		return close < end ? close + 1 : end;
	}
	close = part_end(t, end, 0);
	if (f)
		value(v, f, t + (t < close && *t == ':'),
		      t < close && *t == ':' ? (size_t)(close - t - 1) : 0, o);
	else
		put(o, "?", 1);
	return close < end ? close + 1 : end;
}

static void render(const char *t, const char *end,
		   const struct chk_arg *args, struct out *o)
{
	while (t < end) {
		const char *brace = memchr(t, '{', (size_t)(end - t));

		if (!brace) {
			put(o, t, (size_t)(end - t));
			return;
		}
		put(o, t, (size_t)(brace - t));
		t = field(brace + 1, end, args, o);
	}
}

void chk_render(const char *t, const struct chk_arg *args, char *out,
		size_t n)
{
	struct out o = { out, n, 0 };

	if (!n)
		return;
	out[0] = '\0';
	render(t, t + strlen(t), args, &o);
}

static void emit(struct chk *c, int count, int m, uint64_t blk, int item,
		 const struct fmt_key *key, const struct chk_arg *args)
{
	const struct chk_msg_row *row = chk_msg_info(m);
	struct r4_check_problem p;
	char msg[1024], ks[FMT_KEY_STR_MAX] = "";
	unsigned max = c->opts ? c->opts->max_reports : 0;

	if (count)
		c->rep->problems++;
	if (!c->opts || !c->opts->problem || (max && c->rep->reported >= max))
		return;
	chk_render(row ? row->text : "?", args, msg, sizeof(msg));
	if (key)
		fmt_key_str(key, ks, sizeof(ks));
	p.code = row ? row->code : 0;
	p.block = blk;
	p.item = item;
	p.key = ks;
	p.msg = msg;
	c->rep->reported++;
	c->opts->problem(c->opts->problem_ctx, &p);
}

void chk_say(struct chk *c, int m, uint64_t blk, int item,
	     const struct fmt_key *key, const struct chk_arg *args)
{
	emit(c, 1, m, blk, item, key, args);
}

void chk_note(struct chk *c, int m, uint64_t blk,
	      const struct chk_arg *args)
{
	emit(c, 0, m, blk, -1, NULL, args);
}
