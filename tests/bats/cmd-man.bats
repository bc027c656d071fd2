#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Every command has --help and --version, and every long option its
# --help lists is described in its man page.

load helpers

# Long options of a --help text, without popt's own --help/--usage.
long_options() {
	"$@" --help 2>&1 | grep -oE -- '--[a-z][a-z-]+' | sort -u |
		grep -vxE -- '--(help|usage)'
}

check_page() {
	local page=$top_srcdir/man/$1; shift
	[ -f "$page" ] || { echo "no $page"; return 1; }
	local missing=""
	for o in $(long_options "$@"); do
		# man pages write dashes as \- or \-\-
		grep -qE -- "(${o//-/\\\\?-})" "$page" || missing="$missing $o"
	done
	[ -z "$missing" ] || { echo "$page lacks:$missing"; return 1; }
}

@test "r4mkfs: --help, --version, every long option in r4mkfs.8" {
	r4mkfs --version | grep -q r4kit
	check_page r4mkfs.8 r4mkfs
}

@test "r4fsck: --help, --version, every long option in r4fsck.8" {
	r4fsck --version | grep -q r4kit
	check_page r4fsck.8 r4fsck
}

@test "r4debugfs: --help, --version, every long option in r4debugfs.8" {
	r4debugfs --version | grep -q r4kit
	check_page r4debugfs.8 r4debugfs
}

@test "r4pack: --help, --version, every long option of each command in r4pack.1" {
	r4pack --version | grep -q r4kit
	for c in create extract add; do
		check_page r4pack.1 r4pack $c
	done
}

@test "r4pack: each command's usage line names r4pack and the command" {
	local c
	for c in create add extract; do
		run r4pack "$c" --help
		[ "$status" -eq 0 ]
		[ "${lines[0]#Usage: r4pack $c }" != "${lines[0]}" ]
	done
}

@test "r4mount: --help, --version, every long option in r4mount.8" {
	command -v r4mount >/dev/null 2>&1 || skip "r4mount not built (configure --disable-mount)"
	r4mount --version | grep -q r4kit
	check_page r4mount.8 r4mount
}

@test "r4repacker: --help, --version, every long option in r4repacker.8" {
	r4repacker --version | grep -q r4kit
	check_page r4repacker.8 r4repacker
}

@test "r4resize: --help, --version, every long option in r4resize.8" {
	r4resize --version | grep -q r4kit
	check_page r4resize.8 r4resize
}
