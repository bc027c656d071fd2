#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# repair.sh quick|full [semantic|tree|treefull|twice|keys|preopen]: crash tests of r4fsck -y --batch 2. A
# populated image (r4pack) is damaged in ways the repair fixes in several
# transactions: "semantic" (bitmap bits, free count, nlink, sizes, an
# entry to a missing object whose object goes to /lost+found), "tree"
# (a leaf zeroed and a twig's pointer cycled back: the tree rebuild, then
# the object and space passes), "treefull" (the leaf zeroed on an
# auto-sized volume with no space to spare: no room for a new tree, the
# old one mended in place, then the object and space passes; the
# first 40 writes cut, then every 7th), "twice" (extent units of five files
# pointed at blocks another file or a leaf has: the copies of blocks
# claimed twice, every write cut in both modes), "keys" (stat data
# whose object id or ordering was damaged put back under their names, an
# entry whose object id was damaged pointed back, two files with one
# object id told apart: every write cut), "preopen" (what r4fsck -y
# fixes before it opens the volume: a damaged master super block put
# back from its backup, an image cut short extended, a journal header
# naming a transaction past the device's end dropped; then the free
# count in the super block; every write cut, the fault layer counting
# the writes of every open together); r4fsck -y --batch 2 is
# run with R4_FAULT
# cutting it at each write (quick: every 3rd, plus torn and unsynced
# samples, and keep-subset at the last write before a sample of its
# syncs: that write lands, the unsynced ones before it are lost, or a
# random subset of them), with --batch 2 so the fixes span many
# transactions.
# At each point a rerun of r4fsck -y --batch 2 must exit 0 or 1, r4fsck -n must
# then exit 0, the manifest must equal the uncut repair's, and (every
# 10th point) fsck.reiser4 must call the rerun's result consistent.
# Last line: "repair crash: N cut points, all finished by a rerun,
# fsck.reiser4 agreed at M". Exit 0, 1 when a point failed, 2 on error.
set -u

LEVEL=${1:-quick}
SCEN=${2:-semantic}
# R4_CRASH_THIN (below), refused before any work when it is not 1-99
THIN_ASKED=${R4_CRASH_THIN:-1}
case $THIN_ASKED in [1-9]|[1-9][0-9]) ;; *) echo "repair.sh: bad R4_CRASH_THIN '$THIN_ASKED'" >&2; exit 2 ;; esac
case $SCEN in semantic|tree|treefull|twice|keys|preopen) ;; *) echo "usage: repair.sh quick|full [semantic|tree|treefull|twice|keys|preopen]" >&2; exit 2 ;; esac
# The rebuild writes a whole new tree: quick cuts it every 10th write.
[ "$LEVEL" = quick ] && [ "$SCEN" = tree ] && QUICK_TREE=1 || QUICK_TREE=0
case $LEVEL in quick) CUT=3 SAMPLE=4 SYNCS=8 ;; full) CUT=1 SAMPLE=20 SYNCS=40 ;;
*) echo "usage: repair.sh quick|full" >&2; exit 2 ;; esac
for t in r4pack r4fsck r4debugfs r4manifest; do
	command -v $t >/dev/null 2>&1 || { echo "repair.sh: $t not on PATH" >&2; exit 2; }
done
export SOURCE_DATE_EPOCH=1700000000
unset R4_FAULT R4_FAULT_REPORT R4_FAULT_SYNCS
HAVE_FSCK=0
command -v fsck.reiser4 >/dev/null 2>&1 && HAVE_FSCK=1
W=$(mktemp -d "${TMPDIR:-/tmp}/repaircrash.XXXXXX") || exit 2
trap 'rm -rf "$W"' EXIT

. "$(dirname "$0")/../surgery.sh"

# ---- the damaged image ----
s=$W/src
mkdir -p "$s/d/e" "$s/many"
for i in $(seq 1 30); do head -c $((i * 397)) /dev/urandom >"$s/f$i"; done
head -c 60000 /dev/urandom >"$s/d/large"
for i in $(seq 1 200); do echo $i >"$s/many/n$i"; done
echo leaf >"$s/d/e/leaf"
if [ "$SCEN" = twice ]; then
	for i in 1 2 3 4 5 6; do head -c $((16384 + i * 4096)) /dev/urandom >"$s/x$i"; done
fi
ln "$s/f1" "$s/d/hard"
find "$s" -exec touch -h -d @1600000000 {} +
if [ "$SCEN" = treefull ]; then
	r4pack create -q --size auto --free 0 "$s" "$W/good.img" || exit 2
else
	r4pack create -q "$s" "$W/good.img" || exit 2
fi
D=$W/damaged.img
cp "$W/good.img" "$D"
if [ "$SCEN" = semantic ]; then
poke "$D" $((17 * 4096 + 8)) 1000 8				# free count
b=$(sd_off "$D" /f1); poke "$D" $((b + 4)) 7 4			# nlink
b=$(sd_off "$D" /f2); poke "$D" $((b + 8)) 99999 8		# size past body
b=$(sd_off "$D" /d);  poke "$D" $((b + 8)) 40 8			# dir size
b=$(entry_off "$D" / f9); poke "$D" $((b + 16)) $((0x99999)) 8	# lost entry
b=$(entry_off "$D" / d); poke "$D" $((b + 16)) $((0x99998)) 8	# lost subtree
off=$((18 * 4096 + 4 + 3000 / 8)); poke "$D" $off 255 1	# leaked blocks
elif [ "$SCEN" = twice ]; then
# unit NAME: "twig offset start" of the first extent unit of file NAME
unit() {
	r4debugfs -R "print file /$1" "$D" | awk '
		/^block [0-9]+ \(level 2\), #[0-9]+ extent40/ {
			b = $2; for (i = 1; i < NF; i++) if ($i == "offset") o = $(i + 1); next }
		b != "" && / start [0-9]+ width / { print b, o, $3; exit }'
}
read -r t1 o1 s1 <<<"$(unit x1)"; read -r t2 o2 s2 <<<"$(unit x2)"
read -r t3 o3 s3 <<<"$(unit x3)"; read -r t4 o4 s4 <<<"$(unit x4)"
read -r t5 o5 s5 <<<"$(unit x5)"; read -r t6 o6 s6 <<<"$(unit x6)"
[ -n "$s6" ] || { echo "repair.sh: no extents found" >&2; exit 2; }
leaf=$(r4debugfs --json -R "stat /d" "$D" | sed -n 's/.*"sd_block":\([0-9]*\).*/\1/p')
poke "$D" $((t2 * 4096 + o2)) "$s1" 8		# x2 and x3 onto x1's blocks
poke "$D" $((t3 * 4096 + o3)) "$s1" 8
poke "$D" $((t4 * 4096 + o4)) "$leaf" 8		# x4 onto a leaf
poke "$D" $((t6 * 4096 + o6)) "$s5" 8		# x6 onto x5's blocks
elif [ "$SCEN" = keys ]; then
# sd_ih PATH: the offset of PATH's stat data item header.
sd_ih() {
	local js
	js=$(r4debugfs --json -R "stat $1" "$D")
	echo $(( $(sed -n 's/.*"sd_block":\([0-9]*\).*/\1/p' <<<"$js") * 4096 + 4096 -
		 ($(sed -n 's/.*"sd_item":\([0-9]*\).*/\1/p' <<<"$js") + 1) * 38 ))
}
oid=$(r4debugfs --json -R "stat /f5" "$D" | sed -n 's/.*"oid":\([0-9]*\).*/\1/p')
poke "$D" $((17 * 4096 + 24)) "$oid" 8				# next oid back:
r4debugfs -w -R "write $s/f6 /zz" "$D" >/dev/null || exit 2	# /zz gets f5's id
b=$(sd_ih /f3); poke "$D" $((b + 16)) $((0x20000)) 8		# f3's sd oid
b=$(sd_ih /f4); v=$(peek "$D" $((b + 8)) 1); poke "$D" $((b + 8)) $((v ^ 1)) 1	# f4's ordering
b=$(entry_off "$D" / f9); poke "$D" $((b + 16)) $((0x99999)) 8	# f9's entry oid
elif [ "$SCEN" = preopen ]; then
poke "$D" $((16 * 4096 + 3)) 0 1				# master magic
poke "$D" $((19 * 4096)) $((0xFFFFFF)) 8			# journal header
poke "$D" $((17 * 4096 + 8)) 1000 8				# free count
blocks=$(peek "$D" $((17 * 4096)) 8)
truncate -s $(((blocks - 40) * 4096)) "$D"			# cut short
elif [ "$SCEN" = treefull ]; then
b=$(r4debugfs --json -R "stat /many/n100" "$D" | sed -n 's/.*"sd_block":\([0-9]*\).*/\1/p')
dd if=/dev/zero of="$D" bs=4096 seek="$b" count=1 conv=notrunc status=none
else
b=$(r4debugfs --json -R "stat /many/n100" "$D" | sed -n 's/.*"sd_block":\([0-9]*\).*/\1/p')
dd if=/dev/zero of="$D" bs=4096 seek="$b" count=1 conv=notrunc status=none
root=$(peek "$D" $((17 * 4096 + 16)) 8)
child=$(peek "$D" $((root * 4096 + 28)) 8)
[ "$(peek "$D" $((17 * 4096 + 68)) 2)" -ge 3 ] && poke "$D" $((child * 4096 + 28)) "$root" 8
fi
r4fsck -n "$D" >/dev/null 2>&1
[ $? -eq 4 ] || { echo "repair.sh: the damage was not found" >&2; exit 2; }

# ---- the uncut repair ----
cp "$D" "$W/after.img"
rm -f "$W/report" "$W/syncs"
R4_FAULT=count R4_FAULT_REPORT=$W/report R4_FAULT_SYNCS=$W/syncs r4fsck -y --batch 2 "$W/after.img" >"$W/out" 2>&1
rc=$?
[ $rc -eq 1 ] || { echo "repair.sh: the uncut repair exited $rc:" >&2; cat "$W/out" >&2; exit 2; }
if [ "$SCEN" = treefull ] && ! grep -q "mended in place" "$W/out"; then
	echo "repair.sh: the uncut repair did not mend the tree in place:" >&2; cat "$W/out" >&2; exit 2
fi
if [ "$SCEN" = preopen ]; then
	for f in master truncated journal free-count; do
		grep -q "^fixed ($f)" "$W/out" ||
			{ echo "repair.sh: the uncut repair did not fix $f:" >&2; cat "$W/out" >&2; exit 2; }
	done
fi
N=$(awk -F'[= ]' '{ s += $2 } END { print s }' "$W/report")
cp "$D" "$W/tx.img"
r4fsck -y --batch 2 --json "$W/tx.img" >"$W/tx.json"
TX=$(sed -n 's/.*,"transactions":\([0-9]*\),.*/\1/p' "$W/tx.json")
# a run that asks for the new nodes in the temporary file must put some
# there, or its cut points would only repeat the plain run's
if [ -n "${R4_REBUILD_SPILL_BYTES:-}" ] && [ "$SCEN" = tree ] &&
	! grep -q '"nodes_spilled":[1-9]' "$W/tx.json"; then
	echo "repair.sh: R4_REBUILD_SPILL_BYTES set, but the rebuild put no node in its temporary file" >&2; exit 2
fi
if [ "$SCEN" = twice ] && ! grep -q '"blocks_copied":[1-9]' "$W/tx.json"; then
	echo "repair.sh: the repair copied no block claimed twice" >&2; exit 2
fi
r4fsck -n "$W/after.img" >/dev/null || { echo "repair.sh: the uncut repair is not clean" >&2; exit 2; }
r4manifest "$W/after.img" >"$W/after.man" || exit 2

TOTAL=0 FAILED=0 AGREED=0
point() {
	local mode=$1 k=$2 rc
	TOTAL=$((TOTAL + 1))
	cp "$D" "$W/cut.img"
	R4_FAULT=$mode=$k r4fsck -y --batch 2 "$W/cut.img" >"$W/out" 2>&1
	rc=$?
	if [ $rc -gt 128 ] || grep -q 'runtime error:\|AddressSanitizer' "$W/out"; then
		echo "repair.sh: $mode=$k: the cut repair crashed ($rc)" >&2
		FAILED=$((FAILED + 1)); return
	fi
	r4fsck -y --batch 2 "$W/cut.img" >"$W/out2" 2>&1
	rc=$?
	if [ $rc -gt 1 ]; then
		echo "repair.sh: $mode=$k: the rerun exited $rc:" >&2
		tail -n 5 "$W/out2" >&2
		FAILED=$((FAILED + 1)); return
	fi
	if ! r4fsck -n "$W/cut.img" >"$W/out3" 2>&1; then
		echo "repair.sh: $mode=$k: not clean after the rerun:" >&2
		tail -n 5 "$W/out3" >&2
		FAILED=$((FAILED + 1)); return
	fi
	r4manifest "$W/cut.img" >"$W/cut.man" 2>/dev/null
	if ! cmp -s "$W/cut.man" "$W/after.man"; then
		echo "repair.sh: $mode=$k: the content differs from the uncut repair's:" >&2
		diff "$W/after.man" "$W/cut.man" | head -n 6 >&2
		FAILED=$((FAILED + 1)); return
	fi
	if [ "$HAVE_FSCK" = 1 ] && [ $((TOTAL % 10)) -eq 0 ]; then
		if fsck.reiser4 --check -f -y "$W/cut.img" 2>&1 | grep -q "FS is consistent"; then
			AGREED=$((AGREED + 1))
		else
			echo "repair.sh: $mode=$k: fsck.reiser4 disagrees" >&2
			FAILED=$((FAILED + 1))
		fi
	fi
}

[ "$QUICK_TREE" = 1 ] && CUT=10
# The copies of blocks claimed twice, the key moves: every write, in
# both modes.
[ "$SCEN" = twice ] || [ "$SCEN" = keys ] || [ "$SCEN" = preopen ] && CUT=1
# Full: every 3rd write of the rebuild (it writes a whole new tree).
[ "$LEVEL" = full ] && [ "$SCEN" = tree ] && CUT=3
# The mend in place: its transaction (the first writes) cut at every
# write, the object passes after it at every 7th.
# R4_CRASH_THIN=M (the sanitizer pass of .ci/run; make crashcheck runs
# the full loops with the plain build): quick cuts every M-th point of
# its own.
THIN=1
[ "$LEVEL" = quick ] && THIN=$THIN_ASKED
[ "$SCEN" = treefull ] && for k in $(seq 1 "$THIN" 40); do point cut-after "$k"; done
[ "$SCEN" = treefull ] && CUT=7 && set -- 41 || set -- 1
CUT=$((CUT * THIN))
for k in $(seq "$1" "$CUT" "$N"); do point cut-after "$k"; done
for k in $(awk -v n="$N" -v s="$SAMPLE" 'BEGIN { for (i = 0; i < s; i++) print 1 + int(i * (n - 1) / (s > 1 ? s - 1 : 1)) }' | uniq); do
	point torn-write "$k"
	point drop-unsynced "$k"
done
# keep-subset at the last write before SYNCS of the syncs, spread over
# them: keep that write only, then a random subset (seed 1) too
# (windows of two writes or more, tests/crash/syncpts.awk; the subset
# where two or more are held)
[ -s "$W/syncs" ] || { echo "repair.sh: the repair wrote no sync points (R4_FAULT_SYNCS)" >&2; exit 2; }
for kh in $(awk -v k="$SYNCS" -f "$(dirname "$0")/syncpts.awk" "$W/syncs" | tr ' ' ':'); do
	point keep-subset "${kh%%:*}"
	[ "${kh#*:}" -ge 2 ] && point keep-subset "${kh%%:*}:1"
done
if [ "$FAILED" -eq 0 ]; then
	echo "repair crash ($SCEN): $TOTAL cut points of a repair of $N writes in $TX transactions, all finished by a rerun, fsck.reiser4 agreed at $AGREED"
	exit 0
fi
echo "repair crash ($SCEN): $TOTAL cut points, $FAILED FAILED, fsck.reiser4 agreed at $AGREED"
exit 1
