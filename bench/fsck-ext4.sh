#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# r4fsck -n against e2fsck -fn on images of the same tree (issue 29,
# goal 5): one tree copied to TMPDIR, an r4 image made by r4pack create
# and an ext4 image by mke2fs -d, then both checkers interleaved, RUNS
# rounds (default 5), medians of wall and CPU (user + sys) seconds.
#   bench/fsck-ext4.sh [BUILD_DIR] [RUNS] [DIR...]
# The default tree is /usr/include /usr/share /usr/lib/python3* (about
# as many entries as the Linux source). R4_BENCH_KEEP=DIR keeps the
# images in DIR (made once, reused) for profiling. R4_BENCH_OLD=DIR
# (a build tree) times that build's r4fsck -n in the same rounds.
set -eu
build=${1:-.}
runs=${2:-5}
shift $(( $# > 2 ? 2 : $# ))
[ $# -gt 0 ] || set -- /usr/include /usr/share /usr/lib/python3*
for t in mke2fs e2fsck; do
	command -v $t >/dev/null || { echo "$t not installed"; exit 1; }
done
TIMEFORMAT='%R %U %S'
if [ -n "${R4_BENCH_KEEP:-}" ]; then
	dir=$R4_BENCH_KEEP; mkdir -p "$dir"
else
	dir=$(mktemp -d "${TMPDIR:-/tmp}/r4bench.XXXXXX")
	trap 'rm -rf "$dir"' EXIT
fi
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
# timeit OUT CMD...: append "wall cpu" of one run of CMD to OUT.
timeit() {
	local out=$1 t; shift
	t=$( { time "$@" >/dev/null 2>&1; } 2>&1 ) || true
	echo "$t" | awk '{print $1, $2 + $3}' >> "$out"
}

if [ ! -f "$dir/r4.img" ] || [ ! -f "$dir/ext4.img" ]; then
	echo "copying $* ..."
	rm -rf "$dir/src"; mkdir "$dir/src"
	for d in "$@"; do cp -a --parents "$d" "$dir/src/" 2>/dev/null || true; done
	"$build/cmd/r4pack" create -q "$dir/src" "$dir/r4.img"
	kib=$(du -sk --apparent-size "$dir/src" | cut -f1)
	n=$(find "$dir/src" | wc -l)
	# ext4 room: the data, 25% slack, one 4 KiB block per entry at most.
	blocks=$(( (kib * 5 / 4 + n * 4) / 4 + 65536 ))
	mke2fs -q -F -t ext4 -b 4096 -N $(( n + 10000 )) -d "$dir/src" "$dir/ext4.img" "$blocks"
	rm -rf "$dir/src"
	echo "$n entries" > "$dir/entries"
fi
echo "tree: $(cat "$dir/entries"), r4 image $(du -h "$dir/r4.img" | cut -f1), ext4 image $(du -h "$dir/ext4.img" | cut -f1)"
rm -f "$dir"/t.*
old=${R4_BENCH_OLD:-}
for i in $(seq "$runs"); do
	timeit "$dir/t.r4" "$build/cmd/r4fsck" -n "$dir/r4.img"
	timeit "$dir/t.e2" e2fsck -fn "$dir/ext4.img"
	[ -z "$old" ] || timeit "$dir/t.old" "$old/cmd/r4fsck" -n "$dir/r4.img"
done
rw=$(cut -d' ' -f1 "$dir/t.r4" | median); rc=$(cut -d' ' -f2 "$dir/t.r4" | median)
ew=$(cut -d' ' -f1 "$dir/t.e2" | median); ec=$(cut -d' ' -f2 "$dir/t.e2" | median)
printf 'medians of %d: r4fsck -n wall %.3f s cpu %.3f s; e2fsck -fn wall %.3f s cpu %.3f s\n' \
	"$runs" "$rw" "$rc" "$ew" "$ec"
if [ -n "$old" ]; then
	ow=$(cut -d' ' -f1 "$dir/t.old" | median); oc=$(cut -d' ' -f2 "$dir/t.old" | median)
	printf 'old build r4fsck -n: wall %.3f s cpu %.3f s; new/old cpu %.2fx\n' \
		"$ow" "$oc" "$(echo "$rc / $oc" | bc -l)"
fi
printf 'ratio r4fsck/e2fsck: wall %.2fx, cpu %.2fx (load %s)\n' \
	"$(echo "$rw / $ew" | bc -l)" "$(echo "$rc / $ec" | bc -l)" "$(cut -d' ' -f1-3 /proc/loadavg)"
