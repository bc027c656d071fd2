/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4pack: what the subcommands share. */
#ifndef R4_CMD_PACK_H
#define R4_CMD_PACK_H

#include "r4/archive.h"
#include "../common/common.h"

enum { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_USAGE = 2 };

/* Callbacks for r4_archive_opts: warnings on stderr (unless -q), the
 * entry list (-v) on stdout, or on stderr when list_to_stderr. */
extern int pack_list_to_stderr;
void pack_warn(void *ctx, const char *msg);
void pack_entry(void *ctx, const char *path);

/* Ownership and time options (--all-root, --uid-map, --gid-map,
 * --mtime-clamp), shared by create and extract: the popt table, the
 * handler for its option values (1 handled, 0 not one of them, -1 bad,
 * reported), and the step after parsing (--all-root, and with use_env
 * SOURCE_DATE_EPOCH as the clamp when --mtime-clamp is not given). */
extern struct poptOption pack_owner_options[];
/* --format and --strict (create and add; handled by pack_owner_opt and
 * pack_owner_finish). */
extern struct poptOption pack_input_options[];
/* The progress bar (r4cmd_progress). */
void pack_progress(void *ctx, uint64_t done, uint64_t total);
/* The --json summary of create and add: schema, program, image, source,
 * then each field as an exact 64-bit value (man/r4pack.1, JSON). */
struct pack_field {
	const char *k;
	uint64_t v;
};
void pack_json_summary(const char *kind, const char *image,
		       const char *source, const struct pack_field *f, size_t n);
int pack_owner_opt(int rc, const char *arg, struct r4_archive_opts *ao);
int pack_owner_finish(struct r4_archive_opts *ao, int use_env);

/* The SOURCE and IMAGE arguments (in 'order': "SI" create, "IS" add),
 * and whether the source is a directory ('-' is standard input). */
int pack_source_args(poptContext ctx, const char *cmd, const char *order,
		     const char **source, const char **image, int *is_dir);
/* The same with one or more SOURCEs (layers, applied in order):
 * "SI": SOURCE... IMAGE, "IS": IMAGE SOURCE...; '-' at most once. */
#define PACK_SOURCES_MAX 64
struct pack_srcs {
	const char *image;
	const char *src[PACK_SOURCES_MAX];
	int is_dir[PACK_SOURCES_MAX];
	size_t n;
};
int pack_sources(poptContext ctx, const char *cmd, const char *order,
		 struct pack_srcs *ps);
/* Apply SOURCEs to an open volume as layers in one transaction (add,
 * and create's layers past the first): EXIT_OK, or EXIT_FAILED with the
 * error said and the volume as it was (or the commit left pending,
 * said); PACK_EXIT_NOSPC, said by nobody, when the volume was full and
 * lo->nospc_quiet (add --grow grows it and tries again). lo may be
 * NULL: the profile's plugins, a full volume said. */
#define PACK_EXIT_NOSPC 100
struct r4_txn;
struct pack_layer_opts {
	const uint16_t *plug;		/* -o / --compress on add */
	unsigned plug_set;
	int nospc_quiet;
	void (*nospc_hint)(void *ctx);	/* after "no free block left" */
	void *ctx;
	/* Before anything is written: R4_ENOSPC (err said) when the
	 * add plainly cannot fit, so that nothing is written at all. */
	int (*precheck)(void *ctx, struct r4_txn *t, struct r4_error *err);
};
int pack_layers(struct r4_vol *vol, const char *image, const char *const *src,
		const int *is_dir, size_t n, struct r4_archive_opts *ao,
		const struct pack_layer_opts *lo);

/* --manifest=FILE (create and add): written after a change that went
 * well; EXIT_OK, or EXIT_FAILED said. */
extern char *pack_opt_manifest;
int pack_manifest(const char *image);

int pack_create(int argc, const char **argv);
int pack_extract(int argc, const char **argv);
int pack_add(int argc, const char **argv);

/* What a bare --compress means (create and add). */
#define COMPRESS_DEFAULT "zstd1"

/* create (main.c): a new empty file "TARGET.layers.XXXXXX" beside
 * target for a layered build, removed on a signal (EXIT_OK, or
 * EXIT_FAILED said). */
int pack_layers_tmp(const char *target, char **tmp);

/* One r4pack create. */
struct create_job {
	const char *source, *image;
	struct pack_srcs ps;	/* ps.src[0] is source; the rest layers */
	char *real;		/* where a symlink IMAGE points */
	struct r4_vol *old;	/* the image replaced, held (locked) */
	int is_dir;
	struct r4_pack_opts bo;
	struct r4_archive_opts ao;
	struct r4_archive_stats stats;
	struct r4_pack_result res;
	struct r4_data_source dsrc;
	uint64_t objects;	/* layers: the super block's object count */
};

/* create.c: build j's first SOURCE into target (EXIT_*, said). */
int pack_create_build(struct create_job *j, const char *target);
/* create_layers.c: several SOURCEs into target (EXIT_*, said). */
int pack_create_layers(struct create_job *j, const char *target);

#endif
