#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The one entry encoder (libimage/obj/encode.c): what r4pack create writes
# stays byte for byte what it wrote before the builder and the editor shared
# it, and the same bad entry gets the same message from both.

load helpers

UUID=01234567-89ab-cdef-0123-456789abcdef

# The sums below were recorded from the code before the encoder was shared
# (commit 84351c4). A change to the on-disk output must change them on
# purpose, never by accident.
# SUM_SAMPLE, SUM_ADDED (made on it) and SUM_LINKS changed when the data of
# an uncompressed archive file began to be copied in key order, where a
# directory's build puts it and r4repacker wants it (issue 27); the
# kernel read both images exactly (every file's sha256), fsck.reiser4
# called them consistent.
SUM_SAMPLE=f301f938e8980dc5bc798e0c55ac3e7efbcb71313f564df8e4f910cc4ac24a88
SUM_MTREE=dd69aa79136ad952daea228102beef7db13665227ae2589b174c6cda8d7e12cd
# SUM_ADDED changed when the editor joined items that continue each other
# in every node it writes (two tail40 items of one file in a leaf: the
# kernel reads such a file short; doc/kernel.md §2.2).
SUM_ADDED=65442c72c2e66fb38362caa45dda9a872aa5a9443b876246aae4631f0dee0cdb

sum() { sha256sum <"$1" | cut -c1-64; }

# An mtree spec (libarchive reads it as an archive) with fixed owners, modes
# and nanosecond times: tails and extents around 16384, ids above 65535, a
# time after 2038, devices (one with a 20-bit minor), a fifo, a symlink, a
# 255-byte name. Contents are made here, byte for byte the same every run.
make_spec() {
	local d=$1 long
	mkdir -p "$d"
	yes 'line of text' | head -c 50000 >"$d/big.dat"
	head -c 16384 "$d/big.dat" >"$d/t16384.dat"
	head -c 16385 "$d/big.dat" >"$d/t16385.dat"
	printf 'hello\n' >"$d/small.dat"
	seq 1 5000 >"$d/mid.dat"
	seq 1 60000 >"$d/large.dat"
	: >"$d/empty.dat"
	long=$(printf 'y%.0s' $(seq 255))
	cat >"$d/spec.mtree" <<SPEC
#mtree
. type=dir mode=0755 uid=0 gid=0 time=1700000000.0
./small type=file mode=0644 uid=1000 gid=1000 time=1700000001.123456789 size=6 contents=small.dat
./empty type=file mode=0644 uid=0 gid=0 time=1700000001.5 size=0 contents=empty.dat
./t16384 type=file mode=0644 uid=0 gid=0 time=1700000001.5 size=16384 contents=t16384.dat
./t16385 type=file mode=0644 uid=0 gid=0 time=1700000001.5 size=16385 contents=t16385.dat
./big type=file mode=0600 uid=70000 gid=80000 time=2600000000.5 size=50000 contents=big.dat
./large type=file mode=0640 uid=0 gid=0 time=1000000000.25 size=348894 contents=large.dat
./mid type=file mode=04755 uid=0 gid=0 time=1.0 size=23893 contents=mid.dat
./chr type=char mode=0644 uid=0 gid=0 time=1700000000.0 device=native,4,64
./bigdev type=char mode=0644 uid=0 gid=0 time=1700000000.0 device=native,259,1048575
./blk type=block mode=0660 uid=0 gid=6 time=1700000000.0 device=native,8,1
./fifo type=fifo mode=0644 uid=0 gid=0 time=1700000000.0
./sym type=link mode=0777 uid=42 gid=43 time=1700000000.0 link=../some/target
./d type=dir mode=01777 uid=0 gid=0 time=1700000002.999999999
./d/e type=dir mode=02750 uid=0 gid=0 time=1700000003.0
./d/e/$long type=file mode=0644 uid=0 gid=0 time=1700000000.0 size=6 contents=small.dat
SPEC
}

@test "encode: r4pack create of tests/data/sample.tar is byte-identical to the recorded image" {
	SOURCE_DATE_EPOCH=1700000000 r4pack create -q -U $UUID \
		"$top_srcdir/tests/data/sample.tar" "$T/s.img"
	[ "$(sum "$T/s.img")" = "$SUM_SAMPLE" ]
}

@test "encode: r4pack create and add of a fixed mtree spec are byte-identical to the recorded images" {
	make_spec "$T/m"
	(cd "$T/m" && SOURCE_DATE_EPOCH=3000000000 r4pack create -q -U $UUID \
		spec.mtree "$T/m.img")
	[ "$(sum "$T/m.img")" = "$SUM_MTREE" ]
	SOURCE_DATE_EPOCH=1700000000 r4pack create -q -U $UUID \
		"$top_srcdir/tests/data/sample.tar" "$T/a.img"
	(cd "$T/m" && SOURCE_DATE_EPOCH=3000000000 \
		r4pack add -q -o create=reg40 "$T/a.img" \
		spec.mtree)
	[ "$(sum "$T/a.img")" = "$SUM_ADDED" ]
}

# One bad entry as an mtree spec file: $1 is the spec's one line.
bad_spec() {
	printf '#mtree\n%s\n' "$1" >"$T/bad.mtree"
}

# The first lines r4pack create and r4pack add print for the spec ($c,
# $a): equal; both fail, and the volume add was given is unchanged.
same_message() {
	local sum
	run r4pack create -q "$T/bad.mtree" "$T/c.img"
	[ "$status" -ne 0 ]
	c=$(head -n 1 <<<"$output")
	[ ! -e "$T/c.img" ]
	sum=$(sum "$T/base.img")
	run r4pack add -q "$T/base.img" "$T/bad.mtree"
	[ "$status" -ne 0 ]
	a=$(head -n 1 <<<"$output")
	echo "create: $c"
	echo "add:    $a"
	[ -n "$c" ]
	[ "$c" = "$a" ]
	[ "$(sum "$T/base.img")" = "$sum" ]
}

# same_message for spec line $1; the message holds $2.
refused_alike() {
	bad_spec "$1"
	same_message
	[[ "$c" == *"$2"* ]]
}

@test "encode: r4pack create and r4pack add refuse a bad entry with the same message" {
	local long target
	long=$(printf 'n%.0s' $(seq 256))
	target=$(printf 't%.0s' $(seq 4000))
	r4mkfs -q "$T/base.img" 64M
	refused_alike "./dev type=char mode=0644 time=1.0 \
device=native,4096,1" "device 4096:1 does not fit"
	refused_alike "./dev type=block mode=0644 time=1.0 \
device=native,1,1048576" "device 1:1048576 does not fit"
	refused_alike "./$long type=file mode=0644 time=1.0 size=0" \
		"a name is longer than 255 bytes"
	refused_alike "./d/$long/x type=file mode=0644 time=1.0 size=0" \
		"a name is longer than 255 bytes"
	refused_alike "./sym type=link mode=0777 time=1.0 link=$target" \
		"symlink target of 4000 bytes is longer than"
}

@test "encode: r4pack create and r4pack add store an out-of-range time alike" {
	local t
	r4mkfs -q "$T/a.img" 64M
	for t in 5000000000.5 -5.25 100.999999999; do
		bad_spec "./f type=file mode=0644 time=$t size=0"
		rm -f "$T/c.img"
		r4pack create -q "$T/bad.mtree" "$T/c.img"
		r4pack add -q "$T/a.img" "$T/bad.mtree"
		r4debugfs -R 'stat /f' "$T/c.img" | grep time >"$T/c.txt"
		r4debugfs -R 'stat /f' "$T/a.img" | grep time >"$T/a.txt"
		cat "$T/c.txt"
		[ -s "$T/c.txt" ]
		diff "$T/c.txt" "$T/a.txt"
	done
	grep -q '^mtime: *100.999999999 ' "$T/c.txt"
}

@test "encode: r4pack create and r4pack add make missing parents alike" {
	printf '#mtree\n. type=dir mode=0750 uid=1234 gid=5678 time=1.0\n' \
		>"$T/root.mtree"
	printf '#mtree\n./x/y/f type=file mode=0644 time=1.0 size=0\n' \
		>"$T/deep.mtree"
	cat "$T/root.mtree" >"$T/both.mtree"
	tail -n 1 "$T/deep.mtree" >>"$T/both.mtree"
	SOURCE_DATE_EPOCH=1700000000 r4pack create -q "$T/both.mtree" \
		"$T/c.img"
	SOURCE_DATE_EPOCH=1700000000 r4pack create -q "$T/root.mtree" \
		"$T/a.img"
	SOURCE_DATE_EPOCH=1700000000 r4pack add -q "$T/a.img" "$T/deep.mtree"
	r4debugfs -R 'stat /x/y' "$T/c.img" |
		grep -E '^(mode|uid|gid|[amc]time):' >"$T/c.txt"
	r4debugfs -R 'stat /x/y' "$T/a.img" |
		grep -E '^(mode|uid|gid|[amc]time):' >"$T/a.txt"
	cat "$T/c.txt"
	grep -q '^uid: *1234$' "$T/c.txt"
	grep -q '^mode: *0040755 ' "$T/c.txt"
	diff "$T/c.txt" "$T/a.txt"
}

# A tarball for the builder's namespace (issue 11 made its records
# smaller): a file with hard links in four directories whose first name
# in the archive is not the one that places it (the root's "top" comes
# first in the tree), 300 long names in one directory (hashed keys, many
# leaves), a symlink, nested directories, and appended entries that
# replace a small file by another and a file by a symlink (no file with
# extents is replaced: these sums predate the fix that frees a replaced
# file's blocks, pack-create.bats tests that).
# GNU tar with fixed owners, modes and times.
make_links_tar() {
	local d=$1/src n
	mkdir -p "$d/a/b" "$d/c" "$d/z" "$d/many" "$d/e/f/g"
	seq 1 3000 >"$d/a/b/first"
	ln "$d/a/b/first" "$d/c/link"
	ln "$d/a/b/first" "$d/z/data"
	ln "$d/a/b/first" "$d/top"
	for n in $(seq 1 300); do
		printf '%s\n' "$n" \
			>"$d/many/a-rather-long-file-name-number-$n.txt"
	done
	yes 'some text' | head -c 70000 >"$d/e/f/g/extents"
	printf 'first\n' >"$d/e/f/g/note"
	printf 'x\n' >"$d/c/rep"
	ln -s ../a/b/first "$d/e/sym"
	find "$d" -type d -exec chmod 0755 {} +
	find "$d" -type f -exec chmod 0644 {} +
	tar_fixed() {
		tar --format=gnu --sort=name --owner=0 --group=0 --numeric-owner \
			--mtime=@1700000000 -C "$d" "$@"
	}
	tar_fixed -cf "$1/links.tar" .
	rm "$d/c/rep"
	ln -s ../top "$d/c/rep"
	printf 'replaced, longer\n' >"$d/e/f/g/note"
	chmod 0644 "$d/e/f/g/note"
	tar_fixed -rf "$1/links.tar" ./c/rep ./e/f/g/note
}

# Recorded from the builder before its records were made smaller
# (commit 8e4c4b8), with and without --compress.
SUM_LINKS=1beda030a1c4745f8c103dcb8ee2ca6ee5677f8c46ae4c9f0fa1343ca49c3320
# SUM_LINKS_CC changed when a compressed file past its first cluster got
# compressMode lattd stored, as the kernel does (doc/compress.md §4.4).
SUM_LINKS_CC=b9e388b31076607f7346cca1fd60a1d42b7ef18107fbad72eb514de27cd24877

@test "encode: r4pack create of hard links across directories and replaced paths is byte-identical" {
	make_links_tar "$T"
	SOURCE_DATE_EPOCH=1700000000 r4pack create -q -U $UUID \
		"$T/links.tar" "$T/l.img"
	[ "$(sum "$T/l.img")" = "$SUM_LINKS" ]
	SOURCE_DATE_EPOCH=1700000000 r4pack create -q -U $UUID --compress \
		"$T/links.tar" "$T/lc.img"
	[ "$(sum "$T/lc.img")" = "$SUM_LINKS_CC" ]
	r4fsck --check -q "$T/l.img"
	r4fsck --check -q "$T/lc.img"
}
