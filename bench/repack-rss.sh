#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Peak memory of r4repacker against the number of files: for each FILES
# count, an image aged by tests/age.sh (ROUNDS rounds, default 20; the
# volume sized to the content), then `r4repacker -n` (the report: the
# figures of measurefs.reiser4 and the worst files) and one full
# `r4repacker -q`, each under /usr/bin/time -v: their peak resident
# sets, the blocks moved and the elements (nodes and extent units) of the
# tree. Memory bounded by the tree's width shows as a flat peak while the
# files grow, once the block cache (at most 64 MiB) is full.
#   bench/repack-rss.sh [BUILD_DIR] [ROUNDS] [FILES...]
#   (default FILES: 6250 12500 25000 50000 100000; each prime to 7)
set -eu
build=$(cd "${1:-.}" && pwd)
rounds=${2:-20}
shift $(( $# > 2 ? 2 : $# ))
[ $# -gt 0 ] || set -- 6250 12500 25000 50000 100000
src=$(cd "$(dirname "$0")/.." && pwd)
[ -x /usr/bin/time ] || { echo "/usr/bin/time not installed"; exit 1; }
export PATH=$build/cmd:$PATH
dir=$(mktemp -d "${TMPDIR:-/tmp}/r4bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT
field() { grep -o "\"$1\":[0-9.]*" "$2" | head -n 1 | cut -d: -f2; }

printf '%8s %9s %9s %9s %9s\n' files elements moved "-n KiB" "run KiB"
for n in "$@"; do
	# about 7.5 KiB a file on average (tests/age.sh sizes), plus room
	AGE_SIZE=$(( n * 12 / 1024 + 96 ))M \
		bash "$src/tests/age.sh" "$dir/a.img" "$n" "$rounds"
	/usr/bin/time -v -o "$dir/time.txt" \
		r4repacker -n --json "$dir/a.img" >"$dir/plan.json" ||
		{ echo "r4repacker -n failed on $n files"; exit 1; }
	nkib=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$dir/time.txt")
	/usr/bin/time -v -o "$dir/time.txt" r4repacker -q "$dir/a.img" ||
		{ echo "r4repacker failed on $n files"; exit 1; }
	r4fsck --check -q "$dir/a.img" >/dev/null ||
		{ echo "the repacked image of $n files is not clean"; exit 1; }
	kib=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$dir/time.txt")
	el=$(field elements "$dir/plan.json")
	printf '%8s %9s %9s %9s %9s\n' "$n" "$el" \
		"$(field blocks_to_move "$dir/plan.json")" "$nkib" "$kib"
	rm -f "$dir/a.img"
done
