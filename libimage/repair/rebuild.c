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
 * twice, twice.c, gives each a copy after the rebuild). A new tree is built from them in one transaction
 * (copy-on-write: the old tree stays on disk, untouched, until the
 * commit point, so a power cut leaves the old volume and a rerun starts
 * again); the root directory's stat data is made anew, with the plugin
 * set of the backup copy, when no item holds it. What did not make it
 * (nodes and items dropped) is reported. The object and space passes
 * then finish: entries to lost objects, lost+found, nlink, bitmaps. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "libimage/repair/repair.h"
#include "libimage/obj/write.h"
#include "libimage/tree/nodebuf.h"
#include "libimage/txn/txn.h"
#include "libimage/util/err.h"
#include "format/item.h"
#include "format/node.h"
#include "format/super.h"

struct ritem {
	struct fmt_key key;
	unsigned pid;
	uint8_t *body;
	size_t len;
	uint32_t seq;
	int suspect;			/* out of place in its node */
	int orphan;			/* to a fresh object (lost+found) */
	uint64_t blk;			/* the node it came from, 0 none */
	unsigned idx;			/* its position there */
};

/* Items a node can hold (up to 64 KiB blocks, an item header at least
 * 30 bytes). */
#define NODE_ITEMS_MAX 2200

struct rb {
	struct rep *R;
	struct chk v;			/* item verifier: quiet check state */
	struct r4_check_report vrep;
	struct chk_map seen;		/* nodes looked at */
	struct ritem *it;
	size_t n, cap;
	uint8_t *buf;
	uint64_t nodes_kept, nodes_dropped, nodes_salvaged, items_dropped;
	uint64_t mended;
	uint64_t bytes_moved;		/* body bytes put at another key */
	uint64_t offsets_mended;	/* item body offsets set back */
	uint64_t pids_mended;		/* item plugin ids set back */
	uint64_t bytes_dropped;		/* body bytes of items dropped */
	uint64_t scanned;
	uint64_t freed;			/* old nodes freed by the rebuild */
	/* Stat-data keys the key pass gives an orphan stat data (keys.c):
	 * body items under them are that stat data's, left as they are. */
	struct fmt_key *named;
	size_t nnamed;
};

static int push(struct rb *b, const struct fmt_key *k, unsigned pid,
		const uint8_t *body, size_t len)
{
	struct ritem *p;

	if (b->n == b->cap) {
		size_t nc = b->cap ? b->cap * 2 : 1024;

		p = realloc(b->it, nc * sizeof(*p));
		if (!p)
			return -ENOMEM;
		b->it = p;
		b->cap = nc;
	}
	p = &b->it[b->n];
	p->body = malloc(len ? len : 1);
	if (!p->body)
		return -ENOMEM;
	memcpy(p->body, body, len);
	p->key = *k;
	p->pid = pid;
	p->len = len;
	p->seq = (uint32_t)b->n++;
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
	unsigned n0, n1 = 0, run, run_h = 0, n, last_off = 0;
	int n1_ok = 0;
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
	if (level) {
		/* A level the items fit better than the parent's: a wrong
		 * pointer, not a damaged level (the node is left for its
		 * own parent or the scan). */
		run = plausible_run(b->buf, c->bs, c->pol, pid, level);
		if (nh->level != level && nh->level >= FMT_NODE_LEAF_LEVEL &&
		    nh->level <= FMT_NODE_MAX_LEVEL)
			run_h = plausible_run(b->buf, c->bs, c->pol, pid,
					      nh->level);
		if (run_h >= run && nh->level != level)
			return 0;
	} else {
		unsigned r1 = plausible_run(b->buf, c->bs, c->pol, pid, 1);
		unsigned r2 = plausible_run(b->buf, c->bs, c->pol, pid, 2);

		level = r2 > r1 || (r2 == r1 && nh->level == 2) ? 2 : 1;
		run = level == 2 ? r2 : r1;
	}
	nh->plugin_id = (uint16_t)pid;
	nh->magic = fmt_node_magic(pid);
	nh->level = (uint8_t)level;
	/* The item count. */
	n0 = nh->nr_items;
	if (nh->free_space_start >= hs && nh->free_space_start <= c->bs &&
	    nh->free_space <= c->bs - nh->free_space_start &&
	    (c->bs - nh->free_space_start - nh->free_space) % ihs == 0)
		n1 = (unsigned)((c->bs - nh->free_space_start -
				 nh->free_space) / ihs), n1_ok = 1;
	/* The count and the free space fields agree: the count holds
	 * (an empty node stays empty: headers past it are stale). */
	if (n1_ok && n0 == n1 && (size_t)n0 * ihs <= c->bs - hs)
		n = n0;
	else if (n1 && n1 == run)
		n = n1;
	else if (n0 == run)
		n = n0;
	else if (n0 && n0 < run)
		n = n0;
	else
		n = run;
	if (!n)
		return 0;
	nh->nr_items = (uint16_t)n;
	/* free_space_start: past the last item's body, before the item
	 * headers. */
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
struct kid {
	uint64_t blk;
	struct fmt_key lo, hi;
};

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

/* Item body offsets of the node copy in b->buf that break their order
 * (the first not right after the node header, or one not between its
 * neighbours' while those are in order): a damaged offset, which would
 * lose the item and give its neighbour bytes not its own. The first is
 * set to the header's end; another to the value one flipped bit gives
 * that lies between its neighbours (the first such, highest bit first:
 * a boundary a wrong guess moves is moved back by mend_bounds, the
 * items' sizes telling where it lies). Only the copy changes. */
/* How many tail items of the node the body offsets off[] give the
 * length their keys and sizes want: up to the next item's key offset
 * when that item is the same file's, else up to the file's size. */
static unsigned fit_score(const struct rb *b, const struct fmt_item_header *ih,
			  const unsigned *off, unsigned n, unsigned fss)
{
	const struct chk *c = &b->R->c;
	unsigned score = 0;

	for (unsigned i = 0; i < n; i++) {
		uint64_t at = fmt_key_offset(&ih[i].key), want, len;
		unsigned to = i + 1 < n ? off[i + 1] : fss;
		uint32_t o;

		if (ih[i].plugin_id != FMT_ITEM_TAIL40 || to <= off[i])
			continue;
		len = to - off[i];
		if (i + 1 < n && ih[i + 1].plugin_id == FMT_ITEM_TAIL40 &&
		    ih[i + 1].key.el[0] == ih[i].key.el[0] &&
		    ih[i + 1].key.el[1] == ih[i].key.el[1] &&
		    ih[i + 1].key.el[2] == ih[i].key.el[2]) {
			want = fmt_key_offset(&ih[i + 1].key);
		} else {
			o = chk_obj_find(c, (fmt_key_locality(&ih[i].key) << 4) |
					 FMT_KEY_SD, ih[i].key.el[1],
					 ih[i].key.el[2]);
			if (o == CHK_NONE)
				continue;
			want = c->objs[o].size;
		}
		score += want > at && want - at == len;
	}
	return score;
}

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
	for (unsigned i = 1; i <= n; i++) {
		unsigned at = i < n ? off[i] : fss, keep;
		int w1 = -1, w2 = -1;

		if (at > off[i - 1])
			continue;
		/* Items i-1 and i out of order: i-1 too large, or i too
		 * small (or past the free space: the last too large);
		 * of two ways, the one more items' lengths agree with. */
		if (i >= 2 && off[i - 2] + 1 < at)
			w1 = flip_into(off[i - 1], off[i - 2], at);
		if (i < n)
			w2 = flip_into(off[i], off[i - 1],
				       i + 1 < n ? off[i + 1] : fss);
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
			goto out;	/* not one damaged offset */
	}
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
	const struct chk *c = &b->R->c;
	struct fmt_item_header z;
	uint64_t at = fmt_key_offset(&ih->key), want;
	uint32_t o;

	if (nh->level != FMT_NODE_LEAF_LEVEL ||
	    fmt_node_item_allowed(ih->plugin_id, nh->level) ||
	    fmt_key_type(&ih->key) != FMT_KEY_BODY || !len)
		return 0;
	o = chk_obj_find(c, (fmt_key_locality(&ih->key) << 4) | FMT_KEY_SD,
			 ih->key.el[1], ih->key.el[2]);
	if (o == CHK_NONE || (c->objs[o].mode & 0170000u) != 0100000u ||
	    (c->objs[o].flags & CHK_OBJ_CC))
		return 0;
	if (i + 1 < nh->nr_items &&
	    !fmt_node_ih_decode(b->buf, b->v.bs, b->v.pol, i + 1, &z) &&
	    z.key.el[0] == ih->key.el[0] && z.key.el[1] == ih->key.el[1] &&
	    z.key.el[2] == ih->key.el[2])
		want = fmt_key_offset(&z.key);
	else
		want = c->objs[o].size;
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
			b->items_dropped++;
			continue;
		}
		rc = chk_item(&b->v, blk, i, &ih, b->buf + off, len, &child,
			      &last);
		if (rc < 0)
			return rc;
		if (ih.plugin_id == FMT_ITEM_NODEPTR40) {
			if (kids && child &&
			    b->vrep.problems - b->v.shared == before) {
				struct kid *k = &kids[(*nkids)++];

				k->blk = child;
				k->lo = ih.key;
				k->hi = range ? range->hi : last;
				if (!range)
					fmt_key_max(&k->hi);
				if (*nkids > 1)
					kids[*nkids - 2].hi = ih.key;
			}
			continue;
		}
		if (b->vrep.problems - b->v.shared != before) {
			b->items_dropped++;
			b->bytes_dropped += body_bytes(ih.plugin_id, b->buf + off,
						       len, b->v.bs);
			continue;
		}
		rc = push(b, &ih.key, ih.plugin_id, b->buf + off, len);
		if (rc)
			return rc;
		b->it[b->n - 1].suspect = odd;
		b->it[b->n - 1].blk = blk;
		b->it[b->n - 1].idx = i;
	}
	return 0;
}

/* Depth first from the root; a node that does not verify is dropped
 * with its subtree (whose nodes the scan may still find). */
static int walk(struct rb *b, uint64_t blk, unsigned level,
		const struct kid *range)
{
	struct chk *c = &b->R->c;
	struct fmt_node_header nh;
	struct kid *kids;
	size_t nk = 0;
	int rc;

	if (blk < c->first_usable || blk >= c->blocks ||
	    chk_is_bitmap_blk(c, blk) || chk_map_test(&b->seen, blk))
		return 0;
	rc = load_node(b, blk, level, &nh);
	if (!rc) {
		/* Not marked seen: the scan may still take it (a node of
		 * another level a damaged pointer led to). */
		b->nodes_dropped++;
		return 0;
	}
	if (rc == 1)
		b->nodes_salvaged++;
	else
		b->nodes_kept++;
	rc = chk_map_set(&b->seen, blk);
	if (rc < 0)
		return rc;
	kids = malloc(nh.nr_items * sizeof(*kids) + 1);
	if (!kids)
		return -ENOMEM;
	rc = take_items(b, blk, &nh, level > 1 ? kids : NULL, &nk, range);
	for (size_t i = 0; i < nk && !rc && level > 1; i++)
		rc = walk(b, kids[i].blk, level - 1, &kids[i]);
	free(kids);
	return rc;
}

/* Used blocks nobody reached that are leaves or twigs of this volume
 * (their headers mended as the walk's are). */
static int scan(struct rb *b)
{
	struct chk *c = &b->R->c;
	struct fmt_node_header nh;
	int rc;

	for (uint64_t blk = c->first_usable; blk < c->blocks; blk++) {
		if (chk_is_bitmap_blk(c, blk) || chk_map_test(&b->seen, blk) ||
		    chk_map_test(&b->v.used, blk))
			continue;
		rc = space_test(&c->vol->space, blk, b->R->err);
		if (rc < 0)
			return rc;
		if (!rc)
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

static int item_cmp(const void *x, const void *y)
{
	const struct ritem *a = x, *b = y;
	int r = fmt_key_cmp(&a->key, &b->key);

	return r ? r : a->seq < b->seq ? -1 : a->seq > b->seq;
}

#define DROPPED 0xffffu

/* The root directory's stat data, when no item holds it or the one that
 * does is not a directory's. */
static int root_sd(struct rb *b)
{
	struct chk *c = &b->R->c;
	struct r4_vol *vol = c->vol;
	struct fmt_backup bk;
	struct fmt_stat st;
	struct fmt_key k;
	uint8_t body[512];
	size_t len;
	int rc, root_bad = 0;

	k.el[0] = (FMT_ROOT_LOCALITY << 4) | FMT_KEY_SD;
	k.el[1] = 0;
	k.el[2] = FMT_ROOT_OID;
	k.el[3] = 0;
	for (size_t i = 0; i < b->n; i++) {
		struct ritem *p = &b->it[i];

		if (fmt_key_cmp(&p->key, &k) || p->pid != FMT_ITEM_STAT40)
			continue;
		/* A root that is not a directory (a damaged mode) cannot
		 * be mended from the objects' side: made anew. */
		if (!fmt_stat_decode(p->body, p->len, &st) &&
		    (st.mask & (1u << FMT_SDEXT_LW)) &&
		    (st.mode & 0170000) == 0040000)
			return 0;
		p->pid = DROPPED;
		b->items_dropped++;
		root_bad = 1;
	}
	memset(&st, 0, sizeof(st));
	st.mask = (1u << FMT_SDEXT_LW) | (1u << FMT_SDEXT_UNIX);
	st.mode = 040755;
	st.nlink = 2;
	st.size = 0;
	if (!vol_read_block(vol, fmt_blk_backup0(c->bs), b->buf,
			    "backup block", NULL)) {
		fmt_backup_decode(b->buf, &bk);
		if (bk.has_pset) {
			st.mask |= 1u << FMT_SDEXT_PSET;
			for (unsigned i = FMT_PSET_PERM; i < FMT_PSET_COUNT;
			     i++) {
				st.pset.member[st.pset.count] = (uint16_t)i;
				st.pset.id[st.pset.count++] =
					(uint16_t)bk.pset[i];
			}
		}
	}
	rc = fmt_stat_size(&st, &len);
	if (!rc && len <= sizeof(body))
		rc = fmt_stat_encode(&st, body, len);
	if (rc)
		return rc;
	rc = push(b, &k, FMT_ITEM_STAT40, body, len);
	if (!rc)
		rep_action(b->R, R4_CHK_SD, R4_CHECK_NO_BLOCK, FMT_ROOT_OID,
			   R4_LOSS_NONE, 0, "the root directory's stat data "
			   "was %s: made anew (mode 0755%s)", root_bad ?
			   "not a directory's" : "lost", bk.has_pset ?
			   ", plugin set from the backup copy" : "");
	return rc;
}

/* File offset one past item p's last byte (tails and extents; of a
 * ctail40 item, one past its last disk-cluster byte). */
static uint64_t item_end(const struct ritem *p, uint32_t bs)
{
	uint64_t end = fmt_key_offset(&p->key);
	struct fmt_extent40_unit u;
	int n;

	if (p->pid == FMT_ITEM_TAIL40)
		return end + p->len;
	if (p->pid == FMT_ITEM_CTAIL40)
		return p->len > FMT_CTAIL40_HDR_SIZE ?
		       end + p->len - FMT_CTAIL40_HDR_SIZE : end;
	n = fmt_extent40_units(p->body, p->len);
	for (int i = 0; i < n; i++)
		if (!fmt_extent40_unit(p->body, p->len, (unsigned)i, &u) &&
		    u.width <= (UINT64_MAX - end) / bs)
			end += u.width * bs;
	return end;
}

/* The stat data of body key k loses 'hole' bytes (a lost extent made a
 * hole: the blocks it counted are gone). */
static int sd_bytes_less(struct rb *b, const struct fmt_key *k,
			 uint64_t hole)
{
	uint64_t el0 = (fmt_key_locality(k) << 4) | FMT_KEY_SD;
	uint8_t body[512];
	struct fmt_stat st;
	size_t len;
	int rc;

	for (size_t i = 0; i < b->n; i++) {
		struct ritem *p = &b->it[i];

		if (p->pid != FMT_ITEM_STAT40 || p->key.el[0] != el0 ||
		    p->key.el[1] != k->el[1] || p->key.el[2] != k->el[2])
			continue;
		if (fmt_stat_decode(p->body, p->len, &st))
			return 0;
		st.rdev_or_bytes = st.rdev_or_bytes > hole ?
				   st.rdev_or_bytes - hole : 0;
		rc = fmt_stat_size(&st, &len);
		if (rc || len > sizeof(body) || len != p->len)
			return 0;
		rc = fmt_stat_encode(&st, body, len);
		if (!rc)
			memcpy(p->body, body, len);
		return 0;
	}
	return 0;
}

#define FILL_TAIL 2048

/* Fill the break [at, end) of the body whose item p follows it: a hole
 * extent when both ends are block-aligned and the body is an extent
 * one, zero tails otherwise. Items are pushed (sorted again later). */
static int fill_gap(struct rb *b, const struct ritem *p, uint64_t at,
		    uint64_t end)
{
	uint32_t bs = b->R->c.bs;
	static const uint8_t zeros[FILL_TAIL];
	struct fmt_key k = p->key;
	uint64_t oid = fmt_key_objectid(&p->key);
	int rc = 0;

	if (p->pid == FMT_ITEM_EXTENT40 && at % bs == 0 && end % bs == 0) {
		struct fmt_extent40_unit u = { 0, (end - at) / bs };
		uint8_t unit[16];

		fmt_extent40_unit_encode(&u, unit);
		k.el[3] = at;
		rc = push(b, &k, FMT_ITEM_EXTENT40, unit, sizeof(unit));
		if (!rc)
			rc = sd_bytes_less(b, &p->key, end - at);
	} else {
		for (uint64_t o = at; o < end && !rc; o += FILL_TAIL) {
			k.el[3] = o;
			rc = push(b, &k, FMT_ITEM_TAIL40, zeros,
				  end - o < FILL_TAIL ? end - o : FILL_TAIL);
		}
	}
	if (!rc)
		rep_action(b->R, R4_CHK_FILE_GAP, R4_CHECK_NO_BLOCK, oid,
			   R4_LOSS_ZEROED, end - at, "file %llx: no body item "
			   "held bytes %llu..%llu: filled with zeros%s",
			   (unsigned long long)oid, (unsigned long long)at,
			   (unsigned long long)(end - 1),
			   p->pid == FMT_ITEM_EXTENT40 && at % bs == 0 &&
			   end % bs == 0 ? " (a hole)" : "");
	return rc;
}

#define DROPPED 0xffffu

static int is_body(unsigned pid)
{
	return pid == FMT_ITEM_TAIL40 || pid == FMT_ITEM_EXTENT40 ||
	       pid == FMT_ITEM_CTAIL40;
}

/* Whether sorted items x and y are body items of one object. */
static int same_body(const struct ritem *x, const struct ritem *y)
{
	return is_body(x->pid) && is_body(y->pid) &&
	       x->key.el[0] == y->key.el[0] && x->key.el[1] == y->key.el[1] &&
	       x->key.el[2] == y->key.el[2];
}

/* The cluster size of ctail40 item p, 0 when its shift is not one. */
static uint64_t ctail_cluster(const struct ritem *p)
{
	if (p->pid != FMT_ITEM_CTAIL40 || p->len <= FMT_CTAIL40_HDR_SIZE ||
	    p->body[0] < FMT_CTAIL40_MIN_SHIFT ||
	    p->body[0] > FMT_CTAIL40_MAX_SHIFT)
		return 0;
	return (uint64_t)1 << p->body[0];
}

/* Index of the first sorted item whose key is >= k (b->n if none). */
static size_t lower_bound(const struct rb *b, const struct fmt_key *k)
{
	size_t lo = 0, hi = b->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (fmt_key_cmp(&b->it[mid].key, k) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Index of the item with key k in the sorted items, or SIZE_MAX. */
static size_t find_key(const struct rb *b, const struct fmt_key *k)
{
	size_t i = lower_bound(b, k);

	return i < b->n && !fmt_key_cmp(&b->it[i].key, k) ? i : SIZE_MAX;
}

/* Whether some body item of the object whose body keys start with
 * prefix k (el[0..2]) holds bytes of [at, end), or is of the other
 * kind than a pid item (ctail40 or not). */
static int body_overlaps(const struct rb *b, const struct fmt_key *k,
			 unsigned pid, uint64_t at, uint64_t end)
{
	uint32_t bs = b->R->c.bs;
	struct fmt_key first = *k;

	first.el[3] = 0;
	for (size_t i = lower_bound(b, &first); i < b->n; i++) {
		const struct ritem *q = &b->it[i];

		if (q->key.el[0] != k->el[0] || q->key.el[1] != k->el[1] ||
		    q->key.el[2] != k->el[2])
			break;
		if (q->pid == DROPPED || !is_body(q->pid) || q->suspect)
			continue;
		if (fmt_key_offset(&q->key) < end && item_end(q, bs) > at)
			return 1;
		/* ctail40 items do not mix with tails and extents */
		if ((q->pid == FMT_ITEM_CTAIL40) != (pid == FMT_ITEM_CTAIL40))
			return 1;
	}
	return 0;
}

/* Body items whose key names no stat data (a damaged locality, type,
 * ordering, band or object id byte) are mended to the key of the one
 * object they fit: a regular file that has their object id, or (large
 * keys) their locality and ordering, and misses exactly those bytes
 * within its size (object ids are unique and the ordering comes from
 * the name, so the piece a file misses is the one that lost its key).
 * Without this the body would become a second object with that id.
 * Candidates that fit twice, or more than one candidate, mend nothing.
 * Suspect items (out of place in their node) that are not mended are
 * dropped. Decisions are made on the sorted items first, then applied
 * (the caller sorts again). */
struct sdref {
	uint64_t oid;
	size_t i;
};

static int sdref_cmp(const void *x, const void *y)
{
	const struct sdref *a = x, *c = y;

	return a->oid < c->oid ? -1 : a->oid > c->oid;
}

struct mend {
	size_t i;			/* the body item */
	const char *by;			/* what it shares with the object */
	struct fmt_key key;		/* its new key */
	uint64_t at, end;		/* its bytes */
};

/* The body key item p takes when it is the piece stat data item sd
 * misses (0), or 1 when it does not fit there. */
static int fits(const struct rb *b, const struct ritem *p,
		const struct ritem *sd, const struct mend *m, size_t nm,
		struct fmt_key *body)
{
	uint32_t bs = b->R->c.bs;
	uint64_t at = fmt_key_offset(&p->key), end = item_end(p, bs), lim;
	struct fmt_stat st;

	if (sd->pid != FMT_ITEM_STAT40 || fmt_stat_decode(sd->body, sd->len,
							 &st) ||
	    !S_ISREG(st.mode))
		return 1;
	*body = p->key;
	body->el[0] = (fmt_key_locality(&sd->key) << 4) | FMT_KEY_BODY;
	body->el[1] = sd->key.el[1];
	body->el[2] = sd->key.el[2];
	if (!fmt_key_cmp(body, &p->key))
		return 1;
	lim = st.size;
	if (p->pid == FMT_ITEM_EXTENT40)
		lim = st.size > UINT64_MAX - bs ? UINT64_MAX :
		      (st.size + bs - 1) / bs * bs;
	if (p->pid == FMT_ITEM_CTAIL40) {
		/* Its disk bytes lie in the cluster its offset names, and
		 * that cluster holds bytes below the size. */
		uint64_t cs = ctail_cluster(p);

		if (!cs || at / cs != (end - 1) / cs || at / cs * cs >= st.size)
			return 1;
		lim = end;
	}
	if (end <= at || end > lim || body_overlaps(b, body, p->pid, at, end))
		return 1;
	/* Nor where an item mended before it goes. */
	for (size_t j = 0; j < nm; j++)
		if (m[j].key.el[0] == body->el[0] &&
		    m[j].key.el[1] == body->el[1] &&
		    m[j].key.el[2] == body->el[2] && m[j].at < end &&
		    m[j].end > at)
			return 1;
	return 0;
}

/* Index of the stat data item with key k in the sorted items, or
 * SIZE_MAX. */
static size_t find_sd(const struct rb *b, const struct fmt_key *k)
{
	size_t i = find_key(b, k);

	return i != SIZE_MAX && b->it[i].pid == FMT_ITEM_STAT40 ? i : SIZE_MAX;
}

static int key3_cmp(const void *x, const void *y)
{
	const struct fmt_key *a = x, *c = y;

	return chk_cmp3(a->el[0], a->el[1], a->el[2], c->el[0], c->el[1],
			c->el[2]);
}

/* Whether body item key k lies under a key the key pass gives a stat
 * data. */
static int named_body(const struct rb *b, const struct fmt_key *k)
{
	struct fmt_key sd = *k;

	sd.el[0] = (k->el[0] & ~0xfULL) | FMT_KEY_SD;
	return b->nnamed && bsearch(&sd, b->named, b->nnamed,
				    sizeof(*b->named), key3_cmp);
}

static int mend_keys(struct rb *b)
{
	uint32_t bs = b->R->c.bs;
	struct fmt_key sdk, body, got;
	char was[FMT_KEY_STR_MAX], now[FMT_KEY_STR_MAX];
	struct sdref *sds = malloc((b->n ? b->n : 1) * sizeof(*sds));
	struct mend *m = malloc((b->n ? b->n : 1) * sizeof(*m));
	size_t nsd = 0, nm = 0;

	if (!sds || !m) {
		free(sds);
		free(m);
		return -ENOMEM;
	}
	for (size_t j = 0; j < b->n; j++)
		if (b->it[j].pid == FMT_ITEM_STAT40 && !b->it[j].key.el[3]) {
			sds[nsd].oid = fmt_key_objectid(&b->it[j].key);
			sds[nsd++].i = j;
		}
	if (nsd)
		qsort(sds, nsd, sizeof(*sds), sdref_cmp);
	for (size_t i = 0; i < b->n; i++) {
		struct ritem *p = &b->it[i];
		uint64_t oid = fmt_key_objectid(&p->key);
		size_t lo = 0, hi = nsd, found = 0, sd = SIZE_MAX;
		const char *by = "";

		if (!is_body(p->pid) || named_body(b, &p->key))
			continue;
		sdk = p->key;
		sdk.el[0] = (fmt_key_locality(&p->key) << 4) | FMT_KEY_SD;
		sdk.el[3] = 0;
		if (fmt_key_type(&p->key) == FMT_KEY_BODY &&
		    find_sd(b, &sdk) != SIZE_MAX && !p->suspect)
			continue;
		/* The objects with its object id. */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (sds[mid].oid < oid)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (; lo < nsd && sds[lo].oid == oid && found < 2; lo++) {
			if (fits(b, p, &b->it[sds[lo].i], m, nm, &got))
				continue;
			found++;
			body = got;
			sd = sds[lo].i;
			by = "object id";
		}
		/* The objects with its locality and ordering (large keys:
		 * short ones hold no ordering). */
		if (p->key.el[1]) {
			sdk.el[2] = 0;
			for (size_t j = lower_bound(b, &sdk);
			     j < b->n && found < 2 &&
			     b->it[j].key.el[0] == sdk.el[0] &&
			     b->it[j].key.el[1] == sdk.el[1]; j++) {
				if (j == sd || b->it[j].key.el[3] ||
				    fits(b, p, &b->it[j], m, nm, &got))
					continue;
				found++;
				body = got;
				sd = j;
				by = "locality and ordering";
			}
		}
		if (found != 1) {
			if (p->suspect) {
				b->bytes_dropped += item_end(p, bs) -
						    fmt_key_offset(&p->key);
				p->pid = DROPPED;
				b->items_dropped++;
			}
			continue;
		}
		m[nm].i = i;
		m[nm].by = by;
		m[nm].key = body;
		m[nm].at = fmt_key_offset(&p->key);
		m[nm++].end = item_end(p, bs);
	}
	for (size_t j = 0; j < nm; j++) {
		struct ritem *p = &b->it[m[j].i];
		uint64_t oid = fmt_key_objectid(&p->key);

		fmt_key_str(&p->key, was, sizeof(was));
		fmt_key_str(&m[j].key, now, sizeof(now));
		p->key = m[j].key;
		p->suspect = 0;
		b->mended++;
		b->bytes_moved += m[j].end - m[j].at;
		rep_action(b->R, R4_CHK_BODY, R4_CHECK_NO_BLOCK, oid,
			   R4_LOSS_NONE, 0, "body item [%s] (bytes %llu..%llu) "
			   "names no stat data; the only object %llx (by its "
			   "%s) has no body there: its key mended to [%s]",
			   was, (unsigned long long)m[j].at,
			   (unsigned long long)(m[j].end - 1),
			   (unsigned long long)fmt_key_objectid(&m[j].key),
			   m[j].by, now);
	}
	free(sds);
	free(m);
	return 0;
}

/* The size in the stat data of body item p's object (sorted items
 * [0, n)); 0 when there is none or it does not decode. */
static uint64_t sd_size(const struct rb *b, size_t n, const struct ritem *p)
{
	struct fmt_key k = p->key;
	struct fmt_stat st;
	size_t lo = 0, hi = n;

	k.el[0] = (fmt_key_locality(&p->key) << 4) | FMT_KEY_SD;
	k.el[3] = 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int r = fmt_key_cmp(&b->it[mid].key, &k);

		if (!r) {
			if (b->it[mid].pid != FMT_ITEM_STAT40 ||
			    fmt_stat_decode(b->it[mid].body, b->it[mid].len,
					    &st))
				return 0;
			return st.size;
		}
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* The next item after sorted position i that is not dropped, or b->n. */
static size_t next_kept(const struct rb *b, size_t i)
{
	for (i++; i < b->n && b->it[i].pid == DROPPED; i++)
		;
	return i;
}

/* ctail40 items whose key offset breaks their cluster's layout: the
 * disk bytes of a cluster start at its first byte and follow on
 * without a break (doc/compress.md), so an item that starts off that
 * line (a damaged offset byte) while the item after it starts exactly
 * where it ends once put back, or it is the cluster's last, is put
 * back (its bytes kept, the cluster readable again). *moved = 1 when a
 * key changed (the caller sorts again). */
static int mend_ctails(struct rb *b, int *moved)
{
	uint32_t bs = b->R->c.bs;
	size_t prev = SIZE_MAX;

	for (size_t i = 0; i < b->n; i++) {
		struct ritem *p = &b->it[i];
		uint64_t cs = ctail_cluster(p), at, want, len;
		size_t j;
		char was[FMT_KEY_STR_MAX];

		if (p->pid == DROPPED)
			continue;
		if (!cs) {
			prev = SIZE_MAX;
			continue;
		}
		at = fmt_key_offset(&p->key);
		len = item_end(p, bs) - at;
		want = at / cs * cs;	/* the cluster's first byte */
		if (prev != SIZE_MAX && same_body(&b->it[prev], p) &&
		    fmt_key_offset(&b->it[prev].key) / cs == at / cs)
			want = item_end(&b->it[prev], bs);
		prev = i;
		if (want == at || want / cs != at / cs ||
		    want / cs != (want + len - 1) / cs)
			continue;
		j = next_kept(b, i);
		if (j < b->n && same_body(p, &b->it[j]) &&
		    fmt_key_offset(&b->it[j].key) / cs == at / cs &&
		    fmt_key_offset(&b->it[j].key) != want + len)
			continue;	/* the next one does not follow */
		fmt_key_str(&p->key, was, sizeof(was));
		p->key.el[3] = want;
		p->suspect = 0;
		*moved = 1;
		b->mended++;
		b->bytes_moved += len;
		rep_action(b->R, R4_CHK_CLUSTER, p->blk, fmt_key_objectid(
			   &p->key), R4_LOSS_NONE, 0, "ctail40 item [%s] "
			   "(%llu bytes of cluster %llu) starts at offset %llu, "
			   "where its cluster's bytes go on at %llu: its key "
			   "offset mended (no byte lost)", was,
			   (unsigned long long)len,
			   (unsigned long long)(at / cs),
			   (unsigned long long)at, (unsigned long long)want);
	}
	return 0;
}

/* Tail and extent items that start past their file's size (rounded up
 * to a block) after a break in its body: a damaged key offset, since
 * bytes past the size are none of the file's. The item is put where
 * the body breaks off when it fits there below the size and none of
 * the file's items follows it; else it is given to an object of its
 * own (the object pass links it into /lost+found, its bytes kept).
 * Never dropped. *moved = 1 when a key changed (the caller sorts
 * again). */
static int place_far(struct rb *b, int *moved)
{
	uint32_t bs = b->R->c.bs;
	const struct ritem *prev = NULL;
	uint64_t end = 0;

	for (size_t i = 0; i < b->n; i++) {
		struct ritem *p = &b->it[i];
		uint64_t at = fmt_key_offset(&p->key), size, lim, len;
		char was[FMT_KEY_STR_MAX];
		size_t j;

		if (p->pid == DROPPED)
			continue;
		if (p->pid != FMT_ITEM_TAIL40 && p->pid != FMT_ITEM_EXTENT40) {
			prev = NULL;
			continue;
		}
		if (!prev || !same_body(prev, p))
			end = 0;
		len = item_end(p, bs) - at;
		size = sd_size(b, b->n, p);
		if (size > UINT64_MAX - bs)
			size = UINT64_MAX - bs;
		lim = size + bs - 1 - (size + bs - 1) % bs;
		if (at <= end || at <= lim) {
			prev = p;
			if (item_end(p, bs) > end)
				end = item_end(p, bs);
			continue;
		}
		fmt_key_str(&p->key, was, sizeof(was));
		j = next_kept(b, i);
		if ((p->pid != FMT_ITEM_EXTENT40 || end % bs == 0) &&
		    end <= lim && len <= lim - end &&
		    (j == b->n || !same_body(p, &b->it[j]))) {
			p->key.el[3] = end;
			p->suspect = 0;
			*moved = 1;
			b->mended++;
			b->bytes_moved += len;
			rep_action(b->R, R4_CHK_FILE_GAP, R4_CHECK_NO_BLOCK,
				   fmt_key_objectid(&p->key), R4_LOSS_NONE, 0,
				   "body item [%s] (%llu bytes) starts past the "
				   "size %llu of its file, whose body breaks off "
				   "at %llu: moved there (a damaged key offset; "
				   "%llu bytes moved, none lost)", was,
				   (unsigned long long)len,
				   (unsigned long long)size,
				   (unsigned long long)end,
				   (unsigned long long)len);
			prev = p;
			end += len;
			continue;
		}
		p->orphan = 1;
		*moved = 1;
		b->bytes_moved += len;
		/* rekey_orphans names its new object */
	}
	return 0;
}

static int u64_cmp(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, c = *(const uint64_t *)y;

	return a < c ? -1 : a > c;
}

/* Body items (sorted) whose key still names no stat data while their
 * object id is another object's, or carries band bits (a stat data made
 * for them would be a second one with that id, or not theirs): they are
 * given a fresh object id, so that the object pass makes their stat
 * data and links them into /lost+found (their bytes kept). *moved = 1
 * when a key changed (the caller sorts again). */
static int rekey_orphans(struct rb *b, int *moved)
{
	uint64_t *oids = malloc((b->n ? b->n : 1) * sizeof(*oids));
	uint64_t next = FMT_FIRST_FREE_OID, cur = 0;
	struct fmt_key last = { { 0, 0, 0, 0 } }, sdk;
	size_t nsd = 0;
	int have = 0;

	if (!oids)
		return -ENOMEM;
	for (size_t i = 0; i < b->n; i++) {
		const struct ritem *p = &b->it[i];
		uint64_t o = fmt_key_objectid(&p->key);

		if (p->pid == DROPPED)
			continue;
		if (p->pid == FMT_ITEM_STAT40)
			oids[nsd++] = o;
		if (o < CHK_OID_MASK && o + 1 > next &&
		    (p->pid == FMT_ITEM_STAT40 || !(p->key.el[2] >> 60)))
			next = o + 1;
	}
	if (b->R->c.next_oid > next && b->R->c.next_oid < CHK_OID_MASK)
		next = b->R->c.next_oid;
	if (nsd)
		qsort(oids, nsd, sizeof(*oids), u64_cmp);
	for (size_t i = 0; i < b->n; i++) {
		struct ritem *p = &b->it[i];
		uint64_t o = fmt_key_objectid(&p->key);
		char was[FMT_KEY_STR_MAX];

		if (!is_body(p->pid) || (named_body(b, &p->key) && !p->orphan))
			continue;
		if (p->orphan) {
			uint64_t len = item_end(p, b->R->c.bs) -
				       fmt_key_offset(&p->key);

			if (next >= CHK_OID_MASK)
				break;
			have = 0;
			cur = next++;
			fmt_key_str(&p->key, was, sizeof(was));
			p->key.el[2] = cur;
			p->key.el[3] = 0;
			p->orphan = 0;
			*moved = 1;
			rep_action(b->R, R4_CHK_FILE_GAP, R4_CHECK_NO_BLOCK, o,
				   R4_LOSS_NONE, 0, "body item [%s] (%llu "
				   "bytes) starts past its file's size and does "
				   "not fit where its body breaks off: given the "
				   "new object id %llx (a stat data is made for "
				   "it, its bytes kept)", was,
				   (unsigned long long)len,
				   (unsigned long long)cur);
			continue;
		}
		if (have && p->key.el[0] == last.el[0] &&
		    p->key.el[1] == last.el[1] && p->key.el[2] == last.el[2]) {
			p->key.el[2] = cur;
			continue;
		}
		have = 0;
		sdk = p->key;
		sdk.el[0] = (fmt_key_locality(&p->key) << 4) | FMT_KEY_SD;
		sdk.el[3] = 0;
		if (find_sd(b, &sdk) != SIZE_MAX ||
		    (!(p->key.el[2] >> 60) &&
		     (!nsd || !bsearch(&o, oids, nsd, sizeof(*oids), u64_cmp))))
			continue;
		if (next >= CHK_OID_MASK)
			break;
		last = p->key;
		have = 1;
		cur = next++;
		fmt_key_str(&p->key, was, sizeof(was));
		p->key.el[2] = cur;
		*moved = 1;
		rep_action(b->R, R4_CHK_BODY, R4_CHECK_NO_BLOCK, o,
			   R4_LOSS_NONE, 0, "body items from [%s] name no stat "
			   "data, and their object id is another object's or "
			   "not one: given the new object id %llx (a stat data "
			   "is made for them)", was, (unsigned long long)cur);
	}
	free(oids);
	return 0;
}


/* Where the tail item at sorted position i should end: the next body
 * item of its object starts there, or (the last one) its stat data's
 * size; 0 when neither tells. */
static uint64_t want_end(const struct rb *b, size_t i)
{
	const struct ritem *p = &b->it[i];
	struct fmt_key k = p->key;
	struct fmt_stat st;
	size_t j;

	for (j = i + 1; j < b->n && b->it[j].pid == DROPPED; j++)
		;
	if (j < b->n && same_body(p, &b->it[j]))
		return fmt_key_offset(&b->it[j].key);
	k.el[0] = (fmt_key_locality(&p->key) << 4) | FMT_KEY_SD;
	k.el[3] = 0;
	j = find_key(b, &k);
	if (j == SIZE_MAX || b->it[j].pid != FMT_ITEM_STAT40 ||
	    fmt_stat_decode(b->it[j].body, b->it[j].len, &st))
		return 0;
	return st.size;
}

struct nodepos {
	uint64_t blk;
	unsigned idx;
	size_t i;
};

static int nodepos_cmp(const void *x, const void *y)
{
	const struct nodepos *a = x, *c = y;

	if (a->blk != c->blk)
		return a->blk < c->blk ? -1 : 1;
	return a->idx < c->idx ? -1 : a->idx > c->idx;
}

/* The sorted position of the tail item that was item idx of node blk,
 * or SIZE_MAX. */
static size_t node_item(const struct nodepos *np, size_t n, uint64_t blk,
			unsigned idx)
{
	struct nodepos k = { blk, idx, 0 };
	const struct nodepos *f = bsearch(&k, np, n, sizeof(*np),
					  nodepos_cmp);

	return f ? f->i : SIZE_MAX;
}

/* Move the last 'e' bytes of item from into the front of item to
 * (front = 1) or its first 'e' bytes onto the end of to (front = 0). */
static int shift_bytes(struct ritem *from, struct ritem *to, size_t e,
		       int front)
{
	uint8_t *nb = malloc(to->len + e);

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
	free(to->body);
	to->body = nb;
	to->len += e;
	from->len -= e;
	return 0;
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
	struct nodepos *np = malloc((b->n ? b->n : 1) * sizeof(*np));
	size_t nn = 0;
	int rc = 0;

	if (!np)
		return -ENOMEM;
	for (size_t i = 0; i < b->n; i++)
		if (b->it[i].pid == FMT_ITEM_TAIL40 && b->it[i].blk) {
			np[nn].blk = b->it[i].blk;
			np[nn].idx = b->it[i].idx;
			np[nn++].i = i;
		}
	if (nn)
		qsort(np, nn, sizeof(*np), nodepos_cmp);
	for (size_t i = 0; i < b->n && !rc; i++) {
		struct ritem *p = &b->it[i], *q;
		uint64_t at = fmt_key_offset(&p->key), end, want, e;
		size_t j, nb = SIZE_MAX;
		int front = 0;

		if (p->pid != FMT_ITEM_TAIL40)
			continue;
		end = item_end(p, bs);
		want = want_end(b, i);
		if (want <= at || end <= want)
			continue;
		e = end - want;
		/* The neighbour that misses exactly e bytes. */
		for (int side = 0; side < 2 && nb == SIZE_MAX && p->blk; side++) {
			if (side == 0 && !p->idx)
				continue;
			j = node_item(np, nn, p->blk, side ? p->idx + 1 :
				      p->idx - 1);
			if (j == SIZE_MAX)
				continue;
			q = &b->it[j];
			if (q->pid == FMT_ITEM_TAIL40 &&
			    want_end(b, j) > item_end(q, bs) &&
			    want_end(b, j) - item_end(q, bs) == e) {
				nb = j;
				front = side;
			}
		}
		if (nb != SIZE_MAX) {
			q = &b->it[nb];
			rc = shift_bytes(p, q, (size_t)e, front);
			if (!rc)
				b->bytes_moved += e;
			if (!rc)
				rep_action(b->R, R4_CHK_DKEY, p->blk,
					   fmt_key_objectid(&p->key),
					   R4_LOSS_NONE, 0, "block %llu items "
					   "%u and %u: %llu bytes at the "
					   "boundary of their bodies belong to "
					   "the %s item (a damaged item offset): "
					   "moved there",
					   (unsigned long long)p->blk,
					   front ? p->idx : q->idx,
					   front ? q->idx : p->idx,
					   (unsigned long long)e, front ?
					   "second" : "first");
			continue;
		}
		/* Bytes the next item holds too: cut here. */
		for (j = i + 1; j < b->n && b->it[j].pid == DROPPED; j++)
			;
		if (j == b->n || !same_body(p, &b->it[j]))
			continue;	/* past the size: the size follows */
		rep_action(b->R, R4_CHK_DKEY, p->blk, fmt_key_objectid(&p->key),
			   R4_LOSS_NONE, 0, "file %llx: bytes %llu..%llu held "
			   "by two items: the later item's kept",
			   (unsigned long long)fmt_key_objectid(&p->key),
			   (unsigned long long)want,
			   (unsigned long long)(end - 1));
		p->len -= (size_t)e;
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
			uint64_t size = sd_size(b, n, p);

			if (size > UINT64_MAX - bs ||
			    at > size + bs - 1 - (size + bs - 1) % bs) {
				b->bytes_dropped += item_end(p, bs) - at;
				b->it[i].pid = DROPPED;
				b->items_dropped++;
				continue;
			}
			rc = fill_gap(b, p, end, at);
			p = &b->it[i];	/* push may have moved the array */
		}
		prev = p;
		if (item_end(p, b->R->c.bs) > end)
			end = item_end(p, b->R->c.bs);
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
 * scan) that the bitmap marks used and no kept extent claims: the new
 * tree's transaction frees them, so that a later rebuild's scan cannot
 * take their stale items back. Marked used before the transaction, they
 * are none of the blocks it allocates. */
static int old_nodes(struct rb *b, uint64_t **out, size_t *nout)
{
	struct chk *c = &b->R->c;
	struct chk_map ext;
	uint64_t *v = NULL;
	size_t n = 0, cap = 0;
	int rc = chk_map_init(&ext, c->blocks, c->used.chunk_bits);

	for (size_t i = 0; i < b->n && !rc; i++) {
		const struct ritem *p = &b->it[i];
		struct fmt_extent40_unit u;
		int nu;

		if (p->pid != FMT_ITEM_EXTENT40)
			continue;
		nu = fmt_extent40_units(p->body, p->len);
		for (int k = 0; k < nu && !rc; k++) {
			if (fmt_extent40_unit(p->body, p->len, (unsigned)k, &u) ||
			    fmt_extent40_kind(&u) != FMT_EXTENT_ALLOCATED)
				continue;
			for (uint64_t e = u.start; e < c->blocks &&
			     e - u.start < u.width && !rc; e++)
				rc = chk_map_set(&ext, e) < 0 ? -ENOMEM : 0;
		}
	}
	for (uint64_t blk = c->first_usable; blk < c->blocks && !rc; blk++) {
		if (!chk_map_test(&b->seen, blk) || chk_map_test(&ext, blk) ||
		    chk_is_bitmap_blk(c, blk))
			continue;
		rc = space_test(&c->vol->space, blk, b->R->err);
		if (rc <= 0)
			continue;
		rc = 0;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 256;
			uint64_t *nv = realloc(v, nc * sizeof(*v));

			if (!nv) {
				rc = -ENOMEM;
				break;
			}
			v = nv;
			cap = nc;
		}
		v[n++] = blk;
	}
	chk_map_fini(&ext);
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	*nout = n;
	return 0;
}

static int build(struct rb *b, struct r4_error *err)
{
	struct r4_txn *x;
	size_t first = SIZE_MAX, nold = 0;
	uint64_t *old = NULL;
	int rc;

	for (size_t i = 0; i < b->n && first == SIZE_MAX; i++)
		if (b->it[i].pid != FMT_ITEM_EXTENT40)
			first = i;
	if (first == SIZE_MAX)
		return r4i_fail(err, R4_ECORRUPT, "no leaf item survived");
	rc = old_nodes(b, &old, &nold);
	if (rc)
		return rc;
	rc = r4_txn_begin(b->R->vol, &x, err);
	if (rc) {
		free(old);
		return rc;
	}
	rc = first_tree(b, x, &b->it[first], err);
	for (size_t i = 0; i < b->n && !rc; i++) {
		const struct ritem *p = &b->it[i];

		if (i == first)
			continue;
		rc = tree_insert(&x->mod, p->pid == FMT_ITEM_EXTENT40 ? 2 : 1,
				 &p->key, p->pid, p->body, p->len, err);
		if (rc == R4_EEXIST) {
			/* Two items the tree takes for one key (the
			 * sorted items have none): the first stays. */
			b->items_dropped++;
			rc = 0;
		}
	}
	for (size_t i = 0; i < nold && !rc; i++)
		rc = txn_free(x->t, old[i], 1, err);
	free(old);
	if (rc) {
		r4_txn_abort(x);
		return rc;
	}
	rc = r4_txn_commit(x, err);
	if (!rc) {
		b->R->r->transactions++;
		b->freed = nold;
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

int rep_rebuild_tree(struct rep *R, int *changed)
{
	struct rb b = { .R = R };
	struct chk *c = &R->c;
	size_t k = 0;
	uint64_t dup = 0;
	int rc, moved = 0;

	b.v.vol = R->vol;
	b.v.rep = &b.vrep;
	b.v.err = R->err;
	b.buf = malloc(c->bs);
	rc = b.buf ? chk_setup(&b.v) : -ENOMEM;
	if (!rc)
		rc = rep_named_keys(R, &b.named, &b.nnamed);
	if (!rc)
		rc = chk_map_init(&b.seen, c->blocks, c->used.chunk_bits);
	if (!rc)
		rc = walk(&b, R->vol->sb.root_block, R->vol->sb.tree_height,
			  NULL);
	if (!rc)
		rc = scan(&b);
	if (!rc && b.n)
		qsort(b.it, b.n, sizeof(*b.it), item_cmp);
	/* Second copies of a key go (on failure every item is kept, so
	 * that all of them are freed below). */
	for (size_t i = 0; i < b.n && !rc; i++) {
		if (k && !fmt_key_cmp(&b.it[k - 1].key, &b.it[i].key)) {
			free(b.it[i].body);
			dup++;
			continue;
		}
		b.it[k++] = b.it[i];
	}
	if (!rc)
		b.n = k;
	if (!rc)
		rc = root_sd(&b);
	if (!rc && b.n)
		qsort(b.it, b.n, sizeof(*b.it), item_cmp);
	if (!rc)
		rc = mend_keys(&b);
	if (!rc && b.n)
		qsort(b.it, b.n, sizeof(*b.it), item_cmp);
	/* A mended key may meet another item's: the first found stays. */
	for (size_t i = 1, last = 0; i < b.n && !rc; i++) {
		if (b.it[i].pid == DROPPED)
			continue;
		if (b.it[last].pid != DROPPED &&
		    !fmt_key_cmp(&b.it[last].key, &b.it[i].key)) {
			b.it[i].pid = DROPPED;
			dup++;
			continue;
		}
		last = i;
	}
	if (!rc)
		rc = mend_ctails(&b, &moved);
	if (!rc && moved)
		qsort(b.it, b.n, sizeof(*b.it), item_cmp);
	if (!rc)
		rc = place_far(&b, &moved);
	if (!rc)
		rc = rekey_orphans(&b, &moved);
	if (!rc && moved)
		qsort(b.it, b.n, sizeof(*b.it), item_cmp);
	if (!rc)
		rc = mend_bounds(&b);
	if (!rc)
		rc = fill_gaps(&b);
	for (size_t i = 0, j = 0; i < b.n && !rc; i++) {
		if (b.it[i].pid == DROPPED)
			free(b.it[i].body);
		else
			b.it[j++] = b.it[i];
		if (i + 1 == b.n)
			b.n = j;
	}
	if (!rc && b.n)
		qsort(b.it, b.n, sizeof(*b.it), item_cmp);
	if (!rc)
		rc = build(&b, R->err);
	if (rc == -ENOMEM)
		rc = r4i_fail(R->err, rc, "out of memory for the tree rebuild");
	if (!rc) {
		*changed = 1;
		R->r->items_dropped += b.items_dropped + dup;
		R->r->bytes_dropped += b.bytes_dropped;
		R->r->bytes_moved += b.bytes_moved;
		R->r->nodes_dropped += b.nodes_dropped;
		rep_action(R, R4_CHK_NODE, R->vol->sb.root_block, 0,
			   b.items_dropped + dup ? R4_LOSS_ITEMS : R4_LOSS_NONE,
			   b.items_dropped + dup, "storage tree rebuilt "
			   "(new root %llu) from %zu items of %llu nodes "
			   "(%llu found by a scan of unreachable used blocks, "
			   "%llu damaged ones taken item by item); %llu nodes "
			   "and %llu items dropped (%llu of them second copies "
			   "of a key); %llu item body offsets and %llu keys "
			   "mended, %llu item plugin ids set back; the old "
			   "nodes taken freed (%llu)",
			   (unsigned long long)R->vol->sb.root_block, b.n,
			   (unsigned long long)(b.nodes_kept + b.scanned +
						b.nodes_salvaged),
			   (unsigned long long)b.scanned,
			   (unsigned long long)b.nodes_salvaged,
			   (unsigned long long)b.nodes_dropped,
			   (unsigned long long)(b.items_dropped + dup),
			   (unsigned long long)dup,
			   (unsigned long long)b.offsets_mended,
			   (unsigned long long)b.mended,
			   (unsigned long long)b.pids_mended,
			   (unsigned long long)b.freed);
	}
	for (size_t i = 0; i < b.n; i++)
		free(b.it[i].body);
	free(b.it);
	free(b.buf);
	free(b.named);
	chk_map_fini(&b.seen);
	chk_release(&b.v);
	return rc;
}
