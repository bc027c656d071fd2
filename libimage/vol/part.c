/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the partition table of an image (include/r4/part.h): read
 * through the device layer, decoded by format/part.c, and which
 * partitions hold a Reiser4 volume. */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "r4/part.h"
#include "format/part.h"
#include "format/super.h"
#include "libimage/io/dev.h"
#include "libimage/util/err.h"

static int dev_read(void *ctx, uint64_t off, void *buf, size_t len)
{
	return io_read(ctx, buf, len, off, NULL);
}

/* A master super block that verifies and the format40 magic where it
 * says the format40 block is, inside the partition (doc/format.md
 * §1.2, §1.3). */
static int holds_reiser4(struct io_dev *dev, const struct fmt_part *p,
			 uint32_t ss)
{
	uint8_t buf[FMT_MASTER_SIZE > 64 ? FMT_MASTER_SIZE : 64];
	uint64_t base = p->start * ss;
	uint64_t size = p->sectors * ss;
	struct fmt_master m;
	uint64_t at;

	if (size < FMT_MASTER_OFFSET + FMT_MASTER_SIZE ||
	    io_read(dev, buf, FMT_MASTER_SIZE, base + FMT_MASTER_OFFSET, NULL))
		return 0;
	fmt_master_decode(buf, &m);
	if (fmt_master_verify(&m))
		return 0;
	at = fmt_blk_format40(m.blksize) * m.blksize + FMT_FORMAT40_OFF_MAGIC;
	if (at + FMT_FORMAT40_MAGIC_SIZE > size ||
	    io_read(dev, buf, FMT_FORMAT40_MAGIC_SIZE, base + at, NULL))
		return 0;
	return !memcmp(buf, FMT_FORMAT40_MAGIC, strlen(FMT_FORMAT40_MAGIC));
}

static void fill(struct io_dev *dev, const struct fmt_part_table *ft,
		 const struct fmt_part *fp, struct r4_partition *p)
{
	const char *tn = fmt_part_type_name(ft->kind, fp);

	memset(p, 0, sizeof(*p));
	p->number = fp->number;
	p->start = fp->start;
	p->sectors = fp->sectors;
	p->offset = fp->start * ft->sector;
	p->size = fp->sectors * ft->sector;
	p->extended = fp->extended;
	p->logical = fp->logical;
	snprintf(p->type_name, sizeof(p->type_name), "%s", tn ? tn : "");
	if (ft->kind == FMT_PT_GPT) {
		fmt_guid_str(fp->type_guid, p->type);
		fmt_guid_str(fp->guid, p->guid);
		snprintf(p->name, sizeof(p->name), "%s", fp->name);
	} else {
		snprintf(p->type, sizeof(p->type), "0x%02x", fp->type);
	}
	p->reiser4 = !fp->extended && holds_reiser4(dev, fp, ft->sector);
}

/* A block device's logical sector size (0 for an image file: the
 * decoder then finds it from the table). */
static uint32_t logical_sector(const struct io_dev *dev)
{
	int fd, ss = 0;

	if (!dev->is_blkdev || (fd = open(dev->path, O_RDONLY)) < 0)
		return 0;
	if (ioctl(fd, BLKSSZGET, &ss))
		ss = 0;
	close(fd);
	return ss > 0 ? (uint32_t)ss : 0;
}

static int decode(struct io_dev *dev, struct fmt_part_table *ft,
		  struct r4_error *err)
{
	char why[R4_ERRMSG_MAX - 64];
	int rc = fmt_part_decode(dev_read, dev, dev->size, logical_sector(dev),
				 ft, why, sizeof(why));

	if (rc)
		return r4i_fail(err, rc, "%s: %s", dev->path, why);
	return 0;
}

int r4_part_table_read(const char *path, struct r4_part_table *t,
		       struct r4_error *err)
{
	struct fmt_part_table *ft = malloc(sizeof(*ft));
	struct io_dev *dev = NULL;
	int rc;

	memset(t, 0, sizeof(*t));
	if (!ft)
		return r4i_fail(err, -ENOMEM, "%s: out of memory", path);
	rc = io_open(path, IO_RDONLY | IO_NOLOCK | IO_FORCE, &dev, NULL, err);
	if (!rc)
		rc = decode(dev, ft, err);
	if (!rc && !(t->p = calloc(ft->n ? ft->n : 1, sizeof(*t->p))))
		rc = r4i_fail(err, -ENOMEM, "%s: out of memory", path);
	if (!rc) {
		t->scheme = ft->kind == FMT_PT_GPT ? "gpt" : "dos";
		t->disk_sectors = ft->disk_sectors;
		t->sector = ft->sector;
		snprintf(t->warning, sizeof(t->warning), "%s", ft->warning);
		if (ft->kind == FMT_PT_GPT)
			fmt_guid_str(ft->disk_guid, t->disk_id);
		else
			snprintf(t->disk_id, sizeof(t->disk_id), "0x%08x",
				 ft->disk_id);
		for (t->n = 0; t->n < ft->n; t->n++)
			fill(dev, ft, &ft->p[t->n], &t->p[t->n]);
	}
	io_close(dev);
	free(ft);
	return rc;
}

void r4_part_table_free(struct r4_part_table *t)
{
	free(t->p);
	memset(t, 0, sizeof(*t));
}

int r4_part_window(const char *path, unsigned number,
		   struct r4_open_opts *o, struct r4_error *err)
{
	struct r4_part_table t;
	const struct r4_partition *p = NULL;
	int rc = r4_part_table_read(path, &t, err);

	if (rc)
		return rc;
	for (size_t i = 0; i < t.n; i++)
		if (t.p[i].number == number)
			p = &t.p[i];
	if (!p)
		rc = r4i_fail(err, R4_ENOTFOUND, "%s: no partition %u in its "
			     "%s partition table", path, number, t.scheme);
	else if (p->extended)
		rc = r4i_fail(err, R4_EINVAL, "%s: partition %u is the extended "
			     "partition (a container of logical partitions, not "
			     "a volume)", path, number);
	else {
		o->offset = p->offset;
		o->size = p->size;
	}
	r4_part_table_free(&t);
	return rc;
}
