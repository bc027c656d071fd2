#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# r4resize against its yardsticks, in one run, N times each (default 3),
# medians and ratios (issue 28's targets in brackets):
#   grow   a 64 MiB r4pack image to GROW (default 1T) / r4mkfs of a
#          GROW volume                                   [<= 2x]
#   shrink a 1 GiB volume, half its files removed, to its minimum
#          (r4resize -M) / r4repacker on a copy of the same volume
#                                                        [<= 1.5x]
#   bench/resize.sh [BUILD_DIR] [RUNS]
set -eu
build=$(cd "${1:-.}" && pwd)
runs=${2:-3}
grow=${R4_BENCH_GROW:-1T}
src=$(cd "$(dirname "$0")/.." && pwd)
export PATH=$build/cmd:$PATH
for t in r4resize r4mkfs r4pack r4repacker r4debugfs; do
	command -v $t >/dev/null || { echo "$t not built in $build/cmd"; exit 1; }
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/r4bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT
export SOURCE_DATE_EPOCH=1700000000

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
timed() {	# timed OUTFILE CMD...: append the seconds CMD took
	local out=$1 t0
	shift
	t0=$(now)
	"$@" >/dev/null
	echo "$(now) - $t0" | bc -l >>"$out"
}

# The sources: 200 small files for the 64 MiB image; for the 1 GiB one
# 2,000 files of 0..400 KiB in 20 directories (about 400 MiB), so that
# removing every second directory leaves holes all over the volume.
mkdir -p "$dir/small"
for i in $(seq 1 200); do head -c $((i * 97)) /dev/urandom >"$dir/small/f$i"; done
for d in $(seq 0 19); do
	mkdir -p "$dir/big/d$d"
	for i in $(seq 1 100); do
		head -c $(( (d * 100 + i) * 2113 % 409600 )) /dev/urandom >"$dir/big/d$d/f$i"
	done
done
r4pack create -q --size 64M "$dir/small" "$dir/small.img"
r4pack create -q --size 1G "$dir/big" "$dir/half.img"
rm_cmds=()
for d in $(seq 0 2 19); do rm_cmds+=(-R "rm -r /d$d"); done
r4debugfs -w "${rm_cmds[@]}" "$dir/half.img"

: >"$dir/grow"; : >"$dir/mkfs"; : >"$dir/shrink"; : >"$dir/repack"
for i in $(seq "$runs"); do
	rm -f "$dir/g.img" "$dir/m.img"
	cp "$dir/small.img" "$dir/g.img"
	timed "$dir/grow" r4resize -q "$dir/g.img" "$grow"
	rm -f "$dir/g.img"
	truncate -s "$grow" "$dir/m.img"
	timed "$dir/mkfs" r4mkfs -q -f "$dir/m.img"
	rm -f "$dir/m.img"
	cp --sparse=always "$dir/half.img" "$dir/s.img"
	timed "$dir/shrink" r4resize -q -M "$dir/s.img"
	cp --sparse=always "$dir/half.img" "$dir/r.img"
	timed "$dir/repack" r4repacker -q "$dir/r.img"
	rm -f "$dir/s.img" "$dir/r.img"
done
g=$(median <"$dir/grow"); m=$(median <"$dir/mkfs")
s=$(median <"$dir/shrink"); r=$(median <"$dir/repack")
printf 'grow 64M -> %s: %.3f s, r4mkfs %s: %.3f s, ratio %.2f (target <= 2)\n' \
	"$grow" "$g" "$grow" "$m" "$(echo "$g / $m" | bc -l)"
printf 'shrink 1G half full to its minimum: %.3f s, r4repacker: %.3f s, ratio %.2f (target <= 1.5)\n' \
	"$s" "$r" "$(echo "$s / $r" | bc -l)"
