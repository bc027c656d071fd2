/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the packer's namespace. Objects (what an SD describes) and
 * names (directory entries) are kept apart, so hard links are several
 * names of one object. Names are found through one hash table keyed by
 * (directory, name). A later entry for a path replaces the earlier one,
 * as tar does: a directory over a directory only takes the new
 * attributes, anything else gets a new object under the old name. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "libimage/pack/packer.h"
#include "libimage/pack/ccreg.h"
#include "libimage/util/err.h"
#include "r4/util.h"

/* A spilled name of dir taken back into memory (a later entry asks for
 * it: a hard link's target, a path through it), or NULL (none;
 * b->spill_rc says when looking failed). */
static struct bent *promote(struct r4_pack *b, struct bobj *dir,
			    const char *s, size_t n)
{
	uint32_t no = dir->u.sub->no;
	const struct pack_srec *r;
	struct bobj *o;
	struct bent *e = NULL;
	int rc;

	if (!dir->u.sub->nspilled)
		return NULL;
	rc = pack_spill_find(b->spill, no, pack_spill_hash(no, s, n), s, n,
			     &r);
	if (rc <= 0) {
		if (rc < 0 && !b->spill_rc)
			b->spill_rc = rc;
		return NULL;
	}
	o = pack_ns_rec_obj(b, &b->ar, r, 1);
	rc = o ? pack_ns_shadow(b, dir, s, n) : -ENOMEM;
	if (!rc && !(e = pack_new_ent(b, dir, s, n, o)))
		rc = -ENOMEM;
	if (rc && !b->spill_rc)
		b->spill_rc = rc;
	return e;
}

/* The name s of dir, in memory or taken back from the spill. */
static struct bent *lookup(struct r4_pack *b, struct bobj *dir,
			   const char *s, size_t n)
{
	struct bent *e = pack_lookup_mem(b, dir, s, n);

	if (e || !b->spill || b->spill_rc)
		return e;
	return promote(b, dir, s, n);
}

static int spill_fail(struct r4_pack *b, const char *path,
		      struct r4_error *err)
{
	return r4i_fail(err, b->spill_rc, "%s: cannot read the spilled names "
		       "(in $TMPDIR): %s", path, r4_strerror(b->spill_rc));
}

int pack_ns_init(struct r4_pack *b, struct r4_error *err)
{
	b->spill_after = b->o.spill_after >= 0 ?
			 (size_t)b->o.spill_after : PACK_SPILL_AFTER;
	b->spill_budget = b->o.spill_run_bytes >= 0 ?
			  (size_t)b->o.spill_run_bytes : PACK_SPILL_BUDGET;
	b->root = pack_new_obj(b, R4_ENT_DIR);
	if (!b->root ||
	    pack_implicit_dir(b, b->root, (uint32_t)getuid(), (uint32_t)getgid()))
		return r4i_fail(err, -ENOMEM, "out of memory");
	return 0;
}

void pack_ns_fini(struct r4_pack *b)
{
	for (size_t k = 0; k * PACK_ATTR_CHUNK < b->nattr; k++)
		free(b->attrc[k]);
	free(b->attrc);
	free(b->ahtab);
	b->attrc = NULL;
	b->ahtab = NULL;
	b->nattr = b->capattrc = b->ahsize = 0;
	free(b->wc_path);
	b->wc_path = NULL;
	free(b->pr_path);
	b->pr_path = NULL;
	b->pr_cap = 0;
	b->pr_ok = 0;
	free(b->wc_end);
	free(b->wc_dir);
	b->wc_end = NULL;
	b->wc_dir = NULL;
	b->wc_n = b->wc_kcap = b->wc_dcap = 0;
	for (struct breg *r = b->regs; r; r = r->next) {
		free(r->ext.u);
		free(r->ccreg_len);
	}
	for (struct bdir *d = b->subs; d; d = d->next) {
		free(d->kids);
		free(d->ht);
	}
	b->regs = NULL;
	b->subs = NULL;
	free(b->dirv);
	b->dirv = NULL;
	b->ndirv = b->capdirv = 0;
	free(b->gone);
	b->gone = NULL;
	b->ngone = b->capgone = 0;
	pack_parena_free(&b->ar);
	pack_parena_free(&b->far);
	pack_spill_free(b->spill);
	b->spill = NULL;
	free(b->spext.u);
	b->spext.u = NULL;
	b->spext.n = b->spext.cap = 0;
	free(b->sdbuf);
	b->sdbuf = NULL;
	b->sdcap = 0;
}

void pack_ns_seal(struct r4_pack *b)
{
	for (struct bdir *d = b->subs; d; d = d->next) {
		free(d->ht);
		d->ht = NULL;
		d->htcap = 0;
	}
	b->pr_ok = 0;
	b->wc_n = 0;
}

static const char *path_up(const struct r4_pack *b, const struct bent *e,
			   char *buf, size_t len, size_t *pos)
{
	if (!e)
		return buf;
	if (ent_dir(b, e)->primary)
		path_up(b, ent_dir(b, e)->primary, buf, len, pos);
	if (*pos && *pos + 1 < len)
		buf[(*pos)++] = '/';
	for (size_t i = 0; i < e->len && *pos + 1 < len; i++)
		buf[(*pos)++] = e->name[i];
	buf[*pos] = '\0';
	return buf;
}

const char *pack_ns_path(const struct r4_pack *b, const struct bent *e,
			 char *buf, size_t len)
{
	size_t pos = 0;

	buf[0] = '\0';
	return path_up(b, e, buf, len, &pos);
}

const char *pack_ns_obj_path(const struct r4_pack *b, const struct bobj *o,
			     char *buf, size_t len)
{
	return o->primary ? pack_ns_path(b, o->primary, buf, len) : ".";
}

/* Bytes path and the cached path have in common. */
static size_t wc_common(const struct r4_pack *b, const char *path)
{
	size_t i = 0;

	if (!b->wc_n)
		return 0;
	while (path[i] && path[i] == b->wc_path[i])
		i++;
	return i;
}

/* Level k of the cache: directory d, its name ending at byte end of
 * the path being walked. 0, or -ENOMEM (the cache is then dropped). */
static int wc_put(struct r4_pack *b, size_t k, size_t end, struct bobj *d)
{
	if (R4_RESERVE(b->wc_end, b->wc_kcap, k + 1, 64) ||
	    R4_RESERVE(b->wc_dir, b->wc_dcap, k + 1, 64))
		return -ENOMEM;
	b->wc_end[k] = end;
	b->wc_dir[k] = d;
	return 0;
}

/* Walk to the directory holding the last component of path, making
 * missing directories (create); *name / *nlen: the last component (nlen
 * 0 for the root itself). The directories of the previous walk are
 * cached at every depth: the walk starts below the deepest one whose
 * name ends before the bytes path shares with the previous path (names
 * are only replaced through pack_ns_add, which forgets the cache), so
 * a run of paths under one deep folder costs their new components, not
 * their depth (issue: a member 40,000 folders deep took a minute). */
/* Where a walk of path starts: the deepest level of the walk cache
 * inside the bytes path shares with the last walk (else the root). *d
 * that directory, *k its level; *p, *c, the return as enc_next_name. */
static long walk_resume(struct r4_pack *b, const char *path,
			struct bobj **d, size_t *k, const char **p,
			const char **c)
{
	size_t same = wc_common(b, path), j = b->wc_n;
	long n;

	*d = b->root;
	*k = 0;
	while (j > 0 && b->wc_end[j - 1] >= same)
		j--;
	if (j > 0) {
		*p = path + b->wc_end[j - 1];
		n = enc_next_name(p, c);
		if (n > 0) {
			*d = b->wc_dir[j - 1];
			*k = j;
			return n;
		}
	}
	*p = path;
	return enc_next_name(p, c);
}

/* One directory on the way: the n-byte name c in d, made when missing
 * and create; *sub the directory it names. */
static int walk_step(struct r4_pack *b, const char *path, int create,
		     struct bobj *d, const char *c, long n,
		     struct bobj **sub, struct r4_error *err)
{
	struct bent *e = lookup(b, d, c, (size_t)n);

	if (!e && b->spill_rc)
		return spill_fail(b, path, err);
	if (!e && !create)
		return R4_ENOTFOUND;
	if (!e) {
		struct bobj *o = pack_new_obj(b, R4_ENT_DIR);
		const struct enc_attr *ra = obj_attr(b, b->root);

		if (!o || !(e = pack_new_ent(b, d, c, (size_t)n, o)) ||
		    pack_implicit_dir(b, o, ra->uid, ra->gid))
			return r4i_fail(err, -ENOMEM, "out of memory");
	}
	if (e->obj->type != R4_ENT_DIR) {
		b->wk_bad = (size_t)(c + n - path);
		b->wk_bad_type = e->obj->type;
		return r4i_fail(err, R4_EINVAL, "%s: '%.*s' on its way is not "
			       "a directory", path, (int)(c + n - path), path);
	}
	*sub = e->obj;
	return 0;
}

static int walk(struct r4_pack *b, const char *path, int create,
		struct bobj **dir, const char **name, size_t *nlen,
		struct r4_error *err)
{
	struct bobj *d;
	const char *p, *c, *nc;
	long n, nn;
	int rc, cache = 1;
	size_t k;

	n = walk_resume(b, path, &d, &k, &p, &c);
	b->wc_n = k;	/* levels below k are rewritten from path */
	for (; n > 0; n = nn, c = nc, k++) {
		nn = enc_next_name(&p, &nc);
		if (nn == 0)
			break;
		if (nn < 0)
			return enc_dotdot(path, err);
		if (n > ENC_NAME_MAX)
			break;
		rc = walk_step(b, path, create, d, c, n, &d, err);
		if (rc)
			return rc;
		if (cache && wc_put(b, k, (size_t)(c + n - path), d))
			cache = 0;
	}
	if (n < 0)
		return enc_dotdot(path, err);
	rc = enc_check_name(path, (size_t)n, err);
	if (rc)
		return rc;
	if (cache) {
		size_t len = strlen(path) + 1;

		if (!R4_RESERVE(b->wc_path, b->wc_cap, len, 256)) {
			memcpy(b->wc_path, path, len);
			b->wc_n = k;
		}
	}
	*dir = d;
	*name = c;
	*nlen = (size_t)n;
	return 0;
}

static int set_attrs(struct r4_pack *b, struct bobj *o,
		     const struct r4_entry *e, struct r4_error *err)
{
	struct r4_attr a;
	struct enc_attr ea;

	enc_entry_attr(e, &a);
	enc_attr(&a, 0, &ea);
	return pack_attr_set(b, o, &ea) ? r4i_fail(err, -ENOMEM, "out of memory") :
				     0;
}

static int check_entry(struct r4_pack *b, const struct r4_entry *e,
		       struct r4_error *err)
{
	size_t max_item = b->bs - fmt_node_header_size(b->m.sb.node_pid) -
			  fmt_item_header_size(b->pol);
	int rc = enc_check_entry(e, max_item, err);

	if (!rc && e->type == R4_ENT_REG && !e->data && e->size &&
	    !b->o.source)
		rc = r4i_fail(err, R4_EINVAL, "%s: no data and no data source",
			     e->path);
	return rc;
}

/* The object of entry e; a = &b->far: one about to spill (not listed
 * in b->regs, its extent units lent from b->spext). */
static int make_obj(struct r4_pack *b, const struct r4_entry *e,
		    struct parena *a, struct bobj **out, struct r4_error *err)
{
	struct bobj *o = a == &b->ar ? pack_new_obj(b, e->type) :
				       pack_parena_get(a, sizeof(*o));

	if (!o)
		return r4i_fail(err, -ENOMEM, "out of memory");
	o->type = (uint8_t)e->type;
	if (set_attrs(b, o, e, err))
		return -ENOMEM;
	switch (e->type) {
	case R4_ENT_SYMLINK:
		o->size = strlen(e->target);
		o->u.target = pack_parena_get(a, (size_t)o->size + 1);
		if (!o->u.target)
			return r4i_fail(err, -ENOMEM, "out of memory");
		memcpy(o->u.target, e->target, (size_t)o->size + 1);
		break;
	case R4_ENT_CHR: case R4_ENT_BLK:
		o->u.rdev = (uint32_t)enc_rdev(e->rdev_major, e->rdev_minor);
		break;
	case R4_ENT_REG:
		o->size = e->size;
		o->tails = (uint8_t)enc_tails(
			b->o.mkfs.plugin[R4_PT_FORMATTING], b->bs, e->size);
		o->ccreg = (uint8_t)pack_ccreg_initial(b);
		o->data = e->size && !e->data ? BD_DEFERRED : BD_NONE;
		if (e->size) {
			o->u.reg = pack_parena_get(a, sizeof(*o->u.reg));
			if (!o->u.reg)
				return r4i_fail(err, -ENOMEM, "out of memory");
			if (a != &b->ar) {
				o->u.reg->ext = b->spext;
				o->u.reg->ext.n = 0;
				b->spext.u = NULL;
				b->spext.cap = 0;
			} else {
				o->u.reg->next = b->regs;
				b->regs = o->u.reg;
			}
		}
		break;
	default:
		break;
	}
	*out = o;
	return 0;
}

static int link_target(struct r4_pack *b, const struct r4_entry *e,
		       struct bobj **out, struct r4_error *err)
{
	struct bobj *d;
	struct bent *t = NULL;
	const char *name;
	size_t n;
	int rc = walk(b, e->target, 0, &d, &name, &n, err);

	if (!rc && n && !(t = lookup(b, d, name, n)) && b->spill_rc)
		return spill_fail(b, e->target, err);
	if (rc == R4_ENOTFOUND || (!rc && n && !t))
		return r4i_fail(err, R4_ENOTFOUND, "%s: hard link to '%s', "
			       "which is not in the archive", e->path,
			       e->target);
	if (rc)
		return rc;
	if (!n || t->obj->type == R4_ENT_DIR)
		return r4i_fail(err, R4_EINVAL, "%s: hard link to '%s', which "
			       "is a directory", e->path, e->target);
	*out = t->obj;
	return 0;
}

/* Write the record of the object o being spilled (pack_ns_add), the
 * name remembered in b->sp_*; !ok: only forget it. */
int pack_ns_spill_done(struct r4_pack *b, struct bobj *o, int ok,
		       struct r4_error *err)
{
	struct pack_srec h;
	const void *units = NULL, *target = NULL;
	size_t nunits = 0, ntarget = 0;
	int rc = 0;

	memset(&h, 0, sizeof(h));
	h.h = pack_spill_hash(b->sp_dir, b->sp_name, b->sp_nlen);
	h.dir = b->sp_dir;
	h.attr = o->attr;
	h.size = o->size;
	h.nlen = (uint16_t)b->sp_nlen;
	h.type = o->type;
	h.tails = o->tails;
	h.data = o->data;
	switch (o->type) {
	case R4_ENT_SYMLINK:
		target = o->u.target;
		ntarget = (size_t)o->size;
		break;
	case R4_ENT_CHR: case R4_ENT_BLK:
		h.aux = o->u.rdev;
		break;
	case R4_ENT_REG:
		if (!o->u.reg)
			break;
		h.aux = o->u.reg->spool_off;
		units = o->u.reg->ext.u;
		nunits = o->u.reg->ext.n;
		h.next = (uint32_t)nunits;
		break;
	default:
		break;
	}
	if (ok && nunits > UINT32_MAX)
		rc = r4i_fail(err, -EOVERFLOW, "%s: too many extents",
			     b->sp_path);
	if (ok && !rc) {
		rc = pack_spill_put(b->spill, &h, units,
				    nunits * sizeof(struct fmt_extent40_unit),
				    b->sp_name, b->sp_nlen, target, ntarget,
				    NULL);
		if (rc)
			rc = r4i_fail(err, rc, "%s: cannot spill its name to "
				     "$TMPDIR: %s", b->sp_path,
				     r4_strerror(rc));
		else
			b->dirv[b->sp_dir]->u.sub->nspilled++;
	}
	if (o->type == R4_ENT_REG && o->u.reg) {	/* keep the units */
		free(b->spext.u);
		b->spext = o->u.reg->ext;
	}
	pack_parena_reset(&b->far);
	return rc;
}

/* A new name of a plain object past b->spill_after: its object made
 * in b->far, its record written now, or by r4_pack_add once the
 * streamed data is taken (*obj). */
static int spill_add(struct r4_pack *b, const struct r4_entry *e,
		     struct bobj *d, const char *name, size_t n,
		     struct bobj **obj, struct r4_error *err)
{
	struct bobj *o;
	int rc;

	if (!b->spill && pack_spill_new(&b->spill, b->spill_budget))
		return r4i_fail(err, -ENOMEM, "out of memory");
	pack_parena_reset(&b->far);
	rc = make_obj(b, e, &b->far, &o, err);
	if (rc)
		return rc;
	o->spilled = 1;
	b->sp_dir = d->u.sub->no;
	b->sp_name = name;
	b->sp_path = e->path;
	b->sp_nlen = n;
	if (e->type == R4_ENT_REG && e->data) {
		*obj = o;
		return 0;
	}
	return pack_ns_spill_done(b, o, 1, err);
}

/* d's spilled names appended to its children, made in b->far. */
int pack_ns_dir_load(struct r4_pack *b, struct bobj *d, size_t *nmem,
		     struct r4_error *err)
{
	struct bdir *sub = d->u.sub;
	size_t len = 0, at = 0;
	char p[4096];
	int rc;

	*nmem = sub->nkids;
	if (!b->spill)
		return 0;
	rc = pack_spill_dir(b->spill, sub->no, &b->sdbuf, &b->sdcap, &len);
	if (rc)
		return r4i_fail(err, rc, "%s: cannot read its spilled names "
			       "(in $TMPDIR): %s", pack_ns_obj_path(b, d, p,
			       sizeof(p)), r4_strerror(rc));
	while (at < len) {
		const struct pack_srec *h =
			(const struct pack_srec *)(b->sdbuf + at);
		struct bobj *o;
		struct bent *e;

		at += h->len;
		o = pack_ns_rec_obj(b, &b->far, h, 0);
		e = o ? pack_parena_get(&b->far, sizeof(*e) + h->nlen + 1) : NULL;
		if (!e || pack_add_kid(d, e))
			return r4i_fail(err, -ENOMEM, "out of memory");
		o->spilled = 1;
		memcpy(e->name, pack_srec_name(h), h->nlen);
		e->len = h->nlen;
		e->dir = sub->no;
		e->obj = o;
	}
	return 0;
}

void pack_ns_dir_unload(struct r4_pack *b, struct bobj *d, size_t nmem)
{
	struct bdir *sub = d->u.sub;
	size_t k = 0;

	if (!b->spill)
		return;
	for (size_t i = 0; i < sub->nkids; i++) {
		struct bobj *o = sub->kids[i]->obj;

		if (!o->spilled) {
			sub->kids[k++] = sub->kids[i];
			continue;
		}
		if (o->type == R4_ENT_REG && o->u.reg && o->u.reg->ext.cap)
			free(o->u.reg->ext.u);	/* deferred, read now */
	}
	sub->nkids = k;
	(void)nmem;
	if (!k) {
		free(sub->kids);
		sub->kids = NULL;
		sub->capkids = 0;
	} else if (sub->capkids > 2 * k + 8) {
		struct bent **t = realloc(sub->kids, k * sizeof(*t));

		if (t) {
			sub->kids = t;
			sub->capkids = k;
		}
	}
	pack_parena_reset(&b->far);
}

/* The entry old names o now. The replaced object may still be named
 * elsewhere (hard links): only finish knows (pack_ns_release). */
static int add_replace(struct r4_pack *b, struct bent *old, struct bobj *o,
		       struct r4_error *err)
{
	struct bobj *was = old->obj;

	if (was != o && was->type == R4_ENT_REG && was->size) {
		if (R4_RESERVE(b->gone, b->capgone, b->ngone + 1, 16))
			return r4i_fail(err, -ENOMEM, "out of memory");
		b->gone[b->ngone++] = was;
	}
	old->obj = o;
	b->wc_n = 0;	/* the cached directories may be gone */
	return 0;
}

/* A new name in memory for o (over what the spill may hold of it). */
static int add_new(struct r4_pack *b, const struct r4_entry *e,
		   struct bobj *d, const char *name, size_t n, struct bobj *o,
		   struct r4_error *err)
{
	int rc = pack_ns_shadow(b, d, name, n);

	if (rc)
		return r4i_fail(err, rc, "%s: cannot spill its name to $TMPDIR: "
				"%s", e->path, r4_strerror(rc));
	if (!pack_new_ent(b, d, name, n, o))
		return r4i_fail(err, -ENOMEM, "out of memory");
	return 0;
}

int pack_ns_add(struct r4_pack *b, const struct r4_entry *e, struct bobj **obj,
	   struct r4_error *err)
{
	struct bobj *d, *o = NULL;
	struct bent *old = NULL;
	const char *name;
	size_t n;
	int rc = check_entry(b, e, err), probed = 0;

	*obj = NULL;
	if (!rc && e->type == R4_ENT_HARDLINK)
		rc = link_target(b, e, &o, err);	/* before any mkdir */
	if (!rc && b->pr_ok && !strcmp(b->pr_path, e->path)) {
		/* the probe of this path walked it: no add came between */
		d = b->pr_dir;
		name = e->path + b->pr_off;
		n = b->pr_n;
		old = b->pr_old;
		probed = 1;
	} else if (!rc) {
		rc = walk(b, e->path, 1, &d, &name, &n, err);
	}
	b->pr_ok = 0;	/* one add consumes the probe, or drops it */
	if (rc)
		return rc;
	if (!n) {	/* the root itself */
		if (e->type != R4_ENT_DIR)
			return r4i_fail(err, R4_EINVAL, "%s: the root must be a "
				       "directory", e->path);
		return set_attrs(b, b->root, e, err);
	}
	if (!probed)	/* a spilled name is never a directory: not asked */
		old = pack_lookup_mem(b, d, name, n);
	if (old && old->obj->type == R4_ENT_DIR && e->type == R4_ENT_DIR) {
		return set_attrs(b, old->obj, e, err);
	}
	if (old && old->obj->type == R4_ENT_DIR &&
	    (old->obj->u.sub->nkids || old->obj->u.sub->nspilled))
		return r4i_fail(err, R4_EEXIST, "%s: would replace a directory "
			       "that is not empty", e->path);
	if (!old && e->type != R4_ENT_HARDLINK && e->type != R4_ENT_DIR &&
	    !b->ccreg && b->hcount >= b->spill_after)
		return spill_add(b, e, d, name, n, obj, err);
	if (e->type != R4_ENT_HARDLINK) {
		rc = make_obj(b, e, &b->ar, &o, err);
		if (rc)
			return rc;
	}
	rc = old ? add_replace(b, old, o, err) : add_new(b, e, d, name, n, o,
							    err);
	if (rc)
		return rc;
	if (e->type == R4_ENT_REG && e->data)
		*obj = o;
	return 0;
}

/* Only regular files with data are kept in b->gone: a replaced
 * directory was empty, a symlink's target and a device's number are in
 * memory only, a tail file's, a compressed file's and streamed extent
 * data (BD_SPX) wait in the spool, which is not the image, and deferred
 * data is never read for an object that is not placed. What holds image
 * blocks is a file whose extents were written before finish (none in
 * this build: streamed data is spooled; kept for any caller that
 * writes them so): an object no name reached when the oids
 * were assigned (oid 0) gives those back, once (an object replaced
 * under two of its names is listed twice). */
void pack_ns_release(struct r4_pack *b)
{
	for (size_t i = 0; i < b->ngone; i++) {
		struct bobj *o = b->gone[i];
		struct breg *r = o->u.reg;

		if (o->oid || o->data != BD_EXTENTS)
			continue;
		for (size_t j = 0; j < r->ext.n; j++) {
			if (!r->ext.u[j].start)
				continue;	/* a hole */
			pack_alloc_free(b, r->ext.u[j].start,
					r->ext.u[j].width);
			b->data_blocks -= r->ext.u[j].width;
		}
		r->ext.n = 0;
		o->data = BD_NONE;
	}
	b->ngone = 0;
}

int r4_pack_type(struct r4_pack *b, const char *path, size_t len)
{
	struct r4_error tmp = { 0, "", 0 };
	char small[256], *p = len < sizeof(small) ? small : malloc(len + 1);
	struct bobj *d;
	struct bent *e = NULL;
	const char *name;
	size_t n = 0;
	int rc, t = -1;

	if (!p)
		return -1;
	memcpy(p, path, len);
	p[len] = '\0';
	rc = walk(b, p, 0, &d, &name, &n, &tmp);
	if (!rc && !n)
		t = R4_ENT_DIR;
	else if (!rc && (e = lookup(b, d, name, n)))
		t = (int)e->obj->type;

	if (p != small)
		free(p);
	return t;
}

int r4_pack_probe(struct r4_pack *b, const char *path, size_t *bad,
		   int *bad_type)
{
	struct r4_error tmp = { 0, "", 0 };
	struct bobj *d;
	struct bent *e;
	const char *name;
	size_t n = 0, len;
	int rc;

	*bad = 0;
	*bad_type = -1;
	b->pr_ok = 0;
	b->wk_bad = 0;
	rc = walk(b, path, 0, &d, &name, &n, &tmp);
	if (rc) {
		if (rc == R4_EINVAL && b->wk_bad) {
			*bad = b->wk_bad;
			*bad_type = b->wk_bad_type;
		}
		return -1;	/* not there (or a name too long: never is) */
	}
	/* a spilled name is never a directory: not looked for (-1) */
	e = n ? pack_lookup_mem(b, d, name, n) : NULL;
	len = strlen(path) + 1;
	if (!R4_RESERVE(b->pr_path, b->pr_cap, len, 256)) {
		memcpy(b->pr_path, path, len);
		b->pr_dir = d;
		b->pr_off = (size_t)(name - path);
		b->pr_n = n;
		b->pr_old = e;
		b->pr_ok = 1;
	}
	if (!n)
		return R4_ENT_DIR;
	return e ? (int)e->obj->type : -1;
}
