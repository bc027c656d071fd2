#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# issue 13, items 5-7: inputs that are not what they seem (formats,
# empty input, locale, damaged headers), the fidelity of r4pack add
# (directory times, SOURCE_DATE_EPOCH, extended attributes) and what
# reaches a terminal (escaped names, the progress bar).

load helpers

UUID=01234567-89ab-cdef-0123-456789abcdef

# A pax tarball (python's tarfile, so the bytes are exactly these) from a
# list of entries given as python code on stdin; $1 the output.
pytar() {
	python3 -c '
import io, sys, tarfile
out = sys.argv[1]
entries = []
def d(name, mtime=1000000000, **pax):
    ti = tarfile.TarInfo(name); ti.type = tarfile.DIRTYPE
    ti.mode = 0o755; ti.mtime = mtime; ti.pax_headers = pax
    entries.append((ti, None))
def f(name, data=b"", mtime=1000000000, **pax):
    ti = tarfile.TarInfo(name); ti.size = len(data); ti.mode = 0o644
    ti.mtime = mtime; ti.pax_headers = pax
    entries.append((ti, io.BytesIO(data)))
exec(sys.stdin.read())
with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
    for ti, data in entries:
        t.addfile(ti, data)
' "$1"
}

# An image of one file to add to (more options: r4pack create's).
base_image() {
	local img=$1
	shift
	mkdir -p "$T/base"
	echo base >"$T/base/old"
	touch -d @1200000000 "$T/base/old" "$T/base"
	r4pack create -q -U "$UUID" "$@" "$T/base" "$img"
}

# The names in a directory of the image, without . and ..
ls_names() {
	r4debugfs -R "ls $2" "$1" | grep -vx '\.\|\.\.'
}

# One field of r4debugfs stat ("mtime", "atime", ...): the seconds.
stat_field() {
	r4debugfs -R "stat $2" "$1" | sed -n "s/^$3: *\([0-9-]*\).*/\1/p"
}

# ---- 5: inputs that are not what they seem ---------------------------------

@test "5: a text file is no archive; mtree only with --format=mtree or a .mtree name" {
	printf 'root:x:0:0:root:/root:/bin/bash\nbin:x:2:2::/bin:/bin/sh\n' \
		>"$T/passwd"
	run r4pack create "$T/passwd" "$T/x.img"
	[ "$status" -eq 1 ]
	[[ "$output" == *"passwd: not an archive"* ]]
	[ "${#lines[@]}" -eq 1 ]
	[ ! -e "$T/x.img" ]
	# an add of it changes nothing either
	base_image "$T/b.img"
	cp "$T/b.img" "$T/b0.img"
	run r4pack add "$T/b.img" "$T/passwd"
	[ "$status" -eq 1 ]
	[[ "$output" == *"not an archive"* ]]
	cmp "$T/b.img" "$T/b0.img"
	# a real mtree specification, asked for
	printf '#mtree\n./sub type=dir mode=0750 time=1000000000.0\n' \
		>"$T/spec"
	run r4pack create --format=mtree "$T/spec" "$T/m.img"
	[ "$status" -eq 0 ]
	[ "$(ls_names "$T/m.img" /)" = sub ]
	cp "$T/spec" "$T/spec.mtree"
	run r4pack create "$T/spec.mtree" "$T/m2.img"
	[ "$status" -eq 0 ]
	[ "$(ls_names "$T/m2.img" /)" = sub ]
	run r4pack create --format=shar "$T/spec" "$T/m3.img"
	[ "$status" -eq 2 ]
	[[ "$output" == *"'shar' is not an archive format"* ]]
}

@test "5: an empty or all-zero input is not an archive, not an empty image" {
	: >"$T/empty"
	head -c 10240 /dev/zero >"$T/zeros"
	for f in empty zeros; do
		run r4pack create "$T/$f" "$T/x.img"
		[ "$status" -eq 1 ]
		[[ "$output" == *"$f: not an archive"* ]]
		[ ! -e "$T/x.img" ]
		run r4pack create - "$T/x.img" <"$T/$f"
		[ "$status" -eq 1 ]
		[[ "$output" == *"standard input: not an archive"* ]]
		[ ! -e "$T/x.img" ]
	done
	run r4pack create - "$T/x.img" </dev/null
	[ "$status" -eq 1 ]
	[[ "$output" == *"not an archive"* ]]
	[ ! -e "$T/x.img" ]
	base_image "$T/b.img"
	cp "$T/b.img" "$T/b0.img"
	run r4pack add "$T/b.img" "$T/zeros"
	[ "$status" -eq 1 ]
	[[ "$output" == *"not an archive"* ]]
	cmp "$T/b.img" "$T/b0.img"
}

@test "5: zip and pax names in UTF-8 are read under LC_ALL=C" {
	python3 - "$T/u.zip" <<-'EOF'
	import sys, zipfile
	with zipfile.ZipFile(sys.argv[1], "w") as z:
	    z.writestr("caf\u00e9/na\u00efve.txt", b"hello\n")
	    z.writestr("\u65e5\u672c.txt", b"x")
	EOF
	pytar "$T/u.tar" <<-'EOF'
	f("gr\u00fc\u00df.txt", b"pax\n")
	EOF
	LC_ALL=C run r4pack create -U "$UUID" "$T/u.zip" "$T/z.img"
	[ "$status" -eq 0 ]
	[[ "$output" != *warning* ]]
	LC_ALL=C run r4pack create -U "$UUID" "$T/u.tar" "$T/t.img"
	[ "$status" -eq 0 ]
	[[ "$output" != *warning* ]]
	# the names in the image are the UTF-8 bytes of the archive
	[ "$(LC_ALL=C ls_names "$T/z.img" / | sort)" = \
	  "$(printf 'caf\303\251\n\346\227\245\346\234\254.txt')" ]
	[ "$(LC_ALL=C r4debugfs -R "cat /$(printf 'caf\303\251/na\303\257ve.txt')" \
	     "$T/z.img")" = hello ]
	[ "$(LC_ALL=C ls_names "$T/t.img" /)" = \
	  "$(printf 'gr\303\274\303\237.txt')" ]
	# and add reads them the same way
	base_image "$T/b.img"
	LC_ALL=C run r4pack add "$T/b.img" "$T/u.zip"
	[ "$status" -eq 0 ]
	[[ "$output" != *warning* ]]
	[ "$(LC_ALL=C r4debugfs -R "cat /$(printf 'caf\303\251/na\303\257ve.txt')" \
	     "$T/b.img")" = hello ]
}

@test "5: a backslash in a zip member's name is a name byte, a separator only in a zip made on DOS or Windows" {
	python3 - "$T/b.zip" "$T/w.zip" <<-'EOF'
	import sys, zipfile
	def put(z, name, data, host):
	    i = zipfile.ZipInfo(name)
	    i.create_system = host
	    z.writestr(i, data)
	with zipfile.ZipFile(sys.argv[1], "w") as z:	# made on Unix
	    put(z, "back\\slash", b"one\n", 3)
	    put(z, "dir/a\\b.txt", b"two\n", 3)
	with zipfile.ZipFile(sys.argv[2], "w") as z:	# made on Windows
	    put(z, "win\\sub\\f.txt", b"three\n", 0)
	    put(z, "ntfs\\g.txt", b"four\n", 11)
	EOF
	LC_ALL=C run r4pack create -U "$UUID" "$T/b.zip" "$T/b.img"
	[ "$status" -eq 0 ]
	# (ls writes a backslash as \x5c; the command line takes \\)
	[ "$(LC_ALL=C ls_names "$T/b.img" / | sort)" = "$(printf 'back\\x5cslash\ndir')" ]
	[ "$(LC_ALL=C ls_names "$T/b.img" /dir)" = 'a\x5cb.txt' ]
	[ "$(r4debugfs -R 'cat /back\\slash' "$T/b.img")" = one ]
	[ "$(r4debugfs -R 'cat /dir/a\\b.txt' "$T/b.img")" = two ]
	LC_ALL=C run r4pack create -U "$UUID" "$T/w.zip" "$T/w.img"
	[ "$status" -eq 0 ]
	[ "$(r4debugfs -R 'cat /win/sub/f.txt' "$T/w.img")" = three ]
	[ "$(r4debugfs -R 'cat /ntfs/g.txt' "$T/w.img")" = four ]
	# add reads them the same way
	base_image "$T/a.img"
	LC_ALL=C run r4pack add "$T/a.img" "$T/b.zip"
	[ "$status" -eq 0 ]
	[ "$(r4debugfs -R 'cat /back\\slash' "$T/a.img")" = one ]
	[ "$(LC_ALL=C ls_names "$T/a.img" /dir)" = 'a\x5cb.txt' ]
}

@test "5: a damaged tar header is named as such, with its byte offset" {
	pytar "$T/ok.tar" <<-'EOF'
	f("a.txt", b"a" * 100)
	f("b.txt", b"b" * 100)
	EOF
	# the second header (byte 1024) loses its name and checksum
	cp "$T/ok.tar" "$T/bad.tar"
	printf '\377%.0s' $(seq 200) |
		dd of="$T/bad.tar" bs=1 seek=1024 conv=notrunc status=none
	run r4pack create "$T/bad.tar" "$T/x.img"
	[ "$status" -eq 1 ]
	[[ "$output" == *"bad.tar: damaged header at byte 1024"* ]]
	[[ "$output" != *"no name"* ]]
	[ "${#lines[@]}" -eq 1 ]
	[ ! -e "$T/x.img" ]
}

@test "5: a gzip tarball cut anywhere near its end gives one line that says so, and no image" {
	mkdir -p "$T/s"
	seq 1 20000 >"$T/s/a"
	tar -C "$T/s" -czf "$T/s.tgz" .
	local n size
	size=$(stat -c %s "$T/s.tgz")
	for n in 10 100 $((size / 2)) $((size - 30)) $((size - 9)) $((size - 1)); do
		head -c "$n" "$T/s.tgz" >"$T/t.tgz"
		run r4pack create -q "$T/t.tgz" "$T/x.img"
		echo "cut at $n: $output"
		[ "$status" -eq 1 ]
		[ "${#lines[@]}" -eq 1 ]
		[[ "$output" == *"t.tgz"* ]]
		[[ "$output" == *"truncated"* ]]
		[[ "$output" != *"(null)"* && "$output" != *"byte -"* ]]
		[ ! -e "$T/x.img" ]
	done
}

# ---- 6: fidelity of r4pack add ---------------------------------------------

@test "6: add gives new directories the source's times, with and without SOURCE_DATE_EPOCH" {
	pytar "$T/a.tar" <<-'EOF'
	d("d", mtime=1000000000)
	d("d/e", mtime=1000000100)
	f("d/e/f", b"hi\n", mtime=1000000200)
	f("d/g", b"g\n", mtime=1000000300)
	EOF
	base_image "$T/b.img"
	cp "$T/b.img" "$T/c.img"
	run r4pack add "$T/b.img" "$T/a.tar"
	[ "$status" -eq 0 ]
	[ "$(stat_field "$T/b.img" /d mtime)" = 1000000000 ]
	[ "$(stat_field "$T/b.img" /d/e mtime)" = 1000000100 ]
	[ "$(stat_field "$T/b.img" /d/e/f mtime)" = 1000000200 ]
	SOURCE_DATE_EPOCH=1500000000 run r4pack add "$T/c.img" "$T/a.tar"
	[ "$status" -eq 0 ]
	[ "$(stat_field "$T/c.img" /d mtime)" = 1000000000 ]
	[ "$(stat_field "$T/c.img" /d/e mtime)" = 1000000100 ]
	# the root got a new entry: its time is the one the tool sets
	[ "$(stat_field "$T/c.img" / mtime)" = 1500000000 ]
	need_oracle
	oracle_fsck "$T/b.img"
}

@test "6: two adds of the same input into copies of an image are equal (SOURCE_DATE_EPOCH)" {
	pytar "$T/a.tar" <<-'EOF'
	d("d")
	f("d/f", b"x" * 70000)
	f("top", b"t")
	EOF
	mkdir "$T/dir"
	echo one >"$T/dir/one"
	base_image "$T/b.img"
	export SOURCE_DATE_EPOCH=1600000000
	for i in 1 2; do
		cp "$T/b.img" "$T/c$i.img"
		r4pack add -q "$T/c$i.img" "$T/a.tar"
		r4pack add -q "$T/c$i.img" "$T/dir"
		sleep 1	# a clock the tool read would now differ
	done
	[ "$(sha256sum <"$T/c1.img")" = "$(sha256sum <"$T/c2.img")" ]
	! cmp -s "$T/b.img" "$T/c1.img" || false
}

@test "6: an add of a directory into a plain volume (the precheck's walk replayed) stores what a create stores" {
	local s=$T/tree
	mkdir -p "$s/a/b/c" "$s/empty/deeper" "$s/z"
	for i in 1 2 3 4 5; do
		head -c $((i * 3000)) /dev/urandom >"$s/a/f$i"
		echo "$i" >"$s/a/b/c/g$i"
	done
	ln -s a/b "$s/link"
	ln "$s/a/f1" "$s/z/hard"
	mkfifo "$s/z/fifo"
	export SOURCE_DATE_EPOCH=1000000000
	r4mkfs -q -o create=reg40 "$T/a.img" 16M
	run r4pack add "$T/a.img" "$s"
	[ "$status" -eq 0 ]
	[[ "$output" == *"added 20 entries (0 skipped)"* ]]
	r4pack create -q -o create=reg40 "$s" "$T/c.img"
	r4pack extract -q "$T/a.img" "$T/a.tar"
	r4pack extract -q "$T/c.img" "$T/c.tar"
	tar -tvv --full-time -f "$T/a.tar" >"$T/a.lst"
	tar -tvv --full-time -f "$T/c.tar" >"$T/c.lst"
	diff "$T/a.lst" "$T/c.lst"
	grep -q '^hrw.* ./z/hard link to ./a/f1$' "$T/a.lst"
	cmp "$T/a.tar" "$T/c.tar"
}

@test "6: an add of a directory with a folder it cannot read (the precheck's walk not replayed) fails naming it and changes nothing" {
	local s=$T/tree
	mkdir -p "$s/a" "$s/secret"
	echo x >"$s/a/f"
	echo y >"$s/secret/g"
	chmod 000 "$s/secret"
	export SOURCE_DATE_EPOCH=1000000000
	r4mkfs -q -o create=reg40 "$T/a.img" 16M
	cp "$T/a.img" "$T/before.img"
	# root reads through file modes: without CAP_DAC_* for the add
	local drop=()
	if [ "$(id -u)" -eq 0 ]; then
		command -v setpriv >/dev/null || skip "setpriv not installed"
		drop=(setpriv --bounding-set -dac_override,-dac_read_search)
		"${drop[@]}" true 2>/dev/null ||
			skip "setpriv cannot drop CAP_DAC_* here"
	fi
	# the folder must be unreadable to the add for the test to mean it
	run "${drop[@]}" ls "$s/secret"
	[ "$status" -ne 0 ] || skip "$s/secret is readable anyway"
	run "${drop[@]}" r4pack add "$T/a.img" "$s"
	chmod 755 "$s/secret"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"$s/secret: Permission denied"* ]]
	[[ "$output" == *"nothing was changed"* ]]
	cmp "$T/a.img" "$T/before.img"
}

@test "6: extended attributes and ACLs are counted and reported; --strict fails and writes nothing" {
	pytar "$T/x.tar" <<-'EOF'
	d("bin")
	f("bin/ping", b"ELF", **{"SCHILY.xattr.security.capability":
	                         "\x01\x00\x00\x02\x00\x20\x00\x00"})
	f("acl", b"", **{"SCHILY.acl.access":
	    "user::rw-,user:1000:r--,group::r--,mask::r--,other::r--"})
	f("plain", b"p")
	EOF
	run r4pack create --json "$T/x.tar" "$T/x.img"
	[ "$status" -eq 0 ]
	[[ "$output" == *"warning: "*"bin/ping"*"security.capability"* ]]
	# a program that loses its capabilities is named as such
	[[ "$output" == *"'bin/ping': its file capabilities (security.capability) are not stored: the program will run without them"* ]]
	[[ "$output" != *"'acl': its file capabilities"* ]]
	[[ "$output" == *"2 extended attributes or ACLs on 2 entries"* ]]
	[ "$(grep '^{' <<<"$output" |
	     python3 -c 'import json,sys; print(json.load(sys.stdin)["xattrs_dropped"])')" = 2 ]
	run r4pack create --strict "$T/x.tar" "$T/y.img"
	[ "$status" -eq 1 ]
	[[ "$output" == *"bin/ping"*"security.capability"*"--strict"* ]]
	[ ! -e "$T/y.img" ]
	base_image "$T/b.img"
	cp "$T/b.img" "$T/b0.img"
	run r4pack add --strict "$T/b.img" "$T/x.tar"
	[ "$status" -eq 1 ]
	[[ "$output" == *"nothing was changed"* ]]
	cmp "$T/b.img" "$T/b0.img"
	run r4pack add --json "$T/b.img" "$T/x.tar"
	[ "$status" -eq 0 ]
	[ "$(grep '^{' <<<"$output" |
	     python3 -c 'import json,sys; print(json.load(sys.stdin)["xattrs_dropped"])')" = 2 ]
}

# ---- 7: terminals ----------------------------------------------------------

@test "7: names with control bytes are escaped in warnings, -v lists and rdump messages" {
	pytar "$T/c.tar" <<-'EOF'
	d("d\x1b[31m")
	f("d\x1b[31m/f\x07", b"x")
	f("../up\x1b]0;pwned\x07", b"y")
	EOF
	run r4pack create -v -U "$UUID" "$T/c.tar" "$T/c.img"
	[ "$status" -eq 0 ]
	! grep -q $'\x1b' <<<"$output" || false
	! grep -q $'\x07' <<<"$output" || false
	[[ "$output" == *'d\x1b[31m/f\x07'* ]]
	[[ "$output" == *'warning: '*'up\x1b]0;pwned\x07'* ]]
	run r4pack extract -v "$T/c.img" "$T/out.tar"
	[ "$status" -eq 0 ]
	! grep -q $'\x1b' <<<"$output" || false
	[[ "$output" == *'d\x1b[31m/f\x07'* ]]
	mkdir -p "$T/host/d"$'\x1b[31m'
	: >"$T/host/d"$'\x1b[31m'/f$'\x07'
	run r4debugfs -R 'rdump / '"$T/host" "$T/c.img"
	[ "$status" -ne 0 ]
	! grep -q $'\x1b' <<<"$output" || false
	[[ "$output" == *'rdump: d\x1b[31m'* ]]
}

@test "7: the progress bar follows the archive's bytes in place; quiet in a pipe" {
	mkdir -p "$T/src/many"
	head -c 24000000 /dev/urandom >"$T/src/big"
	for i in $(seq 1 200); do echo "$i" >"$T/src/many/f$i"; done
	tar -C "$T/src" -cf "$T/a.tar" big many
	# a terminal (script gives one); the test's quiet switch off
	env -u R4_TEST_DETERMINISTIC script -q -e -c \
		"r4pack create '$T/a.tar' '$T/x.img'" /dev/null >"$T/tty.out" || { cat "$T/tty.out"; false; }
	# one line: the summary; the bar is redrawn with \r, then cleared
	[ "$(tr -cd '\n' <"$T/tty.out" | wc -c)" -eq 1 ]
	grep -q $'\r' "$T/tty.out"
	# its first drawing is at the start (0%; cmd-progress.bats follows
	# the archive's bytes through the events), never 100% before the end
	first=$(tr '\r' '\n' <"$T/tty.out" | grep -m1 '^r4pack \[' |
		sed 's/.*\] *\([0-9]*\)%.*/\1/')
	[ "$first" -ge 0 ]
	[ "$first" -lt 100 ]
	# the summary starts a line of its own, no bar left on it
	last=$(tr '\r' '\n' <"$T/tty.out" | grep -v '^ *$' | tail -n 1)
	[[ "$last" == "r4pack: packed "* ]]
	# add shows it too
	base_image "$T/b.img" --size 64M
	env -u R4_TEST_DETERMINISTIC script -q -e -c \
		"r4pack add '$T/b.img' '$T/a.tar'" /dev/null >"$T/tty2.out"
	[ "$(tr -cd '\n' <"$T/tty2.out" | wc -c)" -eq 1 ]
	grep -q 'r4pack \[' "$T/tty2.out"
	# stderr not a terminal: nothing of it
	rm -f "$T/x.img"
	env -u R4_TEST_DETERMINISTIC r4pack create "$T/a.tar" "$T/x.img" \
		2>"$T/err" >/dev/null
	[ ! -s "$T/err" ]
}
