/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the packer's namespace, its parts: the name table, the chunks
 * objects and names are carved from, objects, names and the table of
 * distinct attributes (ns.c adds entries with them). */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "libimage/pack/packer.h"
#include "libimage/pack/ccreg.h"
#include "libimage/util/err.h"
#include "r4/util.h"

/* The 32-bit hash of a name (FNV-1a, folded). */
static uint32_t name_hash(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 0x100000001b3ULL;
	return (uint32_t)(h ^ (h >> 32));
}

struct bent *pack_lookup_mem(struct r4_pack *b, const struct bobj *dir,
			       const char *s, size_t n)
{
	const struct bdir *d = dir->u.sub;
	uint32_t h, mask;

	(void)b;
	if (!d->ht)
		return NULL;
	h = name_hash(s, n);
	mask = d->htcap - 1;
	for (uint32_t i = h & mask;; i = (i + 1) & mask) {
		uint64_t v = d->ht[i];
		struct bent *e;

		if (!v)
			return NULL;
		if ((uint32_t)(v >> 32) != h)
			continue;
		e = d->kids[(uint32_t)v - 1];
		if (e->len == n && !memcmp(e->name, s, n))
			return e;
	}
}

static void ht_put(uint64_t *t, uint32_t cap, uint64_t v)
{
	uint32_t i = (uint32_t)(v >> 32) & (cap - 1);

	while (t[i])
		i = (i + 1) & (cap - 1);
	t[i] = v;
}

/* Room in d's table for one more name (the slots carry the hashes: the
 * names are not read again). */
static int ht_reserve(struct bdir *d)
{
	uint32_t cap;
	uint64_t *t;

	if (d->ht && (d->nkids + 1) * 4 <= (size_t)d->htcap * 3)
		return 0;
	if (d->nkids >= UINT32_MAX / 2)
		return -ENOMEM;
	cap = d->htcap ? d->htcap * 2 : 8;
	t = calloc(cap, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (uint32_t i = 0; i < d->htcap; i++)
		if (d->ht[i])
			ht_put(t, cap, d->ht[i]);
	free(d->ht);
	d->ht = t;
	d->htcap = cap;
	return 0;
}

#define ARENA_CHUNK (1u << 20)

/* n zeroed bytes from chunks (8-byte aligned; the first word of a
 * chunk links to the chunk before it). */
void *pack_parena_get(struct parena *a, size_t n)
{
	void *p;

	n = (n + 7) & ~(size_t)7;
	if (!a->head || a->used + n > a->cap) {
		size_t cap = n + 8 > ARENA_CHUNK ? n + 8 : ARENA_CHUNK;
		void **c = calloc(1, cap);

		if (!c)
			return NULL;
		c[0] = a->head;
		a->head = c;
		a->used = 8;
		a->cap = cap;
	}
	p = (uint8_t *)a->head + a->used;
	a->used += n;
	return p;
}

void pack_parena_free(struct parena *a)
{
	while (a->head) {
		void **c = a->head;

		a->head = c[0];
		free(c);
	}
	a->used = a->cap = 0;
}

/* Empty again: one chunk is kept (zeroed) when it was the only one. */
void pack_parena_reset(struct parena *a)
{
	void **c = a->head;

	if (c && !c[0]) {
		memset((uint8_t *)c + 8, 0, a->used - 8);
		a->used = 8;
		return;
	}
	pack_parena_free(a);
}

static void *arena_get(struct r4_pack *b, size_t n)
{
	return pack_parena_get(&b->ar, n);
}

struct bobj *pack_new_obj(struct r4_pack *b, enum r4_entry_type type)
{
	struct bobj *o = arena_get(b, sizeof(*o));

	if (o && type == R4_ENT_DIR) {
		struct bdir *d = arena_get(b, sizeof(*d));

		if (!d || b->ndirv >= UINT32_MAX ||
		    R4_RESERVE(b->dirv, b->capdirv, b->ndirv + 1, 256))
			return NULL;
		d->no = (uint32_t)b->ndirv;
		b->dirv[b->ndirv++] = o;
		d->next = b->subs;
		b->subs = d;
		o->u.sub = d;
	}
	if (o)
		o->type = (uint8_t)type;
	return o;
}

int pack_add_kid(struct bobj *dir, struct bent *e)
{
	struct bdir *d = dir->u.sub;

	if (R4_RESERVE(d->kids, d->capkids, d->nkids + 1, 8))
		return -ENOMEM;
	d->kids[d->nkids++] = e;
	return 0;
}

struct bent *pack_new_ent(struct r4_pack *b, struct bobj *dir,
			    const char *s, size_t n, struct bobj *obj)
{
	struct bdir *d = dir->u.sub;
	struct bent *e;

	if (ht_reserve(d))
		return NULL;
	e = arena_get(b, sizeof(*e) + n + 1);
	if (!e || pack_add_kid(dir, e))
		return NULL;
	memcpy(e->name, s, n);
	e->len = (uint16_t)n;
	e->dir = d->no;
	e->obj = obj;
	ht_put(d->ht, d->htcap, (uint64_t)name_hash(s, n) << 32 | d->nkids);
	b->hcount++;
	return e;
}

/* An object made again from its spilled record, in chunks a. Extent
 * units are copied (kept: a name taken back into memory) or point into
 * the record (a directory read back: cap 0, never grown). */
struct bobj *pack_ns_rec_obj(struct r4_pack *b, struct parena *a,
			     const struct pack_srec *h, int keep)
{
	struct bobj *o = pack_parena_get(a, sizeof(*o));
	const char *name = pack_srec_name(h);

	if (!o)
		return NULL;
	o->type = h->type;
	o->tails = h->tails;
	o->data = h->data;
	o->ccreg = CCREG_NO;
	o->attr = h->attr;
	o->size = h->size;
	switch (h->type) {
	case R4_ENT_SYMLINK:
		o->u.target = pack_parena_get(a, (size_t)h->size + 1);
		if (!o->u.target)
			return NULL;
		memcpy(o->u.target, name + h->nlen, (size_t)h->size);
		break;
	case R4_ENT_CHR: case R4_ENT_BLK:
		o->u.rdev = (uint32_t)h->aux;
		break;
	case R4_ENT_REG:
		if (!h->size)
			break;
		o->u.reg = pack_parena_get(a, sizeof(*o->u.reg));
		if (!o->u.reg)
			return NULL;
		o->u.reg->spool_off = h->aux;
		if (h->next && keep) {
			struct enc_units *x = &o->u.reg->ext;

			x->u = malloc(h->next * sizeof(*x->u));
			if (!x->u)
				return NULL;
			memcpy(x->u, pack_srec_units(h),
			       h->next * sizeof(*x->u));
			x->n = x->cap = h->next;
		} else if (h->next) {
			o->u.reg->ext.u = (struct fmt_extent40_unit *)
				(uintptr_t)pack_srec_units(h);
			o->u.reg->ext.n = h->next;
		}
		if (keep) {
			o->u.reg->next = b->regs;
			b->regs = o->u.reg;
		}
		break;
	default:
		break;
	}
	return o;
}

int pack_ns_shadow(struct r4_pack *b, struct bobj *dir, const char *s,
		   size_t n)
{
	if (!b->spill || !dir->u.sub->nspilled)
		return 0;
	return pack_spill_gone(b->spill, dir->u.sub->no, s, n);
}

static uint64_t attr_hash(const struct enc_attr *a)
{
	const uint32_t w[9] = { a->mode, a->uid, a->gid, a->atime, a->mtime,
				a->ctime, a->atime_ns, a->mtime_ns,
				a->ctime_ns };
	uint64_t h = 0x9e3779b97f4a7c15ULL;

	for (int i = 0; i < 9; i++)
		h = (h ^ w[i]) * 0xff51afd7ed558ccdULL;
	/* the low bits pick the slot: mix the high ones in */
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	return h ^ (h >> 33);
}

static int attr_same(const struct enc_attr *x, const struct enc_attr *y)
{
	return x->mode == y->mode && x->uid == y->uid && x->gid == y->gid &&
	       x->atime == y->atime && x->mtime == y->mtime &&
	       x->ctime == y->ctime && x->atime_ns == y->atime_ns &&
	       x->mtime_ns == y->mtime_ns && x->ctime_ns == y->ctime_ns;
}

static struct enc_attr *attr_at(const struct r4_pack *b, size_t i)
{
	return &b->attrc[i / PACK_ATTR_CHUNK][i % PACK_ATTR_CHUNK];
}

/* Twice the slots. */
static int grow_attr_hash(struct r4_pack *b)
{
	size_t nsize = b->ahsize ? b->ahsize * 2 : 256;
	uint32_t *t = calloc(nsize, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < b->nattr; i++) {
		size_t h = attr_hash(attr_at(b, i)) & (nsize - 1);

		while (t[h])
			h = (h + 1) & (nsize - 1);
		t[h] = (uint32_t)i + 1;
	}
	free(b->ahtab);
	b->ahtab = t;
	b->ahsize = nsize;
	return 0;
}

/* o takes attributes a: their index in the table of distinct ones,
 * added there when new. 0, or -ENOMEM. */
int pack_attr_set(struct r4_pack *b, struct bobj *o,
		    const struct enc_attr *a)
{
	size_t h;

	if (2 * (b->nattr + 1) > b->ahsize && grow_attr_hash(b))
		return -ENOMEM;
	h = attr_hash(a) & (b->ahsize - 1);
	for (; b->ahtab[h]; h = (h + 1) & (b->ahsize - 1))
		if (attr_same(attr_at(b, b->ahtab[h] - 1), a)) {
			o->attr = b->ahtab[h] - 1;
			return 0;
		}
	if (b->nattr >= UINT32_MAX - 1)
		return -ENOMEM;
	if (b->nattr % PACK_ATTR_CHUNK == 0) {
		size_t k = b->nattr / PACK_ATTR_CHUNK;

		if (R4_RESERVE(b->attrc, b->capattrc, k + 1, 16))
			return -ENOMEM;
		b->attrc[k] = malloc(PACK_ATTR_CHUNK * sizeof(**b->attrc));
		if (!b->attrc[k])
			return -ENOMEM;
	}
	*attr_at(b, b->nattr) = *a;
	b->ahtab[h] = (uint32_t)b->nattr + 1;
	o->attr = (uint32_t)b->nattr++;
	return 0;
}

int pack_implicit_dir(struct r4_pack *b, struct bobj *o, uint32_t uid,
			uint32_t gid)
{
	struct r4_attr a;
	struct enc_attr ea;

	enc_implicit_dir(uid, gid, b->m.now, &a);
	enc_attr(&a, 0, &ea);
	return pack_attr_set(b, o, &ea);
}
