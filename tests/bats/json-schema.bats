#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# One framing, published schemas (issue 27): every --json output of every
# command is JSON Lines, one compact object a line with "schema",
# "program" and "kind", and validates against doc/schema/PROGRAM-KIND.
# schema.json (r4kit-error for failures); every --progress-fd event
# against r4kit-progress.schema.json. The validator is
# tests/helpers/json-validate.py (python3-jsonschema).

load helpers

. "$top_srcdir/tests/surgery.sh"

SCHEMAS=$top_srcdir/doc/schema

validate() {
	python3 "$top_srcdir/tests/helpers/json-validate.py" "$@"
}

setup_file() {
	python3 -c 'import jsonschema' ||
		{ echo "python3-jsonschema is needed (./bootstrap installs it)" >&2; return 1; }
}

# A tree with names that are UTF-8, that are not, with control bytes, a
# symlink, a fifo and a file of several blocks.
make_src() {
	mkdir -p "$1/d" "$1/e"
	printf a >"$1/d/$(printf 'caf\303\251')"
	printf bb >"$1/d/$(printf 'bad\377\376')"
	printf ccc >"$1/d/$(printf 'ctl\001\033[31m\ttab')"
	head -c 70000 /dev/urandom >"$1/e/big"
	head -c 9000 /dev/urandom >"$1/e/gone"
	ln -s "$(printf 'caf\303\251')" "$1/d/sym"
	mkfifo "$1/fifo"
}

# out NAME CMD...: CMD's standard output into $T/o/NAME.
out() {
	local name=$1
	shift
	"$@" >"$T/o/$name" 2>>"$T/stderr" || echo "$name: exit $?" >>"$T/codes"
}

@test "every command's --json: one object a line, each valid against its published schema" {
	mkdir -p "$T/o" "$T/src" "$T/more"
	make_src "$T/src"
	printf x >"$T/more/$(printf 'new\377')"
	tar -C "$T/src" -cf "$T/src.tar" .
	S=$T/src
	# r4mkfs, and a refusal (the image holds a volume)
	out mkfs r4mkfs --json -L "lab" "$T/mk.img" 32M
	out e-mkfs r4mkfs --json "$T/mk.img" 32M
	# r4pack: create (directory, tarball, layers), add, extract
	out create r4pack create --json --manifest="$T/m.txt" "$S" "$T/a.img"
	out create-tar r4pack create --json "$T/src.tar" "$T/t.img"
	out create-layers r4pack create --json "$T/src.tar" "$T/more" "$T/l.img"
	out add r4pack add --json "$T/t.img" "$T/more"
	r4pack extract --json "$T/a.img" "$T/x.tar" 2>"$T/o/extract"
	r4pack extract --json "$T/a.img" - 2>"$T/o/extract-stdout" >/dev/null
	# r4fsck: check, verify (with a difference), repair, undo
	out fsck r4fsck --json "$T/a.img"
	cp "$T/a.img" "$T/v.img"
	r4debugfs -w -R "rm /e/big" "$T/v.img"
	out verify r4fsck --json --verify="$T/m.txt" "$T/v.img"
	cp "$T/a.img" "$T/bad.img"
	poke "$T/bad.img" $((17 * 4096 + 8)) 1000 8
	out fsck-bad r4fsck -n --json "$T/bad.img"
	out fsck-preen r4fsck -p --json "$T/bad.img"
	cp "$T/a.img" "$T/bad.img"
	printf 'X' | dd of="$T/bad.img" bs=1 seek=65536 conv=notrunc status=none
	poke "$T/bad.img" $((17 * 4096 + 8)) 1000 8
	out fsck-pre r4fsck -n --json "$T/bad.img"
	out fsck-y r4fsck -y --json -z "$T/undo.r4" "$T/bad.img"
	out fsck-undo r4fsck --json --undo "$T/undo.r4" "$T/bad.img"
	cp "$T/a.img" "$T/cut.img"
	truncate -s 100K "$T/cut.img"
	out fsck-cut r4fsck -n --json "$T/cut.img"
	out fsck-cut-p r4fsck -p --json "$T/cut.img"
	# r4repacker, r4resize
	out repack-n r4repacker -n --json -F /e/big "$T/a.img"
	out repack r4repacker --json "$T/t.img"
	out resize r4resize --json "$T/t.img" 40M
	out resize-p r4resize --json -P "$T/t.img"
	# r4debugfs: every command, failed ones too
	root=$(r4debugfs -R 'print super' "$T/a.img" |
		sed -n 's/^ *root block: *\([0-9]*\).*/\1/p')
	[ -n "$root" ]
	oid=$(r4debugfs --json -R 'stat /e/gone' "$T/a.img" | sed -n 's/.*"oid":\([0-9]*\).*/\1/p')
	[ -n "$oid" ]
	r4debugfs -w -R 'rm /e/gone' "$T/a.img"
	mkdir "$T/rd" "$T/rd2"
	out debugfs r4debugfs --json -R 'print super' -R "print node $root" \
		-R 'print tree' -R 'print journal' -R 'print bitmap' \
		-R 'print file /e/big' -R 'ls -l /d' -R 'ls /d' -R 'stat /d/sym' \
		-R 'stat /d' -R "blocks /e/big" -R 'icheck 16 23' \
		-R "icheck $root" -R 'ncheck 42' -R lsdel -R 'bodyfile /' \
		-R 'hash /d' -R 'dumpblock 16' -R "undel $oid $T/u1" \
		-R "undel --all $T/all" -R "rdump /d $T/rd" -R "rdump /d $T/nope" -R help \
		-R 'stat /nope' -R 'blocks /d' "$T/a.img"
	# r4debugfs --partitions: a GPT disk, one partition holding r4kit's
	# volume (sfdisk is in the fdisk package, which CI installs)
	truncate -s 8M "$T/disk"
	printf 'label: gpt\n,4M,L\n' | sfdisk -q "$T/disk"
	r4mkfs -q --partition=1 "$T/disk"
	out partitions r4debugfs --json --partitions "$T/disk"
	# failures, before and after the work began
	out e-fsck r4fsck --json "$T/nope.img"
	out e-fsck-opt r4fsck --json --bogus "$T/a.img"
	out e-debugfs r4debugfs --json -R 'print super' "$T/nope.img"
	out e-repack r4repacker --json "$T/nope.img"
	out e-resize r4resize --json "$T/nope.img" 1G
	out e-create r4pack create --json "$T/nope" "$T/c.img"
	out e-add r4pack add --json "$T/a.img" "$T/nope"
	r4pack extract --json "$T/nope.img" "$T/y.tar" 2>&1 | grep '^{' >"$T/o/e-extract"
	out e-verify r4fsck --json --verify="$T/nope.txt" "$T/a.img"
	cat "$T/codes"
	validate --kinds "$SCHEMAS" "$T"/o/* >"$T/kinds"
	# every kind came out at least once
	sort -u "$T/kinds" >"$T/seen"
	cat "$T/seen"
	for k in "r4mkfs mkfs" "r4mkfs error" "r4pack create" "r4pack add" "r4pack extract" "r4pack error" \
		"r4fsck check" "r4fsck repair" "r4fsck verify" "r4fsck undo" \
		"r4fsck error" "r4repacker repack" "r4repacker error" \
		"r4resize resize" "r4resize error" "r4debugfs super" \
		"r4debugfs text" "r4debugfs ls" "r4debugfs stat" \
		"r4debugfs blocks" "r4debugfs icheck" "r4debugfs ncheck" \
		"r4debugfs lsdel" "r4debugfs hash" "r4debugfs dumpblock" \
		"r4debugfs undel" "r4debugfs undel-all" "r4debugfs partitions" \
		"r4debugfs error"; do
		grep -qx "$k" "$T/seen" || { echo "no $k"; false; }
	done
	# every schema file is one of them
	for f in "$SCHEMAS"/*.schema.json; do
		n=${f##*/}
		n=${n%.schema.json}
		case $n in r4kit-*) continue ;; esac
		grep -qx "${n%%-*} ${n#*-}" "$T/seen" || { echo "unused $n"; false; }
	done
	# a name that is not UTF-8 keeps its bytes: "path_b64"
	grep -q '"name_b64":"YmFk//4="' "$T/o/debugfs"
}

@test "every --progress-fd event is valid against r4kit-progress.schema.json (create, add, extract, fsck -n and -y, repacker, resize, rdump, undel --all)" {
	mkdir -p "$T/src" "$T/ev"
	make_src "$T/src"
	tar -C "$T/src" -cf "$T/src.tar" .
	r4pack create -q --progress-fd=3 "$T/src.tar" "$T/a.img" 3>"$T/ev/create"
	r4pack create -q --progress-fd=3 "$T/src" "$T/b.img" 3>"$T/ev/create-dir"
	# (add from a directory sends no events today: only archives)
	r4pack add -q --progress-fd=3 "$T/a.img" "$T/src.tar" 3>"$T/ev/add"
	r4fsck -n --progress-fd=3 "$T/a.img" 3>"$T/ev/fsck" >/dev/null
	cp "$T/a.img" "$T/bad.img"
	poke "$T/bad.img" $((17 * 4096 + 8)) 1000 8
	run r4fsck -y --progress-fd=3 "$T/bad.img" 3>"$T/ev/fsck-y"
	[ "$status" -eq 1 ]
	r4repacker -q --progress-fd=3 "$T/a.img" 3>"$T/ev/repack"
	r4resize -q --progress-fd=3 "$T/a.img" 200M 3>"$T/ev/resize-grow"
	r4debugfs -w -R 'rm /e/big' "$T/a.img"
	r4resize -q -M --progress-fd=3 "$T/a.img" 3>"$T/ev/resize-shrink"
	grep -q '"program":"r4resize","phase":"bitmaps"' "$T/ev/resize-grow"
	grep -q '"program":"r4resize","phase":"moving"' "$T/ev/resize-shrink"
	mkdir "$T/rd" "$T/rd2"
	r4debugfs --progress-fd=3 -R "rdump / $T/rd" -R "rdump /d $T/rd2" \
		"$T/a.img" 3>"$T/ev/rdump" >/dev/null
	r4debugfs -w -R 'rm /d/sym' -R "rm /d/$(printf 'caf\303\251')" "$T/a.img"
	r4debugfs --progress-fd=3 -R "undel --all $T/all" "$T/a.img" \
		3>"$T/ev/undel-all" >/dev/null
	grep -q '"phase":"rdump","done":\([0-9]*\),"total":\1,' "$T/ev/rdump"
	grep -q '"phase":"undel","done":\([1-9][0-9]*\),"total":\1,' "$T/ev/undel-all"
	r4pack extract --progress-fd=3 "$T/a.img" "$T/x.tar" 3>"$T/ev/extract"
	r4pack extract --progress-fd=3 "$T/a.img" - 3>"$T/ev/extract-stdout" >/dev/null
	grep -q '"phase":"entries","done":\([0-9]*\),"total":\1,' "$T/ev/extract"
	# not yet: r4pack add from a directory (no events)
	validate --progress "$SCHEMAS" "$T"/ev/*
}

@test "the validator fails on what is not the framing" {
	mkdir -p "$T/o"
	r4mkfs -q "$T/a.img" 16M
	r4fsck --json "$T/a.img" >"$T/o/good"
	validate "$SCHEMAS" "$T/o/good"
	# the same object pretty-printed over several lines
	python3 -m json.tool "$T/o/good" >"$T/o/pretty"
	run validate "$SCHEMAS" "$T/o/pretty"
	[ "$status" -eq 1 ]
	# a field gone, a field added, another version
	sed 's/"clean":true,*//' "$T/o/good" >"$T/o/less"
	sed 's/"clean":/"dirty":1,"clean":/' "$T/o/good" >"$T/o/more"
	sed 's/"schema":2/"schema":1/' "$T/o/good" >"$T/o/old"
	for f in less more old; do
		run validate "$SCHEMAS" "$T/o/$f"
		echo "$output"
		[ "$status" -eq 1 ]
	done
	# a bare array, an empty output, an unknown kind
	echo '[]' >"$T/o/array"
	: >"$T/o/empty"
	sed 's/"kind":"check"/"kind":"nope"/' "$T/o/good" >"$T/o/kind"
	for f in array empty kind; do
		run validate "$SCHEMAS" "$T/o/$f"
		[ "$status" -eq 1 ]
	done
	# progress events: one with done above total
	echo '{"schema":1,"program":"r4fsck","phase":"tree","done":5,"total":4,"unit":"nodes"}' >"$T/o/ev"
	run validate --progress "$SCHEMAS" "$T/o/ev"
	[ "$status" -eq 0 ]	# done <= total is cmd-progress.bats's to check
	echo '{"schema":1,"program":"r4fsck","phase":"tree","done":5,"total":4,"unit":"parsecs"}' >"$T/o/ev"
	run validate --progress "$SCHEMAS" "$T/o/ev"
	[ "$status" -eq 1 ]
}
