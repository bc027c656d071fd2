#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The real Reiser4 kernel on a volume r4pack built into partition 2 of
# a GPT disk image made by sfdisk (r4pack create --partition): the
# partition cut out with dd mounts, and the kernel reads every file
# exactly as the source tree holds it.

load ../bats/helpers
load kernel

setup_file() { kernel_setup_file; }

@test "kernel: r4pack create --partition=2 of a GPT disk: the partition (dd'd out) mounts and every file reads back exactly" {
	need_kernel
	command -v sfdisk >/dev/null 2>&1 || skip "sfdisk (util-linux fdisk) not installed"
	gentree "$T/src" 26
	truncate -s 48M "$T/disk"
	printf 'label: gpt\n,4M,L\n,32M,L\n,4M,S\n' | sfdisk -q "$T/disk"
	r4pack create -q -f --partition=2 "$T/src" "$T/disk"
	read -r s n < <(sfdisk -d "$T/disk" | sed -n 's/.*disk2 : start= *\([0-9]*\), size= *\([0-9]*\),.*/\1 \2/p')
	[ -n "$n" ]
	dd if="$T/disk" of="$T/p2.img" bs=512 skip="$s" count="$n" status=none
	kwalk "$T/p2.img" "$T/k.man"
	kcmp "$T/src.man" "$T/k.man"
}
