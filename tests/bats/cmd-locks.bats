#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# In use means in use, by anyone: a POSIX lock (fcntl, as User-Mode
# Linux takes on its disk image), an OFD lock (as qemu takes) or a
# flock(2) held by another process makes every writer refuse the image
# with exit 75 (r4fsck: 8 and "in use"), naming the image and the
# holder's pid where the kernel tells it, and change nothing; readers
# take shared locks; --wait[=SECONDS] waits.

load helpers

make_image() {
	mkdir -p "$T/src/d" "$T/new"
	echo one >"$T/src/d/one"
	head -c 20000 /dev/urandom >"$T/src/big"
	echo added >"$T/new/added"
	run r4pack create -q "$T/src" "$T/v.img"
	[ "$status" -eq 0 ]
	# an undo file for it (nothing to undo: --undo would write only the
	# size it was made for)
	cp "$T/v.img" "$T/c.img"
	r4fsck -p -q -z "$T/u.undo" "$T/c.img"
}

# hold KIND IMAGE SECONDS: another process takes a lock of KIND (posix,
# posix-read, ofd, flock) on the whole of IMAGE and keeps it SECONDS;
# returns once it holds it (its pid in HOLDER).
hold() {
	rm -f "$T/held"
	python3 - "$1" "$2" "$3" "$T/held" <<'PY' &
import fcntl, os, struct, sys, time
kind, path, secs, flag = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
fd = os.open(path, os.O_RDWR)
if kind == 'posix':
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
elif kind == 'posix-read':
    fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
elif kind == 'ofd':
    # struct flock: l_type, l_whence, l_start, l_len, l_pid (0: OFD)
    fcntl.fcntl(fd, getattr(fcntl, 'F_OFD_SETLK', 37),
                struct.pack('hhqqi4x', fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))
elif kind == 'flock':
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
else:
    sys.exit('unknown lock kind ' + kind)
with open(flag + '.tmp', 'w') as f:
    f.write(str(os.getpid()))
os.rename(flag + '.tmp', flag)
time.sleep(secs)
PY
	HOLDER=$!
	local i
	for i in $(seq 1 600); do
		[ -s "$T/held" ] && return 0
		kill -0 "$HOLDER" 2>/dev/null || break
		sleep 0.05
	done
	echo "the holder never took its $1 lock"
	return 1
}

release() {
	kill "$HOLDER" 2>/dev/null || true
	wait "$HOLDER" 2>/dev/null || true
}

# Every writer is refused with 75 (r4fsck -y: 8), one line naming the
# image and "in use" and, when $2 is set, the pid $2; the image stays
# byte for byte the same. $3 = shared: the holder only reads, so
# r4fsck without a mode (which writes only to replay a journal) checks,
# and create may put a new image in place of the old (the reader keeps
# the old file).
writers_refused() {
	local img=$1 pid=${2:-} sum cmds
	sum=$(sha256sum <"$img")
	cmds=("r4pack add $img $T/new" "r4debugfs -w -R mkdir\ /x $img"
	      "r4repacker $img" "r4repacker -q --time-limit 0 $img"
	      "r4resize $img 100M"
	      "r4mkfs -q -f $img" "r4fsck -y $img" "r4fsck -p $img"
	      "r4fsck --undo $T/u.undo $img")
	[ "${3:-}" = shared ] ||
		cmds+=("r4pack create -q $T/new $img" "r4fsck $img")
	for cmd in "${cmds[@]}"; do
		eval "run $cmd"
		echo "$cmd: $status: $output"
		case $cmd in
		r4fsck*) [ "$status" -eq 8 ] ;;
		*) [ "$status" -eq 75 ] ;;
		esac
		[ "${#lines[@]}" -eq 1 ]
		[[ "$output" == *"$img: in use: "* ]]
		if [ -n "$pid" ]; then
			[[ "$output" == *"process $pid "* ]]
		fi
		[ "$(sha256sum <"$img")" = "$sum" ]
	done
}

# Readers: refused beside a writer's lock (75, r4fsck -n 8), or with
# --no-lock they read and say on stderr that the image is in use.
readers_refused() {
	local img=$1
	for cmd in "r4fsck -n $img" "r4debugfs -R ls $img" \
		   "r4pack extract $img $T/out.tar" "r4repacker -n $img"; do
		eval "run $cmd"
		echo "$cmd: $status: $output"
		case $cmd in
		r4fsck*) [ "$status" -eq 8 ] ;;
		*) [ "$status" -eq 75 ] ;;
		esac
		[[ "$output" == *"$img: in use: "*"--no-lock"* ]]
		eval "${cmd/ $img/ --no-lock $img}" >/dev/null 2>"$T/nolock.err"
		cat "$T/nolock.err"
		grep -q "$img: in use: .*(--no-lock)" "$T/nolock.err"
	done
}

@test "locks: a POSIX lock (fcntl.lockf) held by another process: every writer refused (75, r4fsck 8), its pid named, nothing changed" {
	make_image
	hold posix "$T/v.img" 60
	writers_refused "$T/v.img" "$(cat "$T/held")"
	readers_refused "$T/v.img"
	release
	# free again: the writers go on
	r4pack add -q "$T/v.img" "$T/new"
	r4fsck -n -q "$T/v.img"
}

@test "locks: an OFD lock (F_OFD_SETLK) held by another process: every writer refused, nothing changed" {
	make_image
	hold ofd "$T/v.img" 60
	writers_refused "$T/v.img"
	run r4pack add "$T/v.img" "$T/new"
	[[ "$output" == *"OFD write lock"* ]]
	readers_refused "$T/v.img"
	release
	r4pack add -q "$T/v.img" "$T/new"
}

@test "locks: a flock(2) held by another process: every writer refused, nothing changed" {
	make_image
	hold flock "$T/v.img" 60
	writers_refused "$T/v.img"
	release
}

@test "locks: a POSIX read lock (a reader elsewhere): writers refused, readers go on" {
	make_image
	hold posix-read "$T/v.img" 60
	writers_refused "$T/v.img" "$(cat "$T/held")" shared
	r4fsck -n -q "$T/v.img"
	r4debugfs -R 'ls /' "$T/v.img" >/dev/null
	r4repacker -n -q "$T/v.img"
	release
}

@test "locks: r4kit's own writer holds an OFD write lock, seen by another program's fcntl test" {
	make_image
	mkfifo "$T/cmds"
	r4debugfs -w "$T/v.img" <"$T/cmds" >/dev/null 2>&1 &
	local dbg=$!
	exec 8>"$T/cmds"
	local got=
	SECONDS=0
	while [ "$SECONDS" -lt 30 ]; do
		got=$(python3 - "$T/v.img" <<'PY'
import fcntl, os, struct, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
r = fcntl.fcntl(fd, getattr(fcntl, 'F_OFD_GETLK', 36),
                struct.pack('hhqqi4x', fcntl.F_RDLCK, 0, 0, 0, 0))
print({fcntl.F_WRLCK: 'write', fcntl.F_RDLCK: 'read'}.get(
    struct.unpack('hhqqi4x', r)[0], 'none'))
PY
)
		[ "$got" = write ] && break
		kill -0 "$dbg" || break
		sleep 0.05
	done
	exec 8>&-
	wait "$dbg"
	[ "$got" = write ]
}

@test "locks: --wait=2 goes on when the holder leaves after 1 s, and fails (75) when it stays" {
	make_image
	hold posix "$T/v.img" 1
	SECONDS=0
	run r4pack add -q --wait=2 "$T/v.img" "$T/new"
	echo "$output"
	[ "$status" -eq 0 ]
	r4debugfs -R 'stat /added' "$T/v.img" >/dev/null
	wait "$HOLDER"
	# a bare --wait before the image takes no argument
	hold ofd "$T/v.img" 1
	run r4debugfs --wait -w -R 'mkdir /waited' "$T/v.img"
	echo "$output"
	[ "$status" -eq 0 ]
	wait "$HOLDER"
	hold posix "$T/v.img" 30
	sum=$(sha256sum <"$T/v.img")
	SECONDS=0
	for cmd in "r4repacker --wait=2" "r4mkfs -q -f --wait=1" \
		   "r4debugfs -w --wait=1 -R mkdir\ /y" "r4fsck -y --wait=1"; do
		eval "run $cmd $T/v.img"
		echo "$cmd: $status: $output"
		case $cmd in
		r4fsck*) [ "$status" -eq 8 ] ;;
		*) [ "$status" -eq 75 ] ;;
		esac
		[[ "$output" == *"in use: process $(cat "$T/held") "* ]]
	done
	# each waited as long as it was told, not more (r4fsck -y: once,
	# not once per step)
	echo "$SECONDS s"
	[ "$SECONDS" -ge 5 ]
	[ "$SECONDS" -le 15 ]
	[ "$(sha256sum <"$T/v.img")" = "$sum" ]
	release
	run r4pack add --wait=x "$T/v.img" "$T/new"
	[ "$status" -eq 2 ]
	run r4fsck --wait=-1 "$T/v.img"
	[ "$status" -eq 16 ]
}

@test "locks: an image attached to a loop device (not mounted) is refused for writing, read otherwise" {
	[ "$(id -u)" -eq 0 ] || skip "needs root to attach a loop device"
	command -v losetup >/dev/null || skip "needs losetup"
	make_image
	dev=$(losetup -f --show "$T/v.img" 2>"$T/losetup.err") ||
		skip "cannot attach a loop device here: $(head -n 1 "$T/losetup.err")"
	sum=$(sha256sum <"$T/v.img")
	run r4pack add "$T/v.img" "$T/new"
	r1=$status o1=$output
	run r4fsck -y "$T/v.img"
	r2=$status o2=$output
	run r4fsck -n "$T/v.img"
	r3=$status
	losetup -d "$dev"
	echo "$o1"; echo "$o2"
	[ "$r1" -eq 75 ]
	[ "$r2" -eq 8 ]
	[ "$r3" -eq 0 ]
	[[ "$o1" == *"$T/v.img: in use: attached to the loop device $dev"* ]]
	[[ "$o2" == *"in use"* ]]
	[ "$(sha256sum <"$T/v.img")" = "$sum" ]
}

# The real case: the Reiser4 kernel (User-Mode Linux) has the image
# mounted read-write while r4repacker runs.
@test "locks: the image mounted read-write by the Reiser4 kernel (UML): r4repacker refused with 75, the kernel's volume intact" {
	uml=$top_srcdir/../shared/uml/r4kernel.sh
	[ -x "$uml" ] || skip "no ../shared/uml beside the source tree"
	make_image
	cat >"$T/guest.sh" <<EOF
sleep 4
echo guest >/mnt/from-guest
EOF
	R4TIMEOUT=120 "$uml" "$T/v.img" "$T/guest.sh" >"$T/uml.out" 2>&1 &
	local vm=$! i pid=
	# the kernel holds a POSIX write lock on its disk while it runs
	for i in $(seq 1 600); do
		pid=$(python3 - "$T/v.img" <<'PY'
import fcntl, os, struct, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
r = struct.unpack('hhqqi4x', fcntl.fcntl(fd, getattr(fcntl, 'F_OFD_GETLK', 36),
                  struct.pack('hhqqi4x', fcntl.F_WRLCK, 0, 0, 0, 0)))
print(r[4] if r[0] == fcntl.F_WRLCK else '')
PY
)
		[ -n "$pid" ] && break
		kill -0 "$vm" 2>/dev/null || break
		sleep 0.05
	done
	run r4repacker "$T/v.img"
	echo "$status: $output"
	rs=$status ro=$output
	run r4pack add "$T/v.img" "$T/new"
	as=$status
	wait "$vm"
	cat "$T/uml.out"
	[ -n "$pid" ]
	[ "$rs" -eq 75 ]
	[[ "$ro" == *"$T/v.img: in use: process $pid holds a POSIX write lock"* ]]
	[ "$as" -eq 75 ]
	! grep -qiE "reiser4.*(panic|error|warning)|BUG:|Oops" "$T/uml.out" || false
	# what the kernel wrote is there, the volume clean
	r4fsck -n -q "$T/v.img"
	r4debugfs -R 'cat /from-guest' "$T/v.img" | grep -qx guest
	oracle_fsck "$T/v.img"
}
