/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4pack create: parse, one build, print a summary. */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uuid/uuid.h>
#include "pack.h"
#include "../common/manifest.h"

/* Default of --size auto: leave 16 MiB free, so the image stays close
 * to the size of its content; --free asks for more. */
#define FREE_BYTES_DEFAULT (16ULL << 20)
#define FREE_PERCENT_DEFAULT 0

enum { OPT_O = 1, OPT_EXCLUDE, OPT_COMPRESS, OPT_UIDMAP = 100, OPT_GIDMAP,
       OPT_CLAMP, OPT_FORMAT = 150, OPT_LAYERS };
/* --compress without ALGO (bench/RESULTS.md, "Compressed images", says
 * why). */

static char *opt_size, *opt_free, *opt_label, *opt_uuid, *opt_spool_mem;
static int opt_threads;
static int opt_all_root, opt_json, opt_force;

struct poptOption pack_owner_options[] = {
	{ "all-root", '\0', POPT_ARG_NONE, &opt_all_root, 0,
	  "make every owner and group 0 (root)", NULL },
	{ "uid-map", '\0', POPT_ARG_STRING, NULL, OPT_UIDMAP,
	  "map user ids (repeatable)", "FROM:TO[,FROM:TO...]" },
	{ "gid-map", '\0', POPT_ARG_STRING, NULL, OPT_GIDMAP,
	  "map group ids (repeatable)", "FROM:TO[,FROM:TO...]" },
	{ "mtime-clamp", '\0', POPT_ARG_STRING, NULL, OPT_CLAMP,
	  "time stamps later than TIME become TIME (default: "
	  "$SOURCE_DATE_EPOCH if set)", "TIME" },
	POPT_TABLEEND
};

static int opt_strict;

char *pack_opt_manifest;

int pack_manifest(const char *image)
{
	if (!pack_opt_manifest)
		return EXIT_OK;
	if (r4cmd_manifest_write(image, pack_opt_manifest)) {
		r4cmd_errorf("%s: the image is complete; only the manifest "
			     "is missing", image);
		return EXIT_FAILED;
	}
	return EXIT_OK;
}

struct poptOption pack_input_options[] = {
	{ "format", '\0', POPT_ARG_STRING, NULL, OPT_FORMAT,
	  "the archive's format (default auto: tar, cpio, zip, 7zip, "
	  "iso9660, xar, ar, cab, lha, rar; mtree only when named, or for "
	  "a SOURCE ending in .mtree)", "auto|FORMAT|mtree" },
	{ "strict", '\0', POPT_ARG_NONE, &opt_strict, 0,
	  "fail (exit 1, nothing written) on extended attributes or ACLs, "
	  "which Reiser4 cannot store, instead of warning", NULL },
	{ "manifest", '\0', POPT_ARG_STRING, &pack_opt_manifest, 0,
	  "after the build, write the SHA-256 of every regular file as "
	  "the image holds it to FILE (sha256sum's format)", "FILE" },
	{ "layers", '\0', POPT_ARG_STRING, NULL, OPT_LAYERS,
	  "oci: each SOURCE is an OCI image layer, its .wh. entries "
	  "remove names of the layers below and are never stored "
	  "(default none)", "oci|none" },
	POPT_TABLEEND
};

static struct poptOption create_options[] = {
	{ "size", 's', POPT_ARG_STRING, &opt_size, 0,
	  "volume size, or 'auto' to fit the source (default)", "SIZE|auto" },
	{ "free", '\0', POPT_ARG_STRING, &opt_free, 0,
	  "with --size auto: free space to leave (default: 16M)", "SIZE|N%" },
	{ "label", 'L', POPT_ARG_STRING, &opt_label, 0,
	  "volume label (at most 16 bytes)", "LABEL" },
	{ "uuid", 'U', POPT_ARG_STRING, &opt_uuid, 0,
	  "volume UUID (default: random)", "UUID" },
	{ "override", 'o', POPT_ARG_STRING, NULL, OPT_O,
	  "override a plugin of the profile, as r4mkfs -o (repeatable)",
	  "TYPE=PLUGIN" },
	{ "compress", '\0', POPT_ARG_STRING | POPT_ARGFLAG_OPTIONAL, NULL,
	  OPT_COMPRESS, "store files compressed (ccreg40), as -o "
	  "create=ccreg40,compress=ALGO (default " COMPRESS_DEFAULT ")",
	  "lzo1|gzip1|zstd1" },
	{ "threads", '\0', POPT_ARG_INT, &opt_threads, 0,
	  "threads that compress (default: one per CPU, at most 8; the "
	  "image is the same for any N)", "N" },
	{ "spool-memory", '\0', POPT_ARG_STRING, &opt_spool_mem, 0,
	  "streamed data (standard input, a compressed archive) waits in "
	  "memory up to SIZE, past it in a file beside IMAGE (default: "
	  "the smaller of 1G and an eighth of the RAM or of the memory "
	  "limit, 0 without huge pages; 0: a file only)",
	  "SIZE" },
	{ "exclude", '\0', POPT_ARG_STRING, NULL, OPT_EXCLUDE,
	  "leave out entries matching PATTERN (repeatable)", "PATTERN" },
	{ "json", '\0', POPT_ARG_NONE, &opt_json, 0,
	  "print the summary as JSON", NULL },
	{ "force", 'f', POPT_ARG_NONE, &opt_force, 0,
	  "replace an existing IMAGE that is not a Reiser4 image", NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, pack_input_options, 0,
	  "Source:", NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, pack_owner_options, 0,
	  "Ownership and times:", NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_window_options, 0,
	  "Partitions:", NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_wait_options, 0,
	  "Locking (an existing IMAGE):", NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_progress_options, 0,
	  NULL, NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_common_options, 0,
	  "Common options:", NULL },
	POPT_AUTOHELP
	POPT_TABLEEND
};

/* Options shared with extract (and add's --format); 1 handled, 0 not
 * ours, -1 bad. */
int pack_owner_opt(int rc, const char *arg, struct r4_archive_opts *ao)
{
	struct r4_error err = { 0 };

	switch (rc) {
	case OPT_UIDMAP:
	case OPT_GIDMAP:
		if (r4_archive_add_idmap(ao, rc == OPT_GIDMAP, arg, &err)) {
			r4cmd_error(&err, arg, err.code);
			return -1;
		}
		return 1;
	case OPT_CLAMP:
		if (r4cmd_parse_time(arg, &ao->mtime_clamp)) {
			r4cmd_errorf("'%s' is not a time (seconds since the "
				     "epoch, or YYYY-MM-DD[THH:MM[:SS]])", arg);
			return -1;
		}
		ao->clamp_mtime = 1;
		return 1;
	case OPT_FORMAT:
		if (r4_archive_set_format(ao, arg, &err)) {
			r4cmd_error(&err, arg, err.code);
			return -1;
		}
		return 1;
	case OPT_LAYERS:
		if (arg && (!strcmp(arg, "oci") || !strcmp(arg, "none"))) {
			ao->oci_whiteouts = !strcmp(arg, "oci");
			return 1;
		}
		r4cmd_errorf("--layers=%s: not a layer kind (oci or none)",
			     arg ? arg : "");
		return -1;
	default:
		return 0;
	}
}

/* After parsing: --all-root and (use_env) SOURCE_DATE_EPOCH. */
int pack_owner_finish(struct r4_archive_opts *ao, int use_env)
{
	const char *sde = getenv("SOURCE_DATE_EPOCH");
	const char *tr = getenv("R4_TAR_READER");

	ao->all_root = opt_all_root;
	ao->strict = opt_strict;
	/* tests: R4_TAR_READER=libarchive|own, one reader of tar headers */
	if (tr && !strcmp(tr, "libarchive"))
		ao->tar_reader = R4_TAR_LIBARCHIVE;
	else if (tr && !strcmp(tr, "own"))
		ao->tar_reader = R4_TAR_OWN;
	else if (tr) {
		r4cmd_errorf("R4_TAR_READER='%s' is not libarchive or own", tr);
		return EXIT_USAGE;
	}
	if (use_env && !ao->clamp_mtime && sde && *sde) {
		if (r4cmd_parse_time(sde, &ao->mtime_clamp)) {
			r4cmd_errorf("SOURCE_DATE_EPOCH='%s' is not a number of "
				     "seconds", sde);
			return EXIT_USAGE;
		}
		ao->clamp_mtime = 1;
	}
	return EXIT_OK;
}

static int parse_free(struct r4_pack_opts *bo)
{
	size_t n = strlen(opt_free);
	char *end;

	if (n > 1 && opt_free[n - 1] == '%') {
		unsigned long p = strtoul(opt_free, &end, 10);

		if (end != opt_free + n - 1 || p > 90)
			return -1;
		bo->free_percent = (unsigned)p;
		bo->free_bytes = 0;
		return 0;
	}
	if (r4cmd_parse_size(opt_free, &bo->free_bytes))
		return -1;
	bo->free_percent = 0;
	return 0;
}

static int apply_size(struct r4_pack_opts *bo)
{
	bo->auto_size = 1;
	bo->free_bytes = FREE_BYTES_DEFAULT;
	bo->free_percent = FREE_PERCENT_DEFAULT;
	if (opt_size && strcmp(opt_size, "auto")) {
		if (r4cmd_parse_size(opt_size, &bo->mkfs.size_bytes) ||
		    !bo->mkfs.size_bytes) {
			r4cmd_errorf("'%s' is not a size (bytes with an optional "
				     "K, M, G or T suffix, or 'auto')", opt_size);
			return EXIT_USAGE;
		}
		bo->auto_size = 0;
		bo->mkfs.create_file = 1;
	}
	if (opt_free && parse_free(bo)) {
		r4cmd_errorf("'%s' is not a free space (a size, or N%% up to "
			     "90%%)", opt_free);
		return EXIT_USAGE;
	}
	if (opt_free && !bo->auto_size) {
		r4cmd_errorf("--free goes with --size auto only");
		return EXIT_USAGE;
	}
	if (opt_spool_mem) {
		uint64_t v;

		if (r4cmd_parse_size(opt_spool_mem, &v) || v > INT64_MAX) {
			r4cmd_errorf("--spool-memory '%s' is not a size (bytes "
				     "with an optional K, M, G or T suffix)",
				     opt_spool_mem);
			return EXIT_USAGE;
		}
		bo->spool_memory = (int64_t)v;
	}
	return EXIT_OK;
}

static int apply_options(struct r4_pack_opts *bo)
{
	int rc = apply_size(bo);

	if (rc)
		return rc;
	if (opt_label) {
		if (strlen(opt_label) > 16) {
			r4cmd_errorf("label '%s' is %zu bytes long; at most "
				     "16 fit", opt_label, strlen(opt_label));
			return EXIT_USAGE;
		}
		snprintf(bo->mkfs.label, sizeof(bo->mkfs.label), "%s",
			 opt_label);
	}
	if (opt_uuid) {
		if (uuid_parse(opt_uuid, bo->mkfs.uuid)) {
			r4cmd_errorf("'%s' is not a valid UUID", opt_uuid);
			return EXIT_USAGE;
		}
		bo->mkfs.have_uuid = 1;
	}
	if (opt_threads < 0 || opt_threads > 8) {
		r4cmd_errorf("--threads %d: give 1 to 8 (0: one per CPU)", opt_threads);
		return EXIT_USAGE;
	}
	bo->threads = (unsigned)opt_threads;
	return EXIT_OK;
}

static int parse_loop(poptContext ctx, struct r4_pack_opts *bo,
		      struct r4_archive_opts *ao)
{
	struct r4_error err = { 0 };
	int rc;

	while ((rc = poptGetNextOpt(ctx)) > 0) {
		char *arg = poptGetOptArg(ctx);	/* ours to free */
		int own = pack_owner_opt(rc, arg, ao), bad = own < 0;

		if (!own && rc == OPT_O &&
		    r4_mkfs_override(&bo->mkfs, arg, &err)) {
			r4cmd_error(&err, "-o", err.code);
			bad = 1;
		} else if (!own && rc == OPT_O && !strncmp(arg, "create=", 7)) {
			/* the files follow an explicit create= */
			bo->compress_files = 1;
		}
		if (!own && rc == OPT_COMPRESS) {
			char o[64];

			snprintf(o, sizeof(o), "compress=%s",
				 arg && *arg ? arg : COMPRESS_DEFAULT);
			if (r4_mkfs_override(&bo->mkfs, "create=ccreg40",
					     &err) ||
			    r4_mkfs_override(&bo->mkfs, o, &err)) {
				r4cmd_error(&err, "--compress", err.code);
				bad = 1;
			}
			bo->compress_files = 1;
		}
		if (!own && rc == OPT_EXCLUDE &&
		    r4_archive_add_exclude(ao, arg, &err)) {
			r4cmd_error(&err, "--exclude", err.code);
			bad = 1;
		}
		free(arg);
		if (bad)
			return EXIT_USAGE;
	}
	if (rc < -1)
		return r4cmd_popt_error(ctx, rc, EXIT_USAGE);
	return EXIT_OK;
}


void pack_progress(void *ctx, uint64_t done, uint64_t total)
{
	(void)ctx;
	r4cmd_progress("r4pack", done, total);
}

/* The spool's copy into place: a phase of its own, after the archive's
 * (which it finishes). */
static void pack_copy_progress(void *ctx, uint64_t done, uint64_t total)
{
	static int started;

	(void)ctx;
	if (!started) {
		r4cmd_progress_finish();
		r4cmd_progress_kind("copy", "bytes");
		started = 1;
	}
	r4cmd_progress("r4pack", done, total);
}

/* An existing IMAGE: what is there must be a Reiser4 image (or -f), not
 * mounted, not written by another program, and not the source. */
static int check_existing(struct create_job *j, const char *path,
			  const struct stat *st)
{
	struct r4_error err = { 0 };
	struct stat src;
	int rc;

	if (strcmp(j->source, "-") && !stat(j->source, &src) &&
	    src.st_dev == st->st_dev && src.st_ino == st->st_ino) {
		r4cmd_errorf("%s: is the source too; refusing to overwrite it "
			     "(the arguments are SOURCE IMAGE)", j->image);
		return EXIT_FAILED;
	}
	if (S_ISDIR(st->st_mode)) {
		r4cmd_errorf("%s: is a directory", j->image);
		return EXIT_FAILED;
	}
	if (!S_ISREG(st->st_mode) && !S_ISBLK(st->st_mode)) {
		r4cmd_errorf("%s: not a regular file or block device: an image "
			     "cannot be written there", j->image);
		return EXIT_FAILED;
	}
	/* Opening it finds a mounted or busy image (refused) and tells an
	 * image from anything else. A regular file stays open, so nobody
	 * changes it while it is replaced; a device is written in place
	 * (opened again by the build). */
	rc = r4_vol_open(path, r4cmd_open(R4_OPEN_RDONLY | r4cmd_lock_flags()), &j->old,
			 &err);
	if (rc == R4_EBADMAGIC && !opt_force &&
	    !((S_ISBLK(st->st_mode) || r4cmd_window_set()) &&
	      !r4_mkfs_target_empty(path, r4cmd_open(r4cmd_lock_flags()),
				    &err))) {
		r4cmd_errorf("%s: %s holds data and no Reiser4 volume; give "
			     "-f to replace it", j->image,
			     r4cmd_window_set() ? "the partition" :
			     S_ISBLK(st->st_mode) ? "the device" : "it");
		return EXIT_FAILED;
	}
	if (rc == R4_EBUSY) {
		r4cmd_error(&err, j->image, rc);
		return R4CMD_EXIT_BUSY;
	}
	if (j->old && (S_ISBLK(st->st_mode) || r4cmd_window_set())) {
		r4_vol_close(j->old, NULL);
		j->old = NULL;
	}
	return EXIT_OK;
}

/* "-" cannot hold an image; a symlink is followed (the image is written
 * where it points); an existing file is checked. */
static int check_image(struct create_job *j)
{
	struct stat st, lst;

	if (!strcmp(j->image, "-")) {
		r4cmd_errorf("an image cannot be written to standard output "
			     "('-'): give a file or block device");
		return EXIT_USAGE;
	}
	if (stat(j->image, &st)) {
		if (errno != ENOENT) {
			r4cmd_errorf("%s: %s", j->image, strerror(errno));
			return EXIT_FAILED;
		}
		if (!lstat(j->image, &lst)) {
			r4cmd_errorf("%s: a symbolic link to nothing; refusing "
				     "to write through it", j->image);
			return EXIT_FAILED;
		}
		return EXIT_OK;
	}
	if (!lstat(j->image, &lst) && S_ISLNK(lst.st_mode) &&
	    !(j->real = realpath(j->image, NULL))) {
		r4cmd_errorf("%s: %s", j->image, strerror(errno));
		return EXIT_FAILED;
	}
	return check_existing(j, j->real ? j->real : j->image, &st);
}

/* Build the first SOURCE into target. */
int pack_create_build(struct create_job *j, const char *target)
{
	struct r4_error err = { 0 };
	struct r4_pack *b = NULL;
	int rc;

	if (j->is_dir) {
		r4_pack_dir_source(&j->dsrc, j->source);
		j->bo.source = &j->dsrc;
	}
	/* an archive's progress is its bytes read; a directory's is the
	 * data written at finish */
	if (j->is_dir)
		j->bo.progress = pack_progress;
	else
		j->ao.progress = pack_progress;
	if (!j->is_dir && r4cmd_progress_wanted())
		j->bo.copy_progress = pack_copy_progress;
	r4cmd_progress_kind(j->is_dir ? "data" : "archive", "bytes");
	r4cmd_cleanup_on_signals();
	if (r4_pack_begin(target, &j->bo, &b, &err)) {
		r4cmd_error(&err, j->image, err.code);
		return EXIT_FAILED;
	}
	/* A directory source never holds its own output. */
	if (j->is_dir && (r4_archive_skip_file(&j->ao, target, &err) ||
			  (r4_pack_temp(b) &&
			   r4_archive_skip_file(&j->ao, r4_pack_temp(b),
						&err)))) {
		r4_pack_abort(b);
		r4cmd_error(&err, j->image, err.code);
		return EXIT_FAILED;
	}
	rc = j->is_dir ? r4_pack_from_dir(b, j->source, &j->ao, &err)
		       : r4_pack_from_archive(b, j->source, &j->ao, &err);
	if (rc) {
		r4_pack_abort(b);
		r4cmd_error(&err, j->source, rc);
		return EXIT_FAILED;
	}
	rc = r4_pack_finish(b, &j->res, &err);
	r4cmd_progress_end();
	if (rc) {
		r4cmd_error(&err, j->image, err.code);
		return EXIT_FAILED;
	}
	r4cmd_progress_finish();
	return EXIT_OK;
}

static int run(struct create_job *j)
{
	const char *target;
	int rc = check_image(j);

	if (rc)
		return rc;
	target = j->real ? j->real : j->image;
	if (j->ps.n > 1)
		return pack_create_layers(j, target);
	return pack_create_build(j, target);
}

/* Several SOURCEs: what the build of the first one counted no longer
 * holds; the super block's counts after the layers do. */
static void summary_layers(const struct create_job *j)
{
	const struct r4_pack_result *r = &j->res;

	if (opt_json) {
		const struct pack_field f[] = {
			{ "entries", j->stats.entries },
			{ "skipped", j->stats.skipped },
			{ "objects", j->objects },
			{ "block_count", r->block_count },
			{ "free_blocks", r->free_blocks },
			{ "layers", j->ps.n },
			{ "whiteouts", j->stats.whiteouts },
			{ "removed", j->stats.removed },
			{ "xattrs_dropped", j->stats.xattrs_dropped },
		};

		pack_json_summary("create", j->image, j->source, f,
				  sizeof(f) / sizeof(f[0]));
	} else if (!r4cmd_quiet) {
		printf("%s: packed %" PRIu64 " entries from %zu layers (%"
		       PRIu64 " names removed by whiteouts) into %s: %" PRIu64
		       " objects, %" PRIu64 " blocks (%" PRIu64 " free)\n",
		       r4cmd_prog, j->stats.entries, j->ps.n, j->stats.removed,
		       j->image, j->objects, r->block_count, r->free_blocks);
	}
}

static void summary(const struct create_job *j)
{
	const struct r4_pack_result *r = &j->res;

	if (j->ps.n > 1) {
		summary_layers(j);
		return;
	}
	if (opt_json) {
		/* "objects" and "dirs" count as r4fsck's do (the root
		 * included); "nondirs" are the objects that are not
		 * directories (r4fsck's "files" are regular files only). */
		const struct pack_field f[] = {
			{ "entries", j->stats.entries },
			{ "skipped", j->stats.skipped },
			{ "objects", r->files + r->dirs },
			{ "nondirs", r->files }, { "dirs", r->dirs },
			{ "bytes", r->bytes }, { "block_count", r->block_count },
			{ "free_blocks", r->free_blocks }, { "nodes", r->nodes },
			{ "leaves", r->leaves }, { "twigs", r->twigs },
			{ "data_blocks", r->data_blocks },
			{ "direct_bytes", r->direct_bytes },
			{ "xattrs_dropped", j->stats.xattrs_dropped },
		};

		pack_json_summary("create", j->image, j->source, f,
				  sizeof(f) / sizeof(f[0]));
	} else if (!r4cmd_quiet) {
		printf("%s: packed %" PRIu64 " files, %" PRIu64 " directories, "
		       "%" PRIu64 " bytes into %s: %" PRIu64 " blocks (%"
		       PRIu64 " free)\n", r4cmd_prog, r->files, r->dirs,
		       r->bytes, j->image, r->block_count, r->free_blocks);
	}
}

int pack_sources(poptContext ctx, const char *cmd, const char *order,
		 struct pack_srcs *ps)
{
	const char *argv[PACK_SOURCES_MAX + 1];
	int source_first = order[0] == 'S', stdin_n = 0;
	size_t n = 0;
	struct stat st;

	memset(ps, 0, sizeof(*ps));
	while (poptPeekArg(ctx) && n <= PACK_SOURCES_MAX)
		argv[n++] = poptGetArg(ctx);
	if (n < 2 || n > PACK_SOURCES_MAX) {
		if (n > PACK_SOURCES_MAX)
			r4cmd_errorf("%s takes at most %d SOURCEs", cmd,
				     PACK_SOURCES_MAX);
		else
			r4cmd_errorf("%s takes %s", cmd, source_first ?
				     "a SOURCE (or several) and an IMAGE" :
				     "an IMAGE and a SOURCE (or several)");
		fprintf(stderr, "Usage: %s %s [OPTION...] %s\n", r4cmd_prog,
			cmd, source_first ? "SOURCE... IMAGE" :
			"IMAGE SOURCE...");
		return EXIT_USAGE;
	}
	ps->image = source_first ? argv[n - 1] : argv[0];
	ps->n = n - 1;
	for (size_t i = 0; i < ps->n; i++) {
		const char *s = argv[i + !source_first];

		ps->src[i] = s;
		if (!strcmp(s, "-")) {
			if (stdin_n++) {
				r4cmd_errorf("standard input ('-') can be "
					     "only one SOURCE");
				return EXIT_USAGE;
			}
			continue;
		}
		if (stat(s, &st)) {
			r4cmd_errorf("%s: %s", s, strerror(errno));
			return EXIT_FAILED;
		}
		ps->is_dir[i] = S_ISDIR(st.st_mode);
	}
	return EXIT_OK;
}

int pack_source_args(poptContext ctx, const char *cmd, const char *order,
		     const char **source, const char **image, int *is_dir)
{
	const char *a = poptGetArg(ctx), *b = poptGetArg(ctx);
	int source_first = order[0] == 'S';
	struct stat st;

	*source = source_first ? a : b;
	*image = source_first ? b : a;
	*is_dir = 0;
	if (!a || !b || poptPeekArg(ctx)) {
		r4cmd_errorf("%s takes %s", cmd, source_first ?
			     "a SOURCE and an IMAGE" : "an IMAGE and a SOURCE");
		fprintf(stderr, "Usage: %s %s [OPTION...] %s\n", r4cmd_prog,
			cmd, source_first ? "SOURCE IMAGE" : "IMAGE SOURCE");
		return EXIT_USAGE;
	}
	if (strcmp(*source, "-")) {
		if (stat(*source, &st)) {
			r4cmd_errorf("%s: %s", *source, strerror(errno));
			return EXIT_FAILED;
		}
		*is_dir = S_ISDIR(st.st_mode);
	}
	return EXIT_OK;
}

static int args(poptContext ctx, struct create_job *j)
{
	int rc = pack_sources(ctx, "create", "SI", &j->ps);

	j->image = j->ps.image;
	j->source = j->ps.src[0];
	j->is_dir = j->ps.is_dir[0];
	if (!rc)
		rc = r4cmd_window_parse(j->image, EXIT_USAGE, EXIT_FAILED);
	r4cmd_open_fill(&j->bo.mkfs.open);
	return rc;
}

int pack_create(int argc, const char **argv)
{
	struct create_job j = { 0 };
	poptContext ctx;
	int rc;

	r4_pack_opts_init(&j.bo);
	r4cmd_env_pack(&j.bo);
	r4_archive_opts_init(&j.ao);
	j.ao.warn = pack_warn;
	j.ao.stats = &j.stats;
	/* A bare --compress takes no word after it (popt would take the
	 * SOURCE as its ALGO): make it --compress=DEFAULT. */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "--compress"))
			argv[i] = "--compress=" COMPRESS_DEFAULT;
	}
	ctx = poptGetContext("r4pack create", argc, argv, create_options, 0);
	poptSetOtherOptionHelp(ctx, "[OPTION...] SOURCE... IMAGE");
	rc = parse_loop(ctx, &j.bo, &j.ao);
	if (opt_json)
		r4cmd_json_start(stdout);
	if (!rc && r4cmd_show_version) {
		r4cmd_print_version();
		goto out;
	}
	if (!rc)
		rc = r4cmd_lock_parse(EXIT_USAGE);
	if (!rc)
		rc = r4cmd_progress_parse(EXIT_USAGE);
	if (!rc)
		rc = apply_options(&j.bo);
	if (!rc)
		rc = pack_owner_finish(&j.ao, 1);
	if (!rc)
		rc = args(ctx, &j);
	if (!rc) {
		pack_list_to_stderr = opt_json;
		j.ao.entry = r4cmd_verbose ? pack_entry : NULL;
		rc = run(&j);
	}
	r4_vol_close(j.old, NULL);
	if (!rc)
		rc = pack_manifest(j.real ? j.real : j.image);
	free(j.real);
	if (!rc)
		summary(&j);
out:
	r4_archive_opts_free(&j.ao);
	poptFreeContext(ctx);
	return r4cmd_json_exit(rc);
}
