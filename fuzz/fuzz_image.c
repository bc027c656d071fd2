/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit fuzz target: treat the input as a volume image; open it, check
 * it, walk the tree and every directory from the root, and read every
 * file and symlink; then repair the copy (r4fsck -y: super blocks from
 * the backups, the repair with its passes: tree rebuild, blocks claimed
 * twice copied (the seeds extents-256k and shared-256k hold extents,
 * the second blocks two of them claim), objects, space) and, when the
 * repair says nothing is left, check again: a problem then is a bug
 * (abort). Built for libFuzzer with --enable-fuzzing (clang);
 * fuzz/standalone.c runs the same entry point over files without it. */
#include "config.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "r4/r4.h"
#include "r4/read.h"
#include "r4/check.h"
#include "r4/edit.h"
#include "r4/repair.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_DEPTH 16
#define MAX_OBJECTS 4096

struct walk {
	struct r4_vol *vol;
	unsigned depth, objects;
	uint8_t buf[8192];
};

static void visit(struct walk *w, const struct r4_objref *obj);

static int on_entry(void *ctx, const char *name, size_t len,
		    const struct r4_objref *target)
{
	struct walk *w = ctx;

	if ((len == 1 && name[0] == '.') ||
	    (len == 2 && name[0] == '.' && name[1] == '.'))
		return 0;
	if (++w->objects > MAX_OBJECTS)
		return 1;
	visit(w, target);
	return 0;
}

static void visit(struct walk *w, const struct r4_objref *obj)
{
	struct r4_error err = { 0 };
	struct r4_stat st;
	size_t got = 0, tlen = 0;

	if (r4_stat(w->vol, obj, &st, &err))
		return;
	if (S_ISDIR(st.mode) && w->depth < MAX_DEPTH) {
		w->depth++;
		r4_readdir(w->vol, obj, on_entry, w, &err);
		w->depth--;
	} else if (S_ISREG(st.mode)) {
		for (uint64_t off = 0; off < st.size && off < (1u << 20);
		     off += got) {
			if (r4_read(w->vol, obj, off, w->buf, sizeof(w->buf),
				    &got, &err) || got == 0)
				break;
		}
	} else if (S_ISLNK(st.mode)) {
		r4_readlink(w->vol, obj, (char *)w->buf, sizeof(w->buf), &tlen,
			    &err);
	}
}

static int on_node(void *ctx, uint64_t blk, unsigned level,
		   const uint8_t *node)
{
	(void)ctx; (void)blk; (void)level; (void)node;
	return 0;
}

/* The write path on the same bytes: a writable open (journal replay),
 * one small transaction (a directory, a file in it), commit. A
 * damaged bitmap or tree must end in an error, never in a crash or a
 * write over a live block. */
static void write_path(const char *path)
{
	struct r4_attr dir = { .mode = 040755 }, file = { .mode = 0100644 };
	struct r4_error err = { 0 };
	struct r4_vol *vol = NULL;
	struct r4_txn *t = NULL;

	if (r4_vol_open(path, R4_OPEN(R4_OPEN_RDWR), &vol, &err))
		return;
	if (!r4_txn_begin(vol, &t, &err)) {
		if (r4_mkdir(t, "/fuzz", &dir, &err) ||
		    r4_create(t, "/fuzz/f", &file, 0, NULL, NULL, &err))
			r4_txn_abort(t);
		else
			r4_txn_commit(t, &err);
	}
	r4_vol_close(vol, NULL);
}

/* r4fsck -y on the copy at path. */
static void repair(const char *path)
{
	struct r4_repair_opts o = { .mode = R4_REPAIR_FIX };
	struct r4_repair_report rep;
	struct r4_check_report crep;
	struct r4_error err = { 0 };
	struct r4_vol *vol;
	int fixed, rc;

	r4_repair_super(path, 0, NULL, NULL, &fixed, NULL, &err);
	if (r4_vol_open(path, R4_OPEN(R4_OPEN_RDWR), &vol, &err)) {
		if (r4_repair_journal_drop(path, NULL, NULL, NULL, NULL, &err) ||
		    r4_vol_open(path, R4_OPEN(R4_OPEN_RDWR), &vol, &err))
			return;
	}
	rc = r4_repair(vol, &o, &rep, &err);
	if (r4_vol_close(vol, &err) || rc || rep.left.problems)
		return;
	if (r4_vol_open(path, R4_OPEN(R4_OPEN_RDONLY), &vol, &err))
		abort();	/* repaired, but cannot be opened */
	if (r4_check(vol, NULL, &crep, &err) == 0 && crep.problems)
		abort();	/* "nothing left", yet a check finds some */
	r4_vol_close(vol, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct r4_check_report rep;
	struct r4_error err = { 0 };
	struct r4_objref root;
	struct walk *w;
	char path[64];
	int fd;

	fd = memfd_create("r4fuzz", 0);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	w = calloc(1, sizeof(*w));
	if (w && r4_vol_open(path, R4_OPEN(R4_OPEN_RDONLY), &w->vol, &err) == 0) {
		memset(&rep, 0, sizeof(rep));
		r4_check(w->vol, NULL, &rep, &err);
		r4_tree_walk(w->vol, on_node, NULL, &err);
		if (r4_root(w->vol, &root, &err) == 0)
			visit(w, &root);
		/* a block left referenced on any path is a bug: crash so
		 * the fuzzer (and the corpus run) reports it */
		if (r4_vol_close(w->vol, &err)) {
			fprintf(stderr, "fuzz_image: %s\n", err.msg);
			abort();
		}
		write_path(path);
		repair(path);
	}
	free(w);
	close(fd);
	return 0;
}
