# SPDX-License-Identifier: GPL-2.0-or-later
# Byte surgery on test images (bash; sourced by the Bats tests, the
# repair crash test and bench/repair-kept.sh): read and write
# little-endian values at offsets, fix a bitmap block's Adler-32, flip a
# block's bit, find a stat data or a directory entry on disk. 4 KiB
# blocks, node40, large keys (what the tests make).

# Little-endian bytes of value $1, $2 bytes long, as printf escapes.
le() {
	local v=$1 n=$2 s="" i
	for ((i = 0; i < n; i++)); do
		s+=$(printf '\\x%02x' $(( (v >> (8 * i)) & 255 )))
	done
	printf '%s' "$s"
}
# poke IMAGE OFFSET VALUE NBYTES
poke() {
	printf "$(le "$3" "$4")" |
		dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
# peek IMAGE OFFSET NBYTES (unsigned decimal)
peek() {
	od -An -v -t "u$3" -j "$2" -N "$3" "$1" | tr -d ' '
}
# Recompute the Adler-32 of bitmap block $2.
csum_fix() {
	local s
	s=$(od -An -v -tu1 -j $(($2 * 4096 + 4)) -N 4092 "$1" |
		awk 'BEGIN { a = 1; b = 0 }
		     { for (i = 1; i <= NF; i++) { a = (a + $i) % 65521;
						  b = (b + a) % 65521 } }
		     END { printf "%.0f", b * 65536 + a }')
	poke "$1" $(($2 * 4096)) "$s" 4
}
# Set (1) or clear (0) bit of block $2 in bitmap block 18 (region 0).
setbit() {
	local off=$((18 * 4096 + 4 + $2 / 8)) byte
	byte=$(peek "$1" $off 1)
	if [ "$3" = 1 ]; then
		byte=$((byte | (1 << ($2 % 8))))
	else
		byte=$((byte & ~(1 << ($2 % 8))))
	fi
	poke "$1" $off $byte 1
}

# Absolute offset of the stat data body of PATH (node40, large keys).
sd_off() {
	local js blk item
	js=$(r4debugfs --json -R "stat $2" "$1")
	blk=$(sed -n 's/.*"sd_block":\([0-9]*\).*/\1/p' <<<"$js")
	item=$(sed -n 's/.*"sd_item":\([0-9]*\).*/\1/p' <<<"$js")
	echo $((blk * 4096 + $(peek "$1" $((blk * 4096 + 4096 - (item + 1) * 38 + 32)) 2)))
}
# Absolute offset of the body of entry NAME in the leaf that holds
# directory DIR's stat data (small directories: one cde item there);
# "print node" gives each entry's offset in its item.
entry_off() {
	local js blk at
	js=$(r4debugfs --json -R "stat $2" "$1")
	blk=$(sed -n 's/.*"sd_block":\([0-9]*\).*/\1/p' <<<"$js")
	at=$(r4debugfs -R "print node $blk" "$1" | awk -v n="\"$3\"" '
		/ cde40 / { for (i = 1; i < NF; i++) if ($i == "offset") base = $(i + 1) }
		$2 == n && $3 == "->" { sub(/\)$/, "", $NF); print base + $NF; exit }')
	[ -n "$at" ] || { echo "entry_off: no entry $3 in $2" >&2; return 1; }
	echo $((blk * 4096 + at))
}

# Absolute offset of the item header of the Nth (default 1) item of
# plugin PLUGIN (plain40, extent40, ctail40, stat40) that "print file"
# lists for PATH; the key is its first 32 bytes, the body offset the 2
# bytes after it.
item_ih() {
	local line blk item
	line=$(r4debugfs -R "print file $2" "$1" |
		grep -E "^block [0-9]+ \(level [12]\), #[0-9]+ $3 " | sed -n "${4:-1}p")
	blk=$(sed 's/^block \([0-9]*\) .*/\1/' <<<"$line")
	item=$(sed 's/.*, #\([0-9]*\) .*/\1/' <<<"$line")
	[ -n "$blk" ] && [ -n "$item" ] || { echo "item_ih: no $3 item ${4:-1} of $2" >&2; return 1; }
	echo $((blk * 4096 + 4096 - (item + 1) * 38))
}
# Absolute offset of the body of entry NAME of directory DIR: as
# entry_off, but in DIR's own cde40 items wherever they are ("print
# file" lists them with their block and offset).
dentry_off() {
	local at
	at=$(r4debugfs -R "print file $2" "$1" | awk -v n="\"$3\"" '
		/^block [0-9]+ / { mine = / cde40 /; blk = $2
				   for (i = 1; i < NF; i++) if ($i == "offset") base = $(i + 1) }
		mine && $2 == n && $3 == "->" { sub(/\)$/, "", $NF)
						print blk * 4096 + base + $NF; exit }')
	[ -n "$at" ] || { echo "dentry_off: no entry $3 in $2" >&2; return 1; }
	echo "$at"
}
# retarget IMAGE DIR NAME PATH: entry NAME of directory DIR names the
# object at PATH (its key id written over the entry's body).
retarget() {
	local js at
	js=$(r4debugfs --json -R "stat $4" "$1")
	at=$(dentry_off "$1" "$2" "$3") || return 1
	poke "$1" "$at" $(( ($(sed -n 's/.*"locality":\([0-9]*\).*/\1/p' <<<"$js") << 4) | 1 )) 8
	poke "$1" $((at + 8)) "$(sed -n 's/.*"ordering":"\{0,1\}\([0-9]*\).*/\1/p' <<<"$js")" 8
	poke "$1" $((at + 16)) "$(sed -n 's/.*"oid":\([0-9]*\).*/\1/p' <<<"$js")" 8
}
# Item surgery inside one node40 leaf (doc/format.md §4.1, §4.2), with
# python3: the bodies repacked, offsets, counts and free space set.
# node_split IMAGE BLOCK ITEM UNITS: item ITEM (a ctail40 or tail40 item)
# becomes two, the first holding UNITS units, the second the rest under
# the key offset of its first unit (a ctail40 piece keeps the shift byte).
# node_drop IMAGE BLOCK ITEM: item ITEM removed. A node whose first key
# changes gets it in the pointers to it (found by a scan of the image).
node_edit() {
	python3 - "$@" <<'PY'
import struct, sys
op, img, blk, item = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
bs, ihs = 4096, 38
with open(img, 'r+b') as f:
    f.seek(blk * bs)
    b = bytearray(f.read(bs))
    pid, n, free, fss = struct.unpack_from('<HHHH', b, 0)
    if pid != 0 or b[8:12] != b'SF4R' or item >= n:
        sys.exit('node_edit: block %d is not a node40 node with item %d' % (blk, item))
    at = lambda k: bs - (k + 1) * ihs
    hdrs = [bytearray(b[at(k):at(k) + ihs]) for k in range(n)]
    offs = [struct.unpack_from('<H', h, 32)[0] for h in hdrs] + [fss]
    bodies = [bytes(b[offs[k]:offs[k + 1]]) for k in range(n)]
    if op == 'split':
        units = int(sys.argv[5])
        ipid = struct.unpack_from('<H', hdrs[item], 36)[0]
        hs = {7: 1, 6: 0}.get(ipid)
        body = bodies[item]
        if hs is None or not 0 < units < len(body) - hs or free < ihs + hs:
            sys.exit('node_edit: cannot split item %d of block %d' % (item, blk))
        second = bytearray(hdrs[item])
        off = struct.unpack_from('<Q', second, 24)[0]
        struct.pack_into('<Q', second, 24, off + units)
        bodies[item:item + 1] = [body[:hs + units], body[:hs] + body[hs + units:]]
        hdrs[item + 1:item + 1] = [second]
    elif op == 'drop':
        del bodies[item]
        del hdrs[item]
    else:
        sys.exit('node_edit: unknown operation ' + op)
    out = bytearray(bs)
    out[:28] = b[:28]
    pos = 28
    for k, (h, body) in enumerate(zip(hdrs, bodies)):
        out[pos:pos + len(body)] = body
        struct.pack_into('<H', h, 32, pos)
        out[at(k):at(k) + ihs] = h
        pos += len(body)
    n = len(hdrs)
    struct.pack_into('<HHH', out, 2, n, bs - pos - n * ihs, pos)
    f.seek(blk * bs)
    f.write(out)
    # a node's first key changed: the pointers down to it take it (the
    # delimiting keys, §6), up the tree while it is a first item
    first = bytes(out[bs - ihs:bs - ihs + 32]) if n else None
    child = blk
    while first is not None and item == 0:
        f.seek(0, 2)
        nblocks = f.tell() // bs
        found = None
        for p in range(nblocks):
            f.seek(p * bs)
            q = bytearray(f.read(bs))
            if q[8:12] != b'SF4R' or q[26] < 2:
                continue
            for k in range(struct.unpack_from('<H', q, 2)[0]):
                h = bs - (k + 1) * ihs
                o = struct.unpack_from('<H', q, h + 32)[0]
                if struct.unpack_from('<H', q, h + 36)[0] == 3 and \
                   struct.unpack_from('<Q', q, o)[0] == child:
                    found = (p, k, q)
                    break
            if found:
                break
        if not found:
            break
        p, item, q = found
        q[bs - (item + 1) * ihs:bs - (item + 1) * ihs + 32] = first
        f.seek(p * bs)
        f.write(q)
        child = p
PY
}
node_split() { node_edit split "$@"; }
node_drop() { node_edit drop "$@"; }

# pset_set IMAGE PATH MEMBER ID: in PATH's stat data, the plugin-set
# member MEMBER (doc/format.md, sdext_plugin_set) that is there gets
# plugin ID; fails (status 2) when the member is not stored.
pset_set() {
	python3 - "$1" "$(sd_off "$1" "$2")" "$3" "$4" <<'PY'
import struct, sys
img, at, member, pid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
with open(img, 'r+b') as f:
    f.seek(at)
    sd = bytearray(f.read(512))
    mask = struct.unpack_from('<H', sd, 0)[0]
    o = 2
    if not mask & 16:
        sys.exit(2)
    for bit, size in ((0, 14), (1, 28), (2, 12)):
        if mask & (1 << bit):
            o += size
    if mask & 8:
        o += struct.unpack_from('<Q', sd, 6)[0] + 1	# symlink: lw size + NUL
    count = struct.unpack_from('<H', sd, o)[0]
    for k in range(count):
        m = struct.unpack_from('<H', sd, o + 2 + 4 * k)[0]
        if m == member:
            f.seek(at + o + 2 + 4 * k + 2)
            f.write(struct.pack('<H', pid))
            sys.exit(0)
    sys.exit(2)
PY
}
