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
SUM_SAMPLE=5aece8c1f66e5d41dac15595cedb0927dd926503d6e593a654c077ba248ab155
SUM_MTREE=dd69aa79136ad952daea228102beef7db13665227ae2589b174c6cda8d7e12cd
SUM_ADDED=d43e86448d7b19b1f7ff76e59ff77c0ca3402fc2ae79910d4a1858c50039f0a4

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
	(cd "$T/m" && SOURCE_DATE_EPOCH=3000000000 r4pack add -q "$T/a.img" \
		spec.mtree)
	[ "$(sum "$T/a.img")" = "$SUM_ADDED" ]
}
