#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# run.sh quick|full [WORKLOAD...]: the crash tests of the commands that
# change an image (r4pack add, r4debugfs -w), through crashtest.sh.
#
#   quick  the reduced set of `make check` (tests/bats/edit-crash.bats)
#   full   every cut point of each workload (repack too), 200 sampled points of an
#          add of 1,000 files, more torn / unsynced / failed writes
#          (`make crashcheck`)
#   both: keep-subset at the last write before 6 of each workload's
#   syncs (24 of the repacker's in full: crashtest.sh --reorder)
#
# Workloads: add50 add50wb add50tar add50stdin addcc cctrunc rmr mvfile mvdir script add1000
# mountrw (r4mount -o rw through FUSE, one commit at the unmount:
# tests/crash/mountrw.sh)
# grow (r4resize of the pristine image to 300 MiB: new bitmap blocks and
# backup copies past the old end, one transaction), shrink (r4resize -M
# of an aged image: blocks moved in batches, then the size)
# (add50wb: add50 with nodes written before the commit, R4_WRITE_BEHIND)
# repack, repackresume (full: the repacker cut once, then the rerun
# cut at each of its writes), badbitmap (add50 on a volume whose bitmap calls the root node free,
# with a matching checksum: no point may lose a byte)
# (default: all of the level). Needs r4pack, r4debugfs, r4fsck and
# r4ref (or r4manifest) on PATH, r4pack and r4debugfs being the test
# builds of tests/crash/bin (the only ones that read R4_FAULT);
# fsck.reiser4 when present.
# The last line: "crash: N cut points in W workloads, all before/after,
# fsck.reiser4 agreed at M". Exit 0, 1 when a point failed, 2 on error.
set -u

LEVEL=${1:-quick}
shift || true
HERE=$(cd "$(dirname "$0")" && pwd)
CT="$HERE/crashtest.sh"
case $LEVEL in quick|full) ;; *) echo "usage: run.sh quick|full [WORKLOAD...]" >&2; exit 2 ;; esac

for t in r4pack r4debugfs r4fsck r4repacker r4resize; do
	command -v $t >/dev/null 2>&1 || { echo "run.sh: $t not on PATH" >&2; exit 2; }
done

export SOURCE_DATE_EPOCH=1700000000
W=$(mktemp -d "${TMPDIR:-/tmp}/crashrun.XXXXXX") || exit 2
trap 'rm -rf "$W"' EXIT

# ---- the images ----------------------------------------------------------

# A populated tree: /a /b /dir (300 files in 6 subdirectories, so rm -r
# spans several leaves), files of 0..40000 bytes (tails and extents),
# symlinks and hard links.
make_tree() {
	local d=$1 i j
	mkdir -p "$d/a/sub/deep" "$d/b" "$d/dir"
	for i in $(seq 0 5); do
		mkdir -p "$d/dir/s$i"
		for j in $(seq 1 50); do
			head -c $(( (i * 50 + j) * 37 % 3000 )) /dev/urandom \
				>"$d/dir/s$i/f$j"
		done
	done
	head -c 40000 /dev/urandom >"$d/dir/big"
	head -c 20000 /dev/urandom >"$d/a/x"
	echo small >"$d/a/sub/deep/leaf"
	for i in $(seq 1 20); do echo "a $i" >"$d/a/f$i"; done
	for i in $(seq 1 20); do echo "b $i" >"$d/b/g$i"; done
	ln -s ../a/x "$d/b/tox"
	ln "$d/a/f1" "$d/b/hard1"
	find "$d" -exec touch -h -d @1600000000 {} +
}

# 50 files: 25 new under /new, 25 replacing files of /dir/s0 and /a.
make_add50() {
	local d=$1 i
	mkdir -p "$d/new" "$d/dir/s0" "$d/a"
	for i in $(seq 1 25); do
		head -c $(( i * 211 )) /dev/urandom >"$d/new/n$i"
	done
	for i in $(seq 1 15); do echo "replaced $i" >"$d/dir/s0/f$i"; done
	for i in $(seq 1 10); do head -c 5000 /dev/urandom >"$d/a/f$i"; done
	find "$d" -exec touch -h -d @1650000000 {} +
}

# Compressed files: text of 0..180000 bytes (several 16K clusters,
# compressible), noise (kept raw or, under conv, ordinary), replacing
# files of /a.
make_addcc() {
	local d=$1 i
	mkdir -p "$d/cc" "$d/a"
	for i in $(seq 0 9); do
		seq 1 $(( i * 3000 )) | head -c $(( i * 20000 )) >"$d/cc/t$i"
	done
	head -c 70000 /dev/urandom >"$d/cc/noise"
	for i in $(seq 1 5); do seq $i 9000 >"$d/a/f$i"; done
	find "$d" -exec touch -h -d @1650000000 {} +
}

make_add1000() {
	local d=$1 i
	for i in $(seq 0 9); do mkdir -p "$d/k$i"; done
	for i in $(seq 1 1000); do
		head -c $(( i * 13 % 2000 )) /dev/urandom >"$d/k$((i % 10))/m$i"
	done
	find "$d" -exec touch -h -d @1650000000 {} +
}

make_tree "$W/src"
make_add50 "$W/add50"
make_addcc "$W/addcc"
tar -C "$W/add50" -cf "$W/add50.tar" .
r4pack create -q "$W/src" "$W/pristine.img" || exit 2

# ---- the workloads -------------------------------------------------------

TOTAL=0 AGREED=0 NW=0 FAILED=0

# run NAME [crashtest options] -- workload
run() {
	local name=$1 out rc
	shift
	out=$("$CT" --name "$name" "$@" 2>"$W/err")
	rc=$?
	cat "$W/err" >&2
	echo "$out"
	[ $rc -eq 2 ] && { FAILED=$((FAILED + 1)); return; }
	[ $rc -ne 0 ] && FAILED=$((FAILED + 1))
	NW=$((NW + 1))
	TOTAL=$((TOTAL + $(echo "$out" | sed -n 's/^[^:]*: \([0-9]*\) cut points.*/\1/p')))
	AGREED=$((AGREED + $(echo "$out" | sed -n 's/.*agreed at \([0-9]*\).*/\1/p')))
}

wanted() {
	[ ${#SELECT[@]} -eq 0 ] && return 0
	local s
	for s in "${SELECT[@]}"; do [ "$s" = "$1" ] && return 0; done
	return 1
}
SELECT=("$@")

if [ "$LEVEL" = full ]; then
	EVERY=(--cut all --torn sample=20 --drop sample=20 --fail sample=10
	       --oracle every=10)
	SOME=(--cut every=3 --torn sample=10 --drop sample=10 --oracle every=10)
else
	EVERY=(--cut all --torn sample=4 --drop sample=4 --oracle every=10)
	SOME=(--cut every=5 --torn sample=4 --drop sample=4 --oracle every=10)
fi

P=$W/pristine.img

# The pristine image with the root node's bit cleared in its bitmap
# block (block 18) and the checksum made to match: the allocator must
# not believe it.
make_badbitmap() {
	local root
	cp "$P" "$1"
	root=$(r4debugfs -R 'print super' "$1" | sed -n 's/^ *root block: *//p')
	python3 - "$1" "$root" <<'PY' || return 1
import sys, zlib, struct
path, blk = sys.argv[1], int(sys.argv[2])
with open(path, 'r+b') as f:
    f.seek(18 * 4096)
    b = bytearray(f.read(4096))
    b[4 + blk // 8] &= ~(1 << (blk % 8)) & 0xff
    b[:4] = struct.pack('<I', zlib.adler32(bytes(b[4:])))
    f.seek(18 * 4096)
    f.write(b)
PY
}
# add50 and rm -r: every point in full, every 5th in quick.
if [ "$LEVEL" = full ]; then BIG=("${EVERY[@]}"); else BIG=("${SOME[@]}"); fi
wanted add50 && run add50 "${BIG[@]}" "$P" -- \
	r4pack add -q @IMG@ "$W/add50"
# the same with the add writing each node it has not changed for 16
# node writes before its commit (txn_write_behind; 2,048 by default)
wanted add50wb && R4_WRITE_BEHIND=16 run add50wb "${BIG[@]}" "$P" -- \
	r4pack add -q @IMG@ "$W/add50"
if [ "$LEVEL" = full ]; then
	wanted add50tar && run add50tar "${EVERY[@]}" "$P" -- \
		r4pack add -q @IMG@ "$W/add50.tar"
	wanted add50stdin && run add50stdin "${SOME[@]}" "$P" -- \
		sh -c 'exec r4pack add -q "$1" - <"$2"' sh @IMG@ "$W/add50.tar"
fi
# compressed files (ccreg40, zstd1, 16K clusters) through the same
# transaction; libreiser4 cannot decompress them, so the manifests come
# from r4manifest (fsck.reiser4 still checks every cluster's checksum)
wanted addcc && run addcc --own-reader "${BIG[@]}" "$P" -- \
	r4pack add -q --compress=zstd1 -o cluster=16K @IMG@ "$W/addcc"
# r4debugfs -w truncate (down into a cluster, up past the end) and
# write of compressed files, one transaction
if wanted cctrunc; then
	r4pack create -q --compress=lzo1 -o cluster=16K "$W/addcc" "$W/cc.img" || exit 2
	seq 1 30000 >"$W/cchost"
	run cctrunc --own-reader "${EVERY[@]}" "$W/cc.img" -- \
		r4debugfs -w --atomic -R 'truncate 30000 /cc/t5' \
		-R 'truncate 250000 /cc/t3' -R "write $W/cchost /cc/new" @IMG@
fi
if wanted badbitmap; then
	make_badbitmap "$W/badbitmap.img" || exit 2
	run badbitmap --damaged "${BIG[@]}" "$W/badbitmap.img" -- \
		r4pack add -q @IMG@ "$W/add50"
fi
wanted rmr && run rmr "${BIG[@]}" "$P" -- \
	r4debugfs -w -R 'rm -r /dir' @IMG@
wanted mvfile && run mvfile "${EVERY[@]}" "$P" -- \
	r4debugfs -w -R 'mv /a/x /b/x' @IMG@
wanted mvdir && run mvdir "${EVERY[@]}" "$P" -- \
	r4debugfs -w -R 'mv /a/sub /b/sub' @IMG@
if [ "$LEVEL" = full ]; then
	head -c 30000 /dev/urandom >"$W/hostfile"
	printf '%s\n' 'mkdir /m' "write $W/hostfile /m/hostfile" \
		'ln /a/f2 /m/f2' 'ln -s /a /m/toa' 'mknod /m/p p' \
		'chmod 700 /b' 'chown 5:6 /a/f3' 'touch -d @1500000000 /a/f4' \
		'truncate 100 /dir/big' 'rm /b/g1' 'rm /a/sub/deep/leaf' 'rmdir /a/sub/deep' \
		'mv /b/g2 /m/g2' >"$W/script"
	wanted script && run script "${EVERY[@]}" "$P" -- \
		r4debugfs -w --atomic -f "$W/script" @IMG@
	if wanted add1000; then
		make_add1000 "$W/add1000"
		run add1000 --cut sample=200 --tail 20 --torn sample=20 --drop sample=20 \
			--oracle every=10 "$P" -- r4pack add -q @IMG@ "$W/add1000"
	fi
fi

# r4repacker in batches of 32 blocks over a 4 MiB image aged by
# tests/age.sh (90 files, 3 rounds: 19 batches, nodes of every level and
# extent blocks moved, some moved out of the way first), made once and
# copied for each point; the content never changes. Full: every cut
# point, fsck.reiser4 at every 25th and at every 4th point left with a
# transaction to replay.
if wanted repack; then
	AGE_SIZE=4M bash "$HERE/../age.sh" "$W/aged.img" 90 3 >"$W/age.log" 2>&1 ||
		{ cat "$W/age.log" >&2; exit 2; }
	if [ "$LEVEL" = full ]; then
		REPACK=(--cut all --torn sample=40 --drop sample=40 --fail sample=20
			--reorder syncs=24 --oracle every=25 --pending every=4)
	else
		REPACK=(--cut sample=12 --torn sample=2 --drop sample=2 --oracle every=4)
	fi
	run repack --same "${REPACK[@]}" "$W/aged.img" -- \
		r4repacker -q --batch 32 @IMG@
fi
# The repacker resumed (full only): a run cut once, at its middle write
# (a committed batch left to replay or not), then the rerun that
# finishes the job cut at every one of its writes.
if [ "$LEVEL" = full ] && wanted repackresume; then
	[ -f "$W/aged.img" ] || { AGE_SIZE=4M bash "$HERE/../age.sh" "$W/aged.img" 90 3 \
		>"$W/age.log" 2>&1 || { cat "$W/age.log" >&2; exit 2; }; }
	cp "$W/aged.img" "$W/resume.img"
	rm -f "$W/rep.count"
	R4_FAULT=count R4_FAULT_REPORT="$W/rep.count" \
		r4repacker -q --batch 32 "$W/resume.img" >/dev/null 2>&1 </dev/null
	RW=$(awk -F'[= ]' '$1 == "writes" { s += $2 } END { print s + 0 }' "$W/rep.count")
	cp "$W/aged.img" "$W/resume.img"
	R4_FAULT=cut-after=$((RW / 2)) r4repacker -q --batch 32 "$W/resume.img" \
		>/dev/null 2>&1 </dev/null
	run repackresume --same --cut all --torn sample=20 --drop sample=20 \
		--reorder syncs=24 \
		--oracle every=25 --pending every=4 "$W/resume.img" -- \
		r4repacker -q --batch 32 @IMG@
fi

# r4resize: the pristine image grown to 300 MiB (76800 blocks: two new
# bitmap regions, backup copies past the old end and one in the old
# last region); every cut point, quick and full. After any cut the
# volume has the old or the new size and the same content.
if wanted grow; then
	OLDB=$(r4debugfs -R 'print super' "$P" | sed -n 's/^ *blocks: *//p')
	if [ "$LEVEL" = full ]; then
		GROW=(--cut all --torn all --drop all --fail all --oracle every=2)
	else
		GROW=(--cut all --torn sample=2 --drop sample=2 --oracle every=6)
	fi
	run grow --sizes "$OLDB,76800" "${GROW[@]}" "$P" -- \
		r4resize -q @IMG@ 300M
fi

# r4resize -M of the aged 4 MiB image (1024 blocks): the used blocks
# past the minimum moved by the repacker in batches of 32 blocks, then
# the size changed in one transaction and the file truncated. Any cut:
# 1024 blocks or the minimum, the same content.
if wanted shrink; then
	[ -f "$W/aged.img" ] ||
		AGE_SIZE=4M bash "$HERE/../age.sh" "$W/aged.img" 90 3 >"$W/age.log" 2>&1 ||
		{ cat "$W/age.log" >&2; exit 2; }
	MINB=$(r4resize -P "$W/aged.img" | sed -n 's/.*minimum size: \([0-9]*\) blocks.*/\1/p')
	if [ "$LEVEL" = full ]; then
		SHRINK=(--cut all --torn sample=40 --drop sample=40 --fail sample=20
			--oracle every=25 --pending every=4)
	else
		SHRINK=(--cut sample=6 --tail 5 --torn sample=2 --drop none --oracle every=10)
	fi
	run shrink --sizes "1024,$MINB" "${SHRINK[@]}" "$W/aged.img" -- \
		r4resize -q --batch 32 -M @IMG@
fi

# r4mount -o rw (tests/crash/mountrw.sh): the changes of programs
# through FUSE in one transaction that commits at the unmount; full:
# every cut point; quick: 8 and the last 4. A failed write makes the
# mount refuse later changes (EROFS), so fail-write points are before
# or after too. Needs a usable /dev/fuse and fusermount3
# (else said and left out).
fuse_ok() {
	command -v r4mount >/dev/null 2>&1 && command -v fusermount3 >/dev/null 2>&1 &&
		[ -c /dev/fuse ] && { exec 9<>/dev/fuse; } 2>/dev/null && exec 9>&-
}
if wanted mountrw; then
	if [ "$LEVEL" = full ]; then
		MOUNT=(--cut all --torn sample=20 --drop sample=20 --fail sample=10
		       --oracle every=5)
	else
		MOUNT=(--cut sample=8 --tail 4 --torn sample=2 --drop sample=2
		       --fail sample=2 --oracle every=6)
	fi
	if fuse_ok; then
		# --own-reader: the mount's new files are compressed (the
		# root says ccreg40), which r4ref cannot read back
		run mountrw --own-reader "${MOUNT[@]}" "$P" -- bash "$HERE/mountrw.sh" @IMG@
	else
		echo "mountrw: left out: no usable /dev/fuse or fusermount3 here" >&2
	fi
fi

if [ "$FAILED" -eq 0 ]; then
	echo "crash: $TOTAL cut points in $NW workloads, all before/after, fsck.reiser4 agreed at $AGREED"
	exit 0
fi
echo "crash: $TOTAL cut points in $NW workloads, $FAILED workload(s) FAILED, fsck.reiser4 agreed at $AGREED"
exit 1
