#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Random damage, fixed seeds: bytes changed in the node headers and item
# headers of a good populated volume (three levels: root, twigs, leaves),
# and in the ctail40 item bodies of the same kind of volume with its
# files compressed (doc/compress.md §7).
# For each damaged image: r4fsck -y ends (no crash, no hang: timeout)
# with exit 0 or 1 (fsck(8)): always clean after one repair (exit 4,
# problems left, is a failure, and so is an operational error, 8); a
# second r4fsck -y exits 0 and prints nothing and fsck.reiser4 --check
# calls the volume consistent (an oracle that crashes is a failure).
# The figures (images, rebuilds, files kept exactly) are printed as TAP
# comments; how many files fsck.reiser4 keeps on the same damage is
# bench/repair-kept.sh's job.
#   R4_RANDOM_SEEDS=N  images per test (default 25)

load helpers

. "$top_srcdir/tests/surgery.sh"

SEEDS=${R4_RANDOM_SEEDS:-25}

# The good volume (the same bytes every run, so that a seed's failure
# can be reproduced), its manifest of non-directories and its nodes
# ("block level items" lines in $T/nodes).
good() {
	local s=$T/src i
	mkdir -p "$s/a" "$s/b" "$s/c/d"
	seq 1 60000 | awk '{ print $1 * 7919 % 104729, $1 }' >"$T/base"
	for i in $(seq 1 150); do tail -c +$((i * 13)) "$T/base" | head -c $((i * 97 % 9000)) >"$s/a/f$i"; done
	for i in $(seq 1 120); do tail -c +$((i * 17)) "$T/base" | head -c $((i * 131 % 30000)) >"$s/b/g$i"; done
	for i in $(seq 1 30); do echo "top $i" >"$s/t$i"; done
	head -c 300000 "$T/base" >"$s/c/d/big"
	ln -s t1 "$s/sym"
	ln "$s/t2" "$s/c/hard"
	find "$s" -exec touch -h -d @1600000000 {} +
	r4pack create -q "$s" "$T/good.img"
	r4manifest "$T/good.img" | awk -F '\t' '$2 != "d"' | cut -f 1-11 >"$T/good.files"
	r4debugfs -R "print tree" "$T/good.img" |
		sed -n 's/^node \([0-9]*\): node40, level \([0-9]*\), \([0-9]*\) items.*/\1 \2 \3/p' >"$T/nodes"
	[ "$(awk '$2 == 3' "$T/nodes" | wc -l)" -eq 1 ]
	[ "$(wc -l <"$T/nodes")" -gt 100 ]
}

# The same volume with its files compressed (r4pack --compress: zstd1,
# 64K clusters), and its ctail40 items ("block body-offset length"
# lines in $T/ctails).
goodc() {
	local s=$T/src i
	mkdir -p "$s/a" "$s/b"
	seq 1 60000 | awk '{ print $1 * 7919 % 104729, $1 }' >"$T/base"
	for i in $(seq 1 150); do tail -c +$((i * 13)) "$T/base" | head -c $((i * 97 % 9000)) >"$s/a/f$i"; done
	for i in $(seq 1 40); do tail -c +$((i * 17)) "$T/base" | head -c $((i * 3131 % 150000)) >"$s/b/g$i"; done
	for i in $(seq 1 30); do echo "top $i" >"$s/t$i"; done
	find "$s" -exec touch -h -d @1600000000 {} +
	r4pack create -q --compress "$s" "$T/good.img"
	r4manifest "$T/good.img" | awk -F '\t' '$2 != "d"' | cut -f 1-11 >"$T/good.files"
	r4debugfs -R "print tree" "$T/good.img" | awk '
		/^node / { blk = $2; sub(":", "", blk) }
		/^#[0-9]* ctail40 / { print blk, $(NF - 4), $(NF - 2) }' >"$T/ctails"
	[ "$(wc -l <"$T/ctails")" -gt 100 ]
}

# hitc IMAGE: change one byte (XOR with 1..255) in the body of a random
# ctail40 item (its shift byte or cluster bytes); HIT says where.
hitc() {
	local img=$1 line blk at len off v k
	k=$((RANDOM % NCTAILS + 1))	# not in $(...): see hit
	line=$(sed -n "${k}p" "$T/ctails")
	read -r blk at len <<<"$line"
	off=$((blk * 4096 + at + RANDOM % len))
	v=$(( $(peek "$img" $off 1) ^ (RANDOM % 255 + 1) ))
	poke "$img" $off $v 1
	HIT="block $blk byte $((off % 4096))"
}

# hit IMAGE WHERE: change one byte (XOR with 1..255) of a random node
# (RANDOM, seeded by the caller): WHERE node = its header (28 bytes),
# item = one of its item headers (38 bytes each, from the block's end).
# HIT says where. RANDOM is read in this shell only: bash reseeds it in
# every subshell ($(...)), which would make the seeds worthless.
hit() {
	local img=$1 where=$2 line blk items off v k
	k=$((RANDOM % NODES + 1))
	line=$(sed -n "${k}p" "$T/nodes")
	read -r blk _ items <<<"$line"
	if [ "$where" = node ]; then
		off=$((RANDOM % 28))
	else
		off=$((4096 - (RANDOM % items + 1) * 38 + RANDOM % 38))
	fi
	off=$((blk * 4096 + off))
	v=$(( $(peek "$img" $off 1) ^ (RANDOM % 255 + 1) ))
	poke "$img" $off $v 1
	HIT="block $blk byte $((off % 4096))"
}

# loop FAMILY FIRST: $SEEDS images damaged by FAMILY with seeds from
# FIRST; every failure is listed, the test fails if there is one.
loop() {
	local family=$1 first=$2 seed img rc out fails=0 rebuilt=0 kept=0 k
	local where total
	need_oracle
	if [ "$family" = ctail ]; then
		goodc
		NCTAILS=$(wc -l <"$T/ctails")
	else
		good
		NODES=$(wc -l <"$T/nodes")
	fi
	total=$(wc -l <"$T/good.files")
	img=$T/d.img
	for ((seed = first; seed < first + SEEDS; seed++)); do
		RANDOM=$seed
		cp "$T/good.img" "$img"
		where=""
		case $family in
		node) hit "$img" node; where=$HIT ;;
		item) hit "$img" item; where=$HIT ;;
		mixed)
			for ((k = RANDOM % 4 + 2; k > 0; k--)); do
				if [ $((RANDOM % 3)) = 0 ]; then
					hit "$img" node
				else
					hit "$img" item
				fi
				where+="$HIT; "
			done
			;;
		ctail)
			for ((k = RANDOM % 3 + 1; k > 0; k--)); do
				hitc "$img"
				where+="$HIT; "
			done
			;;
		esac
		rc=0
		out=$(timeout 120 r4fsck -y --json "$img" 2>&1) || rc=$?
		if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
			echo "seed $seed ($where): r4fsck -y exit $rc: left $(grep -o '"[a-z0-9-]*":{"found":[0-9]*,"left":[1-9]' <<<"$out" | cut -d '"' -f 2 | tr '\n' ' ')$(tail -n 2 <<<"$out")"
			fails=$((fails + 1))
			continue
		fi
		[[ "$out" != *'"rebuilt":true'* ]] || rebuilt=$((rebuilt + 1))
		rc=0
		out=$(timeout 120 r4fsck -y "$img" 2>&1) || rc=$?
		if [ "$rc" -ne 0 ] || [ -n "$out" ]; then
			echo "seed $seed ($where): second r4fsck -y exit $rc: $(head -n 3 <<<"$out")"
			fails=$((fails + 1))
			continue
		fi
		if ! oracle_fsck "$img"; then
			echo "seed $seed ($where): fsck.reiser4 --check: not consistent"
			fails=$((fails + 1))
			continue
		fi
		k=$(r4manifest "$img" | awk -F '\t' '$2 != "d"' | cut -f 1-11 |
			grep -cxFf - "$T/good.files" || true)
		kept=$((kept + k))
	done
	echo "# $family: $SEEDS images (seeds $first..$((first + SEEDS - 1))), $fails failed, $rebuilt rebuilt; files kept exactly: $kept of $((SEEDS * total))" >&3
	[ "$fails" -eq 0 ]
}

@test "random bytes in node headers: repaired clean, no crash or hang" {
	loop node 1
}

@test "random bytes in item headers: repaired clean, no crash or hang" {
	loop item 1001
}

@test "random bytes in several headers of several nodes: repaired clean" {
	loop mixed 2001
}

@test "random bytes in the ctail40 items of a compressed volume: repaired clean" {
	loop ctail 3001
}

# The stat data of the regular files ("size-offset nlink-offset" lines:
# absolute offsets of the size and nlink fields, large keys) and the
# tail40 items that follow another of over a byte in their node
# ("tail header-offset body-offset length-of-the-one-before" lines, the
# header's body offset field at +32), of the good volume.
size_targets() {
	r4debugfs -R "print tree" "$T/good.img" | awk '
		/^node / { blk = $2; sub(":", "", blk); prev = "" }
		/^#[0-9]* / { n = substr($1, 2); at = 0
			for (i = 1; i < NF; i++) if ($i == "offset") at = $(i + 1)
			if ($2 == "stat40") sd = blk * 4096 + at
			else sd = ""
			if ($2 == "plain40" && prev == "plain40" && plen > 1)
				print "tail", blk * 4096 + 4096 - (n + 1) * 38, at, plen > "'"$T/tails"'"
			prev = $2; plen = $(NF - 2) }
		/^ *mode 010/ && sd != "" { print sd + 8, sd + 4; sd = "" }' >"$T/sds"
	[ "$(wc -l <"$T/sds")" -gt 200 ]
	[ "$(wc -l <"$T/tails")" -gt 20 ]
}

# A file's size or link count changed, or the boundary between two tail
# bodies in a node moved (an item's body offset lowered: the one before
# it misses what it holds past its size; rebuild.c: rep_bounds_shifted,
# a tree rebuild); SIZED says what.
size_hit() {
	local img=$1 line so no v k t ho at pl
	k=$((RANDOM % NSDS + 1))
	line=$(sed -n "${k}p" "$T/sds")
	read -r so no <<<"$line"
	v=$(peek "$img" "$so" 8)
	if [ $((RANDOM % 4)) = 0 ]; then
		t=$((RANDOM % NTAILS + 1))
		read -r _ ho at pl <<<"$(sed -n "${t}p" "$T/tails")"
		pl=$((pl > 40 ? 40 : pl))
		poke "$img" $((ho + 32)) $((at - RANDOM % (pl - 1) - 1)) 2
		SIZED+="tail body at $ho moved; "
		return
	fi
	case $((RANDOM % 6)) in
	0) v=$((v + RANDOM % 5000 + 1)) ;;
	1) v=$((v > 0 ? v - RANDOM % v - 1 : 3)) ;;
	2) v=$((v + 1)) ;;
	3) v=$((v ? 0 : 1)) ;;
	4) v=$(((RANDOM << 15 | RANDOM) << 10)) ;;
	5) poke "$img" "$no" $((RANDOM % 5 + 2)) 4
	   SIZED+="nlink at $no; "
	   return ;;
	esac
	poke "$img" "$so" "$v" 8
	SIZED+="size at $so = $v; "
}

# Each image repaired twice, over the bounded check's list and with the
# tables (R4_CHECK_TABLES), must give the same exit code, report and
# bytes; file sizes and link counts (repair.c: listed) are repaired with
# no table check unless a moved boundary may be there (chk.fixes_shift).
@test "random sizes, link counts and tail boundaries: the bounded repair and the tables' agree" {
	local seed img rc rc2 out out2 fails=0 bounded=0 tabled=0 sizes=0 st k
	# 12 images at least: seeds 4001..4012 hold a tabled case and 3
	# sizes set (fewer would not reach what the test asserts)
	local n=$((SEEDS * 2 < 12 ? 12 : SEEDS * 2))
	export SOURCE_DATE_EPOCH=1700000000
	good
	size_targets
	NSDS=$(wc -l <"$T/sds")
	NTAILS=$(wc -l <"$T/tails")
	img=$T/d.img
	for ((seed = 4001; seed < 4001 + n; seed++)); do
		RANDOM=$seed
		cp "$T/good.img" "$img"
		SIZED=""
		for ((k = RANDOM % 3 + 1; k > 0; k--)); do
			size_hit "$img"
		done
		cp "$img" "$T/t.img"
		rc=0
		out=$(R4_FSCK_STATS=1 timeout 120 r4fsck -y --json "$img" 2>"$T/st") || rc=$?
		rc2=0
		out2=$(R4_CHECK_TABLES=1 timeout 120 r4fsck -y --json "$T/t.img" 2>/dev/null) || rc2=$?
		out2=${out2//"$T/t.img"/"$img"}
		st=$(cat "$T/st")
		if [ "$rc" != "$rc2" ] || [ "$out" != "$out2" ] || ! cmp -s "$img" "$T/t.img"; then
			echo "seed $seed ($SIZED): exit $rc, $rc2 with the tables; $st"
			diff <(echo "$out") <(echo "$out2") | head -n 6
			fails=$((fails + 1))
			continue
		fi
		case $st in
		*", 0 table checks"*) bounded=$((bounded + 1))
			# sizes set with no tree rebuild: the list's
			[[ "$out" != *'"rebuilt":false'* ||
			   "$out" != *'"done":"object '*': size set to'* ]] ||
				sizes=$((sizes + 1)) ;;
		*) tabled=$((tabled + 1)) ;;
		esac
	done
	echo "# $n images (seeds 4001..$((4000 + n))), $fails differ; $bounded repaired with no table check ($sizes of them sizes set with no rebuild), $tabled with one" >&3
	[ "$fails" -eq 0 ]
	[ "$sizes" -ge $((n / 4)) ]
	[ "$tabled" -ge 1 ]
}
