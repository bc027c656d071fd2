/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: what every command shares: the program name, error printing,
 * the shared option table, version text and progress on a terminal. */
#ifndef R4_CMD_COMMON_H
#define R4_CMD_COMMON_H

#include <popt.h>
#include <stdint.h>
#include <stdio.h>
#include "r4/r4.h"

extern const char *r4cmd_prog;

/* Shared options, pulled into each command's table with
 * POPT_ARG_INCLUDE_TABLE. */
extern int r4cmd_quiet, r4cmd_verbose, r4cmd_show_version;
extern struct poptOption r4cmd_common_options[];

/* The exit code for "the image is busy, try again later" (sysexits.h's
 * EX_TEMPFAIL); r4fsck says 8 with "in use", as fsck(8) wants. */
#define R4CMD_EXIT_BUSY 75

/* --wait[=SECONDS] (r4cmd_wait_options, for writers) and --no-lock too
 * (r4cmd_lock_options), for commands that open a volume; the R4_OPEN_
 * lock flags they ask for. r4cmd_wait_argv turns a bare "--wait" into
 * "--wait=" before popt sees it (so that the argument after it stays an
 * argument); call it first. r4cmd_lock_parse checks the SECONDS:
 * 0, or usage_exit after saying what is wrong. */
extern struct poptOption r4cmd_wait_options[];
extern struct poptOption r4cmd_lock_options[];
void r4cmd_wait_argv(int argc, const char **argv);
int r4cmd_lock_parse(int usage_exit);
unsigned r4cmd_lock_flags(void);
/* --partition=N and --offset=BYTES (r4cmd_window_options, window.c):
 * the volume is that window of the image. r4cmd_window_parse checks
 * them (usage_exit after one line saying what is wrong) and, image not
 * NULL, resolves a partition through image's table (fail_exit after one
 * line for a table or partition that cannot be used). 0 when done.
 * r4cmd_open: the open options for
 * flags (R4_OPEN_* with r4cmd_lock_flags()), that window and the test
 * hook's backends, in a static buffer each call overwrites;
 * r4cmd_open_fill copies the window and the backends into o;
 * r4cmd_window_set: 1 when a window was given. */
extern struct poptOption r4cmd_window_options[];
int r4cmd_window_parse(const char *image, int usage_exit, int fail_exit);
const struct r4_open_opts *r4cmd_open(unsigned flags);
void r4cmd_open_fill(struct r4_open_opts *o);
int r4cmd_window_set(void);
/* The test hook's power object and mount tables
 * (tests/helpers/fault_env.c, linked into the test builds only, sets
 * them before main): r4cmd_open and r4cmd_open_fill put them in every
 * open of the command, so one cut stops them all. NULL in the
 * installed commands. */
extern struct r4_fault *r4cmd_fault;
extern const char *r4cmd_mountinfo, *r4cmd_sysblock;
/* R4CMD_EXIT_BUSY when err says the image is busy (R4_EBUSY), else
 * otherwise. */
int r4cmd_busy_exit(const struct r4_error *err, int otherwise);
/* Before a command moves blocks (the repacker, r4resize): the volume is
 * checked as r4fsck -n checks it; 0 when sound, else R4_ECORRUPT with
 * err saying how many problems, the first, that the volume is not VERB
 * ("repacked") and to run r4fsck; or the check's own failure. */
int r4cmd_sound(struct r4_vol *vol, const char *path, const char *verb,
		struct r4_error *err);
/* Say on stderr that a writer holds an image read with --no-lock. */
struct r4_vol;
void r4cmd_lock_note(const struct r4_vol *vol);

/* SIGINT, SIGTERM and SIGHUP remove the temporary files the library is
 * writing (r4_tmpfile_add), then end the process by the same signal. */
void r4cmd_cleanup_on_signals(void);

void r4cmd_init(const char *prog);
/* "prog: message" on stderr; message from err when it has one. */
void r4cmd_error(const struct r4_error *err, const char *fallback, int code);
void r4cmd_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Fill err with code and a message, as the library does; code. */
int r4cmd_fail(struct r4_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void r4cmd_warnf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Report a popt parse failure, return the usage exit code. */
int r4cmd_popt_error(poptContext ctx, int rc, int usage_exit);
void r4cmd_print_version(void);

/* True when progress should be drawn (stderr is a terminal, not quiet,
 * not under R4_TEST_DETERMINISTIC). */
int r4cmd_progress_enabled(void);
/* Draw "label [#####     ] 42%" on stderr in place (carriage return,
 * no new line), at most five times a second; done >= total, or
 * r4cmd_progress_end, clears
 * the bar's line (the error and warning printers below call it), so
 * what follows starts on a line of its own. */
void r4cmd_progress(const char *label, uint64_t done, uint64_t total);
void r4cmd_progress_end(void);
/* --progress-fd=FD (r4cmd_progress_options, for the long commands):
 * r4cmd_progress also writes JSON Lines events to FD, whatever stderr
 * is: {"schema":1,"program":...,"phase":...,"done":N,"total":N,
 * "unit":...}, at most ten a second, done never decreasing within a
 * phase, the last of a phase with done == total. r4cmd_progress_parse
 * checks FD (open for writing): 0, or usage_exit after saying what is
 * wrong. r4cmd_progress_kind names the phase and unit of the calls
 * that follow; r4cmd_progress_finish sends the phase's last event
 * (done == total) when the work ended well and it was not sent yet.
 * r4cmd_progress_wanted: a bar or events are wanted. */
extern struct poptOption r4cmd_progress_options[];
int r4cmd_progress_parse(int usage_exit);
void r4cmd_progress_kind(const char *phase, const char *unit);
void r4cmd_progress_finish(void);
int r4cmd_progress_wanted(void);
/* --progress-fd was given (events are written, whatever stderr is). */
int r4cmd_progress_events(void);
/* Write len bytes of s to f with control bytes (< 0x20, 0x7f), and
 * backslash when backslash is set, as \xHH: names from an image or an
 * archive on a terminal. r4cmd_error, r4cmd_errorf and r4cmd_warnf
 * escape control bytes of their messages this way (backslash kept). */
void r4cmd_put_escaped(FILE *f, const char *s, size_t len, int backslash);

/* Parse "64M", "1G", "4096" (bytes; K M G T P suffixes, powers of
 * 1024; "64MB" and "64MiB" too). 0 or R4_EINVAL (cmd/common/parse.c). */
int r4cmd_parse_size(const char *s, uint64_t *out);
/* Parse a time: seconds since the epoch ("1700000000", "@1700000000",
 * negative allowed) or a UTC date "YYYY-MM-DD[THH:MM[:SS]][Z]" (a space
 * may replace the T). 0 or R4_EINVAL. */
int r4cmd_parse_time(const char *s, int64_t *out);

/* JSON: one writer for every command. Every top-level value is one
 * compact object on one line (JSON Lines):
 *   {"schema":VERSION,"program":PROG,"kind":KIND,...}
 * a list is an array member of that object; a failure is an object of
 * kind "error" (or an "error" member ending the object it cut short).
 * The schema of each kind is doc/schema/PROG-KIND.schema.json, installed
 * under $(datadir)/r4kit/schema; VERSION goes up when its fields change.
 * r4cmd_json is set by r4cmd_json_start(out), which sends JSON to out
 * (stdout or stderr) and keeps the last error line written to stderr
 * for the error object. */
#define R4CMD_JSON_SCHEMA 2
extern int r4cmd_json;
void r4cmd_json_start(FILE *out);
FILE *r4cmd_json_out(void);
/* 1 if s[0..len) is valid UTF-8 (no overlong form, surrogate or code
 * point above U+10FFFF). */
int r4cmd_utf8_valid(const char *s, size_t len);
/* A JSON string (with quotes) in UTF-8: control characters escaped,
 * bytes that are not valid UTF-8 written as U+FFFD. */
void r4cmd_json_str(const char *s, size_t len);
/* "key":"s" and, when s is not valid UTF-8, ,"key_b64":"exact bytes in
 * base64" (lossless). */
void r4cmd_json_name(const char *key, const char *s, size_t len);
/* A 64-bit value: a JSON number up to 2^53, a decimal string above. */
void r4cmd_json_u64(uint64_t v);
void r4cmd_json_i64(int64_t v);
/* Begin the line's object: {"schema":version,"program":PROG,"kind":kind
 * (members follow, each written with its leading comma). */
void r4cmd_json_begin(const char *kind, int version);
/* ,"key": (its value follows) */
void r4cmd_json_key(const char *key);
/* ,"key":[ ... ]: r4cmd_json_item() before each item writes the comma
 * between them. One array open at a time. */
void r4cmd_json_array_begin(const char *key);
void r4cmd_json_item(void);
void r4cmd_json_array_end(void);
/* } and the line's end; the command's value is complete. */
void r4cmd_json_end(void);
/* The top-level JSON value is complete (no error object at exit). */
void r4cmd_json_done(void);
/* ,"error":{"message":LAST ERROR,"exit":code} inside an open object. */
void r4cmd_json_error_member(int code);
/* At exit, with --json: an object begun and not ended is ended (its
 * array closed, an "error" member when code != 0); a failure that
 * printed nothing prints {"schema":N,"program":P,"kind":"error",
 * "error":{...}}. Returns code. */
int r4cmd_json_exit(int code);

/* The environment, which the library does not read (doc/hacking.md §1):
 * each fills the options of one library call from the variables that
 * concern it (env.c).
 *   SOURCE_DATE_EPOCH   the time of new and changed objects; with -U,
 *                       a reproducible mkfs id (r4cmd_env_mkfs,
 *                       r4cmd_env_vol);
 *   R4_PACK_SPILL_AFTER, R4_PACK_RUN_BYTES, R4_PACK_UPPER_MEM   the
 *                       packer's spill of names and of the nodes above
 *                       the leaves to $TMPDIR (r4cmd_env_pack);
 *   R4_CHECK_TABLES, R4_CHECK_RUN_BYTES      the checker's tables or
 *                       sorted runs, R4_CHECK_FIX_BYTES the repair's
 *                       list of fixes (r4cmd_env_check);
 *   R4_REBUILD_RUN_BYTES  the tree rebuild's sorted runs
 *                       (r4cmd_env_repair);
 *   R4_REBUILD_SPILL_BYTES  its new nodes past that many bytes in
 *                       $TMPDIR, whatever the room (r4cmd_env_repair);
 *   R4_REBUILD_OBJS_IN_MEMORY  the check's objects the rebuild looks
 *                       up kept in memory, not in $TMPDIR (set: on);
 *   R4_REBUILD_OBJS_LEVELS  only that many (1 to 30) steps of a look-up
 *                       of them in memory, the rest in $TMPDIR;
 *   R4_FSCK_STATS       r4fsck says on stderr how many checks its repair
 *                       ran and how many built the tables (cmd/fsck).
 * An empty or malformed value is taken as unset. */
struct r4_pack_opts;
struct r4_check_opts;
struct r4_repair_opts;
/* 1 and *t when SOURCE_DATE_EPOCH is set and not empty. */
int r4cmd_source_date(int64_t *t);
void r4cmd_env_mkfs(struct r4_mkfs_opts *o);
void r4cmd_env_pack(struct r4_pack_opts *o);
void r4cmd_env_check(struct r4_check_opts *o);
/* r4cmd_env_check's, and R4_REBUILD_RUN_BYTES: the tree rebuild's run
 * budget (struct r4_repair_opts, rebuild_run_bytes), and
 * R4_REBUILD_SPILL_BYTES (rebuild_spill_bytes), and
 * R4_REBUILD_OBJS_IN_MEMORY (rebuild_objs_in_memory), and
 * R4_REBUILD_OBJS_LEVELS (rebuild_objs_levels). */
void r4cmd_env_repair(struct r4_repair_opts *o);
void r4cmd_env_vol(struct r4_vol *vol);

#endif
