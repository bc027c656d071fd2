/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the environment variables the commands pass to the library as
 * options (the library reads none but TMPDIR; see common.h). */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include "common.h"
#include "r4/check.h"
#include "r4/pack.h"
#include "r4/repair.h"

/* A decimal number in variable name: 1 and *v, else 0 (unset, empty or
 * not a number). */
static int env_u64(const char *name, uint64_t *v)
{
	const char *s = getenv(name);
	char *end;
	unsigned long long n;

	if (!s || !*s)
		return 0;
	n = strtoull(s, &end, 10);
	if (*end)
		return 0;
	*v = n;
	return 1;
}

int r4cmd_source_date(int64_t *t)
{
	const char *s = getenv("SOURCE_DATE_EPOCH");

	if (!s || !*s)
		return 0;
	/* Time stamps are 32-bit seconds on disk (doc/format.md §5.2). */
	*t = (uint32_t)strtoull(s, NULL, 10);
	return 1;
}

void r4cmd_env_mkfs(struct r4_mkfs_opts *o)
{
	int64_t t;

	if (getenv("SOURCE_DATE_EPOCH"))
		o->reproducible = 1;
	if (o->mkfs_time < 0 && r4cmd_source_date(&t))
		o->mkfs_time = t;
}

void r4cmd_env_pack(struct r4_pack_opts *o)
{
	uint64_t v;

	r4cmd_env_mkfs(&o->mkfs);
	if (env_u64("R4_PACK_SPILL_AFTER", &v) && v <= INT64_MAX)
		o->spill_after = (int64_t)v;
	if (env_u64("R4_PACK_RUN_BYTES", &v) && v <= INT64_MAX)
		o->spill_run_bytes = (int64_t)v;
	if (env_u64("R4_PACK_UPPER_MEM", &v) && v <= INT64_MAX)
		o->upper_mem = (int64_t)v;
}

void r4cmd_env_check(struct r4_check_opts *o)
{
	uint64_t v;

	if (getenv("R4_CHECK_TABLES"))
		o->tables = 1;
	if (env_u64("R4_CHECK_RUN_BYTES", &v) && v && v <= SIZE_MAX)
		o->run_bytes = (size_t)v;
	if (env_u64("R4_CHECK_FIX_BYTES", &v) && v && v <= SIZE_MAX)
		o->fix_bytes = (size_t)v;
}

void r4cmd_env_repair(struct r4_repair_opts *o)
{
	const char *s;
	uint64_t v;

	r4cmd_env_check(&o->check);
	if (env_u64("R4_REBUILD_RUN_BYTES", &v) && v && v <= SIZE_MAX)
		o->rebuild_run_bytes = (size_t)v;
	if (env_u64("R4_REBUILD_SPILL_BYTES", &v) && v && v <= SIZE_MAX)
		o->rebuild_spill_bytes = (size_t)v;
	if (env_u64("R4_REBUILD_OBJS_LEVELS", &v) && v && v <= 30)
		o->rebuild_objs_levels = (unsigned)v;
	s = getenv("R4_REBUILD_OBJS_IN_MEMORY");
	if (s && *s)
		o->rebuild_objs_in_memory = 1;
}

void r4cmd_env_vol(struct r4_vol *vol)
{
	int64_t t;

	if (vol && r4cmd_source_date(&t))
		r4_vol_set_clock(vol, t);
}
