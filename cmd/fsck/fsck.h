/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4fsck: what its files share. */
#ifndef R4_CMD_FSCK_H
#define R4_CMD_FSCK_H

#include <stddef.h>
#include <stdint.h>
#include "r4/check.h"
#include "r4/repair.h"

/* r4fsck's exit codes: fsck(8)'s, and 64 for --verify. */
enum {
	EXIT_CLEAN = 0, EXIT_CORRECTED = 1, EXIT_UNCORRECTED = 4,
	EXIT_OPERATIONAL = 8, EXIT_USAGE = 16
};
#define FSCK_EXIT_VERIFY 64

/* main.c: the options the reports read, the mode (0 check after a
 * replay, -1 check only, 1 repair) and why a replay failed. */
extern int opt_json, opt_preen, opt_max_reports;
extern int mode;
extern char replay_failure[R4_ERRMSG_MAX];

/* report.c: the reports. The callbacks of r4_check and r4_repair
 * (problems, fixes, progress); the problems and fixes found before the
 * open (npre of them, npre_done fixed, counted by code); the journal's
 * transactions replayed or read through; the JSON object's state. */
extern unsigned npre, npre_done, replayed, overlaid;
extern uint64_t pre_by_code[R4_CHK_CODE_COUNT];
extern int json_first, json_in_actions, json_first_action;
void on_problem(void *ctx, const struct r4_check_problem *p);
void on_pre_problem(void *ctx, const struct r4_repair_action *a);
void on_pre_action(void *ctx, const struct r4_repair_action *a);
void on_action(void *ctx, const struct r4_repair_action *a);
void on_progress(void *ctx, const char *phase, uint64_t done,
		 uint64_t total);
void json_begin(void);
void json_close_problems(void);
void json_fail_open(void);
void print_json_end(const char *path, const struct r4_check_report *r);
void print_summary(const char *path, const struct r4_check_report *r);
void print_repair_json_end(const char *path,
			   const struct r4_repair_report *r);
void print_repair_summary(const char *path,
			  const struct r4_repair_report *r);
void print_pre_only(const char *path);
/* --undo FILE under --json: what was put back. */
void print_undo_json(const char *image, const char *file, uint64_t units,
		     int one_step);

/* --verify=MANIFEST (cmd/fsck/verify.c): read-only; 0 when every file
 * matches, FSCK_EXIT_VERIFY when one differs, is missing or is new, 8
 * when the volume or the manifest cannot be read. */
int fsck_verify(const char *image, const char *manifest, int json);

#endif
