/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4fsck --verify: the volume's files against a manifest of their
 * contents (cmd/common/manifest.c). Reiser4 keeps no checksum of file
 * data: a block of a file zeroed or changed leaves the volume consistent
 * for the checker, and only a manifest made when the image was tells. */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "fsck.h"
#include "../common/common.h"
#include "../common/manifest.h"

int fsck_verify(const char *image, const char *manifest, int json)
{
	struct r4cmd_verify v;
	uint64_t bad;

	if (json) {
		r4cmd_json_begin("verify", R4CMD_JSON_SCHEMA);
		putchar(',');
		r4cmd_json_name("image", image, strlen(image));
		putchar(',');
		r4cmd_json_name("manifest", manifest, strlen(manifest));
		r4cmd_json_array_begin("findings");
	}
	/* a failure: r4cmd_json_exit ends the object with its error */
	if (r4cmd_manifest_verify(image, manifest, json, &v))
		return 8;
	bad = v.differ + v.missing + v.added + v.unreadable;
	if (json) {
		r4cmd_json_array_end();
		printf(",\"verified\":%" PRIu64 ",\"differ\":%" PRIu64
		       ",\"missing\":%" PRIu64 ",\"new\":%" PRIu64
		       ",\"unreadable\":%" PRIu64 ",\"clean\":%s", v.files,
		       v.differ, v.missing, v.added, v.unreadable,
		       bad ? "false" : "true");
		r4cmd_json_end();
	} else if (!r4cmd_quiet || bad) {
		printf("%s: %" PRIu64 " files compared with %s: %" PRIu64
		       " differ, %" PRIu64 " missing, %" PRIu64 " new, %"
		       PRIu64 " unreadable\n", image, v.files, manifest,
		       v.differ, v.missing, v.added, v.unreadable);
	}
	return bad ? FSCK_EXIT_VERIFY : 0;
}
