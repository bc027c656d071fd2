#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Crash tests of r4pack add and r4debugfs -w (the reduced set; `make
# crashcheck` runs tests/crash/run.sh full): the workload is cut at its
# writes by the fault layer (R4_FAULT), and every cut image, replayed,
# must be r4fsck-clean and hold exactly the content before or after.

load helpers

crash() {
	run "$top_srcdir/tests/crash/run.sh" quick "$1"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"all before/after"* ]]
}

@test "crash: r4pack add of 50 files, every 5th write cut" {
	crash add50
}

@test "crash: r4debugfs -w 'rm -r /dir'" {
	crash rmr
}

@test "crash: r4debugfs -w 'mv' of a file across directories, every write" {
	crash mvfile
}

@test "crash: r4debugfs -w 'mv' of a directory across directories, every write" {
	crash mvdir
}

@test "crash: the harness sees a broken workload" {
	# a workload that leaves the image half changed must be caught
	local img=$T/v.img
	mkdir -p "$T/src/d"
	echo x >"$T/src/d/f"
	r4pack create -q "$T/src" "$img"
	run "$top_srcdir/tests/crash/crashtest.sh" --name two --cut all \
		--torn none --drop none --oracle none "$img" -- \
		r4debugfs -w -R 'mkdir /m1' -R 'mkdir /m2' @IMG@
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"neither before nor after"* ]]
}

@test "crash: r4fsck -y of a damaged volume, every 3rd write cut, then a rerun finishes" {
	run "$top_srcdir/tests/crash/repair.sh" quick
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"all finished by a rerun"* ]]
}

@test "crash: r4fsck -y rebuilding a damaged tree, every 10th write cut, then a rerun finishes" {
	run "$top_srcdir/tests/crash/repair.sh" quick tree
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"all finished by a rerun"* ]]
}
