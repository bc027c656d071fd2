/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the checker's messages, rendered from the problem table (as
 * e2fsck's fix_problem()): a report names its message (CHK_M_*, one row
 * each in libimage/check/messages.h, under its problem code) and
 * hands over the values the message's template names: the object id,
 * a name, a count ... The template renders them; no report writes its
 * own text.
 *
 * Template syntax: {field} is the field's value (numbers in the field's
 * style: decimal, or hex ('x', 'X' with 0x) as the field list says);
 * {field:x}, {field:#x},
 * {field:d} and {field:o6} pick another style; {field?A|B} is A when
 * the field is non-zero (a number) or non-empty (a string), else B;
 * {field~A|B} is A when the number is 1, else B (singular and plural).
 * A and B may hold fields themselves. tests/unit/test_problems reads
 * every call site and checks that the fields it passes are the ones
 * its message's template names. */
#ifndef R4_LIBIMAGE_CHECK_SAY_H
#define R4_LIBIMAGE_CHECK_SAY_H

#include <stddef.h>
#include <stdint.h>

/* The fields a template can name: name, kind ('u' a number, 's' a
 * string) and default style ('d' decimal, 'x' hex). */
#define CHK_FIELDS(F) \
	F(oid, 'u', 'x') F(dir, 'u', 'x') F(id, 'u', 'x') \
	F(next, 'u', 'x') F(at, 'u', 'd') F(parent, 'u', 'd') \
	F(pitem, 'u', 'd') F(first, 'u', 'd') F(last, 'u', 'd') \
	F(start, 'u', 'd') F(width, 'u', 'd') F(from, 'u', 'd') \
	F(to, 'u', 'd') F(n, 'u', 'd') F(count, 'u', 'd') \
	F(blocks, 'u', 'd') F(level, 'u', 'd') F(have, 'u', 'd') \
	F(want, 'u', 'd') F(unit, 'u', 'd') F(size, 'u', 'd') \
	F(end, 'u', 'd') F(off, 'u', 'd') F(prevoff, 'u', 'd') \
	F(pos, 'u', 'd') F(prev, 'u', 'd') F(len, 'u', 'd') \
	F(cluster, 'u', 'd') F(bit, 'u', 'd') F(plugin, 'u', 'd') \
	F(mode, 'u', 'o') F(status, 'u', 'X') F(known, 'u', 'X') \
	F(rdk, 'u', 'd') F(root, 'u', 'd') F(above, 'u', 'd') \
	F(cut, 'u', 'd') F(corrupted, 'u', 'd') F(damaged, 'u', 'd') \
	F(destroyed, 'u', 'd') F(ioerror, 'u', 'd') F(own, 'u', 'd') \
	F(what, 's', 's') F(name, 's', 's') F(kind, 's', 's') \
	F(path, 's', 's') F(via, 's', 's') F(owner, 's', 's') \
	F(tkey, 's', 's') F(lkey, 's', 's') F(pname, 's', 's') \
	F(text, 's', 's')

enum chk_field {
	CHK_F_NONE = 0,
#define CHK_F_ENUM(name, kind, style) CHK_F_##name,
	CHK_FIELDS(CHK_F_ENUM)
#undef CHK_F_ENUM
	CHK_F_COUNT
};

/* The messages, one per form a report takes (messages.h). */
enum chk_msg {
	CHK_M_NONE = 0,
#define CHK_M_ENUM(id, code, text) CHK_M_##id,
#include "libimage/check/messages.h"
#undef CHK_M_ENUM
	CHK_M_COUNT
};

struct chk_msg_row {
	int id;			/* enum chk_msg */
	int code;		/* enum r4_check_code */
	const char *id_name;	/* "NODE_EMPTY" for CHK_M_NODE_EMPTY */
	const char *text;	/* the template */
};

/* Row i of the messages in their order, NULL past the last; the row of
 * a message id, NULL when unknown. */
const struct chk_msg_row *chk_msg_row(unsigned i);
const struct chk_msg_row *chk_msg_info(int id);
/* A field's name, kind ('u', 's') and style; NULL / 0 when unknown. */
const char *chk_field_name(int f);
int chk_field_kind(int f);
/* The field of this name (len bytes), CHK_F_NONE when none. */
int chk_field_find(const char *name, size_t len);

/* One value a report hands over; a list ends with CHK_F_NONE. */
struct chk_arg {
	int f;			/* enum chk_field */
	uint64_t u;
	const char *s;
};
#define CHK_U(field, v) { CHK_F_##field, (uint64_t)(v), NULL }
#define CHK_S(field, v) { CHK_F_##field, 0, (v) }
#define CHK_ARGS_END { CHK_F_NONE, 0, NULL }

/* Render template t with args into out (n bytes, always terminated;
 * cut when longer). A field not given renders as "?". */
void chk_render(const char *t, const struct chk_arg *args, char *out,
		size_t n);

struct chk;
struct chk_obj;
struct chk_ent;
struct fmt_key;

/* Report message m (counted, handed to the callback unless over the
 * limit). key may be NULL; blk R4_CHECK_NO_BLOCK and item -1 when none. */
void chk_say(struct chk *c, int m, uint64_t blk, int item,
	     const struct fmt_key *key, const struct chk_arg *args);
/* The same about object o: its block, item and key; the fields kind
 * ("file", "directory" ...) and oid are added. */
void chk_obj_say(struct chk *c, const struct chk_obj *o, int m,
		 const struct chk_arg *args);
/* The same about entry e: its block, item and key; the fields name
 * (escaped), dir (the directory's oid) and tkey (the key it points
 * to) are added. */
void chk_ent_say(struct chk *c, const struct chk_ent *e, int m,
		 const struct chk_arg *args);
/* Hand a line to the callback without counting it (summaries). */
void chk_note(struct chk *c, int m, uint64_t blk,
	      const struct chk_arg *args);

#define CHK_SAY(c, m, blk, item, key, ...) \
	chk_say(c, m, blk, item, key, \
		(const struct chk_arg[]){ __VA_ARGS__, CHK_ARGS_END })
#define CHK_SAY0(c, m, blk, item, key) \
	chk_say(c, m, blk, item, key, NULL)
#define CHK_OBJ_SAY(c, o, m, ...) \
	chk_obj_say(c, o, m, \
		    (const struct chk_arg[]){ __VA_ARGS__, CHK_ARGS_END })
#define CHK_OBJ_SAY0(c, o, m) chk_obj_say(c, o, m, NULL)
#define CHK_ENT_SAY(c, e, m, ...) \
	chk_ent_say(c, e, m, \
		    (const struct chk_arg[]){ __VA_ARGS__, CHK_ARGS_END })
#define CHK_ENT_SAY0(c, e, m) chk_ent_say(c, e, m, NULL)
#define CHK_NOTE(c, m, blk, ...) \
	chk_note(c, m, blk, \
		 (const struct chk_arg[]){ __VA_ARGS__, CHK_ARGS_END })

#endif
