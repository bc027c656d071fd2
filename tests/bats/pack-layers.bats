#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# r4pack create SOURCE... IMAGE and r4pack add IMAGE SOURCE...: sources
# applied in order as layers; --layers=oci: ".wh.NAME" removes NAME of
# the layers below, ".wh..wh..opq" empties a directory of what the
# layers below put there (libimage/tar/sink.c, whiteout()); neither is
# stored. One transaction for all the layers of an add; a layered create
# is renamed into place only when every layer went in.

load helpers

UUID=01234567-89ab-cdef-0123-456789abcdef

# $T/base.tar (a base system) and $T/l1.tgz, $T/l2.tar (two layers).
layers() {
	mkdir -p "$T/b/etc" "$T/b/usr/lib" "$T/b/var/cache" "$T/b/opt"
	echo root >"$T/b/etc/passwd"
	echo secret >"$T/b/etc/shadow"
	seq 1 20000 >"$T/b/usr/lib/libx.so"
	echo c1 >"$T/b/var/cache/c1"
	echo c2 >"$T/b/var/cache/c2"
	echo keep >"$T/b/opt/keep"
	mkdir -p "$T/l1/etc" "$T/l1/var/cache" "$T/l1/usr"
	touch "$T/l1/etc/.wh.shadow" "$T/l1/usr/.wh.lib"
	echo hosts >"$T/l1/etc/hosts"
	echo c3 >"$T/l1/var/cache/c3"
	touch "$T/l1/var/cache/.wh..wh..opq"
	mkdir -p "$T/l2/usr/lib" "$T/l2/etc"
	seq 5 9000 >"$T/l2/usr/lib/liby.so"
	touch "$T/l2/etc/.wh.hosts"
	find "$T/b" "$T/l1" "$T/l2" -exec touch -h -d @1650000000 {} +
	tar -C "$T/b" -cf "$T/base.tar" .
	# the opaque marker after the layer's own entry in its directory
	tar -C "$T/l1" -czf "$T/l1.tgz" ./etc ./usr ./var/cache/c3 \
		./var/cache/.wh..wh..opq
	tar -C "$T/l2" -cf "$T/l2.tar" .
	cat >"$T/want" <<-'EOF'
	./
	./etc/
	./etc/passwd
	./opt/
	./opt/keep
	./usr/
	./usr/lib/
	./usr/lib/liby.so
	./var/
	./var/cache/
	./var/cache/c3
	EOF
}

listing() {
	r4pack extract "$1" - | tar -t | sort
}

@test "create SOURCE... IMAGE --layers=oci: whiteouts and opaque directories applied, never stored; both checkers clean" {
	layers
	run r4pack create --layers=oci "$T/base.tar" "$T/l1.tgz" "$T/l2.tar" "$T/v.img"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"from 3 layers"* ]]
	diff "$T/want" <(listing "$T/v.img")
	[ "$(r4debugfs -R 'cat /usr/lib/liby.so' "$T/v.img" | sha256sum)" = "$(sha256sum <"$T/l2/usr/lib/liby.so")" ]
	run r4fsck -n "$T/v.img"
	[ "$status" -eq 0 ]
	need_oracle
	oracle_fsck "$T/v.img"
}

@test "add IMAGE SOURCE... --layers=oci gives what the layered create gives, in one transaction" {
	layers
	r4pack create -q "$T/base.tar" "$T/a.img"
	run r4pack add --json --layers=oci "$T/a.img" "$T/l1.tgz" "$T/l2.tar"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *'"layers":2'* && *'"whiteouts":4'* ]]
	diff "$T/want" <(listing "$T/a.img")
	run r4fsck -n "$T/a.img"
	[ "$status" -eq 0 ]
	# a later layer that is damaged: nothing of the earlier ones lands
	r4pack create -q "$T/base.tar" "$T/c.img"
	cp "$T/c.img" "$T/c0.img"
	head -c 3000 "$T/l2.tar" >"$T/bad.tar"
	run r4pack add --layers=oci "$T/c.img" "$T/l1.tgz" "$T/bad.tar"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"bad.tar"* && "$output" == *"nothing was changed"* ]]
	cmp "$T/c.img" "$T/c0.img"
}

@test "without --layers, .wh. entries are ordinary files" {
	layers
	r4pack create -q "$T/base.tar" "$T/l1.tgz" "$T/v.img"
	r4debugfs -R 'ls /etc' "$T/v.img" | grep -qx '\.wh\.shadow'
	r4debugfs -R 'ls /etc' "$T/v.img" | grep -qx 'shadow'
}

@test "a layered create that fails leaves the image as it was and no file beside it" {
	layers
	r4pack create -q "$T/base.tar" "$T/v.img"
	cp "$T/v.img" "$T/v0.img"
	head -c 3000 "$T/l2.tar" >"$T/bad.tar"
	run r4pack create -f --layers=oci "$T/base.tar" "$T/l1.tgz" "$T/bad.tar" "$T/v.img"
	echo "$output"
	[ "$status" -eq 1 ]
	cmp "$T/v.img" "$T/v0.img"
	[ -z "$(ls "$T" | grep 'layers\.')" ]
	run r4pack create --layers=oci "$T/base.tar" "$T/l1.tgz" "$T/bad.tar" "$T/new.img"
	[ "$status" -eq 1 ]
	[ ! -e "$T/new.img" ]
	[ -z "$(ls "$T" | grep 'layers\.')" ]
	# standard input cannot be measured for --size auto as a later layer
	run r4pack create --layers=oci "$T/base.tar" - "$T/new.img" <"$T/l2.tar"
	[ "$status" -eq 2 ]
	[[ "$output" == *"standard input"* ]]
	[ ! -e "$T/new.img" ]
}

@test "layered builds are reproducible: the same layers twice give the same bytes (SOURCE_DATE_EPOCH, --uuid)" {
	layers
	export SOURCE_DATE_EPOCH=1700000000
	r4pack create -q -U "$UUID" --layers=oci "$T/base.tar" "$T/l1.tgz" "$T/l2.tar" "$T/x.img"
	r4pack create -q -U "$UUID" --layers=oci "$T/base.tar" "$T/l1.tgz" "$T/l2.tar" "$T/y.img"
	cmp "$T/x.img" "$T/y.img"
	r4pack create -q -U "$UUID" "$T/base.tar" "$T/p.img"
	r4pack create -q -U "$UUID" "$T/base.tar" "$T/q.img"
	r4pack add -q --layers=oci "$T/p.img" "$T/l1.tgz" "$T/l2.tar"
	r4pack add -q --layers=oci "$T/q.img" "$T/l1.tgz" "$T/l2.tar"
	cmp "$T/p.img" "$T/q.img"
}

@test "a layer's own entry survives its whiteout and its opaque marker" {
	mkdir -p "$T/b/d" "$T/l/d"
	echo lower >"$T/b/d/old"
	echo upper >"$T/l/d/new"
	touch "$T/l/d/.wh..wh..opq" "$T/l/d/.wh.new"
	tar -C "$T/b" -cf "$T/b.tar" .
	# the layer's own file first, then the markers
	tar -C "$T/l" -cf "$T/l.tar" ./d/new ./d/.wh..wh..opq ./d/.wh.new
	r4pack create -q --layers=oci "$T/b.tar" "$T/l.tar" "$T/v.img"
	[ "$(r4debugfs -R 'ls /d' "$T/v.img" | grep -vx '\.\|\.\.')" = new ]
	[ "$(r4debugfs -R 'cat /d/new' "$T/v.img")" = upper ]
	run r4pack create --layers=bogus "$T/b.tar" "$T/l.tar" "$T/w.img"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--layers=bogus"* ]]
}

# A layered create builds into a new temporary file and places its data
# runs onto the target (pack/place.c). A file's last partial block is
# copied as it is into the new file (its rest reads as zeros there), but
# on a host file system with 1 KiB blocks that rest can be a hole, which
# must still reach the target as zeros, not as the target's old bytes.
@test "a layered create onto a window, built on 1 KiB blocks: a file's last block past its end is zeros on the target" {
	[ "$(id -u)" -eq 0 ] || skip "needs root to loop-mount a file system"
	command -v mkfs.ext4 >/dev/null || skip "needs mkfs.ext4"
	truncate -s 64M "$T/fs.img"
	mkfs.ext4 -q -F -b 1024 "$T/fs.img"
	mkdir "$T/mnt"
	if ! mount -o loop "$T/fs.img" "$T/mnt" 2>"$T/mount.err"; then
		skip "cannot loop-mount here: $(head -n 1 "$T/mount.err")"
	fi
	local m=$T/mnt rc=0 blks last tailb
	mkdir "$m/s" "$m/more"
	head -c 53460 /dev/urandom >"$m/s/f"	# 13 blocks and 212 bytes
	echo x >"$m/more/x"
	tar -cf "$m/s.tar" -C "$m/s" .
	# the disk's old bytes: all 0xff
	tr '\0' '\377' </dev/zero | head -c 16M >"$m/disk"
	r4pack create -q -f --offset=1048576 "$m/s.tar" "$m/more" "$m/disk" ||
		rc=$?
	blks=$(r4debugfs --offset=1048576 -R "blocks /f" "$m/disk")
	cp "$m/disk" "$T/disk"
	umount "$T/mnt"
	[ "$rc" -eq 0 ]
	echo "$blks"
	last=$(sed -n 's/.*data blocks [0-9]*-\([0-9]*\)$/\1/p' <<<"$blks")
	[ "$last" -gt 0 ]
	# the 3,884 bytes after the file's end in its last block
	tailb=$(dd if="$T/disk" bs=1 skip=$((1048576 + last * 4096 + 212)) \
		count=3884 status=none | tr -d '\0' | wc -c)
	[ "$tailb" -eq 0 ]
	r4fsck -n --offset=1048576 "$T/disk"
}

@test "layers: the built file synced, renamed over the image, then its directory synced" {
	mkdir -p "$T/a" "$T/c" "$T/out"
	echo one >"$T/a/one"
	echo two >"$T/c/two"
	run env R4_SYNC_LOG="$T/sync.log" "$top_builddir/tests/crash/bin/r4pack" \
		create -q "$T/a" "$T/c" "$T/out/l.img"
	[ "$status" -eq 0 ]
	cat "$T/sync.log"
	local d
	d=$(realpath "$T/out")
	# the last fsync is the directory's, after the image's own
	[ "$(grep '^fsync ' "$T/sync.log" | tail -n 1)" = "fsync $d" ]
	grep -q "^fsync $d/l.img.layers" "$T/sync.log"
}

@test "layers: the directory's sync fails after the rename: the image kept in place, exit 1, the message says so" {
	mkdir -p "$T/a" "$T/c" "$T/out"
	echo one >"$T/a/one"
	echo two >"$T/c/two"
	# (the first sync of the folder is the first layer's build, under
	# its temporary name: that one succeeds)
	run env R4_SYNC_FAIL="$(realpath "$T/out")" R4_SYNC_FAIL_AFTER=1 \
		"$top_builddir/tests/crash/bin/r4pack" create -q "$T/a" "$T/c" "$T/out/l.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"l.img: made and in place, but its directory could not be synced (a power cut may still lose the new name): Input/output error"* ]]
	r4debugfs -R "cat /two" "$T/out/l.img" | grep -qx two
	[ -z "$(find "$T/out" -name '*.layers*')" ]
}
