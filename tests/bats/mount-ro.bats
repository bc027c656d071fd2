#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# r4mount: images built by r4pack and by libreiser4 (r4ref), mounted
# read-only through FUSE and compared with their source tree. Needs a
# usable /dev/fuse (skipped with the reason otherwise); r4mount itself
# must have been built (configure --disable-mount leaves this file out).

load helpers

# A tree with every file type r4pack stores.
make_tree() {
	local s=$1
	mkdir -p "$s/dir/sub" "$s/empty"
	printf 'small\n' >"$s/small"
	: >"$s/zero"
	head -c 300000 /dev/urandom >"$s/dir/large"
	head -c 5000 /dev/urandom >"$s/dir/sub/mid"
	dd if=/dev/urandom of="$s/sparse" bs=4096 seek=40 count=1 status=none
	ln "$s/small" "$s/dir/hardlink"
	ln -s ../small "$s/dir/symlink"
	ln -s "$(printf 'x%.0s' $(seq 1 300))" "$s/longlink"
	mkfifo "$s/fifo"
	if [ "$(id -u)" = 0 ]; then
		mknod "$s/chr" c 1 3
		mknod "$s/blk" b 7 0
	fi
	touch -d '2001-02-03 04:05:06.123456789' "$s/dir/large"
	chmod 0640 "$s/dir/sub/mid"
	chmod 1777 "$s/empty"
}

# Mode, size, link count, owner, type and mtime of every file, as find
# prints them (directories: no size nor link count, Reiser4 counts
# entries); $2 = T@ for nanoseconds, Ts for seconds.
tree_stat() {
	(cd "$1" && find . ! -type d -printf "%p %M %s %n %U %G %y %${2:-T@}\\n" | sort)
	(cd "$1" && find . -type d -printf "%p %M %U %G %${2:-T@}\\n" | sort)
	(cd "$1" && find . \( -type c -o -type b \) -exec stat -c '%n %t:%T' {} + | sort)
}

mount_img() {
	MNT=$T/mnt
	mkdir -p "$MNT"
	r4mount "$@" "$MNT"
	mountpoint -q "$MNT"
}

compare_tree() {
	local src=$1 mnt=$2 tfmt=${3:-T@}
	diff -r --no-dereference -x fifo -x chr -x blk "$src" "$mnt"
	diff <(tree_stat "$src" $tfmt) <(tree_stat "$mnt" $tfmt)
	# hard links: one inode number per object id
	[ "$(stat -c %i "$mnt/small")" = "$(stat -c %i "$mnt/dir/hardlink")" ]
	[ "$(stat -c %h "$mnt/small")" = 2 ]
	[ "$(readlink "$mnt/dir/symlink")" = ../small ]
	[ "$(stat -c %F "$mnt/fifo")" = fifo ]
}

@test "r4mount: --help, --version, bad command lines" {
	r4mount --version | grep -q r4kit
	r4mount --help | grep -q MOUNTPOINT
	run r4mount
	[ "$status" -eq 2 ]
	run r4mount onlyone
	[ "$status" -eq 2 ]
	run r4mount -o rw,commit=0 a "$T"
	[ "$status" -eq 2 ]
	[[ "$output" == *commit=0* ]]
	echo nothing >"$T/not.img"
	run r4mount "$T/not.img" "$T"
	[ "$status" -eq 8 ]
	[ "${#lines[@]}" -eq 1 ]
}

@test "r4mount: an r4pack image equals its source (diff -r, stat, links, statfs), image unchanged" {
	need_fuse
	make_tree "$T/src"
	r4pack create -q "$T/src" "$T/a.img"
	sum=$(sha256sum <"$T/a.img")
	mount_img "$T/a.img"
	compare_tree "$T/src" "$MNT"
	# statfs from the super block
	bs=$(r4debugfs -R 'print super' "$T/a.img" | sed -n 's/^block size: *//p' | head -n1)
	[ -z "$bs" ] || [ "$(stat -f -c %S "$MNT")" = "$bs" ]
	[ "$(stat -f -c %T "$MNT")" = fuseblk ] || [ "$(stat -f -c %T "$MNT")" = fuse ] ||
		stat -f "$MNT"
	df "$MNT" >/dev/null
	# writing is refused
	run sh -c "echo x >'$MNT/new'"
	[ "$status" -ne 0 ]
	timeout 20 fusermount3 -u "$MNT"
	! mountpoint -q "$MNT" || false
	[ "$(sha256sum <"$T/a.img")" = "$sum" ]
}

@test "r4mount: a libreiser4 (r4ref) image equals its source" {
	need_fuse
	need_r4ref
	make_tree "$T/src"
	truncate -s 64M "$T/ref.img"
	r4ref mkfs -o formatting=tails "$T/ref.img" "$T/src"
	sum=$(sha256sum <"$T/ref.img")
	mount_img "$T/ref.img"
	# libreiser4 writes no nanoseconds: seconds only
	compare_tree "$T/src" "$MNT" Ts
	timeout 20 fusermount3 -u "$MNT"
	[ "$(sha256sum <"$T/ref.img")" = "$sum" ]
}

@test "r4mount: a 10,000-entry directory lists every name once, each readable" {
	need_fuse
	mkdir -p "$T/src/big"
	(cd "$T/src/big" && seq -f 'entry-%05g' 1 10000 | xargs touch)
	echo hello >"$T/src/big/entry-05000"
	r4pack create -q "$T/src" "$T/big.img"
	mount_img -o allow_other "$T/big.img"
	line=$(grep " $MNT " /proc/mounts)
	echo "$line"
	[[ "$line" == "$T/big.img $MNT fuse.reiser4 ro,"* ]]
	[[ "$line" == *allow_other* ]]
	ls -f "$MNT/big" | grep -v '^\.\.\?$' | sort >"$T/got"
	(cd "$T/src/big" && ls -f . | grep -v '^\.\.\?$' | sort) >"$T/want"
	diff "$T/want" "$T/got"
	[ "$(wc -l <"$T/got")" -eq 10000 ]
	[ "$(cat "$MNT/big/entry-05000")" = hello ]
	# a listing through small getdents chunks: no name twice, none lost
	python3 - "$MNT/big" <<'PY'
import os, sys
names = [e.name for e in os.scandir(sys.argv[1])]
assert len(names) == 10000 and len(set(names)) == 10000, len(names)
PY
}

@test "r4mount: a damaged leaf answers EIO for its files, the rest is served" {
	need_fuse
	mkdir -p "$T/src/a" "$T/src/b"
	head -c 3000 /dev/urandom >"$T/src/a/f"
	(cd "$T/src/b" && seq -f 'n%04g' 1 2000 | xargs touch)
	r4pack create -q "$T/src" "$T/d.img"
	sdblk() {
		r4debugfs -R "stat $1" "$T/d.img" | sed -n 's/^stat data: *block \([0-9]*\),.*/\1/p'
	}
	blk=$(sdblk /b/n1000)
	[ -n "$blk" ]
	[ "$blk" != "$(sdblk /a/f)" ]
	[ "$blk" != "$(sdblk /)" ]
	[ "$blk" != "$(sdblk /b)" ]
	# clobber that leaf's node header
	printf 'garbage!garbage!' |
		dd of="$T/d.img" bs=1 seek=$((blk * 4096)) conv=notrunc status=none
	mount_img "$T/d.img"
	run stat "$MNT/b/n1000"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Input/output error"* ]]
	# still serving the rest
	cmp "$T/src/a/f" "$MNT/a/f"
	mountpoint -q "$MNT"
	ls "$MNT" >/dev/null
}

@test "r4mount: a missing /dev/fuse gives one clear line" {
	command -v r4mount >/dev/null 2>&1 || { echo "r4mount not built"; return 1; }
	command -v unshare >/dev/null 2>&1 || skip "no unshare"
	[ "$(id -u)" = 0 ] || skip "needs root to hide /dev/fuse in a mount namespace"
	r4pack create -q "$top_srcdir/tests/data/sample.tar" "$T/s.img" 2>/dev/null ||
		{ mkdir -p "$T/s"; echo x >"$T/s/x"; r4pack create -q "$T/s" "$T/s.img"; }
	mkdir -p "$T/mnt"
	run unshare -m sh -c "mount -t tmpfs none /dev && r4mount '$T/s.img' '$T/mnt'"
	[ "$status" -eq 1 ]
	[[ "$output" == *"FUSE is not available"* ]]
}

@test "r4mount: the kernel's reg40.img reads back as the kernel wrote it (sha256 of every file, links, devices)" {
	need_fuse
	k=$top_srcdir/tests/data/kernel
	[ -f "$k/reg40.img.xz" ] || skip "no $k/reg40.img.xz"
	xz -dc "$k/reg40.img.xz" | cp --sparse=always /dev/stdin "$T/reg40.img"
	sum=$(sha256sum <"$T/reg40.img")
	mount_img "$T/reg40.img"
	(cd "$MNT" && sha256sum --quiet -c "$k/reg40.sha256")
	# every path with its type, size, mode and link count as listed
	while IFS=$'\t' read -r p type size mode nlink target; do
		[ "$p" = . ] && continue
		got=$(stat -c '%F	%a	%h' "$MNT/$p")
		[ "$got" = "$type	$mode	$nlink" ] || { echo "$p: $got, want $type $mode $nlink"; return 1; }
		[ -d "$MNT/$p" ] || [ "$(stat -c %s "$MNT/$p")" = "$size" ] || { echo "$p: size"; return 1; }
		[ -z "$target" ] || [ "$(readlink "$MNT/$p")" = "$target" ]
	done <"$k/reg40.ls"
	[ "$(stat -c %t:%T "$MNT/chr")" = 4:40 ]
	timeout 20 fusermount3 -u "$MNT"
	[ "$(sha256sum <"$T/reg40.img")" = "$sum" ]
}

@test "r4mount: reads through a committed, unreplayed transaction (an add cut right after its commit point), image unchanged" {
	need_fuse
	[ -x "$top_builddir/tests/crash/bin/r4pack" ] || {
		echo "tests/crash/bin/r4pack is not built (make check builds it)"
		false
	}
	mkdir -p "$T/src" "$T/add/new"
	echo old >"$T/src/keep"
	echo hello >"$T/add/new/f"
	head -c 20000 /dev/urandom >"$T/add/big"
	r4pack create -q --size 16M "$T/src" "$T/v.img"
	cp "$T/v.img" "$T/n.img"
	R4_FAULT=count R4_FAULT_REPORT="$T/rep" \
		"$top_builddir/tests/crash/bin/r4pack" add -q "$T/n.img" "$T/add"
	W=$(sed -n 's/^writes=\([0-9]*\) .*/\1/p' "$T/rep")
	# the earliest cut -n still calls pending: right after the header
	local k h=
	for ((k = W - 1; k >= 1; k--)); do
		cp "$T/v.img" "$T/c.img"
		R4_FAULT=cut-after=$k "$top_builddir/tests/crash/bin/r4pack" \
			add -q "$T/c.img" "$T/add" >/dev/null 2>&1 || true
		run r4fsck -n "$T/c.img"
		[[ "$status" -eq 4 && "$output" == *"run \`r4fsck -p\` before mounting"* ]] || break
		h=$k
	done
	[ -n "$h" ]
	cp "$T/v.img" "$T/c.img"
	R4_FAULT=cut-after=$h "$top_builddir/tests/crash/bin/r4pack" \
		add -q "$T/c.img" "$T/add" >/dev/null 2>&1 || true
	sum=$(sha256sum <"$T/c.img")
	MNT=$T/mnt
	mkdir -p "$MNT"
	run r4mount "$T/c.img" "$MNT"
	echo "$output"
	[[ "$output" == *"1 committed transaction(s) of the journal replayed in memory"* ]]
	mountpoint -q "$MNT"
	cmp "$T/add/big" "$MNT/big"
	cmp "$T/add/new/f" "$MNT/new/f"
	cmp "$T/src/keep" "$MNT/keep"
	timeout 20 fusermount3 -u "$MNT"
	[ "$(sha256sum <"$T/c.img")" = "$sum" ]
}
