/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4mount: what main.c (the read side, command line), rw.c (-o rw) and
 * pathcache.c (paths to objects) share. */
#ifndef R4_CMD_MOUNT_H
#define R4_CMD_MOUNT_H

#define FUSE_USE_VERSION 31
#include <fuse.h>
#include "r4/r4.h"
#include "r4/read.h"

extern struct r4_vol *vol;
extern struct r4_super_info si;
extern int opt_debug, opt_foreground;

void r4m_logerr(const char *what, const char *path,
		const struct r4_error *err);
int r4m_to_errno(int code);
/* pathcache.c: path -> object through the cache of names looked up.
 * r4m_resolve answers an errno, r4m_walk the library's code (and is the
 * transactions' resolver through r4m_txn_resolve). Before a change of
 * path's name, r4m_forget(path). An aborted transaction:
 * r4m_forget_all. */
int r4m_resolve(const char *path, struct r4_objref *ref);
int r4m_walk(const char *path, struct r4_objref *ref, struct r4_error *err);
int r4m_txn_resolve(void *ctx, const char *path, struct r4_objref *out,
		    struct r4_error *err);
void r4m_forget(const char *path);
void r4m_forget_all(void);

/* Open files and directories keep what they need in fi->fh. */
struct r4m_file {
	struct r4_objref ref;
	uint64_t size;
};

/* rw.c: -o rw. The big lock serializes every request and the commit
 * timer; r4m_rw_ops fills the operations that change the volume. */
extern int r4m_rw;
extern unsigned r4m_commit_secs;
void r4m_lock(void);
void r4m_unlock(void);
void r4m_rw_ops(struct fuse_operations *ops);
/* No extended attributes, answered as the kernel module does. */
void r4m_xattr_ops(struct fuse_operations *ops);
int r4m_rw_start(void);		/* the commit timer */
void r4m_rw_stop(void);		/* commit what is left, stop the timer */
uint64_t r4m_free_blocks(void);

#endif
