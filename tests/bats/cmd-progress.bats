#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# --progress-fd=FD (cmd/common/common.c): JSON Lines progress events of
# r4pack create and add, r4fsck and r4repacker, whatever stderr is.

load helpers

# check_events FILE PROGRAM SECONDS: every line one JSON object with
# schema 1, the program, a phase, done <= total, a known unit; done never
# decreasing within a phase; each phase's last event has done == total;
# at most ten a second (plus each phase's first and last).
check_events() {
	python3 - "$@" <<-'PY'
	import json, sys
	path, prog, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
	lines = open(path, 'rb').read().decode().splitlines()
	assert lines, "no events"
	last = {}
	order = []
	for l in lines:
	    e = json.loads(l)
	    assert set(e) == {"schema", "program", "phase", "done", "total", "unit"}, e
	    assert e["schema"] == 1 and e["program"] == prog, e
	    assert e["unit"] in ("bytes", "blocks", "nodes", "steps", "files"), e
	    assert 0 <= e["done"] <= e["total"], e
	    p = e["phase"]
	    if p in last and last[p]["done"] == last[p]["total"] and e["done"] < last[p]["done"]:
	        pass                    # the phase runs again (a second pass)
	    elif p in last:
	        assert e["done"] >= last[p]["done"], (last[p], e)
	    if p not in order:
	        order.append(p)
	    last[p] = e
	for p in order:
	    assert last[p]["done"] == last[p]["total"], ("phase not finished", last[p])
	assert len(lines) <= secs * 10 + 2 * len(order) + 2, (len(lines), secs)
	print(len(lines), "events,", len(order), "phases:", " ".join(order))
	PY
}

# timed VAR CMD...: run CMD, its seconds (rounded up) in VAR.
timed() {
	local var=$1 s e
	shift
	s=$(date +%s.%N)
	"$@"
	local rc=$?
	e=$(date +%s.%N)
	printf -v "$var" '%s' "$(echo "$e - $s + 1" | bc)"
	return $rc
}

setup_src() {
	mkdir -p "$T/s/d" "$T/more"
	local i
	for i in $(seq 1 40); do head -c $((i * 20000)) /dev/urandom >"$T/s/d/f$i"; done
	for i in $(seq 1 10); do head -c 50000 /dev/urandom >"$T/more/g$i"; done
	tar -C "$T/s" -czf "$T/s.tgz" .
	tar -C "$T/more" -cf "$T/more.tar" .
}

@test "r4pack create and add (archives and directories): bytes of the archive or of the data, every phase finished" {
	setup_src
	local t
	timed t r4pack create -q --progress-fd=3 "$T/s.tgz" "$T/a.img" 3>"$T/ev1"
	check_events "$T/ev1" r4pack "$t"
	grep -q '"phase":"archive"' "$T/ev1"
	timed t r4pack create -q --size 64M --progress-fd=3 "$T/s" "$T/b.img" 3>"$T/ev2"
	check_events "$T/ev2" r4pack "$t"
	grep -q '"phase":"data"' "$T/ev2"
	timed t r4pack add -q --progress-fd=3 "$T/a.img" "$T/more.tar" 3>"$T/ev3"
	check_events "$T/ev3" r4pack "$t"
	timed t r4pack add -q --progress-fd=3 "$T/b.img" "$T/more.tar" "$T/s.tgz" 3>"$T/ev4"
	check_events "$T/ev4" r4pack "$t"
	[ "$(grep -c '"phase":"layer 2","done":\([0-9]*\),"total":\1' "$T/ev4")" -eq 1 ]
	# a directory added: its files' bytes, counted first, all of them
	timed t r4pack add -q --progress-fd=3 "$T/b.img" "$T/more" 3>"$T/ev6"
	check_events "$T/ev6" r4pack "$t"
	grep -q '"phase":"data","done":500000,"total":500000,"unit":"bytes"' "$T/ev6"
	# a pipe as the descriptor: the events reach its reader
	r4pack create -q --progress-fd=3 "$T/s.tgz" "$T/c.img" 3>&1 >/dev/null | cat >"$T/ev5"
	check_events "$T/ev5" r4pack 60
}

@test "r4pack create from a stream: the spool's copy into place is a phase of its own, after the archive, finished" {
	setup_src
	local t
	tar -C "$T/s" -cf "$T/s.tar" .
	timed t r4pack create -q --progress-fd=3 - "$T/a.img" <"$T/s.tar" 3>"$T/ev1"
	check_events "$T/ev1" r4pack "$t"
	# every byte of the 40 files (4 KiB blocks, each file's last padded)
	grep -q '"phase":"copy","done":16482304,"total":16482304,"unit":"bytes"' "$T/ev1"
	[ "$(sed -n 's/.*"phase":"\([a-z]*\)".*/\1/p' "$T/ev1" | uniq | tr '\n' ' ')" = "archive copy " ]
	# with the spool in a file only, the same events' end
	timed t r4pack create -q --spool-memory=0 --progress-fd=3 "$T/s.tgz" "$T/b.img" 3>"$T/ev2"
	check_events "$T/ev2" r4pack "$t"
	grep -q '"phase":"copy","done":16482304,"total":16482304,"unit":"bytes"' "$T/ev2"
	# a member streamed twice: the first copy's blocks are spooled, never
	# copied into place, and the phase still ends at its total
	cp "$T/s.tar" "$T/twice.tar"
	tar -C "$T/s" -rf "$T/twice.tar" ./d/f40
	timed t r4pack create -q --progress-fd=3 - "$T/t.img" <"$T/twice.tar" 3>"$T/ev3"
	check_events "$T/ev3" r4pack "$t"
	grep -q '"phase":"copy","done":17285120,"total":17285120,"unit":"bytes"' "$T/ev3"
}

@test "r4fsck -n and -y, r4repacker: their phases, each finished" {
	setup_src
	r4pack create -q "$T/s" "$T/a.img"
	local t
	timed t r4fsck -n --progress-fd=3 "$T/a.img" 3>"$T/ev1" >/dev/null
	check_events "$T/ev1" r4fsck "$t"
	for p in super tree space objects; do grep -q "\"phase\":\"$p\"" "$T/ev1"; done
	timed t r4fsck -y --progress-fd=3 "$T/a.img" 3>"$T/ev2" >/dev/null
	check_events "$T/ev2" r4fsck "$t"
	bash "$top_srcdir/tests/age.sh" "$T/aged.img" 60 2 >/dev/null 2>&1
	timed t r4repacker -q --progress-fd=3 "$T/aged.img" 3>"$T/ev3"
	check_events "$T/ev3" r4repacker "$t"
	grep -q '"phase":"repack","done":\([0-9]*\),"total":\1,"unit":"blocks"' "$T/ev3"
}

@test "--progress-fd: a number that is no open descriptor, or one open read-only, is a usage error" {
	mkdir -p "$T/e"
	run r4pack create --progress-fd=9 "$T/e" "$T/x.img"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--progress-fd=9: not an open file descriptor"* ]]
	[ ! -e "$T/x.img" ]
	run r4pack create --progress-fd=0 "$T/e" "$T/x.img" </dev/null
	[ "$status" -eq 2 ]
	[[ "$output" == *"not open for writing"* ]]
	run r4pack create --progress-fd=x "$T/e" "$T/x.img"
	[ "$status" -eq 2 ]
	r4pack create -q "$T/e" "$T/x.img"
	run r4fsck -n --progress-fd=9 "$T/x.img"
	[ "$status" -eq 16 ] || [ "$status" -eq 8 ]
	run r4repacker --progress-fd=9 "$T/x.img"
	[ "$status" -ne 0 ]
}
