#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Crash tests of r4pack add and r4debugfs -w (the reduced set; `make
# crashcheck` runs tests/crash/run.sh full): the workload is cut at its
# writes by the fault layer (R4_FAULT, read only by the test builds of
# tests/crash/bin), and every cut image, replayed, must be r4fsck-clean
# and hold exactly the content before or after.

load helpers

# The test builds first on PATH for the harness.
hooked() {
	PATH="$top_builddir/tests/crash/bin:$PATH" "$@"
}

crash() {
	full_later
	run hooked "$top_srcdir/tests/crash/run.sh" quick "$1"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"all before/after"* ]]
}

@test "crash: r4pack add of 50 files, every 5th write cut" {
	crash add50
}

@test "crash: r4pack add --compress of compressed files (zstd1, 16K clusters), every 5th write cut" {
	crash addcc
}

@test "crash: r4debugfs -w truncate and write of compressed files, every write" {
	crash cctrunc
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

@test "crash: r4resize growing a volume past two new bitmap regions, every write" {
	crash grow
}

@test "crash: r4resize -M of an aged volume (blocks moved in batches, then the size), sampled writes and the last ones" {
	crash shrink
}

@test "crash: r4mount -o rw, programs' changes through FUSE in one commit at the unmount, sampled writes and the last ones" {
	need_fuse
	[ -x "$top_builddir/tests/crash/bin/r4mount" ]
	crash mountrw
}

@test "crash: the harness sees a broken workload" {
	# a workload that leaves the image half changed must be caught
	local img=$T/v.img
	mkdir -p "$T/src/d"
	echo x >"$T/src/d/f"
	r4pack create -q "$T/src" "$img"
	# every point, also in the sanitizer pass (which thins the loops)
	export R4_CRASH_THIN=1
	run hooked "$top_srcdir/tests/crash/crashtest.sh" --name two --cut all \
		--torn none --drop none --oracle none "$img" -- \
		r4debugfs -w -R 'mkdir /m1' -R 'mkdir /m2' @IMG@
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"neither before nor after"* ]]
}

@test "crash: a bad R4_CRASH_THIN is refused, not read as no thinning" {
	local img=$T/v.img v
	mkdir -p "$T/src"
	echo x >"$T/src/f"
	r4pack create -q "$T/src" "$img"
	for v in 0 x 100 -3; do
		R4_CRASH_THIN=$v run hooked "$top_srcdir/tests/crash/crashtest.sh" \
			--name thin --cut all --torn none --drop none --oracle none \
			"$img" -- r4debugfs -w -R 'mkdir /m1' @IMG@
		echo "$v: $output"
		[ "$status" -eq 2 ]
		[[ "$output" == *"bad R4_CRASH_THIN '$v'"* ]]
		R4_CRASH_THIN=$v run "$top_srcdir/tests/crash/repair.sh" quick twice
		echo "$v: $output"
		[ "$status" -eq 2 ]
		[[ "$output" == *"bad R4_CRASH_THIN '$v'"* ]]
	done
}

@test "crash: the installed r4pack ignores R4_FAULT (writes are not cut)" {
	local img=$T/v.img
	mkdir -p "$T/src" "$T/add/new"
	echo x >"$T/src/f"
	for i in $(seq 1 20); do echo "file $i" >"$T/add/new/n$i"; done
	r4pack create -q "$T/src" "$img"
	# the test build is cut by it: the sanity check of this test
	cp "$img" "$T/cut.img"
	R4_FAULT=cut-after=1 R4_FAULT_REPORT="$T/rep.cut" \
		"$top_builddir/tests/crash/bin/r4pack" add -q "$T/cut.img" "$T/add"
	grep -q 'cut=1' "$T/rep.cut"
	# the installed command: all of it reaches the image, no report
	R4_FAULT=cut-after=1 R4_FAULT_REPORT="$T/rep" \
		run "$top_builddir/cmd/r4pack" add -q "$img" "$T/add"
	echo "$output"
	[ "$status" -eq 0 ]
	[ ! -e "$T/rep" ]
	run r4fsck --check "$img"
	echo "$output"
	[ "$status" -eq 0 ]
	run r4debugfs -R 'ls /new' "$img"
	[[ "$output" == *n20* ]]
	# nor does a bad value stop it
	R4_FAULT=bogus run "$top_builddir/cmd/r4pack" add -q "$img" "$T/src"
	[ "$status" -eq 0 ]
}

@test "crash: no installed program or library names R4_FAULT" {
	local f
	for f in "$top_builddir"/cmd/r4* "$top_builddir"/libimage/*.a \
		 "$top_builddir"/libimage/.libs/*.so*; do
		[ -e "$f" ] || continue
		if grep -q R4_FAULT "$f"; then
			echo "$f names R4_FAULT"
			return 1
		fi
	done
	# the check can see it: the test build names it
	grep -q R4_FAULT "$top_builddir/tests/crash/bin/r4pack"
}

@test "crash: r4pack add of 50 files onto a bitmap that calls the root node free (checksum matching), every 5th write cut" {
	crash badbitmap
}

@test "crash: r4fsck -y of a damaged volume, every 3rd write cut, then a rerun finishes" {
	full_later
	PATH="$top_builddir/tests/crash/bin:$PATH" run "$top_srcdir/tests/crash/repair.sh" quick
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"all finished by a rerun"* ]]
}

@test "crash: r4fsck -y rebuilding a damaged tree, every 10th write cut, then a rerun finishes" {
	full_later
	PATH="$top_builddir/tests/crash/bin:$PATH" run "$top_srcdir/tests/crash/repair.sh" quick tree
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"all finished by a rerun"* ]]
}

@test "crash: r4fsck -y copying blocks claimed twice, every write cut, then a rerun finishes" {
	full_later
	PATH="$top_builddir/tests/crash/bin:$PATH" run "$top_srcdir/tests/crash/repair.sh" quick twice
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"all finished by a rerun"* ]]
}

@test "crash: r4fsck -y re-keying stat data and a duplicate object id, every write cut, then a rerun finishes" {
	full_later
	PATH="$top_builddir/tests/crash/bin:$PATH" run "$top_srcdir/tests/crash/repair.sh" quick keys
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"all finished by a rerun"* ]]
}
