/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4debugfs: shared state of the commands and the command table.
 *
 * A handler gets the words of one command line (argv[0] is the command
 * name, for "print" the subcommand is argv[1]) and returns DBG_OK,
 * DBG_FAIL (something could not be read or does not exist; a one-line
 * message naming the path or block is already on stderr) or DBG_USAGE
 * (bad arguments; the usage line is already on stderr). */
#ifndef R4_CMD_DEBUGFS_H
#define R4_CMD_DEBUGFS_H

#include <stddef.h>
#include <stdint.h>
#include "r4/r4.h"
#include "r4/read.h"
#include "r4/util.h"

enum { DBG_OK = 0, DBG_FAIL = 1, DBG_USAGE = 2 };

struct r4_txn;

struct dbg {
	struct r4_vol *vol;
	struct r4_txn *txn;	/* -w: the open transaction, or NULL */
	int writable;		/* -w */
	int atomic;		/* --atomic: one transaction for the run */
	int aborted;		/* --atomic: a command failed */
	struct r4_super_info si;
	const char *image;
	int json;		/* --json: one JSON value per command */
	int large_keys;		/* key policy, 1 large */
	uint8_t *buf;		/* one scratch block */
};

struct dbg_cmd {
	const char *name;
	int (*fn)(struct dbg *d, int argc, const char **argv);
	const char *usage;
	const char *help;
};

/* main.c / cmds.c: run one command line. */
int dbg_run_line(struct dbg *d, const char *line);
extern const struct dbg_cmd dbg_cmds[];
/* Print "usage: USAGE" of the command named argv[0] and return
 * DBG_USAGE. */
int dbg_usage(const char *name);
/* Parse a block number (decimal or 0x hex) that must lie inside the
 * volume; prints the error and returns nonzero if not. */
int dbg_parse_block(struct dbg *d, const char *s, uint64_t *blk);
/* Parse an unsigned 64-bit number (decimal or 0x hex). */
int dbg_parse_u64(const char *s, uint64_t *out);
/* Read block blk into d->buf; prints a one-line error naming the block
 * and returns DBG_FAIL when it cannot. */
int dbg_read(struct dbg *d, uint64_t blk);

/* print_super.c */
int dbg_print_super(struct dbg *d, int argc, const char **argv);
int dbg_print_journal(struct dbg *d, int argc, const char **argv);
int dbg_print_bitmap(struct dbg *d, int argc, const char **argv);

/* print_node.c: print one formatted node held in blk (the d->blksize
 * bytes of block nr); returns DBG_OK or DBG_FAIL if it does not verify
 * (everything that can be decoded is still printed). */
int dbg_print_node(struct dbg *d, int argc, const char **argv);
int dbg_show_node(struct dbg *d, uint64_t nr, const uint8_t *blk);
/* Print item i of node blk (header line and decoded body). */
int dbg_print_item(const struct dbg *d, const uint8_t *blk, unsigned i);
/* "[loc:type:ordering:oid:offset]" in hex into buf (>= 96 bytes). */
struct fmt_key;
/* Mode as ls -l prints it ("drwxr-xr-x") into buf (>= 11 bytes). */
void dbg_mode_str(unsigned mode, char *buf);
/* Print "first bytes" of a buffer: hex then a printable rendering. */
void dbg_hexhead(const uint8_t *p, size_t len, size_t max);

/* print_tree.c */
int dbg_print_tree(struct dbg *d, int argc, const char **argv);

/* objcmds.c, mapcmds.c, rdump.c: the commands on files. */
/* Resolve PATH; prints "PATH: why" and returns DBG_FAIL if it fails. */
int dbg_resolve(struct dbg *d, const char *path, struct r4_objref *ref);
/* Print the library's message (or "what: strerror") for a failure. */
int dbg_fail(const struct r4_error *err, const char *what, int code);
/* Host output files (r4_outfile_open against the image being read;
 * "read" in its messages). dbg_out_open: DBG_OK, or DBG_FAIL with one
 * line "CMD: OUT: why" printed. dbg_out_end: rc DBG_OK puts the file in
 * place (DBG_FAIL with a line when that fails), any other rc removes
 * the temporary file and returns rc. dbg_out_stdout: DBG_FAIL with a
 * line when standard output is the image. */
int dbg_out_open(struct dbg *d, const char *cmd, const char *out,
		 unsigned flags, unsigned mode, struct r4_outfile *o);
int dbg_out_end(const char *cmd, const char *out, struct r4_outfile *o,
		int rc);
int dbg_out_stdout(struct dbg *d, const char *cmd);
/* What a tree dump wrote under the folder fd (named dir) made durable
 * at once (syncfs: its files, folders and names): DBG_OK, or DBG_FAIL
 * with one line "CMD: DIR: why". */
int dbg_sync_tree(const char *cmd, int fd, const char *dir);
/* recover.c: former paths of deleted objects (the live folders found by
 * one walk, the deleted ones by their names), ISO 8601 UTC times, and
 * undel --all DIR. */
struct r4_deleted;
/* The live directories (oid -> "/a/b", the root "") and the deleted
 * objects (oid -> their r4_deleted, in v in the order added). */
struct former {
	struct r4_u64map live;		/* char * */
	struct r4_u64map dead;		/* struct r4_deleted * */
	struct r4_deleted **v;
	size_t n, cap;
};
int dbg_former_init(struct dbg *d, struct former **out);
int dbg_former_add(struct former *f, const struct r4_deleted *x);
void dbg_former_free(struct former *f);
void dbg_former_path(const struct former *f, const struct r4_deleted *x,
		     char *buf, size_t cap);
void dbg_iso_time(int64_t s, char out[32]);
int dbg_undel_all(struct dbg *d, const char *dir);
/* forensic.c: all len bytes of buf to fd at off: 0 or a negative errno. */
int dbg_pwrite_all(int fd, uint64_t off, const void *buf, size_t len);
/* Print a name with bytes < 0x20, 0x7f and backslash as \xHH. */
void dbg_put_name(const char *s, size_t len);
/* A directory's entries, copied (names NUL-terminated too). */
struct dent {
	char *name;
	size_t len;
	struct r4_objref ref;
};
struct dlist {
	struct dent *v;
	size_t n, cap;
};
/* The entries of a directory in key order, or -ENOTDIR. */
int dbg_list_dir(struct dbg *d, const struct r4_objref *dir,
		 struct dlist *l, struct r4_error *err);
void dbg_dlist_free(struct dlist *l);
/* Copy a regular file's bytes to fd; prints the error itself. */
int dbg_copy_out(struct dbg *d, const char *path, const struct r4_objref *ref,
		 int fd);
int dbg_ls(struct dbg *d, int argc, const char **argv);
int dbg_stat(struct dbg *d, int argc, const char **argv);
int dbg_cat(struct dbg *d, int argc, const char **argv);
int dbg_dump(struct dbg *d, int argc, const char **argv);
int dbg_rdump(struct dbg *d, int argc, const char **argv);
int dbg_print_file(struct dbg *d, int argc, const char **argv);
int dbg_blocks(struct dbg *d, int argc, const char **argv);
int dbg_icheck(struct dbg *d, int argc, const char **argv);
int dbg_ncheck(struct dbg *d, int argc, const char **argv);

/* forensic.c: lsdel, undel, bodyfile, dumpblock, hash. */
int dbg_lsdel(struct dbg *d, int argc, const char **argv);
int dbg_undel(struct dbg *d, int argc, const char **argv);
int dbg_bodyfile(struct dbg *d, int argc, const char **argv);
int dbg_dumpblock(struct dbg *d, int argc, const char **argv);
int dbg_hash(struct dbg *d, int argc, const char **argv);
/* sha256 of every regular file under path (rdump --manifest). */
int dbg_manifest(struct dbg *d, const char *path);

/* edit.c: the commands that change the volume (-w). */
int dbg_mkdir(struct dbg *d, int argc, const char **argv);
int dbg_write(struct dbg *d, int argc, const char **argv);
int dbg_rm(struct dbg *d, int argc, const char **argv);
int dbg_rmdir(struct dbg *d, int argc, const char **argv);
int dbg_mv(struct dbg *d, int argc, const char **argv);
int dbg_ln(struct dbg *d, int argc, const char **argv);
int dbg_mknod(struct dbg *d, int argc, const char **argv);
int dbg_chmod(struct dbg *d, int argc, const char **argv);
int dbg_chown(struct dbg *d, int argc, const char **argv);
int dbg_touch(struct dbg *d, int argc, const char **argv);
int dbg_truncate(struct dbg *d, int argc, const char **argv);
/* Drop the open transaction; with --atomic the run is aborted. */
void dbg_edit_abort(struct dbg *d);
/* --partitions (partitions.c): list the partition table of image; 0, or
 * 8 (75 busy) after one line when it has no usable table. */
int dbg_partitions(const char *image, int json);
/* End of the run: commit the --atomic transaction when ok and nothing
 * failed, else abort it. DBG_OK or DBG_FAIL (message printed). */
int dbg_edit_finish(struct dbg *d, int ok);

#endif
