#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# make check: the lsdel scanner's fuzz target over every seed and 200
# mutations of each.
set -e
exec "${top_builddir:-.}/fuzz/fuzz_lsdel_standalone" -n "${R4_FUZZ_MUTATIONS:-200}" \
	"${top_srcdir:-.}"/fuzz/corpus/*
