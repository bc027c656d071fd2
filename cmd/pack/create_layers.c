/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4pack create with several SOURCEs (layers): the first built into a
 * file, the others applied to it in one transaction, then the file
 * renamed over the image, or written onto the device or partition. */
#include "config.h"
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "pack.h"

static uint64_t tree_bytes, tree_entries;

static int tree_sum(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	(void)path;
	(void)flag;
	(void)ftw;
	tree_entries++;
	if (S_ISREG(st->st_mode))
		tree_bytes += (uint64_t)st->st_size;
	return 0;
}

/* With --size auto, the first build leaves room for the layers after
 * it: their bytes, and a block an entry (the items, a tail's node). */
static int room_for_layers(struct create_job *j)
{
	struct r4_error err = { 0 };

	for (size_t i = 1; i < j->ps.n; i++) {
		const char *s = j->ps.src[i];
		uint64_t bytes, entries;

		if (j->ps.is_dir[i]) {
			tree_bytes = tree_entries = 0;
			if (nftw(s, tree_sum, 64, FTW_PHYS)) {
				r4cmd_errorf("%s: %s", s, strerror(errno));
				return EXIT_FAILED;
			}
			bytes = tree_bytes;
			entries = tree_entries;
		} else if (!strcmp(s, "-")) {
			r4cmd_errorf("standard input can be a later layer only "
				     "with --size SIZE (it cannot be measured "
				     "before it is read); give it first");
			return EXIT_USAGE;
		} else if (r4_archive_measure(s, &j->ao, &bytes, &entries,
					      &err)) {
			r4cmd_error(&err, s, err.code);
			return EXIT_FAILED;
		}
		j->bo.free_bytes += bytes + entries * 4096;
	}
	return EXIT_OK;
}

/* Layers onto a block device or into a partition: the volume is built
 * whole in a file of the target's size (in TMPDIR for a device, beside
 * the disk image for a partition), then written there; the target is
 * untouched until the build has succeeded. */
static int layers_in_place(struct create_job *j, const char *target,
			   struct r4_open_opts *win, char **tmp)
{
	struct r4_error err = { 0 };
	uint64_t bytes;
	struct stat st;
	int rc;

	*win = j->bo.mkfs.open;
	if (r4_pack_target_size(target, win, &bytes, &err)) {
		r4cmd_error(&err, j->image, err.code);
		return r4cmd_busy_exit(&err, EXIT_FAILED);
	}
	if (j->bo.auto_size || j->bo.mkfs.size_bytes > bytes)
		j->bo.mkfs.size_bytes = bytes;
	j->bo.auto_size = 0;
	j->bo.mkfs.open.offset = j->bo.mkfs.open.size = 0;
	if (!stat(target, &st) && S_ISBLK(st.st_mode)) {
		const char *d = getenv("TMPDIR");
		char *base;

		if (asprintf(&base, "%s/r4pack", d && *d ? d : "/tmp") < 0) {
			r4cmd_errorf("out of memory");
			return EXIT_FAILED;
		}
		rc = pack_layers_tmp(base, tmp);
		free(base);
		return rc;
	}
	return pack_layers_tmp(target, tmp);
}

/* The layers after the first SOURCE, in one transaction on tmp. */
static int apply_layers(struct create_job *j, const char *tmp)
{
	struct r4_error err = { 0 };
	struct r4_super_info si;
	struct r4_vol *vol = NULL;
	int rc = 0;

	if (r4_vol_open(tmp, &(const struct r4_open_opts){
				.flags = R4_OPEN_RDWR, .fault = r4cmd_fault },
			&vol, &err)) {
		r4cmd_error(&err, tmp, err.code);
		return EXIT_FAILED;
	}
	r4cmd_env_vol(vol);
	rc = pack_layers(vol, tmp, &j->ps.src[1], &j->ps.is_dir[1],
			 j->ps.n - 1, &j->ao, NULL);
	r4_vol_super(vol, &si);
	j->res.free_blocks = si.free_blocks;
	j->objects = si.file_count;
	if (r4_vol_close(vol, &err) && !rc) {
		r4cmd_error(&err, tmp, err.code);
		rc = EXIT_FAILED;
	}
	return rc;
}

/* The built file tmp synced, renamed over target, and the folder
 * synced: after a power cut the new image is there, not the file it
 * replaced (or none). EXIT_OK, or EXIT_FAILED said. */
static int put_in_place(struct create_job *j, const char *tmp,
			const char *target)
{
	int rc = r4_sync_file(tmp);

	if (rc || rename(tmp, target)) {
		r4cmd_errorf("%s: %s", j->image, strerror(rc ? -rc : errno));
		return EXIT_FAILED;
	}
	if ((rc = r4_sync_dir(target))) {
		r4cmd_errorf("%s: made and in place, but its directory could "
			     "not be synced (a power cut may still lose the "
			     "new name): %s", j->image, strerror(-rc));
		return EXIT_FAILED;
	}
	return EXIT_OK;
}

/* SOURCE... IMAGE: the first SOURCE is built into a file beside the
 * image, the others are applied to it as layers in one transaction
 * (as r4pack add), and only then is it renamed over the image (or
 * written onto the device or partition): a failure before that leaves
 * the image as it was. */
int pack_create_layers(struct create_job *j, const char *target)
{
	struct r4_error err = { 0 };
	struct r4_open_opts win;
	struct stat st;
	int in_place = (!stat(target, &st) && S_ISBLK(st.st_mode)) ||
		       r4cmd_window_set();
	char *tmp = NULL;
	int rc;

	rc = in_place ? layers_in_place(j, target, &win, &tmp) :
			pack_layers_tmp(target, &tmp);
	if (rc)
		return rc;
	if (j->bo.auto_size)
		rc = room_for_layers(j);
	if (!rc && (r4_archive_skip_file(&j->ao, target, &err) ||
		    r4_archive_skip_file(&j->ao, tmp, &err))) {
		r4cmd_error(&err, j->image, err.code);
		rc = EXIT_FAILED;
	}
	if (!rc)
		rc = pack_create_build(j, tmp);
	if (!rc)
		rc = apply_layers(j, tmp);
	if (!rc && in_place && r4_pack_place(tmp, target, &win, &err)) {
		r4cmd_error(&err, j->image, err.code);
		rc = r4cmd_busy_exit(&err, EXIT_FAILED);
	} else if (!rc && !in_place)
		rc = put_in_place(j, tmp, target);
	if (rc || in_place)
		unlink(tmp);
	r4_tmpfile_forget(tmp);
	free(tmp);
	return rc;
}
