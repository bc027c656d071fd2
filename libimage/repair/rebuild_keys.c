/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the tree rebuild, mending keys (rebuild.c says what the
 * rebuild does): stat data and bodies whose keys a damaged element
 * moved put back, ctail40 items set back on their cluster's line, bodies that fit
 * nowhere given a fresh object for /lost+found. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "libimage/repair/rebuild.h"
#include "libimage/obj/write.h"
#include "libimage/tree/nodebuf.h"
#include "libimage/txn/txn.h"
#include "libimage/util/err.h"
#include "format/item.h"
#include "format/node.h"
#include "format/super.h"

int rb_item_cmp(const void *x, const void *y)
{
	const struct ritem *a = x, *b = y;
	int r = fmt_key_cmp(&a->key, &b->key);

	return r ? r : a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* File offset one past item p's last byte (tails and extents; of a
 * ctail40 item, one past its last disk-cluster byte). */
uint64_t rb_item_end(const struct ritem *p, uint32_t bs)
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
int rb_fill_gap(struct rb *b, const struct ritem *p, uint64_t at,
		uint64_t end)
{
	uint32_t bs = b->R->c.bs;
	static const uint8_t zeros[FILL_TAIL];
	/* p points into b->it, which rb_push may move: what is read of it
	 * after a push is copied first */
	const struct fmt_key key = p->key;
	const unsigned pid = p->pid;
	struct fmt_key k = key;
	uint64_t oid = fmt_key_objectid(&key);
	int rc = 0;

	if (pid == FMT_ITEM_EXTENT40 && at % bs == 0 && end % bs == 0) {
		struct fmt_extent40_unit u = { 0, (end - at) / bs };
		uint8_t unit[16];

		fmt_extent40_unit_encode(&u, unit);
		k.el[3] = at;
		rc = rb_push(b, &k, FMT_ITEM_EXTENT40, unit, sizeof(unit));
		if (!rc)
			rc = sd_bytes_less(b, &key, end - at);
	} else {
		for (uint64_t o = at; o < end && !rc; o += FILL_TAIL) {
			k.el[3] = o;
			rc = rb_push(b, &k, FMT_ITEM_TAIL40, zeros,
				  end - o < FILL_TAIL ? end - o : FILL_TAIL);
		}
	}
	if (!rc)
		rep_action(b->R, R4_CHK_FILE_GAP, R4_CHECK_NO_BLOCK, oid,
			   R4_LOSS_ZEROED, end - at, "file %llx: no body item "
			   "held bytes %llu..%llu: filled with zeros%s",
			   (unsigned long long)oid, (unsigned long long)at,
			   (unsigned long long)(end - 1),
			   pid == FMT_ITEM_EXTENT40 && at % bs == 0 &&
			   end % bs == 0 ? " (a hole)" : "");
	return rc;
}

static int is_body(unsigned pid)
{
	return pid == FMT_ITEM_TAIL40 || pid == FMT_ITEM_EXTENT40 ||
	       pid == FMT_ITEM_CTAIL40;
}

/* Whether sorted items x and y are body items of one object. */
int rb_same_body(const struct ritem *x, const struct ritem *y)
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
size_t rb_find_key(const struct rb *b, const struct fmt_key *k)
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
		if (fmt_key_offset(&q->key) < end && rb_item_end(q, bs) > at)
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
	uint64_t at = fmt_key_offset(&p->key), end = rb_item_end(p, bs), lim;
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
	size_t i = rb_find_key(b, k);

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

/* The stat data items (whole keys) of the sorted items, sorted by
 * object id; NULL without memory. */
static struct sdref *stat_refs(const struct rb *b, size_t *nsd)
{
	struct sdref *sds = malloc((b->n ? b->n : 1) * sizeof(*sds));

	*nsd = 0;
	if (!sds)
		return NULL;
	for (size_t j = 0; j < b->n; j++)
		if (b->it[j].pid == FMT_ITEM_STAT40 && !b->it[j].key.el[3]) {
			sds[*nsd].oid = fmt_key_objectid(&b->it[j].key);
			sds[(*nsd)++].i = j;
		}
	if (*nsd)
		qsort(sds, *nsd, sizeof(*sds), sdref_cmp);
	return sds;
}

/* The objects body item i may be the missing piece of: those with its
 * object id, then (large keys: short ones hold no ordering) those with
 * its locality and ordering. The count found (stopping at 2), the last
 * one's key and what it shares in *out. */
static unsigned key_candidates(const struct rb *b, size_t i,
			       const struct sdref *sds, size_t nsd,
			       const struct mend *m, size_t nm,
			       struct mend *out)
{
	const struct ritem *p = &b->it[i];
	uint64_t oid = fmt_key_objectid(&p->key);
	size_t lo = 0, hi = nsd, sd = SIZE_MAX;
	struct fmt_key sdk = p->key, got;
	unsigned found = 0;

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
		out->key = got;
		sd = sds[lo].i;
		out->by = "object id";
	}
	if (!p->key.el[1])
		return found;
	sdk.el[0] = (fmt_key_locality(&p->key) << 4) | FMT_KEY_SD;
	sdk.el[2] = 0;
	sdk.el[3] = 0;
	for (size_t j = lower_bound(b, &sdk); j < b->n && found < 2 &&
	     b->it[j].key.el[0] == sdk.el[0] &&
	     b->it[j].key.el[1] == sdk.el[1]; j++) {
		if (j == sd || b->it[j].key.el[3] ||
		    fits(b, p, &b->it[j], m, nm, &got))
			continue;
		found++;
		out->key = got;
		sd = j;
		out->by = "locality and ordering";
	}
	return found;
}

/* Whether body item p needs a key: its key names no stat data (one the
 * key pass gives aside), or it is suspect. */
static int needs_key(const struct rb *b, const struct ritem *p)
{
	struct fmt_key sdk = p->key;

	if (!is_body(p->pid) || named_body(b, &p->key))
		return 0;
	sdk.el[0] = (fmt_key_locality(&p->key) << 4) | FMT_KEY_SD;
	sdk.el[3] = 0;
	return fmt_key_type(&p->key) != FMT_KEY_BODY ||
	       find_sd(b, &sdk) == SIZE_MAX || p->suspect;
}

/* The keys decided applied and reported. */
static void apply_mends(struct rb *b, const struct mend *m, size_t nm)
{
	char was[FMT_KEY_STR_MAX], now[FMT_KEY_STR_MAX];

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
}

int rb_mend_keys(struct rb *b)
{
	uint32_t bs = b->R->c.bs;
	size_t nsd, nm = 0;
	struct sdref *sds = stat_refs(b, &nsd);
	struct mend *m = malloc((b->n ? b->n : 1) * sizeof(*m));

	if (!sds || !m) {
		free(sds);
		free(m);
		return -ENOMEM;
	}
	for (size_t i = 0; i < b->n; i++) {
		struct ritem *p = &b->it[i];

		if (!needs_key(b, p))
			continue;
		if (key_candidates(b, i, sds, nsd, m, nm, &m[nm]) != 1) {
			if (p->suspect) {
				b->bytes_dropped += rb_item_end(p, bs) -
						    fmt_key_offset(&p->key);
				p->pid = DROPPED;
				b->items_dropped++;
			}
			continue;
		}
		m[nm].i = i;
		m[nm].at = fmt_key_offset(&p->key);
		m[nm++].end = rb_item_end(p, bs);
	}
	apply_mends(b, m, nm);
	free(sds);
	free(m);
	return 0;
}

/* The size in the stat data of body item p's object (sorted items
 * [0, n)); 0 when there is none or it does not decode. */
uint64_t rb_sd_size(const struct rb *b, size_t n, const struct ritem *p)
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
int rb_mend_ctails(struct rb *b, int *moved)
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
		len = rb_item_end(p, bs) - at;
		want = at / cs * cs;	/* the cluster's first byte */
		if (prev != SIZE_MAX && rb_same_body(&b->it[prev], p) &&
		    fmt_key_offset(&b->it[prev].key) / cs == at / cs)
			want = rb_item_end(&b->it[prev], bs);
		prev = i;
		if (want == at || want / cs != at / cs ||
		    want / cs != (want + len - 1) / cs)
			continue;
		j = next_kept(b, i);
		if (j < b->n && rb_same_body(p, &b->it[j]) &&
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

/* Body item p (len bytes), past its file's size, put where its body
 * breaks off (end): a damaged key offset (reported). */
static void move_to_break(struct rb *b, struct ritem *p, uint64_t len,
			  uint64_t size, uint64_t end)
{
	char was[FMT_KEY_STR_MAX];

	fmt_key_str(&p->key, was, sizeof(was));
	p->key.el[3] = end;
	p->suspect = 0;
	b->mended++;
	b->bytes_moved += len;
	rep_action(b->R, R4_CHK_FILE_GAP, R4_CHECK_NO_BLOCK,
		   fmt_key_objectid(&p->key), R4_LOSS_NONE, 0,
		   "body item [%s] (%llu bytes) starts past the size %llu of "
		   "its file, whose body breaks off at %llu: moved there (a "
		   "damaged key offset; %llu bytes moved, none lost)", was,
		   (unsigned long long)len, (unsigned long long)size,
		   (unsigned long long)end, (unsigned long long)len);
}

/* Tail and extent items that start past their file's size (rounded up
 * to a block) after a break in its body: a damaged key offset, since
 * bytes past the size are none of the file's. The item is put where
 * the body breaks off when it fits there below the size and none of
 * the file's items follows it; else it is given to an object of its
 * own (the object pass links it into /lost+found, its bytes kept).
 * Never dropped. *moved = 1 when a key changed (the caller sorts
 * again). */
int rb_place_far(struct rb *b, int *moved)
{
	uint32_t bs = b->R->c.bs;
	const struct ritem *prev = NULL;
	uint64_t end = 0;

	for (size_t i = 0; i < b->n; i++) {
		struct ritem *p = &b->it[i];
		uint64_t at = fmt_key_offset(&p->key), size, lim, len;
		size_t j;

		if (p->pid == DROPPED)
			continue;
		if (p->pid != FMT_ITEM_TAIL40 && p->pid != FMT_ITEM_EXTENT40) {
			prev = NULL;
			continue;
		}
		if (!prev || !rb_same_body(prev, p))
			end = 0;
		len = rb_item_end(p, bs) - at;
		size = rb_sd_size(b, b->n, p);
		if (size > UINT64_MAX - bs)
			size = UINT64_MAX - bs;
		lim = size + bs - 1 - (size + bs - 1) % bs;
		if (at <= end || at <= lim) {
			prev = p;
			if (rb_item_end(p, bs) > end)
				end = rb_item_end(p, bs);
			continue;
		}
		j = next_kept(b, i);
		if ((p->pid != FMT_ITEM_EXTENT40 || end % bs == 0) &&
		    end <= lim && len <= lim - end &&
		    (j == b->n || !rb_same_body(p, &b->it[j]))) {
			move_to_break(b, p, len, size, end);
			*moved = 1;
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

/* The object ids of the stat data items (sorted; NULL without
 * memory), and in *next one past the highest object id in use. */
static uint64_t *stat_oids(const struct rb *b, size_t *nsd, uint64_t *next)
{
	uint64_t *oids = malloc((b->n ? b->n : 1) * sizeof(*oids));

	if (!oids)
		return NULL;
	for (size_t i = 0; i < b->n; i++) {
		const struct ritem *p = &b->it[i];
		uint64_t o = fmt_key_objectid(&p->key);

		if (p->pid == DROPPED)
			continue;
		if (p->pid == FMT_ITEM_STAT40)
			oids[(*nsd)++] = o;
		if (o < CHK_OID_MASK && o + 1 > *next &&
		    (p->pid == FMT_ITEM_STAT40 || !(p->key.el[2] >> 60)))
			*next = o + 1;
	}
	if (b->sp.next_oid > *next)	/* the spilled items' */
		*next = b->sp.next_oid;
	if (b->R->c.next_oid > *next && b->R->c.next_oid < CHK_OID_MASK)
		*next = b->R->c.next_oid;
	if (*nsd)
		qsort(oids, *nsd, sizeof(*oids), u64_cmp);
	return oids;
}

/* Body item p, which fits nowhere in its file (rb_place_far), given
 * the new object id cur (reported). */
static void rekey_orphan(struct rb *b, struct ritem *p, uint64_t cur)
{
	uint64_t o = fmt_key_objectid(&p->key);
	uint64_t len = rb_item_end(p, b->R->c.bs) - fmt_key_offset(&p->key);
	char was[FMT_KEY_STR_MAX];

	fmt_key_str(&p->key, was, sizeof(was));
	p->key.el[2] = cur;
	p->key.el[3] = 0;
	p->orphan = 0;
	rep_action(b->R, R4_CHK_FILE_GAP, R4_CHECK_NO_BLOCK, o, R4_LOSS_NONE,
		   0, "body item [%s] (%llu bytes) starts past its file's "
		   "size and does not fit where its body breaks off: given the "
		   "new object id %llx (a stat data is made for it, its bytes "
		   "kept)", was, (unsigned long long)len,
		   (unsigned long long)cur);
}

/* Body items (sorted) whose key still names no stat data while their
 * object id is another object's, or carries band bits (a stat data made
 * for them would be a second one with that id, or not theirs): they are
 * given a fresh object id, so that the object pass makes their stat
 * data and links them into /lost+found (their bytes kept). *moved = 1
 * when a key changed (the caller sorts again). */
int rb_rekey_orphans(struct rb *b, int *moved)
{
	uint64_t next = FMT_FIRST_FREE_OID, cur = 0;
	struct fmt_key last = { { 0, 0, 0, 0 } }, sdk;
	size_t nsd = 0;
	uint64_t *oids = stat_oids(b, &nsd, &next);
	int have = 0;

	if (!oids)
		return -ENOMEM;
	for (size_t i = 0; i < b->n; i++) {
		struct ritem *p = &b->it[i];
		uint64_t o = fmt_key_objectid(&p->key);
		char was[FMT_KEY_STR_MAX];

		if (!is_body(p->pid) || (named_body(b, &p->key) && !p->orphan))
			continue;
		if (p->orphan) {
			if (next >= CHK_OID_MASK)
				break;
			have = 0;
			cur = next++;
			rekey_orphan(b, p, cur);
			*moved = 1;
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
