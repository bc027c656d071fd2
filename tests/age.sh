#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# age.sh IMAGE [FILES] [ROUNDS]: make an aged image, deterministically:
# r4pack create of FILES files (default 1500) in 30 directories, then
# ROUNDS rounds (default 20), each: one r4pack add of 40 new files, a
# new directory of 10 and 30 replaced files, then one r4debugfs -w
# --atomic script that removes 30 of the first files (never the same
# one twice) and, every fourth round, the directory of two rounds
# before. Sizes 0..60 KiB: tails and extents. FILES must be prime to 7
# and at least 30 * ROUNDS. Needs r4pack and r4debugfs on PATH; works in
# IMAGE.src/, removed at the end. The volume is $AGE_SIZE (default 96M).
# The same arguments give the same bytes wherever IMAGE is (the files'
# bytes name them relative to IMAGE.src/; a fixed UUID, from which the
# mkfs id derives under SOURCE_DATE_EPOCH), so an old and a new build
# can be compared on one image.
set -eu

IMG=$1
FILES=${2:-1500}
ROUNDS=${3:-20}
W=$IMG.src
export SOURCE_DATE_EPOCH=1700000000
rm -rf "$W"
mkdir -p "$W"
W=$(cd "$W" && pwd)

# One awk per step (processes are what costs here).
#   files DIR FIRST COUNT SEED ROUND: new files f<FIRST..> in d0..d29,
#     plus (ROUND > 0) 10 in r<ROUND>/ and 30 replacements, and the
#     removal script of the round in $W/script.
step() (
	cd "$W"
	awk -v dir="$1" -v first="$2" -v n="$3" -v seed="$4" -v r="$5" \
	    -v nfiles="$FILES" -v script="$W/script" '
	function body(tag, size,   s) {
		s = tag "\n" substr(line, 1 + size % 32, 33) "\n";
		while (length(s) < size)
			s = s s;
		return substr(s, 1, size);
	}
	function put(f, size) {
		printf "%s", body(f " " seed, size) > f;
		close(f);
	}
	function rsize(   x) {
		x = rand();
		if (x < 0.6)
			return int(rand() * 4000);
		if (x < 0.9)
			return int(rand() * 16000);
		return 16384 + int(rand() * 45000);
	}
	BEGIN {
		srand(seed);
		for (i = 0; i < 64; i++)
			line = line sprintf("%c", 97 + int(rand() * 26));
		dirs = "";
		for (i = 0; i < 30; i++)
			dirs = dirs " \"" dir "/d" i "\"";
		if (r > 0)
			dirs = dirs " \"" dir "/r" r "\"";
		system("mkdir -p" dirs);
		for (i = first; i < first + n; i++)
			put(dir "/d" (i % 30) "/f" i, rsize());
		if (r == 0)
			exit;
		for (i = first + n; i < first + n + 10; i++)
			put(dir "/r" r "/f" i, rsize());
		for (k = 0; k < 30; k++) {
			i = (r * 37 + k * 41) % nfiles;
			put(dir "/d" (i % 30) "/f" i, int(rand() * 30000));
		}
		for (k = 0; k < 30; k++) {
			i = ((r - 1) * 30 + k) * 7 % nfiles;
			print "rm /d" (i % 30) "/f" i > script;
		}
		if (r % 4 == 0)
			print "rm -r /r" (r - 2) > script;
		close(script);
	}'
)

step base 0 "$FILES" 1 0
find "$W/base" -exec touch -h -d @1600000000 {} +
r4pack create -q --size "${AGE_SIZE:-96M}" \
	-U 3a9c5e1f-7b2d-4c80-9e6a-1d4f8b2c7e05 "$W/base" "$IMG"

next=$FILES
for r in $(seq 1 "$ROUNDS"); do
	rm -rf "$W/add"
	step add "$next" 40 $((r * 7 + 1)) "$r"
	next=$((next + 50))
	touch -h -d @$((1600000000 + r * 1000)) "$W/add" "$W"/add/*/ \
		"$W"/add/*/*
	r4pack add -q -o create=reg40 "$IMG" "$W/add"
	r4debugfs -w --atomic -f "$W/script" "$IMG" >/dev/null
done
rm -rf "$W"
