#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# make demo: make a volume with r4mkfs, have the oracle check it, and
# print its super block.
set -e
b=${1:-.}
img=$b/demo.img
rm -f "$img"
"$b/cmd/r4mkfs" -q -L r4demo "$img" 64M
echo "== made $img (64 MiB) with r4mkfs"
if command -v fsck.reiser4 >/dev/null 2>&1; then
	echo "== fsck.reiser4 --check"
	fsck.reiser4 --check -f -y "$img" 2>&1 | tail -n 1
	echo "== debugfs.reiser4 -s"
	debugfs.reiser4 -f -s "$img" 2>/dev/null | sed -n '/^Master/,$p'
fi
