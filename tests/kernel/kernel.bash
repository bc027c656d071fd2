# SPDX-License-Identifier: GPL-2.0-or-later
# The kernel test tier (doc/kernel.md §1): the real
# Reiser4 kernel (User-Mode Linux, ../shared/uml/r4kernel.sh beside the
# source tree, or $R4_UML_DIR/r4kernel.sh) reads and writes images r4kit
# made. Loaded by every tests/kernel/*.bats after ../bats/helpers.
#
# A failed boot (r4kernel.sh exit 90-94: mount, umount, panic, timeout),
# any Reiser4 warning/BUG/Oops/panic line on its stderr, or a manifest the
# kernel reads differently from the source fails the test. Every boot has
# a timeout (R4TIMEOUT, default 120 s here), so a spinning kernel fails
# instead of holding the run.

KDIR=${R4_UML_DIR:-$top_srcdir/../shared/uml}
R4K=$KDIR/r4kernel.sh
GENTREE="python3 $top_srcdir/tests/kernel/gentree.py"
export R4TIMEOUT=${R4TIMEOUT:-120}

# The one line every kernel test skips with when the kernel is not here.
KSKIP_ABSENT="../shared/uml is absent (no r4kernel.sh): the kernel tier is skipped"
KSKIP_OFF="the kernel tier is off in this run (R4_KERNEL_TIER=0)"

# Skip this test when the tier cannot or must not run.
need_kernel() {
	[ "${R4_KERNEL_TIER:-1}" != 0 ] || skip "$KSKIP_OFF"
	[ -x "$R4K" ] || skip "$KSKIP_ABSENT"
	command -v python3 >/dev/null || { echo "python3 is needed by the kernel tier"; return 1; }
}

# Print the skip reason once per file, on the terminal (fd 3), so that a
# skipped tier is visible in make check's output and not only in the log.
kernel_setup_file() {
	if [ "${R4_KERNEL_TIER:-1}" = 0 ]; then
		echo "# $KSKIP_OFF" >&3
	elif [ ! -x "$R4K" ]; then
		echo "# $KSKIP_ABSENT" >&3
	fi
}

# kboot_raw IMAGE CMDS [MOUNT_OPTIONS]: boot, keep the output in
# $T/kboot.out and the kernel's complaints in $T/kboot.err; KRC is
# r4kernel.sh's status, KBAD is the first bad kernel-log line (empty when
# none). Never fails by itself.
kboot_raw() {
	local img=$1 cmds=$2
	shift 2
	mkdir -p "$T/uml"
	KRC=0
	R4KEEP=1 R4TMP="$T/uml" "$R4K" "$img" "$cmds" "$@" >"$T/kboot.out" \
		2>"$T/kboot.err" || KRC=$?
	KRUN=$(sed -n 's/^(run dir[a-z ]*: \(.*\))$/\1/p' "$T/kboot.err" | tail -n 1)
	KBAD=$(grep -m1 -E '[Rr]eiser4.*([Ww]arning|[Ee]rror|[Pp]anic|[Aa]ssert)|BUG|Oops|[Pp]anic|r4kernel:' \
		"$T/kboot.err" || true)
	KBOOTS=$((${KBOOTS:-0} + 1))
	return 0
}

# kboot IMAGE CMDS [MOUNT_OPTIONS]: boot; fail (with the reason and the
# kernel's log tail) on a failed boot, a bad kernel-log line or a
# non-zero status of CMDS.
kboot() {
	kboot_raw "$@"
	if [ "$KRC" -ge 90 ] && [ "$KRC" -le 94 ]; then
		echo "kernel boot on $(basename "$1") failed (r4kernel.sh exit $KRC: $(krc_name "$KRC")):"
		tail -n 40 "$T/kboot.err"
		tail -n 20 "$T/kboot.out"
		kstack
		return 1
	fi
	if [ -n "$KBAD" ]; then
		echo "kernel log on $(basename "$1") has Reiser4 warnings, BUG, Oops or panic lines:"
		tail -n 40 "$T/kboot.err"
		kstack
		return 1
	fi
	if [ "$KRC" -ne 0 ]; then
		echo "the guest's commands on $(basename "$1") failed (status $KRC):"
		tail -n 30 "$T/kboot.out"
		return 1
	fi
}

# kstack: the panic or BUG line and the call trace of the last boot's
# console (the run folder is kept under $T/uml).
kstack() {
	[ -n "${KRUN:-}" ] && [ -f "$KRUN/console.txt" ] || return 0
	echo "console of the guest (panic, BUG and call trace):"
	grep -E 'BUG|panic|Oops|fault|reiser4' "$KRUN/console.txt" | head -n 8
	grep -oE '\] [a-z_0-9]+\+0x' "$KRUN/console.txt" | grep -v '\] ? ' |
		sed 's/^\] //; s/+0x$//' | head -n 25 | tr '\n' ' '
	echo
}

krc_name() {
	case $1 in
	91) echo "the mount failed" ;;
	92) echo "the umount failed" ;;
	93) echo "the guest never finished: a kernel panic" ;;
	94) echo "the guest was still running after R4TIMEOUT=$R4TIMEOUT s: a hang or a spinning kernel" ;;
	*) echo "boot failure" ;;
	esac
}

# kwalk_script OUTDIR [EXCLUDED_PATH...]: a guest script (on stdout) that
# walks /mnt and writes find.txt (lstat of every entry) and sha.txt
# (sha256sum, by read(2), of every regular file) into the host folder
# OUTDIR. EXCLUDED_PATHs (relative, e.g. dir2/sparse) are stat'ed but
# never read.
kwalk_script() {
	local out=$1 x
	shift
	local excl=""
	for x in "$@"; do
		excl="$excl ! -path './$x'"
	done
	cat <<EOF
set -e
mkdir -p '$out'
find . -mindepth 1 -printf '%P\t%y\t%s\t%m\t%n\t%U\t%G\t%T@\t%l\n' > '$out/find.txt'
find . -type f $excl -print0 | xargs -0 -r stdbuf -oL sha256sum > '$out/sha.txt'
EOF
}

# kwalk_where WALKDIR: after a failed walk, the file the kernel was
# reading (the first regular file of the walk that sha256sum did not
# finish).
kwalk_where() {
	[ -f "$1/find.txt" ] || return 0
	local f
	f=$(awk -F'\t' '$2 == "f" { print $1 }' "$1/find.txt" | while read -r p; do
		grep -qF "  ./$p" "$1/sha.txt" 2>/dev/null || { echo "$p"; break; }
	done)
	[ -z "$f" ] || echo "the kernel failed while reading /$f (or soon after: a walk reads in find order)"
}

# kwalk IMAGE MANIFEST_OUT [EXCLUDED_PATH...]: one read-only boot that
# walks the image; the kernel's manifest goes to MANIFEST_OUT.
kwalk() {
	local img=$1 man=$2 d
	shift 2
	d=$(mktemp -d "$T/walk.XXXXXX")
	kwalk_script "$d" "$@" >"$d.sh"
	if ! R4RO=1 kboot "$img" "$d.sh"; then
		kwalk_where "$d"
		return 1
	fi
	$GENTREE guest "$d/find.txt" "$d/sha.txt" >"$man"
}

# kcmp WANT GOT [what]: the manifests are equal; otherwise print every
# entry that differs (the source's line, then the kernel's) and fail.
# Columns: path type size mode nlink uid gid mtime sha256. Without root,
# owners are not compared (r4pack stores the host's).
kcmp() {
	local want=$1 got=$2 what=${3:-the kernel}
	if [ "$(id -u)" != 0 ]; then
		cut -f1-5,8- "$want" >"$want.cmp"
		cut -f1-5,8- "$got" >"$got.cmp"
		want=$want.cmp got=$got.cmp
	fi
	cmp -s "$want" "$got" && return 0
	echo "$what reads differently (< expected, > read):"
	python3 - "$want" "$got" <<'PY'
import sys
a = {l.split("\t")[0]: l.rstrip("\n") for l in open(sys.argv[1])}
b = {l.split("\t")[0]: l.rstrip("\n") for l in open(sys.argv[2])}
n = 0
for p in sorted(set(a) | set(b)):
    if a.get(p) != b.get(p):
        n += 1
        if n <= 40:
            print("  %s:\n    < %s\n    > %s" % (p, a.get(p, "(missing)"), b.get(p, "(missing)")))
print("  %d entries differ" % n)
PY
	return 1
}

# kmanifest_unread MANIFEST PATH...: the manifest without those paths' hashes
# (for images whose kernel-panicking files are stat'ed but not read).
kmanifest_unread() {
	local m=$1 p
	shift
	for p in "$@"; do
		awk -F'\t' -v OFS='\t' -v p="$p" '$1 == p { $9 = "unread" } 1' "$m" >"$m.tmp"
		mv "$m.tmp" "$m"
	done
}

# r4kit_manifest IMAGE OUT: what r4kit reads (r4debugfs rdump), as a
# manifest.
r4kit_manifest() {
	local d
	d=$(mktemp -d "$T/rdump.XXXXXX")
	run r4debugfs -R "rdump / $d" "$1"
	[ "$status" -eq 0 ] || { echo "r4debugfs rdump $1 failed (status $status):"; echo "$output" | tail -n 20; return 1; }
	$GENTREE manifest "$d" >"$2"
	rm -rf "$d"
}

# kcheckers IMAGE: r4fsck -n and fsck.reiser4 --check both call it clean.
kcheckers() {
	run r4fsck -n "$1"
	if [ "$status" -ne 0 ]; then
		echo "r4fsck -n $(basename "$1") (status $status):"
		echo "$output" | tail -n 30
		return 1
	fi
	need_oracle
	oracle_fsck "$1"
}

# gentree DIR SEED [add]: a seeded random tree (tests/kernel/gentree.py)
# and its manifest DIR.man.
gentree() {
	$GENTREE tree "$1" "$2" --kind "${3:-base}"
	$GENTREE manifest "$1" >"$1.man"
}

# kimg NAME: the kernel-written image tests/data/kernel/NAME.img.xz,
# decompressed into $T/NAME.img.
KIMG_DIR=$top_srcdir/tests/data/kernel
kimg() {
	[ -f "$KIMG_DIR/$1.img.xz" ] || { echo "missing $KIMG_DIR/$1.img.xz"; return 1; }
	xz -dc "$KIMG_DIR/$1.img.xz" | cp --sparse=always /dev/stdin "$T/$1.img"
}

# kstress_script SEED OPS PAYLOAD [EXCLUDED_PATH...]: a guest script (on
# stdout): a bounded, seeded stress of OPS operations on the files under
# /mnt: appends, overwrites inside clusters, truncates, writes into
# cluster 0 of files longer than one cluster (incompressible bytes from
# the host file PAYLOAD, so that conv mode's first-cluster test fails),
# creates, removes and renames. No operation makes a file start with a
# hole (the kernel's own defect, doc/kernel.md §2.1, would panic a later
# read of it). Deterministic for a SEED (bash's RANDOM),
# stopped after 30 s at most. EXCLUDED_PATHs are never touched.
kstress_script() {
	local seed=$1 ops=$2 pay=$3 x excl=""
	shift 3
	for x in "$@"; do
		excl="$excl ! -path './$x'"
	done
	cat <<EOF2
set -u
RANDOM=$seed
PAY='$pay'
set -f
IFS='
'
F=(\$(find . -type f $excl | LC_ALL=C sort))
D=(\$(find . -type d | LC_ALL=C sort))
IFS=' 	
'
set +f
# first, cluster 0 of up to 6 files longer than two 64K clusters, made
# incompressible (conv mode's test of the first cluster); not the
# generator's sparse files, whose leading holes are another defect
B=(\$(find . -type f -size +128k ! -name '*sparse*' $excl | LC_ALL=C sort | head -n 6))
for f in "\${B[@]}"; do
	dd if="\$PAY" of="\$f" bs=\$((65536 + RANDOM % 4096)) count=1 conv=notrunc status=none
done
pick() { f=\${F[RANDOM % \${#F[@]}]}; }
# then a small rewrite inside the first 4 KiB of 24 picked files (the
# kernel rewrites, and so merges, the disk cluster it lands in)
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24; do
	pick
	case \$f in *sparse*) continue ;; esac
	[ "\$(stat -c %s "\$f")" -gt 4096 ] || continue
	dd if="\$PAY" of="\$f" bs=100 count=1 seek=\$((RANDOM % 3996)) \
		oflag=seek_bytes conv=notrunc status=none
done
n=0 t0=\$SECONDS
while [ \$n -lt $ops ] && [ \$((SECONDS - t0)) -lt 30 ]; do
	n=\$((n + 1))
	pick
	[ -e "\$f" ] || continue
	s=\$(stat -c %s "\$f")
	case \$((RANDOM % 9)) in
	0) printf 'append %d %s\n' \$n "\$f" >>"\$f" ;;
	1) # overwrite inside the file (never a new leading hole)
		[ "\$s" -gt 0 ] || continue
		dd if="\$PAY" of="\$f" bs=\$((RANDOM % 5000 + 1)) count=1 \
			seek=\$(((RANDOM * 7) % s)) oflag=seek_bytes conv=notrunc status=none ;;
	2) # shrink, or grow a file that has data
		[ "\$s" -gt 0 ] || continue
		truncate -s \$((RANDOM * (RANDOM % 8))) "\$f" ;;
	3|4) # cluster 0 of a file longer than one cluster, made
		# incompressible (conv mode's test of the first cluster)
		[ "\$s" -gt 65536 ] || continue
		dd if="\$PAY" of="\$f" bs=\$((65536 + RANDOM % 4096)) count=1 \
			conv=notrunc status=none ;;
	5) d=\${D[RANDOM % \${#D[@]}]}
	   head -c \$((RANDOM * (RANDOM % 4))) "\$PAY" >"\$d/new_\$n"
	   F+=("\$d/new_\$n") ;;
	6) rm -f "\$f" ;;
	7) d=\${D[RANDOM % \${#D[@]}]}
	   mv "\$f" "\$d/moved_\$n" 2>/dev/null && F+=("\$d/moved_\$n") ;;
	8) printf 'x%.0s' \$(seq 1 \$((RANDOM % 300))) >>"\$f" ;;
	esac
done
sync
echo "stress: \$n operations"
EOF2
}

# kstress IMAGE SEED [EXCLUDED_PATH...]: one boot running the stress
# (60 operations).
kstress() {
	local img=$1 seed=$2
	shift 2
	[ -f "$T/payload" ] || python3 -c 'import random, sys
r = random.Random(4242)
sys.stdout.buffer.write(r.getrandbits(8 * 400000).to_bytes(400000, "little"))' >"$T/payload"
	kstress_script "$seed" "${KSTRESS_OPS:-60}" "$T/payload" "$@" >"$T/stress.sh"
	kboot "$img" "$T/stress.sh"
}

# kafter_stress IMAGE [EXCLUDED...]: both checkers clean on what the
# kernel left; a second boot reads exactly what r4kit reads.
kafter_stress() {
	local img=$1
	shift
	kcheckers "$img"
	r4kit_manifest "$img" "$T/r.man"
	[ "$#" -eq 0 ] || kmanifest_unread "$T/r.man" "$@"
	kwalk "$img" "$T/k.man" "$@"
	kcmp "$T/r.man" "$T/k.man"
}
