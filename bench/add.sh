#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# r4pack add of FILES small files (default 10,000) into a populated image
# in one transaction, against r4pack create of the same files, medians of
# RUNS runs (default 3) in the same run, wall and CPU (user + sys), in
# two pairings of like with like:
#   plain:      add -o create=reg40   against  create (reg40 files)
#   compressed: add (the volume's profile: ccreg40, lzo1, conv, 64K)
#               against  create -o create=ccreg40 (the same profile)
# With OLD_BUILD=DIR set, that build's add is timed in the same rounds
# (interleaved) for a before/after. Then what the transaction writes (one
# compressed-pairing add under strace): total bytes written to the image
# per byte of new file data, the blocks written once (relocate set: new
# nodes, file data, log), and the overwrite set: blocks written twice,
# once as the wandered copy in the log and once at home (by content).
#   [OLD_BUILD=DIR] bench/add.sh [BUILD_DIR] [RUNS] [FILES]
set -eu
build=${1:-.}
runs=${2:-3}
nfiles=${3:-10000}
old=${OLD_BUILD:-}
for t in python3 strace bc; do
	command -v $t >/dev/null || { echo "$t not installed"; exit 1; }
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/r4bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

echo "making a populated image (2,000 files) and $nfiles new small files ..."
python3 - "$dir/base" "$dir/new" "$nfiles" <<'PY'
import os, random, sys
base, new, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
random.seed(7)
def mk(root, name, size):
    os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
    with open(os.path.join(root, name), "wb") as f:
        f.write(os.urandom(size))
for i in range(2000):
    mk(base, "d%02d/old-%05d" % (i % 20, i), random.choice([100, 1000, 3000, 9000, 30000]))
for i in range(n):
    # a tenth replaces files of the image, the rest are new
    if i % 10 == 0 and i // 10 < 2000:
        j = i // 10
        mk(new, "d%02d/old-%05d" % (j % 20, j), random.randint(0, 4000))
    else:
        mk(new, "n%02d/f-%06d" % (i % 50, i), random.randint(0, 4000))
PY
"$build/cmd/r4pack" create -q --free 512M "$dir/base" "$dir/base.img"
newbytes=$(find "$dir/new" -type f -printf '%s\n' | awk '{s += $1} END {print s}')

# one timed command: "NAME wall user sys" appended to $dir/t.raw, from
# the child's rusage in microseconds (/usr/bin/time prints 10 ms steps,
# as coarse as the differences measured here)
cat >"$dir/timed.py" <<'PY'
import os, sys, time
out, name, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
t = time.monotonic()
pid = os.fork()
if pid == 0:
    fd = os.open(os.devnull, os.O_WRONLY)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.execvp(argv[0], argv)
_, st, ru = os.wait4(pid, 0)
with open(out, "a") as f:
    f.write("%s %.4f %.4f %.4f\n" % (name, time.monotonic() - t,
                                     ru.ru_utime, ru.ru_stime))
sys.exit(0 if st == 0 else 1)
PY
timed() {
	local name=$1; shift
	python3 "$dir/timed.py" "$dir/t.raw" "$name" "$@" ||
		{ echo "failed: $*" >&2; exit 1; }
}
: >"$dir/t.raw"
for _ in $(seq "$runs"); do
	for pair in plain compressed; do
		if [ $pair = plain ]; then ao="-o create=reg40" co=""
		else ao="" co="-o create=ccreg40"; fi
		for b in "$build" $old; do
			tag=new; [ "$b" = "$build" ] || tag=old
			cp --sparse=always "$dir/base.img" "$dir/a.img"
			sync
			# shellcheck disable=SC2086
			timed "$pair-add-$tag" "$b/cmd/r4pack" add -q $ao \
				"$dir/a.img" "$dir/new"
			"$build/cmd/r4fsck" --check -q "$dir/a.img" >/dev/null ||
				{ echo "the $tag build's added image is not clean"; exit 1; }
		done
		rm -f "$dir/c.img"
		# shellcheck disable=SC2086
		timed "$pair-create" "$build/cmd/r4pack" create -q $co \
			"$dir/new" "$dir/c.img"
	done
done
# medians of wall and of user+sys per name
med() { awk -v n="$1" -v f="$2" '$1 == n { print (f == 2) ? $2 : $3 + $4 }' \
	"$dir/t.raw" | median; }
printf 'r4pack add of %d files (%d bytes) into a 2,000-file image, one transaction, medians of %d\n' \
	"$nfiles" "$newbytes" "$runs"
for pair in plain compressed; do
	for f in 2 3; do
		what=wall; [ $f = 2 ] || what=cpu
		a=$(med "$pair-add-new" $f); c=$(med "$pair-create" $f)
		line=$(printf '%-10s %-4s add %.3f s, create %.3f s, add/create %.2f' \
			"$pair" "$what" "$a" "$c" "$(echo "$a / $c" | bc -l)")
		if [ -n "$old" ]; then
			o=$(med "$pair-add-old" $f)
			line="$line$(printf '; old add %.3f s (%.2fx create)' "$o" \
				"$(echo "$o / $c" | bc -l)")"
		fi
		echo "$line"
	done
done

cp --sparse=always "$dir/base.img" "$dir/a.img"
strace -e trace=openat,pwrite64,pwritev,pwritev2,write -e signal=none -x -s 96 \
	-o "$dir/trace" "$build/cmd/r4pack" add -q "$dir/a.img" "$dir/new" >/dev/null
python3 - "$dir/trace" "$dir/a.img" "$newbytes" <<'PY'
import re, sys, collections
trace, img, newbytes = sys.argv[1], sys.argv[2], int(sys.argv[3])
fd = None
per_off = collections.Counter()
by_content = collections.defaultdict(set)
total = calls = 0
for line in open(trace):
    m = re.search(r'openat\(AT_FDCWD, "([^"]*)", O_RDWR[^)]*\) = (\d+)', line)
    if m and m.group(1) == img:
        fd = m.group(2)
        continue
    m = re.match(r'pwrite64\((\d+), "(.*?)"(?:\.\.\.)?, (\d+), (\d+)\) = (\d+)', line)
    if not m or m.group(1) != fd:
        continue
    n, off = int(m.group(5)), int(m.group(4))
    total += n
    calls += 1
    for b in range(off // 4096, (off + n + 4095) // 4096):
        per_off[b] += 1
    if n == 4096:
        by_content[m.group(2)].add(off // 4096)
once = sum(1 for c in per_off.values() if c == 1)
again = sum(1 for c in per_off.values() if c > 1)
ow = sum(1 for s in by_content.values() if len(s) > 1)
print("bytes written to the image: %d in %d writes = %.2f bytes per byte of new file data"
      % (total, calls, total / max(newbytes, 1)))
print("blocks written: %d distinct; %d once, %d at the same place more than once"
      % (len(per_off), once, again))
print("overwrite set (same block content written at two places: wandered copy + home): %d blocks"
      % ow)
PY
