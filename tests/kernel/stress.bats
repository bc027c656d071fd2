#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Kernel writes on r4kit images, r4kit writes on kernel images (doc/kernel.md
# §1): a bounded seeded stress in the guest
# (kernel.bash, kstress), then r4fsck -n and fsck.reiser4 --check clean,
# and r4kit (r4debugfs rdump) reads exactly what a second boot reads.

load ../bats/helpers
load kernel

setup_file() { kernel_setup_file; }

# stress_leg SEED R4PACK-OPTIONS...: r4pack create, kernel stress, checks.
stress_leg() {
	local seed=$1
	shift
	need_kernel
	gentree "$T/src" "$seed"
	r4pack create -q --size 96M "$@" "$T/src" "$T/img"
	kstress "$T/img" "$seed"
	kafter_stress "$T/img"
}

@test "kernel stress on an r4pack reg40 image: checkers clean, r4kit reads what a second boot reads [seed 41]" {
	stress_leg 41
}

@test "kernel stress on an r4pack lzo1 64K conv image (mkfs's default profile) [seed 42]" {
	stress_leg 42 --compress=lzo1
}

@test "kernel stress on an r4pack zstd1 16K conv image [seed 43]" {
	stress_leg 43 --compress=zstd1 -o cluster=16K
}

@test "kernel stress on an r4pack gzip1 4K lattd node41 image [seed 44]" {
	stress_leg 44 -o node=node41 --compress=gzip1 -o cluster=4K,compressMode=lattd
}

@test "kernel stress after r4pack add on a compressed image (ctail40 items of one cluster) [seeds 45, 46]" {
	need_kernel
	gentree "$T/src" 45
	gentree "$T/add" 46 add
	r4pack create -q --size 96M --compress=zstd1 -o compressMode=lattd "$T/src" "$T/img"
	r4pack add -q --compress=zstd1 -o compressMode=lattd "$T/img" "$T/add"
	kstress "$T/img" 45
	kafter_stress "$T/img"
}

@test "kernel stress after r4fsck -y rebuilt a damaged compressed image [seed 48]" {
	need_kernel
	gentree "$T/src" 48
	r4pack create -q --size 96M --compress=zstd1 -o cluster=4K,compressMode=lattd "$T/src" "$T/img"
	# zero the node header of a leaf in the middle of a compressed file
	local big blk
	big=$(awk -F'\t' '$1 ~ /big_/ && $2 == "f" { print $1; exit }' "$T/src.man")
	blk=$(r4debugfs -R "blocks /$big" "$T/img" |
		sed -n 's/^  file offset 65536, .*tail block \([0-9]*\)$/\1/p' | head -n 1)
	[ -n "$blk" ]
	dd if=/dev/zero of="$T/img" bs=1 seek=$((blk * 4096)) count=32 conv=notrunc status=none
	run r4fsck -y "$T/img"
	[ "$status" -eq 1 ] || { echo "r4fsck -y: status $status"; echo "$output" | tail -20; return 1; }
	kcheckers "$T/img"
	kstress "$T/img" 48
	kafter_stress "$T/img"
}

# The reverse: r4kit writes on an image the kernel wrote and aged, then
# the kernel writes again. dir2/sparse is in the layout the kernel panics
# on (tests/data/kernel/README.md): the kernel's first stress leaves it
# alone, and r4debugfs removes it.
@test "kernel image: r4pack add, r4debugfs -w edits, r4repacker, then kernel stress: checkers clean, reads agree [seed 47]" {
	need_kernel
	kimg default
	local img=$T/default.img
	# the kernel ages its own image first
	kstress "$img" 470 dir2/sparse
	gentree "$T/add" 47 add
	r4pack add -q "$img" "$T/add"
	# r4kit removes the file the kernel wrote in the panic layout
	cat >"$T/edits" <<EOS
rm /dir2/sparse
mkdir /edited
write $T/add/add_pair0/a_extent /edited/a_extent
write $T/add/add_pair0/b_sparse /edited/b_sparse
truncate 5000 /dir1/text_200001
rm /dir1/text_65537
mv /dir1/text_131072 /edited/moved
EOS
	run r4debugfs -w --atomic -f "$T/edits" "$img"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	run r4repacker -q "$img"
	[ "$status" -eq 0 ] || { echo "r4repacker: status $status"; echo "$output"; return 1; }
	kcheckers "$img"
	kstress "$img" 47
	kafter_stress "$img"
}

# Whose failure is it? The same workload on a volume the kernel made
# (mkfs.reiser4's default profile: ccreg40, lzo1, conv, 64K) and filled
# itself with cp: when this passes and a leg above fails, the failure is
# r4kit's. The tree has no sparse file here: the kernel's own copy of a
# file with leading holes is in the layout of doc/kernel.md §2.1.
@test "control: the same stress on a volume the kernel made and filled itself: checkers clean, reads agree [seed 42]" {
	need_kernel
	need_oracle
	gentree "$T/src" 42
	find "$T/src" -name '*sparse*' -exec rm -f {} +
	truncate -s 96M "$T/img"
	run mkfs.reiser4 -y -f "$T/img"
	[ "$status" -eq 0 ] || { echo "mkfs.reiser4: $output"; return 1; }
	printf 'cp -a %s/. /mnt/\n' "$T/src" >"$T/cp.sh"
	kboot "$T/img" "$T/cp.sh"
	kcheckers "$T/img"
	kstress "$T/img" 42
	kafter_stress "$T/img"
}

# An expected failure: the kernel's own defect, on an image it wrote
# itself. Passes while the defect is there (bounded by R4TIMEOUT); fails
# when the kernel reads the file, so that the test is turned into a plain
# read then.
@test "known kernel defect (doc/kernel.md §2.1, expected failure): a fresh boot reading dir2/sparse of the kernel's own default.img panics" {
	need_kernel
	kimg default
	printf 'sha256sum dir2/sparse\n' >"$T/read.sh"
	R4RO=1 kboot_raw "$T/default.img" "$T/read.sh"
	if [ "$KRC" -eq 0 ] && [ -z "$KBAD" ]; then
		echo "the kernel read dir2/sparse without a panic: doc/kernel.md §2.1 no longer reproduces; make this a plain test"
		cat "$T/kboot.out"
		return 1
	fi
	[ "$KRC" -eq 93 ] || { echo "expected a panic (r4kernel.sh exit 93), got $KRC"; tail -n 30 "$T/kboot.err"; return 1; }
	grep -qE 'find_disk_cluster|ctail_readpages_filler|readpages_cryptcompress' "$T/kboot.err" ||
		{ echo "a panic, but not in the compressed-file read path:"; tail -n 40 "$T/kboot.err"; return 1; }
}
