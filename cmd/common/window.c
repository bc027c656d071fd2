/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: --partition=N and --offset=BYTES, for every command that opens
 * an image: the window of the disk image or device that is the volume
 * (r4_open_opts.offset and .size); and the backends and mount tables
 * the test hook asks every open of the command for (r4_open_opts.fault,
 * .mountinfo, .sysblock). */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "common.h"
#include "r4/part.h"

static char *opt_partition;
static char *opt_offset;
static struct r4_open_opts window;	/* offset and size, once parsed */

struct r4_fault *r4cmd_fault;
const char *r4cmd_mountinfo, *r4cmd_sysblock;

struct poptOption r4cmd_window_options[] = {
	{ "partition", '\0', POPT_ARG_STRING, &opt_partition, 0,
	  "the volume is partition N of the disk image or device (GPT or "
	  "MBR, numbered as sfdisk -l shows: MBR 1-4 primary, 5 and up "
	  "logical)", "N" },
	{ "offset", '\0', POPT_ARG_STRING, &opt_offset, 0,
	  "the volume starts at byte BYTES of the image (K M G suffixes) "
	  "and runs to its end", "BYTES" },
	POPT_TABLEEND
};

int r4cmd_window_parse(const char *image, int usage_exit, int fail_exit)
{
	struct r4_error err = { 0 };
	char *end;
	unsigned long n;

	if (opt_partition && opt_offset) {
		r4cmd_errorf("--partition and --offset: give one of them");
		return usage_exit;
	}
	if (opt_offset && (r4cmd_parse_size(opt_offset, &window.offset) ||
			   opt_offset[0] == '-')) {
		r4cmd_errorf("--offset=%s: give a number of bytes", opt_offset);
		return usage_exit;
	}
	if (!opt_partition)
		return 0;
	errno = 0;
	n = strtoul(opt_partition, &end, 10);
	if (errno || *end || !opt_partition[0] || opt_partition[0] == '-' ||
	    !n || n > 65535) {
		r4cmd_errorf("--partition=%s: give a partition number from 1 "
			     "(as sfdisk -l numbers them)", opt_partition);
		return usage_exit;
	}
	if (!image)
		return 0;
	if (r4_part_window(image, (unsigned)n, &window, &err)) {
		r4cmd_error(&err, "cannot read the partition table", 0);
		return r4cmd_busy_exit(&err, fail_exit);
	}
	return 0;
}

int r4cmd_window_set(void)
{
	return window.offset || window.size;
}

void r4cmd_open_fill(struct r4_open_opts *o)
{
	o->offset = window.offset;
	o->size = window.size;
	o->fault = r4cmd_fault;
	o->mountinfo = r4cmd_mountinfo;
	o->sysblock = r4cmd_sysblock;
}

const struct r4_open_opts *r4cmd_open(unsigned flags)
{
	static struct r4_open_opts o;

	r4_open_opts_init(&o, flags);
	r4cmd_open_fill(&o);
	return &o;
}
