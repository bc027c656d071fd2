/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: Reiser4 keys (doc/format.md §2).
 *
 * In memory a key is always held in the large layout: el[0] = locality|type,
 * el[1] = ordering, el[2] = band|objectid, el[3] = offset. For short-key
 * volumes el[1] is always 0 in memory and the codec drops/restores it, so
 * every comparison and builder works on one representation. */
#ifndef R4_FORMAT_KEY_H
#define R4_FORMAT_KEY_H

#include <stddef.h>
#include <stdint.h>

#define FMT_KEY_LARGE_SIZE 32
#define FMT_KEY_SHORT_SIZE 24

enum fmt_key_policy {
	FMT_KEY_SHORT = 0,	/* key_short, plugin id 0, sb flags bit0 = 0 */
	FMT_KEY_LARGE = 1	/* key_large, plugin id 1, sb flags bit0 = 1 */
};

enum fmt_key_type {
	FMT_KEY_FILE_NAME = 0,
	FMT_KEY_SD = 1,
	FMT_KEY_ATTR_NAME = 2,
	FMT_KEY_ATTR_BODY = 3,
	FMT_KEY_BODY = 4
};

/* Reserved object ids (section 7.7). */
#define FMT_ROOT_LOCALITY 0x29ULL
#define FMT_ROOT_OID 0x2aULL
#define FMT_SAFELINK_LOCALITY 0x2bULL
#define FMT_LOSTFOUND_OID 0xffffULL
#define FMT_FIRST_FREE_OID 0x10000ULL

#define FMT_KEY_LONGNAME_BIT 0x0100000000000000ULL

struct fmt_key {
	uint64_t el[4];
};

/* Size of an encoded key under a policy (32 or 24). */
size_t fmt_key_size(enum fmt_key_policy pol);

void fmt_key_decode(const uint8_t *buf, enum fmt_key_policy pol,
		    struct fmt_key *out);
void fmt_key_encode(const struct fmt_key *in, enum fmt_key_policy pol,
		    uint8_t *buf);

/* -1, 0, 1: element-wise unsigned comparison (section 2.4). */
int fmt_key_cmp(const struct fmt_key *a, const struct fmt_key *b);

/* Field accessors. */
static inline uint64_t fmt_key_locality(const struct fmt_key *k)
{ return k->el[0] >> 4; }
static inline unsigned fmt_key_type(const struct fmt_key *k)
{ return (unsigned)(k->el[0] & 0xf); }
static inline uint64_t fmt_key_ordering(const struct fmt_key *k)
{ return k->el[1]; }
static inline uint64_t fmt_key_objectid(const struct fmt_key *k)
{ return k->el[2] & 0x0fffffffffffffffULL; }
static inline uint64_t fmt_key_offset(const struct fmt_key *k)
{ return k->el[3]; }

/* Builders (section 2.5). 'ordering' is ignored (forced to 0) for short
 * keys by the encoder; builders take it so callers need not care. */
void fmt_key_sd(struct fmt_key *k, uint64_t locality, uint64_t ordering,
		uint64_t oid);
void fmt_key_body(struct fmt_key *k, uint64_t locality, uint64_t ordering,
		  uint64_t oid, uint64_t offset);
/* The largest possible key (all ones), used as the right delimiting key
 * of the rightmost subtree. */
void fmt_key_max(struct fmt_key *k);
void fmt_key_min(struct fmt_key *k);

/* Directory entry key of 'name' (len bytes) in directory 'dir_oid'
 * (section 2.6/2.7). hash_id and fibre_id are plugin ids (section 9.3).
 * Returns 0, or R4_EUNSUPP for an unknown hash/fibre id. */
int fmt_key_entry(struct fmt_key *k, enum fmt_key_policy pol,
		  uint64_t dir_oid, const char *name, size_t len,
		  unsigned hash_id, unsigned fibre_id);

/* True when the name is longer than what the key can hold, so it must be
 * stored in the entry body (> 23 bytes large, > 15 bytes short). */
int fmt_entry_name_stored(enum fmt_key_policy pol, size_t len);

/* Recover a short name (one that is not stored) from an entry key into
 * buf (at least 24 bytes); returns its length. "." is the all-zero key. */
size_t fmt_key_entry_name(const struct fmt_key *k, enum fmt_key_policy pol,
			  char *buf);

/* The one printed form of a key, "locality:type:ordering:objectid:offset"
 * in hex, into buf (FMT_KEY_STR_MAX bytes hold any key); callers that
 * set keys apart in a line put it in brackets. */
#define FMT_KEY_STR_MAX 72
void fmt_key_str(const struct fmt_key *k, char *buf, size_t len);

/* True when an entry key holds a hash of the name's tail (the long-name
 * bit is set: the name is longer than fits and is stored in the entry
 * body). fmt_key_entry_name() returns 0 for such keys, since the name
 * cannot be recovered from the key. */
int fmt_key_entry_hashed(const struct fmt_key *k, enum fmt_key_policy pol);

#endif
