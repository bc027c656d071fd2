#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Which damage makes `r4fsck -y` build the whole volume's tables (issue
# 29, goal 5c): a volume of N files (bench/scale.sh's directories of
# 1,000 empty files, the first directory's first six files with bodies:
# tails of 100, 200 and 300 bytes, extents of 20,000, 30,000 and 40,000),
# then for each KIND a copy damaged that way and repaired by
# `r4fsck -y --json` under /usr/bin/time, with R4_FSCK_STATS (how many
# checks built the tables). One line a kind: exit code, rounds and table
# checks, peak RSS (KiB), user and sys seconds, the problem codes found.
# R4_BENCH_OLD=DIR also repairs a second copy with DIR/cmd/r4fsck and
# says whether the report and the repaired bytes are the same.
#   bench/fsck-damage.sh [BUILD_DIR] N [KIND...]
# Kinds (default all): clean nlink size-past-body size-short-extent
# size-short-tail empty-size tail-dropped dir-size extent-past
# extent-overlap tail-offset sd-zeroed entry-nowhere entry-oid
# two-names dir-two-names sd-key-oid sd-key-oid-empty.
# Room: the image (about 140 bytes a file) in $BENCH_TMP (default
# /dev/shm), twice; the check's runs in $TMPDIR.
set -euo pipefail
BUILD=${1:-.}
N=${2:?usage: bench/fsck-damage.sh [BUILD_DIR] N [KIND...]}
shift 2
kinds=${*:-"clean nlink size-past-body size-short-extent size-short-tail
empty-size tail-dropped dir-size extent-past extent-overlap tail-offset
sd-zeroed entry-nowhere entry-oid two-names dir-two-names sd-key-oid
sd-key-oid-empty"}
OLD=${R4_BENCH_OLD:-}
SRC=$(cd "$(dirname "$0")/.." && pwd)
for t in r4pack r4fsck r4debugfs; do
	[ -x "$BUILD/cmd/$t" ] || { echo "no $BUILD/cmd/$t (give the build folder)" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "no /usr/bin/time" >&2; exit 2; }
BUILD=$(cd "$BUILD" && pwd)
export PATH=$BUILD/cmd:$PATH SOURCE_DATE_EPOCH=1700000000
. "$SRC/tests/surgery.sh"

TMP=$(mktemp -d "${BENCH_TMP:-/dev/shm}/r4damage.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
cc -O2 -o "$TMP/gen" "$SRC/bench/gen-tar.c"
[ "$N" -ge 10000 ] || { echo "N must be at least 10000" >&2; exit 2; }
"$TMP/gen" "$N" bodies | r4pack create -q --uuid 5ca1e000-0000-4000-8000-000000000029 - "$TMP/base.img"

ih_at() { echo $(($1 * 4096 + 4096 - ($2 + 1) * 38)); }
sd_ih() {
	local js
	js=$(r4debugfs --json -R "stat $2" "$1")
	ih_at "$(sed -n 's/.*"sd_block":\([0-9]*\).*/\1/p' <<<"$js")" \
	      "$(sed -n 's/.*"sd_item":\([0-9]*\).*/\1/p' <<<"$js")"
}
# The first extent unit of file $2 (start at +0, width at +8).
ext_unit() {
	local ih
	ih=$(item_ih "$1" "$2" extent40)
	echo $((ih - ih % 4096 + $(peek "$1" $((ih + 32)) 2)))
}
# damage KIND IMAGE
damage() {
	local img=$2 D=/d0000000 E=/d0000005 o ih
	case $1 in
	clean) ;;
	nlink) poke "$img" $(($(sd_off "$img" $E/f0005001) + 4)) 9 4 ;;
	size-past-body) poke "$img" $(($(sd_off "$img" $D/f0000003) + 8)) 500000 8 ;;
	size-short-extent) poke "$img" $(($(sd_off "$img" $D/f0000003) + 8)) 4000 8 ;;
	size-short-tail) poke "$img" $(($(sd_off "$img" $D/f0000001) + 8)) 50 8 ;;
	empty-size) poke "$img" $(($(sd_off "$img" $E/f0005002) + 8)) 7777 8 ;;
	tail-dropped)
		ih=$(item_ih "$img" $D/f0000001 plain40)
		node_drop "$img" $((ih / 4096)) $(((4096 - ih % 4096) / 38 - 1)) ;;
	dir-size) poke "$img" $(($(sd_off "$img" $E) + 8)) 12345 8 ;;
	extent-past) poke "$img" "$(ext_unit "$img" $D/f0000002)" $((1 << 40)) 8 ;;
	extent-overlap)
		poke "$img" "$(ext_unit "$img" $D/f0000003)" \
		     "$(peek "$img" "$(ext_unit "$img" $D/f0000002)" 8)" 8 ;;
	tail-offset)
		ih=$(item_ih "$img" $D/f0000004 plain40)
		poke "$img" $((ih + 24)) 1000 8 ;;
	sd-zeroed)
		o=$(sd_off "$img" $E/f0005003)
		dd if=/dev/zero of="$img" bs=1 seek="$o" count=16 conv=notrunc status=none ;;
	entry-nowhere)
		o=$(dentry_off "$img" $E f0005004)
		poke "$img" $((o + 8)) 12345 8
		poke "$img" $((o + 16)) $((0x99999)) 8 ;;
	entry-oid)
		o=$(dentry_off "$img" $E f0005004)
		poke "$img" $((o + 16)) $((0x99999)) 8 ;;
	two-names) retarget "$img" $E f0005006 $E/f0005007 ;;
	dir-two-names) retarget "$img" $E f0005008 /d0000006 ;;
	sd-key-oid) poke "$img" $(($(sd_ih "$img" $D/f0000003) + 16)) $((0x20000)) 8 ;;
	sd-key-oid-empty) poke "$img" $(($(sd_ih "$img" $E/f0005009) + 16)) $((0x20000)) 8 ;;
	*) echo "unknown kind $1" >&2; exit 2 ;;
	esac
}

printf '# %s files, load %s\n' "$N" "$(cut -d ' ' -f 1-3 /proc/loadavg)"
printf '# kind\texit\tstats\tRSS KiB, user s, sys s\tcodes%s\n' "${OLD:+	old: RSS KiB, user s, sys s; same report, same bytes}"
for k in $kinds; do
	cp --sparse=always "$TMP/base.img" "$TMP/a.img"
	damage "$k" "$TMP/a.img"
	[ -z "$OLD" ] || cp --sparse=always "$TMP/a.img" "$TMP/b.img"
	rc=0
	R4_FSCK_STATS=1 /usr/bin/time -f '%M %U %S' -o "$TMP/t" \
		r4fsck -y --json "$TMP/a.img" >"$TMP/j" 2>"$TMP/e" || rc=$?
	codes=$( (grep -o '"code":"[a-z-]*"' "$TMP/j" || true) | sed 's/"code"://; s/"//g' | sort -u | tr '\n' ' ')
	line="$k	$rc	$(grep -o 'stats: .*' "$TMP/e" | sed 's/stats: //')	$(tail -n 1 "$TMP/t")	$codes"
	if [ -n "$OLD" ]; then
		/usr/bin/time -f '%M %U %S' -o "$TMP/t" \
			"$OLD/cmd/r4fsck" -y --json "$TMP/b.img" >"$TMP/j2" 2>/dev/null || true
		same=no
		sed 's|b\.img|a.img|g' "$TMP/j2" | cmp -s - "$TMP/j" && same=yes
		cmp -s "$TMP/a.img" "$TMP/b.img" && same="$same, yes" || same="$same, no"
		line="$line	$(tail -n 1 "$TMP/t"); $same"
	fi
	echo "$line"
	rm -f "$TMP/a.img" "$TMP/b.img"
done
