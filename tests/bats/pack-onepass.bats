#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The one-pass builder (include/r4/pack.h) through its test driver
# tests/helpers/r4packer: a host folder in, a volume out, checked by the
# oracle (fsck.reiser4, measurefs.reiser4) and read back with libreiser4.

load helpers

# r4packer is built by make check: missing, it is a failure, not a skip.
need_r4packer() {
	command -v r4packer >/dev/null 2>&1 || {
		echo "r4packer not found (make check builds tests/helpers/r4packer)"
		return 1
	}
}

# A small tree with every kind of object.
make_src() {
	local s=$1
	mkdir -p "$s/a/b/c" "$s/empty" "$s/many"
	printf 'hello\n' >"$s/small"
	head -c 4097 /dev/zero | tr '\0' 'x' >"$s/a/f4097"
	head -c 16385 /dev/zero | tr '\0' 'y' >"$s/a/f16385"
	head -c 300000 /dev/zero | tr '\0' 'z' >"$s/a/b/big"
	truncate -s 5M "$s/a/b/sparse"
	printf 'data' | dd of="$s/a/b/sparse" bs=1 seek=3000000 conv=notrunc 2>/dev/null
	ln "$s/small" "$s/a/b/c/hard"
	ln -s ../small "$s/a/sym"
	mkfifo "$s/a/fifo"
	for i in $(seq 1 300); do
		printf '%d\n' "$i" >"$s/many/file-with-a-long-enough-name-$i"
	done
	touch -d '2001-02-03 04:05:06' "$s/a/f4097"
}

@test "build: a folder read at finish time is fsck-clean, equal, unfragmented" {
	need_r4packer; need_oracle; need_r4ref
	make_src "$T/src"
	run r4packer "$T/img" "$T/src"
	[ "$status" -eq 0 ]
	oracle_fsck "$T/img"
	r4ref manifest "$T/img" >"$T/got"
	r4ref manifest-dir "$T/src" >"$T/want"
	diff "$T/want" "$T/got"
	run measurefs.reiser4 -f -D "$T/img"
	[ "${lines[-1]}" = "0.000000" ]
	run measurefs.reiser4 -f -T "$T/img"
	[ "${lines[-1]}" = "0.000000" ]
}

@test "build: streamed data (as from an archive) gives the same files" {
	need_r4packer; need_oracle; need_r4ref
	make_src "$T/src"
	run r4packer -s -o node=node41 "$T/img" "$T/src"
	[ "$status" -eq 0 ]
	oracle_fsck "$T/img"
	r4ref manifest "$T/img" >"$T/got"
	r4ref manifest-dir "$T/src" >"$T/want"
	diff "$T/want" "$T/got"
}

@test "build: same entries, uuid and SOURCE_DATE_EPOCH give the same bytes" {
	need_r4packer
	make_src "$T/src"
	# reading the source the first time moves its atimes (relatime)
	r4packer "$T/warm" "$T/src"
	SOURCE_DATE_EPOCH=1700000000 r4packer -U 01234567-89ab-cdef-0123-456789abcdef "$T/one" "$T/src"
	SOURCE_DATE_EPOCH=1700000000 r4packer -U 01234567-89ab-cdef-0123-456789abcdef "$T/two" "$T/src"
	cmp "$T/one" "$T/two"
}

@test "build: a fixed size that is too small fails and leaves the target alone" {
	need_r4packer
	make_src "$T/src"
	printf 'keep' >"$T/img"
	run r4packer -S 256K "$T/img" "$T/src"
	[ "$status" -ne 0 ]
	[[ "$output" == *"the volume is full"* ]]
	[ "$(cat "$T/img")" = keep ]
	[ -z "$(ls -A "$T" | grep r4pack)" ]
}
