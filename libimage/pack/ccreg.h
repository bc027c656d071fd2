/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: compressed (ccreg40) files in the one-pass packer, as the
 * kernel would store them (doc/compress.md §3-§5): the compression mode
 * and conv rules applied, disk clusters cut into ctail40 items in key
 * order.
 *
 * Streamed data (archives) is read when taken; with several threads a
 * file of up to 4 MiB is held in a window of at most 32 MiB of file
 * data and compressed by worker threads while the packer reads on; the
 * files leave the window in the order they came. Larger files, and
 * every file with one thread, are compressed when taken (a file's
 * clusters on the encoder's thread pool). The disk clusters wait in the
 * spool. Deferred data (directory sources) is read and compressed ahead
 * by worker threads, one file per job, in the order the leaves take the
 * files, while the packer packs the leaves; the packer waits only for
 * conv's decisions and takes the disk clusters from memory. Files over
 * 4 MiB, and files past 64 MiB held ahead, are only decided ahead and
 * compressed by the packer on the encoder's pool when it gets there.
 * Compressing a cluster gives the same bytes on any thread, so the
 * image never depends on the thread count or timing. */
#ifndef R4_LIBIMAGE_PACK_CCREG_H
#define R4_LIBIMAGE_PACK_CCREG_H

#include <stdint.h>
#include "libimage/pack/packer.h"

/* Set up when the profile says create=ccreg40 (b->ccreg stays NULL
 * otherwise). */
int pack_ccreg_init(struct r4_pack *b, struct r4_error *err);
void pack_ccreg_fini(struct r4_pack *b);
/* The storage of a new regular file: CCREG_YES under create=ccreg40. */
int pack_ccreg_initial(const struct r4_pack *b);
/* Streamed data: compress now into the spool (or, when conv finds the
 * first cluster incompressible, hand the data to the ordinary path). */
int pack_ccreg_take(struct r4_pack *b, struct bobj *o, r4_data_fn fn,
		 void *ctx, const char *path, struct r4_error *err);
/* Streamed data read ahead (pack_ccreg_take, several threads): place every
 * file still in the window, in order. Before the data is used, and
 * before anything else takes data. */
int pack_ccreg_stream_drain(struct r4_pack *b, struct r4_error *err);
/* Deferred data under conv: read the first cluster and decide before
 * the stat data is written. */
int pack_ccreg_decide(struct r4_pack *b, struct bobj *o, const char *path,
		   struct r4_error *err);
/* Deferred data from a parallel source (r4_data_source.parallel): start
 * worker threads that read and compress the files ahead, in the order
 * the leaves take them (after the object ids are given); end stops them
 * (pack_ccreg_fini does too). Nothing is started for 1 thread. */
int pack_ccreg_ahead_begin(struct r4_pack *b, struct r4_error *err);
void pack_ccreg_ahead_end(struct r4_pack *b);
/* The ctail40 items of a compressed file. */
int pack_ccreg_emit(struct r4_pack *b, struct bobj *o, const char *path,
		 struct r4_error *err);
/* The stat data's "bytes" (doc/compress.md §2.3). */
uint64_t pack_ccreg_bytes(const struct r4_pack *b, const struct bobj *o);
/* doc/compress.md §4.4: 1 when the compressed file o has lattd stored
 * (conv left it compressed past its first cluster). */
int pack_ccreg_lattd(const struct r4_pack *b, const struct bobj *o);
/* The cluster size in bytes. */
uint32_t pack_ccreg_cluster(const struct r4_pack *b);

#endif
