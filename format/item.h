/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: item body codecs (doc/format.md §5): stat40, cde40,
 * extent40, tail40 (plain40), nodeptr40, ctail40, bbox40.
 *
 * Every decoder takes (body, len) as found by fmt_node_item_body() and
 * never reads body[len] or beyond, whatever the bytes. Pointers returned
 * inside decoded structures (symlink target, names, cluster data) point
 * into the caller's body buffer and live as long as it does. */
#ifndef R4_FORMAT_ITEM_H
#define R4_FORMAT_ITEM_H

#include <stddef.h>
#include <stdint.h>
#include "key.h"

/* ---- stat40 (section 5.2) --------------------------------------------- */

#define FMT_STAT_MASK_SIZE 2		/* one 16-bit mask word */
#define FMT_STAT_MASK_WORDS 4		/* at most 4 chained words */
#define FMT_STAT_MASK_CHAIN 0x8000u	/* bit 15 of a word: another follows */
#define FMT_STAT_NR_EXT 9		/* extensions 0..8 are defined */

#define FMT_SDEXT_LW_SIZE 14
enum { FMT_LW_OFF_MODE = 0, FMT_LW_OFF_NLINK = 2, FMT_LW_OFF_SIZE = 6 };
#define FMT_SDEXT_UNIX_SIZE 28
enum {
	FMT_UNIX_OFF_UID = 0, FMT_UNIX_OFF_GID = 4, FMT_UNIX_OFF_ATIME = 8,
	FMT_UNIX_OFF_MTIME = 12, FMT_UNIX_OFF_CTIME = 16,
	FMT_UNIX_OFF_RDEV = 20
};
#define FMT_SDEXT_LT_SIZE 12
enum { FMT_LT_OFF_ATIME = 0, FMT_LT_OFF_MTIME = 4, FMT_LT_OFF_CTIME = 8 };
#define FMT_SDEXT_PSET_HDR_SIZE 2	/* u16 count */
#define FMT_SDEXT_PSET_SLOT_SIZE 4	/* u16 member, u16 plugin id */
enum { FMT_PSET_SLOT_OFF_MEMBER = 0, FMT_PSET_SLOT_OFF_ID = 2 };
#define FMT_SDEXT_FLAGS_SIZE 4
#define FMT_SDEXT_CAPS_SIZE 8
enum { FMT_CAPS_OFF_EFFECTIVE = 0, FMT_CAPS_OFF_PERMITTED = 4 };
#define FMT_SDEXT_CRYPTO_HDR_SIZE 2	/* u16 key size in bits */
/* Fingerprint size progs assumes: 4 << digest id; digest 0 gives 4. */
#define FMT_SDEXT_CRYPTO_FP_DEFAULT 4

/* A pset or hset: up to 16 (member, plugin id) slots. Members must be
 * strictly ascending and below FMT_PSET_COUNT (so at most 14 slots). */
#define FMT_PSET_MAX_SLOTS 16
struct fmt_pset {
	uint16_t count;
	uint16_t member[FMT_PSET_MAX_SLOTS];
	uint16_t id[FMT_PSET_MAX_SLOTS];
};

/* Decoded stat data. 'mask' is the logical 64-bit extension mask: bit k
 * (k not 15/31/47) = extension k present, bits 15/31/47 = another mask
 * word follows. Fields of absent extensions are left zero by decode and
 * ignored by encode. */
struct fmt_stat {
	uint64_t mask;
	/* bit 0: light weight */
	uint16_t mode;
	uint32_t nlink;
	uint64_t size;
	/* bit 1: unix */
	uint32_t uid, gid, atime, mtime, ctime;
	uint64_t rdev_or_bytes;	/* rdev for chr/blk, else bytes used */
	/* bit 2: large times (nanoseconds) */
	uint32_t atime_ns, mtime_ns, ctime_ns;
	/* bit 3: symlink target, without its NUL; points into the body */
	const uint8_t *symlink;
	size_t symlink_len;
	/* bit 4: plugin set; bit 8: heir set */
	struct fmt_pset pset, hset;
	/* bit 5 */
	uint32_t flags;
	/* bit 6 */
	uint32_t cap_effective, cap_permitted;
	/* bit 7: key size in bits and the key fingerprint (into the body) */
	uint16_t crypto_keysize;
	const uint8_t *crypto_keyid;
	size_t crypto_keyid_len;
};

/* Decode a stat40 body; the crypto fingerprint is taken as
 * FMT_SDEXT_CRYPTO_FP_DEFAULT bytes. R4_EUNSUPP for an undefined
 * extension bit, R4_ECORRUPT for a truncated body, bytes left over after
 * the last extension, a symlink without NUL, a bad pset/hset or more than
 * FMT_STAT_MASK_WORDS mask words. */
int fmt_stat_decode(const uint8_t *body, size_t len, struct fmt_stat *out);
/* Same with an explicit fingerprint size (4 << digest id). */
int fmt_stat_decode_fp(const uint8_t *body, size_t len, size_t crypto_fp,
		       struct fmt_stat *out);
/* Bytes fmt_stat_encode will write. R4_EUNSUPP for undefined extension
 * bits, R4_EINVAL for an inconsistent structure (a mask word whose chain
 * bit is missing, a bad pset, symlink/crypto pointers NULL with a
 * length, a size over 65535). */
int fmt_stat_size(const struct fmt_stat *st, size_t *size);
/* Encode into buf (buflen bytes, at least fmt_stat_size). Errors as
 * fmt_stat_size, plus R4_EINVAL if buf is too small. */
int fmt_stat_encode(const struct fmt_stat *st, uint8_t *buf, size_t buflen);
/* Cross-extension consistency a decoder cannot see alone: a symlink
 * needs the lw extension with size == target length (the kernel reads
 * the target by lw size). NULL if fine. */
const char *fmt_stat_verify(const struct fmt_stat *st);
/* True when extension bit k (0..63, not a chain bit) is in the mask. */
static inline int fmt_stat_has(const struct fmt_stat *st, unsigned k)
{ return k < 64 && ((st->mask >> k) & 1); }

/* ---- cde40 (section 5.3) ---------------------------------------------- */

#define FMT_CDE40_UNITS_SIZE 2
#define FMT_CDE40_HASH_LARGE_SIZE 24	/* ordering, objectid, offset */
#define FMT_CDE40_HASH_SHORT_SIZE 16	/* objectid, offset */
#define FMT_CDE40_UH_LARGE_SIZE 26	/* hash + u16 body offset */
#define FMT_CDE40_UH_SHORT_SIZE 18
#define FMT_CDE40_OBJID_LARGE_SIZE 24	/* locality, ordering, objectid */
#define FMT_CDE40_OBJID_SHORT_SIZE 16	/* locality, objectid */

/* One entry. The hash part holds el[1..3] of the entry key (ordering is
 * 0 with short keys, as in struct fmt_key). 'target' is the stat-data key
 * of the object the entry names (el[3] = 0; el[1] = 0 with short keys).
 * name/name_len: the stored name (names longer than the key can hold,
 * i.e. the long-name bit set), without its NUL; NULL/0 for other
 * entries. The encoder stores a name exactly when the long-name bit is
 * set in the hash part. */
struct fmt_cde40_entry {
	uint64_t ordering, objectid, offset;
	struct fmt_key target;
	uint16_t body_offset;	/* decode only: from the item start */
	const uint8_t *name;
	size_t name_len;
};

/* Sizes under a key policy. */
size_t fmt_cde40_unit_header_size(enum fmt_key_policy pol);
size_t fmt_cde40_objid_size(enum fmt_key_policy pol);

/* Number of entries, or R4_ECORRUPT when the units field or the unit
 * headers do not fit in len. */
int fmt_cde40_units(const uint8_t *body, size_t len, enum fmt_key_policy pol);
/* Decode entry i. R4_ERANGE if i >= units, R4_ECORRUPT if its body
 * offset is not after the headers, its obj key id does not fit, or its
 * stored name has no NUL before the next entry's body / the item end. */
int fmt_cde40_entry(const uint8_t *body, size_t len, enum fmt_key_policy pol,
		    unsigned i, struct fmt_cde40_entry *e);
/* True when the entry's hash part carries the long-name bit (the name is
 * stored in the body). */
int fmt_cde40_entry_is_long(const struct fmt_cde40_entry *e,
			    enum fmt_key_policy pol);
/* Full key of the entry: el[0] from the item key, el[1..3] the hash. */
void fmt_cde40_entry_key(const struct fmt_key *item_key,
			 const struct fmt_cde40_entry *e, struct fmt_key *out);
/* Whole-item check: at least one unit, first body right after the unit
 * headers, bodies contiguous and in header order, each exactly obj key
 * id (+ name + NUL for long names) long, the last one ending at len,
 * entries sorted by (ordering, objectid, offset). NULL if fine; else the
 * check that failed, *bad_unit (may be NULL) = unit index or -1. */
const char *fmt_cde40_verify(const uint8_t *body, size_t len,
			     enum fmt_key_policy pol, int *bad_unit);
/* Size of an item holding entries e[0..n-1]. R4_EINVAL for n == 0, a
 * long entry without name (or with a NUL in it), or more than 65535
 * bytes. */
int fmt_cde40_size(const struct fmt_cde40_entry *e, size_t n,
		   enum fmt_key_policy pol, size_t *size);
/* Build the item (bodies in entry order, offsets computed here; the
 * body_offset fields are ignored). Errors as fmt_cde40_size, plus
 * R4_EINVAL if buflen is too small. */
int fmt_cde40_encode(const struct fmt_cde40_entry *e, size_t n,
		     enum fmt_key_policy pol, uint8_t *buf, size_t buflen);
/* Of a verified item (fmt_cde40_verify): the first unit whose hash
 * part is not below k's el[1..3] (units when none), found by bisection
 * of the unit headers; R4_ECORRUPT when the headers do not fit. */
int fmt_cde40_seek(const uint8_t *body, size_t len, enum fmt_key_policy pol,
		   const struct fmt_key *k);
/* Of a verified item (len bytes): entry e inserted as unit i, written
 * to out (outlen == len + the entry's header and body): the bytes
 * fmt_cde40_encode makes of the item's entries with e among them at i,
 * without decoding them. R4_EINVAL as fmt_cde40_size for e, for i past
 * the units or a wrong outlen. */
int fmt_cde40_insert(const uint8_t *body, size_t len, enum fmt_key_policy pol,
		     unsigned i, const struct fmt_cde40_entry *e,
		     uint8_t *out, size_t outlen);
/* Of a verified item (len bytes, two units or more): unit i taken out,
 * written to out (room for outcap bytes), *outlen its length: the bytes
 * fmt_cde40_encode makes of the item's other entries, without decoding
 * them. R4_EINVAL for i past the units, a one-unit item (the item goes
 * as a whole) or too small an outcap; R4_ECORRUPT when a unit's body
 * offset lies out of the item or on the wrong side of unit i's body
 * (their order among themselves is the verify's to check). */
int fmt_cde40_remove(const uint8_t *body, size_t len, enum fmt_key_policy pol,
		     unsigned i, uint8_t *out, size_t outcap, size_t *outlen);
/* "bytes" an entry of a name_len-byte name adds to its directory: unit
 * header + obj key id (+ name_len + 1 when the name is stored); 50 for a
 * short name with large keys. */
size_t fmt_cde40_entry_bytes(enum fmt_key_policy pol, size_t name_len);

/* ---- extent40 (section 5.4) ------------------------------------------- */

#define FMT_EXTENT40_UNIT_SIZE 16
enum { FMT_EXTENT40_OFF_START = 0, FMT_EXTENT40_OFF_WIDTH = 8 };

enum fmt_extent_kind {
	FMT_EXTENT_HOLE = 0,		/* start 0 */
	FMT_EXTENT_UNALLOCATED = 1,	/* start 1 (kernel in-memory state) */
	FMT_EXTENT_ALLOCATED = 2	/* start >= 2 */
};

struct fmt_extent40_unit {
	uint64_t start;
	uint64_t width;
};

/* Number of units, R4_ECORRUPT if len is 0 or not a multiple of 16. */
int fmt_extent40_units(const uint8_t *body, size_t len);
/* Decode unit i (R4_ERANGE if i >= units, R4_ECORRUPT for a bad len). */
int fmt_extent40_unit(const uint8_t *body, size_t len, unsigned i,
		      struct fmt_extent40_unit *u);
/* Fixed-layout unit codecs (16 bytes). */
void fmt_extent40_unit_decode(const uint8_t *buf, struct fmt_extent40_unit *u);
void fmt_extent40_unit_encode(const struct fmt_extent40_unit *u, uint8_t *buf);
/* Store unit i of an item of len bytes (bounds as fmt_extent40_unit). */
int fmt_extent40_unit_put(uint8_t *body, size_t len, unsigned i,
			  const struct fmt_extent40_unit *u);
enum fmt_extent_kind fmt_extent40_kind(const struct fmt_extent40_unit *u);
/* One past the last block of an allocated unit: start + width;
 * R4_ERANGE if that overflows, R4_EINVAL for a hole/unallocated unit. */
int fmt_extent40_unit_end(const struct fmt_extent40_unit *u, uint64_t *end);
/* Bytes of file the item covers: sum of widths * blksize. R4_ERANGE if
 * that overflows 64 bits, R4_ECORRUPT for a bad len. */
int fmt_extent40_span(const uint8_t *body, size_t len, size_t blksize,
		      uint64_t *bytes);
/* Unit checks: width > 0, allocated units inside [0, nr_blocks) with no
 * overflow, span representable. Unallocated units are accepted (progs
 * writes them); callers that care use fmt_extent40_kind. */
const char *fmt_extent40_verify(const uint8_t *body, size_t len,
				uint64_t nr_blocks, size_t blksize,
				int *bad_unit);

/* ---- tail40 / plain40 (section 5.5) ----------------------------------- */

/* A tail item is raw file bytes; its units are bytes. File offset one
 * past its last byte: key offset + len, R4_ERANGE on overflow,
 * R4_ECORRUPT for an empty item. */
int fmt_tail40_end(uint64_t key_offset, size_t len, uint64_t *end);

/* ---- nodeptr40 (section 5.7) ------------------------------------------ */

#define FMT_NODEPTR40_SIZE 8
/* R4_ECORRUPT unless len == 8. */
int fmt_nodeptr40_decode(const uint8_t *body, size_t len, uint64_t *child);
void fmt_nodeptr40_encode(uint64_t child, uint8_t *buf);

/* ---- ctail40 (section 5.6) -------------------------------------------- */

#define FMT_CTAIL40_HDR_SIZE 1
#define FMT_CTAIL40_UNPREPPED 0xff	/* shift of a placeholder item */
#define FMT_CTAIL40_MIN_SHIFT 12	/* 4 KiB clusters */
#define FMT_CTAIL40_MAX_SHIFT 16	/* 64 KiB clusters */

struct fmt_ctail40 {
	uint8_t shift;		/* log2 cluster size, or 0xff */
	const uint8_t *data;	/* disk cluster bytes (units), into body */
	size_t len;
};

/* R4_ECORRUPT for len < 2 (no unit), an unprepped item with more than
 * one unit, or a shift outside 12..16. */
int fmt_ctail40_decode(const uint8_t *body, size_t len, struct fmt_ctail40 *out);
size_t fmt_ctail40_size(const struct fmt_ctail40 *in);
/* R4_EINVAL for an invalid item (as decode) or buflen too small. */
int fmt_ctail40_encode(const struct fmt_ctail40 *in, uint8_t *buf,
		       size_t buflen);

/* ---- bbox40: safe links (section 5.8) --------------------------------- */

enum fmt_safelink_type { FMT_SAFELINK_UNLINK = 0, FMT_SAFELINK_TRUNCATE = 1 };

/* Body = stat-data key of the file (key size of the policy), followed by
 * the u64 target size for truncate links only. */
struct fmt_bbox40 {
	struct fmt_key sdkey;
	int has_size;
	uint64_t size;
};

/* R4_ECORRUPT unless len is key size or key size + 8. */
int fmt_bbox40_decode(const uint8_t *body, size_t len,
		      enum fmt_key_policy pol, struct fmt_bbox40 *out);
size_t fmt_bbox40_size(const struct fmt_bbox40 *in, enum fmt_key_policy pol);
/* R4_EINVAL if buflen < fmt_bbox40_size. */
int fmt_bbox40_encode(const struct fmt_bbox40 *in, enum fmt_key_policy pol,
		      uint8_t *buf, size_t buflen);
/* Item key of a safe link: (0x2b<<4 | 0, 0, oid, type). */
void fmt_bbox40_key(struct fmt_key *k, uint64_t oid,
		    enum fmt_safelink_type type);

#endif
