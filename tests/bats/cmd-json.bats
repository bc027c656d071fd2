#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# --json of every command (issue 13, item 4): valid UTF-8, names that
# round-trip (UTF-8, not UTF-8, control bytes), 64-bit values kept exact,
# a schema field, one error object on a failure.

load helpers

# A source tree with a UTF-8 name, a name that is not UTF-8, a name with
# control bytes, and a name with an overlong form of '/'.
make_names() {
	mkdir -p "$1/d"
	printf a >"$1/d/$(printf 'caf\303\251')"
	printf bb >"$1/d/$(printf 'bad\377\376')"
	printf ccc >"$1/d/$(printf 'ctl\001\033[31m\ttab')"
	printf dddd >"$1/d/$(printf 'over\300\257long')"
}

# check_json FILE: FILE is one JSON value, or one a line, in valid UTF-8.
check_json() {
	python3 - "$1" <<'EOF'
import json, sys
raw = open(sys.argv[1], 'rb').read()
text = raw.decode('utf-8')                # strict: fails on a bad byte
try:
    json.loads(text)
except ValueError:
    for l in text.splitlines():
        json.loads(l)
EOF
}

@test "names round-trip: UTF-8 as characters, other bytes in name_b64" {
	command -v python3 >/dev/null || skip "python3 not installed"
	make_names "$T/src"
	r4pack create -q "$T/src" "$T/a.img"
	r4debugfs --json -R 'ls -l /d' -R 'ls /d' -R 'hash /d' "$T/a.img" \
		>"$T/j"
	check_json "$T/j"
	# café is written as its two-byte é, not as \u00c3\u00a9
	grep -q "$(printf '"name":"caf\303\251"')" "$T/j"
	! grep -q 'u00c3' "$T/j" || false
	python3 - "$T/j" "$T/src/d" <<'EOF'
import base64, json, os, sys
v = [json.loads(l) for l in open(sys.argv[1], encoding='utf-8')]
host = set(os.listdir(os.fsencode(sys.argv[2])))
def raw(o, k):
    if k + '_b64' in o:
        b = base64.b64decode(o[k + '_b64'])
        assert '\ufffd' in o[k], o          # the text form says so
        return b
    return o[k].encode('utf-8')
for listing in v[0]["entries"], v[1]["entries"]:
    names = {raw(e, 'name') for e in listing} - {b'.', b'..'}
    assert names == host, (names, host)
    for e in listing:
        assert raw(e, 'path') == b'/d/' + raw(e, 'name'), e
bad = [e for e in v[0]["entries"] if 'name_b64' in e]
assert len(bad) == 2, bad                   # \377\376 and the overlong form
assert not any('name_b64' in e for e in v[0]["entries"]
               if e['name'].startswith(('caf', 'ctl'))), v[0]
assert {raw(e, 'path') for e in v[2]["files"]} == {b'/d/' + n for n in host}, v[2]
EOF
}

@test "every r4debugfs command under --json prints one JSON value a line" {
	command -v python3 >/dev/null || skip "python3 not installed"
	make_names "$T/src"
	r4pack create -q "$T/src" "$T/a.img"
	root=$(r4debugfs -R 'print super' "$T/a.img" |
		sed -n 's/^ *root block: *\([0-9]*\).*/\1/p')
	[ -n "$root" ]
	r4debugfs --json -R 'print super' -R "print node $root" -R 'print tree' \
		-R 'print journal' -R 'print bitmap' -R "print file /d" \
		-R "blocks /d/$(printf 'caf\303\251')" -R 'icheck 23' \
		-R 'ncheck 42' -R 'lsdel' -R 'bodyfile /' -R 'help' \
		-R 'stat /d' "$T/a.img" >"$T/j"
	check_json "$T/j"
	python3 - "$T/j" <<'EOF'
import json, sys
v = [json.loads(l) for l in open(sys.argv[1], encoding='utf-8')]
assert len(v) == 13, len(v)
for o in v:
    assert o['schema'] == 2 and o['program'] == 'r4debugfs', o
    assert o['kind'] != 'error', o
assert v[0]['blksize'] == 4096
assert v[1]['command'].startswith('print node') and v[1]['lines'], v[1]
b = v[6]
assert b['path'] == '/d/caf\u00e9' and b['pieces'][0]['length'] == 1, b
assert v[12]['path'] == '/d'
EOF
}

@test "64-bit values above 2^53 are decimal strings, exact" {
	command -v python3 >/dev/null || skip "python3 not installed"
	make_names "$T/src"
	r4pack create -q "$T/src" "$T/a.img"
	local n="/d/$(printf 'caf\303\251')"
	r4debugfs --json -R "stat $n" "$T/a.img" >"$T/j"
	ord=$(r4debugfs -R "stat $n" "$T/a.img" |
		sed -n 's/.*ordering 0x\([0-9a-f]*\).*/\1/p')
	[ -n "$ord" ]
	python3 - "$T/j" "$ord" <<'EOF'
import json, sys
o = json.load(open(sys.argv[1]))
want = int(sys.argv[2], 16)
assert want > 2**53, want                 # a name-derived ordering
assert o['ordering'] == str(want), (o['ordering'], want)
assert isinstance(o['oid'], int) and isinstance(o['size'], int), o
EOF
}

@test "r4fsck and r4pack: schema, and files/objects mean the same" {
	command -v python3 >/dev/null || skip "python3 not installed"
	make_names "$T/src"
	ln -s target "$T/src/d/sym"
	mkfifo "$T/src/fifo"
	r4pack create --json "$T/src" "$T/a.img" >"$T/p"
	r4fsck --json "$T/a.img" >"$T/f"
	r4repacker -n --json "$T/a.img" >"$T/r"
	for f in p f r; do check_json "$T/$f"; done
	python3 - "$T/p" "$T/f" "$T/r" <<'EOF'
import json, sys
p, f, r = (json.load(open(a)) for a in sys.argv[1:4])
assert p['schema'] == f['schema'] == r['schema'] == 2
assert 'files' not in p, p
assert p["objects"] == f["objects"] == 8, (p, f)   # root, d, 4 files, sym, fifo
assert p["nondirs"] == 6 and p["dirs"] == f["dirs"] == 2, (p, f)
assert f["files"] == 4, f                    # regular files only
EOF
}

@test "--json failures: one error object on stdout, one line on stderr, the exit code" {
	command -v python3 >/dev/null || skip "python3 not installed"
	make_names "$T/src"
	r4pack create -q "$T/src" "$T/a.img"
	cp "$T/a.img" "$T/b.img"
	# want EXIT CMD...: stdout is one error object with that exit code,
	# stderr one line naming what failed.
	want() {
		local code=$1 out=$2
		shift 2
		run --separate-stderr "$@"
		[ "$status" -eq "$code" ] || { echo "$* -> $status"; return 1; }
		[ "$(printf '%s\n' "$stderr" | grep -c "^${1##*/}: ")" -ge 1 ]
		local js=$output
		[ "$out" = stderr ] && js=$(printf '%s\n' "$stderr" | grep '^{')
		python3 -c '
import json, sys
o = json.loads(sys.argv[1])
assert o["schema"] == 2 and o["kind"] == "error" and o["error"]["exit"] == int(sys.argv[2]), o
assert sys.argv[3] in o["error"]["message"], o' "$js" "$code" "$want_msg"
	}
	want_msg=nope.img want 8 stdout r4fsck --json "$T/nope.img"
	want_msg=bogus want 16 stdout r4fsck --json --bogus "$T/a.img"
	want_msg=nope.img want 8 stdout r4debugfs --json -R 'print super' "$T/nope.img"
	want_msg=nope.img want 1 stdout r4repacker --json "$T/nope.img"
	want_msg=nope want 1 stdout r4pack create --json "$T/nope" "$T/c.img"
	want_msg=nope want 1 stdout r4pack add --json "$T/b.img" "$T/nope"
	want_msg=nope.img want 1 stderr r4pack extract --json "$T/nope.img" "$T/x.tar"
	# a failed r4debugfs command: its error object names the command
	run --separate-stderr r4debugfs --json -R 'stat /nope' -R 'stat /d' "$T/a.img"
	[ "$status" -eq 1 ]
	python3 -c '
import json, sys
v = [json.loads(l) for l in sys.argv[1].splitlines()]
assert v[0]["command"] == "stat /nope" and "/nope" in v[0]["error"]["message"], v
assert v[1]["path"] == "/d", v' "$output"
	[[ "$stderr" == "r4debugfs: /nope: no such file or directory" ]]
}

@test "ncheck, icheck and lsdel: non-UTF-8 paths lossless, 64-bit fields exact" {
	command -v python3 >/dev/null || { echo "python3 is needed"; false; }
	mkdir -p "$T/src/$(printf 'd\377')"
	head -c 65536 /dev/zero | tr '\0' x >"$T/src/$(printf 'd\377')/f"
	r4pack create -q "$T/src" "$T/n.img"
	oid=$(r4debugfs -R "stat /$(printf 'd\377')/f" "$T/n.img" | awk '$1 == "object:" { sub(",", "", $3); print $3; exit }')
	[ -n "$oid" ]
	run r4debugfs --json -R "ncheck $oid" "$T/n.img"
	echo "$output"
	[ "$status" -eq 0 ]
	python3 - "$output" <<'PY'
import base64, json, sys
d = json.loads(sys.argv[1])
p = d["objects"][0]["paths"][0]
assert isinstance(p, dict), p
assert base64.b64decode(p["path_b64"]) == b"/d\xff/f", p
PY
	blk=$(r4debugfs -R "blocks /$(printf 'd\377')/f" "$T/n.img" | grep -o 'blocks\? [0-9]*' | head -1 | awk '{ print $2 }')
	[ -n "$blk" ]
	run r4debugfs --json -R "icheck $blk" "$T/n.img"
	echo "$output"
	[ "$status" -eq 0 ]
	python3 - "$output" <<'PY'
import base64, json, sys
d = json.loads(sys.argv[1])
assert d["blocks"][0]["class"] == "owned", d
p = d["blocks"][0]["paths"][0]
assert base64.b64decode(p["path_b64"]) == b"/d\xff/f", p
PY
	# lsdel: a removed file's numbers are JSON numbers, exact
	r4debugfs -w -R "rm /$(printf 'd\377')/f" "$T/n.img"
	run r4debugfs --json -R "lsdel" "$T/n.img"
	echo "$output"
	[ "$status" -eq 0 ]
	python3 -c 'import json,sys; d=json.loads(sys.argv[1]); x=[e for e in d["deleted"] if e["oid"] == 0x10001]; assert x and x[0]["size"] == 65536, d' "$output"
}
