/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: making a volume. The result is what mkfs.reiser4 1.2.2 writes
 * for the same options: master and format40 super blocks, one bitmap
 * block per region, zeroed journal header and footer, the status block,
 * the backup copies, and a two-level tree (a twig root pointing at one
 * leaf that holds the root directory, and lost+found with -s).
 *
 * Order: everything but the master super block is written and synced
 * first, the master last, so an interrupted mkfs never leaves something
 * that looks like a volume. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uuid/uuid.h>
#include "libimage/util/err.h"
#include "libimage/io/dev.h"
#include "libimage/tree/nodebuf.h"
#include "libimage/mkfs/fixed.h"
#include "format/bitmap.h"
#include "format/checksum.h"
#include "format/item.h"
#include "format/node.h"
#include "format/plugin.h"
#include "format/super.h"

#define ROUND_BYTES 65536	/* mkfs.reiser4 rounds the length down */
#define PROBE_BYTES (1024 * 1024)

uint32_t mkfs_time(const struct r4_mkfs_opts *o)
{
	if (o->mkfs_time >= 0)
		return (uint32_t)o->mkfs_time;
	return (uint32_t)time(NULL);
}

/* A random mkfs id, or one derived from the UUID when the caller asks
 * for a reproducible volume (o->reproducible with a given UUID). */
static uint32_t mkfs_id(const struct r4_mkfs_opts *o, const uint8_t *uuid)
{
	uint8_t r[16];
	uint32_t id;

	if (o->have_uuid && o->reproducible)
		memcpy(r, uuid, sizeof(r));
	else
		uuid_generate_random(r);
	id = fmt_crc32c_raw(~0u, r, sizeof(r));
	return id ? id : 1;
}

static void root_pset(struct mkfs *m)
{
	const uint16_t *p = m->o->plugin;

	memset(m->pset, 0, sizeof(m->pset));
	m->pset[FMT_PSET_FILE] = FMT_OBJ_DIR40;
	m->pset[FMT_PSET_DIR] = 0;	/* hashed directory */
	m->pset[FMT_PSET_PERM] = 0;
	m->pset[FMT_PSET_FORMATTING] = p[R4_PT_FORMATTING];
	m->pset[FMT_PSET_HASH] = p[R4_PT_HASH];
	m->pset[FMT_PSET_FIBRATION] = p[R4_PT_FIBRATION];
	m->pset[FMT_PSET_SD] = FMT_ITEM_STAT40;
	m->pset[FMT_PSET_DIRITEM] = FMT_ITEM_CDE40;
	m->pset[FMT_PSET_CIPHER] = 0;
	m->pset[FMT_PSET_DIGEST] = 0;
	m->pset[FMT_PSET_COMPRESSION] = p[R4_PT_COMPRESS];
	m->pset[FMT_PSET_CMODE] = p[R4_PT_CMODE];
	m->pset[FMT_PSET_CLUSTER] = p[R4_PT_CLUSTER];
	m->pset[FMT_PSET_CREATE] = p[R4_PT_CREATE];
}

void mkfs_make_supers(struct mkfs *m, uint64_t blocks)
{
	const struct r4_mkfs_opts *o = m->o;

	fmt_master_init(&m->master, m->bs);
	memcpy(m->master.uuid, o->uuid, FMT_UUID_SIZE);
	memset(m->master.label, 0, FMT_LABEL_SIZE);
	memcpy(m->master.label, o->label, strnlen(o->label, FMT_LABEL_SIZE));

	fmt_format40_init(&m->sb);
	m->sb.block_count = blocks;
	m->sb.root_block = fmt_blk_mkfs_root(m->bs);
	m->sb.next_oid = FMT_FIRST_FREE_OID + (o->lost_found ? 1 : 0);
	m->sb.file_count = 1 + (o->lost_found ? 1 : 0);
	m->sb.mkfs_id = mkfs_id(o, o->uuid);
	m->sb.tree_height = 2;
	m->sb.version = FMT_FORMAT40_VERSION;
	m->sb.policy = o->plugin[R4_PT_FORMATTING];
	m->sb.node_pid = o->plugin[R4_PT_NODE];
	m->pol = o->plugin[R4_PT_KEY] ? FMT_KEY_LARGE : FMT_KEY_SHORT;
	fmt_format40_set_key_policy(&m->sb, m->pol);
	root_pset(m);
	m->nbackups = fmt_backup_blocks(blocks, m->bs, m->backups,
				       MKFS_MAX_BACKUPS);
}

void mkfs_root_pset_ext(const struct mkfs *m, struct fmt_pset *ps)
{
	memset(ps, 0, sizeof(*ps));
	for (unsigned i = FMT_PSET_PERM; i < FMT_PSET_COUNT; i++) {
		ps->member[ps->count] = (uint16_t)i;
		ps->id[ps->count++] = (uint16_t)m->pset[i];
	}
}

static int make_dir_sd(struct mkfs *m, int with_pset, uint32_t nlink,
		       uint64_t entries, uint64_t bytes, uint8_t *out,
		       size_t *len)
{
	struct fmt_stat st;
	int rc;

	memset(&st, 0, sizeof(st));
	st.mask = (1u << FMT_SDEXT_LW) | (1u << FMT_SDEXT_UNIX);
	st.mode = 040755;
	st.nlink = nlink;
	st.size = entries;
	st.uid = (uint32_t)getuid();
	st.gid = (uint32_t)getgid();
	st.atime = st.mtime = st.ctime = m->now;
	st.rdev_or_bytes = bytes;
	if (with_pset) {
		st.mask |= 1u << FMT_SDEXT_PSET;
		mkfs_root_pset_ext(m, &st.pset);
	}
	rc = fmt_stat_size(&st, len);
	return rc ? rc : fmt_stat_encode(&st, out, *len);
}

static int entry_for(struct mkfs *m, uint64_t dir, const char *name,
		     const struct fmt_key *target, struct fmt_cde40_entry *e)
{
	struct fmt_key k;
	int rc;

	rc = fmt_key_entry(&k, m->pol, dir, name, strlen(name),
			   m->pset[FMT_PSET_HASH], m->pset[FMT_PSET_FIBRATION]);
	if (rc)
		return rc;
	memset(e, 0, sizeof(*e));
	e->ordering = k.el[1];
	e->objectid = k.el[2];
	e->offset = k.el[3];
	e->target = *target;
	if (fmt_entry_name_stored(m->pol, strlen(name))) {
		e->name = (const uint8_t *)name;
		e->name_len = strlen(name);
	}
	return 0;
}

/* Append a directory's cde40 item holding the given entries. */
static int add_dir_item(struct mkfs *m, uint8_t *leaf, uint64_t dir,
			const struct fmt_cde40_entry *e, size_t n)
{
	uint8_t body[1024];
	struct fmt_key k;
	size_t len;
	int rc;

	rc = fmt_cde40_size(e, n, m->pol, &len);
	if (!rc && len > sizeof(body))
		rc = R4_ENOSPC;
	if (!rc)
		rc = fmt_cde40_encode(e, n, m->pol, body, sizeof(body));
	if (rc)
		return rc;
	memset(&k, 0, sizeof(k));
	k.el[0] = dir << 4 | FMT_KEY_FILE_NAME;
	k.el[1] = e[0].ordering;
	k.el[2] = e[0].objectid;
	k.el[3] = e[0].offset;
	return node_append_item(leaf, m->bs, m->pol, &k, FMT_ITEM_CDE40, body,
				len, NULL);
}

static uint64_t dir_bytes(struct mkfs *m, const char *const *names, size_t n)
{
	uint64_t b = 0;

	for (size_t i = 0; i < n; i++)
		b += fmt_cde40_entry_bytes(m->pol, fmt_entry_name_stored(
				m->pol, strlen(names[i])) ? strlen(names[i]) : 0);
	return b;
}

static int build_leaf(struct mkfs *m, uint8_t *leaf)
{
	static const char *const rnames[] = { ".", "..", "lost+found" };
	static const char *const lnames[] = { ".", ".." };
	struct fmt_cde40_entry e[3];
	struct fmt_key root, lf;
	uint8_t sd[256];
	size_t n = m->o->lost_found ? 3 : 2, len;
	int rc;

	fmt_key_sd(&root, FMT_ROOT_LOCALITY, 0, FMT_ROOT_OID);
	rc = fmt_node_init(leaf, m->bs, m->sb.node_pid, 1, m->sb.mkfs_id);
	if (!rc)
		rc = entry_for(m, FMT_ROOT_OID, "lost+found", &root, &e[2]);
	if (rc)
		return rc;
	fmt_key_sd(&lf, FMT_ROOT_OID, e[2].ordering, FMT_FIRST_FREE_OID);
	e[2].target = lf;
	rc = make_dir_sd(m, 1, 2 + (uint32_t)n - 1, n, dir_bytes(m, rnames, n),
			 sd, &len);
	if (!rc)
		rc = node_append_item(leaf, m->bs, m->pol, &root,
				      FMT_ITEM_STAT40, sd, len, NULL);
	if (!rc)
		rc = entry_for(m, FMT_ROOT_OID, ".", &root, &e[0]);
	if (!rc)
		rc = entry_for(m, FMT_ROOT_OID, "..", &root, &e[1]);
	if (!rc)
		rc = add_dir_item(m, leaf, FMT_ROOT_OID, e, n);
	if (rc || !m->o->lost_found)
		return rc;
	rc = make_dir_sd(m, 0, 2, 2, dir_bytes(m, lnames, 2), sd, &len);
	if (!rc)
		rc = node_append_item(leaf, m->bs, m->pol, &lf,
				      FMT_ITEM_STAT40, sd, len, NULL);
	if (!rc)
		rc = entry_for(m, FMT_FIRST_FREE_OID, ".", &lf, &e[0]);
	if (!rc)
		rc = entry_for(m, FMT_FIRST_FREE_OID, "..", &root, &e[1]);
	if (!rc)
		rc = add_dir_item(m, leaf, FMT_FIRST_FREE_OID, e, 2);
	return rc;
}

int mkfs_write_block(struct mkfs *m, uint64_t blk, const uint8_t *buf,
		       const char *what, struct r4_error *err)
{
	int rc = io_write(m->dev, buf, m->bs, blk * m->bs, err);

	if (rc)
		return r4i_fail_over(err, rc, "%s: cannot write the %s (block "
				    "%llu): %s", m->path, what,
				    (unsigned long long)blk, r4_strerror(rc));
	return 0;
}

static int write_tree(struct mkfs *m, struct r4_error *err)
{
	uint64_t root = fmt_blk_mkfs_root(m->bs), leaf = root + 1;
	uint8_t ptr[FMT_NODEPTR40_SIZE];
	struct fmt_key k;
	int rc;

	rc = build_leaf(m, m->buf);
	if (rc)
		return r4i_fail(err, rc, "%s: cannot build the root directory: "
			       "%s", m->path, r4_strerror(rc));
	fmt_node_stamp(m->buf, m->bs);
	rc = mkfs_write_block(m, leaf, m->buf, "first leaf", err);
	if (rc)
		return rc;
	fmt_key_sd(&k, FMT_ROOT_LOCALITY, 0, FMT_ROOT_OID);
	fmt_nodeptr40_encode(leaf, ptr);
	rc = fmt_node_init(m->buf, m->bs, m->sb.node_pid, 2, m->sb.mkfs_id);
	if (!rc)
		rc = node_append_item(m->buf, m->bs, m->pol, &k,
				      FMT_ITEM_NODEPTR40, ptr, sizeof(ptr),
				      NULL);
	if (rc)
		return r4i_fail(err, rc, "%s: cannot build the root node: %s",
			       m->path, r4_strerror(rc));
	fmt_node_stamp(m->buf, m->bs);
	return mkfs_write_block(m, root, m->buf, "root node", err);
}

static int is_backup(const struct mkfs *m, uint64_t blk)
{
	for (size_t i = 0; i < m->nbackups; i++)
		if (m->backups[i] == blk)
			return 1;
	return 0;
}

/* Fill buf with region k's bitmap; return its used-block count. */
static uint64_t make_bitmap(const struct mkfs *m, uint64_t k, uint8_t *buf)
{
	uint64_t start = fmt_bitmap_region_start(k, m->bs);
	uint64_t len = fmt_bitmap_region_len(k, m->sb.block_count, m->bs);
	uint64_t bpb = fmt_bitmap_bpb(m->bs), used;

	memset(buf, 0, m->bs);
	if (k == 0)
		fmt_bitmap_set_range(buf, 0, fmt_min_block_count(m->bs));
	else
		fmt_bitmap_set(buf, fmt_bitmap_blk(k, m->bs) - start);
	for (size_t i = 0; i < m->nbackups; i++)
		if (m->backups[i] >= start && m->backups[i] < start + len)
			fmt_bitmap_set(buf, m->backups[i] - start);
	used = len - fmt_bitmap_count_zero(buf, 0, len);
	if (len < bpb)
		fmt_bitmap_set_range(buf, len, bpb);
	fmt_bitmap_csum_update(buf, m->bs);
	return used;
}

static int plain_region(const struct mkfs *m, uint64_t k)
{
	uint64_t start = fmt_bitmap_region_start(k, m->bs);
	uint64_t len = fmt_bitmap_region_len(k, m->sb.block_count, m->bs);

	return k > 0 && len == fmt_bitmap_bpb(m->bs) &&
	       !is_backup(m, start + 1) && !is_backup(m, start);
}

/* Count the used blocks so the super block can carry the free count. */
static void count_free(struct mkfs *m)
{
	uint64_t n = fmt_bitmap_count(m->sb.block_count, m->bs), used = 0;
	uint64_t plain_used = 0;
	int have_plain = 0;

	for (uint64_t k = 0; k < n; k++) {
		if (plain_region(m, k)) {
			if (!have_plain) {
				plain_used = make_bitmap(m, k, m->buf);
				have_plain = 1;
			}
			used += plain_used;
		} else {
			used += make_bitmap(m, k, m->buf);
		}
	}
	m->sb.free_blocks = m->sb.block_count - used;
}

static int write_bitmaps(struct mkfs *m, struct r4_error *err)
{
	uint64_t n = fmt_bitmap_count(m->sb.block_count, m->bs);
	uint8_t *plain = malloc(m->bs);
	int have_plain = 0, rc = 0;

	if (!plain)
		return r4i_fail(err, -ENOMEM, "%s: out of memory", m->path);
	for (uint64_t k = 0; k < n && !rc; k++) {
		const uint8_t *src = m->buf;

		if (plain_region(m, k)) {
			if (!have_plain)
				make_bitmap(m, k, plain);
			have_plain = 1;
			src = plain;
		} else {
			make_bitmap(m, k, m->buf);
		}
		rc = mkfs_write_block(m, fmt_bitmap_blk(k, m->bs), src,
				      "bitmap block", err);
	}
	free(plain);
	return rc;
}

int mkfs_write_control(struct mkfs *m, struct r4_error *err)
{
	struct fmt_status st;
	struct fmt_backup b;
	int rc;

	memset(m->buf, 0, m->bs);
	rc = mkfs_write_block(m, fmt_blk_journal_header(m->bs), m->buf,
			      "journal header", err);
	if (!rc)
		rc = mkfs_write_block(m, fmt_blk_journal_footer(m->bs), m->buf,
				      "journal footer", err);
	if (rc)
		return rc;
	fmt_status_init(&st);
	fmt_status_encode(&st, m->buf);
	rc = mkfs_write_block(m, fmt_blk_status(m->bs), m->buf, "status block",
			      err);
	fmt_backup_make(&m->master, &m->sb, m->pset, &b);
	memset(m->buf, 0, m->bs);
	fmt_backup_encode(&b, m->buf);
	for (size_t i = 0; i < m->nbackups && !rc; i++)
		rc = mkfs_write_block(m, m->backups[i], m->buf, "backup block",
				      err);
	return rc;
}

/* mkfs.reiser4 zero-fills the first 64 KiB; skip it where it already
 * reads as zeros, so a sparse image stays sparse. */
int mkfs_zero_head(struct mkfs *m, struct r4_error *err)
{
	uint8_t *z = calloc(1, FMT_MASTER_OFFSET);
	int rc;

	if (!z)
		return r4i_fail(err, -ENOMEM, "%s: out of memory", m->path);
	rc = io_read(m->dev, z, FMT_MASTER_OFFSET, 0, err);
	if (!rc) {
		size_t i = 0;

		while (i < FMT_MASTER_OFFSET && !z[i])
			i++;
		if (i < FMT_MASTER_OFFSET) {
			memset(z, 0, FMT_MASTER_OFFSET);
			rc = io_write(m->dev, z, FMT_MASTER_OFFSET, 0, err);
		}
	}
	free(z);
	return rc;
}

static int write_volume(struct mkfs *m, struct r4_error *err)
{
	int rc;

	rc = mkfs_zero_head(m, err);
	if (!rc)
		rc = write_bitmaps(m, err);
	if (!rc)
		rc = mkfs_write_control(m, err);
	if (!rc)
		rc = write_tree(m, err);
	return rc ? rc : mkfs_write_supers(m, err);
}

int mkfs_write_supers(struct mkfs *m, struct r4_error *err)
{
	int rc;

	memset(m->buf, 0, m->bs);
	fmt_format40_encode(&m->sb, m->buf);
	rc = mkfs_write_block(m, fmt_blk_format40(m->bs), m->buf,
			      "format40 super block", err);
	if (!rc)
		rc = io_sync(m->dev, err);
	if (rc)
		return rc;
	memset(m->buf, 0, m->bs);
	fmt_master_encode(&m->master, m->buf);
	rc = mkfs_write_block(m, fmt_blk_master(m->bs), m->buf,
			      "master super block", err);
	return rc ? rc : io_sync(m->dev, err);
}

/* Refuse a target that holds data, unless forced: any non-zero byte in
 * its first MiB, with the filesystem named when it is one we know. */
static int dev_empty(struct io_dev *dev, const char *path,
		     struct r4_error *err)
{
	size_t len = dev->size < PROBE_BYTES ? (size_t)dev->size : PROBE_BYTES;
	uint8_t *p = malloc(len ? len : 1);
	const char *what = "data";
	size_t i = 0;
	int rc;

	if (!p)
		return r4i_fail(err, -ENOMEM, "%s: out of memory", path);
	rc = io_read(dev, p, len, 0, err);
	if (rc) {
		free(p);
		return rc;
	}
	while (i < len && !p[i])
		i++;
	if (len > FMT_MASTER_OFFSET + 8 &&
	    !memcmp(p + FMT_MASTER_OFFSET, FMT_MASTER_MAGIC, 8))
		what = "a Reiser4 filesystem";
	else if (len > 1082 && p[1080] == 0x53 && p[1081] == 0xef)
		what = "an ext2/3/4 filesystem";
	else if (len > 4 && !memcmp(p, "XFSB", 4))
		what = "an XFS filesystem";
	free(p);
	if (i < len)
		return r4i_fail(err, R4_EEXIST, "%s: holds %s; use -f to "
			       "overwrite it", path, what);
	return 0;
}

int r4_mkfs_target_empty(const char *path, const struct r4_open_opts *o,
			 struct r4_error *err)
{
	struct io_dev *dev;
	int rc = io_open_opts(path, IO_RDONLY, o, &dev, NULL, err);

	if (rc)
		return rc;
	rc = dev_empty(dev, path, err);
	io_close(dev);
	return rc;
}

static int prepare_target(struct mkfs *m, int created, uint64_t *len,
			  struct r4_error *err)
{
	const struct r4_mkfs_opts *o = m->o;
	int rc;

	if (!created && !o->force) {
		rc = dev_empty(m->dev, m->path, err);
		if (rc)
			return rc;
	}
	if (o->size_bytes && o->size_bytes > m->dev->size) {
		if (m->dev->fixed)
			return r4i_fail(err, R4_ERANGE, "%s: the size asked "
				       "(%llu bytes) is more than the %s "
				       "holds (%llu bytes)", m->path,
				       (unsigned long long)o->size_bytes,
				       m->dev->window ? "window" : "device",
				       (unsigned long long)m->dev->size);
		rc = io_resize(m->dev, o->size_bytes, err);
		if (rc)
			return rc;
	}
	*len = o->size_bytes ? o->size_bytes : m->dev->size;
	*len -= *len % ROUND_BYTES;
	if (*len / m->bs < fmt_min_block_count(m->bs))
		return r4i_fail(err, R4_ERANGE, "%s: %llu bytes is too small "
			       "for a Reiser4 volume (at least %llu KiB)",
			       m->path, (unsigned long long)(o->size_bytes ?
				       o->size_bytes : m->dev->size),
			       (unsigned long long)((fmt_min_block_count(m->bs) *
				       m->bs + ROUND_BYTES - 1) / ROUND_BYTES *
				       ROUND_BYTES / 1024));
	return 0;
}

static int mkfs_checks(const char *path, const struct r4_mkfs_opts *o,
		       struct r4_error *err)
{
	struct stat st;

	if (o->blksize != FMT_BLKSIZE_DEFAULT)
		return r4i_fail(err, R4_EUNSUPP, "block size %u is not "
			       "supported (only 4096)", o->blksize);
	if (strlen(o->label) > FMT_LABEL_SIZE)
		return r4i_fail(err, R4_EINVAL, "label '%s' is longer than %d "
			       "bytes", o->label, FMT_LABEL_SIZE);
	if (stat(path, &st) && errno == ENOENT && !o->create_file)
		return r4i_fail(err, -ENOENT, "%s: does not exist (give a size "
			       "to create an image file)", path);
	for (int t = 0; t < R4_PT_COUNT; t++)
		if (!fmt_plugin_name((enum fmt_ptype)t, o->plugin[t]))
			return r4i_fail(err, R4_EINVAL, "unknown %s plugin id "
				       "%u", fmt_ptype_name((enum fmt_ptype)t),
				       o->plugin[t]);
	return 0;
}

/* A new image file's name, after its bytes: once mkfs says done, a
 * power cut leaves the volume under it. A failure keeps the complete
 * file (as r4pack does): only its name may not outlive a cut. */
static int sync_name(const char *path, struct r4_error *err)
{
	int rc = r4_sync_dir(path);

	return rc ? r4i_fail(err, rc, "%s: made and in place, but its "
			     "folder could not be synced (a power cut may "
			     "still lose the new name): %s", path,
			     strerror(-rc)) : 0;
}

int r4_mkfs(const char *path, const struct r4_mkfs_opts *o,
	    struct r4_mkfs_result *res, struct r4_error *err)
{
	struct mkfs m = { .path = path, .o = o, .bs = o->blksize };
	struct r4_mkfs_opts fixed;
	uint64_t len = 0, old_size = 0;
	int created = 0, rc;

	rc = mkfs_checks(path, o, err);
	if (rc)
		return rc;
	if (!o->have_uuid) {
		fixed = *o;
		uuid_generate(fixed.uuid);
		fixed.have_uuid = 0;
		m.o = o = &fixed;
	}
	rc = io_open_opts(path, IO_RDWR | (o->create_file ? IO_CREATE : 0),
			  &o->open, &m.dev, &created, err);
	if (rc)
		return rc;
	old_size = m.dev->size;
	m.buf = malloc(m.bs);
	if (!m.buf) {
		rc = r4i_fail(err, -ENOMEM, "%s: out of memory", path);
		goto out_close;
	}
	rc = prepare_target(&m, created, &len, err);
	if (rc)
		goto out_undo;
	m.now = mkfs_time(o);
	mkfs_make_supers(&m, len / m.bs);
	count_free(&m);
	rc = write_volume(&m, err);
	if (rc)
		goto out_undo;
	if (res) {
		res->block_count = m.sb.block_count;
		res->free_blocks = m.sb.free_blocks;
		res->mkfs_id = m.sb.mkfs_id;
		memcpy(res->uuid, m.master.uuid, sizeof(res->uuid));
	}
	if (created)
		rc = sync_name(path, err);
	goto out_close;
out_undo:
	/* Leave no new file behind, and give an extended one its size back. */
	if (created)
		unlink(path);
	else if (!m.dev->fixed && m.dev->size != old_size)
		io_resize(m.dev, old_size, NULL);
out_close:
	free(m.buf);
	io_close(m.dev);
	return rc;
}
