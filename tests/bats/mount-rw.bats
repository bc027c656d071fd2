#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# r4mount -o rw: a seeded random workload on the mount and on a mirror
# (tests/helpers/fsworkload.py) gives the same tree; both checkers are
# clean; kill -9 keeps what was fsynced (or committed by the timer) and
# nothing else, also at $SEEDS moments while the workload runs (the
# mirror's state at each fsync: fsworkload.py FSWL_STATES); another
# writer is refused while mounted. Needs a usable
# /dev/fuse (skipped with the reason otherwise), as mount-ro.bats.

load helpers

WL="python3 $BATS_TEST_DIRNAME/../helpers/fsworkload.py"
#   R4_RANDOM_SEEDS=N  kill -9 moments (default 20)
SEEDS=${R4_RANDOM_SEEDS:-20}

# A daemon a test started ($PID) is killed before the helpers'
# teardown unmounts $MNT.
eval "helpers_$(declare -f teardown)"
teardown() {
	if [ -n "${PID:-}" ] && kill -0 "$PID" 2>/dev/null; then
		kill -9 "$PID" 2>/dev/null || true
	fi
	helpers_teardown
}

# mount_rw IMAGE [OPTIONS]: the daemon in the foreground, in the
# background of the test (PID), so that the test can wait for it or kill
# it.
mount_rw() {
	MNT=$T/mnt
	mkdir -p "$MNT"
	r4mount -f -o "rw${2:+,$2}" "$1" "$MNT" 2>>"$T/daemon.log" &
	PID=$!
	for _ in $(seq 1 100); do
		mountpoint -q "$MNT" && return 0
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.1
	done
	cat "$T/daemon.log"
	return 1
}

# Unmount and wait for the daemon's last commit.
umount_rw() {
	timeout 20 fusermount3 -u "$MNT"
	wait "$PID"
	PID=
}

kill_rw() {
	kill -9 "$PID"
	wait "$PID" || true
	PID=
	timeout 20 fusermount3 -uz "$MNT" 2>/dev/null || true
}

# workload SEED OPS [R4MKFS_OPTION...]: the seeded workload on a fresh
# volume and on the mirror; the same tree after the unmount, read
# through a read-only mount; both checkers clean.
workload() {
	local seed=$1 ops=$2
	shift 2
	r4mkfs -q "$@" "$T/a.img" 128M
	mkdir "$T/mirror"
	mount_rw "$T/a.img"
	[ "$(stat -f -c %a "$MNT")" -gt 0 ]
	$WL run "$seed" "$ops" "$MNT" "$T/mirror"
	$WL stamp "$seed" "$MNT" "$T/mirror"
	$WL compare "$MNT" "$T/mirror"
	umount_rw
	r4fsck -n "$T/a.img"
	# read-only again: what the volume holds, not what the daemon had
	MNT=$T/mnt
	r4mount "$T/a.img" "$MNT"
	$WL compare "$MNT" "$T/mirror"
	timeout 20 fusermount3 -u "$MNT"
	if once && command -v fsck.reiser4 >/dev/null 2>&1; then
		cp "$T/a.img" "$T/b.img"
		oracle_fsck "$T/b.img"
	fi
}

# plugin_of PATH: the file plugin r4debugfs names for PATH of $T/a.img.
plugin_of() {
	r4debugfs -R "stat $1" "$T/a.img" | sed -n 's/^plugin: *\([a-z0-9]*\).*/\1/p'
}

@test "r4mount -o rw: 1000 random operations on compressed files (mkfs's profile) equal a tmpfs mirror; remounted, both checkers clean" {
	need_fuse
	workload 11 1000
	# new files follow the volume's profile: ccreg40
	f=$(cd "$T/mirror" && find . -type f -size +1k | LC_ALL=C sort | head -n 1)
	[ "$(plugin_of "/${f#./}")" = ccreg40 ]
}

@test "r4mount -o rw: 300 random operations on reg40 files (-o create=reg40) equal a tmpfs mirror; both checkers clean" {
	need_fuse
	workload 12 300 -o create=reg40
	f=$(cd "$T/mirror" && find . -type f -size +1k | LC_ALL=C sort | head -n 1)
	[ "$(plugin_of "/${f#./}")" = reg40 ]
}

@test "r4mount -o rw: kill -9 after an fsync keeps exactly the synced state, nothing later" {
	need_fuse
	r4mkfs -q "$T/a.img" 64M
	mkdir "$T/mirror"
	mount_rw "$T/a.img" commit=3600
	$WL run 21 300 "$MNT" "$T/mirror"
	echo synced >"$MNT/last"
	echo synced >"$T/mirror/last"
	# the daemon stamps directories with the transaction's start time
	$WL stamp 21 "$MNT" "$T/mirror"
	python3 -c 'import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)' "$MNT/last"
	cp -a "$T/mirror" "$T/synced"
	# changes after the fsync: never committed
	FSWL_NO_FSYNC=1 $WL run 22 100 "$MNT" "$T/mirror"
	echo never >"$MNT/never"
	kill_rw
	r4fsck -p "$T/a.img" || [ "$status" -le 1 ]
	r4fsck -n "$T/a.img"
	MNT=$T/mnt
	r4mount "$T/a.img" "$MNT"
	$WL compare "$MNT" "$T/synced"
	[ ! -e "$MNT/never" ]
	timeout 20 fusermount3 -u "$MNT"
	if once && command -v fsck.reiser4 >/dev/null 2>&1; then
		oracle_fsck "$T/a.img"
	fi
}

# One kill -9 of the daemon while the workload of seed $1 runs, once 1
# to 3 of its fsyncs returned and 0 to 0.08 s more: the volume (its
# journal read through, then replayed) holds what the mirror held at the
# last fsync that returned, or at the one in flight; r4fsck -n and
# fsck.reiser4 clean after the replay.
# The waits are by progress, so a slow machine kills at the same point
# of the workload, give or take the last sleep.
kill_one() {
	cp --sparse=always "$T/fresh.img" "$T/a.img"
	rm -rf "$T/mirror" "$T/st"
	mkdir "$T/mirror" "$T/st"
	mount_rw "$T/a.img" commit=3600
	FSWL_STATES=$T/st $WL run "$1" 400 "$MNT" "$T/mirror" 2>/dev/null &
	local wl=$!
	local i
	for i in $(seq 1 500); do
		[ "$(cat "$T/st/synced" 2>/dev/null | wc -l)" -gt $(($1 % 3 + 1)) ] &&
			break
		kill -0 "$wl" 2>/dev/null || break
		sleep 0.02
	done
	sleep "0.0$(($1 * 7919 % 9))"
	kill -9 "$PID"
	wait "$PID" || true
	PID=
	# the workload stops at its first ENOTCONN; unmounted before that,
	# it would go on in the empty mount point
	wait "$wl" || true
	timeout 20 fusermount3 -uz "$MNT"
	# a kill inside a commit, past its commit point, leaves a
	# transaction to replay: r4fsck -n reports it, and the kernel's
	# replay (fsck.reiser4's too) would lose its root pointer
	# (doc/kernel.md), so ours runs first, as the crash harness does
	run r4fsck -p "$T/a.img"
	[ "$status" -le 1 ] || { echo "$output"; return 1; }
	[ "$status" -eq 0 ] || echo "# seed $1: a transaction was replayed"
	r4fsck -n "$T/a.img"
	if once && command -v fsck.reiser4 >/dev/null 2>&1; then
		oracle_fsck "$T/a.img"
	fi
	r4mount "$T/a.img" "$MNT"
	$WL states "$MNT" "$T/st"
	timeout 20 fusermount3 -u "$MNT"
}

@test "r4mount -o rw: kill -9 at $SEEDS random moments: what was fsynced is there exactly, nothing else; both checkers clean" {
	need_fuse
	r4mkfs -q "$T/fresh.img" 64M
	local seed
	for seed in $(seq 1 "$SEEDS"); do
		echo "# seed $seed"
		kill_one "$seed"
	done
}

@test "r4mount -o rw: the commit timer (commit=1) makes changes durable without fsync" {
	need_fuse
	r4mkfs -q "$T/a.img" 64M
	mount_rw "$T/a.img" commit=1
	printf 'timed\n' >"$MNT/f"
	mkdir "$MNT/d"
	sleep 3
	kill_rw
	r4fsck -n "$T/a.img"
	[ "$(r4debugfs -R 'cat /f' "$T/a.img")" = timed ]
	r4debugfs -R 'ls /' "$T/a.img" | grep -qw d
}

# renameat2 FROM TO FLAGS: exit 0 or the errno
renameat2() {
	python3 -c 'import ctypes,os,sys; l=ctypes.CDLL(None, use_errno=True); r=l.renameat2(-100, os.fsencode(sys.argv[1]), -100, os.fsencode(sys.argv[2]), int(sys.argv[3])); sys.exit(ctypes.get_errno() if r else 0)' "$@"
}

@test "r4mount -o rw: another writer is refused (75) while mounted; statfs is writable; NOREPLACE, EXCHANGE; WHITEOUT is EINVAL" {
	need_fuse
	r4mkfs -q "$T/a.img" 64M
	mount_rw "$T/a.img"
	run r4debugfs -w -R 'mkdir /x' "$T/a.img"
	[ "$status" -eq 75 ]
	run r4mount -o rw "$T/a.img" "$T"
	[ "$status" -eq 75 ]
	stat -f -c %a "$MNT"
	echo a >"$MNT/a"
	echo b >"$MNT/b"
	mkdir -p "$MNT/d/e" "$MNT/p"
	echo in-e >"$MNT/d/e/f"
	run renameat2 "$MNT/a" "$MNT/b" 1		# NOREPLACE
	[ "$status" -eq 17 ]
	run renameat2 "$MNT/a" "$MNT/b" 4		# WHITEOUT
	[ "$status" -eq 22 ]
	run renameat2 "$MNT/a" "$MNT/none" 2		# EXCHANGE needs both
	[ "$status" -eq 2 ]
	run renameat2 "$MNT/a" "$MNT/b" 2
	[ "$status" -eq 0 ]
	[ "$(cat "$MNT/a")" = b ]
	[ "$(cat "$MNT/b")" = a ]
	# a directory and a file in other directories swap; ".." follows
	run renameat2 "$MNT/d/e" "$MNT/p" 2
	[ "$status" -eq 0 ]
	[ "$(cat "$MNT/p/f")" = in-e ]
	[ -d "$MNT/d/e" ]
	run renameat2 "$MNT/d" "$MNT/d/e" 2		# an ancestor
	[ "$status" -eq 22 ]
	run renameat2 "$MNT/p" "$MNT/a" 2
	[ "$status" -eq 0 ]
	[ "$(cat "$MNT/p")" = b ]
	[ "$(cat "$MNT/a/f")" = in-e ]
	[ "$(ls -a "$MNT" | tr '\n' ' ')" = ". .. a b d p " ]
	umount_rw
	r4fsck -n "$T/a.img"
	[ "$(r4debugfs -R 'cat /a/f' "$T/a.img")" = in-e ]
	[ "$(r4debugfs -R 'cat /b' "$T/a.img")" = a ]
	[ "$(r4debugfs -R 'ls /' "$T/a.img" | tr '\n' ' ')" = ". .. a b d p " ]
}

# The daemon keeps the names it looked up (directory id, name) ->
# object: each path below is read first so that it is kept, then its
# name changes; the old name must not resolve any more and the new one
# must.
@test "r4mount -o rw: names the daemon keeps follow a directory rename, rmdir, unlink, a name replaced by rename, an exchange" {
	need_fuse
	r4mkfs -q "$T/a.img" 64M
	mount_rw "$T/a.img"
	mkdir -p "$MNT/a/b/c" "$MNT/x"
	echo one >"$MNT/a/b/c/f"
	[ "$(cat "$MNT/a/b/c/f")" = one ]
	# a directory moves to another directory: its subtree with it
	mv "$MNT/a" "$MNT/x/a2"
	[ ! -e "$MNT/a" ]
	[ ! -e "$MNT/a/b/c/f" ]
	[ "$(cat "$MNT/x/a2/b/c/f")" = one ]
	mkdir "$MNT/a"
	[ -z "$(ls -A "$MNT/a")" ]
	[ ! -e "$MNT/a/b" ]
	# an empty directory replaced by another one (rename over)
	mkdir "$MNT/y"
	echo two >"$MNT/y/g"
	[ "$(cat "$MNT/y/g")" = two ]
	mv -T "$MNT/y" "$MNT/a"
	[ "$(cat "$MNT/a/g")" = two ]
	[ ! -e "$MNT/y" ]
	[ ! -e "$MNT/y/g" ]
	# rmdir, then a new directory at the name
	rm "$MNT/a/g"
	[ ! -e "$MNT/a/g" ]
	rmdir "$MNT/a"
	[ ! -e "$MNT/a" ]
	mkdir "$MNT/a"
	[ ! -e "$MNT/a/g" ]
	# a file replaced by rename, then unlinked and made again
	echo three >"$MNT/t1"
	echo four >"$MNT/t2"
	cat "$MNT/t1" "$MNT/t2" >/dev/null
	mv "$MNT/t2" "$MNT/t1"
	[ "$(cat "$MNT/t1")" = four ]
	[ ! -e "$MNT/t2" ]
	rm "$MNT/t1"
	[ ! -e "$MNT/t1" ]
	echo five >"$MNT/t1"
	[ "$(cat "$MNT/t1")" = five ]
	# two directories exchanged, their subtrees with them
	mkdir -p "$MNT/e1/s" "$MNT/e2/s"
	echo e1 >"$MNT/e1/s/f"
	echo e2 >"$MNT/e2/s/f"
	cat "$MNT/e1/s/f" "$MNT/e2/s/f" >/dev/null
	run renameat2 "$MNT/e1" "$MNT/e2" 2
	[ "$status" -eq 0 ]
	[ "$(cat "$MNT/e1/s/f")" = e2 ]
	[ "$(cat "$MNT/e2/s/f")" = e1 ]
	umount_rw
	r4fsck -n "$T/a.img"
	[ "$(r4debugfs -R 'cat /x/a2/b/c/f' "$T/a.img")" = one ]
	[ "$(r4debugfs -R 'cat /e1/s/f' "$T/a.img")" = e2 ]
	[ "$(r4debugfs -R 'ls /' "$T/a.img" | tr '\n' ' ')" = ". .. a e1 e2 t1 x " ]
}

@test "r4mount -o rw: a full volume answers ENOSPC before any change; what was there stays; a truncate up is a hole; both checkers clean" {
	need_fuse
	r4mkfs -q "$T/a.img" 16M
	mount_rw "$T/a.img" commit=3600
	echo keep >"$MNT/a"
	# incompressible: the volume's files are compressed
	run dd if=/dev/urandom of="$MNT/big" bs=1M count=20 iflag=fullblock status=none
	[ "$status" -ne 0 ]
	[[ "$output" == *"No space left on device"* ]]
	# the transaction was not poisoned: later changes still commit
	echo after >"$MNT/b"
	sync "$MNT/b"
	# growing a file leaves a hole: no space asked for (a tail body
	# and an extent body), even far past the volume's size
	echo tail >"$MNT/t"
	truncate -s 1T "$MNT/t"
	[ "$(stat -c %s "$MNT/t")" -eq 1099511627776 ]
	umount_rw
	[ "$(r4debugfs -R 'stat /t' "$T/a.img" | sed -n 's/^ *size: *\([0-9]*\).*/\1/p')" = 1099511627776 ]
	grep -q "aborted" "$T/daemon.log" && { cat "$T/daemon.log"; false; }
	r4fsck -n "$T/a.img"
	[ "$(r4debugfs -R 'cat /a' "$T/a.img")" = keep ]
	[ "$(r4debugfs -R 'cat /b' "$T/a.img")" = after ]
	if once && command -v fsck.reiser4 >/dev/null 2>&1; then
		oracle_fsck "$T/a.img"
	fi
}

@test "r4mount -o rw: fallocate (modes 0 and KEEP_SIZE) writes the holes as zeros; ENOSPC before any change; PUNCH_HOLE and the other modes are EOPNOTSUPP" {
	need_fuse
	command -v fallocate >/dev/null || skip "fallocate (util-linux) not installed"
	r4mkfs -q -o create=reg40 "$T/a.img" 16M
	mount_rw "$T/a.img" commit=3600
	printf 'head' >"$MNT/f"
	truncate -s 1M "$MNT/f"
	printf 'tail' >>"$MNT/f"
	fallocate -o 4096 -l 200000 "$MNT/f"
	fallocate -n -o 900000 -l 300000 "$MNT/f"
	[ "$(stat -c %s "$MNT/f")" -eq $((1048576 + 4)) ]
	fallocate -l 2M "$MNT/f"
	[ "$(stat -c %s "$MNT/f")" -eq 2097152 ]
	fallocate -n -o 3M -l 1M "$MNT/f"
	[ "$(stat -c %s "$MNT/f")" -eq 2097152 ]
	run fallocate -p -o 0 -l 4096 "$MNT/f"
	[ "$status" -ne 0 ]
	[[ "$output" == *"supported"* ]]
	run fallocate -z -o 0 -l 4096 "$MNT/f"
	[ "$status" -ne 0 ]
	[[ "$output" == *"supported"* ]]
	run fallocate -l 100M "$MNT/g"
	[ "$status" -ne 0 ]
	[[ "$output" == *"No space left"* ]]
	[ "$(stat -c %s "$MNT/g")" -eq 0 ]
	umount_rw
	r4fsck -n "$T/a.img"
	# the bytes: head, zeros, tail, zeros; and no hole left below 2 MiB
	{ printf 'head'; head -c $((1048576 - 4)) /dev/zero; printf 'tail'
	  head -c $((2097152 - 1048580)) /dev/zero; } >"$T/want"
	r4debugfs -R 'cat /f' "$T/a.img" | cmp - "$T/want"
	r4debugfs -R 'blocks /f' "$T/a.img" >"$T/blocks"
	! grep -q hole "$T/blocks" || false
	[ "$(r4debugfs -R 'stat /f' "$T/a.img" | sed -n 's/^bytes: *//p')" -eq 2097152 ]
	if once && command -v fsck.reiser4 >/dev/null 2>&1; then
		oracle_fsck "$T/a.img"
	fi
}

@test "r4mount: no extended attributes, answered as the Reiser4 kernel does (EOPNOTSUPP; an empty list); cp -a --preserve=xattr works" {
	need_fuse
	r4mkfs -q "$T/a.img" 16M
	mount_rw "$T/a.img"
	python3 "$BATS_TEST_DIRNAME/../helpers/xattrprobe.py" "$MNT" >"$T/x.out"
	umount_rw
	cat "$T/x.out"
	# tests/kernel/mount-rw.bats compares every line with the kernel's
	grep -qx 'xp_f list ok \[\]' "$T/x.out"
	grep -qx 'xp_d get user.a ENOTSUP' "$T/x.out"
	grep -qx 'xp_f set user.a ENOTSUP' "$T/x.out"
	grep -qx 'xp_f remove user.a ENOTSUP' "$T/x.out"
	grep -qx 'xp_f get system.posix_acl_access ENOTSUP' "$T/x.out"
	grep -q '^cp --preserve=xattr xp_f xp_c2 exit 0' "$T/x.out"
	grep -q '^cp -a --preserve=xattr xp_d xp_c3 exit 0' "$T/x.out"
	r4fsck -n "$T/a.img"
}

@test "r4mount -o rw: a volume whose status block says damaged is mounted read-only (EROFS), with a line saying so" {
	need_fuse
	. "$BATS_TEST_DIRNAME/../surgery.sh"
	r4mkfs -q "$T/a.img" 64M
	# the status word of the status block (block 21): 0x2, damaged
	poke "$T/a.img" $((21 * 4096 + 16)) 2 8
	sum=$(sha256sum <"$T/a.img")
	mount_rw "$T/a.img"
	grep -q "needs repair" "$T/daemon.log"
	run sh -c "echo x >'$MNT/new'"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Read-only file system"* ]]
	umount_rw
	[ "$(sha256sum <"$T/a.img")" = "$sum" ]
}
