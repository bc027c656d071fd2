/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the transaction engine (libimage/txn): a copy-on-write commit
 * relocating the first leaf and the root, the same commit cut, torn,
 * losing unsynced writes and failing at every write; a 600-block
 * overwrite set; journals that lie; and fsck.reiser4 replaying ours. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tap.h"
#include "fixture.h"
#include "r4/r4.h"
#include "r4/check.h"
#include "r4/journal.h"
#include "libimage/vol/volume.h"
#include "libimage/txn/txn.h"
#include "libimage/io/fault.h"
#include "format/node.h"
#include "format/plugin.h"
#include "format/endian.h"
#include "libimage/util/err.h"

#define BS 4096
#define MAXTREE 64

static char pristine[64], path[80], base[96];
static struct txn_stats last_stats;

/* ---- images ---- */

static void copy_image(const char *from, const char *to)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "cp --sparse=always '%s' '%s'", from, to);
	tap_require(system(cmd) == 0, "%s failed", cmd);
}

static void poke_block(const char *p, uint64_t blk, const uint8_t *buf)
{
	FILE *f = fopen(p, "r+b");

	tap_require(f, "cannot open %s", p);
	tap_require(fseeko(f, (off_t)(blk * BS), SEEK_SET) == 0 &&
		    fwrite(buf, 1, BS, f) == BS, "cannot write block %llu of %s",
		    (unsigned long long)blk, p);
	tap_must(fclose(f));
}

/* What "the volume's state" means here: the super block counters, the
 * bitmap block and the bytes of every tree block from the root. */
struct snap {
	uint64_t root, free_blocks, file_count, next_oid, height;
	uint8_t bitmap[BS];
	size_t ntree;
	uint8_t tree[MAXTREE][BS];
};

static int nodeptr_body(const uint8_t *blk, unsigned i, size_t *off)
{
	struct fmt_item_header ih;
	size_t len;

	if (fmt_node_ih_decode(blk, BS, FMT_KEY_LARGE, i, &ih) ||
	    ih.plugin_id != FMT_ITEM_NODEPTR40)
		return -1;
	return fmt_node_item_body(blk, BS, FMT_KEY_LARGE, i, off, &len);
}

static void walk(const char *p, uint64_t blk, struct snap *s)
{
	struct fmt_node_header nh;
	uint8_t *b;

	if (s->ntree >= MAXTREE)
		return;
	b = s->tree[s->ntree++];
	if (fixture_block(p, blk, b) || fmt_node_header_decode(b, BS, &nh))
		return;
	for (unsigned i = 0; nh.level > 1 && i < nh.nr_items; i++) {
		size_t off;

		if (!nodeptr_body(b, i, &off))
			walk(p, get_le64(b + off), s);
	}
}

static void take_snap(const char *p, struct snap *s)
{
	uint8_t sb[BS];

	memset(s, 0, sizeof(*s));
	fixture_block(p, 17, sb);
	s->free_blocks = get_le64(sb + 8);
	s->root = get_le64(sb + 16);
	s->next_oid = get_le64(sb + 24);
	s->file_count = get_le64(sb + 32);
	s->height = get_le16(sb + 68);
	fixture_block(p, 18, s->bitmap);
	walk(p, s->root, s);
}

static int same(const struct snap *a, const struct snap *b)
{
	if (a->root != b->root || a->free_blocks != b->free_blocks ||
	    a->file_count != b->file_count || a->next_oid != b->next_oid ||
	    a->height != b->height || a->ntree != b->ntree ||
	    memcmp(a->bitmap, b->bitmap, BS))
		return 0;
	for (size_t i = 0; i < a->ntree; i++)
		if (memcmp(a->tree[i], b->tree[i], BS))
			return 0;
	return 1;
}

/* ---- checks ---- */

static uint64_t our_check(const char *p)
{
	struct r4_error err = { 0 };
	struct r4_check_report rep;
	struct r4_vol *vol;

	if (r4_vol_open(p, R4_OPEN(R4_OPEN_RDONLY), &vol, &err))
		return 1000;
	if (r4_check(vol, NULL, &rep, &err))
		rep.problems = 1000;
	tap_must(r4_vol_close(vol, NULL));
	return rep.problems;
}

/* Problems other than the unreplayed transaction (journal-unreplayed,
 * which a read-only open of a cut volume reports by design) */
static void count_other(void *ctx, const struct r4_check_problem *p)
{
	if (p->code != R4_CHK_JOURNAL_PENDING)
		++*(uint64_t *)ctx;
}

/* The problems a read-only check finds in a volume with one committed,
 * unreplayed transaction: exactly one, journal-unreplayed; 1000 else. */
static uint64_t pending_check(const char *p)
{
	struct r4_error err = { 0 };
	struct r4_check_report rep;
	struct r4_check_opts o = { 0 };
	uint64_t other = 0;
	struct r4_vol *vol;

	o.problem = count_other;
	o.problem_ctx = &other;
	if (r4_vol_open(p, R4_OPEN(R4_OPEN_RDONLY), &vol, &err))
		return 1000;
	if (r4_check(vol, &o, &rep, &err))
		rep.problems = 1000;
	tap_must(r4_vol_close(vol, NULL));
	return other ? 1000 : rep.problems;
}

/* fsck.reiser4 --check calls it consistent; its output is shown as
 * TAP comments otherwise. */
static int oracle_ok(const char *p)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "out=$(fsck.reiser4 --check -f -y '%s' "
		 "2>&1); echo \"$out\" | grep -q 'FS is consistent' || "
		 "{ echo \"$out\" | sed 's/^/# /' | tail -n 25; exit 1; }", p);
	return system(cmd) == 0;
}

/* ---- the workload: relocate the first leaf and the root ---- */

static int workload(struct r4_vol *vol, struct r4_error *err)
{
	uint8_t oldroot[BS], oldleaf[BS];
	uint64_t root = vol->sb.root_block, leaf, nl, nr;
	struct io_block *b;
	struct txn *t;
	size_t off, len;
	int rc;

	rc = txn_begin(vol, &t, err);
	if (rc)
		return rc;
	rc = r4_vol_read_block(vol, root, oldroot, err);
	if (!rc && nodeptr_body(oldroot, 0, &off))
		rc = r4i_fail(err, R4_ECORRUPT, "no nodeptr in the root");
	if (rc)
		goto out_abort;
	leaf = get_le64(oldroot + off);
	rc = r4_vol_read_block(vol, leaf, oldleaf, err);
	if (!rc)
		rc = txn_alloc(t, leaf, &nl, err);
	if (!rc)
		rc = txn_new(t, nl, &b, err);
	if (rc)
		goto out_abort;
	memcpy(b->data, oldleaf, BS);
	/* item 0 is the root directory's stat data: bump its atime */
	if (!fmt_node_item_body(b->data, BS, FMT_KEY_LARGE, 0, &off, &len) &&
	    (get_le16(b->data + off) & 3) == 3)
		put_le32(b->data + off + 2 + 14 + 8,
			 get_le32(b->data + off + 2 + 14 + 8) + 1);
	fmt_node_stamp(b->data, BS);
	txn_put(t, b);
	rc = txn_alloc(t, root, &nr, err);
	if (!rc)
		rc = txn_new(t, nr, &b, err);
	if (rc)
		goto out_abort;
	memcpy(b->data, oldroot, BS);
	nodeptr_body(b->data, 0, &off);
	put_le64(b->data + off, nl);
	fmt_node_stamp(b->data, BS);
	txn_put(t, b);
	rc = txn_free(t, leaf, 1, err);
	if (!rc)
		rc = txn_free(t, root, 1, err);
	if (rc)
		goto out_abort;
	txn_set_root(t, nr, vol->sb.tree_height);
	return txn_commit(t, err);
out_abort:
	txn_abort(t);
	return rc;
}

static int (*work)(struct r4_vol *, struct r4_error *) = workload;

/* The power object of the last faulty open (its counts). */
static struct r4_fault *power;

/* Open p read-write with a new power object for spec. */
static int open_faulty(const char *p, const struct io_fault_spec *spec,
		       struct r4_vol **vol, struct r4_error *err)
{
	io_fault_put(power);
	power = io_fault_new(spec, NULL, NULL);
	return r4_vol_open(p, &(const struct r4_open_opts){
				.flags = R4_OPEN_RDWR, .fault = power },
			   vol, err);
}

/* Open path read-write (replaying), run the workload under a fault,
 * close. Returns the workload's result. */
static int run_faulty(const struct io_fault_spec *spec, struct r4_error *err)
{
	struct r4_vol *vol;
	int rc;

	copy_image(base, path);
	rc = open_faulty(path, spec, &vol, err);
	if (rc)
		return rc;
	rc = work(vol, err);
	last_stats = vol->last_commit;
	tap_must(r4_vol_close(vol, NULL));
	return rc;
}

/* Reopen read-write (replay) and close; the number replayed. */
static int reopen(const char *p, unsigned *replayed)
{
	struct r4_error err = { 0 };
	struct r4_vol *vol;
	int rc = r4_vol_open(p, R4_OPEN(R4_OPEN_RDWR), &vol, &err);

	if (rc) {
		printf("# reopen: %s\n", err.msg);
		return rc;
	}
	*replayed = r4_vol_replayed(vol);
	return r4_vol_close(vol, &err);
}

static struct snap old_state, new_state, got;
static uint64_t nwrites, hdr_write;

/* Run the workload on base without a fault: the old and new states, the
 * number of writes, and which one writes the journal header. */
static int prepare(const char *label)
{
	struct io_fault_spec count = { .mode = IO_FAULT_COUNT, .n = 0 };
	struct io_fault_stats st;
	struct r4_error err = { 0 };
	int rc;

	take_snap(base, &old_state);
	rc = run_faulty(&count, &err);
	is_int(rc, 0, "%s: commits: %s", label, err.msg);
	io_fault_last_stats(power, &st);
	nwrites = st.writes;
	/* after the header: the overwrite set at home, one write a block,
	 * and the footer (neighbouring relocated blocks share a write) */
	hdr_write = nwrites - last_stats.overwritten - 1;
	printf("# %s: %llu writes (%llu relocated, %llu overwritten, "
	       "%llu log), %llu syncs\n", label,
	       (unsigned long long)st.writes,
	       (unsigned long long)last_stats.relocated,
	       (unsigned long long)last_stats.overwritten,
	       (unsigned long long)last_stats.log_blocks,
	       (unsigned long long)st.syncs);
	is_int(st.syncs, 5, "%s: five fsyncs (one after the super block "
	       "goes home)", label);
	take_snap(path, &new_state);
	return rc;
}

static void test_commit(void)
{
	unsigned rep = 9;

	snprintf(base, sizeof(base), "%s", pristine);
	prepare("relocate leaf and root");
	ok(new_state.root != old_state.root, "new root block %llu (was %llu)",
	   (unsigned long long)new_state.root,
	   (unsigned long long)old_state.root);
	ok(new_state.ntree == 2 && old_state.ntree == 2, "two tree blocks");
	ok(memcmp(new_state.tree[1], old_state.tree[1], BS) != 0,
	   "the leaf's copy differs (atime)");
	is_u64(new_state.free_blocks, old_state.free_blocks,
	       "two allocated, two freed");
	ok(memcmp(new_state.bitmap, old_state.bitmap, BS) != 0,
	   "bitmap changed");
	is_int(reopen(path, &rep), 0, "reopen");
	is_int(rep, 0, "nothing to replay after a full commit");
	take_snap(path, &got);
	ok(same(&got, &new_state), "reopen shows the new state");
	is_int(our_check(path), 0, "r4_check clean");
	ok(oracle_ok(path), "fsck.reiser4 --check: consistent");
}

/* The format40 super block is the first block written home after the
 * commit point, and synced alone: cut right after it (even losing every
 * unsynced write after it), the super block on disk is the new one
 * while the bitmap is still the old one; cut before it, the old one.
 * (The kernel's replay keeps the super block it read before replaying:
 * doc/kernel.md.) */
static void test_super_first(void)
{
	uint8_t sb[BS], bm[BS];
	struct r4_error err = { 0 };
	struct io_fault_spec s = { .mode = IO_FAULT_CUT_AFTER, .n = hdr_write };

	run_faulty(&s, &err);
	fixture_block(path, 17, sb);
	ok(get_le64(sb + FMT_FORMAT40_OFF_ROOT_BLOCK) == old_state.root, "cut right after the "
	   "journal header: the super block still names the old root");
	s.n = hdr_write + 1;
	run_faulty(&s, &err);
	fixture_block(path, 17, sb);
	fixture_block(path, 18, bm);
	ok(get_le64(sb + FMT_FORMAT40_OFF_ROOT_BLOCK) == new_state.root, "cut right after the next "
	   "write: the super block names the new root %llu",
	   (unsigned long long)new_state.root);
	ok(memcmp(bm, old_state.bitmap, BS) == 0, "... and the bitmap is "
	   "still the old one (the super block went first)");
	s = (struct io_fault_spec){ .mode = IO_FAULT_DROP_UNSYNCED, .n = hdr_write + 2 };
	run_faulty(&s, &err);
	fixture_block(path, 17, sb);
	ok(get_le64(sb + FMT_FORMAT40_OFF_ROOT_BLOCK) == new_state.root, "power lost after the next "
	   "write, unsynced writes dropped: the super block is synced home");
}

static void check_point(const char *mode, uint64_t n,
			int want /* 0 old, 1 new, 2 either */)
{
	unsigned rep = 0;
	int is_old, is_new, good;
	uint64_t problems;

	if (reopen(path, &rep)) {
		ok(0, "%s=%llu: reopen", mode, (unsigned long long)n);
		return;
	}
	take_snap(path, &got);
	is_old = same(&got, &old_state);
	is_new = same(&got, &new_state);
	good = want == 2 ? is_old || is_new : want ? is_new : is_old;
	problems = our_check(path);
	if (!good || problems)
		ok(0, "%s=%llu: old %d new %d (want %d), replayed %u, "
		   "check %llu", mode, (unsigned long long)n, is_old, is_new,
		   want, rep, (unsigned long long)problems);
}

/* What a fault at write n must leave: 1 new, 0 old, 2 either. */
static int expect(enum io_fault_mode m, uint64_t n)
{
	switch (m) {
	case IO_FAULT_CUT_AFTER:	/* the header write is on disk */
		return n >= hdr_write;
	case IO_FAULT_TORN_WRITE:	/* half a header: its first bytes */
		return n > hdr_write ? 1 : n == hdr_write ? 2 : 0;
	default:	/* drop-unsynced, fail-write: the header lost */
		return n > hdr_write;
	}
}

static void test_cuts(const char *label)
{
	static const struct { enum io_fault_mode m; const char *name; } modes[] = {
		{ IO_FAULT_CUT_AFTER, "cut-after" },
		{ IO_FAULT_TORN_WRITE, "torn-write" },
		{ IO_FAULT_DROP_UNSYNCED, "drop-unsynced" }
	};
	struct r4_error err;
	int fails = tap_failed;

	for (size_t m = 0; m < 3; m++)
		for (uint64_t n = 1; n <= nwrites; n++) {
			struct io_fault_spec s = { .mode = modes[m].m, .n = n };

			memset(&err, 0, sizeof(err));
			run_faulty(&s, &err);
			check_point(modes[m].name, n, expect(modes[m].m, n));
		}
	ok(tap_failed == fails, "%s: cut, torn and drop-unsynced at each of "
	   "%llu writes: old or new state exactly, r4_check clean", label,
	   (unsigned long long)nwrites);
	/* the power goes at write n, which lands; of the writes since the
	 * last sync none (seed 0) or a random subset are lost: the header
	 * on disk means the whole log is (S1), the super block home means
	 * the header is (S2), the footer means the writes home are (S4) */
	fails = tap_failed;
	for (uint64_t seed = 0; seed <= 3; seed++)
		for (uint64_t n = 1; n <= nwrites; n++) {
			struct io_fault_spec s = { .mode = IO_FAULT_KEEP_SUBSET, .n = n, .seed = seed };
			char name[32];

			memset(&err, 0, sizeof(err));
			run_faulty(&s, &err);
			snprintf(name, sizeof(name), "keep-subset(seed %llu)",
				 (unsigned long long)seed);
			check_point(name, n, expect(IO_FAULT_CUT_AFTER, n));
		}
	ok(tap_failed == fails, "%s: keep-subset at each of %llu writes, "
	   "seeds 0-3: old before the header write, new from it on", label,
	   (unsigned long long)nwrites);
	fails = tap_failed;
	for (uint64_t n = 1; n <= nwrites; n++) {
		struct io_fault_spec s = { .mode = IO_FAULT_FAIL_WRITE, .n = n };

		memset(&err, 0, sizeof(err));
		if (run_faulty(&s, &err) == 0 || !err.msg[0])
			ok(0, "fail-write=%llu: commit returned an error",
			   (unsigned long long)n);
		check_point("fail-write", n, expect(IO_FAULT_FAIL_WRITE, n));
	}
	ok(tap_failed == fails, "%s: fail-write at each write: an error; the "
	   "old state before the commit point, the new one after", label);
}

/* A cut right after the journal header: committed, not written home. */
static uint64_t cut_after_header(void)
{
	struct io_fault_spec s = { .mode = IO_FAULT_CUT_AFTER, .n = hdr_write };
	struct r4_error err = { 0 };
	uint8_t h[BS];

	run_faulty(&s, &err);
	fixture_block(path, 19, h);
	return get_le64(h);
}

/* fsck.reiser4 wraps its messages at 80 columns, so a long image path
 * can split the phrase looked for: its lines are joined first. */
static int oracle_replays(const char *p, int want_clean)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "out=$(fsck.reiser4 --check -f -y '%s' "
		 "2>&1); echo \"$out\" | tr -s '\\n ' '  ' | "
		 "grep -q '1 transactions replayed' && "
		 "{ [ %d = 0 ] || echo \"$out\" | grep -q 'FS is consistent'; "
		 "} || { echo \"$out\" | sed 's/^/# /' | tail -n 25; exit 1; }",
		 p, want_clean);
	return system(cmd) == 0;
}

/* fsck.reiser4 replays our journal; its image equals ours after our
 * replay. fsck.reiser4 loads the bitmaps before it replays, so when the
 * transaction changed a bitmap its first run reports the stale in-memory
 * bitmap ("differ"); the second run, as every later one, is clean. */
static void test_oracle_replay(const char *label, int bitmap_changed)
{
	char ref[96];
	uint64_t txh = cut_after_header();
	unsigned rep = 0;
	struct snap ours, theirs;
	uint8_t a[BS], b[BS];
	struct r4_vol *vol;
	struct r4_error err = { 0 };

	ok(txh != 0, "%s: header names tx head %llu", label,
	   (unsigned long long)txh);
	is_int(pending_check(path), 1, "%s: read-only open reads through the "
	       "journal: check finds only journal-unreplayed", label);
	if (!r4_vol_open(path, R4_OPEN(R4_OPEN_RDONLY), &vol, &err)) {
		is_int(r4_vol_overlaid(vol), 1, "%s: one transaction overlaid",
		       label);
		is_u64(vol->sb.root_block, new_state.root,
		       "%s: the overlay shows the new root", label);
		tap_must(r4_vol_close(vol, NULL));
	}
	snprintf(ref, sizeof(ref), "%s.ref", path);
	copy_image(path, ref);
	ok(oracle_replays(ref, !bitmap_changed), "%s: fsck.reiser4 --check "
	   "replays our journal%s", label, bitmap_changed ? "" :
	   " and calls it consistent");
	ok(oracle_ok(ref), "%s: fsck.reiser4 again: consistent", label);
	is_int(reopen(path, &rep), 0, "%s: our replay", label);
	is_int(rep, 1, "%s: one transaction replayed", label);
	take_snap(path, &ours);
	take_snap(ref, &theirs);
	ok(same(&ours, &new_state), "%s: our replay gives the new state",
	   label);
	ok(same(&theirs, &new_state), "%s: fsck.reiser4's replay too", label);
	fixture_block(path, 17, a);
	fixture_block(ref, 17, b);
	is_mem(a, b, BS, "%s: super block bytes equal after both replays",
	       label);
	is_int(our_check(path), 0, "%s: r4_check clean after replay", label);
	ok(oracle_ok(path), "%s: fsck.reiser4 agrees after our replay",
	   label);
	unlink(ref);
}

/* A change in place only: the leaf's atime, through the journal. */
static int workload_inplace(struct r4_vol *vol, struct r4_error *err)
{
	uint8_t root[BS];
	struct io_block *b;
	struct txn *t;
	size_t off, len;
	int rc = txn_begin(vol, &t, err);

	if (rc)
		return rc;
	rc = r4_vol_read_block(vol, vol->sb.root_block, root, err);
	if (!rc && nodeptr_body(root, 0, &off))
		rc = r4i_fail(err, R4_ECORRUPT, "no nodeptr in the root");
	if (!rc)
		rc = txn_capture(t, get_le64(root + off), &b, err);
	if (rc) {
		txn_abort(t);
		return rc;
	}
	if (!fmt_node_item_body(b->data, BS, FMT_KEY_LARGE, 0, &off, &len))
		put_le32(b->data + off + 2 + 14 + 8,
			 get_le32(b->data + off + 2 + 14 + 8) + 7);
	txn_put(t, b);
	return txn_commit(t, err);
}

static void test_rounds(void)
{
	char second[96];

	test_super_first();
	test_cuts("first commit");
	test_oracle_replay("relocation", 1);

	/* the same workload again on the committed volume: the journal
	 * header and footer are not zero any more */
	snprintf(second, sizeof(second), "%s.2", pristine);
	copy_image(path, second);
	snprintf(base, sizeof(base), "%s", second);
	prepare("second commit");
	test_cuts("second commit");
	test_oracle_replay("second commit", 1);

	work = workload_inplace;
	prepare("in place");
	ok(memcmp(old_state.bitmap, new_state.bitmap, BS) == 0,
	   "in place: bitmap unchanged");
	test_cuts("in place");
	test_oracle_replay("in place", 0);
	work = workload;
	unlink(second);
}

static int workload_twice(struct r4_vol *vol, struct r4_error *err)
{
	int rc = workload(vol, err);

	return rc ? rc : workload(vol, err);
}

/* Two commits in one open: the second writes its relocated blocks and
 * its log at blocks the first one's log used (freed once applied), so
 * the first one's footer must be on disk before any of them (its last
 * sync); keep-subset at every write, seeds 0-3: the old state, the one
 * after the first commit or the one after both, r4_check clean, and
 * never the old one once the first commit's footer was written. */
static void test_two_commits(void)
{
	struct io_fault_spec count = { .mode = IO_FAULT_COUNT, .n = 0, .seed = 0 };
	struct io_fault_stats st;
	struct r4_error err = { 0 };
	struct snap mid;
	uint64_t n1, n;
	int fails = tap_failed;

	snprintf(base, sizeof(base), "%s", pristine);
	take_snap(base, &old_state);
	work = workload;
	is_int(run_faulty(&count, &err), 0, "one commit: %s", err.msg);
	io_fault_last_stats(power, &st);
	n1 = st.writes;
	take_snap(path, &mid);
	work = workload_twice;
	is_int(run_faulty(&count, &err), 0, "two commits: %s", err.msg);
	io_fault_last_stats(power, &st);
	n = st.writes;
	take_snap(path, &new_state);
	is_int(st.syncs, 10, "two commits, ten syncs (%llu writes, the "
	       "first %llu)", (unsigned long long)n, (unsigned long long)n1);
	for (uint64_t seed = 0; seed <= 3; seed++)
		for (uint64_t k = 1; k <= n; k++) {
			struct io_fault_spec s = { .mode = IO_FAULT_KEEP_SUBSET, .n = k, .seed = seed };
			unsigned rep = 0;
			int is_old, is_mid, is_new;
			uint64_t problems;

			memset(&err, 0, sizeof(err));
			run_faulty(&s, &err);
			if (reopen(path, &rep)) {
				ok(0, "keep-subset=%llu:%llu: reopen",
				   (unsigned long long)k,
				   (unsigned long long)seed);
				continue;
			}
			take_snap(path, &got);
			is_old = same(&got, &old_state);
			is_mid = same(&got, &mid);
			is_new = same(&got, &new_state);
			problems = our_check(path);
			if (problems || !(is_mid || is_new || (is_old && k < n1)))
				ok(0, "keep-subset=%llu:%llu: old %d first %d "
				   "both %d, replayed %u, check %llu",
				   (unsigned long long)k,
				   (unsigned long long)seed, is_old, is_mid,
				   is_new, rep, (unsigned long long)problems);
		}
	ok(tap_failed == fails, "two commits: keep-subset at each write, "
	   "seeds 0-3: one of the three states, r4_check clean");
	work = workload;
}

/* ---- 600 blocks in place: three wander records ---- */

/* Capture blocks start.. start+n-1 and fill block i with pat ^ i. */
static int capture_all(struct r4_vol *vol, uint64_t start, uint64_t n,
		       int pat, struct r4_error *err)
{
	struct io_block *b;
	struct txn *t;
	int rc = txn_begin(vol, &t, err);

	for (uint64_t i = 0; !rc && i < n; i++) {
		rc = txn_capture(t, start + i, &b, err);
		if (!rc) {
			memset(b->data, (int)(pat ^ (i & 0xff)), BS);
			txn_put(t, b);
		}
	}
	if (rc) {
		txn_abort(t);
		return rc;
	}
	return txn_commit(t, err);
}

static int count_bad(uint64_t start, uint64_t n, int pat)
{
	uint8_t buf[BS];
	int bad = 0;

	for (uint64_t i = 0; i < n; i++)
		if (fixture_block(path, start + i, buf) ||
		    buf[0] != (uint8_t)(pat ^ (i & 0xff)) ||
		    buf[BS - 1] != buf[0])
			bad++;
	return bad;
}

/* 600 data blocks, then all 600 changed in place: 601 overwritten. */
static int many_setup(uint64_t *start, uint64_t *writes)
{
	struct r4_error err = { 0 };
	uint8_t buf[BS];
	uint64_t got_n = 0;
	struct r4_vol *vol;
	struct txn *t;
	int rc;

	copy_image(pristine, path);
	tap_require(!r4_vol_open(path, R4_OPEN(R4_OPEN_RDWR), &vol, &err), "open: %s",
		    err.msg);
	rc = txn_begin(vol, &t, &err);
	if (!rc)
		rc = txn_alloc_run(t, 1000, 600, start, &got_n, &err);
	ok(!rc && got_n == 600, "600 contiguous blocks at %llu: %s",
	   (unsigned long long)*start, err.msg);
	for (uint64_t i = 0; !rc && i < got_n; i++) {
		memset(buf, (int)(i & 0xff), BS);
		rc = txn_write_data(t, *start + i, buf, 1, &err);
	}
	if (!rc)
		rc = txn_commit(t, &err);
	is_int(rc, 0, "allocating commit: %s", err.msg);
	rc = capture_all(vol, *start, 600, 0x80, &err);
	is_int(rc, 0, "600 captured blocks commit: %s", err.msg);
	is_u64(vol->last_commit.overwritten, 601, "overwrite set 600 + sb");
	is_u64(vol->last_commit.log_blocks, 4, "tx head + 3 wander records");
	*writes = vol->last_commit.writes;
	printf("# 600-block commit: %llu writes, %llu bytes, %llu syncs\n",
	       (unsigned long long)vol->last_commit.writes,
	       (unsigned long long)vol->last_commit.bytes,
	       (unsigned long long)vol->last_commit.syncs);
	tap_must(r4_vol_close(vol, NULL));
	is_int(count_bad(*start, 600, 0x80), 0, "every block has its new "
	       "bytes");
	return rc;
}

static void test_many(void)
{
	struct io_fault_spec cut = { .mode = IO_FAULT_CUT_AFTER, .n = 0 };
	struct r4_error err = { 0 };
	uint64_t start = 0, writes = 0;
	uint8_t h[BS], th[BS];
	struct r4_vol *vol;
	unsigned rep = 0;

	if (many_setup(&start, &writes))
		return;
	/* again, cut right after the journal header (601 wandered, 3
	 * records, the tx head, the header); the replay finishes */
	cut.n = writes - 601 - 1;
	if (open_faulty(path, &cut, &vol, &err) == 0) {
		capture_all(vol, start, 600, 0x40, &err);
		tap_must(r4_vol_close(vol, NULL));
	}
	fixture_block(path, 19, h);
	fixture_block(path, get_le64(h), th);
	is_int(get_le32(th + 16), 4, "tx head total 4");
	is_int(count_bad(start, 600, 0x80), 0, "cut before write-back: the "
	       "blocks are still old");
	is_int(reopen(path, &rep), 0, "reopen replays");
	is_int(rep, 1, "one transaction replayed");
	is_int(count_bad(start, 600, 0x40), 0, "replay wrote all 600 blocks "
	       "home");
}

/* One txn_write_data over 8 new blocks, block 3 of them with a buffer
 * from txn_new: the blocks around it go out as two writes, block 3
 * through its buffer; every block ends up with its own bytes. */
static void test_write_runs(void)
{
	struct r4_error err = { 0 };
	uint8_t *buf = malloc(8 * BS);
	uint64_t start = 0, ngot = 0, writes = 0;
	struct r4_vol *vol;
	struct io_block *b;
	struct txn *t;
	int rc;

	tap_require(buf, "out of memory");
	copy_image(pristine, path);
	tap_require(!r4_vol_open(path, R4_OPEN(R4_OPEN_RDWR), &vol, &err),
		    "open: %s", err.msg);
	for (int i = 0; i < 8; i++)
		memset(buf + i * BS, 0x30 ^ i, BS);
	rc = txn_begin(vol, &t, &err);
	if (!rc)
		rc = txn_alloc_run(t, 1000, 8, &start, &ngot, &err);
	ok(!rc && ngot == 8, "8 contiguous blocks at %llu: %s",
	   (unsigned long long)start, err.msg);
	if (!rc)
		rc = txn_new(t, start + 3, &b, &err);
	if (!rc) {
		txn_put(t, b);
		writes = vol->dev->writes;
		rc = txn_write_data(t, start, buf, 8, &err);
		is_u64(vol->dev->writes - writes, 2, "blocks 0-2 and 4-7 in "
		       "one write each");
	}
	if (!rc)
		rc = txn_commit(t, &err);
	else
		txn_abort(t);
	is_int(rc, 0, "commit: %s", err.msg);
	tap_must(r4_vol_close(vol, NULL));
	is_int(count_bad(start, 8, 0x30), 0, "every block has its own bytes");
	free(buf);
}

/* Raw buffers (txn_new_raw) filled with 0xa5 by the cache, 40 new
 * blocks written whole (0x11) two at a time behind, the n-th write of
 * the run failing: a txn_new_raw whose write-behind fails gives no
 * buffer, and the later writes-behind (the callers go on, as the tree
 * writer does, keeping the first error) must write zeros there, never
 * the buffer's old bytes; 0 when no block has 0xa5. Counts the failed
 * txn_new_raw calls in *failed. */
static int raw_round(uint64_t n, unsigned *failed)
{
	struct io_fault_spec s = { .mode = IO_FAULT_FAIL_WRITE, .n = n };
	struct r4_error err = { 0 };
	uint64_t start = 0, ngot = 0;
	uint8_t buf[BS];
	struct r4_vol *vol;
	struct io_block *b;
	struct txn *t;
	int bad = 0;

	copy_image(pristine, path);
	tap_require(!open_faulty(path, &s, &vol, &err), "open: %s", err.msg);
	vol->cache.raw_fill = 0xa5;
	tap_require(!txn_begin(vol, &t, &err), "begin: %s", err.msg);
	tap_require(!txn_write_behind(t, 2, &err) &&
		    !txn_alloc_run(t, 1000, 40, &start, &ngot, &err) &&
		    ngot == 40, "40 blocks: %s", err.msg);
	for (uint64_t i = 0; i < 40; i++) {
		if (txn_new_raw(t, start + i, &b, &err)) {
			(*failed)++;
			continue;
		}
		memset(b->data, 0x11, BS);
		txn_put(t, b);
	}
	txn_abort(t);
	r4_vol_close(vol, NULL);
	for (uint64_t i = 0; i < 40; i++)
		if (!fixture_block(path, start + i, buf) && buf[0] == 0xa5)
			bad++;
	return bad;
}

static void test_raw_failed(void)
{
	unsigned failed = 0;
	int bad = 0;

	for (uint64_t n = 1; n <= 30; n++)
		bad += raw_round(n, &failed);
	ok(failed > 0, "a write-behind failed under txn_new_raw (%u times)",
	   failed);
	is_int(bad, 0, "no block written with a raw buffer's old bytes");
}

/* The tree writer's pattern (tree_mod): 64 node blocks allocated in a
 * scope side by side, each given a buffer (txn_new) and let go, twice
 * (the second round rewrites them in place, as txn_owns_in allows), the
 * ring 8 long. Blocks written behind leave the hash with their scope:
 * txn_owns_in must still say so, and each round must go out gathered in
 * runs, a flush taking the 4 it pops with their ready neighbours (7
 * or 8 writes a round; 12 at most here: 16 when the neighbours are not
 * gathered, 64 when the blocks go one by one); every block ends with
 * the second round's bytes. */
static void test_scope_behind(void)
{
	struct r4_error err = { 0 };
	uint64_t blk[64], writes[2] = { 0, 0 }, lost = 0;
	uint8_t buf[BS];
	struct r4_vol *vol;
	struct io_block *b;
	struct txn *t;
	uint32_t scope;
	int rc, bad = 0;

	copy_image(pristine, path);
	tap_require(!r4_vol_open(path, R4_OPEN(R4_OPEN_RDWR), &vol, &err),
		    "open: %s", err.msg);
	rc = txn_begin(vol, &t, &err);
	tap_require(!rc && !txn_write_behind(t, 8, &err), "begin: %s",
		    err.msg);
	scope = txn_scope_begin(t);
	for (int i = 0; !rc && i < 64; i++)
		rc = txn_alloc_in(t, scope, i ? blk[i - 1] + 1 : 1000, &blk[i],
				  &err);
	ok(!rc && blk[63] == blk[0] + 63, "64 blocks side by side in a "
	   "scope: %s", err.msg);
	for (int r = 0; !rc && r < 2; r++) {
		uint64_t w = vol->dev->writes;

		for (int i = 0; !rc && i < 64; i++) {
			lost += !txn_owns_in(t, blk[i], scope);
			rc = txn_new(t, blk[i], &b, &err);
			if (rc)
				break;
			memset(b->data, 0x50 + r, BS);
			txn_put(t, b);
		}
		writes[r] = vol->dev->writes - w;
	}
	is_int(rc, 0, "two rounds of txn_new: %s", err.msg);
	is_u64(lost, 0, "each block still the scope's before its rewrite");
	ok(writes[0] && writes[0] <= 12 && writes[1] && writes[1] <= 12,
	   "written behind in runs: %llu and %llu writes for 64 blocks",
	   (unsigned long long)writes[0], (unsigned long long)writes[1]);
	is_u64(txn_scope_blocks(t, scope), 64, "the scope holds the 64");
	if (!rc)
		rc = txn_commit(t, &err);
	else
		txn_abort(t);
	is_int(rc, 0, "commit: %s", err.msg);
	tap_must(r4_vol_close(vol, NULL));
	for (int i = 0; i < 64; i++)
		bad += fixture_block(path, blk[i], buf) || buf[0] != 0x51 ||
		       buf[BS - 1] != 0x51;
	is_int(bad, 0, "every block has the second round's bytes");
}

/* ---- spill (txn_spill) ---- */

/* One transaction of 16 new blocks (pattern pat), the ring two long:
 * the blocks let go wait in the scratch file, the image's blocks keep
 * their bytes; reads through the cache (io_cache_get, io_cache_read)
 * see the new bytes; then commit (every block home) or abort (the
 * image as it was, the cache forgets the file's bytes). */
static void spill_round(int commit, int pat)
{
	struct r4_error err = { 0 };
	uint8_t buf[BS], old[BS], *run = malloc(16 * BS);
	uint64_t start = 0, ngot = 0;
	struct r4_vol *vol;
	struct io_block *b;
	struct txn *t;
	int rc, same = 1;

	tap_require(run, "out of memory");
	tap_require(!r4_vol_open(path, R4_OPEN(R4_OPEN_RDWR), &vol, &err),
		    "open: %s", err.msg);
	rc = txn_begin(vol, &t, &err);
	if (!rc)
		rc = txn_spill(t, 2, &err);
	if (!rc)
		rc = txn_alloc_run(t, 1000, 16, &start, &ngot, &err);
	ok(!rc && ngot == 16, "16 contiguous blocks at %llu: %s",
	   (unsigned long long)start, err.msg);
	fixture_block(path, start, old);
	for (uint64_t i = 0; !rc && i < ngot; i++) {
		rc = txn_new(t, start + i, &b, &err);
		if (!rc) {
			memset(b->data, pat ^ (int)i, BS);
			txn_put(t, b);
		}
	}
	is_int(rc, 0, "16 new blocks: %s", err.msg);
	ok(txn_spilled(t) >= 8, "%llu of them in the scratch file",
	   (unsigned long long)txn_spilled(t));
	for (uint64_t i = 0; i < ngot; i++)
		same &= fixture_block(path, start + i, buf) == 0 &&
			!memcmp(buf, old, BS);
	ok(same, "none of them written to the image");
	rc = r4_vol_read_block(vol, start, buf, &err);
	ok(!rc && buf[0] == pat && buf[BS - 1] == pat,
	   "a spilled block reads with its new bytes: %s", err.msg);
	rc = io_cache_read(&vol->cache, start, 16, run, &err);
	ok(!rc && run[5 * BS] == (pat ^ 5) && run[16 * BS - 1] == (pat ^ 15),
	   "io_cache_read of all 16 gets the new bytes: %s", err.msg);
	if (commit) {
		rc = txn_commit(t, &err);
		is_int(rc, 0, "commit: %s", err.msg);
	} else {
		txn_abort(t);
		rc = r4_vol_read_block(vol, start, buf, &err);
		ok(!rc && !memcmp(buf, old, BS), "after the abort the block "
		   "reads as the image holds it: %s", err.msg);
	}
	tap_must(r4_vol_close(vol, NULL));
	if (commit)
		is_int(count_bad(start, 16, pat), 0, "every block home with "
		       "its own bytes");
	same = 1;
	for (uint64_t i = 0; !commit && i < ngot; i++)
		same &= fixture_block(path, start + i, buf) == 0 &&
			!memcmp(buf, old, BS);
	if (!commit)	/* committed: every block's bytes checked above */
		ok(same, "aborted: the image's blocks there as they were");
	free(run);
}

/* A spilled block freed, allocated again and written by
 * txn_write_data, then captured: the capture reads the new bytes from
 * the volume, not the dead node's from the scratch file; committed,
 * the block holds them. */
static void spill_reuse(void)
{
	struct r4_error err = { 0 };
	uint8_t data[BS], buf[BS];
	uint64_t start = 0, ngot = 0, again = 0;
	struct r4_vol *vol;
	struct io_block *b = NULL;
	struct txn *t;
	int rc;

	copy_image(pristine, path);
	tap_require(!r4_vol_open(path, R4_OPEN(R4_OPEN_RDWR), &vol, &err),
		    "open: %s", err.msg);
	rc = txn_begin(vol, &t, &err);
	if (!rc)
		rc = txn_spill(t, 2, &err);
	if (!rc)
		rc = txn_alloc_run(t, 1000, 16, &start, &ngot, &err);
	for (uint64_t i = 0; !rc && i < ngot; i++) {
		rc = txn_new(t, start + i, &b, &err);
		if (!rc) {
			memset(b->data, 0x71, BS);
			txn_put(t, b);
		}
	}
	ok(!rc && txn_spilled(t) >= 8, "16 new blocks, the first ones "
	   "spilled: %s", err.msg);
	if (!rc)
		rc = txn_free(t, start, 1, &err);
	if (!rc)
		rc = txn_alloc(t, start, &again, &err);
	ok(!rc && again == start, "the first, freed, allocated again "
	   "(%llu): %s", (unsigned long long)again, err.msg);
	memset(data, 0x22, BS);
	if (!rc)
		rc = txn_write_data(t, start, data, 1, &err);
	if (!rc)
		rc = txn_capture(t, start, &b, &err);
	ok(!rc && b->data[0] == 0x22 && b->data[BS - 1] == 0x22,
	   "captured after txn_write_data, it holds the bytes written "
	   "(0x%02x): %s", rc ? 0 : b->data[0], err.msg);
	if (!rc) {
		txn_put(t, b);
		rc = txn_commit(t, &err);
	} else {
		txn_abort(t);
	}
	is_int(rc, 0, "commit: %s", err.msg);
	tap_must(r4_vol_close(vol, NULL));
	ok(fixture_block(path, start, buf) == 0 && buf[0] == 0x22 &&
	   buf[BS - 1] == 0x22, "committed: the block holds them");
}

static void test_spill(void)
{
	copy_image(pristine, path);
	spill_round(0, 0x50);
	take_snap(pristine, &old_state);
	take_snap(path, &got);
	ok(same(&got, &old_state), "an aborted spilling transaction: "
	   "nothing reached the image");
	spill_round(1, 0x60);
	spill_reuse();
}

/* ---- abort and sticky failure ---- */

static void test_abort(void)
{
	struct io_fault_spec fail = { .mode = IO_FAULT_FAIL_WRITE, .n = 3 };
	struct r4_error err = { 0 };
	uint8_t before[BS], after[BS];
	uint64_t a = 0, root, leaf;
	struct fmt_format40 sb;
	struct r4_vol *vol;
	struct io_block *b;
	struct txn *t;
	size_t off;
	int rc;

	copy_image(pristine, path);
	tap_require(!r4_vol_open(path, R4_OPEN(R4_OPEN_RDWR), &vol, &err), "open: %s",
		    err.msg);
	sb = vol->sb;
	root = sb.root_block;
	r4_vol_read_block(vol, root, before, &err);
	nodeptr_body(before, 0, &off);
	leaf = get_le64(before + off);
	r4_vol_read_block(vol, leaf, before, &err);
	rc = txn_begin(vol, &t, &err);
	if (!rc)
		rc = txn_alloc(t, 100, &a, &err);
	if (!rc)
		rc = txn_capture(t, leaf, &b, &err);
	if (!rc) {
		memset(b->data, 0xee, BS);
		txn_put(t, b);
		rc = txn_free(t, root, 1, &err);
	}
	is_int(rc, 0, "abort: a transaction with work: %s", err.msg);
	is_int(space_test(&vol->space, a, &err), 1, "allocated: used");
	is_int(txn_free(t, root, 1, &err), R4_EINVAL, "double free refused");
	txn_set_root(t, a, 2);
	txn_add_files(t, 3);
	txn_abort(t);
	is_int(space_test(&vol->space, a, &err), 0, "abort frees it again");
	is_int(space_test(&vol->space, root, &err), 1, "the root is used");
	r4_vol_read_block(vol, leaf, after, &err);
	is_mem(after, before, BS, "the captured leaf reads as before");
	ok(!memcmp(&vol->sb, &sb, sizeof(sb)), "super block unchanged");
	tap_must(r4_vol_close(vol, NULL));
	take_snap(pristine, &old_state);
	take_snap(path, &got);
	ok(same(&got, &old_state), "nothing reached the image");

	rc = open_faulty(path, &fail, &vol, &err);
	tap_require(rc == 0, "open: %s", err.msg);
	ok(workload(vol, &err) != 0, "a failed write fails the commit: %s",
	   err.msg);
	memset(&err, 0, sizeof(err));
	is_int(txn_begin(vol, &t, &err), -EIO, "then the handle is sticky: "
	       "%s", err.msg);
	ok(!memcmp(&vol->sb, &sb, sizeof(sb)), "in-memory super block as "
	   "before the failed commit");
	tap_must(r4_vol_close(vol, NULL));
}

/* ---- journals that lie ---- */

static void hostile(const char *name, uint64_t blk, size_t off, int width,
		    uint64_t val, const char *want)
{
	struct r4_error err = { 0 };
	struct r4_vol *vol = NULL;
	char needle[64];
	uint8_t buf[BS];
	int rc;

	cut_after_header();
	fixture_block(path, blk, buf);
	if (width == 8)
		put_le64(buf + off, val);
	else
		put_le32(buf + off, (uint32_t)val);
	poke_block(path, blk, buf);
	rc = r4_vol_open(path, R4_OPEN(R4_OPEN_RDWR), &vol, &err);
	ok(rc != 0 && !vol, "%s: read-write open fails", name);
	snprintf(needle, sizeof(needle), "block %llu", (unsigned long long)
		 (want ? strtoull(want, NULL, 10) : blk));
	ok(strstr(err.msg, needle) != NULL, "%s: '%s' names %s", name,
	   err.msg, needle);
	if (vol)
		tap_must(r4_vol_close(vol, NULL));
	memset(&err, 0, sizeof(err));
	rc = r4_vol_open(path, R4_OPEN(R4_OPEN_RDONLY), &vol, &err);
	ok(rc == 0 && r4_vol_journal_msg(vol)[0],
	   "%s: read-only open still works, without the overlay", name);
	if (!rc)
		tap_must(r4_vol_close(vol, NULL));
}

/* total 3 in the tx head and its one record: the ring is too short */
static void fewer_records(uint64_t txh, uint64_t rec)
{
	struct r4_error err = { 0 };
	struct r4_vol *vol = NULL;
	uint8_t buf[BS];
	char needle[64];

	cut_after_header();
	fixture_block(path, txh, buf);
	put_le32(buf + 16, 3);
	poke_block(path, txh, buf);
	fixture_block(path, rec, buf);
	put_le32(buf + 16, 3);
	poke_block(path, rec, buf);
	ok(r4_vol_open(path, R4_OPEN(R4_OPEN_RDWR), &vol, &err) != 0,
	   "fewer records than total: refused");
	snprintf(needle, sizeof(needle), "fewer wander records than the tx "
		 "head's total (block %llu)", (unsigned long long)txh);
	ok(strstr(err.msg, needle) != NULL, "fewer records: '%s'", err.msg);
	tap_must(r4_vol_close(vol, NULL));
}

static void test_hostile(void)
{
	uint8_t h[BS], th[BS];
	uint64_t txh, rec;
	char s[32], r[32];

	snprintf(base, sizeof(base), "%s", pristine);
	prepare("journal to damage");
	txh = cut_after_header();
	fixture_block(path, txh, th);
	rec = get_le64(th + 32);
	snprintf(s, sizeof(s), "%llu", (unsigned long long)txh);
	snprintf(r, sizeof(r), "%llu", (unsigned long long)rec);
	hostile("tx head cycle", txh, 24, 8, txh, NULL);
	hostile("record count mismatch", txh, 16, 4, 3, r);
	hostile("record ring cycle", rec, 24, 8, rec, NULL);
	hostile("pair past the end", rec, 32, 8, 1ull << 40, NULL);
	hostile("tx head magic", txh, 0, 8, 0, NULL);
	fewer_records(txh, rec);
	(void)h;
	(void)s;
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	int fd;

	if (fixture_mkfs("", "16M", pristine)) {
		tap_skip(1, "mkfs.reiser4 not installed");
		return tap_done();
	}
	snprintf(path, sizeof(path), "%s/r4txnXXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	fd = mkstemp(path);
	tap_require(fd >= 0, "mkstemp %s failed", path);
	close(fd);
	test_commit();
	test_rounds();
	test_two_commits();
	test_many();
	test_write_runs();
	test_raw_failed();
	test_scope_behind();
	test_spill();
	test_abort();
	test_hostile();
	io_fault_put(power);
	unlink(path);
	unlink(pristine);
	return tap_done();
}
