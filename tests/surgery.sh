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
