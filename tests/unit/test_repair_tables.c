/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the repair builds the whole volume's tables (about 170 bytes a
 * file: 1.6 GiB at 10^7 files) only when a fix needs them
 * (libimage/repair/repair.c). A clean volume, and one whose only
 * problems are space and counters, are repaired over the bounded check
 * alone (table_checks 0: the space pass takes the count of objects and
 * the largest object id from the check), and so is a wrong link count,
 * whose fix the bounded check lists (libimage/check/fixes.c), and
 * damage the tree rebuild mends when the bounded check's list is whole
 * (the rebuild takes its objects; the list says no key move), and a
 * preen that stops at tree damage; other damage builds them
 * (table_checks > 0). */
#include "config.h"
#include <fcntl.h>
#include "tap.h"
#include "edit_util.h"
#include "r4/repair.h"
#include "format/journal.h"
#include "format/node.h"
#include "format/super.h"
#include "libimage/obj/write.h"

#define BS 4096u	/* r4_mkfs's block size */

/* r4_fsck in mode (R4_FSCK_*); fix_bytes: the list of fixes' budget
 * (0: the default). */
static int fsck_mode(const char *img, struct r4_fsck_report *rep,
		     int mode, size_t fix_bytes)
{
	struct r4_fsck_opts o;
	struct r4_error err = { 0, "", 0 };
	char path[512];
	int rc;

	memset(&o, 0, sizeof(o));
	o.mode = mode;
	o.repair.check.fix_bytes = fix_bytes;
	snprintf(path, sizeof(path), "%s/%s", eu_dir, img);
	rc = r4_fsck(path, &o, rep, &err);
	if (rc)
		printf("# r4_fsck: %d %s\n", rc, err.msg);
	return rc;
}

/* r4_fsck -y; fix_bytes: the list of fixes' budget (0: the default). */
static int fsck_fix_budget(const char *img, struct r4_fsck_report *rep,
			   size_t fix_bytes)
{
	return fsck_mode(img, rep, R4_FSCK_FIX, fix_bytes);
}

static int fsck_fix(const char *img, struct r4_fsck_report *rep)
{
	return fsck_fix_budget(img, rep, 0);
}

/* Little-endian u64 at byte off of block blk. */
static uint64_t get64(int fd, uint64_t blk, unsigned off)
{
	uint8_t b[8];
	uint64_t v = 0;

	tap_require(pread(fd, b, 8, (off_t)(blk * BS + off)) == 8,
		    "pread");
	for (int i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

static void put64(int fd, uint64_t blk, unsigned off, uint64_t v)
{
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	tap_require(pwrite(fd, b, 8, (off_t)(blk * BS + off)) == 8,
		    "pwrite");
}

static int open_img(const char *img)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", eu_dir, img);
	fd = open(path, O_RDWR);
	tap_require(fd >= 0, "open %s", path);
	return fd;
}

/* Make directory /d (an object id past the first free one). */
static void mkdir_d(const char *img)
{
	struct r4_error err = { 0, "", 0 };
	struct r4_vol *v;
	struct r4_txn *t;
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", eu_dir, img);
	tap_require(!r4_vol_open(path, R4_OPEN(R4_OPEN_RDWR), &v, &err) &&
		    !r4_txn_begin(v, &t, &err) &&
		    !r4_mkdir(t, "/d", &(struct r4_attr){ .mode = 0755 },
			      &err) && !r4_txn_commit(t, &err),
		    "mkdir /d: %s", err.msg);
	eu_close(v);
}

/* /d's nlink set to 7 in its stat data (through a transaction). */
static void nlink_d(const char *img)
{
	struct r4_error err = { 0, "", 0 };
	struct r4_objref ref;
	struct r4_vol *v;
	struct r4_txn *t;
	struct obj_sd sd;
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", eu_dir, img);
	tap_require(!r4_vol_open(path, R4_OPEN(R4_OPEN_RDWR), &v, &err) &&
		    !r4_lookup(v, "/d", &ref, &err) &&
		    !r4_txn_begin(v, &t, &err) &&
		    !obj_sd_get(v, &ref, &sd, &err), "/d: %s", err.msg);
	sd.st.nlink = 7;
	tap_require(!obj_sd_write(t, &ref, &sd.st, 0, &err) &&
		    !r4_txn_commit(t, &err), "nlink of /d: %s", err.msg);
	obj_sd_put(&sd);
	eu_close(v);
}

int main(void)
{
	struct r4_fsck_report rep;
	uint64_t sb = fmt_blk_format40(BS), root;
	uint64_t jf = fmt_blk_journal_footer(BS);
	int fd;

	eu_init("test_repair_tables");
	tap_require(eu_mkfs("v.img", 64, "") == 0, "r4_mkfs");

	/* clean: the bounded check alone */
	if (ok(fsck_fix("v.img", &rep) == 0, "r4_fsck -y of a clean volume"))
		ok(rep.outcome == R4_FSCK_REPAIRED &&
		   rep.repair.found.problems == 0 &&
		   rep.repair.table_checks == 0 && rep.repair.rounds == 1,
		   "clean: no problem, one check, no tables (tables %llu, "
		   "rounds %llu)",
		   (unsigned long long)rep.repair.table_checks,
		   (unsigned long long)rep.repair.rounds);

	/* a wrong file count: the space pass fixes it without tables */
	fd = open_img("v.img");
	put64(fd, sb, FMT_FORMAT40_OFF_FILE_COUNT, 1000);
	close(fd);
	if (ok(fsck_fix("v.img", &rep) == 0, "r4_fsck -y, file count"))
		ok(rep.repair.found_by_code[R4_CHK_FILE_COUNT] == 1 &&
		   rep.repair.left.problems == 0 &&
		   rep.repair.actions > 0 &&
		   rep.repair.table_checks == 0,
		   "file count: fixed without tables (found %llu, left %llu, "
		   "tables %llu)",
		   (unsigned long long)rep.repair.found.problems,
		   (unsigned long long)rep.repair.left.problems,
		   (unsigned long long)rep.repair.table_checks);
	ok(eu_check("v.img"), "file count: r4_check is clean after");

	/* the next object id set back to /d's: raised past the largest id
	 * the bounded check saw, without tables */
	mkdir_d("v.img");
	fd = open_img("v.img");
	/* the super block's and the journal footer's (the check takes
	 * the larger) */
	put64(fd, sb, FMT_FORMAT40_OFF_NEXT_OID, get64(fd, sb,
			FMT_FORMAT40_OFF_NEXT_OID) - 1);
	if (get64(fd, jf, FMT_JFOOTER_OFF_LAST_FLUSHED))
		put64(fd, jf, FMT_JFOOTER_OFF_NEXT_OID,
		      get64(fd, sb, FMT_FORMAT40_OFF_NEXT_OID));
	close(fd);
	if (ok(fsck_fix("v.img", &rep) == 0, "r4_fsck -y, next object id"))
		ok(rep.repair.found_by_code[R4_CHK_OID] == 1 &&
		   rep.repair.left.problems == 0 &&
		   rep.repair.table_checks == 0,
		   "next object id: fixed without tables (found %llu, left "
		   "%llu, tables %llu)",
		   (unsigned long long)rep.repair.found.problems,
		   (unsigned long long)rep.repair.left.problems,
		   (unsigned long long)rep.repair.table_checks);
	ok(eu_check("v.img"), "next object id: r4_check is clean after");

	/* /d's nlink wrong: set from the bounded check's list */
	nlink_d("v.img");
	if (ok(fsck_fix("v.img", &rep) == 0, "r4_fsck -y, nlink"))
		ok(rep.repair.found_by_code[R4_CHK_NLINK] == 1 &&
		   rep.repair.found.problems == 1 &&
		   rep.repair.left.problems == 0 &&
		   rep.repair.actions == 1 &&
		   rep.repair.table_checks == 0,
		   "nlink: fixed without tables (found %llu, left %llu, "
		   "actions %llu, tables %llu)",
		   (unsigned long long)rep.repair.found.problems,
		   (unsigned long long)rep.repair.left.problems,
		   (unsigned long long)rep.repair.actions,
		   (unsigned long long)rep.repair.table_checks);
	ok(eu_check("v.img"), "nlink: r4_check is clean after");

	/* the same with a list of fixes' budget of one byte: past it, the
	 * round's fixes come from the tables (and the checks after them
	 * build them too) */
	nlink_d("v.img");
	if (ok(fsck_fix_budget("v.img", &rep, 1) == 0,
	       "r4_fsck -y, nlink, tiny budget"))
		ok(rep.repair.found_by_code[R4_CHK_NLINK] == 1 &&
		   rep.repair.found.problems == 1 &&
		   rep.repair.left.problems == 0 &&
		   rep.repair.actions == 1 &&
		   rep.repair.table_checks >= 1,
		   "nlink, tiny budget: fixed over the tables (found %llu, "
		   "left %llu, actions %llu, tables %llu)",
		   (unsigned long long)rep.repair.found.problems,
		   (unsigned long long)rep.repair.left.problems,
		   (unsigned long long)rep.repair.actions,
		   (unsigned long long)rep.repair.table_checks);
	ok(eu_check("v.img"), "nlink, tiny budget: r4_check is clean after");

	/* a root node with its magic zeroed: preen stops at the tree
	 * damage, having changed nothing, and nothing reads the tables
	 * then: none built */
	fd = open_img("v.img");
	root = get64(fd, sb, FMT_FORMAT40_OFF_ROOT_BLOCK);
	put64(fd, root, FMT_NODE_OFF_MAGIC, 0);
	close(fd);
	if (ok(fsck_mode("v.img", &rep, R4_FSCK_PREEN, 0) == 0,
	       "r4_fsck -p, root node"))
		ok(rep.repair.found.problems > 0 && !rep.repair.rebuilt &&
		   rep.repair.tree_damaged && rep.repair.actions == 0 &&
		   rep.repair.table_checks == 0,
		   "root node, preen: stopped, no tables (found %llu, "
		   "actions %llu, tables %llu)",
		   (unsigned long long)rep.repair.found.problems,
		   (unsigned long long)rep.repair.actions,
		   (unsigned long long)rep.repair.table_checks);

	/* the same with -y: the tree rebuild takes what
	 * it reads of the check from the bounded one (its objects kept in
	 * key order, no key move: repair.c rebuild_listed), and the
	 * checks after it are bounded again: no tables at all */
	if (ok(fsck_fix("v.img", &rep) == 0, "r4_fsck -y, root node"))
		ok(rep.repair.found.problems > 0 && rep.repair.rebuilt &&
		   rep.repair.rounds >= 2 && rep.repair.table_checks == 0,
		   "root node: the rebuild reads no tables "
		   "(found %llu, rounds %llu, tables %llu)",
		   (unsigned long long)rep.repair.found.problems,
		   (unsigned long long)rep.repair.rounds,
		   (unsigned long long)rep.repair.table_checks);
	ok(eu_check("v.img"), "root node: r4_check is clean after");

	eu_fini();
	return tap_done();
}
