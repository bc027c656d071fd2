#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Check and read speed on one populated image of about 100,000 files:
#   r4fsck --check        vs  fsck.reiser4 --check
#   r4debugfs rdump /     vs  debugfs.reiser4 -k of each file
# Medians of RUNS runs (default 3), in the same run, on the same image.
# debugfs.reiser4 starts once per file, so it is timed on a sample of
# SAMPLE files (default 2000) and scaled to the whole tree.
#   bench/fsck-read.sh [BUILD_DIR] [RUNS] [FILES]
set -eu
build=${1:-.}
runs=${2:-3}
nfiles=${3:-100000}
sample=${R4_BENCH_SAMPLE:-2000}
for t in fsck.reiser4 debugfs.reiser4 python3; do
	command -v $t >/dev/null || { echo "$t not installed"; exit 1; }
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/r4bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT
now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
timeit() { local t0 t1; t0=$(now); "$@" >/dev/null 2>&1 || true; t1=$(now); echo "$t1 - $t0" | bc -l; }

echo "making $nfiles files ..."
python3 - "$dir/src" "$nfiles" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
random.seed(4)
per = 1000
for i in range(n):
    d = os.path.join(root, "d%03d" % (i // per), "s%02d" % (i % 7))
    os.makedirs(d, exist_ok=True)
    size = random.choice([0, 100, 1000, 3000, 5000, 9000, 20000, 70000])
    with open(os.path.join(d, "file-%06d.dat" % i), "wb") as f:
        f.write((b"reiser4 %06d " % i * (size // 15 + 1))[:size])
PY
"$build/cmd/r4pack" create -q "$dir/src" "$dir/img"
find "$dir/src" -type f | sed "s|^$dir/src||" | shuf -n "$sample" --random-source=<(yes) > "$dir/sample"
echo "image: $(du -h "$dir/img" | cut -f1), $(find "$dir/src" -type f | wc -l) files"

: > "$dir/ours.fsck"; : > "$dir/theirs.fsck"; : > "$dir/ours.read"; : > "$dir/theirs.read"
for i in $(seq "$runs"); do
	timeit "$build/cmd/r4fsck" --check "$dir/img" >> "$dir/ours.fsck"
	# fsck.reiser4 may write the status block: run it on a copy.
	cp --sparse=always "$dir/img" "$dir/copy"
	timeit fsck.reiser4 --check -f -y "$dir/copy" >> "$dir/theirs.fsck"
	rm -rf "$dir/out"; mkdir "$dir/out"
	timeit "$build/cmd/r4debugfs" -R "rdump / $dir/out" "$dir/img" >> "$dir/ours.read"
	t0=$(now)
	while read -r p; do debugfs.reiser4 -f -k "$p" "$dir/img" >/dev/null 2>&1 || true; done < "$dir/sample"
	t1=$(now)
	echo "($t1 - $t0) * $nfiles / $sample" | bc -l >> "$dir/theirs.read"
done
of=$(median < "$dir/ours.fsck"); tf=$(median < "$dir/theirs.fsck")
orr=$(median < "$dir/ours.read"); tr=$(median < "$dir/theirs.read")
printf 'check, median of %d: r4fsck %.2f s, fsck.reiser4 %.2f s: r4fsck is %.1fx faster\n' "$runs" "$of" "$tf" "$(echo "$tf / $of" | bc -l)"
printf 'read all, median of %d: r4debugfs rdump %.2f s, debugfs.reiser4 -k per file %.1f s (scaled from %d files): %.0fx\n' \
	"$runs" "$orr" "$tr" "$sample" "$(echo "$tr / $orr" | bc -l)"
