#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# A seeded random file system workload, run on two trees at once (an
# r4mount -o rw mount and a tmpfs mirror): every operation goes to both
# and must succeed on both or fail with the same errno on both.
#
#   fsworkload.py run SEED NOPS DIR_A DIR_B [SYNCLOG]
#       SYNCLOG: after each fsync, "path sha256" of the file synced;
#       FSWL_NO_FSYNC=1 in the environment: no fsync at all
#       FSWL_STATES=DIR: DIR/state.0 is DIR_B's contents (times left
#       out) at the start, DIR/state.K before the K-th fsync; DIR/synced
#       gets a line "K" once that fsync returned (for kill -9 tests)
#       (operations: create, write, truncate, fallocate (modes 0 and
#       KEEP_SIZE), mkdir, rename, exchange, link, unlink, rmdir,
#       symlink, chmod, utime, fsync)
#   fsworkload.py stamp SEED DIR_A DIR_B   fixed times on everything
#   fsworkload.py compare DIR_A DIR_B      exit 1 on a difference
#   fsworkload.py states DIR DIR_STATES    exit 0 when DIR holds the
#       state of the last fsync that returned, or of the one after it
#       (in flight when the daemon died)
import hashlib
import json
import os
import random
import stat
import sys


def scan(root):
    files, dirs = [], ['']
    for d, dn, fn in os.walk(root):
        rel = os.path.relpath(d, root)
        rel = '' if rel == '.' else rel
        for n in dn:
            dirs.append(os.path.join(rel, n))
        for n in fn:
            files.append(os.path.join(rel, n))
    return sorted(files), sorted(dirs)


def both(roots, fn, rel, *more):
    """fn(path_in_root, *more) on every root; the errno (or None)."""
    res = []
    for r in roots:
        try:
            fn(os.path.join(r, rel) if rel else r, *more)
            res.append(None)
        except OSError as e:
            res.append(e.errno)
    if res[0] != res[1]:
        sys.exit('workload: %s %s: %s on %s, %s on %s' % (
            fn.__name__, rel, res[0], roots[0], res[1], roots[1]))
    return res[0]


def two(roots, fn, a, b):
    res = []
    for r in roots:
        try:
            fn(os.path.join(r, a), os.path.join(r, b))
            res.append(None)
        except OSError as e:
            res.append(e.errno)
    if res[0] != res[1]:
        sys.exit('workload: %s %s %s: %s on %s, %s on %s' % (
            fn.__name__, a, b, res[0], roots[0], res[1], roots[1]))
    return res[0]


def pwrite(path, off, data):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, data, off)
    finally:
        os.close(fd)


def fallocate(path, mode, off, length):
    """fallocate(2) on path (mode 0 or FALLOC_FL_KEEP_SIZE, 1)."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64,
                               ctypes.c_int64]
    fd = os.open(path, os.O_WRONLY)
    try:
        if libc.fallocate(fd, mode, off, length):
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e), path)
    finally:
        os.close(fd)


def exchange(a, b):
    """renameat2(a, b, RENAME_EXCHANGE): the two names swap objects."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.renameat2(-100, os.fsencode(a), -100, os.fsencode(b), 2):
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), a)


def fsync(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class States:
    """FSWL_STATES: the mirror's contents at each fsync."""
    def __init__(self, root):
        self.dir = os.environ.get('FSWL_STATES')
        self.root, self.k = root, 0
        if self.dir:
            self.save()
            self.synced()

    def save(self):
        if self.dir:
            with open(os.path.join(self.dir, 'state.%d' % self.k), 'w') as h:
                json.dump(describe(self.root, False), h)

    def synced(self):
        if self.dir:
            with open(os.path.join(self.dir, 'synced'), 'a') as h:
                h.write('%d\n' % self.k)

    def fsync(self, roots, f):
        self.k += 1
        self.save()
        rc = both(roots, fsync, f)
        if rc is None:
            self.synced()
        return rc


def run(seed, nops, roots, synclog):
    rnd = random.Random(seed)
    files, dirs = scan(roots[1])
    st = States(roots[1])
    log = open(synclog, 'a') if synclog else None
    name = lambda: 'n%d' % rnd.randrange(60)
    for i in range(nops):
        op = rnd.choice(['create', 'write', 'write', 'write', 'truncate',
                         'mkdir', 'rename', 'rename', 'link', 'unlink',
                         'rmdir', 'symlink', 'chmod', 'utime', 'fsync',
                         'exchange', 'fallocate'])
        d = rnd.choice(dirs)
        f = rnd.choice(files) if files else None
        size = rnd.choice([0, 1, 100, 3000, 4096, 5000, 20000, 70000,
                           300000])
        data = rnd.randbytes(rnd.randrange(size + 1))
        if op == 'create' or (op in ('write', 'truncate', 'chmod', 'utime',
                                     'link', 'fsync') and not f):
            both(roots, pwrite, os.path.join(d, name()), 0, data)
        elif op == 'write':
            off = rnd.choice([0, rnd.randrange(100000), 1 << 20])
            both(roots, pwrite, f, off, data[:rnd.randrange(9000)])
        elif op == 'truncate':
            both(roots, os.truncate, f, rnd.randrange(200000))
        elif op == 'fallocate' and f and not os.path.islink(
                os.path.join(roots[1], f)):
            both(roots, fallocate, f, rnd.choice([0, 1]),
                 rnd.choice([0, rnd.randrange(300000)]),
                 1 + rnd.randrange(150000))
        elif op == 'mkdir':
            both(roots, os.mkdir, os.path.join(d, name()), 0o755)
        elif op == 'rename':
            src = f if rnd.random() < 0.7 or len(dirs) < 2 else \
                rnd.choice(dirs[1:])
            if src:
                two(roots, os.rename, src, os.path.join(d, name()))
        elif op == 'exchange' and f:
            a = f if rnd.random() < 0.7 or len(dirs) < 2 else \
                rnd.choice(dirs[1:])
            two(roots, exchange, a, rnd.choice(files + dirs[1:]))
        elif op == 'link':
            two(roots, os.link, f, os.path.join(d, name()))
        elif op == 'unlink' and f:
            both(roots, os.unlink, f)
        elif op == 'rmdir' and len(dirs) > 1:
            both(roots, os.rmdir, rnd.choice(dirs[1:]))
        elif op == 'symlink':
            two(roots, lambda a, b, t='t%d' % i: os.symlink(t, b),
                d or '.', os.path.join(d, name()))
        elif op == 'chmod':
            both(roots, os.chmod, f, rnd.choice([0o600, 0o644, 0o755,
                                                 0o4711, 0o400]))
        elif op == 'utime':
            t = rnd.randrange(1 << 31) * 10**9 + rnd.randrange(10**9)
            both(roots, lambda p, ns: os.utime(p, ns=ns), f, (t, t))
        elif op == 'fsync' and os.environ.get('FSWL_NO_FSYNC') != '1' \
                and not os.path.islink(
                os.path.join(roots[0], f)):
            if st.fsync(roots, f) is None and log:
                with open(os.path.join(roots[1], f), 'rb') as h:
                    log.write('%s %s\n' % (
                        f, hashlib.sha256(h.read()).hexdigest()))
                log.flush()
        files, dirs = scan(roots[1])
    fa, da = scan(roots[0])
    if (fa, da) != (files, dirs):
        sys.exit('workload: the names differ after the run')


def stamp(seed, roots):
    rnd = random.Random(seed)
    files, dirs = scan(roots[1])
    for p in files + sorted(dirs, key=len, reverse=True):
        t = rnd.randrange(1 << 31) * 10**9 + rnd.randrange(10**9)
        # symlinks too: their own times, else the two trees' creation
        # times may fall on both sides of a second
        for r in roots:
            os.utime(os.path.join(r, p), ns=(t, t), follow_symlinks=False)


def describe(root, times=True):
    out, inodes = {}, {}
    files, dirs = scan(root)
    for p in files + dirs:
        q = os.path.join(root, p) if p else root
        st = os.lstat(q)
        e = [stat.filemode(st.st_mode), st.st_uid, st.st_gid]
        if stat.S_ISLNK(st.st_mode):
            e.append(os.readlink(q))
        elif times:
            e.append(st.st_mtime_ns)
        if stat.S_ISREG(st.st_mode):
            with open(q, 'rb') as h:
                e += [st.st_size, st.st_nlink,
                      hashlib.sha256(h.read()).hexdigest()]
            inodes.setdefault(st.st_ino, []).append(p)
        out[p] = e
    return out, sorted(sorted(v) for v in inodes.values())


def compare(a, b):
    da, la = describe(a)
    db, lb = describe(b)
    bad = 0
    for p in sorted(set(da) | set(db)):
        if da.get(p) != db.get(p):
            print('differs: %r: %s | %s' % (p, da.get(p), db.get(p)))
            bad = 1
    if la != lb:
        print('hard link groups differ')
        bad = 1
    sys.exit(bad)


def states(root, sdir):
    with open(os.path.join(sdir, 'synced')) as h:
        k = int(h.read().split()[-1])
    got = json.loads(json.dumps(describe(root, False)))
    for c in (k, k + 1):
        path = os.path.join(sdir, 'state.%d' % c)
        if os.path.exists(path):
            with open(path) as h:
                if json.load(h) == got:
                    print('as at fsync %d' % c)
                    sys.exit(0)
    with open(os.path.join(sdir, 'state.%d' % k)) as h:
        want = json.load(h)[0]
    for p in sorted(set(want) | set(got[0])):
        if want.get(p) != got[0].get(p):
            print('differs from fsync %d: %r: %s | %s' % (
                k, p, got[0].get(p), want.get(p)))
    sys.exit(1)


if __name__ == '__main__':
    a = sys.argv
    if a[1] == 'run':
        run(int(a[2]), int(a[3]), a[4:6], a[6] if len(a) > 6 else None)
    elif a[1] == 'states':
        states(a[2], a[3])
    elif a[1] == 'stamp':
        stamp(int(a[2]), a[3:5])
    else:
        compare(a[2], a[3])
