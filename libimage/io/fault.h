/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the fault-injection device backend, for tests only: off unless
 * an open asks for it (r4_open_opts.fault, as e2fsprogs' test_io manager
 * is chosen by the program for one ext2fs_open, never by the environment
 * of an installed tool). It wraps the file backend of a device opened
 * read-write, counts
 * its writes and syncs and, in one of five modes, simulates a failure at
 * the N-th write (N counts from 1):
 *
 *   fail-write=N     the N-th write returns -EIO and writes nothing;
 *                    later writes work again;
 *   cut-after=N      power loss after the N-th write: writes N+1, ...
 *                    and every later sync are silently dropped (the
 *                    process goes on; the caller closes and reopens);
 *   torn-write=N     the N-th write puts only its first half on disk,
 *                    then the cut as above;
 *   drop-unsynced=N  writes are held in memory until the next sync of
 *                    their file (reads see them); after the N-th write
 *                    the power goes: the held writes are lost, later
 *                    ones dropped;
 *   keep-subset=N[:S]  writes are held as for drop-unsynced; after the
 *                    N-th write the power goes, the N-th write reaches
 *                    the disk, and of the writes held before it (issued
 *                    since the last sync) none without S or with S = 0,
 *                    with another S a subset drawn from seed S: a disk
 *                    that wrote a later write but not an earlier one, as
 *                    it may between two syncs; later writes dropped;
 *   count            no fault, counting only.
 *
 * Held writes belong to the file (device and inode numbers, and the
 * window), not to the open that issued them, as the page cache holds
 * them: a close does not write them; a later open of the same file reads
 * them, and a sync through any open of it writes them; at the cut the
 * held writes of every file follow the mode's rule (those of a file no
 * longer open are written through a plain open of its path); a run that
 * ends without a cut writes them all (io_fault_end). A sync of one file
 * leaves another's held. Only the devices opened with the object are
 * modelled: not the undo file (written and synced at once by the undo
 * backend, which writes nothing after the cut: io_fault_down), nor the
 * scratch files of io_open_fd_rw.
 *
 * The fault is a "power" object (struct r4_fault) that opens share: N
 * counts the writes of every device opened with the same object, and
 * after the cut none of them writes, syncs or resizes (a command that
 * opens the volume several times, as r4fsck -y does for its fixes before
 * the open, is cut at its N-th write as one power cut would). Each
 * device still reports its own counts. An open without one has no fault
 * backend; nothing of it is process-wide.
 *
 * Nothing in the library reads the environment for it. The test builds
 * of the commands (tests/crash/bin, linked with tests/helpers/fault_env.c)
 * make one object from R4_FAULT="cut-after=12" etc. for every open of
 * the command (cmd/common: r4cmd_open) and report each faulty device's
 * counts to R4_FAULT_REPORT through the object's close callback, so a
 * harness can count a workload's writes and then cut at 1..W. */
#ifndef R4_LIBIMAGE_IO_FAULT_H
#define R4_LIBIMAGE_IO_FAULT_H

#include <stdint.h>
#include "libimage/io/dev.h"

enum io_fault_mode {
	IO_FAULT_NONE = 0,
	IO_FAULT_COUNT,
	IO_FAULT_FAIL_WRITE,
	IO_FAULT_CUT_AFTER,
	IO_FAULT_TORN_WRITE,
	IO_FAULT_DROP_UNSYNCED,
	IO_FAULT_KEEP_SUBSET
};

struct io_fault_spec {
	enum io_fault_mode mode;
	uint64_t n;
	uint64_t seed;		/* keep-subset only: 0 keeps none */
};

/* Parse "mode=N" / "keep-subset=N:S" / "count"; 0 or R4_EINVAL. */
int io_fault_parse(const char *s, struct io_fault_spec *out);
/* The spec as io_fault_parse reads it (no fault: "", which it refuses,
 * as it refuses the "?" of a mode that is none of these), NUL-terminated
 * and cut to len; the length it needs (snprintf's rule). */
int io_fault_format(const struct io_fault_spec *spec, char *buf,
		    size_t len);

/* What the fault backend saw on one device. */
struct io_fault_stats {
	uint64_t writes, syncs;
	int fired;		/* the fault happened */
};

/* Called with the counts of each faulty device as it closes. */
typedef void (*io_fault_report_fn)(void *ctx,
				   const struct io_fault_stats *st);

/* A new power object for spec (mode IO_FAULT_NONE: NULL, no fault),
 * report (may be NULL) called as each of its devices closes; NULL also
 * when out of memory. Its counts start at zero. Each device opened with
 * it holds a reference: io_fault_put drops the caller's, and the object
 * goes when the last of its devices closed. */
struct r4_fault *io_fault_new(const struct io_fault_spec *spec,
			      io_fault_report_fn report, void *ctx);
void io_fault_put(struct r4_fault *f);
/* The process ends with no cut: the writes still held (drop-unsynced,
 * keep-subset) reach their files, as the page cache would write them
 * (io_fault_put does it too when it drops the last reference, and
 * cannot say when that fails). 0, or the first error: a file that could
 * not take them, or another file under its path now (-ESTALE; a device
 * that is no plain file cannot be opened again once closed). The
 * devices of one power object may be used from several threads (they
 * take turns); a process that ends by _exit, abort or a signal skips
 * the end (its held writes are lost, as at a cut, unreported), and a
 * forked child that ends by exit would write the parent's held writes
 * again: the tools fork none. */
int io_fault_end(struct r4_fault *f);
/* Called at each sync of a device of f that reaches the disk (none
 * after the cut), with the writes of every device of f so far: a
 * harness learns where the syncs fall, so it can cut just before one. */
typedef void (*io_fault_sync_fn)(void *ctx, uint64_t writes);
void io_fault_on_sync(struct r4_fault *f, io_fault_sync_fn fn, void *ctx);
/* What the fault backend saw on the most recently closed or still open
 * device of f. */
void io_fault_last_stats(const struct r4_fault *f,
			 struct io_fault_stats *out);

/* Wrap the read-write device dev in the fault backend of f (NULL: leave
 * it). 0, or -ENOMEM. */
int io_fault_attach(struct io_dev *dev, struct r4_fault *f,
		    struct r4_error *err);

/* 1 when dev is a device of the fault backend whose power went (the
 * undo backend above it then writes its undo file no more either). */
int io_fault_down(const struct io_dev *dev);

#endif
