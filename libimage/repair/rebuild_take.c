/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the tree rebuild, gathering the items (rebuild.c says what the
 * rebuild does): from the nodes reachable from the root that verify,
 * their headers, item offsets and plugin ids mended where the items
 * tell what they were, then from a scan of the used blocks no one
 * reaches. Each item passes the checker's own item checks (chk_item). */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "r4/util.h"
#include "libimage/repair/rebuild.h"
#include "libimage/obj/write.h"
#include "libimage/tree/nodebuf.h"
#include "libimage/txn/txn.h"
#include "libimage/util/err.h"
#include "format/item.h"
#include "format/node.h"
#include "format/super.h"

/* An arena chunk: large enough that its header and the allocator's
 * are nothing, small enough that the last one's slack is nothing. */
#define ARENA_CHUNK ((size_t)1 << 20)

uint8_t *rb_body_alloc(struct rb *b, size_t len)
{
	struct rb_arena *a = &b->bodies;
	uint8_t *p;

	if (len > ARENA_CHUNK)
		return NULL;	/* a body is at most a block */
	len = len ? (len + 7) & ~(size_t)7 : 8;
	if (!a->n || a->used + len > ARENA_CHUNK) {
		if (R4_RESERVE(a->chunk, a->cap, a->n + 1, 64))
			return NULL;
		a->chunk[a->n] = malloc(ARENA_CHUNK);
		if (!a->chunk[a->n])
			return NULL;
		a->n++;
		a->used = 0;
	}
	p = a->chunk[a->n - 1] + a->used;
	a->used += len;
	return p;
}

void rb_bodies_free(struct rb *b)
{
	for (size_t i = 0; i < b->bodies.n; i++)
		free(b->bodies.chunk[i]);
	free(b->bodies.chunk);
	memset(&b->bodies, 0, sizeof(b->bodies));
}

int rb_push(struct rb *b, const struct fmt_key *k, unsigned pid,
	    const uint8_t *body, size_t len)
{
	struct ritem *p;

	if (len > UINT32_MAX || R4_RESERVE(b->it, b->cap, b->n + 1, 1024))
		return -ENOMEM;
	p = &b->it[b->n];
	p->body = rb_body_alloc(b, len);
	if (!p->body)
		return -ENOMEM;
	memcpy(p->body, body, len);
	p->key = *k;
	p->pid = (uint16_t)pid;
	p->len = (uint32_t)len;
	p->seq = (uint32_t)(b->seq_off + b->n++);
	p->suspect = 0;
	p->orphan = 0;
	p->blk = 0;
	p->idx = 0;
	return 0;
}

/* How many item headers of the node in buf, from item 0 on, look like
 * ones of a node at 'level': bodies in order after the node header,
 * below their own header, plugins allowed at the level. */
static unsigned plausible_run(const uint8_t *buf, uint32_t bs,
			      enum fmt_key_policy pol, unsigned pid,
			      unsigned level)
{
	size_t hs = fmt_node_header_size(pid), ihs = fmt_item_header_size(pol);
	size_t prev = 0;
	unsigned i;

	for (i = 0; (size_t)(i + 1) * ihs <= bs - hs; i++) {
		struct fmt_item_header ih;

		fmt_item_header_decode(buf + bs - (size_t)(i + 1) * ihs, pol,
				       &ih);
		if ((i == 0 && ih.offset != hs) || (i > 0 && ih.offset <= prev) ||
		    ih.offset >= bs - (size_t)(i + 1) * ihs ||
		    !fmt_node_item_allowed(ih.plugin_id, level))
			break;
		prev = ih.offset;
	}
	return i;
}

/* The level node copy b->buf is taken at: the parent's (0 when its
 * items fit the level the node gives better: a wrong pointer, not a
 * damaged level, and the node is left for its own parent or the scan),
 * or for the scan the one its items fit, leaf or twig. *run: how many
 * item headers look right at that level. */
static unsigned header_level(struct rb *b, unsigned level,
			     const struct fmt_node_header *nh, unsigned *run)
{
	struct chk *c = &b->R->c;
	unsigned pid = c->vol->sb.node_pid, run_h = 0, r1, r2;

	if (level) {
		*run = plausible_run(b->buf, c->bs, c->pol, pid, level);
		if (nh->level != level && nh->level >= FMT_NODE_LEAF_LEVEL &&
		    nh->level <= FMT_NODE_MAX_LEVEL)
			run_h = plausible_run(b->buf, c->bs, c->pol, pid,
					      nh->level);
		return run_h >= *run && nh->level != level ? 0 : level;
	}
	r1 = plausible_run(b->buf, c->bs, c->pol, pid, 1);
	r2 = plausible_run(b->buf, c->bs, c->pol, pid, 2);
	level = r2 > r1 || (r2 == r1 && nh->level == 2) ? 2 : 1;
	*run = level == 2 ? r2 : r1;
	return level;
}

/* The item count: the header's when it and the free space fields agree
 * (an empty node stays empty: headers past it are stale), else the one
 * of those the run of right-looking item headers (run) confirms. */
static unsigned item_count(const struct chk *c,
			   const struct fmt_node_header *nh, size_t hs,
			   size_t ihs, unsigned run)
{
	unsigned n0 = nh->nr_items, n1 = 0;
	int n1_ok = 0;

	if (nh->free_space_start >= hs && nh->free_space_start <= c->bs &&
	    nh->free_space <= c->bs - nh->free_space_start &&
	    (c->bs - nh->free_space_start - nh->free_space) % ihs == 0)
		n1 = (unsigned)((c->bs - nh->free_space_start -
				 nh->free_space) / ihs), n1_ok = 1;
	if (n1_ok && n0 == n1 && (size_t)n0 * ihs <= c->bs - hs)
		return n0;
	if (n1 && n1 == run)
		return n1;
	if (n0 == run || (n0 && n0 < run))
		return n0;
	return run;
}

/* free_space_start past the last item's body and before the n item
 * headers (from free_space when that fits), free_space from it. */
static void mend_free_space(struct rb *b, struct fmt_node_header *nh,
			    unsigned n, unsigned run, size_t ihs)
{
	struct chk *c = &b->R->c;
	unsigned last_off = 0;

	if (n <= run) {
		struct fmt_item_header ih;

		fmt_item_header_decode(b->buf + c->bs - (size_t)n * ihs,
				       c->pol, &ih);
		last_off = ih.offset;
	}
	if (nh->free_space_start <= last_off ||
	    nh->free_space_start > c->bs - (size_t)n * ihs) {
		size_t fss = c->bs - (size_t)n * ihs;

		if (nh->free_space < fss && fss - nh->free_space > last_off)
			fss -= nh->free_space;
		nh->free_space_start = (uint16_t)fss;
	}
	nh->free_space = (uint16_t)(c->bs - nh->free_space_start -
				    (size_t)n * ihs);
}

/* Mend the header of the node copy in b->buf when its fields disagree
 * (a damaged byte): plugin id and magic set, the level the parent gives
 * (the scan: the level its items fit, leaf or twig), the item count
 * from the free space fields or from the run of item headers that look
 * right, free_space_start from free_space or, failing that, the start
 * of the item headers. Only a copy changes: its items are then taken
 * one by one and each must pass the item checks. 0 when the block is
 * not taken for a node of this volume at this level. */
static int mend_header(struct rb *b, unsigned level,
		       struct fmt_node_header *nh)
{
	struct chk *c = &b->R->c;
	unsigned pid = c->vol->sb.node_pid;
	size_t hs = fmt_node_header_size(pid), ihs = fmt_item_header_size(c->pol);
	unsigned run = 0, n;
	uint16_t raw_pid = (uint16_t)(b->buf[0] | b->buf[1] << 8);
	int magic_ok, mkfs_ok;

	if (!hs)
		return 0;
	b->buf[0] = (uint8_t)pid;
	b->buf[1] = (uint8_t)(pid >> 8);
	if (fmt_node_header_decode(b->buf, c->bs, nh))
		return 0;
	magic_ok = nh->magic == fmt_node_magic(pid);
	mkfs_ok = nh->mkfs_id == c->vol->sb.mkfs_id;
	/* Two of plugin id, magic and mkfs id must hold; the scan wants
	 * the mkfs id (a node of this volume, not of an old one). */
	if ((raw_pid == pid) + magic_ok + mkfs_ok < 2 || (!level && !mkfs_ok))
		return 0;
	level = header_level(b, level, nh, &run);
	if (!level)
		return 0;
	nh->plugin_id = (uint16_t)pid;
	nh->magic = fmt_node_magic(pid);
	nh->level = (uint8_t)level;
	n = item_count(c, nh, hs, ihs, run);
	if (!n)
		return 0;
	nh->nr_items = (uint16_t)n;
	mend_free_space(b, nh, n, run, ihs);
	return fmt_node_header_encode(nh, b->buf, c->bs) ? 0 : 1;
}

/* Read and verify node blk; level 0 = any (a scan: then the node must
 * carry this volume's mkfs id; a node the tree points to may carry
 * another, its items are rewritten into new nodes anyway). 2 when the
 * node verifies, 1 when its header was mended or only it verifies (its
 * items are then taken one by one, those whose header and body hold),
 * 0 when unusable. */
static int load_node(struct rb *b, uint64_t blk, unsigned level,
		     struct fmt_node_header *nh)
{
	struct chk *c = &b->R->c;
	size_t ih = fmt_item_header_size(c->pol);
	size_t hs;

	if (vol_read_block(c->vol, blk, b->buf, "tree node", NULL))
		return 0;
	if (fmt_node_header_decode(b->buf, c->bs, nh) ||
	    nh->magic != fmt_node_magic(nh->plugin_id) ||
	    nh->plugin_id != c->vol->sb.node_pid ||
	    (!level && nh->mkfs_id != c->vol->sb.mkfs_id) ||
	    (level && nh->level != level) || nh->level < 1 ||
	    nh->level > FMT_TREE_HEIGHT_MAX || nh->nr_items == 0)
		return mend_header(b, level, nh);
	if (!fmt_node_verify(b->buf, c->bs, c->pol, NULL))
		return 2;
	hs = fmt_node_header_size(nh->plugin_id);
	if (hs + (size_t)nh->nr_items * ih > c->bs ||
	    nh->free_space_start < hs ||
	    nh->free_space_start > c->bs - (size_t)nh->nr_items * ih)
		return mend_header(b, level, nh);
	return 1;
}

/* A child and the keys its parent gives it: [lo, hi). */
static int outside(const struct fmt_key *k, const struct kid *range)
{
	return range && (fmt_key_cmp(k, &range->lo) < 0 ||
			 fmt_key_cmp(k, &range->hi) >= 0);
}

/* Whether the items outside the range the parent gives are a minority
 * (then their keys are the damaged ones and they go; when most are
 * outside, the parent's key is the damaged one and all stay). */
static int drop_outside(struct rb *b, const struct fmt_node_header *nh,
			const struct kid *range)
{
	unsigned out = 0;

	if (!range)
		return 0;
	for (unsigned i = 0; i < nh->nr_items; i++) {
		struct fmt_item_header ih;

		if (!fmt_node_ih_decode(b->buf, b->v.bs, b->v.pol, i, &ih) &&
		    outside(&ih.key, range))
			out++;
	}
	/* Kept or dropped, an item outside its range is damage the mend
	 * in place does not fix where it lies. */
	b->odd_walk |= out != 0;
	return out && 2 * out < nh->nr_items;
}

/* Whether item i's key is the odd one in its node: below its left
 * neighbour while its right one follows that, or above its right
 * neighbour while its left one precedes that (a damaged key). */
static int misplaced(struct rb *b, const struct fmt_node_header *nh,
		     unsigned i, const struct kid *range)
{
	struct fmt_item_header a, m, z;
	int has_a = i > 0, has_z = i + 1 < nh->nr_items;

	if (fmt_node_ih_decode(b->buf, b->v.bs, b->v.pol, i, &m) ||
	    (has_a && fmt_node_ih_decode(b->buf, b->v.bs, b->v.pol, i - 1,
					 &a)) ||
	    (has_z && fmt_node_ih_decode(b->buf, b->v.bs, b->v.pol, i + 1,
					 &z)))
		return 0;
	/* An item within its parent's keys is not the odd one against a
	 * neighbour outside them (the last or first item of a node has
	 * one neighbour only: the keys tell which of the two is damaged). */
	if (has_a && fmt_key_cmp(&m.key, &a.key) <= 0 &&
	    (!has_z || fmt_key_cmp(&z.key, &a.key) > 0) &&
	    !(range && !outside(&m.key, range) && outside(&a.key, range)))
		return 1;
	return has_z && fmt_key_cmp(&m.key, &z.key) >= 0 &&
	       (!has_a || fmt_key_cmp(&a.key, &z.key) < 0) &&
	       !(range && !outside(&m.key, range) && outside(&z.key, range));
}

/* The value one flipped bit of v gives in (lo, hi), highest bit
 * first; -1 when none. */
static int flip_into(unsigned v, unsigned lo, unsigned hi)
{
	for (int k = 15; k >= 0; k--) {
		unsigned w = v ^ (1u << k);

		if (w > lo && w < hi)
			return (int)w;
	}
	return -1;
}

/* How many tail items of the node the body offsets off[] give the
 * length their keys and sizes want: up to the next item's key offset
 * when that item is the same file's, else up to the file's size. */
static unsigned fit_score(struct rb *b, const struct fmt_item_header *ih,
			  const unsigned *off, unsigned n, unsigned fss)
{
	unsigned score = 0;

	for (unsigned i = 0; i < n; i++) {
		uint64_t at = fmt_key_offset(&ih[i].key), want, len;
		unsigned to = i + 1 < n ? off[i + 1] : fss;
		struct rb_obj o;

		if (ih[i].plugin_id != FMT_ITEM_TAIL40 || to <= off[i])
			continue;
		len = to - off[i];
		if (i + 1 < n && ih[i + 1].plugin_id == FMT_ITEM_TAIL40 &&
		    ih[i + 1].key.el[0] == ih[i].key.el[0] &&
		    ih[i + 1].key.el[1] == ih[i].key.el[1] &&
		    ih[i + 1].key.el[2] == ih[i].key.el[2]) {
			want = fmt_key_offset(&ih[i + 1].key);
		} else {
			if (!rb_obj_find(b, (fmt_key_locality(&ih[i].key) << 4) |
					 FMT_KEY_SD, ih[i].key.el[1],
					 ih[i].key.el[2], &o))
				continue;
			want = o.size;
		}
		score += want > at && want - at == len;
	}
	return score;
}

/* Items i-1 and i out of order (i == n: the last past the free space
 * start fss): item i-1's offset too large or item i's too small; of the
 * two one-bit flips that would put it between its neighbours, the one
 * more items' lengths agree with (fit_score) is made. -1 when neither
 * flip fits (not one damaged offset). */
static int mend_pair(struct rb *b, const struct fmt_item_header *ih,
		     unsigned *off, unsigned n, unsigned fss, unsigned i)
{
	unsigned at = i < n ? off[i] : fss, keep;
	int w1 = -1, w2 = -1;

	if (i >= 2 && off[i - 2] + 1 < at)
		w1 = flip_into(off[i - 1], off[i - 2], at);
	if (i < n)
		w2 = flip_into(off[i], off[i - 1], i + 1 < n ? off[i + 1] : fss);
	if (w1 >= 0 && w2 >= 0) {
		unsigned s1, s2;

		keep = off[i - 1];
		off[i - 1] = (unsigned)w1;
		s1 = fit_score(b, ih, off, n, fss);
		off[i - 1] = keep;
		keep = off[i];
		off[i] = (unsigned)w2;
		s2 = fit_score(b, ih, off, n, fss);
		off[i] = keep;
		if (s2 > s1)
			w1 = -1;
		else
			w2 = -1;
	}
	if (w1 >= 0)
		off[i - 1] = (unsigned)w1;
	else if (w2 >= 0)
		off[i] = (unsigned)w2;
	else
		return -1;
	return 0;
}

/* Item body offsets of the node copy in b->buf that break their order
 * (the first not right after the node header, or one not between its
 * neighbours' while those are in order): a damaged offset, which would
 * lose the item and give its neighbour bytes not its own. The first is
 * set to the header's end; another to the value one flipped bit gives
 * that lies between its neighbours (the first such, highest bit first:
 * a boundary a wrong guess moves is moved back by mend_bounds, the
 * items' sizes telling where it lies). Only the copy changes. */
static void mend_offsets(struct rb *b, const struct fmt_node_header *nh)
{
	uint32_t bs = b->v.bs;
	size_t hs = fmt_node_header_size(nh->plugin_id);
	unsigned n = nh->nr_items, off[NODE_ITEMS_MAX];
	unsigned fss = nh->free_space_start;
	struct fmt_item_header *ih;

	if (!hs || !n || n > NODE_ITEMS_MAX ||
	    (size_t)n * fmt_item_header_size(b->v.pol) > bs - hs)
		return;
	ih = malloc(n * sizeof(*ih));
	if (!ih)
		return;		/* the items are then taken as they are */
	for (unsigned i = 0; i < n; i++) {
		if (fmt_node_ih_decode(b->buf, bs, b->v.pol, i, &ih[i]))
			goto out;
		off[i] = ih[i].offset;
	}
	if (off[0] != hs && (n == 1 || hs < off[1]))
		off[0] = (unsigned)hs;
	for (unsigned i = 1; i <= n; i++)
		if ((i < n ? off[i] : fss) <= off[i - 1] &&
		    mend_pair(b, ih, off, n, fss, i))
			goto out;
	for (unsigned i = 0; i < n; i++) {
		if (ih[i].offset == off[i])
			continue;
		ih[i].offset = (uint16_t)off[i];
		if (fmt_node_ih_encode(&ih[i], b->buf, bs, b->v.pol, i))
			break;
		b->offsets_mended++;
	}
out:
	free(ih);
}

/* Item i of the leaf copy in b->buf has a plugin id no leaf item has
 * (a damaged byte) and a body key: when its object's stat data says a
 * regular file stored as tails and extents (not a compressed one), and
 * the item's length is exactly what its file wants there (up to the
 * next item's key offset when that is the same file's, else up to the
 * size), it is the file's tail item: its plugin id is set back in the
 * copy instead of dropping its bytes. 1 when set. */
static int mend_pid(struct rb *b, const struct fmt_node_header *nh,
		    unsigned i, struct fmt_item_header *ih, size_t len)
{
	struct fmt_item_header z;
	uint64_t at = fmt_key_offset(&ih->key), want;
	struct rb_obj o;

	if (nh->level != FMT_NODE_LEAF_LEVEL ||
	    fmt_node_item_allowed(ih->plugin_id, nh->level) ||
	    fmt_key_type(&ih->key) != FMT_KEY_BODY || !len)
		return 0;
	if (!rb_obj_find(b, (fmt_key_locality(&ih->key) << 4) | FMT_KEY_SD,
			 ih->key.el[1], ih->key.el[2], &o) ||
	    (o.mode & 0170000u) != 0100000u || o.ccreg)
		return 0;
	if (i + 1 < nh->nr_items &&
	    !fmt_node_ih_decode(b->buf, b->v.bs, b->v.pol, i + 1, &z) &&
	    z.key.el[0] == ih->key.el[0] && z.key.el[1] == ih->key.el[1] &&
	    z.key.el[2] == ih->key.el[2])
		want = fmt_key_offset(&z.key);
	else
		want = o.size;
	if (want <= at || want - at != len)
		return 0;
	ih->plugin_id = FMT_ITEM_TAIL40;
	if (fmt_node_ih_encode(ih, b->buf, b->v.bs, b->v.pol, i))
		return 0;
	b->pids_mended++;
	return 1;
}

/* The file bytes a body item holds (tail, extent, ctail40); 0 for
 * other items. */
static uint64_t body_bytes(unsigned pid, const uint8_t *body, size_t len,
			   uint32_t bs)
{
	struct fmt_extent40_unit u;
	uint64_t n = 0;
	int nu;

	if (pid == FMT_ITEM_TAIL40)
		return len;
	if (pid == FMT_ITEM_CTAIL40)
		return len > FMT_CTAIL40_HDR_SIZE ? len - FMT_CTAIL40_HDR_SIZE : 0;
	if (pid != FMT_ITEM_EXTENT40)
		return 0;
	nu = fmt_extent40_units(body, len);
	for (int i = 0; i < nu; i++)
		if (!fmt_extent40_unit(body, len, (unsigned)i, &u) &&
		    u.width <= (UINT64_MAX - n) / bs)
			n += u.width * bs;
	return n;
}

/* Child blk of a pointer item with key k into kids: its delimiting
 * keys from k up to the next pointer's key (the last one's: the node's
 * upper bound, or the largest key at the root). */
static void add_kid(struct kid *kids, size_t *nkids, uint64_t blk,
		    const struct fmt_key *k, const struct kid *range)
{
	struct kid *kd = &kids[(*nkids)++];

	kd->blk = blk;
	kd->lo = *k;
	if (range)
		kd->hi = range->hi;
	else
		fmt_key_max(&kd->hi);
	if (*nkids > 1)
		kids[*nkids - 2].hi = *k;
}

/* A pointer item of an internal node the walk follows: into kids when
 * it passed the checks (ok), else the walk is one the mend in place
 * cannot follow. */
static void take_ptr(struct rb *b, struct kid *kids, size_t *nkids,
		     uint64_t child, int ok, const struct fmt_key *k,
		     const struct kid *range)
{
	if (!kids)
		return;
	if (child && ok)
		add_kid(kids, nkids, child, k, range);
	else
		b->odd_walk = 1;
}

/* Item i of node blk, which passed the checks, into the list: a body
 * item into memory (the mends work on those), any other into the runs
 * (rebuild_spill.c). */
static int keep_item(struct rb *b, const struct fmt_item_header *ih,
		     const uint8_t *body, size_t len, uint64_t blk, unsigned i,
		     int odd)
{
	int rc;

	if (ih->plugin_id != FMT_ITEM_TAIL40 &&
	    ih->plugin_id != FMT_ITEM_EXTENT40 &&
	    ih->plugin_id != FMT_ITEM_CTAIL40)
		return rb_spill_put(b, &ih->key, ih->plugin_id, body, len, blk,
				    i, odd);
	rc = rb_push(b, &ih->key, ih->plugin_id, body, len);
	if (rc)
		return rc;
	b->it[b->n - 1].suspect = (uint8_t)odd;
	b->it[b->n - 1].blk = blk;
	b->it[b->n - 1].idx = (uint16_t)i;
	return 0;
}

/* The items of the node in b->buf (leaf items, and a twig's extents)
 * that pass the item checks; children of internal nodes into kids with
 * their delimiting keys. */
static int take_items(struct rb *b, uint64_t blk,
		      const struct fmt_node_header *nh, struct kid *kids,
		      size_t *nkids, const struct kid *range)
{
	int drop;

	mend_offsets(b, nh);
	drop = drop_outside(b, nh, range);

	for (unsigned i = 0; i < nh->nr_items; i++) {
		struct fmt_item_header ih;
		struct fmt_key last;
		uint64_t before = b->vrep.problems - b->v.shared, child = 0;
		size_t off, len;
		int rc, odd;

		if (fmt_node_ih_decode(b->buf, b->v.bs, b->v.pol, i, &ih) ||
		    fmt_node_item_body(b->buf, b->v.bs, b->v.pol, i, &off,
				       &len)) {
			b->items_dropped++;
			continue;
		}
		mend_pid(b, nh, i, &ih, len);
		/* Out of place: dropped, except body items, whose key may
		 * be mended (mend_keys) */
		odd = (drop && outside(&ih.key, range)) ||
		      misplaced(b, nh, i, range);
		if (odd && ih.plugin_id != FMT_ITEM_TAIL40 &&
		    ih.plugin_id != FMT_ITEM_EXTENT40 &&
		    ih.plugin_id != FMT_ITEM_CTAIL40) {
			b->odd_walk |= ih.plugin_id == FMT_ITEM_NODEPTR40;
			b->items_dropped++;
			continue;
		}
		rc = chk_item(&b->v, blk, i, &ih, b->buf + off, len, &child,
			      &last);
		if (rc < 0)
			return rc;
		if (ih.plugin_id == FMT_ITEM_NODEPTR40) {
			take_ptr(b, kids, nkids, child, b->vrep.problems -
				 b->v.shared == before, &ih.key, range);
			continue;
		}
		if (b->vrep.problems - b->v.shared != before) {
			b->items_dropped++;
			b->bytes_dropped += body_bytes(ih.plugin_id, b->buf + off,
						       len, b->v.bs);
			continue;
		}
		rc = keep_item(b, &ih, b->buf + off, len, blk, i, odd);
		if (rc)
			return rc;
	}
	return 0;
}

/* A pointer to a node that does not verify: a leaf's key noted for
 * the mend in place (which cuts the pointer), anything else marks the
 * walk as one that mend cannot follow. */
static int dead_kid(struct rb *b, unsigned level, const struct kid *range)
{
	if (level != FMT_NODE_LEAF_LEVEL || !range) {
		b->odd_walk = 1;
		return 0;
	}
	if (R4_RESERVE(b->dead, b->capdead, b->ndead + 1, 16))
		return -ENOMEM;
	b->dead[b->ndead++] = range->lo;
	return 0;
}

/* Depth first from the root; a node that does not verify is dropped
 * with its subtree (whose nodes the scan may still find). */
int rb_walk(struct rb *b, uint64_t blk, unsigned level,
	    const struct kid *range)
{
	struct chk *c = &b->R->c;
	struct fmt_node_header nh;
	struct kid *kids;
	size_t nk = 0;
	int rc;

	if (blk < c->first_usable || blk >= c->blocks ||
	    chk_is_bitmap_blk(c, blk) || chk_map_test(&b->seen, blk)) {
		b->odd_walk = 1;
		return 0;
	}
	rc = load_node(b, blk, level, &nh);
	if (!rc) {
		/* Not marked seen: the scan may still take it (a node of
		 * another level a damaged pointer led to). */
		b->nodes_dropped++;
		return dead_kid(b, level, range);
	}
	if (rc == 1)
		b->nodes_salvaged++;
	else
		b->nodes_kept++;
	rc = chk_map_set(&b->seen, blk);
	if (rc >= 0)
		rc = chk_map_set(&b->walked, blk);
	if (rc < 0)
		return rc;
	kids = malloc(nh.nr_items * sizeof(*kids) + 1);
	if (!kids)
		return -ENOMEM;
	rc = take_items(b, blk, &nh, level > 1 ? kids : NULL, &nk, range);
	for (size_t i = 0; i < nk && !rc && level > 1; i++)
		rc = rb_walk(b, kids[i].blk, level - 1, &kids[i]);
	free(kids);
	return rc;
}

/* Used blocks nobody reached that are leaves or twigs of this volume
 * (their headers mended as the walk's are). Only the blocks the space
 * map calls used (its bitmaps, or pinned) can be one, and the scan
 * steps from one to the next: its work follows what is in use, not the
 * size of the volume. The next one is looked up afresh each time, so a
 * block marked or pinned while the scan runs is seen as before. */
int rb_scan(struct rb *b)
{
	struct chk *c = &b->R->c;
	struct fmt_node_header nh;
	uint64_t blk = c->first_usable;
	int rc;

	for (;; blk++) {
		rc = space_next_used(&c->vol->space, blk, &blk, b->R->err);
		if (rc < 0)
			return rc;
		if (blk >= c->blocks || blk >= c->vol->space.block_count)
			break;
		if (chk_is_bitmap_blk(c, blk) || chk_map_test(&b->seen, blk) ||
		    chk_map_test(&b->v.used, blk))
			continue;
		if (!load_node(b, blk, 0, &nh) || nh.level > 2)
			continue;
		rc = chk_map_set(&b->seen, blk);
		if (rc < 0)
			return rc;
		b->scanned++;
		rc = take_items(b, blk, &nh, NULL, NULL, NULL);
		if (rc)
			return rc;
	}
	return 0;
}
