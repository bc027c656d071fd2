# SPDX-License-Identifier: GPL-2.0-or-later
# Shared set-up for the Bats tests. Each test gets its own temporary
# folder ($T), removed afterwards unless R4_KEEP_TMP is set.

setup() {
	T=$(mktemp -d "${TMPDIR:-/tmp}/r4bats.XXXXXX")
	export T
}

# A test fails when an oracle run through 'oracle' failed anywhere in it,
# even inside a pipeline or a $(...) whose status nobody sees. A FUSE
# mount a test left at $MNT is unmounted first, with a timeout, so that
# a failure never leaves a mount behind nor hangs make check.
teardown() {
	local failed=
	# a killed daemon's mount answers ENOTCONN: mountpoint(1) says no,
	# the mount table says yes
	if [ -n "${MNT:-}" ] && { mountpoint -q "$MNT" 2>/dev/null ||
		grep -q " $MNT fuse" /proc/self/mounts; }; then
		timeout 20 fusermount3 -u "$MNT" 2>/dev/null ||
			timeout 20 fusermount3 -uz "$MNT" 2>/dev/null || true
	fi
	if [ -s "$T/oracle-failed" ]; then
		cat "$T/oracle-failed"
		failed=1
	fi
	[ -n "${R4_KEEP_TMP:-}" ] || rm -rf "$T" ${BIG:+"$BIG"}
	[ -z "$failed" ]
}

# need_fuse: r4mount built (else the test fails), and a usable FUSE here
# (else the test is skipped, saying why).
need_fuse() {
	command -v r4mount >/dev/null 2>&1 ||
		{ echo "r4mount was not built (configure without --disable-mount)"; return 1; }
	[ -c /dev/fuse ] || skip "no /dev/fuse on this machine"
	{ exec 9<>/dev/fuse; } 2>/dev/null || skip "/dev/fuse is not usable by $(id -un)"
	exec 9>&-
	command -v fusermount3 >/dev/null 2>&1 || skip "fusermount3 (Debian fuse3) not installed"
	command -v python3 >/dev/null 2>&1 || skip "python3 not installed"
}

# big_tmp: sets BIG to a folder for sparse images of terabytes. On a disk
# mounted with discard, deleting one takes minutes (each of its tens of
# thousands of written runs is discarded); in a tmpfs it takes a moment.
# /dev/shm when it is a tmpfs with 2 GiB free, else a folder under $T.
big_tmp() {
	local avail
	avail=$(df -k --output=fstype,avail /dev/shm 2>/dev/null | awk 'NR == 2 && $1 == "tmpfs" { print $2 }')
	if [ -n "$avail" ] && [ "$avail" -gt $((2 * 1024 * 1024)) ] &&
	   BIG=$(mktemp -d /dev/shm/r4big.XXXXXX 2>/dev/null); then
		return 0
	fi
	BIG=$T/big
	mkdir -p "$BIG"
}

# oracle [-s MAX] CMD ARGS...: run the test oracle (fsck.reiser4,
# debugfs.reiser4, r4ref, ...) in a pipeline or a command substitution.
# An exit status above MAX (default 0), or death by a signal other than
# SIGPIPE (a reader that stopped early), is recorded and fails the test
# at teardown: an oracle that fails is a failure, never a quiet empty
# output.
oracle() {
	local max=0 rc=0
	if [ "$1" = -s ]; then
		max=$2
		shift 2
	fi
	"$@" || rc=$?
	if [ "$rc" -gt "$max" ] && [ "$rc" -ne 141 ]; then
		echo "oracle failed (status $rc): $*" | tee -a "$T/oracle-failed" >&2
	fi
	return "$rc"
}

# Skip when the test oracle (reiser4progs) is not installed. Only that may
# skip: an oracle that fails or crashes fails the test (oracle_fsck,
# oracle_field).
need_oracle() {
	command -v fsck.reiser4 >/dev/null 2>&1 || skip "reiser4progs not installed"
}

# Skip when r4ref is not built because libreiser4 is not installed; when
# configure found libreiser4 (R4_HAVE_R4REF=1, set by make check) a
# missing r4ref is a failure.
need_r4ref() {
	command -v r4ref >/dev/null 2>&1 && return 0
	if [ "${R4_HAVE_R4REF:-0}" = 1 ]; then
		echo "r4ref not found although libreiser4 is installed"
		return 1
	fi
	skip "r4ref (libreiser4) not built"
}

# full_later: a quick crash loop (tests/crash/*.sh quick) that is skipped
# when R4_CRASH_FULL_LATER=1, because the same family runs in full (every
# cut point) later in the same run with the same build: .ci/run's plain
# pass, whose .ci/extra runs make crashcheck. The sanitizer pass runs
# them all, and the harness's own tests always run.
full_later() {
	if [ "${R4_CRASH_FULL_LATER:-0}" = 1 ]; then
		skip "make crashcheck runs this family in full"
	fi
}

# once: 0 in the second pass of .ci/run (the sanitizer build, R4_ONCE=0),
# where the slowest oracle loops (the same fsck.reiser4 runs over the
# same images) are not run again; our own checks in the test still are.
once() {
	[ "${R4_ONCE:-1}" != 0 ]
}

# fsck.reiser4 --check; succeeds only when it calls the volume consistent.
# In the sanitizer pass (not once) it does not run: fsck.reiser4 is not
# built with the sanitizers, and the plain pass ran it on the same images
# (the commands that make them are the same code); a test whose images
# depend on timing (a kill at a random moment), or that needs what
# fsck.reiser4 does to the image or says, calls oracle_fsck_run.
oracle_fsck() {
	once || return 0
	oracle_fsck_run "$1"
}

oracle_fsck_run() {
	run fsck.reiser4 --check -f -y "$1"
	if [ "$status" -ne 0 ] || ! grep -q "FS is consistent" <<<"$output"; then
		echo "fsck.reiser4 --check $1 said (status $status):"
		echo "$output" | tail -n 30
		return 1
	fi
}

# One field of 'debugfs.reiser4 -f -s' ("free blocks:", "root block:", ...).
# When debugfs.reiser4 fails (exit status, a signal) or does not print the
# field, it prints "oracle-failed" (and why, on stderr) and returns 1, so
# that no comparison with it passes.
oracle_field() {
	local out rc val
	out=$(debugfs.reiser4 -f -s "$1" 2>/dev/null)
	rc=$?
	val=$(sed -n "s/^$2:[[:space:]]*//p" <<<"$out" | head -n 1)
	if [ "$rc" -ne 0 ] || [ -z "$val" ]; then
		echo "debugfs.reiser4 -f -s $1: status $rc, field '$2': '$val'" >&2
		echo oracle-failed
		return 1
	fi
	echo "$val"
}

# as_nobody CMD...: CMD run as the user nobody (uid and gid 65534, no
# groups; PATH and top_builddir kept), with $T open to it (mode 0755).
# Skips, saying why, when the test cannot drop privileges: not root (CI
# runs as root), or no setpriv.
as_nobody() {
	[ "$(id -u)" -eq 0 ] || skip "not root: cannot run a command as another user"
	command -v setpriv >/dev/null || skip "no setpriv to drop privileges"
	chmod 0755 "$T"
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		env PATH="$PATH" top_builddir="$top_builddir" "$@"
}
