#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# crashtest.sh: cut a workload that changes an image at every (or a
# sample of) write and check that each cut image, once replayed, is
# exactly the image before or exactly the image after the workload.
#
#   crashtest.sh [OPTIONS] PRISTINE -- CMD ARGS...   (@IMG@ = the image)
#
# Options:
#   --name NAME        label for the summary line
#   --cut all|every=K|sample=S   cut points of cut-after (default all)
#   --torn SPEC        the same for torn-write (default sample=8)
#   --drop SPEC        the same for drop-unsynced (default sample=8)
#   --fail SPEC        the same for fail-write (default none)
#   --reorder SPEC     the same for keep-subset, or syncs=K: the last
#                      write before K of the workload's syncs, spread
#                      over them (default syncs=6); at each point the
#                      cut write lands and the writes issued since the
#                      last sync before it are lost
#   --seeds M          and at each --reorder point M more runs that keep
#                      a random subset of them, seeds 1..M (default 1)
#   --tail K           also cut after each of the last K writes (the
#                      commit, the writes home, the footer)
#   --oracle every=K|none   also run fsck.reiser4 on a copy of the cut
#                      image at every K-th cut point and at the points
#                      that left a transaction to replay (default
#                      every=10)
#   --pending every=J  of the points that left a transaction to replay,
#                      fsck.reiser4 at every J-th (default every=1: all)
#   --keep DIR         keep the images of a failing point in DIR
#   --damaged          PRISTINE is damaged on purpose (a wrong bitmap
#                      bit): a point whose content is before may show
#                      exactly the problems r4fsck --check finds in
#                      PRISTINE (and fsck.reiser4 is not asked there);
#                      a point that is after must be clean
#   --same             the workload keeps the content (r4repacker):
#                      before and after are the same manifest
#   --own-reader       manifests by r4manifest even when r4ref exists
#                      (compressed files, which libreiser4 cannot read)
#   --sizes OLD,NEW    the workload resizes (r4resize; implies --same):
#                      after the replay the volume must have exactly OLD
#                      or NEW blocks, which counts as before or after
#
# The workload must be a test build that reads R4_FAULT (tests/crash/bin,
# tests/helpers/fault_env.c); the installed commands ignore it.
# For each point: copy PRISTINE, run the workload with R4_FAULT=MODE=k
# (its exit status is ignored, but death by a signal fails), then
#   1. (oracle points) fsck.reiser4 --check -f -y on a copy, which must
#      say "FS is consistent", and the manifest of that copy must equal
#      the one before or after (with a replay pending: see oracle_point);
#   2. r4fsck (replays the journal): exit 0 or 1, not 4 or more;
#   3. r4fsck --check: exit 0;
#   4. the manifest (r4ref manifest, or r4manifest without the oracle)
#      equals the manifest of PRISTINE or of an uncut run.
# The last line is the summary:
#   NAME: N cut points, all before/after (B before, A after), fsck.reiser4
#   agreed at M
# Exit 0 when every point passed, 1 when one failed, 2 on bad usage or
# when the uncut run itself fails.
set -u

# R4_CRASH_THIN (below), refused before any work when it is not 1-99
THIN=${R4_CRASH_THIN:-1}
case $THIN in [1-9]|[1-9][0-9]) ;; *) echo "crashtest: bad R4_CRASH_THIN '$THIN'" >&2; exit 2 ;; esac

NAME=workload CUT=all TORN=sample=8 DROP=sample=8 FAIL=none
REORDER=syncs=6 SEEDS=1
ORACLE=every=10 PENDING_SPEC=every=1 KEEP= TAIL=0 DAMAGED=0 SAME=0 OWNREAD=0
SIZES=
while [ $# -gt 0 ]; do
	case $1 in
	--name) NAME=$2; shift 2 ;;
	--cut) CUT=$2; shift 2 ;;
	--torn) TORN=$2; shift 2 ;;
	--drop) DROP=$2; shift 2 ;;
	--fail) FAIL=$2; shift 2 ;;
	--reorder) REORDER=$2; shift 2 ;;
	--seeds) SEEDS=$2; shift 2 ;;
	--oracle) ORACLE=$2; shift 2 ;;
	--pending) PENDING_SPEC=$2; shift 2 ;;
	--keep) KEEP=$2; shift 2 ;;
	--tail) TAIL=$2; shift 2 ;;
	--damaged) DAMAGED=1; shift ;;
	--same) SAME=1; shift ;;
	--own-reader) OWNREAD=1; shift ;;
	--sizes) SIZES=$2; SAME=1; shift 2 ;;
	--) shift; break ;;
	-*) echo "crashtest: unknown option $1" >&2; exit 2 ;;
	*) PRISTINE=$1; shift ;;
	esac
done
if [ -z "${PRISTINE:-}" ] || [ $# -eq 0 ]; then
	echo "usage: crashtest.sh [OPTIONS] PRISTINE -- CMD ARGS... " \
	     "(@IMG@ = image)" >&2
	exit 2
fi
WORKLOAD=("$@")

# The same "now" in every run, so that an uncut run and a cut one stamp
# the same times.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1700000000}
unset R4_FAULT R4_FAULT_REPORT R4_FAULT_SYNCS
case $SEEDS in [0-9]|[1-9][0-9]) ;; *) echo "crashtest: bad --seeds '$SEEDS'" >&2; exit 2 ;; esac

if [ "$OWNREAD" = 0 ] && command -v r4ref >/dev/null 2>&1; then
	MANIFEST=(r4ref manifest)
	MANIFEST_N=(r4ref manifest -n)	# no check of its own first
else
	MANIFEST=(r4manifest)
	MANIFEST_N=(r4manifest)
fi
HAVE_FSCK=0
command -v fsck.reiser4 >/dev/null 2>&1 && HAVE_FSCK=1

W=$(mktemp -d "${TMPDIR:-/tmp}/crashtest.XXXXXX") || exit 2
trap 'rm -rf "$W"' EXIT

# Run the workload on image $1 with R4_FAULT=$2 ("" = none); with
# R4_FAULT=count, the number of writes the device saw goes to
# $W/writes. Returns the workload's exit status. (Each point forks as
# few processes as it can: they are most of a point's cost.)
run_workload() {
	local img=$1 fault=$2 args=() a rc
	for a in "${WORKLOAD[@]}"; do
		args+=("${a//@IMG@/$img}")
	done
	if [ "$fault" = count ]; then
		rm -f "$W/report" "$W/syncs"
		R4_FAULT=$fault R4_FAULT_REPORT=$W/report \
			R4_FAULT_SYNCS=$W/syncs \
			"${args[@]}" >"$W/out" 2>&1 </dev/null
		rc=$?
		# the writes of every device the workload opened: the fault
		# layer counts them together (a workload that opens the
		# image several times is cut at its N-th write overall)
		a=
		[ -f "$W/report" ] &&
			a=$(awk -F'[= ]' '$1 == "writes" { s += $2; n++ }
				END { if (n) print s }' "$W/report")
		echo "$a" >"$W/writes"
		# syncs counted but none written down (R4_FAULT_SYNCS lost
		# on the way): the keep-subset points would vanish unseen
		if [ -f "$W/report" ] && [ ! -s "$W/syncs" ] &&
		   awk -F'[= ]' '$3 == "syncs" && $4 > 0 { f = 1 } END { exit !f }' "$W/report"; then
			echo "crashtest: $NAME: the workload synced but wrote no sync points (R4_FAULT_SYNCS)" >&2
			: >"$W/writes"
		fi
		return $rc
	fi
	R4_FAULT=$fault "${args[@]}" >"$W/out" 2>&1 </dev/null
}

# A sanitizer report in a log fails the point even when the exit status
# is one a cut workload may have (an empty log has none).
sanitized() {
	[ -s "$1" ] &&
		grep -q 'ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error:' "$1"
}

manifest() {
	"${MANIFEST[@]}" "$1" >"$2" 2>"$W/manifest.err"
}

# ---- before and after ----------------------------------------------------

# The problems of a damaged PRISTINE, without the summary line and the
# line that says how to repair (both name the image).
problems() {
	r4fsck --check "$1" 2>&1 |
		grep -v ': no problems found\|problems* found\|: to repair it: '
}
if [ "$DAMAGED" = 1 ]; then
	problems "$PRISTINE" >"$W/known"
	if [ ! -s "$W/known" ]; then
		echo "crashtest: $NAME: --damaged, but r4fsck finds $PRISTINE clean" >&2
		exit 2
	fi
fi

manifest "$PRISTINE" "$W/before" || {
	echo "crashtest: $NAME: cannot read the manifest of $PRISTINE" >&2
	cat "$W/manifest.err" >&2
	exit 2
}
cp "$PRISTINE" "$W/after.img"
if ! run_workload "$W/after.img" count; then
	echo "crashtest: $NAME: the uncut workload failed:" >&2
	cat "$W/out" >&2
	exit 2
fi
N=$(cat "$W/writes")
if [ -z "$N" ] || [ "$N" -lt 1 ]; then
	echo "crashtest: $NAME: the fault layer counted no writes (only" \
	     "the test builds in tests/crash/bin read R4_FAULT and" \
	     "R4_FAULT_REPORT; the installed commands ignore them)" >&2
	exit 2
fi
manifest "$W/after.img" "$W/after" || {
	echo "crashtest: $NAME: cannot read the manifest after the workload" >&2
	exit 2
}
if [ "$SAME" -eq 0 ] && cmp -s "$W/before" "$W/after"; then
	echo "crashtest: $NAME: the workload changed nothing" >&2
	exit 2
fi

# R4_CRASH_THIN=M (set by the sanitizer pass of .ci/run, where the same
# loops run in full with the plain build in make crashcheck): the cut
# points are every M-th of those asked for, the last write still cut;
# torn, dropped and failed writes keep their samples.
if [ "$THIN" -gt 1 ]; then
	case $CUT in
	all) CUT=every=$THIN ;;
	every=*) CUT=every=$((${CUT#every=} * THIN)) ;;
	sample=*) CUT=sample=$(( (${CUT#sample=} + THIN - 1) / THIN ))
		  [ "${CUT#sample=}" -lt 2 ] && CUT=sample=2 ;;
	esac
fi

# ---- the points ---------------------------------------------------------

# Print the points of a spec over 1..N.
points() {
	local spec=$1 k step
	case $spec in
	none) ;;
	syncs=[1-9]*) k=${spec#syncs=}
		# the last write before K of the syncs whose window holds
		# two writes or more (tests/crash/syncpts.awk)
		awk -v k="$k" -f "$(dirname "$0")/syncpts.awk" "$W/syncs" \
			>"$W/syncpts"
		cut -d ' ' -f 1 "$W/syncpts" ;;
	all) seq 1 "$N" ;;
	every=*) step=${spec#every=}; seq 1 "$step" "$N"
		 [ $(( (N - 1) % step )) -ne 0 ] && echo "$N" ;;
	sample=*) k=${spec#sample=}
		  if [ "$k" -ge "$N" ]; then seq 1 "$N"
		  else awk -v n="$N" -v k="$k" 'BEGIN {
			for (i = 0; i < k; i++) print 1 + int(i * (n - 1) / (k - 1 > 0 ? k - 1 : 1)) }' | uniq
		  fi ;;
	*) echo "crashtest: bad point spec '$spec'" >&2; exit 2 ;;
	esac
}

PENDING_STEP=1
case $PENDING_SPEC in
every=[1-9]*) PENDING_STEP=${PENDING_SPEC#every=} ;;
*) echo "crashtest: bad --pending '$PENDING_SPEC'" >&2; exit 2 ;;
esac
ORACLE_STEP=0
case $ORACLE in
none) ;;
every=*) ORACLE_STEP=${ORACLE#every=} ;;
*) echo "crashtest: bad --oracle '$ORACLE'" >&2; exit 2 ;;
esac
[ "$HAVE_FSCK" = 1 ] || ORACLE_STEP=0

TOTAL=0 NB=0 NA=0 AGREED=0 FAILED=0 SEEN=0 PENDING=0 NPENDING=0

fail_point() {
	FAILED=$((FAILED + 1))
	echo "crashtest: $NAME: $1=$2: $3" >&2
	if [ -n "$KEEP" ]; then
		mkdir -p "$KEEP"
		cp "$W/cut.img" "$KEEP/$NAME-$1-$2.img" 2>/dev/null
		cp "$W/out" "$KEEP/$NAME-$1-$2.log" 2>/dev/null
	fi
}

# Which manifest file $1 equals: prints before, after or nothing.
which_state() {
	local STATE
	state_of "$1"
	echo "$STATE"
}

# The same into STATE, without a subshell.
state_of() {
	STATE=
	if cmp -s "$1" "$W/before"; then STATE=before
	elif [ "$SAME" -eq 0 ] && cmp -s "$1" "$W/after"; then STATE=after
	fi
}

# 0 when the image has a committed transaction not yet written home.
pending_replay() {
	r4debugfs -R 'print journal' "$1" 2>/dev/null |
		grep -q '^transactions to replay'
}

# fsck.reiser4 --check -f -y on image $1 must say consistent.
oracle_fsck() {
	fsck.reiser4 --check -f -y "$1" >"$W/fsck.out" 2>&1
	grep -q 'FS is consistent' "$W/fsck.out" && return 0
	echo "$(grep -v '^$' "$W/fsck.out" | grep -v '^\*\*\*\*\*\|Closing fs' | tail -n 2 | tr '\n' ' ')"
	return 1
}

# fsck.reiser4 on a copy of the cut image, before we touch it. When a
# transaction waits for replay, fsck.reiser4 1.2.2 replays it itself but
# keeps the bitmap and the super block counters it read before the
# replay (it opens the allocator before the journal, and applies the
# footer's counters before it updates the footer), so it reports the
# bitmap and the free count as wrong whatever the journal held. There
# the content of its replay must still be before or after, and
# fsck.reiser4 must find the image consistent once r4fsck replayed it.
oracle_point() {
	local mode=$1 k=$2 state why
	cp "$W/cut.img" "$W/oracle.img"
	if pending_replay "$W/oracle.img"; then
		PENDING=$((PENDING + 1))
		fsck.reiser4 --check -f -y "$W/oracle.img" >"$W/fsck.out" 2>&1
		"${MANIFEST_N[@]}" "$W/oracle.img" >"$W/oracle.man" 2>/dev/null
		if [ -z "$(which_state "$W/oracle.man")" ]; then
			fail_point "$mode" "$k" "after fsck.reiser4's replay the content is neither before nor after"
			return 1
		fi
		cp "$W/cut.img" "$W/oracle.img"
		r4fsck -q "$W/oracle.img" >/dev/null 2>&1
	fi
	if ! why=$(oracle_fsck "$W/oracle.img"); then
		fail_point "$mode" "$k" "fsck.reiser4 does not find it consistent: $why"
		return 1
	fi
	manifest "$W/oracle.img" "$W/oracle.man"
	state=$(which_state "$W/oracle.man")
	if [ -z "$state" ]; then
		fail_point "$mode" "$k" "after fsck.reiser4 the content is neither before nor after"
		return 1
	fi
	AGREED=$((AGREED + 1))
}

one_point() {
	local mode=$1 k=$2 rc state
	TOTAL=$((TOTAL + 1))
	cp "$PRISTINE" "$W/cut.img"
	run_workload "$W/cut.img" "$mode=$k"
	rc=$?
	if [ $rc -ge 126 ]; then
		fail_point "$mode" "$k" "the workload died (exit $rc): $(tail -n 2 "$W/out" | tr '\n' ' ')"
		return
	fi
	if sanitized "$W/out"; then
		fail_point "$mode" "$k" "sanitizer report: $(grep -m 1 'ERROR\|runtime error' "$W/out")"
		return
	fi
	SEEN=$((SEEN + 1))
	# the oracle at every K-th point, and at every J-th point where a
	# replay is pending
	if [ "$ORACLE_STEP" -gt 0 ] && [ "$DAMAGED" = 0 ]; then
		if [ $((SEEN % ORACLE_STEP)) -eq 1 ] || [ "$ORACLE_STEP" -eq 1 ]; then
			oracle_point "$mode" "$k" || return
		elif pending_replay "$W/cut.img"; then
			NPENDING=$((NPENDING + 1))
			if [ $(( (NPENDING - 1) % PENDING_STEP )) -eq 0 ]; then
				oracle_point "$mode" "$k" || return
			fi
		fi
	fi
	r4fsck -q "$W/cut.img" >"$W/r4fsck.out" 2>&1
	rc=$?
	# (a damaged pristine: its problems are looked at just below)
	[ "$DAMAGED" = 1 ] && [ $rc -eq 4 ] && rc=0
	if [ $rc -ge 4 ] || sanitized "$W/r4fsck.out"; then
		fail_point "$mode" "$k" "r4fsck (replay) exit $rc: $(tail -n 2 "$W/r4fsck.out" | tr '\n' ' ')"
		return
	fi
	if ! r4fsck --check -q "$W/cut.img" >"$W/r4fsck.out" 2>&1; then
		# a damaged pristine left as it was: its own problems only
		if [ "$DAMAGED" = 1 ] && manifest "$W/cut.img" "$W/cut.man" &&
		   [ "$(which_state "$W/cut.man")" = before ] &&
		   problems "$W/cut.img" | cmp -s - "$W/known"; then
			NB=$((NB + 1))
			return
		fi
		fail_point "$mode" "$k" "r4fsck --check after replay: $(tail -n 2 "$W/r4fsck.out" | tr '\n' ' ')"
		return
	fi
	if ! manifest "$W/cut.img" "$W/cut.man"; then
		fail_point "$mode" "$k" "the manifest cannot be read: $(head -n 2 "$W/manifest.err" | tr '\n' ' ')"
		return
	fi
	state_of "$W/cut.man"
	if [ -n "$SIZES" ] && [ "$STATE" = before ]; then
		local blocks
		blocks=$(r4debugfs -R 'print super' "$W/cut.img" 2>/dev/null |
			 sed -n 's/^ *blocks: *//p')
		case $blocks in
		"${SIZES%,*}") ;;
		"${SIZES#*,}") STATE=after ;;
		*) fail_point "$mode" "$k" "the volume has '$blocks' blocks, neither of $SIZES"
		   return ;;
		esac
	fi
	case $STATE in
	before) NB=$((NB + 1)) ;;
	after) NA=$((NA + 1)) ;;
	*) fail_point "$mode" "$k" "the content is neither before nor after: $(diff "$W/before" "$W/cut.man" | head -n 4 | tr '\n' ' ')" ;;
	esac
}

for spec in "cut-after:$CUT" "torn-write:$TORN" "drop-unsynced:$DROP" \
	    "fail-write:$FAIL" "keep-subset:$REORDER"; do
	mode=${spec%%:*}
	list=$(points "${spec#*:}")
	if [ "$mode" = cut-after ] && [ "$TAIL" -gt 0 ]; then
		list=$( (echo "$list"; seq $((N > TAIL ? N - TAIL + 1 : 1)) "$N") |
			sort -n | uniq)
	fi
	for k in $list; do
		one_point "$mode" "$k"
		# a random subset where two writes or more are held (with
		# one, it is the point above or cut-after's)
		if [ "$mode" = keep-subset ] &&
		   ! awk -v k="$k" '$1 == k && $2 < 2 { f = 1 } END { exit f }' \
			"$W/syncpts" 2>/dev/null; then
			:
		elif [ "$mode" = keep-subset ]; then
			for seed in $(seq 1 "$SEEDS"); do
				one_point "$mode" "$k:$seed"
			done
		fi
	done
done

if [ "$FAILED" -eq 0 ]; then
	echo "$NAME: $TOTAL cut points ($N writes), all before/after ($NB before, $NA after), fsck.reiser4 agreed at $AGREED ($PENDING of them with a replay pending)"
	exit 0
fi
echo "$NAME: $TOTAL cut points ($N writes), $FAILED FAILED ($NB before, $NA after), fsck.reiser4 agreed at $AGREED"
exit 1
