#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The kernel tier: r4fsck mends compressed files that r4kit reads right
# but the Reiser4 kernel cannot take (doc/compress.md §6, §7), and the
# real kernel (../shared/uml, User-Mode Linux with Reiser4 built in) then
# reads every file exactly. Without ../shared/uml these tests skip with
# one visible line; any Reiser4 warning, BUG, Oops or panic of the guest
# fails them, and R4TIMEOUT ends a guest that spins.

load ../bats/helpers

UML="$top_srcdir/../shared/uml/r4kernel.sh"
KI="$top_srcdir/../shared/kernel-images"
export R4TIMEOUT=120

need_kernel() {
	[ "${R4_KERNEL_TIER:-1}" != 0 ] ||
		skip "R4_KERNEL_TIER=0: the kernel tier ran in another pass"
	[ -x "$UML" ] || skip "no Reiser4 kernel ($UML absent): kernel tier skipped"
}

# in_kernel IMAGE COMMANDS: run the bash COMMANDS in a guest with IMAGE
# mounted at /mnt (the current folder); its output on stdout. Fails on a
# non-zero exit (91 mount, 93 a panic, 94 a timeout) and on any kernel
# complaint the script copies to stderr.
in_kernel() {
	local rc=0
	printf '%s\n' "$2" >"$T/cmds.sh"
	"$UML" "$1" "$T/cmds.sh" >"$T/kout" 2>"$T/kerr" || rc=$?
	cat "$T/kout"
	if [ "$rc" -ne 0 ] ||
	   grep -qiE 'reiser4.*(panic|error|warning|assert)|BUG|Oops|panic|r4kernel:' "$T/kerr"; then
		echo "r4kernel.sh $1: exit $rc; its stderr:"
		cat "$T/kerr"
		return 1
	fi
}

# kernel_sha IMAGE: the sha256 of every regular file, as the kernel reads
# them, "HASH  ./path" sorted by path.
kernel_sha() {
	in_kernel "$1" "find . -type f -print0 | xargs -0 -r sha256sum >'$T/k.sha'" || return 1
	sort -k2 "$T/k.sha"
}

# A kernel image with the kernel's own leading hole (dir2/sparse): -n
# names it, -p mends it, and the kernel then reads every file as it wrote
# them (before the mend, reading dir2/sparse panics the kernel).
mend_and_read() {
	local n=$1
	need_kernel
	[ -f "$KI/$n.img.xz" ] && [ -f "$KI/$n.sha256" ] ||
		{ echo "missing $KI/$n.img.xz or $n.sha256"; return 1; }
	xz -dc "$KI/$n.img.xz" | cp --sparse=always /dev/stdin "$T/$n.img"
	run r4fsck -n "$T/$n.img"
	echo "$output"
	[ "$status" -eq 4 ]
	[[ "$output" == *"compressed file /dir2/sparse (object "*"): cluster 0 is a hole (no ctail40 item) while cluster "*"the Reiser4 kernel panics reading this file"* ]]
	[[ "$output" == *": 1 problem found"* ]]
	run r4fsck -p "$T/$n.img"
	echo "$output"
	[ "$status" -eq 1 ]
	run r4fsck -n "$T/$n.img"
	[ "$status" -eq 0 ]
	oracle_fsck "$T/$n.img"
	kernel_sha "$T/$n.img" >"$T/got"
	diff <(sort -k2 "$KI/$n.sha256") "$T/got"
}

@test "kernel image default: r4fsck -p mends dir2/sparse's leading hole, the kernel reads every file exactly" {
	mend_and_read default
}

@test "kernel image gzip1: mended by -p, read exactly by the kernel" {
	mend_and_read gzip1
}

@test "kernel image zstd1: mended by -p, read exactly by the kernel" {
	mend_and_read zstd1
}

@test "kernel image cluster16k-force: mended by -p, read exactly by the kernel" {
	mend_and_read cluster16k-force
}

@test "kernel image deleted: mended by -p, read exactly by the kernel" {
	mend_and_read deleted
}

@test "libreiser4's ctail40 items across a cluster end: after r4fsck -y the kernel reads every byte (it spins on them before)" {
	need_kernel
	need_oracle
	need_r4ref
	local s=$T/src
	mkdir -p "$s"
	head -c 65537 /dev/urandom >"$s/a65537"
	seq 1 200000 | head -c 1048579 >"$s/b1048579"
	head -c 5000 /dev/urandom >"$s/small"
	truncate -s 64M "$T/l.img"
	R4REF_CCREG=1 r4ref mkfs -o compressMode=none -o compress=gzip1 "$T/l.img" "$s"
	run r4fsck -n "$T/l.img"
	[ "$status" -eq 4 ]
	[[ "$output" == *"crosses the cluster end"* ]]
	run r4fsck -y "$T/l.img"
	echo "$output"
	[ "$status" -eq 1 ]
	run r4fsck -n "$T/l.img"
	[ "$status" -eq 0 ]
	oracle_fsck "$T/l.img"
	kernel_sha "$T/l.img" >"$T/got"
	diff <(cd "$s" && sha256sum ./* | sort -k2) "$T/got"
}

@test "compressed files r4fsck -p moved out of conv and whose unmerged items it joined: the kernel writes them (it hangs before), both checkers clean" {
	need_kernel
	need_oracle
	local s=$T/src b i
	mkdir -p "$s"
	seq 1 60000 >"$s/conv"
	yes hello | head -c 200000 >"$s/f"
	r4pack create -q --compress=lzo1 -o compressMode=lattd "$s" "$T/k.img"
	. "$top_srcdir/tests/surgery.sh"
	# conv past the first cluster (doc/compress.md §6): in the file's own
	# plugin set, or in the root's, which /conv and /f then take
	pset_set "$T/k.img" /conv 11 4 || pset_set "$T/k.img" / 11 4
	# /f's last cluster (in the last leaf, which has room) cut into two
	# items side by side
	read -r b i < <(r4debugfs -R "print file /f" "$T/k.img" |
		sed -n 's/^block \([0-9]*\) (level 1), #\([0-9]*\) ctail40 .*:30000\] offset .*/\1 \2/p')
	node_split "$T/k.img" "$b" "$i" 10
	run r4fsck -n --json "$T/k.img"
	[[ "$output" == *'"code":"ccreg-conv"'* ]]
	[[ "$output" == *'"code":"ccreg-unmerged"'* ]]
	run r4fsck -p "$T/k.img"
	echo "$output"
	[ "$status" -eq 1 ]
	# the kernel makes cluster 0 of /conv incompressible, writes past it
	# (where conv would test cluster 0 and convert the file), and
	# rewrites /f's last cluster
	head -c 65536 /dev/urandom >"$T/noise"
	in_kernel "$T/k.img" "dd if='$T/noise' of=conv bs=65536 count=1 conv=notrunc status=none &&
		dd if='$T/noise' of=conv bs=4096 seek=16 count=1 conv=notrunc status=none &&
		dd if=f of=f bs=65536 skip=3 seek=3 count=1 conv=notrunc status=none && sync"
	cp "$s/conv" "$T/conv"
	dd if="$T/noise" of="$T/conv" bs=65536 count=1 conv=notrunc status=none
	dd if="$T/noise" of="$T/conv" bs=4096 seek=16 count=1 conv=notrunc status=none
	run r4fsck -n "$T/k.img"
	echo "$output"
	[ "$status" -eq 0 ]
	oracle_fsck "$T/k.img"
	r4debugfs -R "cat /conv" "$T/k.img" | cmp - "$T/conv"
	r4debugfs -R "cat /f" "$T/k.img" | cmp - "$s/f"
	# a second boot reads what r4kit reads
	kernel_sha "$T/k.img" >"$T/got"
	[ "$(awk '$2 == "./conv" { print $1 }' "$T/got")" = "$(sha256sum <"$T/conv" | cut -d ' ' -f 1)" ]
	[ "$(awk '$2 == "./f" { print $1 }' "$T/got")" = "$(sha256sum <"$s/f" | cut -d ' ' -f 1)" ]
}
