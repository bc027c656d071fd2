/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4arc: built against an installed libr4kit-archive (pkg-config
 * r4kit-archive) by tests/install.sh: the archive options of r4/archive.h
 * set and freed through the shared library. */
#include <stdio.h>
#include <r4/archive.h>

int main(void)
{
	struct r4_archive_opts o;
	struct r4_error err = { 0, "", 0 };
	int rc;

	r4_archive_opts_init(&o);
	rc = r4_archive_add_exclude(&o, "*.o", &err);
	r4_archive_opts_free(&o);
	printf("archive options: %s\n", rc ? err.msg : "ok");
	return rc ? 1 : 0;
}
