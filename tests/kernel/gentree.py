#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""gentree.py tree DIR SEED [--kind base|add]: make a seeded random tree.
   gentree.py manifest DIR: print its manifest on stdout.
   gentree.py guest FIND.txt SHA.txt: the same manifest from what the
   kernel guest printed (tests/kernel/kernel.bash, kwalk).

The tree is the same for the same seed: sparse files with leading holes
(hole then data, several holes), incompressible (seeded pseudo-random) and
text files, sizes across the cluster boundaries of 4K..64K clusters (+-1
byte), small and empty files, symlinks, hard links, a fifo, nested
directories, modes, owners (when the caller may chown) and times.

The manifest is one line per entry, sorted by path, tab-separated:
    path type size mode nlink uid gid mtime sha256
type is f, d, l or p; size is the file's size (the target's length for a
symlink, 0 for a directory or a fifo); mode is octal permission bits;
sha256 is of the file's bytes, of the link's target for a symlink, '-'
otherwise. tests/kernel/kernel.bash writes the same lines with stat(1)
and sha256sum(1) inside the kernel guest. Directory sizes and link counts
depend on the file system and are written as '-'.
"""
import hashlib
import os
import random
import stat
import sys

BASE_TIME = 1600000000


def text_bytes(rng, n):
    words = ["reiser4", "cluster", "kernel", "ctail", "extent", "twig",
             "leaf", "node", "hole", "data", "zero", "lzo", "gzip", "zstd",
             "the", "a", "of", "and", "file", "block", "item", "key"]
    out = bytearray()
    while len(out) < n:
        line = " ".join(rng.choice(words) for _ in range(rng.randint(3, 12)))
        out += line.encode() + b"\n"
    return bytes(out[:n])


def random_bytes(rng, n):
    return rng.getrandbits(8 * n).to_bytes(n, "little") if n else b""


def sizes_across_clusters():
    """Sizes at every cluster boundary of 4K..64K clusters, +-1."""
    out = []
    for c in (4096, 8192, 16384, 32768, 65536):
        for k in (1, 2):
            for d in (-1, 0, 1):
                out.append(c * k + d)
    return sorted(set(out))


def write_sparse(path, rng, pieces, total):
    """pieces: list of (offset, length) of data; the rest is holes."""
    with open(path, "wb") as f:
        for off, length in pieces:
            f.seek(off)
            if rng.random() < 0.5:
                f.write(text_bytes(rng, length))
            else:
                f.write(random_bytes(rng, length))
        f.truncate(total)


def make_tree(top, seed, kind):
    rng = random.Random(seed * 7919 + (0 if kind == "base" else 1))
    os.makedirs(top, exist_ok=True)
    pre = "" if kind == "base" else "add_"
    dirs = [top]
    # nested folders, 4 deep at most
    for i in range(6):
        parent = rng.choice(dirs)
        if parent.count(os.sep) - top.count(os.sep) >= 4:
            parent = top
        d = os.path.join(parent, "%sd%d" % (pre, i))
        os.makedirs(d, exist_ok=True)
        dirs.append(d)
    files = []

    def newfile(name, data, where=None):
        p = os.path.join(where or rng.choice(dirs), pre + name)
        with open(p, "wb") as f:
            f.write(data)
        files.append(p)
        return p

    # sizes across cluster boundaries, text and incompressible
    for n in sizes_across_clusters():
        if kind == "add" and rng.random() < 0.5:
            continue
        newfile("text_%d" % n, text_bytes(rng, n))
        newfile("rand_%d" % n, random_bytes(rng, n))
    # multi-cluster compressible files past 64K
    for n in (65536 * 3 + 17, 200001, 300000 + rng.randint(0, 9999)):
        newfile("big_%d" % n, text_bytes(rng, n))
    # a file whose first cluster does not compress and whose rest does
    newfile("mixed_%d" % 140000,
            random_bytes(rng, 65536) + text_bytes(rng, 140000 - 65536))
    # small and empty files
    for i in range(24 if kind == "base" else 10):
        n = rng.choice([0, 0, 1, 2, 17, 100, 511, 1000, 3000])
        newfile("small_%d" % i, text_bytes(rng, n))
    # sparse files: leading holes (hole then data), several holes
    sp = []
    for i, (lead, dlen, total) in enumerate([
            (4096, 100, None), (65536, 5000, None), (65536 + 1, 70000, None),
            (1200000, 4096, None), (131072, 1, 400000),
            (rng.randint(1, 300000), rng.randint(1, 100000), None)]):
        total = total or lead + dlen
        p = os.path.join(rng.choice(dirs), "%ssparse_lead%d" % (pre, i))
        write_sparse(p, rng, [(lead, dlen)], total)
        files.append(p)
        sp.append(p)
    for i in range(3):
        pieces, off = [], rng.randint(0, 1) * rng.randint(1, 200000)
        for _ in range(rng.randint(2, 4)):
            length = rng.randint(1, 40000)
            pieces.append((off, length))
            off += length + rng.randint(1, 150000)
        p = os.path.join(rng.choice(dirs), "%ssparse_holes%d" % (pre, i))
        write_sparse(p, rng, pieces, off)
        files.append(p)
    # the layout the kernel panics on (doc/kernel.md §2.1): in key order, a
    # file with leading holes right after a file stored as extents (in
    # conv mode an incompressible multi-cluster file stays an ordinary
    # file); alone in their folder, the two bodies are neighbours
    for i, (alen, lead, dlen) in enumerate([(200000, 131072, 5000),
                                            (70000, 65536 * 3 + 1, 70000)]):
        d = os.path.join(top, "%spair%d" % (pre, i))
        os.makedirs(d, exist_ok=True)
        files.append(os.path.join(d, "a_extent"))
        with open(files[-1], "wb") as f:
            f.write(random_bytes(rng, alen))
        p = os.path.join(d, "b_sparse")
        write_sparse(p, rng, [(lead, dlen)], lead + dlen)
        files.append(p)
        sp.append(p)
    # a file of zeros (written, not a hole)
    newfile("zeros_70000", b"\0" * 70000)
    # symlinks: relative, absolute-looking, dangling
    os.symlink(os.path.basename(files[0]),
               os.path.join(os.path.dirname(files[0]), pre + "link_rel"))
    os.symlink("/nowhere/at/all", os.path.join(top, pre + "link_dangling"))
    os.symlink("x" * 200, os.path.join(rng.choice(dirs), pre + "link_long"))
    # hard links, one in another folder
    src = rng.choice([f for f in files if os.path.getsize(f) > 0])
    os.link(src, os.path.join(rng.choice(dirs), pre + "hard1"))
    os.link(src, os.path.join(rng.choice(dirs), pre + "hard2"))
    src2 = rng.choice(sp)
    os.link(src2, os.path.join(top, pre + "hard_sparse"))
    # a fifo
    os.mkfifo(os.path.join(rng.choice(dirs), pre + "fifo"))
    # modes, owners and times
    can_chown = os.geteuid() == 0
    for p in sorted(files):
        mode = rng.choice([0o644, 0o600, 0o755, 0o640, 0o444, 0o4755])
        if can_chown and rng.random() < 0.3:
            os.chown(p, rng.randint(1, 60000), rng.randint(1, 60000))
        os.chmod(p, mode)
    for root, ds, fs in os.walk(top, topdown=False):
        for n in fs + ds:
            p = os.path.join(root, n)
            t = BASE_TIME + rng.randint(0, 10 ** 8)
            os.utime(p, (t, t), follow_symlinks=False)
    os.utime(top, (BASE_TIME, BASE_TIME))


def sha256_file(p):
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def manifest(top):
    rows = []
    for root, ds, fs in os.walk(top):
        for n in ds + fs:
            p = os.path.join(root, n)
            rel = os.path.relpath(p, top)
            st = os.lstat(p)
            m = st.st_mode
            if stat.S_ISREG(m):
                t, size, h, nl = "f", st.st_size, sha256_file(p), st.st_nlink
            elif stat.S_ISDIR(m):
                t, size, h, nl = "d", "-", "-", "-"
            elif stat.S_ISLNK(m):
                tgt = os.readlink(p).encode()
                t, size, h = "l", len(tgt), hashlib.sha256(tgt).hexdigest()
                nl = st.st_nlink
            elif stat.S_ISFIFO(m):
                t, size, h, nl = "p", 0, "-", st.st_nlink
            else:
                t, size, h, nl = "?", st.st_size, "-", st.st_nlink
            rows.append("\t".join(str(x) for x in (
                rel, t, size, "%o" % stat.S_IMODE(m), nl, st.st_uid,
                st.st_gid, int(st.st_mtime), h)))
    rows.sort()
    sys.stdout.write("".join(r + "\n" for r in rows))


def guest_manifest(find_txt, sha_txt):
    """The manifest from what the guest printed: find -printf
    '%P\t%y\t%s\t%m\t%n\t%U\t%G\t%T@\t%l\n' and sha256sum of every
    regular file (paths ./NAME)."""
    sums = {}
    with open(sha_txt, encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            h, _, p = line.rstrip("\n").partition("  ")
            sums[p[2:] if p.startswith("./") else p] = h
    rows = []
    with open(find_txt, encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            rel, y, size, mode, nl, uid, gid, mt, tgt = \
                line.rstrip("\n").split("\t")
            mt = mt.split(".")[0]
            if y == "f":
                row = (rel, "f", size, mode, nl, uid, gid, mt,
                       sums.get(rel, "unread"))
            elif y == "d":
                row = (rel, "d", "-", mode, "-", uid, gid, mt, "-")
            elif y == "l":
                b = tgt.encode("utf-8", "surrogateescape")
                row = (rel, "l", size, mode, nl, uid, gid, mt,
                       hashlib.sha256(b).hexdigest())
            elif y == "p":
                row = (rel, "p", "0", mode, nl, uid, gid, mt, "-")
            else:
                row = (rel, "?", size, mode, nl, uid, gid, mt, "-")
            rows.append("\t".join(row))
    rows.sort()
    sys.stdout.write("".join(r + "\n" for r in rows))


def main(argv):
    if len(argv) == 4 and argv[1] == "guest":
        guest_manifest(argv[2], argv[3])
        return 0
    if len(argv) >= 4 and argv[1] == "tree":
        kind = "base"
        if len(argv) >= 6 and argv[4] == "--kind":
            kind = argv[5]
        make_tree(argv[2], int(argv[3]), kind)
        return 0
    if len(argv) == 3 and argv[1] == "manifest":
        manifest(argv[2])
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
