#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The directory graph (issue 24): an entry, other than "." and "..",
# naming a directory that has its name elsewhere (the root, which has
# none in any directory; one above the entry: a loop; one in an
# unrelated place) is a second name. r4fsck -n reports it (dir-hard-link),
# -y removes it and a second run finds nothing; r4mount answers EIO for
# it, so `tar -c` of the mount ends; rdump and extract skip it with a
# message naming both paths. The layouts are made with r4debugfs -w (a
# hard link of a file) and a byte edit pointing the link at a directory.
# Every command runs under `timeout` so that a loop fails, not hangs.

load helpers

. "$top_srcdir/tests/surgery.sh"


# layout DIR PATH: a volume (/a/b/leaf, /p/pf, /q/d/g, /top) whose
# entry DIR/x, made as a hard link of /top, names the directory PATH.
# The files' manifest before the link is in $T/good.man.
layout() {
	local s=$T/src
	rm -rf "$s" "$T/good.img"
	mkdir -p "$s/a/b" "$s/p" "$s/q/d"
	echo deep >"$s/a/b/leaf"
	echo pf >"$s/p/pf"
	echo g >"$s/q/d/g"
	head -c 9000 /dev/urandom >"$s/top"
	r4pack create -q "$s" "$T/good.img"
	r4manifest "$T/good.img" | cut -f 1-11 >"$T/good.man"
	cp "$T/good.img" "$T/bad.img"
	r4debugfs -w -R "ln /top $1/x" "$T/bad.img"
	retarget "$T/bad.img" "$1" x "$2"
	cp "$T/bad.img" "$T/orig.img"
}

# The same problems from the object pass over sorted runs, over runs of
# one record spilled to a file, and over the tables the repair uses.
same_problems() {
	local a b c
	mkdir -p "$T/runs"
	a=$(timeout 20 r4fsck -n "$1" 2>&1) || true
	b=$(TMPDIR=$T/runs R4_CHECK_RUN_BYTES=1 timeout 20 r4fsck -n "$1" 2>&1) || true
	c=$(R4_CHECK_TABLES=1 timeout 20 r4fsck -n "$1" 2>&1) || true
	[ "$a" = "$b" ] || { diff <(echo "$a") <(echo "$b"); return 1; }
	[ "$a" = "$c" ] || { diff <(echo "$a") <(echo "$c"); return 1; }
}

# found WHAT: -n exits 4 naming the entry DIR/x's problem, text WHAT.
found() {
	run timeout 20 r4fsck -n "$T/bad.img"
	echo "$output"
	[ "$status" -eq 4 ]
	grep -q "entry 'x' of directory [0-9a-f]* is a second name of the directory$1" <<<"$output"
	same_problems "$T/bad.img"
}

# fixed: -y exits 1 with dir-hard-link fixed, a second -y finds nothing,
# -n and fsck.reiser4 call the volume clean, every file of the good
# volume is there as it was, and no path of it is missing. The repair
# takes its fixes from the bounded check's list (R4_FSCK_STATS: no
# table check), and a copy repaired over the tables (R4_CHECK_TABLES)
# gets the same report and bytes.
fixed() {
	local tabled
	export SOURCE_DATE_EPOCH=1700000000
	cp "$T/bad.img" "$T/tab.img"
	run timeout 20 env R4_CHECK_TABLES=1 r4fsck -y --json "$T/tab.img"
	tabled=${output//"$T/tab.img"/"$T/bad.img"}
	run timeout 20 env R4_FSCK_STATS=1 r4fsck -y --json "$T/bad.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == "r4fsck: stats: "*" rounds, 0 table checks"$'\n'* ]]
	output=${output#*$'\n'}
	[ "$tabled" = "$output" ] || { echo "tables: $tabled"; false; }
	cmp "$T/bad.img" "$T/tab.img"
	grep -q '"code":"dir-hard-link"' <<<"$output"
	[[ "$output" == *'"clean":true'* ]]
	run timeout 20 r4fsck -y "$T/bad.img"
	echo "second run: $output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	run timeout 20 r4fsck -n "$T/bad.img"
	[ "$status" -eq 0 ]
	if command -v fsck.reiser4 >/dev/null; then
		oracle_fsck "$T/bad.img"
	fi
	timeout 20 r4manifest "$T/bad.img" | cut -f 1-11 >"$T/now.man"
	diff <(awk -F '\t' '$2 != "d"' "$T/good.man") <(awk -F '\t' '$2 != "d"' "$T/now.man")
	diff <(cut -f 1 "$T/good.man") <(cut -f 1 "$T/now.man")
}

# walkers FIRST SECOND: on the damaged volume, rdump and extract end,
# each with one message naming the second name and the first path.
walkers() {
	mkdir "$T/out"
	run timeout 20 r4debugfs -R "rdump / $T/out" "$T/orig.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"rdump: $2: not dumped: a second name of the directory dumped as $1 "* ]]
	[ "$(cat "$T/out/a/b/leaf")" = deep ]
	run timeout 20 r4pack extract "$T/orig.img" "$T/out.tar"
	echo "$output"
	[ "$status" -eq 0 ]
	local want=./$1/
	[ "$1" != . ] || want=./
	[[ "$output" == *"./$2/: skipping: a second name of the directory $want "* ]]
	tar -tf "$T/out.tar" >"$T/members"
	grep -qx "./a/b/leaf" "$T/members"
	! grep -q "^./$2/" "$T/members" || false
}

@test "dirgraph: an entry in a subdirectory naming the root" {
	layout /a/b /
	found " (the root, which no entry names: a loop)"
	walkers . a/b/x
	fixed
}

@test "dirgraph: an entry in /a/b naming /a (a loop)" {
	layout /a/b /a
	found " (one above it: a loop)"
	walkers a a/b/x
	# hash (and bodyfile) walk once, naming both paths
	run timeout 20 r4debugfs -R "hash /" "$T/orig.img"
	echo "$output"
	[[ "$output" == *"/a/b/x: not walked: a second name of the directory walked as /a "* ]]
	# rm -r does not go down a second name: refused, nothing changed
	run timeout 20 r4debugfs -w -R "rm -r /a" "$T/bad.img"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *'"x" is a second name of directory'* ]]
	cmp "$T/bad.img" "$T/orig.img"
	fixed
}

@test "dirgraph: two entries naming one directory in unrelated places: the one its \"..\" names stays" {
	layout /p /q/d
	found ""
	# Walked in name order, /p/x comes first: /q/d is the one skipped.
	walkers p/x q/d
	fixed
	[ "$(r4debugfs -R "cat /q/d/g" "$T/bad.img")" = g ]
}

@test "dirgraph: a directory named only from below itself: the loop cut, the directory into /lost+found" {
	layout /a/b /a
	# The root's entry 'a' names the file /top instead: /a and /a/b are a
	# loop the root does not reach.
	retarget "$T/bad.img" / a /top
	run timeout 20 r4fsck -n "$T/bad.img"
	echo "$output"
	[ "$status" -eq 4 ]
	[[ "$output" == *"is a second name of the directory (one above it: a loop)"* ]]
	[[ "$output" == *"is not reachable from the root directory"* ]]
	same_problems "$T/bad.img"
	run timeout 20 r4fsck -y "$T/bad.img"
	echo "$output"
	[ "$status" -eq 1 ]
	run timeout 20 r4fsck -y "$T/bad.img"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	if command -v fsck.reiser4 >/dev/null; then
		oracle_fsck "$T/bad.img"
	fi
	timeout 20 r4manifest "$T/bad.img" | grep -q "^/lost+found/#[0-9a-f]*/b/leaf	"
}

@test "dirgraph: a loop of \"..\" entries: reading ends, -y mends it" {
	layout /a/b /top
	# /a's ".." names /a/b, whose ".." names /a: a climb from either
	# never reaches the root.
	cp "$T/good.img" "$T/bad.img"
	retarget "$T/bad.img" /a .. /a/b
	run timeout 20 r4debugfs -R "ls -l /a/b" "$T/bad.img"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *leaf* ]]
	run timeout 20 r4debugfs -R "cat /a/b/leaf" "$T/bad.img"
	[ "$output" = deep ]
	run timeout 20 r4fsck -n "$T/bad.img"
	[ "$status" -eq 4 ]
	[[ "$output" == *'".." points to'* ]]
	run timeout 20 r4fsck -y "$T/bad.img"
	[ "$status" -eq 1 ]
	run timeout 20 r4fsck -y "$T/bad.img"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}


# mounted FIRST SECOND: r4mount in the foreground (its log in $T/log)
# answers EIO for the second name, serves the rest, and tar -c of the
# whole mount ends.
mounted() {
	need_fuse
	MNT=$T/mnt
	mkdir -p "$MNT"
	r4mount -f "$T/orig.img" "$MNT" 2>"$T/log" &
	local i
	for i in $(seq 1 100); do mountpoint -q "$MNT" && break; sleep 0.1; done
	mountpoint -q "$MNT"
	run timeout 20 stat "$MNT/$2"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Input/output error"* ]]
	[ "$(timeout 20 cat "$MNT/a/b/leaf")" = deep ]
	run timeout 20 tar -cf "$T/m.tar" -C "$MNT" .
	echo "$output"
	[ "$status" -ne 124 ]
	[ "$(stat -c %s "$T/m.tar")" -lt 1000000 ]
	tar -tf "$T/m.tar" | grep -qx "./a/b/leaf"
	timeout 20 fusermount3 -u "$MNT"
	wait
	grep -q "r4mount: /$2: a second name of directory" "$T/log"
}

@test "dirgraph: r4mount: EIO for a second name of the root, of a directory above, of one elsewhere" {
	layout /a/b /
	mounted / a/b/x
	layout /a/b /a
	mounted /a a/b/x
	layout /p /q/d
	mounted /q/d p/x
}
