#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# make demo: the main job on the bundled sample. Build a Reiser4 image
# from tests/data/sample.tar with r4pack, check it with our checker and
# with the oracle, list it, and extract it back to a tarball.
set -e
b=${1:-.}
src=$(dirname "$0")/data/sample.tar
img=$b/demo.img
rm -f "$img" "$b/demo-extract.tar"
echo "== r4pack create $src demo.img"
"$b/cmd/r4pack" create -q -L r4demo "$src" "$img"
ls -l "$img"
echo "== r4fsck --check demo.img"
"$b/cmd/r4fsck" --check "$img"
if command -v fsck.reiser4 >/dev/null 2>&1; then
	echo "== fsck.reiser4 --check (reiser4progs, the oracle)"
	fsck.reiser4 --check -f -y "$img" 2>&1 | grep -E 'consistent|corrupt' || true
fi
echo "== r4debugfs -R 'ls -l /etc' demo.img"
"$b/cmd/r4debugfs" -R 'ls -l /etc' "$img"
echo "== r4debugfs -R 'cat /usr/share/doc/r4kit/README' demo.img"
"$b/cmd/r4debugfs" -R 'cat /usr/share/doc/r4kit/README' "$img"
echo "== r4pack extract demo.img demo-extract.tar"
"$b/cmd/r4pack" extract "$img" "$b/demo-extract.tar"
tar -tvf "$b/demo-extract.tar"
