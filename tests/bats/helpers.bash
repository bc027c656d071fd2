# SPDX-License-Identifier: GPL-2.0-or-later
# Shared set-up for the Bats tests. Each test gets its own temporary
# folder ($T), removed afterwards unless R4_KEEP_TMP is set.

setup() {
	T=$(mktemp -d "${TMPDIR:-/tmp}/r4bats.XXXXXX")
	export T
}

teardown() {
	[ -n "${R4_KEEP_TMP:-}" ] || rm -rf "$T"
}

# Skip when the test oracle (reiser4progs) is not installed.
need_oracle() {
	command -v fsck.reiser4 >/dev/null 2>&1 || skip "reiser4progs not installed"
}

need_r4ref() {
	command -v r4ref >/dev/null 2>&1 || skip "r4ref (libreiser4) not built"
}

# fsck.reiser4 --check; succeeds only when it calls the volume consistent.
oracle_fsck() {
	run fsck.reiser4 --check -f -y "$1"
	if [ "$status" -ne 0 ] || ! grep -q "FS is consistent" <<<"$output"; then
		echo "fsck.reiser4 --check $1 said (status $status):"
		echo "$output" | tail -n 30
		return 1
	fi
}

# One field of 'debugfs.reiser4 -f -s' ("free blocks:", "root block:", ...).
oracle_field() {
	debugfs.reiser4 -f -s "$1" 2>/dev/null | sed -n "s/^$2:[[:space:]]*//p" | head -n 1
}
