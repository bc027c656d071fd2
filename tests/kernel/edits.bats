#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The kernel reads exactly what r4kit reads after r4kit changed an image
# (doc/kernel.md §1): r4pack add, r4debugfs -w
# edits, r4repacker of an aged image, r4fsck -y of a damaged one. Each
# leg: both checkers clean, then one read-only boot whose manifest must
# equal r4debugfs rdump's.

load ../bats/helpers
load kernel

setup_file() { kernel_setup_file; }

# kernel_reads_as_r4kit IMAGE [EXCLUDED...]: both checkers clean; the
# kernel's manifest equals r4kit's.
kernel_reads_as_r4kit() {
	local img=$1
	shift
	kcheckers "$img"
	r4kit_manifest "$img" "$T/r.man"
	[ "$#" -eq 0 ] || kmanifest_unread "$T/r.man" "$@"
	kwalk "$img" "$T/k.man" "$@"
	kcmp "$T/r.man" "$T/k.man"
}

@test "after r4pack add (sparse and multi-cluster compressed files) the kernel reads exactly [seeds 31, 32]" {
	need_kernel
	gentree "$T/src" 31
	gentree "$T/add" 32 add
	r4pack create -q --size 96M --compress=zstd1 -o cluster=16K,compressMode=lattd "$T/src" "$T/img"
	r4pack add -q --compress=lzo1 "$T/img" "$T/add"
	# r4kit reads the union of both trees
	r4kit_manifest "$T/img" "$T/r0.man"
	sort "$T/src.man" "$T/add.man" >"$T/want.man"
	kcmp "$T/want.man" "$T/r0.man" "r4kit"
	kernel_reads_as_r4kit "$T/img"
}

@test "after r4pack add of a conv tree onto a conv image the kernel reads exactly [seeds 33, 34]" {
	need_kernel
	gentree "$T/src" 33
	gentree "$T/add" 34 add
	r4pack create -q --size 96M --compress=lzo1 "$T/src" "$T/img"
	r4pack add -q "$T/img" "$T/add"
	kernel_reads_as_r4kit "$T/img"
}

@test "after r4debugfs -w edits (write, truncate, rm, mv, mkdir) the kernel reads exactly [seeds 35, 36]" {
	need_kernel
	gentree "$T/src" 35
	gentree "$T/add" 36 add
	r4pack create -q --size 96M --compress=gzip1 -o cluster=32K "$T/src" "$T/img"
	local big sparse text
	big=$(awk -F'\t' '$1 ~ /big_/ && $2 == "f" { print $1; exit }' "$T/src.man")
	text=$(awk -F'\t' '$1 ~ /text_1310/ && $2 == "f" { print $1; exit }' "$T/src.man")
	sparse=$(awk -F'\t' '$1 ~ /sparse_lead3/ { print $1; exit }' "$T/add.man")
	[ -n "$big" ]
	[ -n "$text" ]
	[ -n "$sparse" ]
	cat >"$T/edits" <<EOS
mkdir /newdir
mkdir /newdir/deeper
write $T/add/$sparse /newdir/sparse
write $T/add/$sparse /pair0/a_sparse_new
write $T/src/$big /newdir/deeper/big
truncate 100001 /$big
truncate 700000 /$text
rm /pair1/a_extent
mv /pair0/b_sparse /newdir/moved_sparse
mv /newdir/deeper /moved_deeper
EOS
	run r4debugfs -w --atomic -f "$T/edits" "$T/img"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	kernel_reads_as_r4kit "$T/img"
}

@test "after r4repacker of an aged image with compressed files the kernel reads exactly [seed 37]" {
	need_kernel
	AGE_SIZE=64M bash "$top_srcdir/tests/age.sh" "$T/img" 311 10 >"$T/age.log" 2>&1 ||
		{ cat "$T/age.log"; return 1; }
	gentree "$T/add" 37 add
	r4pack add -q --compress=zstd1 -o cluster=8K "$T/img" "$T/add"
	# before the repacker: what add and the aging wrote reads exactly
	kernel_reads_as_r4kit "$T/img" || { echo "(before r4repacker)"; return 1; }
	run r4repacker -q "$T/img"
	[ "$status" -eq 0 ] || { echo "r4repacker: status $status"; echo "$output"; return 1; }
	kernel_reads_as_r4kit "$T/img"
}

@test "after r4fsck -y of a damaged compressed image the kernel reads exactly [seed 38]" {
	need_kernel
	gentree "$T/src" 38
	r4pack create -q --size 64M --compress=zstd1 -o cluster=4K,compressMode=force "$T/src" "$T/img"
	# the node header of the leaf holding the middle of a multi-cluster
	# file: r4fsck -y rebuilds the tree around it
	local big blk
	big=$(awk -F'\t' '$1 ~ /big_/ && $2 == "f" { print $1; exit }' "$T/src.man")
	blk=$(r4debugfs -R "blocks /$big" "$T/img" |
		sed -n 's/^  file offset 65536, .*tail block \([0-9]*\)$/\1/p' | head -n 1)
	[ -n "$blk" ]
	dd if=/dev/zero of="$T/img" bs=1 seek=$((blk * 4096)) count=32 conv=notrunc status=none
	run r4fsck -y "$T/img"
	[ "$status" -eq 1 ] || { echo "r4fsck -y: status $status"; echo "$output" | tail -20; return 1; }
	kernel_reads_as_r4kit "$T/img"
}

@test "r4fsck -y makes the kernel's own default.img safe: the kernel then reads every file, dir2/sparse included" {
	need_kernel
	kimg default
	run r4fsck -y "$T/default.img"
	[ "$status" -le 1 ] || { echo "r4fsck -y: status $status"; echo "$output" | tail -20; return 1; }
	kernel_reads_as_r4kit "$T/default.img"
	# and what the kernel wrote in the first place
	awk -F'\t' '$2 == "f" { print $9 "  ./" $1 }' "$T/k.man" | sort -k2 >"$T/k.sha"
	sort -k2 "$KIMG_DIR/default.sha256" | diff - "$T/k.sha"
}

# doc/kernel.md §2.2: r4pack add cuts a reg40 file's tail into items of
# 4030 bytes and leaves two of them side by side in one leaf; both
# checkers accept it, the kernel reads the file short.
@test "after r4pack add -o create=reg40 of an 8792-byte file the kernel reads all of it" {
	need_kernel
	mkdir -p "$T/a" "$T/b"
	echo hi >"$T/a/x"
	python3 -c 'import sys; sys.stdout.write("".join("line %d of a text file\n" % i for i in range(400))[:8792])' >"$T/b/big"
	r4pack create -q "$T/a" "$T/img"
	r4pack add -q -o create=reg40 "$T/img" "$T/b"
	kernel_reads_as_r4kit "$T/img"
}
