#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/check-includes.sh itself: it passes the tree and fails each kind
# of inversion, on a copy of the tree with one line changed; and the
# shared library as a program that loads it would use it.

load helpers

# A copy of the sources the check reads.
copy_tree() {
	(cd "$top_srcdir" && find format include libimage cmd fuzz -type f \
		\( -name '*.c' -o -name '*.h' \) -print0 |
		cpio -0pdm --quiet "$T/src")
}

check() {
	run sh "$top_srcdir/tests/check-includes.sh" "$T/src"
}

@test "check-includes: the tree keeps the layer order" {
	run sh "$top_srcdir/tests/check-includes.sh"
	echo "$output" | grep '^not ok' || true
	[ "$status" -eq 0 ]
	[[ "$output" == 1..* ]]
}

@test "check-includes: a lower layer including a higher one fails" {
	copy_tree
	echo '#include "libimage/txn/txn.h"' >> "$T/src/libimage/alloc/space.c"
	check
	[ "$status" -ne 0 ]
	grep -q 'not ok .* libimage/alloc/space.c: .*libimage/alloc (rank 30) may not include libimage/txn' <<<"$output"
}

@test "check-includes: rooms of equal rank do not include each other" {
	copy_tree
	echo '#include "libimage/check/check.h"' >> "$T/src/libimage/mkfs/mkfs.c"
	echo '#include "libimage/mkfs/fixed.h"' >> "$T/src/libimage/check/super.c"
	check
	[ "$status" -ne 0 ]
	grep -q 'not ok .* libimage/check/super.c: .*may not include libimage/mkfs' <<<"$output"
	grep -q 'not ok .* libimage/mkfs/mkfs.c: ' <<<"$output"
}

@test "check-includes: an unknown libimage folder or a loose file fails" {
	copy_tree
	mkdir "$T/src/libimage/newroom"
	echo 'int x;' > "$T/src/libimage/newroom/a.c"
	echo 'int y;' > "$T/src/libimage/loose.c"
	check
	[ "$status" -ne 0 ]
	grep -q 'not ok .* libimage/newroom/a.c: unknown folder libimage/newroom' <<<"$output"
	grep -q 'not ok .* libimage/loose.c: a loose file' <<<"$output"
}

@test "check-includes: format, public headers and commands stay on their side" {
	copy_tree
	echo '#include "libimage/util/err.h"' >> "$T/src/format/key.c"
	echo '#include "format/key.h"' >> "$T/src/include/r4/read.h"
	echo '#include "libimage/vol/volume.h"' >> "$T/src/cmd/fsck/main.c"
	echo '#include "format/super.h"' >> "$T/src/cmd/pack/add.c"
	echo '#include "libimage/pack/packer.h"' >> "$T/src/libimage/tar/map.c"
	echo '#include "no/such.h"' >> "$T/src/libimage/io/dev.c"
	check
	[ "$status" -ne 0 ]
	grep -q 'not ok .* format/key.c: .*format/ includes only' <<<"$output"
	grep -q 'not ok .* include/r4/read.h: .*a public header' <<<"$output"
	grep -q 'not ok .* cmd/fsck/main.c: .*a command includes only' <<<"$output"
	grep -q 'not ok .* cmd/pack/add.c: .*only cmd/debugfs may include format/' <<<"$output"
	grep -q 'not ok .* libimage/tar/map.c: .*a private header of libimage/pack' <<<"$output"
	grep -q 'not ok .* libimage/io/dev.c: .*no such file' <<<"$output"
	[ "$(grep -c '^not ok' <<<"$output")" -eq 6 ]
}

@test "the shared library unloaded (dlclose) while a thread that used it lives on: the thread ends cleanly" {
	local so=$top_builddir/libimage/.libs/libr4kit.so
	[ -f "$so" ]
	r4mkfs -q "$T/d.img" 64M
	# the thread's leftover lists are the price (at most 1 MiB a
	# thread): no leak report for them
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
		run "$top_builddir/tests/helpers/r4dlclose" "$so" "$T/d.img"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "thread ended" ]
	r4fsck -n "$T/d.img"
}
