#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# make check: the own tar header reader's fuzz target (differential,
# against libarchive) over crafted tar files and mutations of each.
set -e
command -v python3 >/dev/null 2>&1 || { echo "python3 not installed: skipped"; exit 77; }
d=$(mktemp -d "${TMPDIR:-/tmp}/r4fuzztar.XXXXXX")
trap 'rm -rf "$d"' EXIT
python3 "${top_srcdir:-.}/tests/helpers/tarcraft.py" "$d"
"${top_builddir:-.}/fuzz/fuzz_tar_standalone" -n "${R4_FUZZ_MUTATIONS:-200}" \
	"$d"/gnu-basic.tar "$d"/ustar-prefix.tar "$d"/pax-basic.tar \
	"$d"/pax-window.tar "$d"/pax-extra.tar "$d"/odd-all.tar \
	"${top_srcdir:-.}/tests/data/sample.tar"
