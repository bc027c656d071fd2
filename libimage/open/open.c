/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: r4_vol_open and r4_vol_close, the open as a value
 * (r4_open_opts: access, locks, wait, the byte window of a partition,
 * the device backends of this open: an undo file, a test's fault):
 * a volume (libimage/vol) with its journal taken care of. A read-write
 * open replays the committed transactions not yet written home; a
 * read-only one reads through them (an overlay) and writes nothing. */
#include "config.h"
#include <stdio.h>
#include <string.h>
#include "libimage/io/undo.h"
#include "libimage/txn/txn.h"
#include "libimage/util/err.h"
#include "r4/journal.h"

/* A journal the overlay cannot use leaves the blocks as they are, with
 * the reason in journal_msg (the checker reports the unreplayed
 * transaction). After kernel use the footer's counters are the current
 * ones. */
static int vol_journal(struct r4_vol *vol, struct r4_error *err)
{
	struct r4_error jerr = { 0 };
	int rc;

	if (!vol->dev->readonly) {
		rc = txn_replay(vol, &vol->replayed, err);
		if (!rc && vol->jf.last_flushed_tx) {
			vol->sb.free_blocks = vol->jf.free_blocks;
			vol->sb.file_count = vol->jf.nr_files;
			vol->sb.next_oid = vol->jf.next_oid;
		}
		return rc;
	}
	if (vol->flags & R4_OPEN_NO_REPLAY)
		return 0;
	if (txn_overlay(vol, &jerr)) {
		snprintf(vol->journal_msg, sizeof(vol->journal_msg), "%s",
			 jerr.msg);
		txn_overlay_drop(vol);
		vol->overlaid = 0;
	}
	return 0;
}

void r4_open_opts_init(struct r4_open_opts *o, unsigned flags)
{
	memset(o, 0, sizeof(*o));
	o->flags = flags;
}

int r4_vol_open(const char *path, const struct r4_open_opts *opts,
		struct r4_vol **out, struct r4_error *err)
{
	struct r4_open_opts ro;
	struct r4_vol *vol;
	int rc;

	*out = NULL;
	if (!opts) {
		r4_open_opts_init(&ro, R4_OPEN_RDONLY);
		opts = &ro;
	}
	rc = vol_open(path, opts, &vol, err);
	if (rc)
		return rc;
	rc = vol_journal(vol, err);
	if (rc) {
		r4_vol_close(vol, NULL);
		return rc;
	}
	*out = vol;
	return 0;
}

int r4_vol_close(struct r4_vol *vol, struct r4_error *err)
{
	char name[256];
	size_t leaked;
	int rc = 0;

	if (!vol)
		return 0;
	/* Every write went through a transaction; one still open is
	 * dropped. */
	if (vol->txn) {
		txn_abort(vol->txn);
		rc = r4i_fail(err, R4_EINVAL, "%s: closed with a transaction "
			     "open: its changes were dropped",
			     vol->dev->path);
	}
	snprintf(name, sizeof(name), "%s", vol->dev ? vol->dev->path : "volume");
	leaked = vol_free(vol);
	/* A block still referenced now is a reference some code path
	 * forgot to put back: an error the caller sees. */
	if (leaked && !rc)
		rc = r4i_fail(err, R4_EINVAL, "%s: closed with %zu block(s) of "
			     "the cache still referenced (a leak)", name, leaked);
	return rc;
}

unsigned r4_vol_replayed(const struct r4_vol *vol)
{
	return vol->replayed;
}

unsigned r4_vol_overlaid(const struct r4_vol *vol)
{
	return vol->overlaid;
}

const char *r4_vol_journal_msg(const struct r4_vol *vol)
{
	return vol->journal_msg;
}

int r4_undo_create(const char *path, struct r4_undo **out,
		   struct r4_error *err)
{
	return io_undo_create(path, out, err);
}

void r4_undo_close(struct r4_undo *undo)
{
	io_undo_put(undo);
}
