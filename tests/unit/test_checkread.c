/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the checker's batched node reads (libimage/check/noderead.c)
 * on hostile pointers. A volume of 4,000 small files (leaves in a row
 * under each twig) is checked through a device that records every
 * read: clean, the reads are far fewer than the nodes; with a twig's
 * pointers made a row that runs past the volume's last block (the file
 * is longer than the volume), no read reaches past that block and the
 * pointers past it are reported; with a second twig pointing into the
 * first twig's row, the block is reported as referenced again and not
 * walked twice. */
#include "config.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tap.h"
#include <errno.h>
#include "r4/check.h"
#include "libimage/vol/volume.h"
#include "libimage/io/dev.h"
#include "format/node.h"
#include "format/item.h"

#define BS 4096

/* The recording device: the file backend's ops with pread wrapped. */
static const struct io_ops *file_ops;
static struct io_ops rec_ops;
static uint64_t nreads, max_end, watch, watch_len, row_tries;
static int fail_rows;	/* reads of more than a block fail (EIO) */

static int rec_pread(struct io_dev *dev, void *buf, size_t len, uint64_t off)
{
	if (len > BS)
		row_tries++;
	if (fail_rows && len > BS)
		return -EIO;
	nreads++;
	if (off + len > max_end)
		max_end = off + len;
	if (off == watch)
		watch_len = len;
	return file_ops->pread(dev, buf, len, off);
}

struct found {
	int twice, outside;
	uint64_t twice_blk, outside_min;
};

static void on_problem(void *ctx, const struct r4_check_problem *p)
{
	struct found *f = ctx;

	printf("# %s: %s\n", r4_check_code_name(p->code), p->msg);
	if (p->code == R4_CHK_NODE_TWICE) {
		f->twice++;
		f->twice_blk = p->block;
	}
	if (p->code == R4_CHK_NODE_BLOCK) {	/* p->block: the parent */
		unsigned long long b;

		f->outside++;
		if (sscanf(p->msg, "node pointer to block %llu", &b) == 1 &&
		    (!f->outside_min || b < f->outside_min))
			f->outside_min = b;
	}
}

/* Check img through the recording device; 0 or the error. */
static int check(const char *img, struct r4_check_report *rep,
		 struct found *f)
{
	struct r4_check_opts o = { 0 };
	struct r4_error err = { 0, "", 0 };
	struct r4_vol *v;
	int rc;

	memset(f, 0, sizeof(*f));
	o.problem = on_problem;
	o.problem_ctx = f;
	if (r4_vol_open(img, R4_OPEN(R4_OPEN_RDONLY), &v, &err)) {
		printf("# open: %s\n", err.msg);
		return -1;
	}
	file_ops = v->dev->ops;
	rec_ops = *file_ops;
	rec_ops.pread = rec_pread;
	v->dev->ops = &rec_ops;
	nreads = max_end = watch_len = row_tries = 0;
	rc = r4_check(v, &o, rep, &err);
	if (rc)
		printf("# r4_check: %s\n", err.msg);
	v->dev->ops = file_ops;
	r4_vol_close(v, NULL);
	return rc;
}

static void block_io(const char *img, uint64_t blk, uint8_t *buf, int wr)
{
	int fd = open(img, wr ? O_RDWR : O_RDONLY);
	ssize_t n;

	tap_require(fd >= 0, "open %s", img);
	n = wr ? pwrite(fd, buf, BS, (off_t)(blk * BS)) :
		 pread(fd, buf, BS, (off_t)(blk * BS));
	close(fd);
	tap_require(n == BS, "block %llu of %s", (unsigned long long)blk,
		    img);
}

/* The body offset of node pointer k (counting node pointers only) of
 * node, and its child; 0 when there is no such pointer. */
static size_t nodeptr(const uint8_t *node, unsigned k, uint64_t *child)
{
	struct fmt_node_header nh;
	struct fmt_item_header ih;

	if (fmt_node_header_decode(node, BS, &nh))
		return 0;
	for (unsigned i = 0; i < nh.nr_items; i++) {
		size_t off, len;

		if (fmt_node_ih_decode(node, BS, FMT_KEY_LARGE, i, &ih) ||
		    ih.plugin_id != FMT_ITEM_NODEPTR40 || k--)
			continue;
		if (fmt_node_item_body(node, BS, FMT_KEY_LARGE, i, &off,
				       &len) ||
		    fmt_nodeptr40_decode(node + off, len, child))
			return 0;
		return off;
	}
	return 0;
}

static void copy(const char *from, const char *to, uint64_t extra)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && truncate -s +%llu '%s'",
		 from, to, (unsigned long long)extra, to);
	tap_require(system(cmd) == 0, "%s", cmd);
}

/* Build the volume of 4,000 small files in dir/src; the image is
 * dir/good.img, sized so the end of the volume is free. */
static void make_volume(const char *dir)
{
	char path[512], cmd[600];

	snprintf(path, sizeof(path), "%s/src", dir);
	tap_require(mkdir(path, 0755) == 0, "mkdir %s", path);
	for (int i = 0; i < 4000; i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/src/file_%04d", dir, i);
		f = fopen(path, "w");
		tap_require(f != NULL, "create %s", path);
		fprintf(f, "%0*d\n", 50 + i % 200, i);
		fclose(f);
	}
	snprintf(cmd, sizeof(cmd), "r4pack create -q -s 64M '%s/src' "
		 "'%s/good.img'", dir, dir);
	tap_require(system(cmd) == 0, "%s", cmd);
}

int main(void)
{
	char dir[] = "r4chkread.XXXXXX", good[64], bad[64];
	uint8_t root[BS], twa[BS], twb[BS];
	struct r4_check_report rep;
	uint64_t tw[2], ch[4], last, clean_nodes, lost;
	struct found f;
	struct r4_vol *v;
	struct r4_error err = { 0, "", 0 };
	size_t off[4], offb;
	int row = 1, rc;

	plan(10);
	tap_require(mkdtemp(dir) != NULL, "a temporary folder");
	make_volume(dir);
	snprintf(good, sizeof(good), "%s/good.img", dir);
	snprintf(bad, sizeof(bad), "%s/bad.img", dir);
	tap_require(!r4_vol_open(good, R4_OPEN(R4_OPEN_RDONLY), &v, &err),
		    "open: %s", err.msg);
	last = v->sb.block_count;
	tap_require(v->sb.tree_height == 3, "a tree of 3 levels (%u)",
		    v->sb.tree_height);
	block_io(good, v->sb.root_block, root, 0);
	r4_vol_close(v, NULL);
	tap_require(nodeptr(root, 0, &tw[0]) && nodeptr(root, 1, &tw[1]),
		    "two twigs");
	block_io(good, tw[0], twa, 0);
	block_io(good, tw[1], twb, 0);
	for (unsigned k = 0; k < 4; k++) {
		off[k] = nodeptr(twa, k, &ch[k]);
		row = row && off[k] && (!k || ch[k] == ch[k - 1] + 1);
	}
	tap_require(row, "the first twig's first 4 leaves in a row");

	/* clean: batched */
	ok(check(good, &rep, &f) == 0 && rep.problems == 0, "clean");
	clean_nodes = rep.nodes;
	ok(nreads < rep.nodes / 4 && max_end <= last * BS,
	   "%llu reads for %llu nodes, none past the volume",
	   (unsigned long long)nreads, (unsigned long long)rep.nodes);

	/* the first twig's first pointers: last-2, last-1, last, last+1,
	 * a row across the end of the volume, in a longer file */
	copy(good, bad, 16 * BS);
	watch = (last - 2) * BS;
	for (unsigned k = 0; k < 4; k++)
		fmt_nodeptr40_encode(last - 2 + k, twa + off[k]);
	block_io(bad, tw[0], twa, 1);
	ok(check(bad, &rep, &f) == 0, "past the end: checked");
	ok(f.outside == 2 && f.outside_min == last,
	   "the 2 pointers past the end are reported (%d, first %llu)",
	   f.outside, (unsigned long long)f.outside_min);
	ok(max_end <= last * BS && watch_len == 2 * BS,
	   "the row is read, up to the volume's last block (%llu bytes "
	   "from block %llu; reads end by %llu, the volume at %llu)",
	   (unsigned long long)watch_len, (unsigned long long)(last - 2),
	   (unsigned long long)max_end, (unsigned long long)(last * BS));

	/* the second twig's first pointer to the first twig's last leaf,
	 * in the row read last at that level */
	block_io(good, tw[0], twa, 0);
	for (unsigned k = 0; nodeptr(twa, k, &lost); k++)
		ch[2] = lost;
	copy(good, bad, 0);
	offb = nodeptr(twb, 0, &lost);
	fmt_nodeptr40_encode(ch[2], twb + offb);
	block_io(bad, tw[1], twb, 1);
	ok(check(bad, &rep, &f) == 0, "two twigs into one row: checked");
	ok(f.twice == 1 && f.twice_blk == ch[2],
	   "the second pointer is reported (%d, block %llu)", f.twice,
	   (unsigned long long)f.twice_blk);
	ok(rep.nodes == clean_nodes - 1,
	   "the leaf is walked once, the one lost not at all (%llu nodes)",
	   (unsigned long long)rep.nodes);

	/* failing media: every row read fails; the nodes are read alone,
	 * the check the same, and a level stops trying rows at its first
	 * failure (one slow read a node, not two) */
	fail_rows = 1;
	rc = check(good, &rep, &f);
	ok(rc == 0 && rep.problems == 0 && rep.nodes == clean_nodes,
	   "row reads failing: clean, %llu nodes",
	   (unsigned long long)rep.nodes);
	ok(row_tries > 0 && row_tries <= 3, "%llu row reads tried",
	   (unsigned long long)row_tries);
	fail_rows = 0;

	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		tap_require(system(cmd) == 0, "cleanup");
	}
	return tap_done();
}
