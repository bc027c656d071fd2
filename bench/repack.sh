#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The cost of a full repack: r4repacker on an image aged by tests/age.sh
# against r4pack create of the same content (a directory, rdumped from
# the aged image) into a volume of the same size; medians of RUNS runs
# (default 5) in the same run, and the ratios: of elapsed time and of
# CPU time (user + sys, which a loaded machine does not inflate). Also
# the blocks moved per block of the tree and the transactions.
# Then the same for a nearly full volume: the aged image's free space
# filled by r4pack add with 20-200 KB files of noise, FREE blocks left
# (default 600), and the ratio of blocks moved to blocks out of place
# (target: 1.5; time target: 3x create).
# With R4_BENCH_OLD=DIR (a built tree), the old build's r4repacker runs
# on the same images in the same rounds (tests/age.sh and the fill give
# the same bytes on every run), and its figures are printed too.
#   bench/repack.sh [BUILD_DIR] [RUNS] [FILES] [ROUNDS] [FREE]
set -eu
export SOURCE_DATE_EPOCH=1700000000
build=$(cd "${1:-.}" && pwd)
old=${R4_BENCH_OLD:+$(cd "$R4_BENCH_OLD" && pwd)}
runs=${2:-5}
nfiles=${3:-1500}
rounds=${4:-20}
keep=${5:-600}
src=$(cd "$(dirname "$0")/.." && pwd)
command -v bc >/dev/null || { echo "bc not installed"; exit 1; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time not installed"; exit 1; }
export PATH=$build/cmd:$PATH
dir=$(mktemp -d "${TMPDIR:-/tmp}/r4bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT
now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
# elapsed seconds to stdout, CPU seconds (user + sys) appended to $cpu
timeit() {
	local t0 t1
	t0=$(now)
	/usr/bin/time -f '%U + %S' -o "$dir/cpu1" "$@" >/dev/null 2>&1 ||
		{ echo "failed: $*" >&2; exit 1; }
	t1=$(now)
	echo "$(cat "$dir/cpu1")" | bc -l >>"$cpu"
	echo "$t1 - $t0" | bc -l
}

echo "aging an image: $nfiles files, $rounds rounds ..."
bash "$src/tests/age.sh" "$dir/aged.img" "$nfiles" "$rounds"
mkdir "$dir/tree"
r4debugfs -R "rdump / $dir/tree" "$dir/aged.img" >/dev/null
size=$(stat -c %s "$dir/aged.img")

# rounds IMG WHAT: repack a copy of IMG and create its tree, RUNS times,
# in pairs; then one more repack with --json (r.json)
rounds() {
	for i in $(seq "$runs"); do
		cp --sparse=always "$1" "$dir/r.img"
		sync
		cpu=$dir/repack.c timeit r4repacker -q "$dir/r.img" >>"$dir/repack.t"
		if [ -n "$old" ]; then
			cp --sparse=always "$1" "$dir/r.img"
			sync
			cpu=$dir/old.c timeit "$old/cmd/r4repacker" -q "$dir/r.img" \
				>>"$dir/old.t"
		fi
		rm -f "$dir/c.img"
		sync
		cpu=$dir/create.c timeit r4pack create -q --size "$size" "$dir/tree" \
			"$dir/c.img" >>"$dir/create.t"
	done
	r4fsck --check -q "$dir/r.img" >/dev/null || { echo "the repacked $2 is not clean"; exit 1; }
	cp --sparse=always "$1" "$dir/r.img"
	r4repacker --json "$dir/r.img" >"$dir/r.json"
	if [ -n "$old" ]; then
		cp --sparse=always "$1" "$dir/r.img"
		"$old/cmd/r4repacker" --json "$dir/r.img" >"$dir/old.json"
	fi
}

# the old build's figures, when there is one: "old: ..." after the new
old_line() {
	local t c m o
	[ -n "$old" ] || return 0
	t=$(median <"$dir/old.t"); c=$(median <"$dir/old.c")
	m=$(grep -o '"blocks_moved":[0-9]*' "$dir/old.json" | cut -d: -f2)
	o=$(grep -o '"blocks_to_move":[0-9]*' "$dir/old.json" | cut -d: -f2)
	printf 'old build: r4repacker %.3f s, CPU %.3f s (repack/create %.2f, CPU %.2f); moved %s blocks (%s out of the way) in %s transactions: moved/out of place = %.2f\n' \
		"$t" "$c" "$(echo "$t / $tc" | bc -l)" "$(echo "$c / $cc" | bc -l)" \
		"$m" "$(grep -o '"blocks_evicted":[0-9]*' "$dir/old.json" | cut -d: -f2)" \
		"$(grep -o '"transactions":[0-9]*' "$dir/old.json" | cut -d: -f2)" \
		"$(echo "$m / $o" | bc -l)"
}

: >"$dir/repack.t"; : >"$dir/create.t"; : >"$dir/repack.c"; : >"$dir/create.c"
: >"$dir/old.t"; : >"$dir/old.c"
rounds "$dir/aged.img" image
field() { grep -o "\"$1\":[0-9.]*" "$dir/r.json" | head -n 1 | cut -d: -f2; }
tr=$(median <"$dir/repack.t"); tc=$(median <"$dir/create.t")
cr=$(median <"$dir/repack.c"); cc=$(median <"$dir/create.c")
printf 'r4repacker of the aged image (%s tree blocks), median of %d: %.3f s\n' \
	"$(field tree_blocks)" "$runs" "$tr"
printf 'r4pack create of the same content, same size, median of %d: %.3f s\n' \
	"$runs" "$tc"
printf 'CPU time (user + sys), medians: r4repacker %.3f s, r4pack create %.3f s, repack/create = %.2f\n' \
	"$cr" "$cc" "$(echo "$cr / $cc" | bc -l)"
printf 'repack/create (elapsed) = %.2f; moved %s blocks (%s out of the way) in %s transactions\n' \
	"$(echo "$tr / $tc" | bc -l)" "$(field blocks_moved)" \
	"$(field blocks_evicted)" "$(field transactions)"
old_line

# A nearly full volume (the same recipe as repacker.bats's test).
field() { grep -o "\"$1\":[0-9.]*" "$dir/r.json" | head -n 1 | cut -d: -f2; }
free=$(r4repacker -n --json "$dir/aged.img" | grep -o '"free_blocks":[0-9]*' | cut -d: -f2)
mkdir -p "$dir/fill/a"
python3 "$src/tests/noise.py" "$dir/fill/a" $(( (free - keep) * 4096 ))
find "$dir/fill" -exec touch -h -d @1600000000 {} +
cp --sparse=always "$dir/aged.img" "$dir/full.img"
r4pack add -q "$dir/full.img" "$dir/fill"
rm -rf "$dir/tree" && mkdir "$dir/tree"
r4debugfs -R "rdump / $dir/tree" "$dir/full.img" >/dev/null
: >"$dir/repack.t"; : >"$dir/create.t"; : >"$dir/repack.c"; : >"$dir/create.c"
: >"$dir/old.t"; : >"$dir/old.c"
rounds "$dir/full.img" "full image"
tr=$(median <"$dir/repack.t"); tc=$(median <"$dir/create.t")
cr=$(median <"$dir/repack.c"); cc=$(median <"$dir/create.c")
out=$(field blocks_to_move); moved=$(field blocks_moved)
printf 'nearly full (%s free blocks before the run, %s out of place): r4repacker %.3f s, r4pack create %.3f s (medians of %d)\n' \
	"$(field free_blocks)" "$out" "$tr" "$tc" "$runs"
printf 'repack/create (elapsed) = %.2f, CPU = %.2f; moved %s blocks (%s out of the way) in %s transactions: moved/out of place = %.2f\n' \
	"$(echo "$tr / $tc" | bc -l)" "$(echo "$cr / $cc" | bc -l)" "$moved" \
	"$(field blocks_evicted)" "$(field transactions)" \
	"$(echo "$moved / $out" | bc -l)"
old_line
