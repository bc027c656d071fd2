/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the test hook of the crash harness, linked only into test
 * builds (tests/crash/bin/r4pack, tests/crash/bin/r4debugfs, r4txn),
 * never into an installed command. Before main() it makes the power
 * object of the fault backend (libimage/io/fault.h) from the environment
 * and hands it to every open of the command (r4cmd_fault, cmd/common:
 * one cut stops them all):
 *
 *   R4_FAULT         count, fail-write=N, cut-after=N, torn-write=N,
 *                    drop-unsynced=N or keep-subset=N[:SEED] (unset or
 *                    empty: no fault);
 *   R4_FAULT_REPORT  a file to which each faulty device appends
 *                    "writes=W syncs=S cut=C\n" as it closes.
 *   R4_FAULT_SYNCS   a file to which each sync before the cut appends
 *                    the number of writes before it, "W\n".
 *
 *   R4_WRITE_BEHIND  the node blocks an add keeps before it writes the
 *                    oldest (obj_add_write_behind): small, so a small
 *                    add writes nodes before its commit too.
 *
 *   R4_COPY_CUT      N > 0: the first copy_file_range copies at most N
 *                    bytes, every later one fails with EXDEV; 0: every
 *                    one copies nothing (returns 0). The build's copy
 *                    path must then read and write the rest itself.
 *
 *   R4_SRC_END       N: a pread of a file whose name ends in ".tar"
 *                    sees it end at byte N, as if the archive were cut
 *                    there after it was opened (libarchive reads with
 *                    read(), untouched: only the build's reads of data
 *                    where it lies in the archive are cut).
 *
 *   R4_SYNC_LOG      a file to which each fsync(2) appends "fsync PATH",
 *                    each syncfs(2) "syncfs PATH" and each pwrite(2)
 *                    "pwrite PATH" (one line for a
 *                    run of them to one file): the order in which the
 *                    command made files durable and changed them.
 *
 *   R4_SYNC_FAIL     a path: each fsync(2) or syncfs(2) of a file or
 *                    folder open under exactly that name fails with EIO
 *                    (nothing synced): the commands' failed-sync paths;
 *                    R4_SYNC_FAIL_AFTER=N lets the first N succeed;
 *                    R4_SYNC_FAIL_ERRNO=EINVAL|EBADF|EROFS|EIO gives
 *                    that error instead (a file system that cannot
 *                    sync a folder).
 *
 *   R4_ENOSPC_DIR    a folder: writes (pwrite(2), write(2)) to files
 *                    under it (unlinked ones too) fail with ENOSPC once
 *                    R4_ENOSPC_AFTER bytes (default 0) went there, the
 *                    write that crosses it cut short: a full file
 *                    system, without a mount.
 *
 *   R4_MOUNTINFO, R4_SYSBLOCK  the mount table and the loop devices
 *                    to read instead of /proc/self/mountinfo and
 *                    /sys/block (tests of the mounted-device refusal).
 *
 * A bad R4_FAULT ends the program with exit status 2 and a one-line
 * message. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "libimage/io/fault.h"
#include "libimage/io/dev.h"
#include "libimage/obj/write.h"
#include "cmd/common/common.h"

/* The kernel's copy_file_range, cut as R4_COPY_CUT says (only the
 * build's writer thread calls it). */
ssize_t copy_file_range(int in, off_t *in_off, int out, off_t *out_off,
			size_t len, unsigned flags)
{
	static int calls;
	const char *v = getenv("R4_COPY_CUT");

	if (v && *v) {
		long n = atol(v);

		if (n <= 0)
			return 0;
		if (calls++) {
			errno = EXDEV;
			return -1;
		}
		if (len > (size_t)n)
			len = (size_t)n;
	}
	return syscall(SYS_copy_file_range, in, in_off, out, out_off, len,
		       flags);
}

/* fd names a file ending in ".tar" (R4_SRC_END). */
static int is_tar(int fd)
{
	char link[64], name[4096];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, name, sizeof(name) - 1);
	return n > 4 && !memcmp(name + n - 4, ".tar", 4);
}

/* pread, cut as R4_SRC_END says. */
ssize_t pread(int fd, void *buf, size_t len, off_t off)
{
	const char *v = getenv("R4_SRC_END");

	if (v && *v && is_tar(fd)) {
		off_t end = (off_t)atoll(v);

		if (off >= end)
			return 0;
		if ((off_t)len > end - off)
			len = (size_t)(end - off);
	}
	return syscall(SYS_pread64, fd, buf, len, off);
}

/* The name fd is open under ("" if none) in name[4096]. */
static const char *fd_name(int fd, char *name)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, name, 4095);
	name[n > 0 ? n : 0] = 0;
	return name;
}

/* R4_SYNC_LOG: "what PATH" for fd, unless it repeats the line before. */
static void sync_log(const char *what, int fd)
{
	static char last[4200];
	const char *log = getenv("R4_SYNC_LOG");
	char name[4096], line[4200];
	FILE *f;

	if (!log || !*log)
		return;
	snprintf(line, sizeof(line), "%s %s\n", what, fd_name(fd, name));
	if (!strcmp(line, last) || !(f = fopen(log, "a")))
		return;
	fputs(line, f);
	fclose(f);
	memcpy(last, line, sizeof(last));
}

/* The error R4_SYNC_FAIL_ERRNO names (EIO when unset or unknown). */
static int sync_errno(void)
{
	static const struct { const char *name; int e; } known[] = {
		{ "EINVAL", EINVAL }, { "EBADF", EBADF }, { "EROFS", EROFS },
		{ "EIO", EIO },
	};
	const char *v = getenv("R4_SYNC_FAIL_ERRNO");
	size_t i;

	for (i = 0; v && i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(v, known[i].name))
			return known[i].e;
	return EIO;
}

/* R4_SYNC_FAIL names fd's file: its sync fails (EIO, or the errno
 * R4_SYNC_FAIL_ERRNO names). */
static int sync_fails(int fd)
{
	static long seen;
	const char *v = getenv("R4_SYNC_FAIL");
	const char *after = getenv("R4_SYNC_FAIL_AFTER");
	char name[4096];

	if (!v || !*v || strcmp(fd_name(fd, name), v))
		return 0;
	if (after && seen++ < atol(after))
		return 0;
	errno = sync_errno();
	return 1;
}

int fsync(int fd)
{
	sync_log("fsync", fd);
	return sync_fails(fd) ? -1 : (int)syscall(SYS_fsync, fd);
}

int syncfs(int fd)
{
	sync_log("syncfs", fd);
	return sync_fails(fd) ? -1 : (int)syscall(SYS_syncfs, fd);
}

/* R4_ENOSPC_DIR: how much of len may go to fd's file (len when it is
 * not under the folder); 0 with errno ENOSPC when the room is gone. */
static size_t enospc_room(int fd, size_t len)
{
	static unsigned long long used;
	const char *dir = getenv("R4_ENOSPC_DIR");
	const char *after = getenv("R4_ENOSPC_AFTER");
	unsigned long long cap = after && *after ? strtoull(after, NULL, 10) : 0;
	char name[4096];
	size_t n = dir ? strlen(dir) : 0;

	if (!n || !len || strncmp(fd_name(fd, name), dir, n) || name[n] != '/')
		return len;
	if (used >= cap) {
		errno = ENOSPC;
		return 0;
	}
	if (len > cap - used)
		len = (size_t)(cap - used);
	used += len;
	return len;
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
	size_t room = enospc_room(fd, len);

	sync_log("pwrite", fd);
	if (!room && len)
		return -1;
	return syscall(SYS_pwrite64, fd, buf, room, off);
}

ssize_t write(int fd, const void *buf, size_t len)
{
	size_t room = enospc_room(fd, len);

	if (!room && len)
		return -1;
	return syscall(SYS_write, fd, buf, room);
}

static void report(void *ctx, const struct io_fault_stats *st)
{
	const char *path = ctx;
	FILE *f = fopen(path, "a");

	if (!f)
		return;
	fprintf(f, "writes=%llu syncs=%llu cut=%d\n",
		(unsigned long long)st->writes, (unsigned long long)st->syncs,
		st->fired);
	fclose(f);
}

static void sync_note(void *ctx, uint64_t writes)
{
	FILE *f = fopen((const char *)ctx, "a");

	if (!f)
		return;
	fprintf(f, "%llu\n", (unsigned long long)writes);
	fclose(f);
}

/* A command that ends without a cut: what it wrote and did not sync
 * reaches the files (the page cache would write it); a close alone did
 * not (libimage/io/fault.h). */
static void fault_env_end(void) __attribute__((destructor));
static void fault_env_end(void)
{
	int rc = io_fault_end(r4cmd_fault);

	if (rc) {	/* the harness lost writes it owed: fail loudly */
		fprintf(stderr, "fault_env: the writes held at the end could "
			"not all be written: %s\n", strerror(-rc));
		_exit(70);
	}
}

static void fault_env(void) __attribute__((constructor));
static void fault_env(void)
{
	const char *env = getenv("R4_FAULT");
	const char *rep = getenv("R4_FAULT_REPORT");
	const char *syncs = getenv("R4_FAULT_SYNCS");
	const char *wb = getenv("R4_WRITE_BEHIND");
	struct io_fault_spec spec;

	if (wb && *wb)
		obj_add_write_behind(strtoul(wb, NULL, 10));
	r4cmd_mountinfo = getenv("R4_MOUNTINFO");
	r4cmd_sysblock = getenv("R4_SYSBLOCK");
	if (!env || !*env)
		return;
	if (io_fault_parse(env, &spec)) {
		fprintf(stderr, "R4_FAULT='%s': expected count, fail-write=N, "
			"cut-after=N, torn-write=N, drop-unsynced=N or "
			"keep-subset=N[:SEED]\n", env);
		exit(2);
	}
	r4cmd_fault = io_fault_new(&spec, rep && *rep ? report : NULL,
				   (void *)rep);
	if (!r4cmd_fault && spec.mode != IO_FAULT_NONE) {
		fprintf(stderr, "R4_FAULT='%s': out of memory\n", env);
		exit(2);
	}
	if (syncs && *syncs)
		io_fault_on_sync(r4cmd_fault, sync_note, (void *)syncs);
}
