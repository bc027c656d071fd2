/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4debugfs --partitions DISK: the partition table of a disk image or
 * device, one line a partition (as mmls lists them), and which
 * partitions hold a Reiser4 volume; --json: one object, the
 * partitions an array in it. */
#include "config.h"
#include <stdio.h>
#include <string.h>
#include "../common/common.h"
#include "debugfs.h"
#include "r4/part.h"

/* One partition: an item of the "partitions" array. */
static void json_part(const struct r4_partition *p)
{
	FILE *f = r4cmd_json_out();

	r4cmd_json_item();
	fprintf(f, "{\"partition\":%u,\"start\":", p->number);
	r4cmd_json_u64(p->start);
	fputs(",\"end\":", f);
	r4cmd_json_u64(p->start + p->sectors - 1);
	fputs(",\"sectors\":", f);
	r4cmd_json_u64(p->sectors);
	fputs(",\"offset\":", f);
	r4cmd_json_u64(p->offset);
	fputs(",\"size\":", f);
	r4cmd_json_u64(p->size);
	fprintf(f, ",\"type\":\"%s\",\"type_name\":", p->type);
	r4cmd_json_str(p->type_name, strlen(p->type_name));
	fputs(",", f);
	r4cmd_json_name("name", p->name, strlen(p->name));
	fprintf(f, ",\"guid\":\"%s\",\"extended\":%s,\"logical\":%s,"
		"\"reiser4\":%s}", p->guid, p->extended ? "true" : "false",
		p->logical ? "true" : "false", p->reiser4 ? "true" : "false");
}

/* The table as one object of kind "partitions" (the common framing,
 * doc/schema/r4debugfs-partitions.schema.json): the disk's fields, then
 * the partitions as an array. */
static void json_table(const char *image, const struct r4_part_table *t)
{
	FILE *f = r4cmd_json_out();

	r4cmd_json_begin("partitions", R4CMD_JSON_SCHEMA);
	fputs(",", f);
	r4cmd_json_name("disk", image, strlen(image));
	fprintf(f, ",\"table\":\"%s\",\"sector_size\":%u,\"disk_sectors\":",
		t->scheme, t->sector);
	r4cmd_json_u64(t->disk_sectors);
	fprintf(f, ",\"disk_id\":\"%s\"", t->disk_id);
	if (t->warning[0]) {
		fputs(",", f);
		r4cmd_json_name("warning", t->warning, strlen(t->warning));
	}
	r4cmd_json_array_begin("partitions");
	for (size_t i = 0; i < t->n; i++)
		json_part(&t->p[i]);
	r4cmd_json_array_end();
	r4cmd_json_end();
	r4cmd_json_done();
}

static void text_table(const char *image, const struct r4_part_table *t)
{
	printf("%s partition table, disk id %s\n", strcmp(t->scheme, "gpt") ?
	       "DOS (MBR)" : "GUID (GPT)", t->disk_id);
	printf("Disk: %s: %llu sectors of %u bytes\n", image,
	       (unsigned long long)t->disk_sectors, t->sector);
	printf("Units are in %u-byte sectors\n\n", t->sector);
	printf("      Slot  Start        End          Length       "
	       "Description\n");
	for (size_t i = 0; i < t->n; i++) {
		const struct r4_partition *p = &t->p[i];
		const char *d = p->type_name[0] ? p->type_name : p->type;

		printf("%03zu:  %4u  %010llu   %010llu   %010llu   %s", i,
		       p->number, (unsigned long long)p->start,
		       (unsigned long long)(p->start + p->sectors - 1),
		       (unsigned long long)p->sectors, d);
		if (p->name[0]) {
			fputs(" (", stdout);
			r4cmd_put_escaped(stdout, p->name, strlen(p->name), 1);
			fputs(")", stdout);
		}
		printf("%s\n", p->reiser4 ? "  reiser4" : "");
	}
}

int dbg_partitions(const char *image, int json)
{
	struct r4_part_table t;
	struct r4_error err = { 0 };

	if (r4_part_table_read(image, &t, &err)) {
		r4cmd_error(&err, image, err.code);
		/* no table, or one that cannot be used: the image cannot be
		 * read as a partitioned disk */
		return r4cmd_busy_exit(&err, 8);
	}
	/* the backup GPT was read: say so, as sfdisk and gdisk do */
	if (t.warning[0])
		r4cmd_warnf("%s: %s", image, t.warning);
	if (json)
		json_table(image, &t);
	else
		text_table(image, &t);
	r4_part_table_free(&t);
	return 0;
}
