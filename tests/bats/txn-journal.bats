#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The journal at the command level: a transaction cut by the fault
# backend (R4_FAULT, read by the test helper r4txn through
# tests/helpers/fault_env.c) right after its commit point is replayed by r4fsck
# (exit 1, then 0), read through without a write by r4fsck --check, and
# replayed by fsck.reiser4 to the same image.

load helpers

# r4txn is built by make check: missing, it is a failure, not a skip.
need_r4txn() {
	command -v r4txn >/dev/null 2>&1 || {
		echo "r4txn not found (make check builds tests/helpers/r4txn)"
		return 1
	}
}

# mk IMAGE: a fresh 16 MiB volume.
mk() {
	r4mkfs -q "$1" 16M
}

# cut IMAGE WORKLOAD: run the workload once on a copy to learn which
# write is the journal header's, then on IMAGE cut right after it.
cut() {
	local h
	cp --sparse=always "$1" "$T/count.img"
	h=$(r4txn "$2" "$T/count.img" | sed -n 's/.*header_write=\([0-9]*\).*/\1/p')
	[ -n "$h" ]
	R4_FAULT=cut-after=$h r4txn "$2" "$1" >/dev/null
}

blk() {
	dd if="$1" bs=4096 skip="$2" count=1 status=none | sha256sum | command cut -c1-64
}

@test "r4txn: a full commit is clean for r4fsck and fsck.reiser4" {
	need_r4txn
	mk "$T/a.img"
	run r4txn relocate "$T/a.img"
	[ "$status" -eq 0 ]
	# the two relocated blocks are neighbours: one write
	[[ "$output" == *"relocated=2 overwritten=2 log=2 writes=9 header_write=6"* ]]
	run r4fsck "$T/a.img"
	[ "$status" -eq 0 ]
	need_oracle
	oracle_fsck_run "$T/a.img"
}

@test "R4_FAULT=count reports the writes; a bad R4_FAULT is refused" {
	need_r4txn
	mk "$T/a.img"
	R4_FAULT=count R4_FAULT_REPORT="$T/rep" r4txn relocate "$T/a.img"
	grep -q '^writes=9 syncs=5 cut=0$' "$T/rep"
	R4_FAULT=bogus run r4txn relocate "$T/a.img"
	[ "$status" -eq 2 ]
	[[ "$output" == *"R4_FAULT='bogus'"* ]]
}

@test "r4fsck --check reads through a cut transaction and writes nothing" {
	need_r4txn
	mk "$T/a.img"
	cut "$T/a.img" relocate
	before=$(sha256sum < "$T/a.img")
	run r4fsck --check "$T/a.img"
	echo "$output"
	# the one problem: the kernel's own replay would lose it
	[ "$status" -eq 4 ]
	[[ "$output" == *"1 committed transaction not replayed"* ]]
	[[ "$output" == *"block 19: 1 committed transaction not replayed"*"the Reiser4 kernel's own replay loses this transaction's root pointer: run \`r4fsck -p\` before mounting"* ]]
	[[ "$output" == *"1 problem found"* ]]
	[ "$(sha256sum < "$T/a.img")" = "$before" ]
	run r4fsck --check --json "$T/a.img"
	[ "$status" -eq 4 ]
	[[ "$output" == *'"overlaid":1'* ]]
	[[ "$output" == *'{"code":"journal-unreplayed","block":19,"item":-1,"key":"","fix":"preen","message":"1 committed transaction not replayed'*'run `r4fsck -p` before mounting"}'* ]]
	[ "$(sha256sum < "$T/a.img")" = "$before" ]
	# -p replays it (exit 1) and -n is clean after it
	run r4fsck -p "$T/a.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"replayed 1 transaction from the journal"* ]]
	run r4fsck -n "$T/a.img"
	[ "$status" -eq 0 ]
}

@test "r4fsck -y replays a cut transaction; -n then finds nothing" {
	need_r4txn
	mk "$T/a.img"
	cut "$T/a.img" relocate
	run r4fsck -y "$T/a.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"replayed 1 transaction from the journal"* ]]
	run r4fsck -n "$T/a.img"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "the journal header is followed by the format40 super block home, alone and synced" {
	need_r4txn
	mk "$T/a.img"
	cp --sparse=always "$T/a.img" "$T/b.img"
	h=$(r4txn relocate "$T/b.img" | sed -n 's/.*header_write=\([0-9]*\).*/\1/p')
	new17=$(blk "$T/b.img" 17)
	old17=$(blk "$T/a.img" 17)
	old18=$(blk "$T/a.img" 18)
	[ "$new17" != "$old17" ]
	# cut right after the header: the old super block (the kernel's
	# window); -n names it
	cp --sparse=always "$T/a.img" "$T/c.img"
	R4_FAULT=cut-after=$h r4txn relocate "$T/c.img" >/dev/null
	[ "$(blk "$T/c.img" 17)" = "$old17" ]
	run r4fsck -n "$T/c.img"
	[ "$status" -eq 4 ]
	# one write more: the new super block, the bitmap still old
	cp --sparse=always "$T/a.img" "$T/c.img"
	R4_FAULT=cut-after=$((h + 1)) r4txn relocate "$T/c.img" >/dev/null
	[ "$(blk "$T/c.img" 17)" = "$new17" ]
	[ "$(blk "$T/c.img" 18)" = "$old18" ]
	# the power goes after the next write, unsynced writes lost: the
	# super block was synced alone
	cp --sparse=always "$T/a.img" "$T/c.img"
	R4_FAULT=drop-unsynced=$((h + 2)) r4txn relocate "$T/c.img" >/dev/null
	[ "$(blk "$T/c.img" 17)" = "$new17" ]
}

@test "r4fsck replays a cut transaction: exit 1, then 0" {
	need_r4txn
	mk "$T/a.img"
	cut "$T/a.img" relocate
	run r4fsck "$T/a.img"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"replayed 1 transaction from the journal"* ]]
	[[ "$output" == *"no problems found"* ]]
	run r4fsck "$T/a.img"
	[ "$status" -eq 0 ]
	[[ "$output" != *replayed* ]]
	need_oracle
	oracle_fsck_run "$T/a.img"
}

@test "fsck.reiser4 replays our journal to the image r4fsck makes" {
	need_r4txn
	need_oracle
	mk "$T/a.img"
	cut "$T/a.img" relocate
	cp --sparse=always "$T/a.img" "$T/b.img"
	run fsck.reiser4 --check -f -y "$T/b.img"
	# fsck.reiser4 wraps its lines at 80 columns (a long path splits them)
	[[ "$(tr -s '\n ' '  ' <<<"$output")" == *"1 transactions replayed"* ]]
	# its first run compares the tree with the bitmap it loaded before
	# replaying; from the second run on it is clean
	oracle_fsck_run "$T/b.img"
	run r4fsck "$T/a.img"
	[ "$status" -eq 1 ]
	# everything but the journal header and footer (fsck.reiser4 zeroes
	# them, the kernel and r4fsck keep them) is the same
	for b in 17 18 $(seq 21 40); do
		[ "$(blk "$T/a.img" $b)" = "$(blk "$T/b.img" $b)" ] ||
			{ echo "block $b differs"; false; }
	done
}

@test "a cut in-place transaction: fsck.reiser4 replays it clean at once" {
	need_r4txn
	need_oracle
	mk "$T/a.img"
	cut "$T/a.img" inplace
	cp --sparse=always "$T/a.img" "$T/b.img"
	oracle_fsck_run "$T/b.img"
	# fsck.reiser4 wraps its lines at 80 columns (a long path splits them)
	[[ "$(tr -s '\n ' '  ' <<<"$output")" == *"1 transactions replayed"* ]]
	run r4fsck "$T/a.img"
	[ "$status" -eq 1 ]
	[ "$(blk "$T/a.img" 24)" = "$(blk "$T/b.img" 24)" ]
}

@test "r4fsck does not replay a journal that lies: names the block, checks without it" {
	need_r4txn
	mk "$T/a.img"
	cut "$T/a.img" relocate
	txh=$(od -An -tu8 -j $((19 * 4096)) -N 8 "$T/a.img" | tr -d ' ')
	# the tx head's prev_tx points at itself: a cycle
	printf "$(printf '\\x%02x' $((txh & 255)) $(((txh >> 8) & 255)) 0 0 0 0 0 0)" |
		dd of="$T/a.img" bs=1 seek=$((txh * 4096 + 24)) conv=notrunc status=none
	before=$(sha256sum < "$T/a.img")
	run r4fsck "$T/a.img"
	echo "$output"
	[ "$status" -eq 4 ]
	[[ "$output" == *"cannot replay the journal"*"cycle"*"(block $txh)"* ]]
	[[ "$output" == *"journal holds an unreplayed transaction"* ]]
	run r4fsck --check "$T/a.img"
	[ "$status" -eq 4 ]
	[[ "$output" == *"(block $txh)"* ]]
	[ "$(sha256sum < "$T/a.img")" = "$before" ]
}

@test "an add that writes its nodes behind gathers neighbouring blocks into runs: 6,000 files in at most 64 writes" {
	local rp=$top_builddir/tests/crash/bin/r4pack
	[ -x "$rp" ] || { echo "$rp is not built (make check builds it)"; return 1; }
	# more node blocks (some 3,000) than the add keeps in memory (2,048)
	python3 -c '
import os, random, sys
random.seed(3)
for i in range(6000):
    d = "%s/n%02d" % (sys.argv[1], i % 30)
    os.makedirs(d, exist_ok=True)
    with open("%s/f%05d" % (d, i), "wb") as f:
        f.write(random.randbytes(random.randint(0, 4000)))
' "$T/new"
	r4mkfs -q -o create=reg40 "$T/a.img" 64M
	# the default write-behind ring, whatever the caller's environment
	env -u R4_WRITE_BEHIND R4_FAULT=count R4_FAULT_REPORT="$T/rep" \
		"$rp" add -q "$T/a.img" "$T/new"
	cat "$T/rep"
	n=$(sed -n 's/^writes=\([0-9]*\) .*/\1/p' "$T/rep")
	[ -n "$n" ]
	[ "$n" -le 64 ]
	r4fsck -n -q "$T/a.img"
}
