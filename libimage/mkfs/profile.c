/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: mkfs options: sizes, the plugin profile and -o overrides. */
#include "config.h"
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/util/err.h"
#include "format/plugin.h"

_Static_assert((int)R4_PT_COUNT == (int)FMT_PT_COUNT,
	       "public and format plugin type lists differ");
_Static_assert((int)R4_PT_HASH == (int)FMT_PT_HASH &&
	       (int)R4_PT_FORMATTING == (int)FMT_PT_FORMATTING &&
	       (int)R4_PT_CREATE == (int)FMT_PT_CREATE,
	       "public and format plugin type numbering differ");

void r4_mkfs_opts_init(struct r4_mkfs_opts *o)
{
	struct fmt_profile p;

	memset(o, 0, sizeof(*o));
	o->blksize = 4096;
	o->mkfs_time = -1;
	fmt_profile_default(&p);
	for (int t = 0; t < R4_PT_COUNT; t++)
		o->plugin[t] = p.id[t];
}

static int override_one(struct r4_mkfs_opts *o, const char *spec,
			struct r4_error *err)
{
	const char *eq = strchr(spec, '=');
	char type[64];
	int t, id;

	if (!eq || eq == spec || (size_t)(eq - spec) >= sizeof(type))
		return r4i_fail(err, R4_EINVAL, "override '%s' is not "
			       "TYPE=PLUGIN", spec);
	memcpy(type, spec, (size_t)(eq - spec));
	type[eq - spec] = '\0';
	t = fmt_ptype_lookup(type);
	if (t < 0)
		return r4i_fail(err, R4_EINVAL, "unknown plugin type '%s' in "
			       "'%s' (see r4mkfs -l)", type, spec);
	id = fmt_plugin_lookup((enum fmt_ptype)t, eq + 1);
	if (id < 0)
		return r4i_fail(err, R4_EINVAL, "unknown %s plugin '%s' (see "
			       "r4mkfs -l)", type, eq + 1);
	o->plugin[t] = (uint16_t)id;
	return 0;
}

int r4_mkfs_override(struct r4_mkfs_opts *o, const char *spec,
		     struct r4_error *err)
{
	char *copy, *tok, *save = NULL;
	int rc = 0;

	if (!spec)
		return r4i_fail(err, R4_EINVAL, "empty override");
	copy = strdup(spec);
	if (!copy)
		return r4i_fail(err, -ENOMEM, "out of memory");
	for (tok = strtok_r(copy, ",", &save); tok && !rc;
	     tok = strtok_r(NULL, ",", &save))
		rc = override_one(o, tok, err);
	free(copy);
	return rc;
}

size_t r4_mkfs_profile_str(const struct r4_mkfs_opts *o, char *buf,
			   size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int t = 0; t < R4_PT_COUNT && n < len; t++) {
		const char *name = fmt_plugin_name((enum fmt_ptype)t,
						   o->plugin[t]);
		int w = snprintf(buf + n, len - n, "%-14s %-14s (id:0x%x)\n",
				 fmt_ptype_name((enum fmt_ptype)t),
				 name ? name : "?", o->plugin[t]);

		if (w < 0)
			break;
		n += (size_t)w;
	}
	return n < len ? n : len - 1;
}

size_t r4_mkfs_plugins_str(char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int t = 0; t < FMT_PT_COUNT && n < len; t++) {
		int w = snprintf(buf + n, len - n, "%s:",
				 fmt_ptype_name((enum fmt_ptype)t));

		for (unsigned id = 0; w >= 0 && id < 32; id++) {
			const char *name = fmt_plugin_name((enum fmt_ptype)t,
							   id);

			if (name && n + (size_t)w < len)
				w += snprintf(buf + n + w, len - n - (size_t)w,
					      " %s", name);
		}
		if (w < 0 || n + (size_t)w + 1 >= len)
			break;
		n += (size_t)w;
		buf[n++] = '\n';
		buf[n] = '\0';
	}
	return n;
}
