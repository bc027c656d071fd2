/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the fault-injection device backend (tests only; compiled in,
 * off unless asked for). It wraps the file backend of a device opened
 * read-write, counts its writes and syncs and, in one of four modes,
 * simulates a failure at the N-th write (N counts from 1):
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
 * Switched on by the environment of any process (the command-level
 * harness): R4_FAULT="cut-after=12" etc. When R4_FAULT_REPORT names a
 * file, each faulty device appends "writes=W syncs=S cut=C\n" to it at
 * close (C = 1 when the fault fired), so a harness can first count a
 * workload's writes with R4_FAULT=count and then cut at 1..W. Unit tests
 * set the mode with io_fault_arm() instead. */
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

/* Arm a fault for the next devices opened read-write in this process
 * (overrides R4_FAULT); a spec with mode IO_FAULT_NONE disarms. */
void io_fault_arm(const struct io_fault_spec *spec);

/* What the fault backend saw on the most recently closed or still open
 * faulty device. */
struct io_fault_stats {
	uint64_t writes, syncs;
	int fired;		/* the fault happened */
};
void io_fault_last_stats(struct io_fault_stats *out);

/* Called by io_open for a read-write device: wrap it when a fault is
 * armed (programmatically or by R4_FAULT). 0, or an error for a bad
 * R4_FAULT value. */
int io_fault_maybe_attach(struct io_dev *dev, struct r4_error *err);

#endif
