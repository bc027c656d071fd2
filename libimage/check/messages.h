/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the checker's messages: CHK_M_ENUM(id, problem code, template),
 * one per form a report takes (template syntax: libimage/check/say.h).
 * Included by say.h (the enum) and problems.c (the rows). */

/* super blocks, status, journal, backups (check/super.c) */
CHK_M_ENUM(FORMAT40_FIELD, R4_CHK_FORMAT40, "{what}")
CHK_M_ENUM(MASTER_FIELD, R4_CHK_MASTER, "{what}")
CHK_M_ENUM(TREE_HEIGHT, R4_CHK_FORMAT40,
	   "tree height {have} is more than the kernel handles ({want})")
CHK_M_ENUM(FILE_COUNT_OIDS, R4_CHK_FORMAT40,
	   "file count {count} is more than object ids were ever handed out "
	   "(next oid {next:#x})")
CHK_M_ENUM(BACKUP_BIT31, R4_CHK_BACKUP,
	   "version word bit 31 is set: the backup copies must be rewritten")
CHK_M_ENUM(STATUS_NO_MAGIC, R4_CHK_STATUS,
	   "status block holds garbage: no status magic, and not the zeros of "
	   "a volume made without one")
CHK_M_ENUM(STATUS_BITS, R4_CHK_STATUS,
	   "status block holds garbage: status word {status} has bits no "
	   "writer sets (known: {known})")
CHK_M_ENUM(STATUS_MARKED, R4_CHK_STATUS,
	   "status block marks the volume{corrupted? corrupted|}"
	   "{damaged? damaged|}{destroyed? destroyed|}"
	   "{ioerror? with I/O errors|} (status {status}){text?: {text}|}")
CHK_M_ENUM(JOURNAL_UNREAD, R4_CHK_JOURNAL,
	   "journal holds an unreplayed transaction (last committed tx head "
	   "at block {at}, last flushed {n}) that could not be read through; "
	   "the blocks below are checked as they are before replay; run "
	   "r4fsck without --check to replay it")
CHK_M_ENUM(JOURNAL_PENDING, R4_CHK_JOURNAL_PENDING,
	   "{n} committed transaction{n~|s} not replayed (the blocks below "
	   "are checked as the replay will leave them): the Reiser4 kernel's "
	   "own replay loses this transaction's root pointer: run `r4fsck -p` "
	   "before mounting")
CHK_M_ENUM(JOURNAL_NEXT_OID, R4_CHK_JOURNAL,
	   "journal footer next oid {next:#x} is below 0x10000")
CHK_M_ENUM(BACKUP_DIFF, R4_CHK_BACKUP,
	   "backup copy {n} differs from the super blocks ({what})")

/* found before the open and told by the repair (repair/super.c) */
CHK_M_ENUM(SB_FORMAT40_PROBE, R4_CHK_FORMAT40,
	   "format40 super block (block {at}) is {damaged?damaged|different "
	   "from the backup copy}; the backup copy in block {from} is intact "
	   "(r4fsck -y restores it){cut? (block count differed)|}"
	   "{text?; {text}|}")
CHK_M_ENUM(SB_FORMAT40_RESTORED, R4_CHK_FORMAT40,
	   "format40 super block (block {at}) restored from the backup copy "
	   "in block {from}{cut? (block count differed)|}"
	   "{text?; {text}|}")
CHK_M_ENUM(SB_ROOT_LEVEL, R4_CHK_FORMAT40,
	   "the tree height taken from the root node (block {root}, level "
	   "{level})")
CHK_M_ENUM(SB_ROOT_SCAN, R4_CHK_FORMAT40,
	   "the root found by a scan of the used blocks: block {root}, "
	   "level {level}{count? (of several nodes at that level: the others "
	   "are adopted as unreachable nodes)|}")
CHK_M_ENUM(SB_MASTER_PROBE, R4_CHK_MASTER,
	   "master super block (block {at}) is {damaged?damaged|different "
	   "from the backup copy}; the backup copy in block {from} is intact "
	   "(r4fsck -y restores it)")
CHK_M_ENUM(SB_MASTER_RESTORED, R4_CHK_MASTER,
	   "master super block (block {at}) restored from the backup copy in "
	   "block {from}")
CHK_M_ENUM(TRUNCATED, R4_CHK_TRUNCATED,
	   "image holds {have} blocks, the format40 super block (block {at}) "
	   "counts {want}: {n} blocks missing (the image was truncated)")
CHK_M_ENUM(TRUNCATED_EXTENDED, R4_CHK_TRUNCATED,
	   "image extended with zeros from {have} to {want} blocks (what the "
	   "{n} missing blocks held is lost)")
CHK_M_ENUM(JOURNAL_STUCK, R4_CHK_JOURNAL,
	   "journal header (block {at}) names a transaction that cannot be "
	   "replayed (tx head {from}, last flushed {to})")
CHK_M_ENUM(JOURNAL_DROPPED, R4_CHK_JOURNAL,
	   "journal header (block {at}) named a transaction that cannot be "
	   "replayed (tx head {from}): dropped, the header now names the last "
	   "flushed one ({to})")

/* the tree walk (check/tree.c) */
CHK_M_ENUM(NODE_OUTSIDE, R4_CHK_NODE_BLOCK,
	   "node pointer to block {at} (from {via}) is outside the usable "
	   "blocks {first}..{last}")
CHK_M_ENUM(NODE_ON_EXTENT, R4_CHK_BLOCK_SHARED,
	   "block is a level-{level} node (from {via}) and also file data of "
	   "an extent found before it: the node keeps it")
CHK_M_ENUM(NODE_TWICE, R4_CHK_NODE_TWICE,
	   "block is referenced again as a level-{level} node (from {via}) "
	   "but is already {owner}; not descended")
CHK_M_ENUM(NODE_LEVEL, R4_CHK_NODE_LEVEL,
	   "node level is {have}, expected {want}; not descended")
CHK_M_ENUM(NODE_BAD, R4_CHK_NODE,
	   "{what} (level-{level} node, from {via}); not descended")
CHK_M_ENUM(NODE_MKFS_ID, R4_CHK_NODE_MKFS_ID,
	   "node mkfs id {have:#x} differs from the super block's {want:#x}")
CHK_M_ENUM(NODE_PLUGIN, R4_CHK_NODE,
	   "node plugin {have} differs from the super block's {want}")
CHK_M_ENUM(NODE_EMPTY, R4_CHK_NODE_EMPTY, "the node is empty")
CHK_M_ENUM(NODE_ITEM_OUTSIDE, R4_CHK_NODE,
	   "item body lies outside the node")
CHK_M_ENUM(DKEY_POINTER, R4_CHK_DKEY,
	   "first key differs from the key of the pointer to this node in "
	   "block {parent} item {pitem} [{tkey}]")
CHK_M_ENUM(DKEY_LEFT, R4_CHK_DKEY,
	   "key is below the left delimiting key [{tkey}]")
CHK_M_ENUM(DKEY_LAST, R4_CHK_DKEY,
	   "item's last key [{lkey}] is not below the "
	   "{rdk?right delimiting key|next item's key} [{tkey}]")
CHK_M_ENUM(TAIL_UNMERGED, R4_CHK_TAIL_UNMERGED,
	   "file {path?{path} |}(object {oid}), tree node {at}: tail40 items "
	   "{prev} and {pos} (offsets {prevoff} and {off}) continue each other "
	   "side by side, unmerged: the Reiser4 kernel reads the file short "
	   "(its read ends at offset {off})")

/* items (check/items.c, check/extent.c) */
CHK_M_ENUM(ITEM_KEY_TYPE, R4_CHK_ITEM,
	   "{kind} item has a key of type {n}")
CHK_M_ENUM(SD_DECODE, R4_CHK_ITEM,
	   "stat data cannot be decoded: {what}")
CHK_M_ENUM(SD_FIELD, R4_CHK_SD, "{what}")
CHK_M_ENUM(SD_KEY_OFFSET, R4_CHK_ITEM,
	   "stat data key has a nonzero offset")
CHK_M_ENUM(ENTRY_NAME, R4_CHK_ENTRY,
	   "entry '{name}{cut?...|}' of directory {dir}: the name {what}")
CHK_M_ENUM(CDE_UNIT, R4_CHK_ITEM,
	   "directory item, unit {unit}: {what}; its entries are ignored")
CHK_M_ENUM(CDE_BAD, R4_CHK_ITEM,
	   "directory item: {what}; its entries are ignored")
CHK_M_ENUM(CDE_KEY, R4_CHK_ITEM,
	   "directory item: its key differs from its first entry's [{tkey}]; "
	   "its entries are ignored")
CHK_M_ENUM(TAIL_PAST_MAX, R4_CHK_ITEM,
	   "tail item goes past the largest file offset")
CHK_M_ENUM(CTAIL_BAD, R4_CHK_ITEM,
	   "ctail item is malformed (shift {n}, {len} bytes)")
CHK_M_ENUM(CTAIL_PAST_MAX, R4_CHK_ITEM,
	   "ctail item goes past the largest file offset")
CHK_M_ENUM(NODEPTR_SIZE, R4_CHK_ITEM,
	   "node pointer item is {len} bytes, not 8")
CHK_M_ENUM(SAFELINK_BAD, R4_CHK_ITEM,
	   "safe link item is malformed ({len} bytes)")
CHK_M_ENUM(ITEM_PLUGIN, R4_CHK_ITEM,
	   "item plugin {plugin} ({pname}) is not written by Reiser4")
CHK_M_ENUM(EXTENT_ZERO, R4_CHK_EXTENT,
	   "extent unit {unit}: zero width (start {start}, width {width})")
CHK_M_ENUM(EXTENT_UNALLOCATED, R4_CHK_EXTENT,
	   "extent unit {unit}: unallocated extent (start {start}, width "
	   "{width})")
CHK_M_ENUM(EXTENT_PAST_END, R4_CHK_EXTENT,
	   "extent unit {unit}: blocks go past the end of the volume (start "
	   "{start}, width {width})")
CHK_M_ENUM(EXTENT_RESERVED, R4_CHK_EXTENT,
	   "extent unit {unit}: blocks start in the reserved area (start "
	   "{start}, width {width})")
CHK_M_ENUM(EXTENT_PAST_MAX, R4_CHK_EXTENT,
	   "extent unit {unit}: extent goes past the largest file offset "
	   "(start {start}, width {width})")
CHK_M_ENUM(EXTENT_SHARED, R4_CHK_BLOCK_SHARED,
	   "extent unit {unit}: block {at} is already {owner} (start {start}, "
	   "width {width})")
CHK_M_ENUM(EXTENT_SIZE, R4_CHK_ITEM,
	   "extent item is {len} bytes, not a nonzero multiple of 16")
CHK_M_ENUM(EXTENT_ALIGN, R4_CHK_ITEM,
	   "extent item starts at a file offset that is not a multiple of "
	   "the block size")
CHK_M_ENUM(EXTENT_UNITS, R4_CHK_EXTENT, "{what} (unit {unit})")

/* space (check/space.c) */
CHK_M_ENUM(LEAK_ONE, R4_CHK_SPACE_LEAK,
	   "block {first} is marked used in the bitmap, but nothing uses it")
CHK_M_ENUM(LEAK_RUN, R4_CHK_SPACE_LEAK,
	   "blocks {first}..{last} ({blocks} blocks) are marked used in the "
	   "bitmap, but nothing uses them")
CHK_M_ENUM(LEAK_MORE, R4_CHK_SPACE_LEAK,
	   "... and {n} more such ranges ({count} ranges, {blocks} blocks in "
	   "all)")
CHK_M_ENUM(FREE_ONE, R4_CHK_SPACE_FREE,
	   "block {first} is in use, but marked free in the bitmap")
CHK_M_ENUM(FREE_RUN, R4_CHK_SPACE_FREE,
	   "blocks {first}..{last} ({blocks} blocks) are in use, but marked "
	   "free in the bitmap")
CHK_M_ENUM(FREE_MORE, R4_CHK_SPACE_FREE,
	   "... and {n} more such ranges ({count} ranges, {blocks} blocks in "
	   "all)")
CHK_M_ENUM(BITMAP_CSUM, R4_CHK_BITMAP_CSUM,
	   "bitmap block of blocks {first}..{last}: {what}")
CHK_M_ENUM(BITMAP_TAIL, R4_CHK_BITMAP_TAIL,
	   "bits past the end of the volume are not all set (bit {bit}, "
	   "block {at}, is clear)")
CHK_M_ENUM(FREE_COUNT, R4_CHK_FREE_COUNT,
	   "free block count is {have}, the bitmap has {want} free blocks")
CHK_M_ENUM(FREE_COUNT_FOOTER, R4_CHK_FREE_COUNT,
	   "journal footer free block count is {have}, the bitmap has {want} "
	   "free blocks")

/* objects (check/semantic.c, check/stream_phases.c) */
CHK_M_ENUM(ENTRY_MISSING, R4_CHK_ENTRY,
	   "entry '{name}' of directory {dir} points to missing object "
	   "[{tkey}]")
CHK_M_ENUM(ENTRY_NO_DIR, R4_CHK_ENTRY,
	   "entry '{name}' of directory {dir} belongs to a directory without "
	   "stat data; it points to [{tkey}]")
CHK_M_ENUM(ENTRY_NOT_DIR, R4_CHK_ENTRY,
	   "entry '{name}' of directory {dir} belongs to an object that is "
	   "not a directory; it points to [{tkey}]")
CHK_M_ENUM(DOT_ELSEWHERE, R4_CHK_DOT,
	   "entry '{name}' of directory {dir} does not point to its own "
	   "directory but to [{tkey}]")
CHK_M_ENUM(SECOND_NAME, R4_CHK_DIR_LINK,
	   "entry '{name}' of directory {dir} is a second name of the "
	   "directory{root? (the root, which no entry names: a loop)|"
	   "{above? (one above it: a loop)|}} [{tkey}]")
CHK_M_ENUM(OBJECT_DUP, R4_CHK_OBJECT_DUP,
	   "{kind} {oid}: a second stat data with this object id")
CHK_M_ENUM(OID_PAST_NEXT, R4_CHK_OID,
	   "{kind} {oid}: object id or locality {id} is not below the next "
	   "object id {next}")
CHK_M_ENUM(SD_NO_LW, R4_CHK_SD,
	   "{kind} {oid}: stat data has no light-weight extension (mode, "
	   "nlink, size)")
CHK_M_ENUM(SD_NO_SYMLINK, R4_CHK_SD,
	   "{kind} {oid}: symlink stat data has no symlink extension")
CHK_M_ENUM(SD_STRAY_SYMLINK, R4_CHK_SD,
	   "{kind} {oid}: mode {mode:o6} is not a symlink's, but a symlink "
	   "target is stored")
CHK_M_ENUM(DOT_COUNT, R4_CHK_DOT,
	   "{kind} {oid}: has {n} \".\" entries, not 1")
CHK_M_ENUM(DOTDOT_COUNT, R4_CHK_DOT,
	   "{kind} {oid}: has {n} \"..\" entries, not 1")
CHK_M_ENUM(DOTDOT_WRONG, R4_CHK_DOT,
	   "{kind} {oid}: \"..\" points to {id}, but the directory is named "
	   "in {dir}")
CHK_M_ENUM(DIR_SIZE, R4_CHK_DIR_SIZE,
	   "{kind} {oid}: size is {size}, but it has {n} entries")
CHK_M_ENUM(UNREACHABLE, R4_CHK_UNREACHABLE,
	   "{kind} {oid}: is not reachable from the root directory ({n} "
	   "entries point to it)")
CHK_M_ENUM(NLINK, R4_CHK_NLINK,
	   "{kind} {oid}: nlink is {have}, but {n} entr{n~y|ies} name "
	   "it{root? (+1 for the root)|}")
CHK_M_ENUM(BODY_NO_SD, R4_CHK_BODY,
	   "file body (up to offset {end}) of an object without stat data")
CHK_M_ENUM(BODY_NOT_REG, R4_CHK_BODY,
	   "{kind} {oid}: has body items (from block {at} item {pos} on) but "
	   "is not a regular file")
CHK_M_ENUM(FILE_GAP, R4_CHK_FILE_GAP,
	   "{kind} {oid}: no body item holds bytes {from}..{to} (a break in "
	   "the body)")
CHK_M_ENUM(SIZE_PAST_BODY, R4_CHK_FILE_SIZE,
	   "{kind} {oid}: size {size} is past the end of its body items "
	   "({end}): the kernel cannot read the bytes between")
CHK_M_ENUM(BODY_PAST_SIZE, R4_CHK_FILE_SIZE,
	   "{kind} {oid}: body reaches offset {end} (items from block {at} "
	   "item {pos} on), past the size {size}")
CHK_M_ENUM(ROOT_NO_SD, R4_CHK_SD,
	   "the root directory (object 2a) has no stat data")
CHK_M_ENUM(ROOT_NOT_DIR, R4_CHK_SD,
	   "{kind} {oid}: the root is not a directory")
CHK_M_ENUM(FILE_COUNT, R4_CHK_FILE_COUNT,
	   "file count is {have}, but the tree holds {n} stat data")
CHK_M_ENUM(FILE_COUNT_FOOTER, R4_CHK_FILE_COUNT,
	   "journal footer file count is {have}, but the tree holds {n} stat "
	   "data")

/* compressed files (check/cluster.c) */
CHK_M_ENUM(CC_HOLE0, R4_CHK_CC_HOLE0,
	   "compressed file {path?{path} (object {oid})|{oid}}: cluster 0 is "
	   "a hole (no ctail40 item) while cluster {cluster} has items (tree "
	   "node {at}): the Reiser4 kernel panics reading this file")
CHK_M_ENUM(CC_UNMERGED, R4_CHK_CC_UNMERGED,
	   "compressed file {path?{path} (object {oid})|{oid}}, cluster "
	   "{cluster}, tree node {at}: ctail40 items {prev} and {pos} (offsets "
	   "{prevoff} and {off}) hold one disk cluster side by side, "
	   "unmerged{count~| ({count} such pairs)}: the Reiser4 kernel keeps "
	   "them as one item, and its flush puts keys out of order rewriting "
	   "them")
CHK_M_ENUM(CC_CROSS, R4_CHK_CC_CROSS,
	   "compressed file {path?{path} (object {oid})|{oid}}, cluster "
	   "{cluster}, tree node {at}, item {pos}: ctail40 item of {len} bytes "
	   "at offset {off} crosses the cluster end{count~| ({count} such "
	   "items)}: the Reiser4 kernel spins reading it")
CHK_M_ENUM(CC_MIXED, R4_CHK_BODY,
	   "object {oid} mixes ctail40 items with tail or extent items")
CHK_M_ENUM(CC_NO_MEMORY, R4_CHK_BODY, "compressed file: {what}")
CHK_M_ENUM(CC_NOT_CCREG, R4_CHK_BODY,
	   "object {oid} has ctail40 items but its plugin is {pname}")
CHK_M_ENUM(CC_CLUSTER, R4_CHK_CLUSTER, "compressed file: {what}")
CHK_M_ENUM(CC_CONV, R4_CHK_CC_CONV,
	   "compressed file {path?{path} (object {oid})|{oid}}: {size} bytes, "
	   "longer than its {len}-byte first cluster, in compression mode conv "
	   "({own?its own plugin set|not in its plugin set: the root's or the "
	   "default}): the Reiser4 kernel never keeps such a file (it stores "
	   "lattd when conv ends) and a write into it hits a BUG")
