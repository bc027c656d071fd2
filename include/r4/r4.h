/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the public interface of libimage, the only one the commands use.
 *
 * Conventions: functions return 0 or a negative code (-errno, or one of
 * the R4_E* codes of r4_strerror()). Every function that can fail takes a
 * struct r4_error that receives a one-line message naming the file, the
 * block, the field or the entry at fault; the library never prints,
 * exits or aborts on bad data. Handles are opaque. */
#ifndef R4_R4_H
#define R4_R4_H

#include <stddef.h>
#include <stdint.h>
/* The error codes (R4_E*) and r4_strerror(). */
#include "r4/errors.h"

#define R4_ERRMSG_MAX 512

struct r4_error {
	int code;			/* 0 or the negative code */
	char msg[R4_ERRMSG_MAX];	/* "" or a one-line message */
	/* code R4_EBUSY (something else holds the image): the process
	 * holding it when the kernel tells it, else 0. */
	int pid;
};

/* Temporary files being written (a new image, a tarball): registered
 * by the library while they exist, so that a signal handler can remove
 * them. add returns 0, or -1 when the table is full; remove_all is
 * async-signal-safe (unlink only). */
int r4_tmpfile_add(const char *path);
void r4_tmpfile_forget(const char *path);
void r4_tmpfile_remove_all(void);

/* Make the entry of the file path in its folder durable (an fsync of
 * the folder): a file made or renamed there that must outlive a power
 * cut. 0 or -errno. A folder this process may not open (no read
 * permission: EACCES, EPERM) or whose file system cannot fsync a folder
 * (EINVAL, EBADF) is made durable by a syncfs(2) of the file at path
 * (sync(2) when it cannot be opened either); on a read-only file system
 * (EROFS) there is nothing to sync: 0. */
int r4_sync_dir(const char *path);
/* fsync of the file at path (its bytes before a rename puts it in
 * place; no error is excused, unlike r4_sync_dir). 0 or -errno. */
int r4_sync_file(const char *path);

/* A host file a command writes (a tarball, a recovered file, a block).
 * r4_outfile_open refuses, with one message naming out, an output that
 * is the image (the same device and inode, so a hard or symbolic link
 * to it too; NULL image: no such check), a directory, a symbolic link
 * to nothing, and, unless R4_OUT_SPECIAL, a device, a FIFO or a socket
 * (with it they are opened and written straight into). A regular or
 * missing file is written as a new temporary file in its folder
 * ("OUT.r4tmpXXXXXX", mode & ~umask, removed on a signal): nothing at
 * out is created, truncated or removed until r4_outfile_commit renames
 * it over out (through a symbolic link: over the file the link names),
 * or, with R4_OUT_NOREPLACE (an existing out is refused at open),
 * links it there only if the name is still free; the bytes are synced
 * before and the folder after, so a file committed outlives a power cut
 * (unless R4_OUT_NOSYNC: the caller syncs, e.g. once for a tree of
 * files; a file replaced then may be empty after a cut). r4_outfile_abort
 * removes the temporary file and nothing else. Both free o; commit
 * closes fd and returns 0 or a negative code. use says what is done
 * with the image in the message ("read", "extracted"). */
enum r4_outfile_flags {
	R4_OUT_SPECIAL = 1,
	R4_OUT_NOREPLACE = 2,
	R4_OUT_NOSYNC = 4
};

struct r4_outfile {
	int fd;			/* write here */
	int direct;		/* a device or FIFO, written into */
	unsigned flags;
	char *final;		/* what tmp becomes */
	char *tmp;
};

int r4_outfile_open(struct r4_outfile *o, const char *out, const char *image,
		    unsigned flags, unsigned mode, const char *use,
		    struct r4_error *err);
int r4_outfile_commit(struct r4_outfile *o, const char *out,
		      struct r4_error *err);
void r4_outfile_abort(struct r4_outfile *o);
/* R4_EINVAL when fd (named name in the message) is the image (a
 * standard output sent into it), else 0. */
int r4_outfile_check_fd(int fd, const char *name, const char *image,
			const char *use, struct r4_error *err);

/* The library's version string. */
const char *r4_version(void);

/* ---- Volumes ---------------------------------------------------------- */

struct r4_vol;

enum r4_open_flags {
	R4_OPEN_RDONLY = 0,
	R4_OPEN_RDWR = 1,
	/* Do not refuse a mounted device (read-only opens only). */
	R4_OPEN_FORCE = 2,
	/* Read-only opens: do not read through committed transactions of
	 * the journal; see the blocks as they are on disk. */
	R4_OPEN_NO_REPLAY = 4,
	/* Nothing else may be using the image. Every open first tests
	 * for a mounted device or image (for writing also an image file
	 * attached to a loop device) and for POSIX or OFD locks of other
	 * processes, then takes a flock(2) and an OFD lock on the whole
	 * file: exclusive for writing, shared for reading. A busy image
	 * fails at once with R4_EBUSY (err->pid: the holder, when the
	 * kernel tells it). NOLOCK: a read-only open takes no lock (reads
	 * of a busy image) and r4_vol_lock_note() says when a writer holds
	 * it; WAIT: try again every 100 ms without end;
	 * R4_OPEN_WAIT_SECONDS(n): for at most n seconds. */
	R4_OPEN_NOLOCK = 8,
	R4_OPEN_WAIT = 16
};
/* Wait at most s seconds (1 to 65535) for a busy image. */
#define R4_OPEN_WAIT_SECONDS(s) \
	((unsigned)((s) > 65535u ? 65535u : (s)) << 16)

/* The device backends an open may stack over the file (libimage/io):
 * an undo file being written (r4_undo_create, below) and,
 * for tests only, a simulated power failure (libimage/io/fault.h). */
struct r4_undo;
struct r4_fault;

/* Create the undo file path (it must not exist) for r4_open_opts.undo:
 * each read-write open given the handle saves the old contents of what
 * it overwrites there first; other opens are not touched. */
int r4_undo_create(const char *path, struct r4_undo **out,
		   struct r4_error *err);
/* Drop the caller's handle (NULL: nothing); the file is complete when
 * the last device opened with it has closed too. */
void r4_undo_close(struct r4_undo *undo);

/* How to open an image: every entry point that takes an image's path
 * takes one (r4_vol_open, r4_mkfs and r4_pack_begin through
 * r4_mkfs_opts.open, the repair steps before the open). It also says
 * which device chain the open builds: the file, then for a read-write
 * open the fault and undo backends named here (none: the file alone),
 * and for a read-only one the journal's overlay (libimage/txn). Nothing
 * of one open carries over to another. */
struct r4_open_opts {
	unsigned flags;		/* R4_OPEN_*: read-only by default */
	/* R4_OPEN_WAIT or R4_OPEN_WAIT_SECONDS(n): wait for a busy image
	 * (the same bits in flags work too); 0: fail at once. */
	unsigned wait;
	/* The volume is the size bytes from byte offset of the file or
	 * device (a partition of a disk image); 0, 0: all of it; size 0:
	 * to the end. Every read and write stays inside this window, the
	 * volume's size is the window's size, and the locks are taken on
	 * the whole file or device. A window past the end is R4_ERANGE. */
	uint64_t offset;
	uint64_t size;
	/* Read-write opens: save what the open overwrites in this undo
	 * file first (NULL: none). Opens given the same handle extend one
	 * file; each holds it until its device closes. */
	struct r4_undo *undo;
	/* Tests only: the power object whose cut this open's writes
	 * share (NULL: none; libimage/io/fault.h). */
	struct r4_fault *fault;
	/* Tests only: the mount table and the folder of block devices
	 * the in-use test reads instead of /proc/self/mountinfo and
	 * /sys/block (NULL: those). */
	const char *mountinfo;
	const char *sysblock;
};

/* flags, no wait, the whole file. */
void r4_open_opts_init(struct r4_open_opts *o, unsigned flags);
/* A pointer to the options flags and nothing else, for a call:
 * r4_vol_open(path, R4_OPEN(R4_OPEN_RDWR), &vol, &err). */
#define R4_OPEN(f) (&(const struct r4_open_opts){ .flags = (f) })

/* Open the volume at path; opts NULL: read-only, whole file. */
int r4_vol_open(const char *path, const struct r4_open_opts *opts,
		struct r4_vol **out, struct r4_error *err);
/* Writes back what is dirty (read-write opens) and frees the handle.
 * Accepts NULL. Frees everything even when it fails: R4_EINVAL when a
 * transaction was still open (dropped) or a block of the cache was still
 * referenced (a leak in the library). */
int r4_vol_close(struct r4_vol *vol, struct r4_error *err);

/* A summary of the super blocks, host order. */
struct r4_super_info {
	char label[17];
	uint8_t uuid[16];
	uint32_t blksize;
	uint64_t block_count;
	uint64_t free_blocks;
	uint64_t root_block;
	uint64_t next_oid;
	uint64_t file_count;
	uint64_t flushes;
	uint32_t mkfs_id;
	uint16_t tree_height;
	uint16_t policy;		/* formatting (tail) policy id */
	int large_keys;			/* 1 large, 0 short */
	uint32_t version;
	int backup_update;		/* version bit 31 */
	uint32_t node_pid;
	uint64_t status;		/* status block flags, 0 = consistent */
	int status_present;
	char status_msg[257];
	uint64_t journal_committed;	/* journal header last_committed_tx */
	uint64_t journal_flushed;	/* journal footer last_flushed_tx */
};

void r4_vol_super(const struct r4_vol *vol, struct r4_super_info *out);

/* Read block blk (r4_super_info.blksize bytes) into buf, through the
 * block cache, for inspection tools. R4_ERANGE past the device's end. */
int r4_vol_read_block(struct r4_vol *vol, uint64_t blk, uint8_t *buf,
		      struct r4_error *err);

/* 1 when the last commit failed after its commit point (the journal
 * holds it): the change is not lost, the next writable open completes
 * it; 0 when a failed commit left the volume as it was. */
int r4_vol_commit_pending(const struct r4_vol *vol);
/* A read-only R4_OPEN_NOLOCK open of an image that a writer holds: a
 * one-line note that says so and by whom; "" otherwise. */
const char *r4_vol_lock_note(const struct r4_vol *vol);
/* The path the volume was opened from. */
const char *r4_vol_path(const struct r4_vol *vol);
/* The time (seconds since the epoch) that the transactions of this
 * handle give the objects they make and change, for reproducible
 * volumes (the commands pass SOURCE_DATE_EPOCH); < 0 (the default): the
 * clock. The library reads no environment. */
void r4_vol_set_clock(struct r4_vol *vol, int64_t seconds);

/* ---- Making a volume --------------------------------------------------- */

enum r4_mkfs_ptype {
	R4_PT_CREATE, R4_PT_KEY, R4_PT_NODE, R4_PT_COMPRESS, R4_PT_CMODE,
	R4_PT_CLUSTER, R4_PT_HASH, R4_PT_FIBRATION, R4_PT_FORMATTING,
	R4_PT_COUNT
};

struct r4_mkfs_opts {
	uint64_t size_bytes;	/* 0: the device's or file's size */
	int create_file;	/* create or extend an image file to size_bytes */
	uint32_t blksize;	/* 4096 */
	char label[17];
	uint8_t uuid[16];
	int have_uuid;		/* else a random one (or fixed under test) */
	int lost_found;		/* -s */
	int force;		/* -f: allow a device that holds data */
	/* open.wait: wait for a busy image (see r4_vol_open); 0: fail at
	 * once with R4_EBUSY. open.offset, open.size: make the volume in
	 * that window of the file or device (a partition), which must
	 * exist; size_bytes then at most the window's size. open.flags:
	 * not used (always read-write). */
	struct r4_open_opts open;
	int64_t mkfs_time;	/* -1: now */
	uint16_t plugin[R4_PT_COUNT];	/* ids, from the default profile */
	/* With have_uuid: the mkfs id derived from the UUID, so the same
	 * options give the same bytes (the commands set it when
	 * SOURCE_DATE_EPOCH is set, and mkfs_time from it); 0: random. */
	int reproducible;
};

/* Fill with mkfs.reiser4 1.2.2's defaults. */
void r4_mkfs_opts_init(struct r4_mkfs_opts *o);
/* Apply one "-o TYPE=PLUGIN" override (comma-separated lists allowed). */
int r4_mkfs_override(struct r4_mkfs_opts *o, const char *spec,
		     struct r4_error *err);
/* Print the profile: one "type: name (id)" line per type into buf. */
size_t r4_mkfs_profile_str(const struct r4_mkfs_opts *o, char *buf,
			   size_t len);
/* Make a volume. Fails without touching an existing device or file that
 * holds a filesystem unless o->force; never leaves a new file behind on
 * failure, but when only the sync of a new file's folder failed: the
 * whole volume is then in place (res filled), only its name may not
 * outlive a power cut. */
struct r4_mkfs_result {
	uint64_t block_count;
	uint64_t free_blocks;
	uint8_t uuid[16];
	uint32_t mkfs_id;
};

/* r4mkfs's rule for a target that is not an image file it creates: 0
 * when the first MiB of path (in o's window) holds zeros only, else
 * R4_EEXIST "holds data" (naming a filesystem it knows) or the open's
 * error. */
int r4_mkfs_target_empty(const char *path, const struct r4_open_opts *o,
			 struct r4_error *err);
int r4_mkfs(const char *path, const struct r4_mkfs_opts *o,
	    struct r4_mkfs_result *res, struct r4_error *err);
/* The plugins -o accepts, one "type: name name ..." line per type. */
size_t r4_mkfs_plugins_str(char *buf, size_t len);

#endif
