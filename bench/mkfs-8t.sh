#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Make an 8 TiB sparse volume with r4mkfs and with mkfs.reiser4, in the
# same run, N times each (default 5), and print the medians, their ratio
# and the blocks each image takes on disk; the floor beside them: a bare
# loop writing one 4 KiB block at every bitmap position (one per 32,736
# blocks: 257 MiB for 8 TiB) into a sparse file of the same size.
#   bench/mkfs-8t.sh [BUILD_DIR] [RUNS]
set -eu
build=${1:-.}
runs=${2:-5}
size=${R4_BENCH_SIZE:-8T}
r4mkfs=$build/cmd/r4mkfs
command -v mkfs.reiser4 >/dev/null || { echo "mkfs.reiser4 not installed"; exit 1; }
[ -x "$r4mkfs" ] || { echo "$r4mkfs not built"; exit 1; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/r4bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

: > "$dir/ours"; : > "$dir/theirs"; : > "$dir/floor"
for i in $(seq "$runs"); do
	# Alternate the order so neither tool always runs on a warm cache.
	for tool in ours theirs floor; do
		rm -f "$dir/img"
		truncate -s "$size" "$dir/img"
		t0=$(now)
		if [ $tool = ours ]; then
			"$r4mkfs" -q -f "$dir/img"
		elif [ $tool = floor ]; then
			python3 - "$dir/img" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
size = os.fstat(fd).st_size // 4096
blk = bytes(range(256)) * 16
for b in range(0, size, 32736):
    os.pwrite(fd, blk, (b if b else 18) * 4096)
os.close(fd)
PY
		else
			mkfs.reiser4 -f -y "$dir/img" >/dev/null 2>&1
		fi
		sync -f "$dir/img" 2>/dev/null || sync
		t1=$(now)
		echo "$t1 - $t0" | bc -l >> "$dir/$tool"
		du -k "$dir/img" | cut -f1 > "$dir/$tool.kb"
	done
done
o=$(median < "$dir/ours"); t=$(median < "$dir/theirs"); f=$(median < "$dir/floor")
printf 'mkfs of a %s sparse image, median of %d runs (seconds, incl. sync)\n' "$size" "$runs"
printf '  r4mkfs        %8.3f s   %8d KiB on disk\n' "$o" "$(cat "$dir/ours.kb")"
printf '  mkfs.reiser4  %8.3f s   %8d KiB on disk\n' "$t" "$(cat "$dir/theirs.kb")"
printf '  bitmap floor  %8.3f s   %8d KiB on disk (bare pwrite loop)\n' "$f" "$(cat "$dir/floor.kb")"
printf '  ratio r4mkfs/floor = %.3f\n' "$(echo "$o / $f" | bc -l)"
printf '  ratio r4mkfs/mkfs.reiser4 = %.3f (mkfs.reiser4 takes %.1fx as long)\n' \
	"$(echo "$o / $t" | bc -l)" "$(echo "$t / $o" | bc -l)"
