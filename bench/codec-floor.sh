#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Compressed create against its codec floor (issue 29, goal 2): for each
# plugin (lzo1, zstd1, gzip1) and cluster size (4K, 64K), r4pack create
# with compressMode force (every cluster compressed) and --threads T,
# against bench/codec-floor.c compressing the same files' clusters with
# the same codec parameters on T threads and doing nothing else (each
# file read in 256 KiB chunks into a buffer it reuses, as r4pack reads
# it, each chunk's clusters compressed before the next read). Plugins:
# $ALGOS (default "lzo1 zstd1 gzip1"). Medians of RUNS in the
# same run, interleaved; the ratio is r4pack's wall time over the
# floor's (target <= 1.1), and the CPU seconds of both. A second floor
# (codec-floor with OUT) also seals each compressed cluster with the
# Adler-32 the format requires and writes the disk clusters to a file
# in 1 MiB pwrites, as r4pack writes its image: work r4pack cannot
# leave out that the bare floor does; r4pack's ratio to it is printed
# on the "+ sums, writes" line.
#   [OLD_BUILD=DIR] bench/codec-floor.sh [BUILD_DIR] [SOURCE_DIR] [RUNS] [THREADS]
# With OLD_BUILD=DIR set, that build's r4pack is timed in the same rounds
# (its images must be the same: compared by sha256) and its ratios are
# printed on the next line.
# Without SOURCE_DIR: a generated corpus (text and a tenth noise, about
# 200 MiB, the mix bench/compress.sh makes). Work files in $BENCH_TMP
# (default /dev/shm).
set -euo pipefail
build=$(cd "${1:-.}" && pwd)
src=${2:-}
runs=${3:-3}
threads=${4:-$(nproc)}
here=$(cd "$(dirname "$0")" && pwd)
r4pack=$build/cmd/r4pack
[ -x "$r4pack" ] || { echo "no $r4pack (give the build folder)" >&2; exit 2; }
old=${OLD_BUILD:-}
if [ -n "$old" ]; then
	old=$(cd "$old" && pwd)/cmd/r4pack
	[ -x "$old" ] || { echo "no $old (OLD_BUILD)" >&2; exit 2; }
fi
tmp=$(mktemp -d "${BENCH_TMP:-/dev/shm}/r4floor.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/codec-floor" "$here/codec-floor.c" -llzo2 -lz -lzstd -lpthread

if [ -z "$src" ]; then
	src=$tmp/src
	python3 - "$src" <<'PY'
import os, random, sys
root = sys.argv[1]
random.seed(29)
words = [("w%d" % i).encode() * (1 + i % 3) for i in range(5000)]
total = 0
n = 0
while total < 200 << 20:
    d = os.path.join(root, "d%03d" % (n // 200))
    os.makedirs(d, exist_ok=True)
    size = random.choice([3000, 20000, 70000, 300000, 1 << 20])
    if n % 10 == 9:
        data = os.urandom(size)
    else:
        data = b" ".join(random.choice(words) for _ in range(size // 4))[:size]
    with open(os.path.join(d, "f%06d" % n), "wb") as f:
        f.write(data)
    total += len(data)
    n += 1
PY
fi
echo "source: $(du -sh "$src" | cut -f1), $(find "$src" -type f | wc -l) files; $threads threads; load $(cut -d' ' -f1-3 /proc/loadavg)"

uuid=0b6e3c6e-5b8e-4a57-9a4b-14c0ffee0029
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
# wall and CPU seconds of a command, "WALL CPU"
timed() {
	/usr/bin/time -f '%e %U %S' -o "$tmp/t" "$@" >/dev/null 2>&1
	awk '{printf "%s %.2f\n", $1, $2 + $3}' "$tmp/t"
}

for algo in ${ALGOS:-lzo1 zstd1 gzip1}; do
	for cl in 4K 64K; do
		bytes=$(( ${cl%K} * 1024 ))
		opts=create=ccreg40,compress=$algo,compressMode=force,cluster=$cl
		: >"$tmp/r"; : >"$tmp/f"; : >"$tmp/o"; : >"$tmp/w"
		for i in $(seq "$runs"); do
			rm -f "$tmp/img"
			SOURCE_DATE_EPOCH=1700000000 timed "$r4pack" create -q -U "$uuid" \
				--threads "$threads" -o "$opts" "$src" \
				"$tmp/img" >>"$tmp/r"
			if [ -n "$old" ]; then
				sum=$(sha256sum <"$tmp/img")
				rm -f "$tmp/img"
				SOURCE_DATE_EPOCH=1700000000 timed "$old" create -q \
					-U "$uuid" --threads "$threads" \
					-o "$opts" "$src" "$tmp/img" >>"$tmp/o"
				[ "$(sha256sum <"$tmp/img")" = "$sum" ] || {
					echo "$algo $cl: the old build's image" \
						"differs" >&2
					exit 1
				}
			fi
			out=$("$tmp/codec-floor" "$algo" "$bytes" "$threads" "$src")
			echo "$out" | sed -E 's/.*wall ([0-9.]+) s, cpu ([0-9.]+) s/\1 \2/' >>"$tmp/f"
			rm -f "$tmp/img"
			out=$("$tmp/codec-floor" "$algo" "$bytes" "$threads" "$src" "$tmp/img")
			echo "$out" | sed -E 's/.*wall ([0-9.]+) s, cpu ([0-9.]+) s/\1 \2/' >>"$tmp/w"
		done
		rw=$(cut -d' ' -f1 "$tmp/r" | median); rc=$(cut -d' ' -f2 "$tmp/r" | median)
		fw=$(cut -d' ' -f1 "$tmp/f" | median); fc=$(cut -d' ' -f2 "$tmp/f" | median)
		printf '%-5s %3s: r4pack %6.2f s (cpu %6.2f), floor %6.2f s (cpu %6.2f): %.2fx wall, %.2fx cpu (target <= 1.1)\n' \
			"$algo" "$cl" "$rw" "$rc" "$fw" "$fc" \
			"$(echo "$rw / $fw" | bc -l)" "$(echo "$rc / $fc" | bc -l)"
		ww=$(cut -d' ' -f1 "$tmp/w" | median); wc=$(cut -d' ' -f2 "$tmp/w" | median)
		printf '      + sums, writes: floor %6.2f s (cpu %6.2f): r4pack %.2fx wall, %.2fx cpu\n' \
			"$ww" "$wc" "$(echo "$rw / $ww" | bc -l)" "$(echo "$rc / $wc" | bc -l)"
		[ -n "$old" ] || continue
		ow=$(cut -d' ' -f1 "$tmp/o" | median); oc=$(cut -d' ' -f2 "$tmp/o" | median)
		printf '      old: r4pack %6.2f s (cpu %6.2f): %.2fx wall, %.2fx cpu (+ sums, writes: %.2fx cpu)\n' \
			"$ow" "$oc" "$(echo "$ow / $fw" | bc -l)" \
			"$(echo "$oc / $fc" | bc -l)" "$(echo "$oc / $wc" | bc -l)"
	done
done
