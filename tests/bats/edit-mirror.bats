#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# r4debugfs -w and r4pack add: each change made to an r4pack image and
# the same change made to a host copy of its tree must give the same
# manifest; fsck.reiser4 and r4fsck must find the image clean.

load helpers

# A small tree with fixed times (so no clamp or "now" gets in the way).
make_tree() {
	local d=$1 i
	mkdir -p "$d/a/sub/deep" "$d/b" "$d/dir/x" "$d/empty"
	for i in 1 2 3 4 5; do echo "file $i" >"$d/a/f$i"; done
	head -c 30000 /dev/urandom >"$d/a/big"
	for i in $(seq 1 40); do head -c $((i * 97)) /dev/urandom >"$d/dir/x/n$i"; done
	echo leaf >"$d/a/sub/deep/leaf"
	echo gee >"$d/b/g"
	echo old >"$d/b/h"
	ln -s ../a/f1 "$d/b/tof1"
	find "$d" -exec touch -h -d @1600000000 {} +
}

# Manifest without the mtimes of what is not a regular file (new
# directories, symlinks and nodes get "now"; a directory's mtime
# changes with its entries).
masked() {
	awk -F '\t' 'BEGIN { OFS = "\t" } $2 != "f" { $7 = "-" } { print }'
}

same_as_host() {
	local img=$1 dir=$2
	oracle r4ref manifest "$img" | masked >"$T/img.man"
	oracle r4ref manifest-dir "$dir" | masked >"$T/dir.man"
	diff "$T/dir.man" "$T/img.man"
}

image_clean() {
	run r4fsck --check "$1"
	echo "$output"
	[ "$status" -eq 0 ]
	oracle_fsck "$1"
}

make_image() {
	make_tree "$T/src"
	run r4pack create -q "$T/src" "$T/v.img"
	[ "$status" -eq 0 ]
	cp -a "$T/src" "$T/host"
}

@test "r4debugfs: the -w commands are refused without -w" {
	make_image
	local sum c
	sum=$(sha256sum <"$T/v.img")
	for c in 'mkdir /n' "write $T/src/a/f1 /n" 'rm /a/f1' 'rmdir /empty' \
		 'rm -r /dir' 'mv /a/f1 /b/f1' 'ln /a/f1 /l' 'ln -s x /l' \
		 'mknod /p p' 'chmod 600 /a/f1' 'chown 1:2 /a/f1' \
		 'touch /a/f1' 'truncate 1 /a/f1'; do
		run r4debugfs -R "$c" "$T/v.img"
		[ "$status" -eq 1 ]
		[[ "$output" == *"read-only: give -w"* ]]
	done
	[ "$(sha256sum <"$T/v.img")" = "$sum" ]
	run r4debugfs --atomic -R 'ls /' "$T/v.img"
	[ "$status" -eq 2 ]
	run r4debugfs -R help "$T/v.img"
	[[ "$output" == *"truncate SIZE PATH"* ]]
}

@test "r4debugfs -w: every command, same result as on the host, fsck clean" {
	need_oracle; need_r4ref
	[ "$(id -u)" = 0 ] || skip "needs root (chown, mknod c on the host)"
	make_image
	local H=$T/host
	head -c 50000 /dev/urandom >"$T/hf"
	chmod 640 "$T/hf"; touch -d @1500000000 "$T/hf"
	r4d() { r4debugfs -w -R "$1" "$T/v.img"; }
	r4d 'mkdir /newdir'; mkdir -m 755 "$H/newdir"
	r4d "write $T/hf /newdir/hf"; cp -p "$T/hf" "$H/newdir/hf"
	r4d "write $T/hf /b/h"; cp -p "$T/hf" "$H/b/h"
	r4d 'rm /a/f1'; rm "$H/a/f1"
	r4d 'rmdir /empty'; rmdir "$H/empty"
	r4d 'rm -r /dir'; rm -r "$H/dir"
	r4d 'mv /a/f2 /b/f2'; mv "$H/a/f2" "$H/b/f2"
	r4d 'mv /a/sub /b/sub'; mv "$H/a/sub" "$H/b/sub"
	r4d 'mv /b/g /b/h'; mv "$H/b/g" "$H/b/h"
	r4d 'ln /b/f2 /a/hl'; ln "$H/b/f2" "$H/a/hl"
	r4d 'ln -s ../b/f2 /a/sl'; ln -s ../b/f2 "$H/a/sl"
	r4d 'mknod /fifo p'; mkfifo -m 644 "$H/fifo"
	r4d 'mknod /cdev c 4 64'; mknod -m 644 "$H/cdev" c 4 64
	r4d 'mknod /bdev b 8 1'; mknod -m 644 "$H/bdev" b 8 1
	# (chown(2) clears the set-user-id bit; r4debugfs chown does not)
	r4d 'chown 12:34 /a/f3'; chown 12:34 "$H/a/f3"
	r4d 'chmod 4711 /a/f3'; chmod 4711 "$H/a/f3"
	r4d 'chown 56 /b/h'; chown 56 "$H/b/h"
	r4d 'touch -d @1234567890 /a/f4'; touch -d @1234567890 "$H/a/f4"
	r4d 'touch -d 2021-05-06T07:08:09Z /a/new'
	touch -d '2021-05-06 07:08:09Z' "$H/a/new"; chmod 644 "$H/a/new"
	r4d 'truncate 10 /a/big'; truncate -s 10 "$H/a/big"
	r4d 'truncate 100000 /a/f5'; truncate -s 100000 "$H/a/f5"
	r4d 'touch -d @1600000000 /a/big'; touch -d @1600000000 "$H/a/big"
	r4d 'touch -d @1600000000 /a/f5'; touch -d @1600000000 "$H/a/f5"
	image_clean "$T/v.img"
	same_as_host "$T/v.img" "$H"
	# our reader agrees with libreiser4
	r4ref manifest "$T/v.img" >"$T/ref.man"
	r4manifest "$T/v.img" >"$T/our.man"
	diff "$T/ref.man" "$T/our.man"
	run r4debugfs -R 'cat /newdir/hf' "$T/v.img"
	cmp <(r4debugfs -R 'cat /newdir/hf' "$T/v.img") "$T/hf"
}

@test "r4debugfs -w: failing commands say why and change nothing" {
	make_image
	local sum c
	sum=$(sha256sum <"$T/v.img")
	for c in 'mkdir /a' 'rm /nope' 'rm /a' 'rmdir /a' 'mv /nope /x' \
		 'ln /nope /x' 'ln /a /x' 'chmod 600 /nope' 'truncate 1 /a' \
		 'write /nonexistent/host/file /x' "write $T/src/a/f1 /empty" \
		 'mkdir relative'; do
		run r4debugfs -w -R "$c" "$T/v.img"
		echo "$c: $output"
		[ "$status" -eq 1 ]
		[ -n "$output" ]
	done
	for c in 'chmod 99999 /a/f1' 'chown x /a/f1' 'mknod /p z' \
		 'mknod /c c 1' 'truncate abc /a/f1' 'touch -d never /a/f1' \
		 'mv /a' 'rm'; do
		run r4debugfs -w -R "$c" "$T/v.img"
		[ "$status" -eq 1 ]
		[[ "$output" == *"usage"* ]]
	done
	[ "$(sha256sum <"$T/v.img")" = "$sum" ]
}

@test "r4debugfs -w --atomic: a failing command leaves the image byte-identical" {
	need_r4ref
	make_image
	local sum
	sum=$(sha256sum <"$T/v.img")
	run r4debugfs -w --atomic -R 'mkdir /n' -R 'rm -r /dir' \
		-R 'rm /nope' -R 'mkdir /m' "$T/v.img"
	[ "$status" -eq 1 ]
	[[ "$output" == *"nothing was changed"* ]]
	[ "$(sha256sum <"$T/v.img")" = "$sum" ]
	printf '%s\n' 'mkdir /n' 'ln -s /a /n/toa' 'rm -r /dir' \
		'mv /a/sub /n/sub' 'chmod 700 /nope' 'mkdir /m' >"$T/script"
	run r4debugfs -w --atomic -f "$T/script" "$T/v.img"
	[ "$status" -eq 1 ]
	[ "$(sha256sum <"$T/v.img")" = "$sum" ]
	# file data goes straight to free blocks before the commit: after
	# an abort only blocks that are free differ, the content is the same
	r4ref manifest "$T/v.img" >"$T/before.man"
	cp "$T/v.img" "$T/w.img"
	run r4debugfs -w --atomic -R 'mkdir /n' -R "write $T/src/a/big /n/big" \
		-R 'rm /nope' "$T/w.img"
	[ "$status" -eq 1 ]
	oracle r4ref manifest "$T/w.img" | diff "$T/before.man" -
	local b
	for b in $(cmp -l "$T/v.img" "$T/w.img" | awk '{ print int(($1 - 1) / 4096) }' | uniq); do
		run r4debugfs -R "icheck $b" "$T/v.img"
		[[ "$output" == *"not used by the tree"* ]] || {
			echo "block $b changed and is in use: $output"; false; }
	done
	# a read command that fails aborts too
	run r4debugfs -w --atomic -R 'mkdir /n' -R 'cat /nope' "$T/v.img"
	[ "$status" -eq 1 ]
	[ "$(sha256sum <"$T/v.img")" = "$sum" ]
	# the same script without the failing line commits as one
	sed -i '/nope/d' "$T/script"
	run r4debugfs -w --atomic -f "$T/script" "$T/v.img"
	[ "$status" -eq 0 ]
	run r4debugfs -R 'ls /n' -R 'ls /n/sub' -R 'ls /m' "$T/v.img"
	[ "$status" -eq 0 ]
	run r4debugfs -R 'ls /dir' "$T/v.img"
	[ "$status" -eq 1 ]
	image_clean "$T/v.img"
}

@test "r4debugfs -w: many transactions in a row, and a read-only reopen" {
	need_oracle
	make_image
	local i
	for i in $(seq 1 30); do
		r4debugfs -w -R "mkdir /m$i" -R "write $T/src/a/big /m$i/b" \
			-R "rm /m$i/b" "$T/v.img"
	done
	run r4debugfs -R 'ls /' "$T/v.img"
	[[ "$output" == *"m30"* ]]
	image_clean "$T/v.img"
}

# 50 files: 25 new, 25 replacing files of the image (and one new dir).
make_add() {
	local d=$1 i
	mkdir -p "$d/new" "$d/dir/x" "$d/a"
	for i in $(seq 1 25); do head -c $((i * 331)) /dev/urandom >"$d/new/n$i"; done
	for i in $(seq 1 20); do echo "replaced $i" >"$d/dir/x/n$i"; done
	for i in 1 2 3 4 5; do head -c 20000 /dev/urandom >"$d/a/f$i"; done
	find "$d" -exec touch -h -d @1650000000 {} +
	touch -d @1600000000 "$d"
}

@test "r4pack add: 50 files from a directory, a tarball and stdin" {
	need_oracle; need_r4ref
	make_image
	make_add "$T/add"
	cp -a "$T/add/." "$T/host/"
	cp "$T/v.img" "$T/t.img"; cp "$T/v.img" "$T/s.img"
	run r4pack add "$T/v.img" "$T/add"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"added 55 entries"* ]]
	image_clean "$T/v.img"
	same_as_host "$T/v.img" "$T/host"
	tar -C "$T/add" -cf "$T/add.tar" .
	run r4pack add --json "$T/t.img" "$T/add.tar"
	[ "$status" -eq 0 ]
	[[ "$output" == *'"entries":55'* ]]
	image_clean "$T/t.img"
	same_as_host "$T/t.img" "$T/host"
	gzip -c "$T/add.tar" | r4pack add -q "$T/s.img" -
	image_clean "$T/s.img"
	same_as_host "$T/s.img" "$T/host"
	# adding the same again changes no content
	r4pack add -q "$T/s.img" "$T/add.tar"
	same_as_host "$T/s.img" "$T/host"
	image_clean "$T/s.img"
}

@test "r4pack add: names below a directory are looked up unless the add made it" {
	need_r4ref
	make_image
	# b is a directory of the image: after b/new1 went in, b/tof1 (a
	# symlink of the image) is still found, and b/tof1/x skipped
	mkdir -p "$T/mix/b/tof1"
	echo new >"$T/mix/b/new1"
	echo evil >"$T/mix/b/tof1/x"
	tar -C "$T/mix" -cf "$T/mix.tar" b/new1 b/tof1/x
	run r4pack add "$T/v.img" "$T/mix.tar"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"'b/tof1' is a symbolic link in the image"* ]]
	r4ref manifest "$T/v.img" >"$T/m"
	grep -q $'^/b/new1\tf' "$T/m"
	grep -q $'^/b/tof1\tl' "$T/m"
	# fresh/ is made by the add: what the add put there is known
	mkdir -p "$T/mk/fresh" "$T/mk2/fresh/f"
	echo one >"$T/mk/fresh/f"
	echo two >"$T/mk2/fresh/f/x"
	tar -C "$T/mk" -cf "$T/fresh.tar" fresh/f
	tar -C "$T/mk2" -rf "$T/fresh.tar" fresh/f/x
	run r4pack add "$T/v.img" "$T/fresh.tar"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"'fresh/f' is not a directory in the image"* ]]
	r4ref manifest "$T/v.img" >"$T/m"
	grep -q $'^/fresh/f\tf' "$T/m"
	image_clean "$T/v.img"
}

@test "r4pack add: options, safety, and failures leave the image unchanged" {
	need_r4ref
	make_image
	make_add "$T/add"
	run r4pack add -v --all-root --exclude 'n1*' --mtime-clamp @1640000000 \
		"$T/v.img" "$T/add"
	[ "$status" -eq 0 ]
	[[ "$output" == *"new/n2"* ]]
	r4ref manifest "$T/v.img" >"$T/m"
	! grep -q '^/new/n1' "$T/m" || false
	grep -q $'^/new/n2\tf\t0644\t0\t0\t662\t1640000000' "$T/m"
	# an archive entry under a symlink of the image is skipped
	mkdir -p "$T/evil/b/tof1"
	echo evil >"$T/evil/b/tof1/x"
	tar -C "$T/evil" -cf "$T/evil.tar" b/tof1/x
	run r4pack add "$T/v.img" "$T/evil.tar"
	[ "$status" -eq 0 ]
	[[ "$output" == *"symbolic link in the image"* ]]
	# a truncated archive: nothing changes
	local sum
	sum=$(sha256sum <"$T/v.img")
	tar -C "$T/add" -cf "$T/add.tar" .
	head -c 30000 "$T/add.tar" >"$T/cut.tar"
	run r4pack add "$T/v.img" "$T/cut.tar"
	[ "$status" -eq 1 ]
	[[ "$output" == *"nothing was changed"* ]]
	[ "$(sha256sum <"$T/v.img")" = "$sum" ]
	run r4pack add "$T/v.img"
	[ "$status" -eq 2 ]
	run r4pack add --bogus "$T/v.img" "$T/add"
	[ "$status" -eq 2 ]
	run r4pack add "$T/nonexistent.img" "$T/add"
	[ "$status" -eq 1 ]
	[ "$(sha256sum <"$T/v.img")" = "$sum" ]
}
