/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4fsck: what its files share. */
#ifndef R4_CMD_FSCK_H
#define R4_CMD_FSCK_H

/* r4fsck's exit codes: fsck(8)'s, and 64 for --verify. */
#define FSCK_EXIT_VERIFY 64

/* --verify=MANIFEST (cmd/fsck/verify.c): read-only; 0 when every file
 * matches, FSCK_EXIT_VERIFY when one differs, is missing or is new, 8
 * when the volume or the manifest cannot be read. */
int fsck_verify(const char *image, const char *manifest, int json);

#endif
