#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# make check: the own tar header reader's fuzz target (differential,
# against libarchive) over crafted tar files and mutations of each. TAP.
command -v python3 >/dev/null 2>&1 || { echo "1..0 # SKIP python3 not installed"; exit 0; }
d=$(mktemp -d "${TMPDIR:-/tmp}/r4fuzztar.XXXXXX") || exit 1
trap 'rm -rf "$d"' EXIT
echo "1..1"
rc=0
python3 "${top_srcdir:-.}/tests/helpers/tarcraft.py" "$d" || rc=1
[ $rc = 1 ] || "${top_builddir:-.}/fuzz/fuzz_tar_standalone" -n "${R4_FUZZ_MUTATIONS:-200}" \
	"$d"/gnu-basic.tar "$d"/ustar-prefix.tar "$d"/pax-basic.tar \
	"$d"/pax-window.tar "$d"/pax-extra.tar "$d"/odd-all.tar \
	"$d"/odd-rv-symK.tar "$d"/odd-rv-pax-then-hard.tar \
	"$d"/odd-rv-emptyhard-size.tar \
	"${top_srcdir:-.}/tests/data/sample.tar" >"$d/out" 2>&1 || rc=1
sed 's/^/# /' "$d/out" 2>/dev/null
if [ $rc = 0 ]; then
	echo "ok 1 - fuzz_tar: the own tar header reader agrees with libarchive"
else
	echo "not ok 1 - fuzz_tar: a difference or a crash (above)"
fi
