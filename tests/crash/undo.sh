#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# undo.sh quick|full: crash tests of r4fsck --undo (one step through the
# journal, libimage/txn/restore.c). A populated image is damaged as in
# repair.sh's "semantic" scenario plus a backup copy, repaired by
# r4fsck -y --batch 2 -z (several transactions: super blocks, bitmaps,
# nodes, the journal blocks and the repair's log all in the undo file),
# and the --undo of that repair is cut at every write (quick: every 4th)
# and at samples of torn and unsynced writes, and keep-subset at the
# last write before each of its syncs (that write lands, the unsynced
# ones before it are lost, or a random subset of them). At each point:
#   1. r4fsck -n finds the problems of the repaired volume (none) or
#      exactly those of the damaged one (reading through the journal);
#   2. fsck.reiser4 on a copy (every point; it replays a pending
#      transaction itself): after its replay every block the repair
#      changed (but the format40 super block, whose counters it
#      rewrites) holds the repaired bytes or every one the old bytes,
#      and the content is that state's;
#   3. r4fsck without a mode replays; then every such block is
#      repaired or every one old ("repaired" / "undone"), the problems
#      and the counters r4fsck -n finds are that state's, the manifest
#      is that state's, and fsck.reiser4 says what it says of that
#      state;
#   4. a rerun of --undo ends with the image byte for byte as it was
#      before the repair.
# Last line: "undo crash: N cut points of an undo of W writes, R
# repaired, U undone, fsck.reiser4 agreed at M". Exit 0, 1 when a
# point failed, 2 on error.
set -u

LEVEL=${1:-quick}
case $LEVEL in quick) STEP=4 SAMPLE=3 ;; full) STEP=1 SAMPLE=12 ;;
*) echo "usage: undo.sh quick|full" >&2; exit 2 ;; esac
for t in r4pack r4fsck r4debugfs r4manifest; do
	command -v $t >/dev/null 2>&1 || { echo "undo.sh: $t not on PATH" >&2; exit 2; }
done
export SOURCE_DATE_EPOCH=1700000000
unset R4_FAULT R4_FAULT_REPORT R4_FAULT_SYNCS
HAVE_FSCK=0
command -v fsck.reiser4 >/dev/null 2>&1 && HAVE_FSCK=1
W=$(mktemp -d "${TMPDIR:-/tmp}/undocrash.XXXXXX") || exit 2
trap 'rm -rf "$W"' EXIT

. "$(dirname "$0")/../surgery.sh"

# ---- the damaged image (O), its repair (C) and the undo file ----
s=$W/src
mkdir -p "$s/d/e" "$s/many"
for i in $(seq 1 30); do head -c $((i * 397)) /dev/urandom >"$s/f$i"; done
head -c 60000 /dev/urandom >"$s/d/large"
for i in $(seq 1 200); do echo $i >"$s/many/n$i"; done
echo leaf >"$s/d/e/leaf"
ln "$s/f1" "$s/d/hard"
find "$s" -exec touch -h -d @1600000000 {} +
r4pack create -q "$s" "$W/old.img" || exit 2
O=$W/old.img
poke "$O" $((17 * 4096 + 8)) 1000 8				# free count
b=$(sd_off "$O" /f1); poke "$O" $((b + 4)) 7 4			# nlink
b=$(sd_off "$O" /f2); poke "$O" $((b + 8)) 99999 8		# size past body
b=$(sd_off "$O" /d);  poke "$O" $((b + 8)) 40 8			# dir size
b=$(entry_off "$O" / f9); poke "$O" $((b + 16)) $((0x99999)) 8	# lost entry
off=$((18 * 4096 + 4 + 3000 / 8)); poke "$O" $off 255 1	# leaked blocks
printf 'two' | dd of="$O" bs=1 seek=$((22 * 4096 + 1 + 36)) conv=notrunc status=none
C=$W/repaired.img
cp "$O" "$C"
r4fsck -y --batch 2 -z "$W/good.undo" "$C" >"$W/out" 2>&1
[ $? -eq 1 ] || { echo "undo.sh: the repair exited otherwise:" >&2; cat "$W/out" >&2; exit 2; }
r4fsck -n "$C" >/dev/null 2>&1 || { echo "undo.sh: the repair left problems" >&2; exit 2; }

# problems IMAGE: what r4fsck -n finds (counters included), without the
# summary and the note of a transaction still to replay. The damaged
# volume's footer names no transaction (last_flushed_tx 0), so a mount
# takes the super block's counters; once the --undo's transaction is
# replayed the footer names it and carries those same counters, and
# r4fsck reports a wrong count there too: such a footer line is dropped
# when the super block's line reports the same count.
problems() {
	r4fsck -n "$1" 2>&1 | grep '^block ' | grep -v 'committed transaction' |
		awk '{ l[NR] = $0 }
		     /^block 17: .* count is [0-9]+,/ { match($0, /count is [0-9]+/)
			sb[substr($0, RSTART, RLENGTH)] = 1 }
		     END { for (i = 1; i <= NR; i++) {
			if (l[i] ~ /^block 20: journal footer .* count is [0-9]+,/) {
				match(l[i], /count is [0-9]+/)
				if (substr(l[i], RSTART, RLENGTH) in sb) continue
			}
			print l[i] } }'
}
problems "$O" >"$W/p.undone"
problems "$C" >"$W/p.repaired"
[ -s "$W/p.undone" ] && [ ! -s "$W/p.repaired" ] ||
	{ echo "undo.sh: the damage was not found" >&2; exit 2; }
# (r4manifest exits 1 on an object it cannot read: the damaged entry)
r4manifest "$O" >"$W/m.undone" 2>/dev/null
[ $? -le 1 ] || { echo "undo.sh: no manifest of the damaged image" >&2; exit 2; }
r4manifest "$C" >"$W/m.repaired" 2>/dev/null || exit 2
cmp -s "$W/m.undone" "$W/m.repaired" &&
	{ echo "undo.sh: the repair changed no content" >&2; exit 2; }
# The blocks the repair changed, but the journal header and footer.
D=$(cmp -l "$O" "$C" | awk '{ b = int(($1 - 1) / 4096)
	if (b != 19 && b != 20 && !s[b]++) print b }')
# fsck.reiser4's exit status on each state (a copy: it writes)
fsck_rc() {
	cp "$1" "$W/f.img"
	fsck.reiser4 --check -f -y "$W/f.img" >"$W/fsck.out" 2>&1
	echo $?
}
if [ "$HAVE_FSCK" = 1 ]; then
	F_UNDONE=$(fsck_rc "$O")
	F_REPAIRED=$(fsck_rc "$C")
fi

# side IMAGE [SKIP]: repaired, undone or mixed, by the blocks of D (but
# block SKIP).
side() {
	local b nr=0 nu=0 odd= r u n=0
	for b in $D; do
		[ "$b" = "${2:-}" ] && continue
		n=$((n + 1))
		cmp -s -n 4096 -i $((b * 4096)) "$1" "$C" && r=1 || r=0
		cmp -s -n 4096 -i $((b * 4096)) "$1" "$O" && u=1 || u=0
		nr=$((nr + r)) nu=$((nu + u))
		[ $((r + u)) -eq 0 ] && odd+=" $b"
	done
	if [ "$nr" -eq "$n" ]; then echo repaired
	elif [ "$nu" -eq "$n" ]; then echo undone
	else echo "mixed ($nr of $n blocks repaired, $nu undone; neither:$odd)"
	fi
}

# The uncut --undo: its writes, and the image back byte for byte.
cp "$C" "$W/cut.img"
cp "$W/good.undo" "$W/u.bin"
rm -f "$W/report" "$W/syncs"
R4_FAULT=count R4_FAULT_REPORT=$W/report R4_FAULT_SYNCS=$W/syncs r4fsck --undo "$W/u.bin" "$W/cut.img" >"$W/out" 2>&1 ||
	{ echo "undo.sh: the uncut --undo failed:" >&2; cat "$W/out" >&2; exit 2; }
grep -q 'as one step through the journal' "$W/out" ||
	{ echo "undo.sh: the --undo was not one step:" >&2; cat "$W/out" >&2; exit 2; }
cmp -s "$W/cut.img" "$O" || { echo "undo.sh: the uncut --undo is not byte-exact" >&2; exit 2; }
N=$(awk -F'[= ]' '$1 == "writes" { s += $2 } END { print s + 0 }' "$W/report")
[ "$N" -ge 2 ] || { echo "undo.sh: the fault layer counted no writes" >&2; exit 2; }

TOTAL=0 FAILED=0 AGREED=0 NR=0 NU=0
fail() {
	echo "undo.sh: $1: $2" >&2
	FAILED=$((FAILED + 1))
}
point() {
	local p="$1=$2" rc st fst want
	TOTAL=$((TOTAL + 1))
	cp "$C" "$W/cut.img"
	cp "$W/good.undo" "$W/u.bin"
	R4_FAULT=$p r4fsck --undo "$W/u.bin" "$W/cut.img" >"$W/out" 2>&1
	rc=$?
	if [ $rc -gt 128 ] || grep -q 'runtime error:\|AddressSanitizer' "$W/out"; then
		fail "$p" "the cut --undo crashed ($rc)"; return
	fi
	# 1. -n, through the journal
	problems "$W/cut.img" >"$W/p.cut"
	cmp -s "$W/p.cut" "$W/p.repaired" || cmp -s "$W/p.cut" "$W/p.undone" ||
		{ fail "$p" "r4fsck -n finds other problems: $(head -n 2 "$W/p.cut" | tr '\n' ' ')"; return; }
	# 2. fsck.reiser4's own replay, on a copy (it rewrites the
	# format40 super block's counters itself: block 17 is left out,
	# the content is compared instead)
	if [ "$HAVE_FSCK" = 1 ]; then
		cp "$W/cut.img" "$W/o.img"
		fsck.reiser4 --check -f -y "$W/o.img" >"$W/fsck.out" 2>&1
		st=$(side "$W/o.img" 17)
		case $st in repaired|undone) ;;
		*) fail "$p" "after fsck.reiser4's replay: $st"; return ;; esac
		r4manifest "$W/o.img" 2>/dev/null | cmp -s - "$W/m.$st" ||
			{ fail "$p" "after fsck.reiser4's replay the content is not $st"; return; }
	fi
	# 3. r4fsck's replay, then the state
	r4fsck "$W/cut.img" >"$W/out2" 2>&1
	rc=$?
	[ $rc -le 4 ] || { fail "$p" "r4fsck (replay) exit $rc: $(tail -n 1 "$W/out2")"; return; }
	st=$(side "$W/cut.img")
	case $st in
	repaired) NR=$((NR + 1)) ;;
	undone) NU=$((NU + 1)) ;;
	*) fail "$p" "$st"; return ;;
	esac
	problems "$W/cut.img" | cmp -s - "$W/p.$st" ||
		{ fail "$p" "$st, but r4fsck -n finds other problems"; return; }
	r4manifest "$W/cut.img" 2>/dev/null | cmp -s - "$W/m.$st" ||
		{ fail "$p" "$st, but the content differs"; return; }
	if [ "$HAVE_FSCK" = 1 ]; then
		fst=$(fsck_rc "$W/cut.img")
		want=$F_UNDONE
		[ "$st" = repaired ] && want=$F_REPAIRED
		if [ "$fst" = "$want" ]; then
			AGREED=$((AGREED + 1))
		else
			fail "$p" "$st, but fsck.reiser4 exits $fst: $(grep -v '^$' "$W/fsck.out" | tail -n 2 | tr '\n' ' ')"
			return
		fi
	fi
	# 4. a rerun finishes, byte for byte
	r4fsck --undo "$W/u.bin" "$W/cut.img" >"$W/out3" 2>&1 ||
		{ fail "$p" "the rerun of --undo: $(tail -n 1 "$W/out3")"; return; }
	cmp -s "$W/cut.img" "$O" || fail "$p" "after the rerun the image differs from the old one"
}

for k in $(seq 1 "$STEP" "$N"); do point cut-after "$k"; done
for k in $(awk -v n="$N" -v s="$SAMPLE" 'BEGIN { for (i = 0; i < s; i++) print 1 + int(i * (n - 1) / (s > 1 ? s - 1 : 1)) }' | uniq); do
	point torn-write "$k"
	point drop-unsynced "$k"
done
# (windows of two writes or more, tests/crash/syncpts.awk; the subset
# where two or more are held)
[ -s "$W/syncs" ] || { echo "undo.sh: the undo wrote no sync points (R4_FAULT_SYNCS)" >&2; exit 2; }
for kh in $(awk -f "$(dirname "$0")/syncpts.awk" "$W/syncs" | tr ' ' ':'); do
	point keep-subset "${kh%%:*}"
	[ "${kh#*:}" -ge 2 ] && point keep-subset "${kh%%:*}:1"
done
if [ "$FAILED" -eq 0 ]; then
	echo "undo crash: $TOTAL cut points of an undo of $N writes, $NR repaired, $NU undone, fsck.reiser4 agreed at $AGREED"
	exit 0
fi
echo "undo crash: $TOTAL cut points, $FAILED FAILED ($NR repaired, $NU undone), fsck.reiser4 agreed at $AGREED"
exit 1
