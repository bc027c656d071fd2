#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Compressed (ccreg40) files, doc/compress.md. The images the Reiser4
# kernel itself wrote (tests/data/kernel, see its README.md) must read
# back exactly, file for file, through
# r4debugfs rdump, r4pack extract and the read API (r4manifest), and
# r4fsck must find nothing in them but the kernel's own leading hole
# (dir2/sparse, doc/compress.md §6). Those images are required: when the
# folder is missing these tests fail.

load helpers

KI="$top_srcdir/tests/data/kernel"

# Decompress kernel image $1 into $T/$1.img.
kimg() {
	if [ ! -f "$KI/$1.img.xz" ] || [ ! -f "$KI/$1.sha256" ]; then
		echo "missing $KI/$1.img.xz or $1.sha256 (the kernel-written" \
		     "images of tests/data/kernel)"
		return 1
	fi
	xz -dc "$KI/$1.img.xz" | cp --sparse=always /dev/stdin "$T/$1.img"
}

# kernel_fsck IMAGE: r4fsck (a check) finds one problem only: the
# kernel's own dir2/sparse, whose cluster 0 is a hole before data (the
# Reiser4 kernel panics reading it: doc/compress.md §6).
kernel_fsck() {
	run r4fsck "$1"
	[ "$status" -eq 4 ] || { echo "$output"; return 1; }
	[[ "$output" == *"compressed file /dir2/sparse (object 10096): cluster 0 is a hole (no ctail40 item) while cluster "*"the Reiser4 kernel panics reading this file"* ]] ||
		{ echo "$output"; return 1; }
	[[ "$output" == *": 1 problem found"* ]] || { echo "$output"; return 1; }
}

# Every way of reading kernel image $1 gives the kernel's sha256 list.
read_all_ways() {
	local n=$1 want
	kimg "$n"
	want=$(sort -k2 "$KI/$n.sha256")
	[ "$(wc -l <<<"$want")" -gt 90 ]

	# r4debugfs rdump
	mkdir "$T/rd"
	run r4debugfs -R "rdump / $T/rd" "$T/$n.img"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	( cd "$T/rd" && sha256sum -c --quiet "$KI/$n.sha256" ) || return 1

	# r4pack extract
	run r4pack extract "$T/$n.img" "$T/x.tar"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	mkdir "$T/ex"
	tar -xf "$T/x.tar" -C "$T/ex"
	( cd "$T/ex" && sha256sum -c --quiet "$KI/$n.sha256" ) || return 1

	# the read API
	run r4manifest --sha256 "$T/$n.img"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	diff <(echo "$want") <(sort -k2 <<<"$output")

	if [ "$n" = reg40 ]; then
		run r4fsck "$T/$n.img"
		[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	else
		kernel_fsck "$T/$n.img"
	fi
}

@test "kernel image default (lzo1, conv, 64K) reads exactly; r4fsck finds only the kernel's leading hole" {
	read_all_ways default
}

@test "kernel image gzip1 reads exactly; r4fsck finds only the kernel's leading hole" {
	read_all_ways gzip1
}

@test "kernel image zstd1 reads exactly; r4fsck finds only the kernel's leading hole" {
	read_all_ways zstd1
}

@test "kernel image cluster16k-force (zstd1, 16K) reads exactly; r4fsck finds only the kernel's leading hole" {
	read_all_ways cluster16k-force
}

@test "kernel image reg40 reads exactly; r4fsck clean" {
	read_all_ways reg40
}

@test "kernel image deleted reads exactly; r4fsck finds only the kernel's leading hole" {
	read_all_ways deleted
}

@test "the kernel images hold what they claim: ctail40 items, spanning clusters, holes" {
	kimg zstd1
	run r4debugfs -R "stat /dir1/text_200001" "$T/zstd1.img"
	[[ "$output" == *"ccreg40"* ]]
	# a sparse ccreg40 file: its first cluster is a hole (no item)
	run r4debugfs -R "blocks /dir2/sparse" "$T/zstd1.img"
	[[ "$output" != *"file offset 0,"* ]]
	[[ "$output" == *"file offset 1179648"* ]]
	kimg default
	# one 64K cluster cut into items in three leaves
	run r4debugfs -R "blocks /dir1/text_16385" "$T/default.img"
	[ "$(grep -c 'file offset 0, 16385 bytes: tail' <<<"$output")" -ge 2 ]
}

# Offset of byte $2 of block $1 of a 4 KiB-block image.
boff() { echo $(( $1 * 4096 + $2 )); }

# Overwrite bytes of a block of image $1: block $2, offset $3, hex $4.
poke() {
	printf "$4" | dd of="$1" bs=1 seek="$(boff "$2" "$3")" conv=notrunc \
		status=none
}

@test "a corrupt compressed cluster is an error naming the file, cluster and block" {
	kimg zstd1
	local img="$T/zstd1.img" blk
	blk=$(r4debugfs -R "blocks /dir1/text_200001" "$img" |
		sed -n 's/^  file offset 65536, .*tail block \([0-9]*\)$/\1/p' | head -n 1)
	[ -n "$blk" ]
	# flip bytes in the middle of that leaf: item bodies, not headers
	poke "$img" "$blk" 2000 '\x55\xaa\x55\xaa\x55\xaa\x55\xaa'
	run r4debugfs -R "cat /dir1/text_200001" "$img"
	[ "$status" -ne 0 ]
	[[ "$output" == *"text_200001"* ]]
	[[ "$output" == *"cluster "* ]]
	[[ "$output" == *"tree node "* ]]
	# no partial file is left behind by dump
	run r4debugfs -R "dump /dir1/text_200001 $T/out" "$img"
	[ "$status" -ne 0 ]
	[ ! -e "$T/out" ]
	# rdump goes on with the other files but leaves none for this one
	mkdir "$T/rd"
	run r4debugfs -R "rdump / $T/rd" "$img"
	[ "$status" -ne 0 ]
	[[ "$output" == *"text_200001"*"cluster "* ]]
	[ ! -e "$T/rd/dir1/text_200001" ]
	[ -f "$T/rd/dir1/text_131072" ]
	run r4pack extract "$img" "$T/x.tar"
	[ "$status" -ne 0 ]
	[[ "$output" == *"./dir1/text_200001: "*"cluster "*"tree node "* ]]
	[ ! -e "$T/x.tar" ]
	run r4fsck "$img"
	[ "$status" -ne 0 ]
	[[ "$output" == *"cluster"* ]]
}

# ---- writing: r4pack create -o create=ccreg40 ------------------------------

# fixed_create ARGS...: r4pack create -q with a fixed uuid and time, so
# that two builds of one source are the same bytes.
fixed_create() {
	SOURCE_DATE_EPOCH=1700000000 r4pack create -q \
		-U 0b6e3c6e-5b8e-4a57-9a4b-14c0ffee0014 "$@"
}

# same_sum ALG THREADS IMG: the first image of a round sets $sum, every
# later one must have it.
same_sum() {
	if [ -z "$sum" ]; then
		sum=$(sha256sum <"$3")
	else
		[ "$(sha256sum <"$3")" = "$sum" ] ||
			{ echo "$1: --threads $2 differs"; return 1; }
	fi
}

# add_big DIR: two files of make_src's tree over 4 MiB (a compressible
# one and a sparse one), past what the read-ahead holds whole.
add_big() {
	local i
	for i in 1 2 3 4 5 6 7 8; do cat "$1/text/all.c"; done \
		>"$1/text/all8.c"
	truncate -s 6M "$1/misc/sparse6m"
	echo end >>"$1/misc/sparse6m"
}

# A source tree: text (the project's own sources), noise, a sparse file,
# small and empty files, a file of exactly one cluster and one more.
make_src() {
	local s=$1 f
	mkdir -p "$s/text" "$s/noise" "$s/misc"
	for f in "$top_srcdir"/libimage/*/*.c "$top_srcdir"/README.md; do
		cp "$f" "$s/text/$(basename "$(dirname "$f")")_$(basename "$f")"
	done
	cat "$top_srcdir"/libimage/*/*.c >"$s/text/all.c"
	head -c 300000 /dev/urandom >"$s/noise/r300000"
	head -c 70000 /dev/urandom >"$s/noise/r70000"
	head -c 100 /dev/urandom >"$s/noise/r100"
	: >"$s/misc/empty"
	echo hi >"$s/misc/small"
	head -c 65536 "$s/text/all.c" >"$s/misc/c65536"
	head -c 65537 "$s/text/all.c" >"$s/misc/c65537"
	truncate -s 400000 "$s/misc/sparse"
	echo end >>"$s/misc/sparse"
}

# Blocks in use, as r4fsck counts them.
used() {
	r4fsck "$1" | sed -n 's/.* \([0-9]*\) blocks used.*/\1/p'
}

# Image $1 holds what $2 holds, by r4pack extract and by rdump.
same_as() {
	local img=$1 src=$2
	run r4pack extract "$img" "$T/x.tar"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	rm -rf "$T/x" "$T/rd"
	mkdir "$T/x" "$T/rd"
	tar -xf "$T/x.tar" -C "$T/x"
	diff -r "$src" "$T/x"
	run r4debugfs -R "rdump / $T/rd" "$img"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	diff -r "$src" "$T/rd"
	rm -f "$T/x.tar"
}

@test "r4pack create -o create=ccreg40 (force): every algorithm and cluster size is consistent, holds ctail40 items, extracts exactly" {
	need_oracle
	make_src "$T/src"
	local alg cl
	for alg in lzo1 gzip1 zstd1; do
		for cl in 4K 16K 64K; do
			echo "== $alg $cl"
			r4pack create -q -o create=ccreg40,compress=$alg,cluster=$cl,compressMode=force \
				"$T/src" "$T/$alg-$cl.img"
			oracle_fsck "$T/$alg-$cl.img"
			run r4fsck "$T/$alg-$cl.img"
			[ "$status" -eq 0 ] || { echo "$output"; return 1; }
			debugfs.reiser4 -t "$T/$alg-$cl.img" 2>/dev/null >"$T/tree"
			grep -q ctail40 "$T/tree"
			same_as "$T/$alg-$cl.img" "$T/src"
			r4debugfs -R "stat /text/all.c" "$T/$alg-$cl.img" | grep -q ccreg40
			rm -f "$T/$alg-$cl.img"
		done
	done
}

@test "r4pack create --threads: the same image for 1, 2 and 3 threads, every algorithm; consistent and exact" {
	need_oracle
	make_src "$T/src"
	# past the largest file read ahead whole (pack/ccreg.c AHEAD_FILE)
	add_big "$T/src"
	local alg t sum algs="lzo1 gzip1 zstd1"
	# the sanitizer pass: one algorithm (each codec runs under the
	# sanitizers in the tests of every algorithm and cluster size)
	once || algs=zstd1
	for alg in $algs; do
		sum=
		for t in 1 2 3; do
			fixed_create --threads $t --compress=$alg "$T/src" \
				"$T/$t.img"
			same_sum "$alg" "$t" "$T/$t.img"
		done
		oracle_fsck "$T/1.img"
		same_as "$T/1.img" "$T/src"
		rm -f "$T"/[123].img
	done
	run r4pack create --threads 9 "$T/src" "$T/x.img"
	[ "$status" -eq 2 ]
}

@test "r4pack create from a tarball --threads: the same image for 1, 2 and 4 threads and from standard input; consistent and exact" {
	need_oracle
	make_src "$T/src"
	# past the largest file read ahead (pack/ccreg.c STREAM_FILE)
	add_big "$T/src"
	# a gap, then noise: conv turns it into an ordinary file
	truncate -s 300000 "$T/src/misc/gapnoise"
	head -c 200000 /dev/urandom |
		dd of="$T/src/misc/gapnoise" bs=4096 seek=1 conv=notrunc status=none
	ln "$T/src/text/all.c" "$T/src/misc/all.link"
	ln "$T/src/noise/r300000" "$T/src/misc/noise.link"
	tar -S -cf "$T/src.tar" -C "$T/src" .
	tar -tvf "$T/src.tar" | grep -q '^h.*noise.link'
	local alg t sum algs="lzo1 gzip1 zstd1"
	once || algs=zstd1	# the sanitizer pass: one algorithm
	for alg in $algs; do
		sum=
		for t in 1 2 4 -; do
			if [ "$t" = - ]; then
				fixed_create --threads 4 --compress=$alg - \
					"$T/$t.img" <"$T/src.tar"
			else
				fixed_create --threads $t --compress=$alg \
					"$T/src.tar" "$T/$t.img"
			fi
			same_sum "$alg" "$t" "$T/$t.img"
		done
		oracle_fsck "$T/4.img"
		same_as "$T/4.img" "$T/src"
		rm -f "$T"/[124-].img
	done
}

@test "r4pack create from a directory --threads 2: the read-ahead's reused buffers (100 MiB in 230 files of 3 KB to 1 MB, each its own bytes) give the image of 1 thread" {
	local i n t sum=
	mkdir "$T/src"
	cat "$top_srcdir"/libimage/*/*.c >"$T/all.c"
	# Past the 64 MiB read ahead (pack/ccreg_int.h AHEAD_BYTES), in
	# force mode (no conv test holds the packer back): jobs take the
	# buffers of placed ones, of sizes that fit some files and not
	# others.
	for i in $(seq 1 230); do
		n=$(( (i * 7919) % 1000000 + 3000 ))
		{ echo "file $i"; tail -c +$(( i * 997 )) "$T/all.c"
		  cat "$T/all.c"; } | head -c $n >"$T/src/f$i"
	done
	[ "$(du -sb "$T/src" | cut -f1)" -gt $((64 << 20)) ]
	for t in 1 2; do
		fixed_create --threads $t --compress=lzo1 \
			-o cluster=4K,compressMode=force "$T/src" "$T/$t.img"
		same_sum lzo1 "$t" "$T/$t.img"
	done
}

@test "r4pack create from a directory: files around the reader's 256 KiB chunks, every mode and 4K and 64K clusters; the read-ahead (compressing into its buffers) gives the image of 1 thread; exact" {
	local f n m cl t sum
	mkdir "$T/src"
	cat "$top_srcdir"/libimage/*/*.c >"$T/all.c"
	# libimage/tar/dir.c reads 256 KiB chunks: clusters that start one
	# are compressed where they lie (obj/ccreg_encode.c enc_fill)
	for n in 65536 262143 262144 262145 327680 528385 1060921; do
		head -c $n "$T/all.c" >"$T/src/t$n"
		head -c $n /dev/urandom >"$T/src/n$n"
		{ head -c $((n / 2)) "$T/all.c"
		  head -c $((n - n / 2)) /dev/urandom; } >"$T/src/m$n"
	done
	# data that starts at a chunk, after a hole; a hole inside a chunk
	truncate -s 700000 "$T/src/s1" "$T/src/s2"
	head -c 200000 "$T/all.c" |
		dd of="$T/src/s1" bs=4096 seek=64 conv=notrunc status=none
	head -c 90000 "$T/all.c" |
		dd of="$T/src/s2" bs=4096 seek=70 conv=notrunc status=none
	for m in none lattd ultim force conv; do
		for cl in 4K 64K; do
			sum=
			for t in 1 2; do
				fixed_create --threads $t --compress=lzo1 \
					-o cluster=$cl,compressMode=$m \
					"$T/src" "$T/$t.img"
				same_sum "lzo1 $m $cl" "$t" "$T/$t.img"
			done
			same_as "$T/2.img" "$T/src"
			rm -f "$T"/[12].img
		done
	done
}

@test "r4pack create from a tarball: files past the read-ahead ring's 32 MiB (it wraps, sparse files among them) give the image of 1 thread; exact" {
	make_src "$T/src"
	mkdir "$T/big"
	# 4.3 MiB of text, 19 files of 1 to 3.7 MiB cut from it at
	# different places (about 45 MiB, each under pack/ccreg.c
	# STREAM_FILE), small and sparse files between them
	local i n
	for i in 1 2 3 4 5 6; do cat "$T/src/text/all.c"; done >"$T/text6"
	for i in $(seq 1 19); do
		n=$(( (i * 1234567) % 2800000 + 1000000 ))
		tail -c +$(( i * 1000 )) "$T/text6" | head -c $n >"$T/big/f$i"
		echo "$i" >"$T/big/s$i"
	done
	truncate -s 3000000 "$T/big/sparse1"
	echo end >>"$T/big/sparse1"
	cp "$T/big/f3" "$T/big/sparse2"
	truncate -s 3900000 "$T/big/sparse2"
	echo end >>"$T/big/sparse2"
	tar -S -cf "$T/big.tar" -C "$T/big" .
	# gzip1, the slowest codec: the archive is read faster than the
	# workers compress, so the ring fills and files wait in it
	local t sum=
	for t in 1 2 3; do
		fixed_create --threads $t --compress=gzip1 "$T/big.tar" \
			"$T/$t.img"
		same_sum gzip1 "$t" "$T/$t.img"
	done
	run r4fsck "$T/2.img"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	same_as "$T/2.img" "$T/big"
}

# "PLUGIN BYTES" of $2 in image $1 (r4debugfs stat).
plugin_bytes() {
	r4debugfs -R "stat $2" "$1" |
		sed -n 's/^plugin: *\([a-z0-9]*\).*/\1/p; s/^bytes: *//p' | tr '\n' ' '
}

# The plugin set a file's stat data stores ("object=4 compressMode=1").
pset_of() {
	local b i
	read -r b i < <(r4debugfs -R "stat $2" "$1" |
		sed -n 's/^stat data: *block \([0-9]*\), item \([0-9]*\)/\1 \2/p')
	[ -n "$b" ] || return 1
	r4debugfs -R "print node $b" "$1" | awk -v i="#$i" '
		$1 == i { on = 1; next }
		/^#/ { on = 0 }
		on && /plugin set:/ { sub(/.*plugin set: */, ""); print }'
}

@test "conv past the first cluster: lattd stored (the kernel's disable_conversion), by create, add and debugfs -w write and truncate; one cluster keeps conv" {
	need_oracle
	mkdir -p "$T/s" "$T/empty"
	local i
	for i in $(seq 1 4000); do echo "line $i of a text that compresses well"; done >"$T/s/big"
	echo small >"$T/s/small"
	r4pack create -q --compress=lzo1 "$T/s" "$T/c.img"
	[ "$(pset_of "$T/c.img" /big)" = "object=4 compressMode=1" ]
	[ "$(pset_of "$T/c.img" /small)" = "object=4" ]
	r4pack create -q --compress=lzo1 "$T/empty" "$T/a.img"
	r4pack add -q "$T/a.img" "$T/s"
	[ "$(pset_of "$T/a.img" /big)" = "object=4 compressMode=1" ]
	[ "$(pset_of "$T/a.img" /small)" = "object=4" ]
	r4debugfs -w -R "write $T/s/big /big2" -R "write $T/s/small /small2" \
		-R "write $T/s/small /small3" -R "truncate 100000 /small3" "$T/a.img"
	[ "$(pset_of "$T/a.img" /big2)" = "object=4 compressMode=1" ]
	[ "$(pset_of "$T/a.img" /small2)" = "object=4" ]
	[ "$(pset_of "$T/a.img" /small3)" = "object=4 compressMode=1" ]
	oracle_fsck "$T/c.img"
	oracle_fsck "$T/a.img"
	r4fsck -n "$T/a.img"
}

# Pairs of ctail40 items of one disk cluster side by side in one leaf
# (the second continues the first, not at a cluster start): printed,
# one a line. The kernel always merges them (doc/compress.md §3.1).
unmerged_ctails() {
	r4debugfs -R "print tree" "$1" | awk -v cs="$2" '
		function hex(s,   i, v) {
			v = 0
			for (i = 1; i <= length(s); i++)
				v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
			return v
		}
		/^node / { prev = ""; next }
		/^#[0-9]+ / {
			if ($2 != "ctail40") { prev = ""; next }
			key = $4; gsub(/[\[\]]/, "", key); split(key, k, ":")
			obj = k[1] ":" k[2] ":" k[3] ":" k[4]
			off = hex(k[5]); len = $8 - 1
			if (prev == obj && poff + plen == off && off % cs)
				print "unmerged: " $4
			prev = obj; poff = off; plen = len
		}'
}

@test "r4pack add and debugfs -w write: one ctail40 item per disk cluster and leaf, as the kernel merges them" {
	mkdir -p "$T/a" "$T/b" "$T/empty"
	local i j
	for i in $(seq 1 30); do
		awk -v n=$((i * 300)) -v i=$i 'BEGIN { for (j = 1; j <= n; j++) print "row " j " of file " i ", some words" }' >"$T/a/f$i"
		cp "$T/a/f$i" "$T/b/g$i"
	done
	r4pack create -q --compress=lzo1 "$T/a" "$T/c.img"
	r4pack add -q "$T/c.img" "$T/b"
	r4debugfs -w -R "write $T/a/f30 /new30" -R "write $T/a/f20 /new20" "$T/c.img"
	run unmerged_ctails "$T/c.img" 65536
	echo "$output" | head -n 5
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ "$(r4debugfs -R "cat /g17" "$T/c.img" | sha256sum)" = "$(sha256sum <"$T/b/g17")" ]
}

@test "holes from every input: a hole cluster before data has no items, but cluster 0 is stored as zeros (the kernel panics otherwise); a gap in it keeps conv from testing" {
	need_oracle
	mkdir -p "$T/h/s" "$T/empty"
	# 7 clusters of 64K, data only in the last one: cluster 0 (zeros)
	# and cluster 6 have items (doc/compress.md §3.4.1)
	truncate -s 400000 "$T/h/s/sparse"
	echo end >>"$T/h/s/sparse"
	# a gap of 4K, then noise to 204800: the kernel would keep it
	# compressed (a write past the end before the test point)
	truncate -s 300000 "$T/h/s/gapnoise"
	head -c 200000 /dev/urandom |
		dd of="$T/h/s/gapnoise" bs=4096 seek=1 conv=notrunc status=none
	tar -S -cf "$T/h.tar" -C "$T/h" .
	r4pack create -q --compress=lzo1 "$T/h" "$T/dir.img"
	r4pack create -q --compress=lzo1 --threads 1 "$T/h.tar" "$T/tar1.img"
	r4pack create -q --compress=lzo1 --threads 2 "$T/h.tar" "$T/tar2.img"
	r4pack create -q --compress=lzo1 "$T/empty" "$T/add.img"
	r4pack add -q "$T/add.img" "$T/h.tar"
	cp "$T/add.img" "$T/write.img"
	r4debugfs -w -R "write $T/h/s/sparse /s/sparse2" \
		-R "write $T/h/s/gapnoise /s/gapnoise2" "$T/write.img"
	local i f
	for i in dir tar1 tar2 add write; do
		for f in sparse gapnoise; do
			echo "$i $f: $(plugin_bytes "$T/$i.img" /s/$f)"
		done
		[ "$(plugin_bytes "$T/$i.img" /s/sparse)" = "ccreg40 131072 " ]
		[ "$(plugin_bytes "$T/$i.img" /s/gapnoise)" = "ccreg40 262144 " ]
		oracle_fsck "$T/$i.img"
	done
	[ "$(plugin_bytes "$T/write.img" /s/sparse2)" = "ccreg40 131072 " ]
	[ "$(plugin_bytes "$T/write.img" /s/gapnoise2)" = "ccreg40 262144 " ]
	same_as "$T/tar2.img" "$T/h"
	same_as "$T/add.img" "$T/h"
}

@test "r4pack create from an archive: every compression mode, consistent and exact" {
	need_oracle
	make_src "$T/src"
	tar -cf "$T/src.tar" -C "$T/src" .
	local m
	for m in none lattd ultim force conv; do
		echo "== $m"
		r4pack create -q -o create=ccreg40,compress=zstd1,compressMode=$m,cluster=16K \
			"$T/src.tar" "$T/$m.img"
		oracle_fsck "$T/$m.img"
		same_as "$T/$m.img" "$T/src"
		rm -f "$T/$m.img"
	done
}

@test "conv: a file whose first cluster does not halve stays an ordinary file; the rest are compressed" {
	make_src "$T/src"
	r4pack create -q --compress=lzo1 "$T/src" "$T/c.img"
	run r4debugfs -R "stat /noise/r300000" "$T/c.img"
	[[ "$output" == *"reg40"* && "$output" != *"ccreg40"* ]]
	run r4debugfs -R "stat /text/all.c" "$T/c.img"
	[[ "$output" == *"ccreg40"* ]]
	# small and empty files are compressed files too, as the kernel makes them
	run r4debugfs -R "stat /noise/r100" "$T/c.img"
	[[ "$output" == *"ccreg40"* ]]
	run r4debugfs -R "stat /misc/empty" "$T/c.img"
	[[ "$output" == *"ccreg40"* ]]
	# force keeps every file compressed
	r4pack create -q -o create=ccreg40,compressMode=force "$T/src" "$T/f.img"
	run r4debugfs -R "stat /noise/r300000" "$T/f.img"
	[[ "$output" == *"ccreg40"* ]]
	same_as "$T/f.img" "$T/src"
}

@test "compressed images of text are smaller than reg40; noise costs at most 1% more" {
	make_src "$T/src"
	mkdir "$T/text" "$T/noise"
	cp -r "$T/src/text/." "$T/text/"
	cp -r "$T/src/noise/." "$T/noise/"
	head -c 2000000 /dev/urandom >"$T/noise/r2m"
	r4pack create -q "$T/text" "$T/t-reg.img"
	r4pack create -q "$T/noise" "$T/n-reg.img"
	local alg t0 n0 t n
	t0=$(used "$T/t-reg.img")
	n0=$(used "$T/n-reg.img")
	for alg in lzo1 gzip1 zstd1; do
		r4pack create -q --compress=$alg "$T/text" "$T/t.img"
		r4pack create -q --compress=$alg "$T/noise" "$T/n.img"
		t=$(used "$T/t.img")
		n=$(used "$T/n.img")
		echo "$alg: text $t blocks (reg40 $t0), noise $n (reg40 $n0)"
		[ "$t" -lt "$t0" ]
		[ "$((n * 100))" -le "$((n0 * 101))" ]
		rm -f "$T/t.img" "$T/n.img"
	done
}

@test "r4pack create: -o create=reg40 stores ordinary files; a bad --compress is a usage error" {
	make_src "$T/src"
	r4pack create -q -o create=reg40 "$T/src" "$T/r.img"
	run r4debugfs -R "stat /text/all.c" "$T/r.img"
	[[ "$output" == *"reg40"* && "$output" != *"ccreg40"* ]]
	run r4pack create --compress=lz4 "$T/src" "$T/x.img"
	[ "$status" -eq 2 ]
	[ ! -e "$T/x.img" ]
}

@test "r4pack add: new files follow the volume's profile (root plugin set), conv included; consistent, ctail40 items, exact" {
	need_oracle
	make_src "$T/src"
	mkdir "$T/empty"
	# the root says create=ccreg40, compress=gzip1 (r4pack create --compress)
	r4pack create -q --compress=gzip1 "$T/empty" "$T/g.img"
	r4pack add -q "$T/g.img" "$T/src"
	oracle_fsck "$T/g.img"
	run r4fsck "$T/g.img"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	debugfs.reiser4 -t "$T/g.img" 2>/dev/null >"$T/tree"
	grep -q ctail40 "$T/tree"
	run r4debugfs -R "stat /text/all.c" "$T/g.img"
	[[ "$output" == *"ccreg40"* ]]
	run r4debugfs -R "stat /misc/empty" "$T/g.img"
	[[ "$output" == *"ccreg40"* ]]
	# conv: noise whose first cluster does not halve is an ordinary file
	run r4debugfs -R "stat /noise/r300000" "$T/g.img"
	[[ "$output" == *"reg40"* && "$output" != *"ccreg40"* ]]
	same_as "$T/g.img" "$T/src"
	# a text file is stored smaller than with -o create=reg40
	r4pack create -q --compress=gzip1 "$T/empty" "$T/r.img"
	r4pack add -q -o create=reg40 "$T/r.img" "$T/src"
	run r4debugfs -R "stat /text/all.c" "$T/r.img"
	[[ "$output" == *"reg40"* && "$output" != *"ccreg40"* ]]
	same_as "$T/r.img" "$T/src"
	[ "$(used "$T/g.img")" -lt "$(used "$T/r.img")" ]
}

@test "r4pack add: a reg40 profile stores reg40; -o and --compress on add: every mode, algorithm and cluster size" {
	need_oracle
	make_src "$T/src"
	mkdir "$T/empty"
	r4pack create -q -o create=reg40 "$T/empty" "$T/base.img"
	cp "$T/base.img" "$T/p.img"
	r4pack add -q "$T/p.img" "$T/src"
	run r4debugfs -R "stat /text/all.c" "$T/p.img"
	[[ "$output" == *"reg40"* && "$output" != *"ccreg40"* ]]
	tar -cf "$T/src.tar" -C "$T/src" .
	local m alg modes="none lattd ultim force conv"
	once || modes="lattd conv"	# the sanitizer pass: two of the five
	for m in $modes; do
		echo "== mode $m"
		cp "$T/base.img" "$T/$m.img"
		r4pack add -q -o create=ccreg40,compress=zstd1 -o compressMode=$m,cluster=16K \
			"$T/$m.img" "$T/src.tar"
		oracle_fsck "$T/$m.img"
		run r4fsck "$T/$m.img"
		[ "$status" -eq 0 ] || { echo "$output"; return 1; }
		r4debugfs -R "stat /text/all.c" "$T/$m.img" | grep -q ccreg40
		same_as "$T/$m.img" "$T/src"
		rm -f "$T/$m.img"
	done
	for alg in lzo1 gzip1 zstd1; do
		echo "== --compress=$alg, 4K clusters"
		cp "$T/base.img" "$T/$alg.img"
		r4pack add -q --compress=$alg -o cluster=4K "$T/$alg.img" "$T/src"
		oracle_fsck "$T/$alg.img"
		debugfs.reiser4 -t "$T/$alg.img" 2>/dev/null | grep -q ctail40
		same_as "$T/$alg.img" "$T/src"
		rm -f "$T/$alg.img"
	done
	# a bare --compress before the arguments; members add cannot change
	cp "$T/base.img" "$T/b.img"
	r4pack add -q --compress "$T/b.img" "$T/src"
	r4debugfs -R "stat /text/all.c" "$T/b.img" | grep -q ccreg40
	same_as "$T/b.img" "$T/src"
	run r4pack add -o node=node41 "$T/b.img" "$T/src"
	[ "$status" -eq 2 ]
	[[ "$output" == *"only create, compress"* ]]
}

@test "r4pack add on kernel images: new files take the kernel's profile (zstd1; 16K clusters in force mode)" {
	need_oracle
	local n
	mkdir -p "$T/add/new"
	cat "$top_srcdir"/libimage/obj/*.c >"$T/add/new/text"
	head -c 200000 /dev/urandom >"$T/add/new/noise"
	for n in zstd1 cluster16k-force; do
		kimg $n
		r4pack add -q "$T/$n.img" "$T/add"
		oracle_fsck "$T/$n.img"
		kernel_fsck "$T/$n.img"
		r4debugfs -R "stat /new/text" "$T/$n.img" | grep -q ccreg40
		[ "$(r4debugfs -R "cat /new/text" "$T/$n.img" | sha256sum)" = \
		  "$(sha256sum <"$T/add/new/text")" ]
		[ "$(r4debugfs -R "cat /new/noise" "$T/$n.img" | sha256sum)" = \
		  "$(sha256sum <"$T/add/new/noise")" ]
		rm -f "$T/$n.img"
	done
	# force keeps noise compressed (as raw clusters)
	kimg cluster16k-force
	r4pack add -q "$T/cluster16k-force.img" "$T/add"
	r4debugfs -R "stat /new/noise" "$T/cluster16k-force.img" | grep -q ccreg40
}

@test "r4debugfs -w truncate of compressed files: down (partial cluster re-encoded), up (holes), to nothing; write stores a host file compressed" {
	need_oracle
	kimg zstd1
	local img="$T/zstd1.img" f=/dir1/text_200001 sz
	r4debugfs -R "cat $f" "$img" >"$T/ref"
	[ "$(stat -c %s "$T/ref")" -eq 200001 ]
	# mid-cluster, a cluster end, below the minimum size (raw), up past
	# the old end (the raw cluster grows: encoded again), to 0, then up
	# again: a file of holes only
	for sz in 150000 131072 100 300000 0 70000; do
		echo "== $sz"
		truncate -s $sz "$T/ref"
		r4debugfs -w -R "truncate $sz $f" "$img"
		r4debugfs -R "cat $f" "$img" | cmp - "$T/ref"
		oracle_fsck "$img"
		kernel_fsck "$img"
	done
	run r4debugfs -R "stat $f" "$img"
	[[ "$output" == *"ccreg40"* && "$output" == *"bytes:       0"* ]]
	# write: a host file becomes a compressed file of the volume's profile
	cat "$top_srcdir"/libimage/obj/*.c >"$T/host"
	r4debugfs -w -R "write $T/host /dir1/new" -R "write $T/host $f" "$img"
	for f in /dir1/new /dir1/text_200001; do
		r4debugfs -R "stat $f" "$img" | grep -q ccreg40
		r4debugfs -R "cat $f" "$img" | cmp - "$T/host"
	done
	debugfs.reiser4 -t "$img" 2>/dev/null | grep -q ctail40
	oracle_fsck "$img"
	kernel_fsck "$img"
}

@test "r4debugfs -w truncate of compressed files in every mode and cluster size, lzo1 and gzip1" {
	need_oracle
	mkdir -p "$T/src"
	seq 1 40000 >"$T/src/t"
	head -c 50000 /dev/urandom >"$T/src/r"
	local m cl sz f modes="none lattd ultim force conv"
	# the sanitizer pass: the two modes that compress (every cluster
	# size); the plain pass ran all five on the same files
	once || modes="force conv"
	for m in $modes; do
		for cl in 4K 64K; do
			echo "== $m $cl"
			r4pack create -q -o create=ccreg40,compress=lzo1,compressMode=$m,cluster=$cl \
				"$T/src" "$T/i.img"
			cp "$T/src/t" "$T/t"
			cp "$T/src/r" "$T/r"
			for sz in 200001 9999 123456 4096 1; do
				for f in t r; do
					truncate -s $sz "$T/$f"
					r4debugfs -w -R "truncate $sz /$f" "$T/i.img"
					r4debugfs -R "cat /$f" "$T/i.img" | cmp - "$T/$f"
				done
			done
			oracle_fsck "$T/i.img"
			run r4fsck "$T/i.img"
			[ "$status" -eq 0 ] || { echo "$output"; return 1; }
		done
	done
	r4pack create -q --compress=gzip1 "$T/src" "$T/g.img"
	r4debugfs -w -R "truncate 70000 /t" "$T/g.img"
	head -c 70000 "$T/src/t" | cmp - <(r4debugfs -R "cat /t" "$T/g.img")
	oracle_fsck "$T/g.img"
}

@test "removing and replacing compressed files (r4debugfs -w rm, r4pack add) leaves a consistent volume" {
	need_oracle
	kimg zstd1
	local img="$T/zstd1.img"
	r4debugfs -w -R "rm /dir1/text_200001" -R "rm /dir2/sparse" "$img"
	mkdir -p "$T/add/dir1"
	echo hi >"$T/add/dir1/text_131072"
	r4pack add -q "$img" "$T/add"
	run r4fsck "$img"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	oracle_fsck "$img"
	[ "$(r4debugfs -R "cat /dir1/text_131072" "$img")" = hi ]
	run r4debugfs -R "stat /dir1/text_200001" "$img"
	[ "$status" -ne 0 ]
}

@test "libreiser4-written compressed files (raw clusters): r4fsck agrees with fsck.reiser4, clean ones rdump exactly" {
	need_oracle
	need_r4ref
	make_src "$T/big"
	rm -rf "$T/big/text"	# keep it quick: libreiser4 writes slowly
	# files no longer than a cluster: nothing can cross a cluster end
	mkdir -p "$T/small/d"
	for i in $(seq 1 40); do
		head -c $((i * 97)) "$T/big/misc/c65536" >"$T/small/d/t$i"
		head -c $((i * 53)) /dev/urandom >"$T/small/r$i"
	done
	local cl clean=0 bad=0 src sizes="4K 8K 16K 32K 64K"
	once || sizes="4K 64K"	# the sanitizer pass: the two ends
	for src in small big; do
	for cl in $sizes; do
		cp -r "$T/$src" "$T/src"
		rm -f "$T/l.img"
		truncate -s 64M "$T/l.img"
		R4REF_CCREG=1 r4ref mkfs -o cluster=$cl -o compressMode=none \
			-o compress=gzip1 "$T/l.img" "$T/src"
		r4debugfs -R "stat /misc/small" "$T/l.img" 2>/dev/null | grep -q ccreg40 ||
			r4debugfs -R "stat /r1" "$T/l.img" | grep -q ccreg40
		run fsck.reiser4 --check -f -y "$T/l.img"
		local oracle=bad
		[[ "$output" == *"FS is consistent"* ]] && oracle=clean
		run r4fsck "$T/l.img"
		echo "== $src $cl: fsck.reiser4 $oracle, r4fsck status $status"
		if [ "$oracle" = clean ]; then
			[ "$status" -eq 0 ] || { echo "$output"; return 1; }
			rm -rf "$T/rd"
			mkdir "$T/rd"
			r4debugfs -R "rdump / $T/rd" "$T/l.img"
			diff -r "$T/src" "$T/rd"
			clean=$((clean + 1))
		else
			# libreiser4 lets items run across cluster ends
			[ "$status" -eq 4 ]
			[[ "$output" == *"crosses the cluster end"* ]]
			bad=$((bad + 1))
		fi
		rm -rf "$T/src"
	done
	done
	echo "clean $clean, flagged by both $bad"
	[ "$clean" -ge 1 ]
}
