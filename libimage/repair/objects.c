/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the repair's object pass, over the check's tables, or over the
 * bounded check's list of what its problems need (plan_listed) when the
 * round's problems are those the list serves (repair.c). A round
 * fixes names first (entries that point nowhere, "." and "..", second
 * names of directories, unreachable objects linked into /lost+found),
 * and only when there are none, values (nlink, directory and file
 * sizes): the names a round changes decide the values the next check
 * expects. The changes are collected first (by object and name, not by
 * block, as every commit moves nodes), then made through the libimage/obj
 * edit functions, R->batch per transaction. A batch that fails is
 * aborted and its changes are retried one per transaction, so one
 * change that cannot be made is reported and skipped. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "r4/util.h"
#include "libimage/repair/repair.h"
#include "libimage/obj/edit_int.h"
#include "libimage/txn/txn.h"
#include "libimage/util/err.h"
#include "format/item.h"
#include "format/node.h"

#define MODE_FMT 0170000u
#define MODE_DIR 0040000u
#define MODE_REG 0100000u

enum op_kind { OP_NLINK, OP_SIZE, OP_ENT_DEL, OP_ENT_SET, OP_ENT_ADD,
	       OP_LOST, OP_MKSD };

struct op {
	int kind, code, loss;
	struct r4_objref obj;	/* the object changed / the directory */
	struct r4_objref target;
	uint64_t val, old;
	char *name;
	size_t len;
	int isdir;
	unsigned kinds;		/* OP_SIZE of a file: its body's kinds */
	uint64_t bytes;		/* OP_SIZE of a directory: its entries' bytes */
};

struct ops {
	struct op *v;
	size_t n, cap;
};

struct objfix {
	struct rep *R;
	struct ops ops;
	struct chk_oid *byoid;
	uint32_t root;
	uint32_t *tgt;		/* per entry */
	struct r4_objref lf;	/* /lost+found once found or made */
	int have_lf;
};

static void ref_key(uint64_t el0, uint64_t el1, uint64_t el2,
		    struct r4_objref *r)
{
	struct fmt_key k = { { el0, el1, el2, 0 } };

	obj_ref_from_key(&k, r);
}

static void ref_of(const struct chk_obj *o, struct r4_objref *r)
{
	ref_key(o->el0, o->el1, o->el2, r);
}

static int is_dir(const struct chk_obj *o)
{
	return (o->flags & CHK_OBJ_LW) && (o->mode & MODE_FMT) == MODE_DIR;
}

static struct op *op_add(struct objfix *f, int kind, int code)
{
	struct op *p;

	if (R4_RESERVE(f->ops.v, f->ops.cap, f->ops.n + 1, 64))
		return NULL;
	p = &f->ops.v[f->ops.n++];
	memset(p, 0, sizeof(*p));
	p->kind = kind;
	p->code = code;
	return p;
}

static void ops_free(struct ops *o)
{
	for (size_t i = 0; i < o->n; i++)
		free(o->v[i].name);
	free(o->v);
	memset(o, 0, sizeof(*o));
}

int rep_entry_name(struct chk *c, const struct chk_ent *e, char **name,
		   size_t *len)
{
	struct fmt_item_header ih;
	struct fmt_cde40_entry ce;
	struct fmt_key key;
	size_t off, blen;
	char buf[32];

	*name = NULL;
	if (vol_read_block(c->vol, e->blk, c->scratch, "tree node", NULL) ||
	    fmt_node_ih_decode(c->scratch, c->bs, c->pol, e->item, &ih) ||
	    fmt_node_item_body(c->scratch, c->bs, c->pol, e->item, &off,
			       &blen) ||
	    fmt_cde40_entry(c->scratch + off, blen, c->pol, e->unit, &ce))
		return R4_ECORRUPT;
	if (ce.name) {
		*len = ce.name_len;
		*name = malloc(ce.name_len + 1);
		if (!*name)
			return -ENOMEM;
		memcpy(*name, ce.name, ce.name_len);
		(*name)[ce.name_len] = '\0';
		return 0;
	}
	fmt_cde40_entry_key(&ih.key, &ce, &key);
	*len = fmt_key_entry_name(&key, c->pol, buf);
	if (!*len)
		return R4_ECORRUPT;
	*name = malloc(*len + 1);
	if (!*name)
		return -ENOMEM;
	memcpy(*name, buf, *len);
	(*name)[*len] = '\0';
	return 0;
}

static int name_op(struct objfix *f, size_t j, uint32_t d, int kind,
		   int code, uint32_t target)
{
	struct chk *c = &f->R->c;
	struct op *p = op_add(f, kind, code);
	int rc;

	if (!p)
		return -ENOMEM;
	rc = rep_entry_name(c, &c->ents[j], &p->name, &p->len);
	if (rc) {
		f->ops.n--;
		return rc == -ENOMEM ? rc : 0;
	}
	ref_of(&c->objs[d], &p->obj);
	if (target != CHK_NONE)
		ref_of(&c->objs[target], &p->target);
	p->loss = kind == OP_ENT_DEL ? R4_LOSS_ENTRY : R4_LOSS_NONE;
	return 0;
}

static int dot_add(struct objfix *f, uint32_t d, const char *name,
		   uint32_t target)
{
	struct chk *c = &f->R->c;
	struct op *p = op_add(f, OP_ENT_ADD, R4_CHK_DOT);

	if (!p || !(p->name = strdup(name)))
		return -ENOMEM;
	p->len = strlen(name);
	ref_of(&c->objs[d], &p->obj);
	ref_of(&c->objs[target], &p->target);
	return 0;
}

/* Entries: pointing nowhere, "." / ".." wrong, second names of a
 * directory; in the order the check met them. */
static int plan_entries(struct objfix *f)
{
	struct chk *c = &f->R->c;
	uint8_t *dots = calloc(c->nobjs ? c->nobjs : 1, 1);
	int rc = 0;

	if (!dots)
		return -ENOMEM;
	for (size_t j = 0; j < c->nents && !rc; j++) {
		const struct chk_ent *e = &c->ents[j];
		uint32_t t = chk_obj_find(c, e->t0, e->t1, e->t2);
		uint32_t d = chk_oid_find(c, f->byoid, e->dir), want;

		f->tgt[j] = t;
		if (d == CHK_NONE || !is_dir(&c->objs[d]))
			continue;	/* no directory to edit */
		dots[d] |= e->flags;
		if (e->flags & CHK_ENT_DOT) {
			if (t != d)
				rc = name_op(f, j, d, OP_ENT_SET, t == CHK_NONE
					     ? R4_CHK_ENTRY : R4_CHK_DOT, d);
			continue;
		}
		if (e->flags & CHK_ENT_DOTDOT) {
			want = d == f->root ? d : c->objs[d].parent;
			if (want != CHK_NONE && t != want)
				rc = name_op(f, j, d, OP_ENT_SET, t == CHK_NONE
					     ? R4_CHK_ENTRY : R4_CHK_DOT, want);
			continue;
		}
		if (t == CHK_NONE) {
			rc = name_op(f, j, d, OP_ENT_DEL, R4_CHK_ENTRY, t);
			continue;
		}
		/* The check's choice (check/dirgraph.c): the first name
		 * stays, a second name goes. */
		if (c->second && c->second[j])
			rc = name_op(f, j, d, OP_ENT_DEL, R4_CHK_DIR_LINK, t);
	}
	for (uint32_t i = 0; i < c->nobjs && !rc; i++) {
		const struct chk_obj *o = &c->objs[i];
		uint32_t want = i == f->root ? i : o->parent;

		if (!is_dir(o))
			continue;
		if (!(dots[i] & CHK_ENT_DOT))
			rc = dot_add(f, i, ".", i);
		if (!rc && !(dots[i] & CHK_ENT_DOTDOT) && want != CHK_NONE)
			rc = dot_add(f, i, "..", want);
	}
	free(dots);
	return rc;
}

/* Body items of an object without stat data (its stat data was lost):
 * a regular file's stat data is made for them (mode 0644, the size of
 * the body), so the data is kept; the next round links it into
 * /lost+found. */
static int plan_bodies(struct objfix *f)
{
	struct chk *c = &f->R->c;

	for (size_t i = 0; i < c->nbodies; i++) {
		const struct chk_body *b = &c->bodies[i];
		struct fmt_key k = { { b->el0, b->el1, b->el2, 0 } };
		struct op *p;

		if (chk_obj_find(c, b->el0, b->el1, b->el2) != CHK_NONE ||
		    (b->kinds & CHK_BODY_CTAIL))
			continue;
		/* Not under an object id another object has, nor with band
		 * bits (the stat data would not be the body's): the tree
		 * rebuild gives such a body a fresh object id. */
		if ((b->el2 & ~CHK_OID_MASK) ||
		    chk_oid_find(c, f->byoid, b->el2 & CHK_OID_MASK) != CHK_NONE)
			continue;
		p = op_add(f, OP_MKSD, R4_CHK_BODY);
		if (!p)
			return -ENOMEM;
		obj_ref_from_key(&k, &p->obj);
		p->val = b->end;
		p->old = (b->kinds & CHK_BODY_EXTENT) ? 1 : 0;
	}
	return 0;
}

/* Link the object of stat-data key el[0..2] into /lost+found. */
static int lost_op(struct objfix *f, uint64_t el0, uint64_t el1,
		   uint64_t el2, int isdir)
{
	struct op *p = op_add(f, OP_LOST, R4_CHK_UNREACHABLE);
	char nm[32];

	if (!p)
		return -ENOMEM;
	snprintf(nm, sizeof(nm), "#%llx",
		 (unsigned long long)(el2 & CHK_OID_MASK));
	p->name = strdup(nm);
	if (!p->name)
		return -ENOMEM;
	p->len = strlen(nm);
	ref_key(el0, el1, el2, &p->target);
	p->isdir = isdir;
	p->loss = R4_LOSS_LOST_FOUND;
	return 0;
}

/* Unreachable objects nothing reachable or unreachable names: linked
 * into /lost+found (what they name comes along). */
static int plan_lost(struct objfix *f)
{
	struct chk *c = &f->R->c;
	int rc = 0;

	if (f->root == CHK_NONE)
		return 0;
	for (uint32_t i = 0; i < c->nobjs && !rc; i++) {
		const struct chk_obj *o = &c->objs[i];

		if ((o->flags & CHK_OBJ_REACHED) || !(o->flags & CHK_OBJ_LW))
			continue;
		if (is_dir(o) ? o->parent != CHK_NONE : o->links != 0)
			continue;
		rc = lost_op(f, o->el0, o->el1, o->el2, is_dir(o));
	}
	return rc;
}

/* The bytes of directory oid's entries, read through the tree (the
 * list's rounds have no damaged directory item: the entries the check
 * found). */
struct dirsum {
	enum fmt_key_policy pol;
	uint64_t sum;
};

static int dirsum_fn(void *ctx, const char *name, size_t len,
		     const struct fmt_key *key, const struct r4_objref *target)
{
	struct dirsum *d = ctx;

	(void)name;
	(void)key;
	(void)target;
	d->sum += fmt_cde40_entry_bytes(d->pol,
		fmt_entry_name_stored(d->pol, len) ? len : 0);
	return 0;
}

/* One change of the bounded check's list as an op (0, -ENOMEM, or
 * -EAGAIN: a directory's entries cannot all be read, the round needs
 * the tables; an entry whose name cannot be read is left, as name_op
 * leaves it). */
static int listed_op(struct objfix *f, const struct chk_fix *x)
{
	static const int kind[] = {
		[CHK_FIX_ENT_SET] = OP_ENT_SET, [CHK_FIX_ENT_DEL] = OP_ENT_DEL,
		[CHK_FIX_DOT_ADD] = OP_ENT_ADD, [CHK_FIX_NLINK] = OP_NLINK,
		[CHK_FIX_DIR_SIZE] = OP_SIZE, [CHK_FIX_FILE_SIZE] = OP_SIZE,
	};
	struct chk *c = &f->R->c;
	struct chk_ent e = { .blk = x->blk, .item = x->item,
			     .unit = x->unit };
	struct dirsum ds = { .pol = c->pol };
	struct r4_error err = { 0, "", 0 };
	struct op *p;
	int rc = 0;

	if (x->kind == CHK_FIX_LOST)
		return lost_op(f, x->el0, x->el1, x->el2, x->isdir);
	p = op_add(f, kind[x->kind], x->code);
	if (!p)
		return -ENOMEM;
	ref_key(x->el0, x->el1, x->el2, &p->obj);
	ref_key(x->t0, x->t1, x->t2, &p->target);
	p->val = x->val;
	p->old = x->old;
	p->kinds = x->kinds;
	if (x->kind == CHK_FIX_ENT_DEL)
		p->loss = R4_LOSS_ENTRY;
	if (x->kind == CHK_FIX_ENT_SET || x->kind == CHK_FIX_ENT_DEL)
		rc = rep_entry_name(c, &e, &p->name, &p->len);
	else if (x->kind == CHK_FIX_DOT_ADD)
		rc = (p->name = strdup(x->val ? ".." : ".")) ? 0 : -ENOMEM;
	if (!rc && x->kind == CHK_FIX_DOT_ADD)
		p->len = strlen(p->name);
	if (x->kind == CHK_FIX_DIR_SIZE &&
	    obj_dir_iter(c->vol, p->obj.oid, dirsum_fn, &ds, &err)) {
		/* a name it cannot read (over 255 bytes) or a read error
		 * stops the walk: a part of the sum; the tables' (dir_bytes)
		 * counts every name the item holds (fsck-repair.bats: a
		 * stored name of over 255 bytes) */
		f->ops.n--;
		return -EAGAIN;
	}
	p->bytes = ds.sum;
	if (rc && x->kind != CHK_FIX_DOT_ADD) {
		f->ops.n--;
		return rc == -ENOMEM ? rc : 0;
	}
	return rc;
}

/* The changes from the bounded check's list (check.h: struct chk_fix)
 * instead of the tables, for a round whose problems it serves
 * (repair.c: listed), which has no body to fix: the entry changes and
 * the "." and ".." added, or when there are none the /lost+found links,
 * or when there are none the link counts and sizes, as the
 * planners over the tables make them, in their order (the list's). */
static int plan_listed(struct objfix *f)
{
	struct chk *c = &f->R->c;
	int rc = 0, last = CHK_FIX_ENT_SET;

	for (size_t i = 0; i < c->nfixes && !rc; i++) {
		int k = c->fixes[i].kind;

		if (k == CHK_FIX_NLINK || k == CHK_FIX_FILE_SIZE)
			k = CHK_FIX_DIR_SIZE;	/* one stage */
		if (k == CHK_FIX_ENT_DEL || k == CHK_FIX_DOT_ADD)
			k = CHK_FIX_ENT_SET;
		if (k != last && f->ops.n)
			break;
		last = k;
		rc = listed_op(f, &c->fixes[i]);
	}
	return rc;
}

/* The bytes directory o's entries take (what its stat data's bytes
 * must say): each entry's unit header and body, with its name when the
 * key cannot hold it. */
static uint64_t dir_bytes(struct objfix *f, const struct chk_obj *o)
{
	struct chk *c = &f->R->c;
	uint64_t oid = o->el2 & CHK_OID_MASK, sum = 0;

	for (size_t j = chk_ent_first(c, oid);
	     j < c->nents && c->ents[j].dir == oid; j++) {
		char *name;
		size_t len = 0;

		if (rep_entry_name(c, &c->ents[j], &name, &len))
			continue;
		sum += fmt_cde40_entry_bytes(c->pol,
			fmt_entry_name_stored(c->pol, len) ? len : 0);
		free(name);
	}
	return sum;
}

/* nlink, directory sizes, file sizes against the body. */
static int plan_values(struct objfix *f)
{
	struct chk *c = &f->R->c;

	for (uint32_t i = 0; i < c->nobjs; i++) {
		const struct chk_obj *o = &c->objs[i];
		uint64_t want = (uint64_t)o->links + (i == f->root);
		struct op *p;

		if (!(o->flags & CHK_OBJ_LW))
			continue;
		if (o->nlink != want && (o->flags & CHK_OBJ_REACHED)) {
			p = op_add(f, OP_NLINK, R4_CHK_NLINK);
			if (!p)
				return -ENOMEM;
			ref_of(o, &p->obj);
			p->val = want;
			p->old = o->nlink;
		}
		if (is_dir(o) && o->size != o->nentries) {
			p = op_add(f, OP_SIZE, R4_CHK_DIR_SIZE);
			if (!p)
				return -ENOMEM;
			ref_of(o, &p->obj);
			p->val = o->nentries;
			p->old = o->size;
			p->bytes = dir_bytes(f, o);
		}
	}
	for (uint32_t i = 0; i < c->nobjs; i++) {
		const struct chk_obj *o = &c->objs[i];
		const struct chk_body *b;
		uint64_t end;
		struct op *p;

		if (!(o->flags & CHK_OBJ_LW) ||
		    (o->mode & MODE_FMT) != MODE_REG ||
		    !chk_file_size_wrong(c, i, &end))
			continue;
		p = op_add(f, OP_SIZE, R4_CHK_FILE_SIZE);
		if (!p)
			return -ENOMEM;
		ref_of(o, &p->obj);
		p->val = end;
		p->old = o->size;
		b = chk_body_find(c, o->el0, o->el1, o->el2);
		p->kinds = b ? b->kinds : 0;
	}
	return 0;
}

/* ---- making the changes ---- */

static int set_field(struct r4_txn *x, const struct op *p,
		     struct r4_error *err)
{
	struct obj_sd sd;
	int rc = obj_sd_get(x->vol, &p->obj, &sd, err);

	if (rc)
		return rc;
	if (p->kind == OP_NLINK) {
		sd.st.nlink = (uint32_t)p->val;
	} else if (p->code == R4_CHK_FILE_SIZE) {
		/* bytes: what the body takes, as far as the size tells */
		uint64_t bs = x->vol->blksize, round = p->val + bs - 1;

		sd.st.size = p->val;
		if (!(p->kinds & CHK_BODY_EXTENT))
			sd.st.rdev_or_bytes = p->val;
		else if (sd.st.rdev_or_bytes > round - round % bs)
			sd.st.rdev_or_bytes = round - round % bs;
	} else {
		sd.st.size = p->val;
		sd.st.rdev_or_bytes = p->bytes;
	}
	rc = obj_sd_write(x, &p->obj, &sd.st, 0, err);
	obj_sd_put(&sd);
	return rc;
}

/* Bytes an entry of this name takes in its directory's cde item. */
static int64_t ebytes(const struct r4_txn *x, size_t len)
{
	return (int64_t)fmt_cde40_entry_bytes(x->vol->keypol,
		fmt_entry_name_stored(x->vol->keypol, len) ? len : 0);
}

static int lost_found(struct objfix *f, struct r4_txn *x,
		      struct obj_dir *lf, struct r4_error *err)
{
	struct r4_objref root = { FMT_ROOT_LOCALITY, 0, FMT_ROOT_OID };
	struct obj_dir rd;
	struct r4_attr a;
	int rc;

	if (f->have_lf)
		return obj_dir_open(x, &f->lf, lf, err);
	rc = obj_dir_open(x, &root, &rd, err);
	if (rc)
		return rc;
	rc = edit_find(x, &rd, "lost+found", 10, &f->lf, err);
	if (rc == R4_ENOTFOUND) {
		memset(&a, 0, sizeof(a));
		a.mode = S_IFDIR | 0700;
		a.atime = a.mtime = a.ctime = x->now;
		rc = edit_mkdir_at(x, &rd, "lost+found", 10, &a, err);
		if (!rc)
			rc = edit_find(x, &rd, "lost+found", 10, &f->lf, err);
	}
	if (rc)
		return rc;
	rc = obj_dir_open(x, &f->lf, lf, err);
	if (!rc)
		f->have_lf = 1;
	return rc;
}

static int link_lost(struct objfix *f, struct r4_txn *x, const struct op *p,
		     struct r4_error *err)
{
	struct obj_dir lf, d;
	struct r4_objref got;
	int rc = lost_found(f, x, &lf, err);

	if (rc)
		return rc;
	rc = edit_find(x, &lf, p->name, p->len, &got, err);
	if (rc == 0)
		return got.oid == p->target.oid ? 0 :
			r4i_fail(err, R4_EEXIST, "lost+found/%s exists",
				p->name);
	if (rc != R4_ENOTFOUND)
		return rc;
	rc = obj_entry_add(x, &lf, p->name, p->len, &p->target, err);
	if (!rc)
		rc = obj_dir_account(x, &lf.ref, 1, ebytes(x, p->len),
				     p->isdir, err);
	if (!rc && p->isdir) {
		rc = obj_dir_open(x, &p->target, &d, err);
		if (!rc)
			rc = obj_entry_set(x, &d, "..", 2, &lf.ref, err);
	}
	return rc;
}

static int make_sd(struct r4_txn *x, const struct op *p, struct r4_error *err)
{
	struct fmt_stat st;
	uint64_t bs = x->vol->blksize;
	int rc;

	memset(&st, 0, sizeof(st));
	st.mask = (1u << FMT_SDEXT_LW) | (1u << FMT_SDEXT_UNIX);
	st.mode = 0100644;
	st.nlink = 0;
	st.size = p->val;
	st.rdev_or_bytes = p->old ? (p->val + bs - 1) / bs * bs : p->val;
	st.atime = st.mtime = st.ctime = x->now;
	rc = obj_sd_write(x, &p->obj, &st, 1, err);
	if (!rc)
		txn_add_files(x->t, 1);
	return rc;
}

static int do_op(struct objfix *f, struct r4_txn *x, const struct op *p,
		 struct r4_error *err)
{
	struct obj_dir d;
	int rc;

	switch (p->kind) {
	case OP_NLINK:
	case OP_SIZE:
		return set_field(x, p, err);
	case OP_MKSD:
		return make_sd(x, p, err);
	case OP_LOST:
		return link_lost(f, x, p, err);
	default:
		break;
	}
	rc = obj_dir_open(x, &p->obj, &d, err);
	if (rc)
		return rc;
	if (p->kind == OP_ENT_SET)
		return obj_entry_set(x, &d, p->name, p->len, &p->target, err);
	/* Size and bytes follow the entries, as an edit keeps them. */
	if (p->kind == OP_ENT_DEL) {
		rc = obj_entry_del(x, &d, p->name, p->len, err);
		return rc ? rc : obj_dir_account(x, &d.ref, -1,
						 -ebytes(x, p->len), 0, err);
	}
	rc = obj_entry_add(x, &d, p->name, p->len, &p->target, err);
	return rc ? rc : obj_dir_account(x, &d.ref, 1, ebytes(x, p->len), 0,
					 err);
}

/* A size set: a file cut (the bytes past its new end no longer read: a
 * body item lost, or a size larger than the body) is a loss, counted as
 * such. */
static void report_size(struct rep *R, const struct op *p)
{
	if (p->code == R4_CHK_FILE_SIZE && p->val < p->old) {
		rep_action(R, p->code, R4_CHECK_NO_BLOCK, p->obj.oid,
			   R4_LOSS_CUT, p->old - p->val,
			   "object %llx: size set to %llu (was %llu): %llu "
			   "bytes past the end of its body cut",
			   (unsigned long long)p->obj.oid,
			   (unsigned long long)p->val,
			   (unsigned long long)p->old,
			   (unsigned long long)(p->old - p->val));
		return;
	}
	rep_action(R, p->code, R4_CHECK_NO_BLOCK, p->obj.oid, 0, 0,
		   "object %llx: size set to %llu (was %llu)",
		   (unsigned long long)p->obj.oid, (unsigned long long)p->val,
		   (unsigned long long)p->old);
}

static void report_op(struct rep *R, const struct op *p)
{
	switch (p->kind) {
	case OP_NLINK:
		rep_action(R, p->code, R4_CHECK_NO_BLOCK, p->obj.oid, 0, 0,
			   "object %llx: nlink set to %llu (was %llu)",
			   (unsigned long long)p->obj.oid,
			   (unsigned long long)p->val,
			   (unsigned long long)p->old);
		break;
	case OP_SIZE:
		report_size(R, p);
		break;
	case OP_ENT_DEL:
		rep_action(R, p->code, R4_CHECK_NO_BLOCK, p->obj.oid,
			   R4_LOSS_ENTRY, 0, "directory %llx: entry '%s' "
			   "removed", (unsigned long long)p->obj.oid, p->name);
		break;
	case OP_ENT_SET:
		rep_action(R, p->code, R4_CHECK_NO_BLOCK, p->obj.oid, 0, 0,
			   "directory %llx: entry '%s' pointed at %llx",
			   (unsigned long long)p->obj.oid, p->name,
			   (unsigned long long)p->target.oid);
		break;
	case OP_MKSD:
		rep_action(R, p->code, R4_CHECK_NO_BLOCK, p->obj.oid, 0, 0,
			   "object %llx: its stat data was lost; made anew "
			   "for its %llu-byte body (a regular file, mode 0644)",
			   (unsigned long long)p->obj.oid,
			   (unsigned long long)p->val);
		break;
	case OP_ENT_ADD:
		rep_action(R, p->code, R4_CHECK_NO_BLOCK, p->obj.oid, 0, 0,
			   "directory %llx: entry '%s' added, pointing at "
			   "%llx", (unsigned long long)p->obj.oid, p->name,
			   (unsigned long long)p->target.oid);
		break;
	default:
		rep_action(R, p->code, R4_CHECK_NO_BLOCK, p->target.oid,
			   R4_LOSS_LOST_FOUND, 0, "%s %llx linked as "
			   "/lost+found/%s", p->isdir ? "directory" : "object",
			   (unsigned long long)p->target.oid, p->name);
		break;
	}
}

/* ops[a..b) in one transaction: 0 when committed. */
static int run_batch(struct objfix *f, size_t a, size_t b,
		     struct r4_error *err)
{
	struct rep *R = f->R;
	struct r4_txn *x;
	int rc = r4_txn_begin(R->vol, &x, err), have_lf = f->have_lf;

	for (size_t i = a; i < b && !rc; i++)
		rc = do_op(f, x, &f->ops.v[i], err);
	if (rc) {
		r4_txn_abort(x);
		f->have_lf = have_lf;	/* a new one went with the abort */
		return rc;
	}
	rc = r4_txn_commit(x, err);
	if (rc)
		return rc;
	R->r->transactions++;
	for (size_t i = a; i < b; i++)
		report_op(R, &f->ops.v[i]);
	return 0;
}

static int batch_of(void *ctx, size_t a, size_t b, struct r4_error *err)
{
	return run_batch(ctx, a, b, err);
}

static void who_of(void *ctx, size_t i, int *code, uint64_t *oid)
{
	const struct objfix *f = ctx;

	*code = f->ops.v[i].code;
	*oid = f->ops.v[i].obj.oid;
}

static int run_ops(struct objfix *f, int *changed)
{
	return rep_batches(f->R, f->ops.n, batch_of, who_of, f, changed);
}

int rep_fix_objects(struct rep *R, int *changed)
{
	struct chk *c = &R->c;
	struct objfix f = { .R = R };
	int rc = -ENOMEM;

	if (c->fixes_want) {	/* the bounded check's: no tables */
		rc = plan_listed(&f);
		if (!rc)
			rc = run_ops(&f, changed);
		goto out;
	}
	f.byoid = chk_oid_index(c);
	f.tgt = malloc((c->nents ? c->nents : 1) * sizeof(*f.tgt));
	if (!f.byoid || !f.tgt)
		goto out;
	f.root = chk_obj_find(c, (FMT_ROOT_LOCALITY << 4) | FMT_KEY_SD, 0,
			      FMT_ROOT_OID);
	rc = plan_entries(&f);
	if (!rc)
		rc = plan_bodies(&f);
	if (!rc && !f.ops.n)
		rc = plan_lost(&f);
	if (!rc && !f.ops.n)
		rc = plan_values(&f);
	if (!rc)
		rc = run_ops(&f, changed);
out:
	if (rc == -ENOMEM)
		rc = r4i_fail(R->err, rc, "out of memory for the repair");
	ops_free(&f.ops);
	free(f.byoid);
	free(f.tgt);
	return rc;
}
