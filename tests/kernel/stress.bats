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

# The reverse: r4kit writes on an image the kernel wrote and aged, then
# the kernel writes again. dir2/sparse is in the layout the kernel panics
# on (tests/data/kernel/README.md): never read under the kernel here.
@test "kernel image: r4pack add, r4debugfs -w edits, r4repacker, then kernel stress: checkers clean, reads agree [seed 47]" {
	need_kernel
	kimg default
	local img=$T/default.img
	# the kernel ages its own image first
	kstress "$img" 470 dir2/sparse
	gentree "$T/add" 47 add
	r4pack add -q "$img" "$T/add"
	cat >"$T/edits" <<EOS
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
	kstress "$img" 47 dir2/sparse
	kafter_stress "$img" dir2/sparse
}
