#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# make check: the sizes and shapes the house keeps (doc/hacking.md §6).
#   1. no getenv in libimage/ but TMPDIR: the library reads no knob from
#      the environment, the commands pass options (doc/hacking.md §1);
#   2. README.md at most 200 lines;
#   3. no file over 800 lines and no function over 60 lines (from the
#      first line of its definition to its closing brace) in format/,
#      libimage/ and cmd/.
# The offenders of 3 that were there when the limit came are listed,
# with their sizes then, in tests/sizes-allowed.txt: a listed one may
# shrink (then lower or drop its line) but not grow; any other offender
# fails. The count that remains is printed. A self-test first plants a
# long function and a long file in a scratch tree and requires the
# check to fail, so this test cannot pass vacuously.
#
# TAP output. Usage: check-sizes.sh [TOP]; TOP defaults to
# $top_srcdir, else the folder above this script.
set -u

top=${1:-${top_srcdir:-$(dirname "$0")/..}}
MAX_FILE=800
MAX_FUNC=60
MAX_README=200

# sizes TOP: "file PATH LINES" for every C file and "func PATH:NAME
# LINES" for every function definition (a "{" at column 0 after a
# signature that starts at column 0, to the next "}" at column 0).
sizes() {
	(cd "$1" && find format libimage cmd -type f -name '*.[ch]' \
		2>/dev/null | LC_ALL=C sort | xargs -r awk '
	FNR == 1 {
		if (prev != "") print "file " prev " " prevn
		sig = ""; infn = 0
	}
	{ prev = FILENAME; prevn = FNR }
	infn {
		if ($0 ~ /^}/) {
			print "func " FILENAME ":" name " " (FNR - start + 1)
			infn = 0
		}
		next
	}
	/^{/ {
		n = ""
		if (match(sig, /[A-Za-z_][A-Za-z_0-9]*[ \t]*\(/)) {
			n = substr(sig, RSTART, RLENGTH)
			sub(/[ \t]*\($/, "", n)
		}
		if (n != "") { infn = 1; start = sigstart; name = n }
		sig = ""
		next
	}
	/^[A-Za-z_]/ && !/;[ \t]*$/ { sig = $0; sigstart = FNR; next }
	sig != "" && /^[ \t]/ { sig = sig " " $0; next }
	{ sig = "" }
	END { if (prev != "") print "file " prev " " prevn }')
}

# check TOP ALLOWED: TAP-free report lines; exit 1 on a failure.
check() {
	sizes "$1" | awk -v allowed="$2" -v mfile=$MAX_FILE -v mfunc=$MAX_FUNC '
	BEGIN {
		while ((getline l < allowed) > 0) {
			if (l ~ /^[ \t]*(#|$)/) continue
			split(l, w, " ")
			lim[w[1] " " w[2]] = w[3] + 0
		}
	}
	{
		kind = $1; what = $2; n = $3 + 0
		max = kind == "file" ? mfile : mfunc
		if (n <= max) { if ((kind " " what) in lim) fixed[kind " " what] = n; next }
		k = kind " " what
		if (!(k in lim)) {
			print "new " kind " over " max " lines: " what " (" n ")"
			bad++
		} else if (n > lim[k]) {
			print "grew: " what " " n " lines, was " lim[k]
			bad++
		} else if (n < lim[k])
			print "# shrank: " what " " n " lines, listed " lim[k] \
				" (lower its line in the list)"
		seen[k] = 1
		left[kind]++
	}
	END {
		for (k in lim)
			if (!(k in seen))
				print "# gone from the offenders: " k \
					(k in fixed ? " (now " fixed[k] ")" : "") \
					" (drop its line from the list)"
		printf "# %d function(s) over %d lines and %d file(s) over %d " \
			"lines remain\n", left["func"], mfunc, left["file"], mfile
		exit bad ? 1 : 0
	}'
}

echo "1..4"
fail=0

# 1: the check fails on a new long function, a new long file and a
# listed function that grew, and passes a listed one as it was.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/r4sizes.XXXXXX") || exit 1
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/libimage/x" "$scratch/cmd/y" "$scratch/format"
{
	echo "static int short_one(void)"; echo "{"; echo "	return 0;"; echo "}"
	echo "int long_one(int a,"; echo "	     int b)"; echo "{"
	i=0; while [ $i -lt 56 ]; do echo "	a += b;"; i=$((i + 1)); done
	echo "	return a;"; echo "}"
} >"$scratch/libimage/x/a.c"
i=0; while [ $i -lt 801 ]; do echo "/* */"; i=$((i + 1)); done \
	>"$scratch/cmd/y/big.c"
: >"$scratch/none.txt"
printf 'func libimage/x/a.c:long_one 61\nfile cmd/y/big.c 801\n' \
	>"$scratch/same.txt"
printf 'func libimage/x/a.c:long_one 60\nfile cmd/y/big.c 801\n' \
	>"$scratch/less.txt"
out1=$(check "$scratch" "$scratch/none.txt"); rc1=$?
out2=$(check "$scratch" "$scratch/same.txt"); rc2=$?
out3=$(check "$scratch" "$scratch/less.txt"); rc3=$?
if [ $rc1 -ne 0 ] && [ $rc2 -eq 0 ] && [ $rc3 -ne 0 ] &&
   printf '%s\n' "$out1" | grep -q '^new func over 60 lines: libimage/x/a.c:long_one (61)' &&
   printf '%s\n' "$out1" | grep -q '^new file over 800 lines: cmd/y/big.c (801)' &&
   ! printf '%s\n' "$out1" | grep -q short_one &&
   printf '%s\n' "$out3" | grep -q '^grew: libimage/x/a.c:long_one 61 lines, was 60'; then
	echo "ok 1 - a new long function or file, or a listed one that grew, fails the check"
else
	echo "not ok 1 - the self-test did not fail as it should"
	printf '%s\n--\n%s\n--\n%s\n' "$out1" "$out2" "$out3" | sed 's/^/# /'
	fail=1
fi

# 2: getenv in libimage/ (comments aside), TMPDIR alone allowed.
env_uses=$(cd "$top" && grep -rn --include='*.[ch]' 'getenv[ \t]*(' libimage |
	grep -v 'getenv("TMPDIR")' | grep -v '^[^:]*:[0-9]*:[ \t]*\(\*\|/\*\|//\)')
if [ -z "$env_uses" ]; then
	echo "ok 2 - no getenv in libimage/ but TMPDIR"
else
	echo "not ok 2 - libimage/ reads the environment (pass an option instead; doc/hacking.md §1)"
	printf '%s\n' "$env_uses" | sed 's/^/# /'
	fail=1
fi

# 3: README.md.
n=$(wc -l <"$top/README.md" 2>/dev/null || echo 0)
if [ -f "$top/README.md" ] && [ "$n" -le $MAX_README ]; then
	echo "ok 3 - README.md has $n lines (at most $MAX_README)"
else
	echo "not ok 3 - README.md has $n lines (at most $MAX_README: move the rest to doc/ or bench/RESULTS.md)"
	fail=1
fi

# 4: the tree against the list.
out=$(check "$top" "$top/tests/sizes-allowed.txt"); rc=$?
printf '%s\n' "$out" | sed 's/^\([^#]\)/# \1/'
if [ $rc -eq 0 ]; then
	echo "ok 4 - no file over $MAX_FILE lines, no function over $MAX_FUNC lines but those listed (tests/sizes-allowed.txt), none grown"
else
	echo "not ok 4 - new or grown long files or functions (above): split them along their seams"
	fail=1
fi
exit $fail
