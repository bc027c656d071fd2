#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The real kernel reads what r4mount -o rw wrote: a seeded workload
# (tests/helpers/fsworkload.py) on the mount and on a mirror; after the
# unmount both checkers are clean, r4kit reads the mirror's tree, and one
# read-only kernel boot reads exactly that (sha256 of every file). The
# volume has mkfs's default profile, so every file the mount made is
# compressed (ccreg40, lzo1): the kernel then keeps writing into them
# (kstress), both checkers stay clean and it reads what r4kit reads.

load ../bats/helpers
load kernel

setup_file() { kernel_setup_file; }

teardown() {
	if [ -n "${PID:-}" ] && kill -0 "$PID" 2>/dev/null; then
		kill -9 "$PID" 2>/dev/null || true
	fi
	if [ -n "${MNT:-}" ] && { mountpoint -q "$MNT" 2>/dev/null ||
		grep -q " $MNT fuse" /proc/self/mounts; }; then
		timeout 20 fusermount3 -uz "$MNT" 2>/dev/null || true
	fi
	[ -n "${R4_KEEP_TMP:-}" ] || rm -rf "$T"
}

# start_rw: r4mount -o rw of $T/img at $MNT, in the background (PID),
# mounted before it returns.
start_rw() {
	MNT=$T/mnt
	mkdir -p "$MNT"
	r4mount -f -o rw "$T/img" "$MNT" 2>"$T/daemon.log" &
	PID=$!
	for _ in $(seq 1 100); do mountpoint -q "$MNT" && break; sleep 0.1; done
	mountpoint -q "$MNT" || { cat "$T/daemon.log"; false; }
}

@test "after r4mount -o rw (600 random operations, compressed files) the kernel reads exactly what the mirror holds and keeps writing [seed 41]" {
	need_kernel
	need_fuse
	r4mkfs -q "$T/img" 128M
	mkdir -p "$T/mirror"
	start_rw
	python3 "$top_srcdir/tests/helpers/fsworkload.py" run 41 600 "$MNT" "$T/mirror"
	# directories changed by the daemon carry the transaction's start
	# time: fixed times on everything, through the mount
	python3 "$top_srcdir/tests/helpers/fsworkload.py" stamp 41 "$MNT" "$T/mirror"
	timeout 20 fusermount3 -u "$MNT"
	wait "$PID"
	PID=
	$GENTREE manifest "$T/mirror" >"$T/mirror.man"
	r4kit_manifest "$T/img" "$T/r.man"
	kcmp "$T/mirror.man" "$T/r.man" "r4kit"
	kcheckers "$T/img"
	kwalk "$T/img" "$T/k.man"
	kcmp "$T/r.man" "$T/k.man"
	# the mount made compressed files
	f=$(cd "$T/mirror" && find . -type f -size +1k | LC_ALL=C sort | head -n 1)
	r4debugfs -R "stat /${f#./}" "$T/img" | grep -q 'plugin: *ccreg40'
	kstress "$T/img" 41
	kafter_stress "$T/img"
}

@test "r4mount answers the extended attribute calls as the kernel does (no xattrs in Reiser4): tests/helpers/xattrprobe.py on both mounts" {
	need_kernel
	need_fuse
	r4mkfs -q "$T/img" 64M
	start_rw
	python3 "$top_srcdir/tests/helpers/xattrprobe.py" "$MNT" >"$T/fuse.out" 2>&1
	timeout 20 fusermount3 -u "$MNT"
	wait "$PID"
	PID=
	printf 'python3 %q /mnt >%q 2>&1\n' "$top_srcdir/tests/helpers/xattrprobe.py" \
		"$T/kernel.out" >"$T/x.sh"
	kboot "$T/img" "$T/x.sh"
	grep -q 'xp_f set user.a ENOTSUP' "$T/kernel.out"
	diff -u "$T/kernel.out" "$T/fuse.out"
}
