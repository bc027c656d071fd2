#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A stand-in r4fsck that runs two builds of it on the same input and
# logs whether they agree: put a folder holding a link named r4fsck to
# this script first in PATH and run Bats files, e.g.
#
#   mkdir "$TMPDIR/shim" && ln -s "$PWD/tests/fsck-compare.sh" "$TMPDIR/shim/r4fsck"
#   R4_OLD_FSCK=old/r4fsck R4_NEW_FSCK=$PWD/cmd/r4fsck R4_CMP_LOG=cmp.log \
#     PATH="$TMPDIR/shim:$PWD/cmd:$PWD/tests/helpers:$PATH" bats tests/bats/fsck-repair.bats
#
# The old build runs on a copy of the image (its -z undo file beside the
# copy, and as the test's stands to the image: one there already is
# copied, the image itself or a link to it become the copy or a link to
# it), the new one on the image itself; the log gets one
# line a run: "same" or what differed (IMGDIFF: the image's sha256,
# RCDIFF: the exit codes, OUTDIFF/ERRDIFF: stdout/stderr with the copy's
# path put back, UNDODIFF: the undo files). The new build's output and
# exit code are passed on, so the tests still judge it. Runs under a
# fault injection, with --undo, --wait, --help or --version are passed
# straight to the new build.
NEW=${R4_NEW_FSCK:?set R4_NEW_FSCK}
OLD=${R4_OLD_FSCK:?set R4_OLD_FSCK}
LOG=${R4_CMP_LOG:?set R4_CMP_LOG}
# One clock for both builds: a repair stamps what it makes with it, and
# two runs a second apart would differ in those bytes only.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(date +%s)}
args=("$@")
n=${#args[@]}
[ "$n" -gt 0 ] && img=${args[$((n - 1))]}
case " $* " in
*" --undo "* | *" --undo="* | *--wait* | *--help* | *--version*)
	exec "$NEW" "$@" ;;
esac
if [ "$n" -eq 0 ] || [ ! -f "$img" ] || [ -n "${R4_FAULT:-}" ]; then
	exec "$NEW" "$@"
fi
# A test may point TMPDIR at a folder that is not there (the repair's
# runs then fail on purpose): the copy goes to /tmp then.
tmp=${TMPDIR:-/tmp}
[ -d "$tmp" ] || tmp=/tmp
d=$(mktemp -d "$tmp/fsckcmp.XXXXXX") || exit 8
# The old build's -z path, standing to its copy as the test's path to
# the image: the copy itself, a link to the copy, a copy of an undo file
# that is there already, or a fresh path.
old_undo() {
	if [ "$1" -ef "$img" ]; then
		if [ -L "$1" ]; then
			ln -s img "$d/undo" && echo "$d/undo"
		else
			echo "$d/img"
		fi
		return
	fi
	[ -e "$1" ] || [ -L "$1" ] && cp -P "$1" "$d/undo"
	echo "$d/undo"
}
cp --sparse=always "$img" "$d/img"
oargs=("${args[@]:0:$((n - 1))}")
zi=
ozi=
for i in "${!oargs[@]}"; do
	if [ "${oargs[$i]}" = -z ]; then
		zi=${oargs[$((i + 1))]}
		ozi=$(old_undo "$zi")
		oargs[$((i + 1))]=$ozi
	fi
done
"$OLD" "${oargs[@]}" "$d/img" >"$d/o.out" 2>"$d/o.err" </dev/null
orc=$?
"$NEW" "$@" >"$d/n.out" 2>"$d/n.err"
nrc=$?
sed -i "s#$d/img#$img#g; s#$d/undo#UNDO#g" "$d/o.out" "$d/o.err"
[ -n "$zi" ] && sed -i "s#$zi#UNDO#g" "$d/n.out" "$d/n.err" "$d/o.out" "$d/o.err"
st=
[ "$(sha256sum <"$d/img")" = "$(sha256sum <"$img")" ] || st="$st IMGDIFF"
[ "$orc" = "$nrc" ] || st="$st RCDIFF($orc/$nrc)"
cmp -s "$d/o.out" "$d/n.out" || st="$st OUTDIFF"
cmp -s "$d/o.err" "$d/n.err" || st="$st ERRDIFF"
if [ -n "$zi" ] && { [ -f "$zi" ] || [ -f "$ozi" ]; }; then
	cmp -s "$zi" "$ozi" || st="$st UNDODIFF"
fi
echo "${st:- same} rc=$nrc :: $*" >>"$LOG"
cat "$d/n.out"
cat "$d/n.err" >&2
if [ -n "$st" ]; then
	echo "   kept $d" >>"$LOG"
else
	rm -rf "$d"
fi
exit "$nrc"
