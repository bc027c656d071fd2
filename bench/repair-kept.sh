#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Files kept exactly by a repair, r4fsck -y against fsck.reiser4 (--fix,
# then --build-sb and --build-fs), on the same damaged images: a
# populated volume (r4pack, 2 directories of 150 files and 40 more) is
# damaged with fixed seeds, in two families:
#   semantic  nlink, sizes, an entry pointing nowhere, a lost directory,
#             bitmap bits, counters (what r4fsck repairs);
#   headers   random bytes in the node and item headers of leaves (tree
#             damage: the tree is rebuilt);
#   items     one flipped bit in an item's body offset, or one byte of a
#             body item's key offset, in random leaves and twigs.
# For each image: exit status, whether the result is clean to both
# checkers, how many of the good image's files (manifest lines of
# non-directories, r4manifest) are kept exactly and how many bytes
# those hold (bytes kept). Not a test: theirs may
# crash; the figures are printed, nothing is asserted. Per family: the
# sums, how many images came out clean to both checkers, how many of
# their runs crashed (killed by a signal or timed out) and on how many
# images ours keeps fewer files than theirs.
#   bench/repair-kept.sh [BUILD_DIR] [SEEDS] [FIRST_SEED]
# With KEEP=DIR in the environment the damaged images are left there
# (FAMILY-SEED.img, with the good image) to look at; FAMILIES="headers"
# runs one family.
set -u
build=$(cd "${1:-.}" && pwd)
seeds=${2:-10}
first=${3:-1}
export PATH=$build/cmd:$build/tests/helpers:$PATH
for t in r4pack r4fsck r4manifest r4debugfs fsck.reiser4; do
	command -v $t >/dev/null || { echo "$t not found"; exit 1; }
done
W=$(mktemp -d "${TMPDIR:-/tmp}/r4kept.XXXXXX")
trap 'rm -rf "$W"' EXIT
export SOURCE_DATE_EPOCH=1700000000

. "$(dirname "$0")/../tests/surgery.sh"
files() { r4manifest "$1" 2>/dev/null | awk -F '\t' '$2 != "d"' | cut -f 1-11; }
# kept IMAGE: "FILES BYTES" of the good image's files kept exactly.
kept() {
	files "$1" >"$W/now"
	grep -xFf "$W/now" "$W/good.files" |
		awk -F '\t' '{ n++; b += $6 } END { printf "%d %d", n, b }'
}
clean() {
	local a=no b=no
	r4fsck -n "$1" >/dev/null 2>&1 && a=yes
	cp "$1" "$W/o.img"
	timeout 120 fsck.reiser4 --check -f -y "$W/o.img" 2>&1 | grep -q "FS is consistent" && b=yes
	echo "$a/$b"
}

s=$W/src
mkdir -p "$s/a" "$s/b"
for i in $(seq 1 150); do head -c $((i * 97 % 9000)) /dev/urandom >"$s/a/f$i"; done
for i in $(seq 1 150); do head -c $((i * 131 % 30000)) /dev/urandom >"$s/b/g$i"; done
for i in $(seq 1 40); do echo "top $i" >"$s/t$i"; done
find "$s" -exec touch -h -d @1600000000 {} +
r4pack create -q "$s" "$W/good.img"
files "$W/good.img" >"$W/good.files"
[ -n "${KEEP:-}" ] && mkdir -p "$KEEP" && cp "$W/good.img" "$W/good.files" "$KEEP/"
total=$(wc -l <"$W/good.files")
total_bytes=$(awk -F '\t' '{ b += $6 } END { print b + 0 }' "$W/good.files")

damage() {
	local img=$1 family=$2 seed=$3 n b off
	RANDOM=$seed
	if [ "$family" = semantic ]; then
		n=$((RANDOM % 40 + 1)); b=$(sd_off "$img" /t$n); poke "$img" $((b + 4)) 9 4
		n=$((RANDOM % 150 + 1)); b=$(sd_off "$img" /a/f$n); poke "$img" $((b + 8)) 777777 8
		n=$((RANDOM % 40 + 1)); b=$(entry_off "$img" / t$n); poke "$img" $((b + 16)) $((0x99999)) 8
		[ $((seed % 2)) = 0 ] && { b=$(entry_off "$img" / b); poke "$img" $((b + 16)) $((0x99998)) 8; }
		poke "$img" $((17 * 4096 + 8)) $((RANDOM)) 8
		poke "$img" $((18 * 4096 + 4 + 500 + RANDOM % 100)) 255 1
		return
	fi
	local blocks=() k
	if [ "$family" = items ]; then
		# a bit of a body offset or a byte of a key offset, twice
		mapfile -t blocks < <(r4debugfs -R "print tree" "$img" | sed -n 's/.*node \([0-9]*\): node40, level [12],.*/\1/p')
		[ ${#blocks[@]} -gt 0 ] || blocks=(24)
		for k in 1 2; do
			b=${blocks[$((RANDOM % ${#blocks[@]}))]}
			n=$(peek "$img" $((b * 4096 + 2)) 2)
			[ "$n" -gt 0 ] || continue
			off=$((b * 4096 + 4096 - (RANDOM % n + 1) * 38))
			if [ $((RANDOM % 2)) = 0 ]; then
				poke "$img" $((off + 32)) $(( $(peek "$img" $((off + 32)) 2) ^ (1 << (RANDOM % 12)) )) 2
			else
				poke "$img" $((off + 24 + RANDOM % 3)) $((RANDOM % 256)) 1
			fi
		done
		return
	fi
	# headers: 4 random bytes in node / item headers of random leaves
	mapfile -t blocks < <(r4debugfs -R "print tree" "$img" | sed -n 's/.*node \([0-9]*\): node40, level 1,.*/\1/p')
	[ ${#blocks[@]} -gt 0 ] || blocks=(24)
	for k in 1 2 3 4; do
		b=${blocks[$((RANDOM % ${#blocks[@]}))]}
		if [ $((RANDOM % 2)) = 0 ]; then off=$((RANDOM % 28))
		else off=$((4096 - 1 - RANDOM % 400)); fi
		poke "$img" $((b * 4096 + off)) $((RANDOM % 256)) 1
	done
}

printf '%-9s %4s | %-6s %-8s %5s %8s | %-10s %-8s %5s %8s\n' family seed "r4 rc" clean files bytes "theirs" clean files bytes
crashed() {	# exit statuses of their runs: a signal or a timeout
	local r
	for r in "$@"; do [ "$r" -ge 124 ] && return 0; done
	return 1
}

for family in ${FAMILIES:-semantic headers items}; do
	ours_sum=0 theirs_sum=0 ours_clean=0 theirs_clean=0 crashes=0 fewer=0
	ours_bytes=0 theirs_bytes=0 fewer_bytes=0
	for seed in $(seq "$first" $((first + seeds - 1))); do
		cp "$W/good.img" "$W/d.img"
		damage "$W/d.img" $family $seed
		cp "$W/d.img" "$W/ours.img"
		[ -n "${KEEP:-}" ] && cp "$W/d.img" "$KEEP/$family-$seed.img"
		timeout 300 r4fsck -y "$W/ours.img" >/dev/null 2>&1
		rc=$?
		oc=$(clean "$W/ours.img"); read -r ok ob < <(kept "$W/ours.img")
		cp "$W/d.img" "$W/th.img"
		timeout 300 fsck.reiser4 --fix -y -f "$W/th.img" >/dev/null 2>&1
		trc=$?
		their_rcs=($trc)
		if ! timeout 120 fsck.reiser4 --check -f -y "$W/th.img" 2>&1 | grep -q "FS is consistent"; then
			timeout 300 fsck.reiser4 --build-sb -y -f "$W/th.img" >/dev/null 2>&1
			their_rcs+=($?)
			timeout 300 fsck.reiser4 --build-fs -y -f "$W/th.img" >/dev/null 2>&1
			their_rcs+=($?)
			trc="$trc+bfs:${their_rcs[2]}"
		fi
		crashed "${their_rcs[@]}" && crashes=$((crashes + 1))
		tc=$(clean "$W/th.img"); read -r tk tb < <(kept "$W/th.img")
		printf '%-9s %4s | %-6s %-8s %5s %8s | %-10s %-8s %5s %8s\n' $family $seed $rc $oc $ok $ob "$trc" $tc $tk $tb
		ours_sum=$((ours_sum + ok)); theirs_sum=$((theirs_sum + tk))
		ours_bytes=$((ours_bytes + ob)); theirs_bytes=$((theirs_bytes + tb))
		[ "$ob" -lt "$tb" ] && fewer_bytes=$((fewer_bytes + 1))
		[ "$oc" = yes/yes ] && ours_clean=$((ours_clean + 1))
		[ "$tc" = yes/yes ] && theirs_clean=$((theirs_clean + 1))
		[ "$ok" -lt "$tk" ] && fewer=$((fewer + 1))
	done
	echo "$family: files kept exactly of $total per image, summed over $seeds seeds: r4fsck $ours_sum, fsck.reiser4 $theirs_sum"
	echo "$family: bytes in those files of $total_bytes per image, summed: r4fsck $ours_bytes, fsck.reiser4 $theirs_bytes; r4fsck kept fewer bytes on $fewer_bytes"
	echo "$family: clean to both checkers: r4fsck $ours_clean, fsck.reiser4 $theirs_clean of $seeds; their runs crashed on $crashes images; r4fsck kept fewer on $fewer"
done
