#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The Reiser4 kernel after a cut r4debugfs -w edit and a cut repacker
# batch (replay.bats does the same for r4pack add; doc/kernel.md §2.3):
# the command (its test build, tests/crash/bin, the only one that reads
# R4_FAULT) is cut at each write from its commit point on, while a
# committed transaction waits for replay; r4fsck -p replays it; the real
# kernel (User-Mode Linux, ../shared/uml/r4kernel.sh) mounts the volume,
# reads every file and must read exactly what r4kit reads of the uncut
# result, and after its unmount r4fsck -n and fsck.reiser4 --check call
# the volume clean. Each point is one boot (a few seconds); the points
# before the commit point leave the volume as it was (tests/crash/).
# Skipped, with a message, where the kernel oracle is absent.

load ../bats/helpers
load kernel

setup_file() { kernel_setup_file; }

hooked() {
	local t=$1
	shift
	"$top_builddir/tests/crash/bin/$t" "$@"
}

# pending IMAGE: a committed transaction waits for replay.
pending() {
	r4debugfs -R 'print journal' "$1" 2>/dev/null | grep -q '^transactions to replay'
}

# kernel_point K IMAGE: the point cut after write K, in IMAGE: -p
# replays one transaction, the kernel reads exactly $T/want.man, both
# checkers are clean after its unmount.
kernel_point() {
	run r4fsck -p "$2"
	echo "cut-after=$1: r4fsck -p: $output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"replayed 1 transaction"* ]]
	kwalk "$2" "$T/k.man"
	kcmp "$T/want.man" "$T/k.man"
	kcheckers "$2"
}

@test "kernel: an r4debugfs -w edit cut at each write from the commit point on, then r4fsck -p: the kernel reads every file exactly" {
	need_kernel
	mkdir -p "$T/src/a/sub" "$T/src/b"
	for i in 1 2 3 4 5 6; do head -c $((i * 1500)) /dev/urandom >"$T/src/a/f$i"; done
	head -c 30000 /dev/urandom >"$T/src/a/x"
	echo keep >"$T/src/keep"
	echo leaf >"$T/src/a/sub/leaf"
	head -c 12000 /dev/urandom >"$T/host"
	# the same "now" in the uncut and every cut edit
	export SOURCE_DATE_EPOCH=1700000000
	r4pack create -q --size 16M "$T/src" "$T/v.img"
	edit() {
		hooked r4debugfs -w --atomic -R 'mkdir /m' -R "write $T/host /m/new" \
			-R 'mv /a/x /b/x' -R 'rm /keep' -R 'truncate 100 /a/f6' "$@"
	}
	cp "$T/v.img" "$T/after.img"
	R4_FAULT=count R4_FAULT_REPORT="$T/rep" edit "$T/after.img"
	local w k points=0
	w=$(awk -F'[= ]' '$1 == "writes" { s += $2 } END { print s + 0 }' "$T/rep")
	[ "$w" -gt 3 ]
	r4kit_manifest "$T/after.img" "$T/want.man"
	for ((k = w - 1; k >= 1; k--)); do
		cp "$T/v.img" "$T/c.img"
		R4_FAULT=cut-after=$k edit "$T/c.img" >/dev/null 2>&1 || true
		pending "$T/c.img" || break
		points=$((points + 1))
		kernel_point "$k" "$T/c.img"
	done
	echo "# r4debugfs -w: $points points from the commit point on (of $w writes), one boot each" >&3
	[ "$points" -ge 2 ]
	# one write before the commit point: the volume as it was
	r4kit_manifest "$T/c.img" "$T/before.man"
	r4kit_manifest "$T/v.img" "$T/v.man"
	cmp "$T/before.man" "$T/v.man"
}

@test "kernel: one repacker batch cut at each write from its commit point on, then r4fsck -p: the kernel reads every file exactly" {
	need_kernel
	AGE_SIZE=4M run bash "$top_srcdir/tests/age.sh" "$T/v.img" 90 3
	[ "$status" -eq 0 ] || { echo "$output" | tail -n 5; false; }
	r4kit_manifest "$T/v.img" "$T/want.man"
	local k points=0 started=0
	# the first batch's window: the first points that leave a
	# transaction to replay (the batch's commit point up to its footer)
	for ((k = 1; k <= 400; k++)); do
		cp "$T/v.img" "$T/c.img"
		R4_FAULT=cut-after=$k hooked r4repacker -q --batch 32 "$T/c.img" \
			>/dev/null 2>&1 || true
		if ! pending "$T/c.img"; then
			[ "$started" = 0 ] && continue
			break
		fi
		started=1
		points=$((points + 1))
		kernel_point "$k" "$T/c.img"
	done
	echo "# r4repacker: $points points of the first batch from its commit point on, one boot each" >&3
	[ "$points" -ge 2 ]
	# the batch after it: its footer is written, nothing pending, and
	# the kernel reads the same
	kwalk "$T/c.img" "$T/k.man"
	kcmp "$T/want.man" "$T/k.man"
	kcheckers "$T/c.img"
}
