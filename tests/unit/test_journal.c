/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: tests of the journal40 control block codecs: hand-laid bytes
 * per doc/format.md §8, the all-zero blocks mkfs writes, and a
 * transaction encoded here that fsck.reiser4 must replay. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <fcntl.h>
#include <unistd.h>

#include "tap.h"
#include "fixture.h"
#include "format/endian.h"
#include "format/errors.h"
#include "format/journal.h"

#define BS FIXTURE_BLKSIZE

static void test_header_footer(void)
{
	uint8_t buf[64], enc[64];
	struct fmt_journal_header jh, jh2;
	struct fmt_journal_footer jf, jf2;

	memset(buf, 0, sizeof(buf));
	put_le64(buf + 0, 1000);
	fmt_journal_header_decode(buf, &jh);
	is_u64(jh.last_committed_tx, 1000, "header last_committed_tx at 0");
	memset(enc, 0, sizeof(enc));
	fmt_journal_header_encode(&jh, enc);
	is_mem(enc, buf, sizeof(buf), "header encode(decode(b)) == b");
	fmt_journal_header_decode(enc, &jh2);
	ok(memcmp(&jh, &jh2, sizeof(jh)) == 0, "header decode(encode) == jh");
	ok(fmt_journal_header_verify(&jh, 16384) == NULL, "header verifies");
	is_str(fmt_journal_header_verify(&jh, 1000),
	       "journal header last_committed_tx is not below block_count",
	       "header: tx past the end");

	memset(buf, 0, sizeof(buf));
	put_le64(buf + 0, 1000);
	put_le64(buf + 8, 16300);
	put_le64(buf + 16, 7);
	put_le64(buf + 24, 0x10006);
	fmt_journal_footer_decode(buf, &jf);
	ok(jf.last_flushed_tx == 1000 && jf.free_blocks == 16300 &&
	   jf.nr_files == 7 && jf.next_oid == 0x10006,
	   "footer fields at 0, 8, 16, 24");
	memset(enc, 0, sizeof(enc));
	fmt_journal_footer_encode(&jf, enc);
	is_mem(enc, buf, sizeof(buf), "footer encode(decode(b)) == b");
	fmt_journal_footer_decode(enc, &jf2);
	ok(memcmp(&jf, &jf2, sizeof(jf)) == 0, "footer decode(encode) == jf");
	ok(fmt_journal_footer_verify(&jf, 16384) == NULL, "footer verifies");
	jf2 = jf; jf2.last_flushed_tx = 20000;
	is_str(fmt_journal_footer_verify(&jf2, 16384),
	       "journal footer last_flushed_tx is not below block_count",
	       "footer: tx past the end");
	jf2 = jf; jf2.free_blocks = 20000;
	is_str(fmt_journal_footer_verify(&jf2, 16384),
	       "journal footer free_blocks is larger than block_count",
	       "footer: free blocks");
}

/* A tx head laid out byte by byte from the table of section 8.3. */
static void hand_tx_head(uint8_t *buf)
{
	memset(buf, 0, BS);
	memcpy(buf + 0, "TxMagic4", 8);
	put_le64(buf + 8, 0);		/* id */
	put_le32(buf + 16, 3);		/* total */
	put_le32(buf + 20, 0);		/* padding */
	put_le64(buf + 24, 900);	/* prev_tx */
	put_le64(buf + 32, 1001);	/* next_block */
	put_le64(buf + 40, 16290);	/* free_blocks */
	put_le64(buf + 48, 5);		/* nr_files */
	put_le64(buf + 56, 0x10004);	/* next_oid */
}

static void test_tx_head(void)
{
	uint8_t buf[BS], enc[BS];
	struct fmt_tx_head th, th2;

	hand_tx_head(buf);
	fmt_tx_head_decode(buf, &th);
	is_mem(th.magic, "TxMagic4", 8, "tx head magic");
	ok(th.id == 0 && th.total == 3 && th.padding == 0 &&
	   th.prev_tx == 900 && th.next_block == 1001 &&
	   th.free_blocks == 16290 && th.nr_files == 5 &&
	   th.next_oid == 0x10004, "tx head fields");
	memset(enc, 0, BS);
	fmt_tx_head_encode(&th, enc);
	is_mem(enc, buf, BS, "tx head encode(decode(b)) == b");
	fmt_tx_head_decode(enc, &th2);
	ok(memcmp(&th, &th2, sizeof(th)) == 0, "tx head decode(encode) == th");
	ok(fmt_tx_head_verify(&th, 16384) == NULL, "tx head verifies");
	fmt_tx_head_init(&th2);
	is_mem(th2.magic, "TxMagic4", 8, "tx head init sets the magic");

	th2 = th; th2.magic[7] = '5';
	is_str(fmt_tx_head_verify(&th2, 16384), "tx head magic is not TxMagic4",
	       "tx head: magic");
	th2 = th; th2.total = 0;
	is_str(fmt_tx_head_verify(&th2, 16384),
	       "tx head total is 0 (it counts the tx head itself)",
	       "tx head: total");
	th2 = th; th2.next_block = 0;
	is_str(fmt_tx_head_verify(&th2, 16384),
	       "tx head next_block is 0 or not below block_count",
	       "tx head: next block");
	th2 = th; th2.prev_tx = 16384;
	is_str(fmt_tx_head_verify(&th2, 16384),
	       "tx head prev_tx is not below block_count", "tx head: prev tx");
	th2 = th; th2.free_blocks = 16385;
	is_str(fmt_tx_head_verify(&th2, 16384),
	       "tx head free_blocks is larger than block_count",
	       "tx head: free blocks");
}

/* A wander record laid out from the table of section 8.4 with n pairs
 * (original 3000 + i, wandered 2000 + i). */
static void hand_record(uint8_t *buf, uint32_t serial, uint64_t next,
			unsigned n)
{
	memset(buf, 0, BS);
	memcpy(buf + 0, "LogMagc4", 8);
	put_le32(buf + 16, 3);		/* total */
	put_le32(buf + 20, serial);
	put_le64(buf + 24, next);
	for (unsigned i = 0; i < n; i++) {
		put_le64(buf + 32 + 16 * i, 3000 + i);
		put_le64(buf + 32 + 16 * i + 8, 2000 + i);
	}
}

static void test_wander_record(void)
{
	uint8_t buf[BS], enc[BS];
	struct fmt_wander_record wr, wr2;

	hand_record(buf, 1, 1002, 3);
	is_int(fmt_wander_record_decode(buf, BS, &wr), 0, "record decodes");
	ok(memcmp(wr.magic, "LogMagc4", 8) == 0 && wr.id == 0 &&
	   wr.total == 3 && wr.serial == 1 && wr.next_block == 1002,
	   "record header fields");
	is_int(wr.nr_pairs, 3, "three pairs before the zero pair");
	ok(wr.pairs[2].original == 3002 && wr.pairs[2].wandered == 2002 &&
	   wr.pairs[3].original == 0, "pair values");
	is_int(fmt_wander_record_encode(&wr, BS, enc), 0, "record encodes");
	is_mem(enc, buf, BS, "record encode(decode(b)) == b");
	fmt_wander_record_decode(enc, BS, &wr2);
	ok(memcmp(&wr, &wr2, sizeof(wr)) == 0, "record decode(encode) == wr");
	ok(fmt_wander_record_verify(&wr, 16384) == NULL, "record verifies");

	/* A pair with wandered == 0 ends the list even if more follow. */
	put_le64(buf + 32 + 16 * 1 + 8, 0);
	fmt_wander_record_decode(buf, BS, &wr2);
	is_int(wr2.nr_pairs, 1, "list ends at the first wandered == 0");

	hand_record(buf, 2, 1000, 254);
	fmt_wander_record_decode(buf, BS, &wr);
	is_int(wr.nr_pairs, 254, "a full record holds 254 pairs");
	is_u64(wr.pairs[253].original, 3253, "last pair at 32 + 16 * 253");
	fmt_wander_record_encode(&wr, BS, enc);
	is_mem(enc, buf, BS, "full record round trip");
	is_int(fmt_wander_capacity(4096), 254, "capacity of 4096 bytes");
	is_int(fmt_wander_capacity(1024), 62, "capacity of 1024 bytes");
	fmt_wander_record_decode(buf, 1024, &wr2);
	is_int(wr2.nr_pairs, 62, "1024-byte record stops at its capacity");
	is_int(fmt_wander_record_encode(&wr, 1024, enc), R4_ERANGE,
	       "too many pairs for 1024 bytes");
	is_int(fmt_wander_record_decode(buf, 8192, &wr2), R4_EUNSUPP,
	       "8192-byte records are not supported");
	is_int(fmt_wander_record_decode(buf, 40, &wr2), R4_EINVAL,
	       "a block too small for one pair");

}

static void test_wander_verify(void)
{
	uint8_t buf[BS];
	struct fmt_wander_record wr, wr2;

	hand_record(buf, 2, 1000, 254);
	fmt_wander_record_decode(buf, BS, &wr);
	fmt_wander_record_init(&wr2);
	is_mem(wr2.magic, "LogMagc4", 8, "record init sets the magic");
	wr2 = wr; wr2.magic[0] = 'l';
	is_str(fmt_wander_record_verify(&wr2, 16384),
	       "wander record magic is not LogMagc4", "record: magic");
	wr2 = wr; wr2.total = 1;
	is_str(fmt_wander_record_verify(&wr2, 16384),
	       "wander record total is below 2 (tx head + this record)",
	       "record: total");
	wr2 = wr; wr2.serial = 3;
	is_str(fmt_wander_record_verify(&wr2, 16384),
	       "wander record serial is not in 1..total-1", "record: serial");
	wr2 = wr; wr2.next_block = 0;
	is_str(fmt_wander_record_verify(&wr2, 16384),
	       "wander record next_block is 0 or not below block_count",
	       "record: next block");
	wr2 = wr; wr2.pairs[100].original = 0;
	is_str(fmt_wander_record_verify(&wr2, 16384),
	       "wander record pair original is 0 or not below block_count",
	       "record: original 0");
	wr2 = wr; wr2.pairs[7].wandered = 16384;
	is_str(fmt_wander_record_verify(&wr2, 16384),
	       "wander record pair wandered is 0 or not below block_count",
	       "record: wandered past the end");
	wr2 = wr; wr2.nr_pairs = 255;
	is_str(fmt_wander_record_verify(&wr2, 16384),
	       "wander record holds more than 254 pairs", "record: 255 pairs");
}

static int io_at(const char *path, uint64_t blk, uint8_t *buf, int write)
{
	int fd = open(path, write ? O_WRONLY : O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write ? pwrite(fd, buf, BS, (off_t)(blk * BS))
		  : pread(fd, buf, BS, (off_t)(blk * BS));
	close(fd);
	return n == BS ? 0 : -1;
}

static void test_mkfs_zero_blocks(const char *path)
{
	uint8_t blk[BS], zero[BS];
	struct fmt_journal_header jh;
	struct fmt_journal_footer jf;

	memset(zero, 0, BS);
	fixture_block(path, 19, blk);
	is_mem(blk, zero, BS, "mkfs journal header block is all zero");
	fmt_journal_header_decode(blk, &jh);
	ok(jh.last_committed_tx == 0 &&
	   fmt_journal_header_verify(&jh, 16384) == NULL,
	   "mkfs header: nothing committed, verifies");
	fixture_block(path, 20, blk);
	is_mem(blk, zero, BS, "mkfs journal footer block is all zero");
	fmt_journal_footer_decode(blk, &jf);
	ok(jf.last_flushed_tx == 0 && jf.free_blocks == 0 &&
	   fmt_journal_footer_verify(&jf, 16384) == NULL,
	   "mkfs footer: nothing flushed, verifies");
}

/* Commit a one-record transaction wandering blocks 3000, 3001 to 2000,
 * 2001 (tx head 1000, record 1001), all encoded here; fsck.reiser4
 * replays it, which it can only do if our layout is the one it reads. */
static void test_replay_oracle(void)
{
	char path[64], cmd[256];
	uint8_t blk[BS], a[BS], b[BS];
	struct fmt_tx_head th;
	struct fmt_wander_record wr;
	struct fmt_journal_header jh = { 1000 };
	int rc;

	if (fixture_mkfs("", "64M", path)) {
		tap_skip(10, "mkfs.reiser4 not available");
		return;
	}
	test_mkfs_zero_blocks(path);
	memset(a, 0x5a, BS);
	memset(b, 0xa5, BS);
	memset(blk, 0, BS);
	fmt_tx_head_init(&th);
	th.total = 2;
	th.next_block = 1001;
	th.free_blocks = 16359;
	th.nr_files = 1;
	th.next_oid = 0x10000;
	fmt_tx_head_encode(&th, blk);
	rc = io_at(path, 1000, blk, 1);
	fmt_wander_record_init(&wr);
	wr.total = 2;
	wr.serial = 1;
	wr.next_block = 1000;
	wr.nr_pairs = 2;
	wr.pairs[0] = (struct fmt_wander_pair){ 3000, 2000 };
	wr.pairs[1] = (struct fmt_wander_pair){ 3001, 2001 };
	ok(fmt_tx_head_verify(&th, 16384) == NULL &&
	   fmt_wander_record_verify(&wr, 16384) == NULL,
	   "the transaction verifies");
	fmt_wander_record_encode(&wr, BS, blk);
	rc |= io_at(path, 1001, blk, 1);
	rc |= io_at(path, 2000, a, 1) | io_at(path, 2001, b, 1);
	memset(blk, 0, BS);
	fmt_journal_header_encode(&jh, blk);
	rc |= io_at(path, 19, blk, 1);		/* commit point */
	is_int(rc, 0, "transaction written");

	snprintf(cmd, sizeof(cmd), "fsck.reiser4 -f -y '%s' >/dev/null 2>&1",
		 path);
	rc = system(cmd);
	is_int(rc, 0, "fsck.reiser4 replays and finds the volume consistent");
	io_at(path, 3000, blk, 0);
	is_mem(blk, a, BS, "block 3000 got the wandered copy from 2000");
	io_at(path, 3001, blk, 0);
	is_mem(blk, b, BS, "block 3001 got the wandered copy from 2001");
	io_at(path, 19, blk, 0);
	is_u64(get_le64(blk), 0, "progs zeroes the journal header after replay");
	unlink(path);
}

int main(void)
{
	test_header_footer();
	test_tx_head();
	test_wander_record();
	test_wander_verify();
	test_replay_oracle();
	return tap_done();
}
