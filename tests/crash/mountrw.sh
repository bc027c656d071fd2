#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# mountrw.sh IMAGE: the crash workload of r4mount -o rw (tests/crash/
# run.sh mountrw). The test build of r4mount (tests/crash/bin, first on
# PATH: it reads R4_FAULT) serves IMAGE in the foreground with
# commit=3600, so that the changes below gather in one transaction
# that commits at the unmount; the harness cuts that run at each of its
# writes (the data written during the requests, then the commit's).
# Every change goes through FUSE as a program would make it: writes
# into the middle of an extent file (copy-on-write of its blocks), an
# append, a write past the end (a hole), a tail file grown into extents,
# new files and directories, renames across directories, unlink, rm -r,
# links, a FIFO, truncates down and up, chmod, an exchange of a
# directory and a file (RENAME_EXCHANGE), and a compressed file (the
# volume's root says ccreg40, so the mount's new files are compressed):
# made over three clusters, a write inside its second cluster, one past
# its end (a hole between), a truncate down; at the end every object
# gets one fixed mtime, so that an uncut run and a cut one have the same
# manifest (the mount stamps changes with the clock).
# Exit: the daemon's status (2 when it could not mount); a daemon killed
# by a signal kills this script with the same signal, which the harness
# counts as a failure.
set -u

img=$1
mnt=$(mktemp -d "${TMPDIR:-/tmp}/crashmnt.XXXXXX") || exit 2
log=$mnt.log
r4mount -f -o rw,commit=3600 "$img" "$mnt" 2>"$log" &
pid=$!
for _ in $(seq 1 200); do
	mountpoint -q "$mnt" && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.02
done
if ! mountpoint -q "$mnt"; then
	cat "$log" >&2
	rm -f "$log"
	rmdir "$mnt"
	exit 2
fi

# put FILE OFFSET LENGTH CHAR: LENGTH bytes of CHAR written at OFFSET,
# the rest of FILE kept
put() {
	yes "$4" | tr -d '\n' | head -c "$3" |
		dd of="$1" bs=64K seek="$2" oflag=seek_bytes conv=notrunc \
		iflag=fullblock status=none
}

# xchg A B: renameat2(A, B, RENAME_EXCHANGE)
xchg() {
	python3 -c 'import ctypes,os,sys; l=ctypes.CDLL(None, use_errno=True); sys.exit(1 if l.renameat2(-100, os.fsencode(sys.argv[1]), -100, os.fsencode(sys.argv[2]), 2) else 0)' "$@"
}

# A cut workload goes on with the old blocks under it: a request may
# fail then. Each step is on its own; the unmount always comes.
(
	cd "$mnt" || exit 1
	put dir/big 10000 6 m
	put dir/big 20000 9000 x
	put a/x 20000 50000 y
	put a/x 200000 4 h
	put a/f3 4 20000 t
	mkdir m
	put m/new 0 30000 n
	put m/cc 0 150000 c
	put m/cc 70000 3000 d
	put m/cc 300000 10 e
	truncate -s 100000 m/cc
	mv a/f5 b/f5
	mv dir/s1 m/s1
	rm b/g3
	rm -r dir/s2
	ln a/f6 m/f6
	ln -s ../a m/toa
	mkfifo m/p
	truncate -s 0 dir/s3/f1
	truncate -s 30000 dir/big
	truncate -s 100000 a/f7
	chmod 600 a/f8
	xchg dir/s3 a/f3
	find . -exec touch -h -d @1650000000 {} +
) >/dev/null 2>&1
fusermount3 -u "$mnt" 2>/dev/null || { sleep 0.5; fusermount3 -u "$mnt"; }
wait "$pid"
rc=$?
rm -f "$log"
rmdir "$mnt" 2>/dev/null
[ "$rc" -gt 128 ] && kill -s $((rc - 128)) $$
exit "$rc"
