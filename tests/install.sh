#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# make check: the installed library as a pipeline would use it. make
# install into a temporary DESTDIR, build tests/install/r4info.c and
# r4arc.c against the installed headers and shared libraries through
# pkg-config (r4kit, r4kit-archive), and run them on an image r4mkfs
# made. Prints TAP. Any step that fails fails the test.
set -u
: "${top_builddir:?}" "${top_srcdir:?}"
MAKE=${MAKE:-make}
CC=${R4_CC:-cc}
CFLAGS=${R4_CFLAGS:-}
LDFLAGS=${R4_LDFLAGS:-}
T=$(mktemp -d "${TMPDIR:-/tmp}/r4install.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
D=$T/dest

echo "1..9"
n=0
pass() { n=$((n + 1)); echo "ok $n - $1"; }
# A failed step: say why, show the log, and stop (the steps build on
# each other).
fail() {
	n=$((n + 1))
	echo "not ok $n - $1"
	[ -f "$T/log" ] && sed 's/^/# /' "$T/log" | tail -n 30
	echo "Bail out! $1"
	exit 1
}

if $MAKE -C "$top_builddir" install DESTDIR="$D" >"$T/log" 2>&1; then
	pass "make install DESTDIR=..."
else
	fail "make install DESTDIR=..."
fi

so=$(find "$D" -name libr4kit.so.0 | head -n 1)
aso=$(find "$D" -name libr4kit-archive.so.0 | head -n 1)
hdr=$(find "$D" -path '*/include/r4/r4.h' | head -n 1)
pc=$(find "$D" -name r4kit.pc | head -n 1)
apc=$(find "$D" -name r4kit-archive.pc | head -n 1)
if [ -n "$so" ] && [ -n "$aso" ] && [ -n "$hdr" ] && [ -n "$pc" ] &&
   [ -n "$apc" ] && [ -f "$(dirname "$hdr")/errors.h" ] &&
   [ -f "$(dirname "$hdr")/archive.h" ]; then
	pass "installed: libr4kit.so.0, libr4kit-archive.so.0, include/r4/*.h, r4kit.pc, r4kit-archive.pc"
else
	find "$D" -type f > "$T/log"
	fail "installed: libr4kit.so.0, libr4kit-archive.so.0, include/r4/*.h, r4kit.pc, r4kit-archive.pc"
fi

# The JSON schemas, under $(datadir)/r4kit/schema, as in doc/schema.
sd=$(find "$D" -type d -path '*/share/r4kit/schema' | head -n 1)
missing=
for f in "$top_srcdir"/doc/schema/*.schema.json; do
	[ -n "$sd" ] && cmp -s "$f" "$sd/${f##*/}" || missing="$missing ${f##*/}"
done
if [ -n "$sd" ] && [ -z "$missing" ]; then
	pass "installed: share/r4kit/schema/*.schema.json"
else
	echo "not installed:$missing" > "$T/log"
	fail "installed: share/r4kit/schema/*.schema.json"
fi

# pkg-config reads the installed .pc files; the sysroot puts DESTDIR in
# front of their paths.
PKG_CONFIG_PATH=$(dirname "$pc"):$(dirname "$apc")
PKG_CONFIG_SYSROOT_DIR=$D
export PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
cflags=$(pkg-config --cflags r4kit 2>"$T/log") &&
	libs=$(pkg-config --libs r4kit 2>"$T/log") &&
	acflags=$(pkg-config --cflags r4kit-archive 2>"$T/log") &&
	alibs=$(pkg-config --libs r4kit-archive 2>"$T/log") ||
	fail "pkg-config r4kit, r4kit-archive"
case "$cflags $libs" in
*"-I$D/"*"-L$D/"*"-lr4kit"*) pass "pkg-config r4kit: $cflags $libs" ;;
*) fail "pkg-config r4kit gives the installed paths: $cflags $libs" ;;
esac

# shellcheck disable=SC2086
if $CC $CFLAGS $cflags -o "$T/r4info" "$top_srcdir/tests/install/r4info.c" \
	$LDFLAGS $libs >"$T/log" 2>&1; then
	pass "r4info.c builds against the installed copy"
else
	fail "r4info.c builds against the installed copy"
fi

# It needs the shared library, and the loader finds the installed one.
LD_LIBRARY_PATH=$(dirname "$so"):$(dirname "$aso")
export LD_LIBRARY_PATH
readelf -d "$T/r4info" > "$T/log" 2>&1
if grep -q 'NEEDED.*libr4kit\.so\.0' "$T/log" &&
   LD_TRACE_LOADED_OBJECTS=1 "$T/r4info" > "$T/log" 2>&1 &&
   grep -q "libr4kit\.so\.0 => $(dirname "$so")/libr4kit\.so\.0" "$T/log"; then
	pass "r4info is linked to the installed libr4kit.so.0"
else
	fail "r4info is linked to the installed libr4kit.so.0"
fi

if r4mkfs -q -f -s -L installed "$T/vol.img" 64M >"$T/log" 2>&1; then
	pass "r4mkfs makes an image"
else
	fail "r4mkfs makes an image"
fi

version=$(r4mkfs -V | sed -n '1s/.* //p')
"$T/r4info" "$T/vol.img" >"$T/out" 2>"$T/log" || fail "r4info IMAGE runs"
cat > "$T/want" <<EOF
library $version
label installed
blocks 16384
journal: 0 overlaid
entry .
entry ..
entry lost+found
problems 0, directories 2
R4_ENOTFOUND: not found
EOF
if cmp -s "$T/want" "$T/out"; then
	pass "r4info IMAGE: label, size, the root's entries, a clean check"
else
	diff "$T/want" "$T/out" > "$T/log"
	fail "r4info IMAGE: label, size, the root's entries, a clean check"
fi

# shellcheck disable=SC2086
if $CC $CFLAGS $acflags -o "$T/r4arc" "$top_srcdir/tests/install/r4arc.c" \
	$LDFLAGS $alibs >"$T/log" 2>&1 &&
   "$T/r4arc" >"$T/out" 2>>"$T/log" &&
   [ "$(cat "$T/out")" = "archive options: ok" ]; then
	pass "r4arc.c builds against r4kit-archive and runs"
else
	cat "$T/out" >> "$T/log"
	fail "r4arc.c builds against r4kit-archive and runs"
fi
