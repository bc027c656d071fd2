#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The real Reiser4 kernel on volumes r4resize changed (doc/format.md
# §1.9): a 64 MiB r4pack image grown to 1 GiB mounts read-write, df
# reports the new size and free space, 200 MiB written into the new
# space go without a warning and read back exactly; both checkers are
# clean afterwards. A kernel-written image grown, then shrunk to its
# minimum, and a grow whose new backup copy falls on a block the
# kernel used (moved first by the repacker): the kernel reads exactly
# what r4kit reads.

load ../bats/helpers
load kernel

setup_file() { kernel_setup_file; }

@test "kernel: a 64 MiB image grown to 1 GiB: df shows the new size, 200 MiB written into the new space, both checkers clean" {
	need_kernel
	mkdir -p "$T/src/d"
	for i in $(seq 1 20); do head -c $((i * 3000)) /dev/urandom >"$T/src/d/f$i"; done
	r4pack create -q --size 64M "$T/src" "$T/img"
	r4resize -q "$T/img" 1G
	kcheckers "$T/img"
	head -c 200M /dev/urandom >"$T/payload"
	want=$(sha256sum <"$T/payload" | cut -d' ' -f1)
	mkdir -p "$T/out"
	cat >"$T/cmds.sh" <<EOS
set -e
df -B4096 /mnt | tail -n 1 >'$T/out/df1'
cp '$T/payload' /mnt/big
sync
df -B4096 /mnt | tail -n 1 >'$T/out/df2'
sha256sum /mnt/big | cut -d' ' -f1 >'$T/out/sha'
EOS
	kboot "$T/img" "$T/cmds.sh"
	cat "$T/out/df1" "$T/out/df2"
	# the total is the new size less what the kernel holds back for
	# flush and truncates (its statfs: 51/1024 of the blocks), the
	# free space most of it; after the write 200 MiB less
	total=$(awk '{ print $2 }' "$T/out/df1")
	free1=$(awk '{ print $4 }' "$T/out/df1")
	free2=$(awk '{ print $4 }' "$T/out/df2")
	[ "$total" -eq $((262144 - (262144 * 51 >> 10))) ]
	[ "$free1" -gt 240000 ]
	[ "$free2" -lt $((free1 - 51200)) ]
	[ "$(cat "$T/out/sha")" = "$want" ]
	kcheckers "$T/img"
	r4debugfs -R "dump /big $T/big.r4" "$T/img"
	[ "$(sha256sum <"$T/big.r4" | cut -d' ' -f1)" = "$want" ]
}

@test "kernel: a kernel-written image (reg40, files spread over 128 MiB) grown to 512 MiB, then shrunk to its minimum: the kernel reads exactly what r4kit reads" {
	need_kernel
	kimg reg40
	r4kit_manifest "$T/reg40.img" "$T/r0.man"
	r4resize -q "$T/reg40.img" 512M
	kcheckers "$T/reg40.img"
	kwalk "$T/reg40.img" "$T/k1.man"
	kcmp "$T/r0.man" "$T/k1.man"
	r4resize -q -M "$T/reg40.img"
	kcheckers "$T/reg40.img"
	r4kit_manifest "$T/reg40.img" "$T/r2.man"
	kcmp "$T/r0.man" "$T/r2.man" "r4kit after the shrink"
	kwalk "$T/reg40.img" "$T/k2.man"
	kcmp "$T/r0.man" "$T/k2.man"
}

@test "kernel: a 140 MiB volume with a kernel-written file on block 32737, grown to 1 GiB: the repacker frees the new backup copy's place first; both checkers clean, the kernel reads exactly" {
	need_kernel
	r4mkfs -q "$T/img" 140M
	# a file of 120 MiB, one of 10 MiB after it (across block 32736),
	# the first removed: the second stays on block 32737
	head -c 120M /dev/urandom >"$T/payload"
	head -c 10M /dev/urandom >"$T/payload2"
	printf "cp '%s' /mnt/a\nsync\ncp '%s' /mnt/b\nsync\nrm /mnt/a\nsync\n" \
		"$T/payload" "$T/payload2" >"$T/cmds.sh"
	kboot "$T/img" "$T/cmds.sh"
	# the kernel's allocator used the block the new size gives a backup
	# copy (else this test would not test that)
	run r4debugfs -R 'icheck 32737' "$T/img"
	echo "$output"
	[[ "$output" != *"free"* ]]
	r4kit_manifest "$T/img" "$T/r0.man"
	run r4resize "$T/img" 1G
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"grown from 35840 to 262144 blocks"*"moved "* ]]
	kcheckers "$T/img"
	r4kit_manifest "$T/img" "$T/r1.man"
	kcmp "$T/r0.man" "$T/r1.man" "r4kit after the grow"
	kwalk "$T/img" "$T/k.man"
	kcmp "$T/r0.man" "$T/k.man"
}
