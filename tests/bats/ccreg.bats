#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Compressed (ccreg40) files, doc/compress.md. The images the Reiser4
# kernel itself wrote (../shared/kernel-images beside the source tree,
# see its README) must read back exactly, file for file, through
# r4debugfs rdump, r4pack extract and the read API (r4manifest), and
# r4fsck must call each one clean. Those images are required: when the
# folder is missing these tests fail.

load helpers

KI="$top_srcdir/../shared/kernel-images"

# Decompress kernel image $1 into $T/$1.img.
kimg() {
	if [ ! -f "$KI/$1.img.xz" ] || [ ! -f "$KI/$1.sha256" ]; then
		echo "missing $KI/$1.img.xz or $1.sha256 (the kernel-written" \
		     "images must sit in ../shared/kernel-images)"
		return 1
	fi
	xz -dc "$KI/$1.img.xz" | cp --sparse=always /dev/stdin "$T/$1.img"
}

# Every way of reading kernel image $1 gives the kernel's sha256 list.
read_all_ways() {
	local n=$1 want
	kimg "$n"
	want=$(sort -k2 "$KI/$n.sha256")
	[ "$(wc -l <<<"$want")" -gt 90 ]

	# r4debugfs rdump
	mkdir "$T/rd"
	run r4debugfs -R "rdump / $T/rd" "$T/$n.img"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	( cd "$T/rd" && sha256sum -c --quiet "$KI/$n.sha256" ) || return 1

	# r4pack extract
	run r4pack extract "$T/$n.img" "$T/x.tar"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	mkdir "$T/ex"
	tar -xf "$T/x.tar" -C "$T/ex"
	( cd "$T/ex" && sha256sum -c --quiet "$KI/$n.sha256" ) || return 1

	# the read API
	run r4manifest --sha256 "$T/$n.img"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	diff <(echo "$want") <(sort -k2 <<<"$output")

	run r4fsck "$T/$n.img"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
}

@test "kernel image default (lzo1, conv, 64K) reads exactly; r4fsck clean" {
	read_all_ways default
}

@test "kernel image gzip1 reads exactly; r4fsck clean" {
	read_all_ways gzip1
}

@test "kernel image zstd1 reads exactly; r4fsck clean" {
	read_all_ways zstd1
}

@test "kernel image cluster16k-force (zstd1, 16K) reads exactly; r4fsck clean" {
	read_all_ways cluster16k-force
}

@test "kernel image reg40 reads exactly; r4fsck clean" {
	read_all_ways reg40
}

@test "kernel image deleted reads exactly; r4fsck clean" {
	read_all_ways deleted
}

@test "the kernel images hold what they claim: ctail40 items, spanning clusters, holes" {
	kimg zstd1
	run r4debugfs -R "stat /dir1/text_200001" "$T/zstd1.img"
	[[ "$output" == *"ccreg40"* ]]
	# a sparse ccreg40 file: its first cluster is a hole (no item)
	run r4debugfs -R "blocks /dir2/sparse" "$T/zstd1.img"
	[[ "$output" != *"file offset 0,"* ]]
	[[ "$output" == *"file offset 1179648"* ]]
	kimg default
	# one 64K cluster cut into items in three leaves
	run r4debugfs -R "blocks /dir1/text_16385" "$T/default.img"
	[ "$(grep -c 'file offset 0, 16385 bytes: tail' <<<"$output")" -ge 2 ]
}

# Offset of byte $2 of block $1 of a 4 KiB-block image.
boff() { echo $(( $1 * 4096 + $2 )); }

# Overwrite bytes of a block of image $1: block $2, offset $3, hex $4.
poke() {
	printf "$4" | dd of="$1" bs=1 seek="$(boff "$2" "$3")" conv=notrunc \
		status=none
}

@test "a corrupt compressed cluster is an error naming the file, cluster and block" {
	kimg zstd1
	local img="$T/zstd1.img" blk
	blk=$(r4debugfs -R "blocks /dir1/text_200001" "$img" |
		sed -n 's/^  file offset 65536, .*tail block \([0-9]*\)$/\1/p' | head -n 1)
	[ -n "$blk" ]
	# flip bytes in the middle of that leaf: item bodies, not headers
	poke "$img" "$blk" 2000 '\x55\xaa\x55\xaa\x55\xaa\x55\xaa'
	run r4debugfs -R "cat /dir1/text_200001" "$img"
	[ "$status" -ne 0 ]
	[[ "$output" == *"text_200001"* ]]
	[[ "$output" == *"cluster "* ]]
	[[ "$output" == *"tree node "* ]]
	# no partial file is left behind by dump
	run r4debugfs -R "dump /dir1/text_200001 $T/out" "$img"
	[ "$status" -ne 0 ]
	[ ! -e "$T/out" ]
	# rdump goes on with the other files but leaves none for this one
	mkdir "$T/rd"
	run r4debugfs -R "rdump / $T/rd" "$img"
	[ "$status" -ne 0 ]
	[[ "$output" == *"text_200001"*"cluster "* ]]
	[ ! -e "$T/rd/dir1/text_200001" ]
	[ -f "$T/rd/dir1/text_131072" ]
	run r4pack extract "$img" "$T/x.tar"
	[ "$status" -ne 0 ]
	[[ "$output" == *"./dir1/text_200001: "*"cluster "*"tree node "* ]]
	[ ! -e "$T/x.tar" ]
	run r4fsck "$img"
	[ "$status" -ne 0 ]
	[[ "$output" == *"cluster"* ]]
}
