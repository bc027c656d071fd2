/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: manifests of file contents (cmd/common/manifest.c). */
#ifndef R4_CMD_MANIFEST_H
#define R4_CMD_MANIFEST_H

#include <stdint.h>

/* Write the manifest of the volume in image to file (through a
 * temporary file renamed over it): 0, or -1 with the error said. */
int r4cmd_manifest_write(const char *image, const char *file);

struct r4cmd_verify {
	uint64_t files;		/* in both and compared */
	uint64_t differ, missing, added, unreadable;
};
/* Compare the volume in image with the manifest in file ("-": standard
 * input), one line on stdout for each file whose contents differ, that
 * is missing or new (--json: one object a line): 0, or -1 when either
 * could not be read at all (said). */
int r4cmd_manifest_verify(const char *image, const char *file, int json,
			  struct r4cmd_verify *v);

#endif
