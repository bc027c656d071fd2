#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# r4pack create from standard input, one build against another (before
# and after a change), in the same run, interleaved, medians:
#   cat TAR | r4pack create -q - IMAGE      (old build, new build)
#   r4pack create -q TAR IMAGE              (new build: the tar file)
#   ... --spool-memory=0 - IMAGE            (new build, if it has the
#                                            option: the spool a file)
# Prints the median wall seconds, CPU seconds (user + sys of the
# pipeline: the machine may be shared) and peak RSS (MB, the largest
# process) of each, and new / old ratios.
#
# Usage: bench/pack-stdin.sh OLDBUILD NEWBUILD [TAR...]
# Without TAR: a tar of /usr/share/doc and one of /usr/lib/python3*.
# Work files go to $BENCH_TMP (default: a folder under /dev/shm, so disk
# speed does not count). R4_BENCH_RUNS runs of each (default 7).
set -euo pipefail

OLD=${1:?usage: bench/pack-stdin.sh OLDBUILD NEWBUILD [TAR...]}
NEW=${2:?usage: bench/pack-stdin.sh OLDBUILD NEWBUILD [TAR...]}
shift 2
RUNS=${R4_BENCH_RUNS:-7}
for b in "$OLD" "$NEW"; do
	[ -x "$b/cmd/r4pack" ] || { echo "no $b/cmd/r4pack" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "no /usr/bin/time" >&2; exit 2; }

TMP=$(mktemp -d "${BENCH_TMP:-/dev/shm}/r4bench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
if [ $# -eq 0 ]; then
	tar -cf "$TMP/doc.tar" -C /usr/share doc 2>/dev/null || true
	tar -cf "$TMP/python.tar" -C /usr/lib $(cd /usr/lib && ls -d python3*) \
		2>/dev/null || true
	set -- "$TMP/doc.tar" "$TMP/python.tar"
fi

# run RESULTS CMD: time one run, record wall and CPU seconds, peak RSS.
run() {
	local res=$1; shift
	/usr/bin/time -f '%e %U %S %M' -o "$TMP/time" sh -c "$1" >/dev/null \
		2>"$TMP/err" || { echo "failed: $1" >&2; tail -5 "$TMP/err" >&2
				  exit 1; }
	read -r secs usr sys rss <"$TMP/time"
	echo "$secs $(awk -v u="$usr" -v s="$sys" 'BEGIN { print u + s }') $((rss / 1024))" \
		>>"$res"
}

median() {	# median of column $2 of file $1
	cut -d' ' -f"$2" "$1" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'
}

NOMEM=
case "$("$NEW/cmd/r4pack" create --help 2>/dev/null)" in
*spool-memory*) NOMEM=1 ;;
esac
for tar in "$@"; do
	echo "$(basename "$tar"): $(stat -c %s "$tar") bytes, $(tar -tf "$tar" | wc -l) entries"
	rm -f "$TMP"/res.*
	for i in $(seq "$RUNS"); do
		run "$TMP/res.old" "cat '$tar' | '$OLD/cmd/r4pack' create -q - '$TMP/o.img'"
		run "$TMP/res.new" "cat '$tar' | '$NEW/cmd/r4pack' create -q - '$TMP/n.img'"
		run "$TMP/res.file" "'$NEW/cmd/r4pack' create -q '$tar' '$TMP/f.img'"
		[ -z "$NOMEM" ] || run "$TMP/res.nomem" "cat '$tar' | '$NEW/cmd/r4pack' create -q --spool-memory=0 - '$TMP/z.img'"
		rm -f "$TMP"/*.img
	done
	for k in old new file ${NOMEM:+nomem}; do
		printf '  %-5s wall %s s  cpu %s s  rss %s MB\n' "$k" \
			"$(median "$TMP/res.$k" 1)" "$(median "$TMP/res.$k" 2)" \
			"$(median "$TMP/res.$k" 3)"
	done
	awk -v ow="$(median "$TMP/res.old" 1)" -v nw="$(median "$TMP/res.new" 1)" \
	    -v oc="$(median "$TMP/res.old" 2)" -v nc="$(median "$TMP/res.new" 2)" \
	    'BEGIN { printf "  new/old: wall %.2fx, cpu %.2fx\n", nw / ow, nc / oc }'
done
