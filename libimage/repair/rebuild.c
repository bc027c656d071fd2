/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: rebuilding a damaged storage tree (r4fsck -y when the check
 * finds tree damage). Every item that passes the checker's own item
 * checks (chk_item) is gathered: first from the nodes reachable from the
 * root that verify (header, item headers, key order, checksum, this
 * volume's mkfs id, the level their parent gives), then from a scan of
 * the blocks the bitmap marks used that no one reaches and that verify
 * as leaves or twigs of this volume (lost subtrees). Items are sorted by
 * key; of two with one key the first found stays; extents that share a
 * block with another stay too (block-shared: the pass of blocks claimed
 * twice, twice.c, gives each a copy after the rebuild). A new tree is built
 * from them in one transaction
 * (copy-on-write: the old tree stays on disk, untouched, until the
 * commit point, so a power cut leaves the old volume and a rerun starts
 * again); the root directory's stat data is made anew, with the plugin
 * set of the backup copy, when no item holds it. What did not make it
 * (nodes and items dropped) is reported. The object and space passes
 * then finish: entries to lost objects, lost+found, nlink, bitmaps.
 * The items are gathered in rebuild_take.c, their keys mended in
 * rebuild_keys.c and the root's stat data made in rebuild_root.c (the
 * state they share: rebuild.h); this file mends the
 * boundaries between files, fills the breaks and builds the tree. */
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
#include "format/bitmap.h"
#include "format/journal.h"
#include "format/super.h"

static uint64_t want_end(const struct rb *b, size_t i)
{
	const struct ritem *p = &b->it[i];
	struct fmt_key k = p->key;
	struct fmt_stat st;
	size_t j;

	for (j = i + 1; j < b->n && b->it[j].pid == DROPPED; j++)
		;
	if (j < b->n && rb_same_body(p, &b->it[j]))
		return fmt_key_offset(&b->it[j].key);
	k.el[0] = (fmt_key_locality(&p->key) << 4) | FMT_KEY_SD;
	k.el[3] = 0;
	j = rb_find_key(b, &k);
	if (j == SIZE_MAX || b->it[j].pid != FMT_ITEM_STAT40 ||
	    fmt_stat_decode(b->it[j].body, b->it[j].len, &st))
		return 0;
	return st.size;
}

int rb_nodepos_cmp(const void *x, const void *y)
{
	const struct rb_nodepos *a = x, *c = y;

	if (a->blk != c->blk)
		return a->blk < c->blk ? -1 : 1;
	return a->idx < c->idx ? -1 : a->idx > c->idx;
}

/* The sorted position of the tail item that was item idx of node blk,
 * or SIZE_MAX. */
static size_t node_item(const struct rb_nodepos *np, size_t n, uint64_t blk,
			unsigned idx)
{
	struct rb_nodepos k = { blk, idx, 0 };
	const struct rb_nodepos *f = bsearch(&k, np, n, sizeof(*np),
					  rb_nodepos_cmp);

	return f ? f->i : SIZE_MAX;
}

/* Move the last 'e' bytes of item from into the front of item to
 * (front = 1) or its first 'e' bytes onto the end of to (front = 0). */
static int shift_bytes(struct rb *b, struct ritem *from, struct ritem *to,
		       size_t e, int front)
{
	uint8_t *nb = to->len + e <= UINT32_MAX ?
		      rb_body_alloc(b, to->len + e) : NULL;

	if (!nb)
		return -ENOMEM;
	if (front) {
		memcpy(nb, from->body + from->len - e, e);
		memcpy(nb + e, to->body, to->len);
	} else {
		memcpy(nb, to->body, to->len);
		memcpy(nb + to->len, from->body, e);
		memmove(from->body, from->body + e, from->len - e);
	}
	to->body = nb;
	to->len += e;
	from->len -= e;
	return 0;
}

/* The tail items that came from a node, sorted by that node's block and
 * their place in it (for node_item), or NULL without memory. */
static struct rb_nodepos *tail_positions(const struct rb *b, size_t *nn)
{
	struct rb_nodepos *np = malloc((b->n ? b->n : 1) * sizeof(*np));

	*nn = 0;
	if (!np)
		return NULL;
	for (size_t i = 0; i < b->n; i++)
		if (b->it[i].pid == FMT_ITEM_TAIL40 && b->it[i].blk) {
			np[*nn].blk = b->it[i].blk;
			np[*nn].idx = b->it[i].idx;
			np[(*nn)++].i = i;
		}
	if (*nn)
		qsort(np, *nn, sizeof(*np), rb_nodepos_cmp);
	return np;
}

/* The tail item beside item p in its node (before it, else after it:
 * *front = 1) that misses exactly e bytes of its body, or SIZE_MAX. */
static size_t boundary_neighbour(const struct rb *b,
				 const struct rb_nodepos *np, size_t nn,
				 const struct ritem *p, uint64_t e, int *front)
{
	uint32_t bs = b->R->c.bs;

	for (int side = 0; side < 2 && p->blk; side++) {
		const struct ritem *q;
		size_t j;

		if (side == 0 && !p->idx)
			continue;
		j = node_item(np, nn, p->blk, side ? p->idx + 1 : p->idx - 1);
		if (j == SIZE_MAX)
			continue;
		q = &b->it[j];
		if (q->pid == FMT_ITEM_TAIL40 &&
		    want_end(b, j) > rb_item_end(q, bs) &&
		    want_end(b, j) - rb_item_end(q, bs) == e) {
			*front = side;
			return j;
		}
	}
	return SIZE_MAX;
}

/* Move the e bytes item p holds past its body to its neighbour q in
 * the node, which misses them (reported). */
static int move_boundary(struct rb *b, struct ritem *p, struct ritem *q,
			 uint64_t e, int front)
{
	int rc = shift_bytes(b, p, q, (size_t)e, front);

	if (rc)
		return rc;
	b->bytes_moved += e;
	rep_action(b->R, R4_CHK_DKEY, p->blk, fmt_key_objectid(&p->key),
		   R4_LOSS_NONE, 0, "block %llu items %u and %u: %llu bytes "
		   "at the boundary of their bodies belong to the %s item "
		   "(a damaged item offset): moved there",
		   (unsigned long long)p->blk, front ? p->idx : q->idx,
		   front ? q->idx : p->idx, (unsigned long long)e,
		   front ? "second" : "first");
	return 0;
}

/* Cut from item i the bytes want..end-1 that the next item of its body
 * holds too (reported); past the last item the size follows instead. */
static void cut_held_twice(struct rb *b, size_t i, uint64_t want, uint64_t end)
{
	struct ritem *p = &b->it[i];
	size_t j;

	for (j = i + 1; j < b->n && b->it[j].pid == DROPPED; j++)
		;
	if (j == b->n || !rb_same_body(p, &b->it[j]))
		return;
	rep_action(b->R, R4_CHK_DKEY, p->blk, fmt_key_objectid(&p->key),
		   R4_LOSS_NONE, 0, "file %llx: bytes %llu..%llu held "
		   "by two items: the later item's kept",
		   (unsigned long long)fmt_key_objectid(&p->key),
		   (unsigned long long)want, (unsigned long long)(end - 1));
	p->len -= (size_t)(end - want);
}

/* Tail items that reach past where their body goes on (the next item
 * of the object, or the size after the last one): a damaged item
 * offset in their node moved the boundary between two bodies, so the
 * bytes one holds too many are the ones its neighbour in that node
 * misses (then they are moved back: nothing lost); otherwise bytes held
 * twice are cut from the earlier item (reported). */
static int mend_bounds(struct rb *b)
{
	uint32_t bs = b->R->c.bs;
	size_t nn;
	struct rb_nodepos *np = tail_positions(b, &nn);
	int rc = 0;

	if (!np)
		return -ENOMEM;
	for (size_t i = 0; i < b->n && !rc; i++) {
		struct ritem *p = &b->it[i];
		uint64_t at = fmt_key_offset(&p->key), end, want;
		size_t nb;
		int front = 0;

		if (p->pid != FMT_ITEM_TAIL40)
			continue;
		end = rb_item_end(p, bs);
		want = want_end(b, i);
		if (want <= at || end <= want)
			continue;
		nb = boundary_neighbour(b, np, nn, p, end - want, &front);
		if (nb != SIZE_MAX)
			rc = move_boundary(b, p, &b->it[nb], end - want, front);
		else
			cut_held_twice(b, i, want, end);
	}
	free(np);
	return rc;
}

/* Breaks in the bodies of the (sorted) items: a body that starts past
 * offset 0 or has a piece missing between two items. A body item that
 * starts past the size its stat data gives (rounded up to a block)
 * after a break has a damaged key: it is dropped, not the break
 * filled (a key's offset made huge would mean terabytes of zeros). */
static int fill_gaps(struct rb *b)
{
	size_t n = b->n;
	uint32_t bs = b->R->c.bs;
	const struct ritem *prev = NULL;
	uint64_t end = 0;
	int rc = 0;

	for (size_t i = 0; i < n && !rc; i++) {
		const struct ritem *p = &b->it[i];
		uint64_t at = fmt_key_offset(&p->key);

		if (p->pid != FMT_ITEM_TAIL40 && p->pid != FMT_ITEM_EXTENT40) {
			prev = NULL;
			continue;
		}
		if (!prev || prev->key.el[0] != p->key.el[0] ||
		    prev->key.el[1] != p->key.el[1] ||
		    prev->key.el[2] != p->key.el[2])
			end = 0;
		if (at > end) {
			uint64_t size = rb_sd_size(b, n, p);

			if (size > UINT64_MAX - bs ||
			    at > size + bs - 1 - (size + bs - 1) % bs) {
				b->bytes_dropped += rb_item_end(p, bs) - at;
				b->it[i].pid = DROPPED;
				b->items_dropped++;
				continue;
			}
			rc = rb_fill_gap(b, p, end, at);
			p = &b->it[i];	/* push may have moved the array */
		}
		prev = p;
		if (rb_item_end(p, b->R->c.bs) > end)
			end = rb_item_end(p, b->R->c.bs);
	}
	return rc;
}

/* A leaf under a twig holding item 'first', as the new tree's root. */
static int first_tree(struct rb *b, struct r4_txn *x, const struct ritem *first,
		      struct r4_error *err)
{
	struct r4_vol *vol = x->vol;
	uint32_t bs = vol->blksize;
	uint8_t *node = b->buf, *out, ptr[8];
	struct io_block *io;
	uint64_t leaf, twig;
	int rc;

	rc = txn_alloc(x->t, fmt_blk_first_usable(bs), &leaf, err);
	if (!rc)
		rc = txn_alloc(x->t, leaf, &twig, err);
	if (rc)
		return rc;
	rc = fmt_node_init(node, bs, vol->sb.node_pid, 1, vol->sb.mkfs_id);
	if (!rc)
		rc = node_append_item(node, bs, vol->keypol, &first->key,
				      first->pid, first->body, first->len,
				      &out);
	if (rc)
		return r4i_fail(err, rc, "cannot make the first leaf");
	fmt_node_stamp(node, bs);
	rc = txn_new(x->t, leaf, &io, err);
	if (rc)
		return rc;
	memcpy(io->data, node, bs);
	txn_put(x->t, io);
	for (int i = 0; i < 8; i++)
		ptr[i] = (uint8_t)(leaf >> (8 * i));
	rc = fmt_node_init(node, bs, vol->sb.node_pid, 2, vol->sb.mkfs_id);
	if (!rc)
		rc = node_append_item(node, bs, vol->keypol, &first->key,
				      FMT_ITEM_NODEPTR40, ptr, sizeof(ptr),
				      &out);
	if (rc)
		return r4i_fail(err, rc, "cannot make the first twig");
	fmt_node_stamp(node, bs);
	rc = txn_new(x->t, twig, &io, err);
	if (rc)
		return rc;
	memcpy(io->data, node, bs);
	txn_put(x->t, io);
	vol->sb.root_block = twig;
	vol->sb.tree_height = 2;
	txn_set_root(x->t, twig, 2);
	tree_mod_fini(&x->mod);
	return tree_mod_init(&x->mod, vol, x->t, err);
}

/* The nodes whose items the new tree takes (walked or found by the
 * scan; the scan's alone without 'walked') that the bitmap marks used
 * and no kept extent claims: the new tree's transaction frees them, so
 * that a later rebuild's scan cannot take their stale items back.
 * Marked used before the transaction, they are none of the blocks it
 * allocates. */
/* An extent unit's blocks in the volume into map ctx. */
static int map_unit(struct rb *b, uint64_t start, uint64_t width, void *ctx)
{
	struct chk_map *ext = ctx;
	int rc = 0;

	for (uint64_t e = start; e < b->R->c.blocks && e - start < width &&
	     !rc; e++)
		rc = chk_map_set(ext, e) < 0 ? -ENOMEM : 0;
	return rc;
}

int rb_old_nodes(struct rb *b, int walked, struct chk_map *out,
		 size_t *nout)
{
	struct chk *c = &b->R->c;
	struct chk_map ext;
	size_t n = 0;
	int rc;

	*nout = 0;
	memset(out, 0, sizeof(*out));	/* chk_map_fini below is safe */
	rc = chk_map_init(&ext, c->blocks, c->used.chunk_bits);
	if (!rc)
		rc = chk_map_init(out, c->blocks, c->used.chunk_bits);

	if (!rc)
		rc = rb_extents(b, map_unit, &ext);
	for (uint64_t blk = chk_map_next(&b->seen, c->first_usable);
	     blk < c->blocks && !rc; blk = chk_map_next(&b->seen, blk + 1)) {
		if (chk_map_test(&ext, blk) ||
		    chk_is_bitmap_blk(c, blk) ||
		    (!walked && chk_map_test(&b->walked, blk)))
			continue;
		rc = space_test(&c->vol->space, blk, b->R->err);
		if (rc <= 0)
			continue;
		rc = chk_map_set(out, blk) < 0 ? -ENOMEM : 0;
		n++;
	}
	chk_map_fini(&ext);
	if (rc) {
		chk_map_fini(out);
		return rc;
	}
	*nout = n;
	return 0;
}

int rb_log_room(struct r4_vol *vol, struct r4_error *err)
{
	uint64_t nreg = fmt_bitmap_count(vol->sb.block_count, vol->blksize);
	uint64_t now = 1 + nreg, avail = 0;
	uint64_t log = now + (now - 1) / fmt_wander_capacity(vol->blksize) + 2;
	int rc = space_count_usable(&vol->space, &avail, err);

	if (!rc && avail < log)
		rc = r4i_fail(err, R4_ENOSPC, "%s: no free block left for the "
			      "journal (up to %llu blocks needed)",
			      vol->dev->path, (unsigned long long)log);
	return rc;
}

/* Whether the free blocks hold the new tree with room to spare (its
 * items' bytes in full nodes, a sixteenth more for the nodes above the
 * leaves and the slack of each leaf, and 64): only then are its
 * nodes written before the commit. They go to free blocks, which is
 * safe, but a tree that then finds no room (the mend in place follows)
 * would leave them written; a volume short of room keeps them in
 * memory, its free blocks untouched until the commit. */
static int room_to_spare(const struct rb *b, uint64_t room)
{
	uint64_t bytes = b->sp.bytes, nodes;

	for (size_t i = 0; i < b->n; i++)
		bytes += (uint64_t)b->it[i].len + 40;
	nodes = bytes / b->R->c.bs + 1;
	return room >= nodes + nodes / 16 + 64;
}

/* The free blocks a new tree may take: the transaction's count, which
 * comes from the super block and may lie, bounded by what the
 * allocator can hand out (the bitmaps, less the pins). */
static int free_room(struct rb *b, struct r4_txn *x, uint64_t *room,
		     struct r4_error *err)
{
	uint64_t usable = 0;
	int rc = space_count_usable(&b->R->vol->space, &usable, err);

	*room = txn_free_left(x->t);
	if (!rc && usable < *room)
		*room = usable;
	return rc;
}

/* The new nodes in memory: the run budget's worth (16 MiB by default),
 * then the one made longest ago is written ahead of the commit when the
 * volume has room to spare, else to a temporary file (txn_spill), the
 * free blocks untouched until the commit; tests force the file with
 * rebuild_spill_bytes. */
static int nodes_kept(struct rb *b, struct r4_txn *x, uint64_t room,
		      struct r4_error *err)
{
	size_t bs = b->R->c.bs, forced = b->R->o->rebuild_spill_bytes;
	size_t keep = (forced ? forced : b->sp.budget) / bs;

	if (keep < 2)
		keep = 2;
	if (!forced && room_to_spare(b, room))
		return txn_write_behind(x->t, keep, err);
	return txn_spill(x->t, keep, err);
}

/* The new tree in one transaction (first_tree, then every item in key
 * order), the old nodes freed at its commit. R4_ENOSPC with *need
 * (about) when the free blocks cannot hold it: nothing written then
 * but free blocks. */
static int build_fresh(struct rb *b, uint64_t *need, struct r4_error *err)
{
	struct r4_txn *x;
	struct ritem first;
	uint8_t *fbody;
	size_t at, nold = 0, done = 0;
	struct chk_map old = { 0 };
	uint64_t room;
	int rc = rb_first_leaf_item(b, &first, &fbody, &at, err);

	if (rc)
		return rc;
	rc = rb_old_nodes(b, 1, &old, &nold);
	if (!rc)	/* a bitmap calling them free: the new tree's nodes
			 * would be written over extents or the old tree */
		rc = rb_pin_kept(b, &old);
	if (!rc)
		rc = r4_txn_begin(b->R->vol, &x, err);
	if (rc) {
		chk_map_fini(&old);
		free(fbody);
		return rc;
	}
	rc = free_room(b, x, &room, err);
	if (!rc)
		rc = nodes_kept(b, x, room, err);
	if (!rc)
		rc = first_tree(b, x, &first, err);
	free(fbody);
	if (!rc)
		rc = rb_insert_all(b, x, at, &done, err);
	for (uint64_t blk = chk_map_next(&old, 0); blk < old.nbits && !rc;
	     blk = chk_map_next(&old, blk + 1))
		rc = txn_free(x->t, blk, 1, err);
	chk_map_fini(&old);
	if (!rc)
		rc = rb_log_room(b->R->vol, err);
	if (rc == R4_ENOSPC)	/* the nodes, and the commit's journal */
		*need = rb_need_about(b, done, room) + 3 +
			fmt_bitmap_count(b->R->vol->sb.block_count,
					 b->R->vol->blksize);
	if (rc) {
		r4_txn_abort(x);
		return rc;
	}
	b->R->r->nodes_spilled += txn_spilled(x->t);
	rc = r4_txn_commit(x, err);
	if (!rc) {
		b->R->r->transactions++;
		b->freed = nold;
		b->committed = 1;
		rc = rb_unpin_gone(b, 1);
		if (rc)
			rc = r4i_fail(err, rc, "out of memory for the tree "
				      "rebuild");
	}
	return rc;
}

/* A new tree; on a volume whose free blocks cannot hold one (an
 * auto-sized image: a new tree is as large as the old, whose blocks
 * are free only once it commits), the old tree mended in place when
 * its only damage is leaves that do not verify and lost items
 * (rebuild_inplace.c); else R4_ENOSPC saying how many blocks a new
 * tree needs, the volume as it was. */
static int build(struct rb *b, struct r4_error *err)
{
	struct r4_vol *vol = b->R->vol;
	uint64_t need = 0, room = 0;
	int rc = space_count_free(&vol->space, &room, err);

	if (!rc)
		rc = build_fresh(b, &need, err);
	if (rc != R4_ENOSPC || vol->failed)
		return rc;
	r4i_error_clear(err);
	rc = rb_mend_in_place(b, err);
	if (rc == 1 || (rc == R4_ENOSPC && !vol->failed)) {
		b->R->r->no_room = 1;
		return r4i_fail_over(err, R4_ENOSPC, "%s: no room for the tree "
				"rebuild: a new tree needs about %llu free "
				"blocks, the volume has %llu%s; the tree "
				"rebuild changed nothing (r4resize can grow "
				"it)",
				vol->dev->path, (unsigned long long)need,
				(unsigned long long)room, rc == 1 ? "" :
				" (and mending the old tree in place needs "
				"more than that)");
	}
	return rc;
}

/* Whether the boundary between two tail bodies in one node moved (a
 * damaged item offset: one file holds e bytes past its size, the one
 * before it in the node misses e bytes of its size): the bytes are all
 * there, the tree rebuild puts them back (mend_bounds), where setting
 * the two sizes would cut one file and pad the other. 1 when some pair
 * of files does, 0 when none, -ENOMEM. */
int rep_bounds_shifted(struct rep *R)
{
	struct chk *c = &R->c;
	uint8_t *buf = malloc(c->bs);
	int found = 0;

	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < c->nbodies && !found; i++) {
		const struct chk_body *bx = &c->bodies[i], *by;
		struct fmt_item_header ia, ib;
		uint32_t x, y;

		if (bx->kinds != CHK_BODY_TAIL || !bx->item)
			continue;
		x = chk_obj_find(c, bx->el0, bx->el1, bx->el2);
		if (x == CHK_NONE || c->objs[x].size == bx->end ||
		    (c->objs[x].mode & S_IFMT) != S_IFREG ||
		    vol_read_block(c->vol, bx->blk, buf, "tree node", NULL) ||
		    fmt_node_ih_decode(buf, c->bs, c->pol, bx->item - 1, &ia) ||
		    fmt_node_ih_decode(buf, c->bs, c->pol, bx->item, &ib) ||
		    ia.plugin_id != FMT_ITEM_TAIL40 ||
		    ib.plugin_id != FMT_ITEM_TAIL40 ||
		    fmt_key_type(&ia.key) != FMT_KEY_BODY)
			continue;
		y = chk_obj_find(c, (fmt_key_locality(&ia.key) << 4) |
				 FMT_KEY_SD, ia.key.el[1], ia.key.el[2]);
		if (y == CHK_NONE || y == x ||
		    (c->objs[y].mode & S_IFMT) != S_IFREG)
			continue;
		by = chk_body_find(c, c->objs[y].el0, c->objs[y].el1,
				   c->objs[y].el2);
		if (!by || by->kinds != CHK_BODY_TAIL)
			continue;
		/* x holds what y misses, or misses what y holds */
		if (bx->end - c->objs[x].size == c->objs[y].size - by->end)
			found = 1;
	}
	free(buf);
	return found;
}

/* Phase 1: every item that verifies, from the nodes the walk from the
 * root reaches and from the scan of the used blocks no one reaches,
 * sorted by key. */
static int gather(struct rb *b, uint64_t *dup)
{
	struct rep *R = b->R;
	struct chk *c = &R->c;
	int rc;

	b->v.vol = R->vol;
	b->v.rep = &b->vrep;
	b->v.err = R->err;
	b->v.items_only = 1;	/* its tables are never read */
	b->buf = malloc(c->bs);
	rc = b->buf ? chk_setup(&b->v) : -ENOMEM;
	if (!rc)
		rc = rb_named(b);
	if (!rc)
		rc = rb_objs(b);
	if (!rc)
		rc = chk_map_init(&b->seen, c->blocks, c->used.chunk_bits);
	if (!rc)
		rc = chk_map_init(&b->walked, c->blocks, c->used.chunk_bits);
	if (!rc)
		rc = rb_walk(b, R->vol->sb.root_block, R->vol->sb.tree_height,
			     NULL);
	if (!rc)
		rc = rb_scan(b);
	if (!rc)
		rc = b->objs_err;	/* a look-up could not read its file */
	if (!rc)
		rc = rb_spill_pull(b, dup);
	if (!rc && b->n)
		qsort(b->it, b->n, sizeof(*b->it), rb_item_cmp);
	return rc;
}

/* Second copies of a key in the sorted items go: the first found
 * stays, counted in *dup. */
static void drop_second_copies(struct rb *b, uint64_t *dup)
{
	size_t k = 0;

	for (size_t i = 0; i < b->n; i++) {
		if (k && !fmt_key_cmp(&b->it[k - 1].key, &b->it[i].key)) {
			(*dup)++;
			continue;
		}
		b->it[k++] = b->it[i];
	}
	b->n = k;
}

/* A mended key may meet another item's: of the sorted items with one
 * key the first found stays, the others are marked dropped. */
static void drop_met_keys(struct rb *b, uint64_t *dup)
{
	for (size_t i = 1, last = 0; i < b->n; i++) {
		if (b->it[i].pid == DROPPED)
			continue;
		if (b->it[last].pid != DROPPED &&
		    !fmt_key_cmp(&b->it[last].key, &b->it[i].key)) {
			b->it[i].pid = DROPPED;
			(*dup)++;
			continue;
		}
		last = i;
	}
}

/* Phase 2: the keys mended (the root's stat data, keys, compressed
 * tails, far and orphan items), then the boundaries between bodies and
 * the breaks in them; the items sorted again after each step that
 * moves keys. */
static int mend(struct rb *b, uint64_t *dup)
{
	int moved = 0;
	int rc = rb_root_sd(b);

	if (!rc && b->n)
		qsort(b->it, b->n, sizeof(*b->it), rb_item_cmp);
	if (!rc)
		rc = rb_mend_keys(b);
	if (!rc && b->n)
		qsort(b->it, b->n, sizeof(*b->it), rb_item_cmp);
	if (!rc)
		drop_met_keys(b, dup);
	if (!rc)
		rc = rb_mend_ctails(b, &moved);
	if (!rc && moved)
		qsort(b->it, b->n, sizeof(*b->it), rb_item_cmp);
	if (!rc)
		rc = rb_place_far(b, &moved);
	if (!rc)
		rc = rb_rekey_orphans(b, &moved);
	if (!rc && moved)
		qsort(b->it, b->n, sizeof(*b->it), rb_item_cmp);
	if (!rc)
		rc = mend_bounds(b);
	if (!rc)
		rc = fill_gaps(b);
	return rc;
}

/* The items marked dropped taken out; the rest sorted for
 * the build. */
static void compact(struct rb *b)
{
	size_t j = 0;

	for (size_t i = 0; i < b->n; i++)
		if (b->it[i].pid != DROPPED)
			b->it[j++] = b->it[i];
	b->n = j;
	if (b->n)
		qsort(b->it, b->n, sizeof(*b->it), rb_item_cmp);
}

/* The rebuild's counts added to the run's and its one-line summary. */
static void report(struct rb *b, uint64_t dup)
{
	struct rep *R = b->R;

	R->r->items_dropped += b->items_dropped + dup;
	R->r->bytes_dropped += b->bytes_dropped;
	R->r->bytes_moved += b->bytes_moved;
	R->r->nodes_dropped += b->nodes_dropped;
	if (b->in_place) {
		rep_action(R, R4_CHK_NODE, R->vol->sb.root_block, 0,
			   b->items_dropped + dup ? R4_LOSS_ITEMS :
			   R4_LOSS_NONE, b->items_dropped + dup,
			   "storage tree mended in place (no room for a new "
			   "tree): %zu pointers to leaves that do not verify "
			   "cut, %llu items put back (%llu found by a scan "
			   "of unreachable used blocks), %llu items dropped "
			   "(%llu of them second copies of a key); the nodes "
			   "the scan took freed (%llu)", b->ndead,
			   (unsigned long long)b->put_back,
			   (unsigned long long)b->scanned,
			   (unsigned long long)(b->items_dropped + dup),
			   (unsigned long long)dup,
			   (unsigned long long)b->freed);
		return;
	}
	rep_action(R, R4_CHK_NODE, R->vol->sb.root_block, 0,
		   b->items_dropped + dup ? R4_LOSS_ITEMS : R4_LOSS_NONE,
		   b->items_dropped + dup, "storage tree rebuilt "
		   "(new root %llu) from %zu items of %llu nodes "
		   "(%llu found by a scan of unreachable used blocks, "
		   "%llu damaged ones taken item by item); %llu nodes "
		   "and %llu items dropped (%llu of them second copies "
		   "of a key); %llu item body offsets and %llu keys "
		   "mended, %llu item plugin ids set back; the old "
		   "nodes taken freed (%llu)",
		   (unsigned long long)R->vol->sb.root_block,
		   (size_t)(b->n + b->sp.kept),
		   (unsigned long long)(b->nodes_kept + b->scanned +
					b->nodes_salvaged),
		   (unsigned long long)b->scanned,
		   (unsigned long long)b->nodes_salvaged,
		   (unsigned long long)b->nodes_dropped,
		   (unsigned long long)(b->items_dropped + dup),
		   (unsigned long long)dup,
		   (unsigned long long)b->offsets_mended,
		   (unsigned long long)b->mended,
		   (unsigned long long)b->pids_mended,
		   (unsigned long long)b->freed);
}

int rep_rebuild_tree(struct rep *R, int *changed)
{
	struct rb b = { .R = R, .objs_fd = -1,
			 .objs_levels = R->o->rebuild_objs_levels };
	uint64_t dup = 0;
	int rc = rb_spill_init(&b, R->o->rebuild_run_bytes);

	if (!rc)
		rc = gather(&b, &dup);
	if (!rc)
		drop_second_copies(&b, &dup);
	if (!rc)
		rc = mend(&b, &dup);
	if (!rc) {
		compact(&b);
		rc = build(&b, R->err);
	}
	if (rc == -ENOMEM)
		rc = r4i_fail(R->err, rc, "out of memory for the tree rebuild");
	else if (rc < 0 && !R->err->code)
		rc = r4i_fail(R->err, rc, "%s: cannot keep the tree "
			      "rebuild's items in temporary files (in $TMPDIR, "
			      "else /tmp): %s",
			      R->vol->dev->path, r4_strerror(rc));
	/* an error after the commit (letting go of pins) still leaves the
	 * new tree on the volume: it is reported as made */
	if (!rc || b.committed) {
		*changed = 1;
		report(&b, dup);
	}
	rb_bodies_free(&b);
	rb_spill_free(&b);
	free(b.it);
	free(b.buf);
	free(b.named);
	rb_objs_free(&b);
	free(b.dead);
	chk_map_fini(&b.pinned);
	chk_map_fini(&b.seen);
	chk_map_fini(&b.walked);
	chk_release(&b.v);
	return rc;
}
