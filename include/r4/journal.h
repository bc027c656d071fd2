/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: what opening a volume did with its journal. A read-write open
 * replays every committed transaction not yet written in place (and
 * writes the journal footer after each); a read-only open writes nothing
 * and reads through those transactions instead (an overlay), so readers
 * and the checker see the committed state. */
#ifndef R4_JOURNAL_H
#define R4_JOURNAL_H

#include "r4/r4.h"

/* Transactions replayed by a read-write open. */
unsigned r4_vol_replayed(const struct r4_vol *vol);
/* Transactions a read-only open reads through (0 when none). */
unsigned r4_vol_overlaid(const struct r4_vol *vol);
/* Why a read-only open could not read through the journal ("" when it
 * could or there was nothing to read): the blocks are then seen as they
 * are, and the checker reports the unreplayed transaction. */
const char *r4_vol_journal_msg(const struct r4_vol *vol);

#endif
