/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4debugfs: print node BLOCK: a formatted node's header and every item
 * body decoded with format/. Whatever the bytes, every offset is checked
 * by the format layer before it is used; an item that does not decode is
 * reported and the next one printed. */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "../common/common.h"
#include "debugfs.h"
#include "format/node.h"
#include "format/item.h"
#include "format/key.h"
#include "format/plugin.h"

#define HEAD_BYTES 16

void dbg_mode_str(unsigned mode, char *b)
{
	static const char types[] = "?pc?d?b?-?l?s???";
	static const char rwx[] = "rwxrwxrwx";

	b[0] = types[(mode >> 12) & 0xf];
	for (int i = 0; i < 9; i++)
		b[1 + i] = (mode & (0400u >> i)) ? rwx[i] : '-';
	if (mode & 04000)
		b[3] = (mode & 0100) ? 's' : 'S';
	if (mode & 02000)
		b[6] = (mode & 010) ? 's' : 'S';
	if (mode & 01000)
		b[9] = (mode & 01) ? 't' : 'T';
	b[10] = '\0';
}

void dbg_hexhead(const uint8_t *p, size_t len, size_t max)
{
	size_t n = len < max ? len : max;

	for (size_t i = 0; i < n; i++)
		printf(" %02x", p[i]);
	printf("%s |", len > n ? " ..." : "");
	for (size_t i = 0; i < n; i++)
		putchar(p[i] >= 0x20 && p[i] < 0x7f ? p[i] : '.');
	printf("|\n");
}

void dbg_put_name(const char *name, size_t len)
{
	r4cmd_put_escaped(stdout, name, len, 1);
}

static void put_time(const char *what, uint32_t t, uint32_t ns, int has_ns)
{
	time_t tt = (time_t)t;
	struct tm tm;
	char buf[32] = "?";

	if (gmtime_r(&tt, &tm))
		strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
	if (has_ns)
		printf("    %s %" PRIu32 ".%09" PRIu32 " (%s UTC)\n", what, t,
		       ns, buf);
	else
		printf("    %s %" PRIu32 " (%s UTC)\n", what, t, buf);
}

static void print_pset(const char *what, const struct fmt_pset *ps)
{
	printf("    %s:", what);
	for (unsigned i = 0; i < ps->count && i < FMT_PSET_MAX_SLOTS; i++) {
		const char *m = fmt_pset_member_name(ps->member[i]);

		printf(" %s=%u", m ? m : "?", ps->id[i]);
	}
	putchar('\n');
}

static int print_stat40(const uint8_t *body, size_t len)
{
	struct fmt_stat st;
	char mode[11];
	int rc = fmt_stat_decode(body, len, &st);
	const char *why;

	if (rc) {
		printf("    stat data does not decode: %s\n", r4_strerror(rc));
		return DBG_FAIL;
	}
	printf("    mask 0x%" PRIx64 ":", st.mask);
	for (unsigned k = 0; k < 64; k++)
		if (k % 16 != 15 && fmt_stat_has(&st, k))
			printf(" %s", fmt_sdext_name(k) ? fmt_sdext_name(k)
			       : "?");
	putchar('\n');
	if (fmt_stat_has(&st, FMT_SDEXT_LW)) {
		dbg_mode_str(st.mode, mode);
		printf("    mode 0%06o (%s), nlink %" PRIu32 ", size %" PRIu64
		       "\n", st.mode, mode, st.nlink, st.size);
	}
	if (fmt_stat_has(&st, FMT_SDEXT_UNIX)) {
		int lt = fmt_stat_has(&st, FMT_SDEXT_LT);

		printf("    uid %" PRIu32 ", gid %" PRIu32 ", rdev/bytes %"
		       PRIu64 "\n", st.uid, st.gid, st.rdev_or_bytes);
		put_time("atime", st.atime, st.atime_ns, lt);
		put_time("mtime", st.mtime, st.mtime_ns, lt);
		put_time("ctime", st.ctime, st.ctime_ns, lt);
	}
	if (fmt_stat_has(&st, FMT_SDEXT_SYMLINK)) {
		printf("    symlink \"");
		dbg_put_name((const char *)st.symlink, st.symlink_len);
		printf("\"\n");
	}
	if (fmt_stat_has(&st, FMT_SDEXT_PSET))
		print_pset("plugin set", &st.pset);
	if (fmt_stat_has(&st, FMT_SDEXT_HSET))
		print_pset("heir set", &st.hset);
	if (fmt_stat_has(&st, FMT_SDEXT_FLAGS))
		printf("    flags 0x%" PRIx32 "\n", st.flags);
	if (fmt_stat_has(&st, FMT_SDEXT_CAPS))
		printf("    caps effective 0x%" PRIx32 " permitted 0x%" PRIx32
		       "\n", st.cap_effective, st.cap_permitted);
	if (fmt_stat_has(&st, FMT_SDEXT_CRYPTO))
		printf("    crypto key size %u bits\n", st.crypto_keysize);
	why = fmt_stat_verify(&st);
	if (why)
		printf("    ! %s\n", why);
	return why ? DBG_FAIL : DBG_OK;
}

static int print_cde40(const uint8_t *body, size_t len,
		       const struct fmt_key *ikey, enum fmt_key_policy pol)
{
	int n = fmt_cde40_units(body, len, pol), bad = -1;
	struct fmt_cde40_entry e;
	struct fmt_key k;
	char name[32], ks[FMT_KEY_STR_MAX];
	const char *why;

	if (n < 0) {
		printf("    directory item does not decode: %s\n",
		       r4_strerror(n));
		return DBG_FAIL;
	}
	printf("    %d entries\n", n);
	for (int i = 0; i < n; i++) {
		int rc = fmt_cde40_entry(body, len, pol, (unsigned)i, &e);

		if (rc) {
			printf("    [%d] does not decode: %s\n", i,
			       r4_strerror(rc));
			return DBG_FAIL;
		}
		fmt_cde40_entry_key(ikey, &e, &k);
		printf("    [%d] \"", i);
		if (fmt_cde40_entry_is_long(&e, pol))
			dbg_put_name((const char *)e.name, e.name_len);
		else
			dbg_put_name(name,
				 fmt_key_entry_name(&k, pol, name));
		fmt_key_str(&e.target, ks, sizeof(ks));
		printf("\" -> [%s] (hash %" PRIx64 ":%" PRIx64 ":%" PRIx64
		       ", at %u)\n", ks, e.ordering, e.objectid, e.offset,
		       e.body_offset);
	}
	why = fmt_cde40_verify(body, len, pol, &bad);
	if (why)
		printf("    ! entry %d: %s\n", bad, why);
	return why ? DBG_FAIL : DBG_OK;
}

static int print_extent40(const uint8_t *body, size_t len, uint64_t off,
			  const struct dbg *d)
{
	static const char *const kinds[] = { "hole", "unallocated",
					     "allocated" };
	int n = fmt_extent40_units(body, len), bad = -1;
	struct fmt_extent40_unit u;
	const char *why;

	if (n < 0) {
		printf("    extent item does not decode: %s\n",
		       r4_strerror(n));
		return DBG_FAIL;
	}
	for (int i = 0; i < n; i++) {
		fmt_extent40_unit(body, len, (unsigned)i, &u);
		printf("    [%d] start %" PRIu64 " width %" PRIu64 " (%s), "
		       "file offset %" PRIu64 "\n", i, u.start, u.width,
		       kinds[fmt_extent40_kind(&u)], off);
		off += u.width * d->si.blksize;
	}
	why = fmt_extent40_verify(body, len, d->si.block_count,
				  d->si.blksize, &bad);
	if (why)
		printf("    ! unit %d: %s\n", bad, why);
	return why ? DBG_FAIL : DBG_OK;
}

static int print_misc(unsigned pid, const uint8_t *body, size_t len,
		      enum fmt_key_policy pol)
{
	struct fmt_ctail40 ct;
	struct fmt_bbox40 bb;
	uint64_t child;
	char ks[FMT_KEY_STR_MAX];

	switch (pid) {
	case FMT_ITEM_NODEPTR40:
		if (fmt_nodeptr40_decode(body, len, &child))
			break;
		printf("    child %" PRIu64 "\n", child);
		return DBG_OK;
	case FMT_ITEM_CTAIL40:
		if (fmt_ctail40_decode(body, len, &ct))
			break;
		printf("    cluster shift %u, %zu bytes:", ct.shift, ct.len);
		dbg_hexhead(ct.data, ct.len, HEAD_BYTES);
		return DBG_OK;
	case FMT_ITEM_BBOX40:
		if (fmt_bbox40_decode(body, len, pol, &bb))
			break;
		fmt_key_str(&bb.sdkey, ks, sizeof(ks));
		printf("    safe link to [%s]", ks);
		if (bb.has_size)
			printf(", truncate to %" PRIu64, bb.size);
		putchar('\n');
		return DBG_OK;
	default:
		printf("    %zu bytes:", len);
		dbg_hexhead(body, len, HEAD_BYTES);
		return DBG_OK;
	}
	printf("    item does not decode (%zu bytes)\n", len);
	return DBG_FAIL;
}

static int print_body(const struct dbg *d, const struct fmt_item_header *ih,
		      const uint8_t *body, size_t len)
{
	enum fmt_key_policy pol = d->large_keys ? FMT_KEY_LARGE : FMT_KEY_SHORT;

	switch (ih->plugin_id) {
	case FMT_ITEM_STAT40:
		return print_stat40(body, len);
	case FMT_ITEM_CDE40:
		return print_cde40(body, len, &ih->key, pol);
	case FMT_ITEM_EXTENT40:
		return print_extent40(body, len, fmt_key_offset(&ih->key), d);
	case FMT_ITEM_TAIL40:
		printf("    %zu bytes at file offset %" PRIu64 ":", len,
		       fmt_key_offset(&ih->key));
		dbg_hexhead(body, len, HEAD_BYTES);
		return DBG_OK;
	default:
		return print_misc(ih->plugin_id, body, len, pol);
	}
}

int dbg_print_item(const struct dbg *d, const uint8_t *blk, unsigned i)
{
	enum fmt_key_policy pol = d->large_keys ? FMT_KEY_LARGE : FMT_KEY_SHORT;
	struct fmt_item_header ih;
	size_t off, len;
	const char *name;
	char ks[FMT_KEY_STR_MAX];
	int rc;

	rc = fmt_node_ih_decode(blk, d->si.blksize, pol, i, &ih);
	if (rc) {
		printf("#%u item header does not fit the block\n", i);
		return DBG_FAIL;
	}
	name = fmt_item_name(ih.plugin_id);
	fmt_key_str(&ih.key, ks, sizeof(ks));
	printf("#%u %s (%u) [%s]", i, name ? name : "unknown", ih.plugin_id,
	       ks);
	rc = fmt_node_item_body(blk, d->si.blksize, pol, i, &off, &len);
	if (rc) {
		printf(" offset %u: body does not fit: %s\n", ih.offset,
		       r4_strerror(rc));
		return DBG_FAIL;
	}
	printf(" offset %zu len %zu flags 0x%x\n", off, len, ih.flags);
	return print_body(d, &ih, blk + off, len);
}

int dbg_show_node(struct dbg *d, uint64_t nr, const uint8_t *blk)
{
	enum fmt_key_policy pol = d->large_keys ? FMT_KEY_LARGE : FMT_KEY_SHORT;
	struct fmt_node_header h;
	const char *why, *name;
	int bad = -1, rc;

	rc = fmt_node_header_decode(blk, d->si.blksize, &h);
	if (rc || h.magic != fmt_node_magic(h.plugin_id)) {
		/* Data, free or fixed blocks: say what is missing, not
		 * the decoder's code. */
		fprintf(stderr, "%s: block %" PRIu64 " is not a formatted "
			"node (%s)\n", r4cmd_prog, nr, rc ? "its header names "
			"no node plugin" : "no node magic");
		return DBG_FAIL;
	}
	name = fmt_plugin_name(FMT_PT_NODE, h.plugin_id);
	printf("node %" PRIu64 ": %s, level %u, %u items, free space %u, "
	       "free space start %u, magic 0x%08x, mkfs id 0x%08x, flush id "
	       "0x%" PRIx64 ", flags 0x%x\n", nr, name ? name : "?", h.level,
	       h.nr_items, h.free_space, h.free_space_start, h.magic,
	       h.mkfs_id, h.flush_id, h.flags);
	why = fmt_node_verify(blk, d->si.blksize, pol, &bad);
	rc = DBG_OK;
	for (unsigned i = 0; i < h.nr_items; i++) {
		if (!fmt_node_ih_pos(d->si.blksize, h.plugin_id, pol, i))
			break;
		if (dbg_print_item(d, blk, i))
			rc = DBG_FAIL;
	}
	if (why) {
		fprintf(stderr, "%s: block %" PRIu64 ": bad node: %s (item "
			"%d)\n", r4cmd_prog, nr, why, bad);
		return DBG_FAIL;
	}
	if (rc)
		fprintf(stderr, "%s: block %" PRIu64 ": an item does not "
			"decode\n", r4cmd_prog, nr);
	return rc;
}

int dbg_print_node(struct dbg *d, int argc, const char **argv)
{
	uint64_t blk;

	if (argc != 2)
		return dbg_usage(argv[0]);
	if (dbg_parse_block(d, argv[1], &blk) || dbg_read(d, blk))
		return DBG_FAIL;
	return dbg_show_node(d, blk, d->buf);
}
