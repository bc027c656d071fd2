/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: codecs and verifiers of the master, format40, status and backup
 * blocks, and the backup placement (doc/format.md §1). */
#include <string.h>

#include "bitmap.h"
#include "endian.h"
#include "super.h"

/* Master: magic, format id, blksize, uuid, label, diskmap. */
_Static_assert(FMT_MASTER_OFF_FORMAT_ID ==
	       FMT_MASTER_OFF_MAGIC + FMT_MASTER_MAGIC_SIZE, "master layout");
_Static_assert(FMT_MASTER_OFF_BLKSIZE == FMT_MASTER_OFF_FORMAT_ID + 2,
	       "master layout");
_Static_assert(FMT_MASTER_OFF_UUID == FMT_MASTER_OFF_BLKSIZE + 2,
	       "master layout");
_Static_assert(FMT_MASTER_OFF_LABEL == FMT_MASTER_OFF_UUID + FMT_UUID_SIZE,
	       "master layout");
_Static_assert(FMT_MASTER_OFF_DISKMAP ==
	       FMT_MASTER_OFF_LABEL + FMT_LABEL_SIZE, "master layout");
_Static_assert(FMT_MASTER_PROGS_SIZE == FMT_MASTER_OFF_DISKMAP,
	       "master layout");
_Static_assert(FMT_MASTER_SIZE == FMT_MASTER_OFF_DISKMAP + 8,
	       "master layout");

/* Format40 super block. */
_Static_assert(FMT_FORMAT40_OFF_FREE_BLOCKS ==
	       FMT_FORMAT40_OFF_BLOCK_COUNT + 8, "format40 layout");
_Static_assert(FMT_FORMAT40_OFF_ROOT_BLOCK ==
	       FMT_FORMAT40_OFF_FREE_BLOCKS + 8, "format40 layout");
_Static_assert(FMT_FORMAT40_OFF_NEXT_OID ==
	       FMT_FORMAT40_OFF_ROOT_BLOCK + 8, "format40 layout");
_Static_assert(FMT_FORMAT40_OFF_FILE_COUNT ==
	       FMT_FORMAT40_OFF_NEXT_OID + 8, "format40 layout");
_Static_assert(FMT_FORMAT40_OFF_FLUSHES ==
	       FMT_FORMAT40_OFF_FILE_COUNT + 8, "format40 layout");
_Static_assert(FMT_FORMAT40_OFF_MKFS_ID ==
	       FMT_FORMAT40_OFF_FLUSHES + 8, "format40 layout");
_Static_assert(FMT_FORMAT40_OFF_MAGIC ==
	       FMT_FORMAT40_OFF_MKFS_ID + 4, "format40 layout");
_Static_assert(FMT_FORMAT40_OFF_TREE_HEIGHT ==
	       FMT_FORMAT40_OFF_MAGIC + FMT_FORMAT40_MAGIC_SIZE,
	       "format40 layout");
_Static_assert(FMT_FORMAT40_OFF_POLICY ==
	       FMT_FORMAT40_OFF_TREE_HEIGHT + 2, "format40 layout");
_Static_assert(FMT_FORMAT40_OFF_FLAGS ==
	       FMT_FORMAT40_OFF_POLICY + 2, "format40 layout");
_Static_assert(FMT_FORMAT40_OFF_VERSION ==
	       FMT_FORMAT40_OFF_FLAGS + 8, "format40 layout");
_Static_assert(FMT_FORMAT40_OFF_NODE_PID ==
	       FMT_FORMAT40_OFF_VERSION + 4, "format40 layout");
_Static_assert(FMT_FORMAT40_OFF_UNUSED ==
	       FMT_FORMAT40_OFF_NODE_PID + 4, "format40 layout");
_Static_assert(FMT_FORMAT40_SIZE ==
	       FMT_FORMAT40_OFF_UNUSED + FMT_FORMAT40_UNUSED_SIZE,
	       "format40 layout");

/* Status block. */
_Static_assert(FMT_STATUS_OFF_STATUS ==
	       FMT_STATUS_OFF_MAGIC + FMT_STATUS_MAGIC_SIZE, "status layout");
_Static_assert(FMT_STATUS_OFF_EXTENDED == FMT_STATUS_OFF_STATUS + 8,
	       "status layout");
_Static_assert(FMT_STATUS_OFF_STACK == FMT_STATUS_OFF_EXTENDED + 8,
	       "status layout");
_Static_assert(FMT_STATUS_OFF_MESSAGE ==
	       FMT_STATUS_OFF_STACK + 8 * FMT_STATUS_STACK, "status layout");
_Static_assert(FMT_STATUS_SIZE ==
	       FMT_STATUS_OFF_MESSAGE + FMT_STATUS_MESSAGE_SIZE,
	       "status layout");
_Static_assert(sizeof(FMT_STATUS_MAGIC) == FMT_STATUS_MAGIC_SIZE,
	       "status magic fills its field");

/* Backup block: packed fields, see section 1.7. */
_Static_assert(FMT_BACKUP_OFF_MASTER == FMT_BACKUP_OFF_VERSION + 1,
	       "backup layout");
_Static_assert(FMT_BACKUP_OFF_RESERVED1 ==
	       FMT_BACKUP_OFF_MASTER + FMT_MASTER_PROGS_SIZE, "backup layout");
_Static_assert(FMT_BACKUP_OFF_MAGIC == FMT_BACKUP_OFF_RESERVED1 + 8,
	       "backup layout");
_Static_assert(FMT_BACKUP_OFF_BLOCK_COUNT ==
	       FMT_BACKUP_OFF_MAGIC + FMT_FORMAT40_MAGIC_SIZE, "backup layout");
_Static_assert(FMT_BACKUP_OFF_MKFS_ID == FMT_BACKUP_OFF_BLOCK_COUNT + 8,
	       "backup layout");
_Static_assert(FMT_BACKUP_OFF_POLICY == FMT_BACKUP_OFF_MKFS_ID + 4,
	       "backup layout");
_Static_assert(FMT_BACKUP_OFF_FLAGS == FMT_BACKUP_OFF_POLICY + 2,
	       "backup layout");
_Static_assert(FMT_BACKUP_OFF_FMT_VERSION == FMT_BACKUP_OFF_FLAGS + 8,
	       "backup layout");
_Static_assert(FMT_BACKUP_OFF_RESERVED2 == FMT_BACKUP_OFF_FMT_VERSION + 4,
	       "backup layout");
_Static_assert(FMT_BACKUP_OFF_PSET_MAGIC == FMT_BACKUP_OFF_RESERVED2 + 8,
	       "backup layout");
_Static_assert(FMT_BACKUP_SIZE_NO_PSET == FMT_BACKUP_OFF_PSET_MAGIC,
	       "backup layout");
_Static_assert(FMT_BACKUP_OFF_PSET ==
	       FMT_BACKUP_OFF_PSET_MAGIC + FMT_PSET_MAGIC_SIZE, "backup layout");
_Static_assert(FMT_BACKUP_SIZE == FMT_BACKUP_OFF_PSET + 4 * FMT_PSET_COUNT,
	       "backup layout");

/* Fixed blocks for the usual block size (section 1.1). */
_Static_assert(FMT_MASTER_OFFSET / FMT_BLKSIZE_DEFAULT == 16,
	       "master block of a 4096-byte volume");

/* The magic string plus its NUL: what the kernel compares. */
static int magic_ok(const char *field, const char *magic)
{
	return memcmp(field, magic, strlen(magic) + 1) == 0;
}

static void set_magic(char *field, size_t size, const char *magic)
{
	memset(field, 0, size);
	memcpy(field, magic, strlen(magic));
}

int fmt_blksize_valid(uint32_t blksize)
{
	return blksize >= FMT_BLKSIZE_MIN && blksize <= FMT_BLKSIZE_MAX &&
	       (blksize & (blksize - 1)) == 0;
}

/* ---- master ---- */

void fmt_master_init(struct fmt_master *m, uint32_t blksize)
{
	memset(m, 0, sizeof(*m));
	set_magic(m->magic, sizeof(m->magic), FMT_MASTER_MAGIC);
	m->format_id = FMT_FORMAT40_ID;
	m->blksize = (uint16_t)blksize;
}

/* The part reiser4progs knows and the backup copies. */
static void master_decode52(const uint8_t *buf, struct fmt_master *out)
{
	memcpy(out->magic, buf + FMT_MASTER_OFF_MAGIC, sizeof(out->magic));
	out->format_id = get_le16(buf + FMT_MASTER_OFF_FORMAT_ID);
	out->blksize = get_le16(buf + FMT_MASTER_OFF_BLKSIZE);
	memcpy(out->uuid, buf + FMT_MASTER_OFF_UUID, sizeof(out->uuid));
	memcpy(out->label, buf + FMT_MASTER_OFF_LABEL, sizeof(out->label));
}

static void master_encode52(const struct fmt_master *in, uint8_t *buf)
{
	memcpy(buf + FMT_MASTER_OFF_MAGIC, in->magic, sizeof(in->magic));
	put_le16(buf + FMT_MASTER_OFF_FORMAT_ID, in->format_id);
	put_le16(buf + FMT_MASTER_OFF_BLKSIZE, in->blksize);
	memcpy(buf + FMT_MASTER_OFF_UUID, in->uuid, sizeof(in->uuid));
	memcpy(buf + FMT_MASTER_OFF_LABEL, in->label, sizeof(in->label));
}

void fmt_master_decode(const uint8_t *buf, struct fmt_master *out)
{
	memset(out, 0, sizeof(*out));
	master_decode52(buf, out);
	out->diskmap = get_le64(buf + FMT_MASTER_OFF_DISKMAP);
}

void fmt_master_encode(const struct fmt_master *in, uint8_t *buf)
{
	master_encode52(in, buf);
	put_le64(buf + FMT_MASTER_OFF_DISKMAP, in->diskmap);
}

const char *fmt_master_verify(const struct fmt_master *m)
{
	if (!magic_ok(m->magic, FMT_MASTER_MAGIC))
		return "master magic is not ReIsEr4";
	if (m->format_id != FMT_FORMAT40_ID)
		return "master format id is not 0 (format40)";
	if (!fmt_blksize_valid(m->blksize))
		return "master blocksize is not a power of two in 512..32768";
	return NULL;
}

/* ---- format40 ---- */

void fmt_format40_init(struct fmt_format40 *sb)
{
	memset(sb, 0, sizeof(*sb));
	set_magic(sb->magic, sizeof(sb->magic), FMT_FORMAT40_MAGIC);
}

void fmt_format40_decode(const uint8_t *buf, struct fmt_format40 *out)
{
	uint32_t version = get_le32(buf + FMT_FORMAT40_OFF_VERSION);

	memset(out, 0, sizeof(*out));
	out->block_count = get_le64(buf + FMT_FORMAT40_OFF_BLOCK_COUNT);
	out->free_blocks = get_le64(buf + FMT_FORMAT40_OFF_FREE_BLOCKS);
	out->root_block = get_le64(buf + FMT_FORMAT40_OFF_ROOT_BLOCK);
	out->next_oid = get_le64(buf + FMT_FORMAT40_OFF_NEXT_OID);
	out->file_count = get_le64(buf + FMT_FORMAT40_OFF_FILE_COUNT);
	out->flushes = get_le64(buf + FMT_FORMAT40_OFF_FLUSHES);
	out->mkfs_id = get_le32(buf + FMT_FORMAT40_OFF_MKFS_ID);
	memcpy(out->magic, buf + FMT_FORMAT40_OFF_MAGIC, sizeof(out->magic));
	out->tree_height = get_le16(buf + FMT_FORMAT40_OFF_TREE_HEIGHT);
	out->policy = get_le16(buf + FMT_FORMAT40_OFF_POLICY);
	out->flags = get_le64(buf + FMT_FORMAT40_OFF_FLAGS);
	out->version = version & ~FMT_FORMAT40_UPDATE_BACKUP;
	out->update_backup = (version & FMT_FORMAT40_UPDATE_BACKUP) != 0;
	out->node_pid = get_le32(buf + FMT_FORMAT40_OFF_NODE_PID);
}

void fmt_format40_encode(const struct fmt_format40 *in, uint8_t *buf)
{
	uint32_t version = in->version & ~FMT_FORMAT40_UPDATE_BACKUP;

	if (in->update_backup)
		version |= FMT_FORMAT40_UPDATE_BACKUP;
	put_le64(buf + FMT_FORMAT40_OFF_BLOCK_COUNT, in->block_count);
	put_le64(buf + FMT_FORMAT40_OFF_FREE_BLOCKS, in->free_blocks);
	put_le64(buf + FMT_FORMAT40_OFF_ROOT_BLOCK, in->root_block);
	put_le64(buf + FMT_FORMAT40_OFF_NEXT_OID, in->next_oid);
	put_le64(buf + FMT_FORMAT40_OFF_FILE_COUNT, in->file_count);
	put_le64(buf + FMT_FORMAT40_OFF_FLUSHES, in->flushes);
	put_le32(buf + FMT_FORMAT40_OFF_MKFS_ID, in->mkfs_id);
	memcpy(buf + FMT_FORMAT40_OFF_MAGIC, in->magic, sizeof(in->magic));
	put_le16(buf + FMT_FORMAT40_OFF_TREE_HEIGHT, in->tree_height);
	put_le16(buf + FMT_FORMAT40_OFF_POLICY, in->policy);
	put_le64(buf + FMT_FORMAT40_OFF_FLAGS, in->flags);
	put_le32(buf + FMT_FORMAT40_OFF_VERSION, version);
	put_le32(buf + FMT_FORMAT40_OFF_NODE_PID, in->node_pid);
	memset(buf + FMT_FORMAT40_OFF_UNUSED, 0, FMT_FORMAT40_UNUSED_SIZE);
}

const char *fmt_format40_verify(const struct fmt_format40 *sb,
				uint32_t blksize)
{
	if (!magic_ok(sb->magic, FMT_FORMAT40_MAGIC))
		return "format40 magic is not ReIsEr40FoRmAt";
	if (!fmt_blksize_valid(blksize))
		return "format40 checked with an invalid block size";
	if (sb->block_count < fmt_min_block_count(blksize))
		return "format40 block_count is below the minimum volume size";
	if (sb->free_blocks > sb->block_count)
		return "format40 free_blocks is larger than block_count";
	if (sb->root_block >= sb->block_count)
		return "format40 root_block is not below block_count";
	if (sb->root_block < fmt_blk_first_usable(blksize))
		return "format40 root_block lies in the fixed blocks";
	if (sb->tree_height < FMT_TREE_HEIGHT_MIN ||
	    sb->tree_height > FMT_TREE_HEIGHT_MAX)
		return "format40 tree_height is not in 2..10";
	if (sb->node_pid != FMT_NODE40 && sb->node_pid != FMT_NODE41)
		return "format40 node_pid is not 0 (node40) or 1 (node41)";
	if (sb->next_oid < FMT_FIRST_FREE_OID)
		return "format40 next_oid is below 0x10000";
	return NULL;
}

enum fmt_key_policy fmt_format40_key_policy(const struct fmt_format40 *sb)
{
	return (sb->flags & FMT_FORMAT40_FLAG_LARGE_KEYS) ? FMT_KEY_LARGE
							  : FMT_KEY_SHORT;
}

void fmt_format40_set_key_policy(struct fmt_format40 *sb,
				 enum fmt_key_policy pol)
{
	if (pol == FMT_KEY_LARGE)
		sb->flags |= FMT_FORMAT40_FLAG_LARGE_KEYS;
	else
		sb->flags &= ~FMT_FORMAT40_FLAG_LARGE_KEYS;
}

/* ---- status ---- */

void fmt_status_init(struct fmt_status *st)
{
	memset(st, 0, sizeof(*st));
	set_magic(st->magic, sizeof(st->magic), FMT_STATUS_MAGIC);
}

void fmt_status_decode(const uint8_t *buf, struct fmt_status *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->magic, buf + FMT_STATUS_OFF_MAGIC, sizeof(out->magic));
	out->status = get_le64(buf + FMT_STATUS_OFF_STATUS);
	out->ext_status = get_le64(buf + FMT_STATUS_OFF_EXTENDED);
	for (int i = 0; i < FMT_STATUS_STACK; i++)
		out->stack[i] = get_le64(buf + FMT_STATUS_OFF_STACK + 8 * i);
	memcpy(out->message, buf + FMT_STATUS_OFF_MESSAGE,
	       sizeof(out->message));
}

void fmt_status_encode(const struct fmt_status *in, uint8_t *buf)
{
	memcpy(buf + FMT_STATUS_OFF_MAGIC, in->magic, sizeof(in->magic));
	put_le64(buf + FMT_STATUS_OFF_STATUS, in->status);
	put_le64(buf + FMT_STATUS_OFF_EXTENDED, in->ext_status);
	for (int i = 0; i < FMT_STATUS_STACK; i++)
		put_le64(buf + FMT_STATUS_OFF_STACK + 8 * i, in->stack[i]);
	memcpy(buf + FMT_STATUS_OFF_MESSAGE, in->message,
	       sizeof(in->message));
}

const char *fmt_status_verify(const struct fmt_status *st)
{
	if (!magic_ok(st->magic, FMT_STATUS_MAGIC))
		return "status magic is not ReiSeR4StATusBl";
	if (st->status & ~FMT_STATUS_KNOWN)
		return "status has unknown bits beyond 0xf";
	return NULL;
}

/* ---- backup ---- */

void fmt_backup_make(const struct fmt_master *m, const struct fmt_format40 *sb,
		     const uint32_t *pset, struct fmt_backup *out)
{
	memset(out, 0, sizeof(*out));
	out->backup_version = FMT_BACKUP_VERSION;
	out->master = *m;
	out->master.diskmap = 0;
	memcpy(out->magic, sb->magic, sizeof(out->magic));
	out->block_count = sb->block_count;
	out->mkfs_id = sb->mkfs_id;
	out->policy = sb->policy;
	out->flags = sb->flags;
	out->version = sb->version & ~FMT_FORMAT40_UPDATE_BACKUP;
	out->has_pset = out->version != 0;
	if (out->has_pset && pset)
		memcpy(out->pset, pset, sizeof(out->pset));
}

void fmt_backup_decode(const uint8_t *buf, struct fmt_backup *out)
{
	memset(out, 0, sizeof(*out));
	out->backup_version = buf[FMT_BACKUP_OFF_VERSION];
	master_decode52(buf + FMT_BACKUP_OFF_MASTER, &out->master);
	memcpy(out->magic, buf + FMT_BACKUP_OFF_MAGIC, sizeof(out->magic));
	out->block_count = get_le64(buf + FMT_BACKUP_OFF_BLOCK_COUNT);
	out->mkfs_id = get_le32(buf + FMT_BACKUP_OFF_MKFS_ID);
	out->policy = get_le16(buf + FMT_BACKUP_OFF_POLICY);
	out->flags = get_le64(buf + FMT_BACKUP_OFF_FLAGS);
	out->version = get_le32(buf + FMT_BACKUP_OFF_FMT_VERSION);
	out->has_pset = memcmp(buf + FMT_BACKUP_OFF_PSET_MAGIC, FMT_PSET_MAGIC,
			       FMT_PSET_MAGIC_SIZE) == 0;
	if (!out->has_pset)
		return;
	for (int i = 0; i < FMT_PSET_COUNT; i++)
		out->pset[i] = get_le32(buf + FMT_BACKUP_OFF_PSET + 4 * i);
}

void fmt_backup_encode(const struct fmt_backup *in, uint8_t *buf)
{
	memset(buf, 0, FMT_BACKUP_SIZE);
	buf[FMT_BACKUP_OFF_VERSION] = in->backup_version;
	master_encode52(&in->master, buf + FMT_BACKUP_OFF_MASTER);
	memcpy(buf + FMT_BACKUP_OFF_MAGIC, in->magic, sizeof(in->magic));
	put_le64(buf + FMT_BACKUP_OFF_BLOCK_COUNT, in->block_count);
	put_le32(buf + FMT_BACKUP_OFF_MKFS_ID, in->mkfs_id);
	put_le16(buf + FMT_BACKUP_OFF_POLICY, in->policy);
	put_le64(buf + FMT_BACKUP_OFF_FLAGS, in->flags);
	put_le32(buf + FMT_BACKUP_OFF_FMT_VERSION, in->version);
	if (!in->has_pset)
		return;
	memcpy(buf + FMT_BACKUP_OFF_PSET_MAGIC, FMT_PSET_MAGIC,
	       FMT_PSET_MAGIC_SIZE);
	for (int i = 0; i < FMT_PSET_COUNT; i++)
		put_le32(buf + FMT_BACKUP_OFF_PSET + 4 * i, in->pset[i]);
}

const char *fmt_backup_verify(const struct fmt_backup *b)
{
	if (b->backup_version != FMT_BACKUP_VERSION)
		return "backup version byte is not 0";
	if (!magic_ok(b->master.magic, FMT_MASTER_MAGIC))
		return "backup master magic is not ReIsEr4";
	if (b->master.format_id != FMT_FORMAT40_ID)
		return "backup master format id is not 0 (format40)";
	if (!fmt_blksize_valid(b->master.blksize))
		return "backup blocksize is not a power of two in 512..32768";
	if (!magic_ok(b->magic, FMT_FORMAT40_MAGIC))
		return "backup format40 magic is not ReIsEr40FoRmAt";
	if (b->version & FMT_FORMAT40_UPDATE_BACKUP)
		return "backup version has bit 31 set";
	if (b->block_count < fmt_min_block_count(b->master.blksize))
		return "backup block_count is below the minimum volume size";
	if (!b->has_pset != (b->version == 0))
		return "backup PsEt presence does not match the format version";
	return NULL;
}

/* Where reiser4progs puts the copy for the bitmap region holding blk:
 * the region's second block, or nothing (0) for a one-block region. */
static uint64_t region_copy(uint64_t blk, uint64_t len, uint64_t bpb)
{
	uint64_t start = blk / bpb * bpb;
	uint64_t rlen = len - start < bpb ? len - start : bpb;

	return rlen == 1 ? 0 : start + 1;
}

size_t fmt_backup_blocks(uint64_t block_count, uint32_t blksize,
			 uint64_t *out, size_t max)
{
	uint64_t bpb = fmt_bitmap_bpb(blksize), first = fmt_blk_backup0(blksize);
	uint64_t blk = 2, prev = 0, copy;
	size_t n = 0;

	for (;;) {
		if (blk / 2 > UINT64_MAX - blk)
			break;
		blk += blk / 2;			/* 3, 4, 6, 9, 13, ... */
		if (blk > block_count)
			break;
		if (blk <= prev)
			continue;
		copy = region_copy(blk, block_count, bpb);
		if (copy < first)
			copy = first;
		if (copy > block_count)
			break;
		if (copy <= prev)
			continue;
		if (n < max)
			out[n] = copy;
		n++;
		prev = copy;
	}
	return n;
}
