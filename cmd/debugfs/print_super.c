/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4debugfs: print super, print journal, print bitmap: the fixed blocks
 * decoded from their raw bytes with format/. */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uuid/uuid.h>
#include "../common/common.h"
#include "debugfs.h"
#include "format/super.h"
#include "format/journal.h"
#include "format/bitmap.h"
#include "format/plugin.h"

struct supers {
	struct fmt_master m;
	struct fmt_format40 sb;
	struct fmt_status st;
	int st_ok;
	struct fmt_journal_header jh;
	struct fmt_journal_footer jf;
	size_t nr_backups, good_backups;
	uint64_t first_backup;
};

static const char *name_or(const char *name, const char *dflt)
{
	return name ? name : dflt;
}

/* Count the backup blocks and how many of them agree with the supers. */
static int load_backups(struct dbg *d, struct supers *s)
{
	uint64_t *blks;
	size_t n = fmt_backup_blocks(s->sb.block_count, d->si.blksize, NULL, 0);
	struct fmt_backup b;

	s->nr_backups = n;
	s->good_backups = 0;
	blks = calloc(n ? n : 1, sizeof(*blks));
	if (!blks)
		return DBG_FAIL;
	fmt_backup_blocks(s->sb.block_count, d->si.blksize, blks, n);
	s->first_backup = n ? blks[0] : 0;
	for (size_t i = 0; i < n; i++) {
		if (blks[i] >= s->sb.block_count || dbg_read(d, blks[i]))
			continue;
		fmt_backup_decode(d->buf, &b);
		if (!fmt_backup_verify(&b) &&
		    b.block_count == s->sb.block_count &&
		    b.mkfs_id == s->sb.mkfs_id &&
		    !memcmp(b.master.uuid, s->m.uuid, FMT_UUID_SIZE))
			s->good_backups++;
	}
	free(blks);
	return DBG_OK;
}

static int load_supers(struct dbg *d, struct supers *s)
{
	uint32_t bs = d->si.blksize;

	memset(s, 0, sizeof(*s));
	if (dbg_read(d, fmt_blk_master(bs)))
		return DBG_FAIL;
	fmt_master_decode(d->buf + FMT_MASTER_OFFSET % bs, &s->m);
	if (dbg_read(d, fmt_blk_format40(bs)))
		return DBG_FAIL;
	fmt_format40_decode(d->buf, &s->sb);
	if (dbg_read(d, fmt_blk_status(bs)))
		return DBG_FAIL;
	fmt_status_decode(d->buf, &s->st);
	s->st_ok = fmt_status_verify(&s->st) == NULL;
	if (dbg_read(d, fmt_blk_journal_header(bs)))
		return DBG_FAIL;
	fmt_journal_header_decode(d->buf, &s->jh);
	if (dbg_read(d, fmt_blk_journal_footer(bs)))
		return DBG_FAIL;
	fmt_journal_footer_decode(d->buf, &s->jf);
	return load_backups(d, s);
}

static void print_master(const struct dbg *d, const struct supers *s)
{
	char uuid[37];

	uuid_unparse(s->m.uuid, uuid);
	printf("master super block (block %" PRIu64 "):\n",
	       fmt_blk_master(d->si.blksize));
	printf("  magic:          %.*s\n", FMT_MASTER_MAGIC_SIZE, s->m.magic);
	printf("  blksize:        %u\n", s->m.blksize);
	printf("  format:         %u (%s)\n", s->m.format_id,
	       s->m.format_id == FMT_FORMAT40_ID ? "format40" : "unknown");
	printf("  uuid:           %s\n", uuid);
	printf("  label:          %.*s\n", FMT_LABEL_SIZE, s->m.label);
	printf("  diskmap:        %" PRIu64 "\n", s->m.diskmap);
}

static void print_format40(const struct dbg *d, const struct supers *s)
{
	const struct fmt_format40 *sb = &s->sb;

	printf("format40 super block (block %" PRIu64 "):\n",
	       fmt_blk_format40(d->si.blksize));
	printf("  magic:          %.*s\n", FMT_FORMAT40_MAGIC_SIZE, sb->magic);
	printf("  version:        %u%s\n", sb->version,
	       sb->update_backup ? " (backups need an update)" : "");
	printf("  mkfs id:        0x%08x\n", sb->mkfs_id);
	printf("  flushes:        %" PRIu64 "\n", sb->flushes);
	printf("  blocks:         %" PRIu64 "\n", sb->block_count);
	printf("  free blocks:    %" PRIu64 "\n", sb->free_blocks);
	printf("  root block:     %" PRIu64 "\n", sb->root_block);
	printf("  tree height:    %u\n", sb->tree_height);
	printf("  next oid:       0x%" PRIx64 "\n", sb->next_oid);
	printf("  file count:     %" PRIu64 "\n", sb->file_count);
	printf("  tail policy:    %u (%s)\n", sb->policy, name_or(
	       fmt_plugin_name(FMT_PT_FORMATTING, sb->policy), "unknown"));
	printf("  key policy:     %s\n", sb->flags & FMT_FORMAT40_FLAG_LARGE_KEYS
	       ? "LARGE" : "SHORT");
	printf("  node plugin:    %u (%s)\n", sb->node_pid, name_or(
	       fmt_plugin_name(FMT_PT_NODE, sb->node_pid), "unknown"));
	printf("  flags:          0x%" PRIx64 "\n", sb->flags);
}

static void print_rest(const struct dbg *d, const struct supers *s)
{
	uint32_t bs = d->si.blksize;

	printf("status block (block %" PRIu64 "):\n", fmt_blk_status(bs));
	if (!s->st_ok) {
		printf("  status:         no status block (old volume)\n");
	} else {
		printf("  status:         0x%" PRIx64 " (%s)\n", s->st.status,
		       s->st.status ? "not consistent" : "consistent");
		if (s->st.status)
			printf("  extended:       0x%" PRIx64 "\n",
			       s->st.ext_status);
		if (s->st.message[0])
			printf("  message:        %.*s\n",
			       FMT_STATUS_MESSAGE_SIZE, s->st.message);
	}
	printf("journal header (block %" PRIu64 "):\n",
	       fmt_blk_journal_header(bs));
	printf("  last committed: %" PRIu64 "\n", s->jh.last_committed_tx);
	printf("journal footer (block %" PRIu64 "):\n",
	       fmt_blk_journal_footer(bs));
	printf("  last flushed:   %" PRIu64 "\n", s->jf.last_flushed_tx);
	printf("  free blocks:    %" PRIu64 "\n", s->jf.free_blocks);
	printf("  file count:     %" PRIu64 "\n", s->jf.nr_files);
	printf("  next oid:       0x%" PRIx64 "\n", s->jf.next_oid);
	printf("backups:          %zu (first at block %" PRIu64 "), %zu "
	       "match the super blocks\n", s->nr_backups, s->first_backup,
	       s->good_backups);
}

#define JU64(name, v) (printf(",\"%s\":", name), r4cmd_json_u64(v))

static void json_str(const char *key, const char *s, size_t max)
{
	printf(",\"%s\":", key);
	r4cmd_json_str(s, strnlen(s, max));
}

static void print_json(const struct supers *s)
{
	char uuid[37];
	const struct fmt_format40 *sb = &s->sb;

	uuid_unparse(s->m.uuid, uuid);
	printf("{\"blksize\":%u",
	       s->m.blksize);
	json_str("uuid", uuid, sizeof(uuid));
	json_str("label", s->m.label, FMT_LABEL_SIZE);
	JU64("version", sb->version);
	JU64("update_backup", sb->update_backup);
	JU64("mkfs_id", sb->mkfs_id);
	JU64("flushes", sb->flushes);
	JU64("blocks", sb->block_count);
	JU64("free_blocks", sb->free_blocks);
	JU64("root_block", sb->root_block);
	JU64("tree_height", sb->tree_height);
	JU64("next_oid", sb->next_oid);
	JU64("file_count", sb->file_count);
	json_str("tail_policy", name_or(fmt_plugin_name(FMT_PT_FORMATTING,
		 sb->policy), "unknown"), 64);
	json_str("key_policy", sb->flags & FMT_FORMAT40_FLAG_LARGE_KEYS ?
		 "large" : "short", 8);
	json_str("node_plugin", name_or(fmt_plugin_name(FMT_PT_NODE,
		 sb->node_pid), "unknown"), 64);
	JU64("flags", sb->flags);
	JU64("status_present", s->st_ok);
	JU64("status", s->st.status);
	json_str("status_message", s->st.message, FMT_STATUS_MESSAGE_SIZE);
	JU64("last_committed_tx", s->jh.last_committed_tx);
	JU64("last_flushed_tx", s->jf.last_flushed_tx);
	JU64("backups", s->nr_backups);
	JU64("backups_matching", s->good_backups);
	printf("}\n");
}

int dbg_print_super(struct dbg *d, int argc, const char **argv)
{
	struct supers s;

	if (argc != 1)
		return dbg_usage(argv[0]);
	if (load_supers(d, &s))
		return DBG_FAIL;
	if (d->json) {
		print_json(&s);
		return DBG_OK;
	}
	print_master(d, &s);
	print_format40(d, &s);
	print_rest(d, &s);
	return DBG_OK;
}

/* ---- print journal ---------------------------------------------------- */

static int print_wander_chain(struct dbg *d, uint64_t txblk,
			      const struct fmt_tx_head *th)
{
	static struct fmt_wander_record wr;
	uint64_t blk = th->next_block;
	const char *why;

	for (uint32_t serial = 1; blk != txblk; serial++) {
		if (serial >= th->total || blk >= d->si.block_count) {
			fprintf(stderr, "%s: tx head %" PRIu64 ": wander "
				"record chain does not come back to the tx "
				"head after %u records (at block %" PRIu64
				")\n", r4cmd_prog, txblk, serial - 1, blk);
			return DBG_FAIL;
		}
		if (dbg_read(d, blk) ||
		    fmt_wander_record_decode(d->buf, d->si.blksize, &wr))
			return DBG_FAIL;
		why = fmt_wander_record_verify(&wr, d->si.block_count);
		printf("    wander record %u (block %" PRIu64 "): total %u, "
		       "serial %u, next %" PRIu64 ", %u pairs%s%s\n", serial,
		       blk, wr.total, wr.serial, wr.next_block, wr.nr_pairs,
		       why ? ": " : "", why ? why : "");
		for (uint32_t i = 0; i < wr.nr_pairs; i++)
			printf("      %" PRIu64 " -> %" PRIu64 "\n",
			       wr.pairs[i].wandered, wr.pairs[i].original);
		if (why)
			return DBG_FAIL;
		blk = wr.next_block;
	}
	return DBG_OK;
}

static int print_tx_chain(struct dbg *d, uint64_t from, uint64_t upto)
{
	struct fmt_tx_head th;
	const char *why;
	uint64_t blk = from, steps = 0;

	while (blk && blk != upto) {
		if (blk >= d->si.block_count || ++steps > d->si.block_count) {
			fprintf(stderr, "%s: tx head chain: block %" PRIu64
				" is outside the volume or the chain loops\n",
				r4cmd_prog, blk);
			return DBG_FAIL;
		}
		if (dbg_read(d, blk))
			return DBG_FAIL;
		fmt_tx_head_decode(d->buf, &th);
		why = fmt_tx_head_verify(&th, d->si.block_count);
		printf("  tx head (block %" PRIu64 "): total %u, prev %" PRIu64
		       ", first record %" PRIu64 ", free blocks %" PRIu64
		       ", files %" PRIu64 ", next oid 0x%" PRIx64 "%s%s\n",
		       blk, th.total, th.prev_tx, th.next_block,
		       th.free_blocks, th.nr_files, th.next_oid,
		       why ? ": " : "", why ? why : "");
		if (why) {
			fprintf(stderr, "%s: tx head %" PRIu64 ": %s\n",
				r4cmd_prog, blk, why);
			return DBG_FAIL;
		}
		if (print_wander_chain(d, blk, &th))
			return DBG_FAIL;
		blk = th.prev_tx;
	}
	return DBG_OK;
}

int dbg_print_journal(struct dbg *d, int argc, const char **argv)
{
	struct fmt_journal_header jh;
	struct fmt_journal_footer jf;
	uint32_t bs = d->si.blksize;

	if (argc != 1)
		return dbg_usage(argv[0]);
	if (dbg_read(d, fmt_blk_journal_header(bs)))
		return DBG_FAIL;
	fmt_journal_header_decode(d->buf, &jh);
	if (dbg_read(d, fmt_blk_journal_footer(bs)))
		return DBG_FAIL;
	fmt_journal_footer_decode(d->buf, &jf);
	printf("journal header (block %" PRIu64 "): last committed tx %"
	       PRIu64 "\n", fmt_blk_journal_header(bs), jh.last_committed_tx);
	printf("journal footer (block %" PRIu64 "): last flushed tx %" PRIu64
	       ", free blocks %" PRIu64 ", files %" PRIu64 ", next oid 0x%"
	       PRIx64 "\n", fmt_blk_journal_footer(bs), jf.last_flushed_tx,
	       jf.free_blocks, jf.nr_files, jf.next_oid);
	if (jh.last_committed_tx == jf.last_flushed_tx) {
		printf("no transactions to replay\n");
		return DBG_OK;
	}
	printf("transactions to replay (newest first):\n");
	return print_tx_chain(d, jh.last_committed_tx, jf.last_flushed_tx);
}

/* ---- print bitmap ----------------------------------------------------- */

/* Print the used ranges of region k, wrapped. */
static void print_ranges(const uint8_t *buf, uint64_t len, uint64_t base)
{
	uint64_t b = 0, e;
	int col = 8;

	printf("  used:");
	while ((b = fmt_bitmap_find_set(buf, b, len)) < len) {
		char tmp[64];
		int n;

		e = fmt_bitmap_find_zero(buf, b, len);
		if (e - b == 1)
			n = snprintf(tmp, sizeof(tmp), " %" PRIu64, base + b);
		else
			n = snprintf(tmp, sizeof(tmp), " %" PRIu64 "-%" PRIu64,
				     base + b, base + e - 1);
		if (col + n > 78) {
			printf("\n       ");
			col = 8;
		}
		fputs(tmp, stdout);
		col += n;
		b = e;
	}
	putchar('\n');
}

static int print_region(struct dbg *d, uint64_t k, uint64_t *used)
{
	uint32_t bs = d->si.blksize;
	uint64_t blk = fmt_bitmap_blk(k, bs);
	uint64_t start = fmt_bitmap_region_start(k, bs);
	uint64_t len = fmt_bitmap_region_len(k, d->si.block_count, bs);
	uint64_t u;
	int ok;

	if (dbg_read(d, blk))
		return DBG_FAIL;
	ok = !fmt_bitmap_verify(d->buf, bs);
	u = len - fmt_bitmap_count_zero(d->buf, 0, len);
	*used += u;
	printf("region %" PRIu64 " (bitmap block %" PRIu64 "): blocks %"
	       PRIu64 "-%" PRIu64 ", used %" PRIu64 ", free %" PRIu64
	       ", checksum %s", k, blk, start, start + len - 1, u, len - u,
	       ok ? "ok" : "bad");
	if (!ok)
		printf(" (stored 0x%08x, computed 0x%08x)",
		       fmt_bitmap_csum_get(d->buf),
		       fmt_bitmap_csum(d->buf, bs));
	putchar('\n');
	print_ranges(d->buf, len, start);
	return ok ? DBG_OK : DBG_FAIL;
}

int dbg_print_bitmap(struct dbg *d, int argc, const char **argv)
{
	uint64_t n = fmt_bitmap_count(d->si.block_count, d->si.blksize);
	uint64_t first = 0, last = n, used = 0;
	int rc = DBG_OK;

	if (argc > 2)
		return dbg_usage(argv[0]);
	if (argc == 2) {
		if (dbg_parse_u64(argv[1], &first) || first >= n) {
			fprintf(stderr, "%s: print bitmap: region '%s' does not "
				"exist (the volume has %" PRIu64 ")\n",
				r4cmd_prog, argv[1], n);
			return DBG_FAIL;
		}
		last = first + 1;
	}
	for (uint64_t k = first; k < last; k++)
		if (print_region(d, k, &used))
			rc = DBG_FAIL;
	if (argc == 1)
		printf("total: %" PRIu64 " regions, used %" PRIu64 ", free %"
		       PRIu64 " (format40 super block says free %" PRIu64
		       ")\n", n, used, d->si.block_count - used,
		       d->si.free_blocks);
	if (rc)
		fprintf(stderr, "%s: print bitmap: bad checksum in a bitmap "
			"block\n", r4cmd_prog);
	return rc;
}
