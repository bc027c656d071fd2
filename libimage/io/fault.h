/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the fault-injection device backend, for tests only: off unless
 * a test arms it through io_fault_arm() (as e2fsprogs' test_io manager
 * is chosen by the program, never by the environment of an installed
 * tool). It wraps the file backend of a device opened read-write, counts
 * its writes and syncs and, in one of four modes, simulates a failure at
 * the N-th write (N counts from 1):
 *
 *   fail-write=N     the N-th write returns -EIO and writes nothing;
 *                    later writes work again;
 *   cut-after=N      power loss after the N-th write: writes N+1, ...
 *                    and every later sync are silently dropped (the
 *                    process goes on; the caller closes and reopens);
 *   torn-write=N     the N-th write puts only its first half on disk,
 *                    then the cut as above;
 *   drop-unsynced=N  writes are held in memory until the next sync
 *                    (reads see them); after the N-th write the power
 *                    goes: the held writes are lost, later ones dropped;
 *   count            no fault, counting only.
 *
 * N counts the writes of the whole process: the devices opened while a
 * fault is armed count together, and after the cut no device writes,
 * syncs or resizes (a command that opens the volume several times, as
 * r4fsck -y does for its fixes before the open, is cut at its N-th write
 * as one power cut would). Each device still reports its own counts.
 *
 * Nothing in the library reads the environment for it. The test builds
 * of the commands (tests/crash/bin, linked with tests/helpers/fault_env.c)
 * arm it from R4_FAULT="cut-after=12" etc. and report each faulty
 * device's counts to R4_FAULT_REPORT through io_fault_on_close(), so a
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
	IO_FAULT_DROP_UNSYNCED
};

struct io_fault_spec {
	enum io_fault_mode mode;
	uint64_t n;
};

/* Parse "mode=N" / "count"; 0 or R4_EINVAL. */
int io_fault_parse(const char *s, struct io_fault_spec *out);

/* Arm a fault for the next devices opened read-write in this process; a
 * spec with mode IO_FAULT_NONE disarms. */
void io_fault_arm(const struct io_fault_spec *spec);

/* What the fault backend saw on the most recently closed or still open
 * faulty device. */
struct io_fault_stats {
	uint64_t writes, syncs;
	int fired;		/* the fault happened */
};
void io_fault_last_stats(struct io_fault_stats *out);

/* Called with the counts of each faulty device as it closes (NULL: no
 * call). */
typedef void (*io_fault_report_fn)(void *ctx,
				   const struct io_fault_stats *st);
void io_fault_on_close(io_fault_report_fn fn, void *ctx);

/* Called by io_open for a read-write device: wrap it when a fault is
 * armed. 0, or -ENOMEM. */
int io_fault_maybe_attach(struct io_dev *dev, struct r4_error *err);

#endif
