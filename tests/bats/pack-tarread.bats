#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# r4pack create from an uncompressed tar file named: r4kit's own header
# reader (libimage/tar/tarhdr.c, after the first entry) against
# libarchive's (R4_TAR_READER=libarchive) on crafted archives
# (tests/helpers/tarcraft.py) and GNU tar's: the same exit status, the
# same messages, the same image bytes. R4_TAR_READER=own names each
# entry libarchive reads after the first in a warning, so that the tests
# see which ones the own reader reads itself.

load helpers

UUID=01234567-89ab-cdef-0123-456789abcdef
export SOURCE_DATE_EPOCH=2000000000

# both TAR OPTS...: a create with each reader; any difference (exit
# status, output, messages, image) fails.
both() {
	local t=$1 rc1=0 rc2=0
	shift
	rm -f "$T/img" "$T/own.img" "$T/lib.img"
	r4pack create -U $UUID "$@" "$t" "$T/img" >"$T/own.out" 2>"$T/own.err" || rc1=$?
	if [ -f "$T/img" ]; then mv "$T/img" "$T/own.img"; fi
	R4_TAR_READER=libarchive r4pack create -U $UUID "$@" "$t" "$T/img" \
		>"$T/lib.out" 2>"$T/lib.err" || rc2=$?
	if [ -f "$T/img" ]; then mv "$T/img" "$T/lib.img"; fi
	[ "$rc1" = "$rc2" ] || { echo "$t $*: exit $rc1, libarchive's $rc2"; cat "$T/own.err"; return 1; }
	cmp -s "$T/own.err" "$T/lib.err" ||
		{ echo "$t $*: messages differ"; diff "$T/own.err" "$T/lib.err"; return 1; }
	cmp -s "$T/own.out" "$T/lib.out" ||
		{ echo "$t $*: output differs"; diff "$T/own.out" "$T/lib.out"; return 1; }
	if [ -f "$T/lib.img" ]; then
		cmp -s "$T/own.img" "$T/lib.img" || { echo "$t $*: images differ"; return 1; }
	else
		[ ! -f "$T/own.img" ] || { echo "$t $*: an image without libarchive's"; return 1; }
	fi
}

# lib TAR: the entries of TAR libarchive reads after the first, one a
# line (R4_TAR_READER=own), into $T/lib.
lib() {
	rm -f "$T/img"
	R4_TAR_READER=own r4pack create -U $UUID "$1" "$T/img" >/dev/null 2>"$T/err" || true
	LC_ALL=C sed -n "s/.*: '\(.*\)' (byte [0-9]*) read by libarchive\$/\1/p" "$T/err" >"$T/lib"
}

# own TAR: the own reader reads it whole, to the image libarchive makes.
own() {
	lib "$1"
	[ ! -s "$T/lib" ] || { echo "$1: libarchive read:"; cat "$T/lib"; return 1; }
	R4_TAR_READER=libarchive r4pack create -q -U $UUID "$1" "$T/lib.img"
	cmp "$T/img" "$T/lib.img"
}

# left TAR: the own reader leaves an entry of TAR to libarchive.
left() {
	lib "$1"
	[ -s "$T/lib" ] || { echo "$1: read whole by the own reader"; return 1; }
}

craft() {
	python3 "$BATS_TEST_DIRNAME/../helpers/tarcraft.py" "$T/c"
}

@test "tar headers: crafted archives give libarchive's images, output, messages and exit status (--json, --compress, --strict)" {
	command -v python3 >/dev/null || skip "python3 not installed"
	craft
	local n=0 t
	for t in "$T"/c/*.tar; do
		both "$t" --json
		both "$t" --compress=lzo1
		both "$t" --strict
		n=$((n + 1))
	done
	[ "$n" -gt 50 ]
}

@test "tar headers: a damaged or cut archive fails as with libarchive, naming the place" {
	command -v python3 >/dev/null || skip "python3 not installed"
	craft
	run r4pack create -q -U $UUID "$T/c/dmg-badsum.tar" "$T/img"
	[ "$status" -ne 0 ]
	[[ "$output" == *"damaged header at byte 2048: Damaged tar archive (after entry 'p0/f')"* ]]
	[ ! -e "$T/img" ]
	run r4pack create -q -U $UUID "$T/c/dmg-cutpax.tar" "$T/img"
	[ "$status" -ne 0 ]
	[[ "$output" == *"damaged header after entry 'p0/f'"* ]]
	[ ! -e "$T/img" ]
}

@test "tar headers: an unknown R4_TAR_READER is a usage error" {
	printf 'x' >"$T/f"
	tar -cf "$T/a.tar" -C "$T" f
	R4_TAR_READER=both run r4pack create -q -U $UUID "$T/a.tar" "$T/img"
	[ "$status" -eq 2 ]
	[[ "$output" == *"R4_TAR_READER='both' is not libarchive or own"* ]]
	[ ! -e "$T/img" ]
}

@test "tar headers: the own reader reads plain archives whole and leaves odd headers to libarchive" {
	command -v python3 >/dev/null || skip "python3 not installed"
	craft
	local t
	for t in gnu-basic ustar-prefix pax-basic pax-window pax-extra \
		 dmg-noend dmg-oneblock dmg-trailer; do
		own "$T/c/$t.tar"
	done
	for t in "$T"/c/odd-*.tar; do
		left "$t"
	done
	own "$T/c/rv-pax-hardsize.tar"
	own "$T/c/rv-symlinkpath-linked.tar"
	# from the first odd entry on libarchive reads the rest alone (the
	# own reader does not come back): the odd ones and the plain ones
	# between them, not the two before
	lib "$T/c/odd-all.tar"
	[ "$(head -n 1 "$T/lib")" = o/contig ]
	LC_ALL=C grep -qx 'p10/f' "$T/lib"
	[ "$(tail -n 1 "$T/lib")" = p40/f ]
	! LC_ALL=C grep -q '^p0/' "$T/lib"
}

@test "tar headers: GNU tar's formats, with long names, links, devices, fifos, sparse files and xattrs" {
	local s=$T/src f
	mkdir -p "$s/a/$(printf 'l%.0s' $(seq 120))/$(printf 'm%.0s' $(seq 90))" "$s/b"
	echo hi >"$s/a/f"
	for f in $(seq 1 30); do head -c $((f * 397)) /dev/urandom >"$s/b/file$f"; done
	ln "$s/a/f" "$s/a/hard"
	ln "$s/a/f" "$s/a/$(printf 'l%.0s' $(seq 120))/hardlong"
	ln -s ../a/f "$s/b/sym"
	ln -s "$(printf 'T%.0s' $(seq 150))" "$s/b/longsym"
	touch "$s/a/$(printf 'l%.0s' $(seq 120))/$(printf 'm%.0s' $(seq 90))/$(printf 'z%.0s' $(seq 100))"
	mkfifo "$s/b/fifo"
	if [ "$(id -u)" = 0 ]; then
		mknod "$s/b/chr" c 1 3
		mknod "$s/b/blk" b 7 0
	fi
	truncate -s 3M "$s/b/sparse"
	echo x | dd of="$s/b/sparse" bs=1 seek=1M conv=notrunc 2>/dev/null
	touch -d '2020-01-02 03:04:05.123456789' "$s/b/file1"
	python3 -c 'import os, sys
try:
    os.setxattr(sys.argv[1], "user.one", b"1")
    os.setxattr(sys.argv[1], "user.two", b"\0\1")
except OSError:
    pass' "$s/b/file2" 2>/dev/null || true
	for f in gnu oldgnu ustar v7 pax posix; do
		# v7 cannot hold every member (exit 2) but writes the rest
		tar --format=$f -cf "$T/$f.tar" -C "$s" . 2>/dev/null || true
		[ -s "$T/$f.tar" ]
		both "$T/$f.tar"
	done
	tar --format=gnu -S -cf "$T/gnus.tar" -C "$s" .
	tar --format=pax -S -cf "$T/paxs.tar" -C "$s" .
	tar --format=pax --xattrs -cf "$T/paxx.tar" -C "$s" .
	for f in gnus paxs paxx; do both "$T/$f.tar"; done
	for f in gnu ustar pax posix paxx; do own "$T/$f.tar"; done
	left "$T/gnus.tar"
	left "$T/paxs.tar"
}
