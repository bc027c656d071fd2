/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the checker's object pass, over the tables the walk filled:
 * every entry names an existing stat data; "." names its directory and
 * ".." the directory that names it (the root's ".." the root); a
 * directory has one name and as many entries as its size says; every
 * object is reachable from the root; nlink equals the number of entries
 * naming the object (plus one for the root, whose name lives in no
 * directory: 3 on a fresh volume, one more per subdirectory); bodies
 * belong to regular files and stay within their size; object ids and
 * the file counter agree with the super block. */
#include "config.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/check/check.h"
#include "format/item.h"
#include "format/super.h"

#define MODE_FMT 0170000u
#define MODE_DIR 0040000u
#define MODE_REG 0100000u
#define MODE_LNK 0120000u

struct sem {
	struct chk *c;
	struct chk_oid *byoid;
	uint32_t *tgt;		/* per entry: target object or CHK_NONE */
	uint32_t root;
	struct chk_dedge *edges;	/* entries naming a directory */
	size_t *eent;			/* their entry indexes */
	size_t nedges;
};

int chk_is_dir(const struct chk_obj *o)
{
	return (o->flags & CHK_OBJ_LW) && (o->mode & MODE_FMT) == MODE_DIR;
}

static int reporting(const struct chk *c)
{
	unsigned max = c->opts ? c->opts->max_reports : 0;

	return c->opts && c->opts->problem && (!max || c->rep->reported < max);
}

static void obj_key(const struct chk_obj *o, struct fmt_key *k)
{
	k->el[0] = o->el0;
	k->el[1] = o->el1;
	k->el[2] = o->el2;
	k->el[3] = 0;
}

static const char *obj_kind(const struct chk_obj *o)
{
	if (!(o->flags & CHK_OBJ_LW))
		return "object";
	switch (o->mode & MODE_FMT) {
	case MODE_DIR: return "directory";
	case MODE_REG: return "file";
	case MODE_LNK: return "symlink";
	default: return "special file";
	}
}

/* Name and full key of entry e, read back from its block (only done
 * when a problem is reported). "?" when that fails. */
static void entry_info(struct chk *c, const struct chk_ent *e, char *name,
		       size_t len, struct fmt_key *key)
{
	struct fmt_item_header ih;
	struct fmt_cde40_entry ce;
	size_t off, blen, n;
	char buf[32];

	snprintf(name, len, "?");
	memset(key, 0, sizeof(*key));
	key->el[0] = e->dir << 4;
	if (vol_read_block(c->vol, e->blk, c->scratch, "tree node", NULL) ||
	    fmt_node_ih_decode(c->scratch, c->bs, c->pol, e->item, &ih) ||
	    fmt_node_item_body(c->scratch, c->bs, c->pol, e->item, &off,
			       &blen) ||
	    fmt_cde40_entry(c->scratch + off, blen, c->pol, e->unit, &ce))
		return;
	fmt_cde40_entry_key(&ih.key, &ce, key);
	if (ce.name) {
		chk_name_str(ce.name, ce.name_len, name, len);
		return;
	}
	n = fmt_key_entry_name(key, c->pol, buf);
	chk_name_str((const uint8_t *)buf, n, name, len);
}

/* args with more appended (at most 16 in all). */
static void args_join(const struct chk_arg *args, const struct chk_arg *more,
		      size_t nmore, struct chk_arg *out)
{
	size_t n = 0;

	for (; args && args->f != CHK_F_NONE && n < 16 - nmore - 1; args++)
		out[n++] = *args;
	for (size_t i = 0; i < nmore; i++)
		out[n++] = more[i];
	out[n] = (struct chk_arg)CHK_ARGS_END;
}

void chk_ent_say(struct chk *c, const struct chk_ent *e, int m,
		 const struct chk_arg *args)
{
	struct fmt_key key, t = { { e->t0, e->t1, e->t2, 0 } };
	char name[1100] = "?", ts[FMT_KEY_STR_MAX];
	struct chk_arg all[16];

	if (!reporting(c)) {
		c->rep->problems++;
		return;
	}
	entry_info(c, e, name, sizeof(name), &key);
	fmt_key_str(&t, ts, sizeof(ts));
	args_join(args, (const struct chk_arg[]){ CHK_S(name, name),
						  CHK_U(dir, e->dir),
						  CHK_S(tkey, ts) }, 3, all);
	chk_say(c, m, e->blk, e->item, &key, all);
}

void chk_obj_say(struct chk *c, const struct chk_obj *o, int m,
		 const struct chk_arg *args)
{
	const struct chk_arg more[] = { CHK_S(kind, obj_kind(o)),
					CHK_U(oid, o->el2 & CHK_OID_MASK) };
	struct chk_arg all[16];
	struct fmt_key k;

	args_join(args, more, 2, all);
	obj_key(o, &k);
	chk_say(c, m, o->blk, o->item, &k, all);
}

static void check_objects(struct sem *s)
{
	struct chk *c = s->c;

	for (uint32_t i = 0; i < c->nobjs; i++) {
		if (i > 0 && s->byoid[i].oid == s->byoid[i - 1].oid)
			chk_sem_dup(c, &c->objs[s->byoid[i].idx]);
		chk_sem_object(c, &c->objs[i]);
	}
}

void chk_sem_dup(struct chk *c, const struct chk_obj *o)
{
	CHK_OBJ_SAY0(c, o, CHK_M_OBJECT_DUP);
}

void chk_sem_object(struct chk *c, const struct chk_obj *o)
{
	uint64_t oid = o->el2 & CHK_OID_MASK, loc = o->el0 >> 4;
	unsigned fmt = o->mode & MODE_FMT;

	if (oid > c->id_max || loc > c->id_max)
		c->id_max = oid > loc ? oid : loc;
	if (oid >= c->next_oid || loc >= c->next_oid)
		CHK_OBJ_SAY(c, o, CHK_M_OID_PAST_NEXT,
			    CHK_U(id, oid > loc ? oid : loc),
			    CHK_U(next, c->next_oid));
	if (!(o->flags & CHK_OBJ_LW)) {
		CHK_OBJ_SAY0(c, o, CHK_M_SD_NO_LW);
		return;
	}
	if (fmt == MODE_LNK && !(o->flags & CHK_OBJ_SYMLINK))
		CHK_OBJ_SAY0(c, o, CHK_M_SD_NO_SYMLINK);
	else if (fmt != MODE_LNK && (o->flags & CHK_OBJ_SYMLINK))
		CHK_OBJ_SAY(c, o, CHK_M_SD_STRAY_SYMLINK,
			    CHK_U(mode, o->mode));
	if (fmt == MODE_REG && (o->flags & CHK_OBJ_CCREG) &&
	    o->size > ((uint64_t)1 << FMT_CTAIL40_MIN_SHIFT))
		chk_ccreg_conv(c, o);	/* doc/compress.md §6 */
	if (fmt == MODE_DIR)
		c->rep->dirs++;
	else if (fmt == MODE_REG)
		c->rep->files++;
	else if (fmt == MODE_LNK)
		c->rep->symlinks++;
	else
		c->rep->specials++;
}

/* "." and ".." of directory d (entry j). */
static void dot_entry(struct sem *s, size_t j, uint32_t d, uint32_t t)
{
	struct chk_obj *dir = &s->c->objs[d];

	if (s->c->ents[j].flags & CHK_ENT_DOT) {
		dir->ndot++;
		if (t != d)
			CHK_ENT_SAY0(s->c, &s->c->ents[j], CHK_M_DOT_ELSEWHERE);
		return;
	}
	dir->ndotdot++;
	dir->dotdot = t;
}

static void resolve_entry(struct sem *s, size_t j)
{
	struct chk *c = s->c;
	const struct chk_ent *e = &c->ents[j];
	uint32_t t = chk_obj_find(c, e->t0, e->t1, e->t2), d;

	s->tgt[j] = t;
	if (t == CHK_NONE)
		CHK_ENT_SAY0(c, e, CHK_M_ENTRY_MISSING);
	else if (c->objs[t].links < UINT32_MAX)
		c->objs[t].links++;
	d = chk_oid_find(c, s->byoid, e->dir);
	if (d == CHK_NONE || !chk_is_dir(&c->objs[d])) {
		CHK_ENT_SAY0(c, e, d == CHK_NONE ? CHK_M_ENTRY_NO_DIR :
			    CHK_M_ENTRY_NOT_DIR);
		return;
	}
	c->objs[d].nentries++;
	if (t == CHK_NONE)
		return;
	if (e->flags) {
		dot_entry(s, j, d, t);
		return;
	}
	if (chk_is_dir(&c->objs[t])) {
		s->edges[s->nedges].d = d;
		s->edges[s->nedges].t = t;
		s->eent[s->nedges++] = j;
	}
}

void chk_second_name(struct chk *c, const struct chk_ent *e, int root,
		     int above)
{
	CHK_ENT_SAY(c, e, CHK_M_SECOND_NAME, CHK_U(root, root),
		    CHK_U(above, above));
}

int chk_ent_own_name(struct chk *c, const struct chk_ent *e,
		     const struct chk_obj *o)
{
	char name[16];
	struct fmt_key key;

	if (c->pol != FMT_KEY_LARGE)
		return 0;
	entry_info(c, e, name, sizeof(name), &key);
	return key.el[1] == o->el1;
}

static int sem_own(void *ctx, size_t i)
{
	struct sem *s = ctx;

	return chk_ent_own_name(s->c, &s->c->ents[s->eent[i]],
				&s->c->objs[s->edges[i].t]);
}

/* The one name of every directory (dirgraph.c): its parent; every other
 * entry naming a directory is a second name, reported in entry order. */
static int names(struct sem *s)
{
	struct chk *c = s->c;
	uint32_t n = (uint32_t)c->nobjs;
	uint32_t *dotdot = malloc((n ? n : 1) * sizeof(*dotdot));
	uint32_t *first = malloc((n ? n : 1) * sizeof(*first));
	int rc = -ENOMEM;

	free(c->second);
	c->second = calloc(c->nents ? c->nents : 1, 1);
	if (!dotdot || !first || !c->second)
		goto out;
	for (uint32_t v = 0; v < n; v++)
		dotdot[v] = chk_is_dir(&c->objs[v]) ? c->objs[v].dotdot
						    : CHK_NONE;
	rc = chk_dir_names(n, s->root, dotdot, s->edges, s->nedges, sem_own, s,
			   first);
	if (rc)
		goto out;
	for (uint32_t v = 0; v < n; v++)
		if (first[v] != CHK_NONE) {
			c->objs[v].parent = s->edges[first[v]].d;
			c->objs[v].flags |= CHK_OBJ_HAS_PARENT;
		}
	for (size_t i = 0; i < s->nedges; i++) {
		const struct chk_dedge *e = &s->edges[i];

		if (first[e->t] == i)
			continue;
		c->second[s->eent[i]] = 1;
		chk_second_name(c, &c->ents[s->eent[i]], e->t == s->root,
				chk_dir_above(n, first, s->edges, e->t, e->d));
	}
out:
	free(dotdot);
	free(first);
	return rc;
}

static void check_dirs(struct sem *s)
{
	struct chk *c = s->c;

	for (uint32_t i = 0; i < c->nobjs; i++) {
		struct chk_obj *o = &c->objs[i];
		uint32_t want = i == s->root ? i : o->parent;

		if (!chk_is_dir(o))
			continue;
		chk_sem_dir(c, o, want != CHK_NONE && o->dotdot != want,
			    o->dotdot == CHK_NONE ? 0 :
			    c->objs[o->dotdot].el2 & CHK_OID_MASK,
			    want == CHK_NONE ? 0 :
			    c->objs[want].el2 & CHK_OID_MASK);
	}
}

void chk_sem_dir(struct chk *c, const struct chk_obj *o, int dotdot_wrong,
		 uint64_t dotdot_oid, uint64_t want_oid)
{
	if (o->ndot != 1)
		CHK_OBJ_SAY(c, o, CHK_M_DOT_COUNT, CHK_U(n, o->ndot));
	if (o->ndotdot != 1)
		CHK_OBJ_SAY(c, o, CHK_M_DOTDOT_COUNT, CHK_U(n, o->ndotdot));
	else if (dotdot_wrong)
		CHK_OBJ_SAY(c, o, CHK_M_DOTDOT_WRONG, CHK_U(id, dotdot_oid),
			    CHK_U(dir, want_oid));
	if (o->size != o->nentries)
		CHK_OBJ_SAY(c, o, CHK_M_DIR_SIZE, CHK_U(size, o->size),
			    CHK_U(n, o->nentries));
}

static int reach(struct sem *s)
{
	struct chk *c = s->c;
	uint32_t *queue, head = 0, tail = 0;

	if (s->root == CHK_NONE)
		return 0;
	queue = malloc((c->nobjs ? c->nobjs : 1) * sizeof(*queue));
	if (!queue)
		return -ENOMEM;
	c->objs[s->root].flags |= CHK_OBJ_REACHED;
	queue[tail++] = s->root;
	while (head < tail) {
		const struct chk_obj *d = &c->objs[queue[head++]];
		uint64_t oid = d->el2 & CHK_OID_MASK;

		for (size_t j = chk_ent_first(c, oid);
		     j < c->nents && c->ents[j].dir == oid; j++) {
			uint32_t t = s->tgt[j];

			if (t == CHK_NONE || c->ents[j].flags ||
			    (c->objs[t].flags & CHK_OBJ_REACHED))
				continue;
			c->objs[t].flags |= CHK_OBJ_REACHED;
			if (chk_is_dir(&c->objs[t]))
				queue[tail++] = t;
		}
	}
	free(queue);
	return 0;
}

static void check_links(struct sem *s)
{
	struct chk *c = s->c;

	for (uint32_t i = 0; i < c->nobjs; i++)
		chk_sem_links(c, &c->objs[i], i == s->root);
}

void chk_sem_links(struct chk *c, const struct chk_obj *o, int is_root)
{
	uint64_t want = (uint64_t)o->links + (is_root != 0);

	if (!(o->flags & CHK_OBJ_REACHED))
		CHK_OBJ_SAY(c, o, CHK_M_UNREACHABLE, CHK_U(n, o->links));
	if ((o->flags & CHK_OBJ_LW) && o->nlink != want)
		CHK_OBJ_SAY(c, o, CHK_M_NLINK, CHK_U(have, o->nlink),
			    CHK_U(n, o->links), CHK_U(root, is_root));
}

static void check_body(struct sem *s, const struct chk_body *b)
{
	struct chk *c = s->c;
	uint32_t i = chk_obj_find(c, b->el0, b->el1, b->el2);

	chk_sem_body(c, b, i == CHK_NONE ? NULL : &c->objs[i]);
}

void chk_sem_body(struct chk *c, const struct chk_body *b,
		  const struct chk_obj *o)
{
	struct fmt_key k = { { b->el0, b->el1, b->el2, 0 } };

	if (!o) {
		CHK_SAY(c, CHK_M_BODY_NO_SD, b->blk, b->item, &k,
			CHK_U(end, b->end));
		return;
	}
	if (!(o->flags & CHK_OBJ_LW))
		return;
	if ((o->mode & MODE_FMT) != MODE_REG) {
		CHK_OBJ_SAY(c, o, CHK_M_BODY_NOT_REG, CHK_U(at, b->blk),
			    CHK_U(pos, b->item));
		return;
	}
	if (b->kinds & CHK_BODY_CTAIL) {
		chk_ccreg_body(c, b); /* compressed: doc/compress.md §6 */
		return;
	}
	/* The kernel reads a page without an item as an error;
	 * fsck.reiser4 calls it a break (reg40_hole_cure). */
	if (b->gap_end)
		CHK_OBJ_SAY(c, o, CHK_M_FILE_GAP, CHK_U(from, b->gap_at),
			    CHK_U(to, b->gap_end - 1));
}

/* The kernel reads a regular file through its items up to its size: a
 * page below the size without an item is a read error, and items past
 * the size are never read. So the size must lie within the last block
 * of an extent body, or equal a tail body's end; a file without body
 * items has size 0. Compressed bodies (ctail) are not measured. */
int chk_file_size_wrong(const struct chk *c, uint32_t i, uint64_t *end)
{
	const struct chk_obj *o = &c->objs[i];

	return chk_size_wrong(c, o, chk_body_find(c, o->el0, o->el1, o->el2),
			      end);
}

int chk_size_wrong(const struct chk *c, const struct chk_obj *o,
		   const struct chk_body *b, uint64_t *end)
{
	uint64_t lim;

	*end = b ? b->end : 0;
	if (b && (b->kinds & CHK_BODY_CTAIL))
		return 0;
	if (!b && o->size && chk_obj_is_ccreg(c, o))
		return 0;	/* all holes: clusters without items */
	if (o->size > *end)
		return 1;
	lim = o->size;
	if (b && (b->kinds & CHK_BODY_EXTENT) && lim % c->bs)
		lim = lim > UINT64_MAX - c->bs ? UINT64_MAX
					       : lim - lim % c->bs + c->bs;
	return *end > lim;
}

static void check_sizes(struct sem *s)
{
	struct chk *c = s->c;

	for (uint32_t i = 0; i < c->nobjs; i++) {
		const struct chk_obj *o = &c->objs[i];

		chk_sem_size(c, o, chk_body_find(c, o->el0, o->el1, o->el2));
	}
}

void chk_sem_size(struct chk *c, const struct chk_obj *o,
		  const struct chk_body *b)
{
	uint64_t end;

	if (!(o->flags & CHK_OBJ_LW) || (o->mode & MODE_FMT) != MODE_REG ||
	    !chk_size_wrong(c, o, b, &end))
		return;
	if (o->size > end || !b)
		CHK_OBJ_SAY(c, o, CHK_M_SIZE_PAST_BODY, CHK_U(size, o->size),
			    CHK_U(end, end));
	else
		CHK_OBJ_SAY(c, o, CHK_M_BODY_PAST_SIZE, CHK_U(end, end),
			    CHK_U(at, b->blk), CHK_U(pos, b->item),
			    CHK_U(size, o->size));
}

static void check_counts(struct sem *s)
{
	struct chk *c = s->c;

	chk_sem_counts(c, c->nobjs,
		       s->root == CHK_NONE ? NULL : &c->objs[s->root]);
}

void chk_sem_counts(struct chk *c, uint64_t nobjs,
		    const struct chk_obj *root)
{
	const struct r4_vol *vol = c->vol;

	c->rep->objects = nobjs;
	if (!root)
		CHK_SAY0(c, CHK_M_ROOT_NO_SD, R4_CHECK_NO_BLOCK, -1, NULL);
	else if (!chk_is_dir(root))
		CHK_OBJ_SAY0(c, root, CHK_M_ROOT_NOT_DIR);
	if (vol->sb_own.file_count != nobjs)
		CHK_SAY(c, CHK_M_FILE_COUNT, fmt_blk_format40(c->bs), -1, NULL,
			CHK_U(have, vol->sb_own.file_count), CHK_U(n, nobjs));
	if (vol->jf.last_flushed_tx && vol->jf.nr_files != nobjs)
		CHK_SAY(c, CHK_M_FILE_COUNT_FOOTER,
			fmt_blk_journal_footer(c->bs), -1, NULL,
			CHK_U(have, vol->jf.nr_files), CHK_U(n, nobjs));
}

int chk_semantic(struct chk *c)
{
	struct sem s = { .c = c };
	int rc = -ENOMEM;

	if (c->st)
		return chk_stream_semantic(c);
	chk_progress(c, "objects", 0, 4);
	chk_tables_sort(c);
	s.byoid = chk_oid_index(c);
	s.tgt = malloc((c->nents ? c->nents : 1) * sizeof(*s.tgt));
	s.edges = malloc((c->nents ? c->nents : 1) * sizeof(*s.edges));
	s.eent = malloc((c->nents ? c->nents : 1) * sizeof(*s.eent));
	if (!s.byoid || !s.tgt || !s.edges || !s.eent)
		goto out_free;
	s.root = chk_obj_find(c, (FMT_ROOT_LOCALITY << 4) | FMT_KEY_SD, 0,
			      FMT_ROOT_OID);
	check_objects(&s);
	chk_progress(c, "objects", 1, 4);
	for (size_t j = 0; j < c->nents; j++)
		resolve_entry(&s, j);
	rc = names(&s);
	if (rc)
		goto out_free;
	check_dirs(&s);
	chk_progress(c, "objects", 2, 4);
	rc = reach(&s);
	if (rc)
		goto out_free;
	check_links(&s);
	chk_progress(c, "objects", 3, 4);
	for (size_t j = 0; j < c->nbodies; j++)
		check_body(&s, &c->bodies[j]);
	check_sizes(&s);
	check_counts(&s);
	chk_progress(c, "objects", 4, 4);
out_free:
	free(s.edges);
	free(s.eent);
	free(s.tgt);
	free(s.byoid);
	return rc;
}
