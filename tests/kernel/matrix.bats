#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The kernel reads what r4pack create writes (doc/kernel.md §1)
# test tier"): a seeded random tree (tests/kernel/gentree.py) packed with
# one option set per test, then ONE read-only boot that walks /mnt; the
# manifest the kernel reads (sha256 by read(2), lstat) must equal the
# source's, with no Reiser4 warning, BUG, Oops or panic.

load ../bats/helpers
load kernel

setup_file() { kernel_setup_file; }

# pack_and_read SEED R4PACK-OPTIONS...: the whole leg.
pack_and_read() {
	local seed=$1
	shift
	need_kernel
	gentree "$T/src" "$seed"
	r4pack create -q --size 64M "$@" "$T/src" "$T/img"
	kwalk "$T/img" "$T/k.man"
	kcmp "$T/src.man" "$T/k.man"
}

# pack_stdin_and_read SEED R4PACK-OPTIONS...: the same leg from a tar
# stream on standard input (sparse members kept): its data waits in the
# spool until the tree reaches each file; the image has nothing for
# r4repacker to move, and both checkers find it clean.
pack_stdin_and_read() {
	local seed=$1
	shift
	need_kernel
	gentree "$T/src" "$seed"
	tar --sparse -C "$T/src" -cf - . |
		r4pack create -q --size 64M "$@" - "$T/img"
	r4repacker -n --json "$T/img" | python3 -c 'import json, sys
sys.exit(json.load(sys.stdin)["plan"]["blocks_to_move"] != 0)'
	r4fsck -n "$T/img"
	cp "$T/img" "$T/copy.img"
	oracle_fsck "$T/copy.img"
	kwalk "$T/img" "$T/k.man"
	kcmp "$T/src.man" "$T/k.man"
}

@test "matrix: reg40 (default) [seed 1]" { pack_and_read 1; }
@test "matrix: from standard input [seed 22]" { pack_stdin_and_read 22; }
@test "matrix: from standard input, lzo1 64K conv [seed 23]" { pack_stdin_and_read 23 --compress=lzo1; }
# every name spilled to $TMPDIR in runs of 4 KiB (pack/spill.c): read
# back at finish, run after run
@test "matrix: every name spilled [seed 24]" { R4_PACK_SPILL_AFTER=0 R4_PACK_RUN_BYTES=4096 pack_and_read 24; }
@test "matrix: from standard input, every name spilled [seed 25]" { R4_PACK_SPILL_AFTER=0 R4_PACK_RUN_BYTES=4096 pack_stdin_and_read 25; }
@test "matrix: node41 [seed 2]" { pack_and_read 2 -o node=node41; }
@test "matrix: lzo1 4K conv [seed 3]" { pack_and_read 3 --compress=lzo1 -o cluster=4K,compressMode=conv; }
@test "matrix: lzo1 16K force [seed 4]" { pack_and_read 4 --compress=lzo1 -o cluster=16K,compressMode=force; }
@test "matrix: lzo1 64K lattd [seed 5]" { pack_and_read 5 --compress=lzo1 -o cluster=64K,compressMode=lattd; }
@test "matrix: lzo1 32K ultim [seed 6]" { pack_and_read 6 --compress=lzo1 -o cluster=32K,compressMode=ultim; }
@test "matrix: lzo1 8K none [seed 7]" { pack_and_read 7 --compress=lzo1 -o cluster=8K,compressMode=none; }
@test "matrix: lzo1 64K conv (mkfs's default profile) [seed 8]" { pack_and_read 8 --compress=lzo1; }
@test "matrix: gzip1 4K ultim [seed 9]" { pack_and_read 9 --compress=gzip1 -o cluster=4K,compressMode=ultim; }
@test "matrix: gzip1 16K conv [seed 10]" { pack_and_read 10 --compress=gzip1 -o cluster=16K,compressMode=conv; }
@test "matrix: gzip1 64K none [seed 11]" { pack_and_read 11 --compress=gzip1 -o cluster=64K,compressMode=none; }
@test "matrix: gzip1 64K force [seed 12]" { pack_and_read 12 --compress=gzip1 -o cluster=64K,compressMode=force; }
@test "matrix: gzip1 32K lattd [seed 13]" { pack_and_read 13 --compress=gzip1 -o cluster=32K,compressMode=lattd; }
@test "matrix: zstd1 4K lattd [seed 14]" { pack_and_read 14 --compress=zstd1 -o cluster=4K,compressMode=lattd; }
@test "matrix: zstd1 16K none [seed 15]" { pack_and_read 15 --compress=zstd1 -o cluster=16K,compressMode=none; }
@test "matrix: zstd1 64K conv [seed 16]" { pack_and_read 16 --compress=zstd1 -o cluster=64K,compressMode=conv; }
@test "matrix: zstd1 8K force [seed 17]" { pack_and_read 17 --compress=zstd1 -o cluster=8K,compressMode=force; }
@test "matrix: zstd1 32K ultim [seed 18]" { pack_and_read 18 --compress=zstd1 -o cluster=32K,compressMode=ultim; }
@test "matrix: node41 lzo1 16K conv [seed 19]" { pack_and_read 19 -o node=node41 --compress=lzo1 -o cluster=16K; }
@test "matrix: node41 gzip1 64K force [seed 20]" { pack_and_read 20 -o node=node41 --compress=gzip1 -o compressMode=force; }
@test "matrix: node41 zstd1 4K lattd [seed 21]" { pack_and_read 21 -o node=node41 --compress=zstd1 -o cluster=4K,compressMode=lattd; }
