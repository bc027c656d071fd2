/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: fibrations (doc/format.md §2.7).
 *
 * A fibration plugin picks a 7-bit "fibre" for a name; the entry key
 * builder stores it in bits 57..63 of the entry's ordering word (large
 * keys) or objectid word (short keys), so names of one fibre (e.g. all
 * "*.o" files) sort together inside a directory. Ids are those of enum
 * fmt_fibre_id in format/plugin.h: lexic 0, dot_o 1, ext_1 2, ext_3 3.
 * The values here are already reduced to 7 bits (what survives the
 * shift to bit 57); kernel and reiser4progs agree on them. */
#ifndef R4_FORMAT_FIBRE_H
#define R4_FORMAT_FIBRE_H

#include <stddef.h>
#include <stdint.h>

/* Bit position of the fibre in the ordering (objectid) word. */
#define FMT_FIBRE_SHIFT 57
#define FMT_FIBRE_MASK 0x7fu

/* Fibre (0..127) of name[0..len) under plugin fibre_id, or R4_EUNSUPP
 * for an unknown id. */
int fmt_fibre(unsigned fibre_id, const char *name, size_t len);

/* The single fibrations. */
unsigned fmt_fibre_lexic(const char *name, size_t len);
/* 1 for a name longer than 2 bytes ending in ".o", else 0. */
unsigned fmt_fibre_dot_o(const char *name, size_t len);
/* The last byte of a name longer than 2 bytes whose next-to-last byte
 * is '.', else 0. */
unsigned fmt_fibre_ext_1(const char *name, size_t len);
/* The sum of the last 3 bytes of a name longer than 4 bytes whose
 * fourth-from-last byte is '.', else 0. */
unsigned fmt_fibre_ext_3(const char *name, size_t len);

#endif
