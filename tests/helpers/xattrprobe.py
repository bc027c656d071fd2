#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# xattrprobe.py DIR: what a file system answers to the extended
# attribute calls, one line each, on a file, a directory and a symlink
# it makes in DIR (a writable mount): listxattr, getxattr, setxattr and
# removexattr of user., security. and system.posix_acl_
# names, and cp -a / cp --preserve=xattr of the file. Run on an r4mount
# -o rw mount and on the Reiser4 kernel's mount of the same volume, the
# outputs must be equal (tests/kernel/mount-rw.bats).
import errno
import os
import struct
import subprocess
import sys


# A valid access ACL (version 2: user::rw-, group::r--, other::r--), so
# that the VFS of a newer host kernel does not refuse the value before
# the file system is asked.
ACL = struct.pack('<IHHIHHIHHI', 2, 1, 6, 0xffffffff, 4, 4, 0xffffffff,
                  0x20, 4, 0xffffffff)


def res(fn, *a, **k):
    try:
        r = fn(*a, **k)
        return 'ok %r' % (r,) if r is not None else 'ok'
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def main(d):
    os.chdir(d)
    with open('xp_f', 'w') as h:
        h.write('x')
    os.mkdir('xp_d')
    os.symlink('xp_f', 'xp_l')
    for p in ('xp_f', 'xp_d', 'xp_l'):
        nf = p == 'xp_l'
        print(p, 'list', res(os.listxattr, p, follow_symlinks=not nf))
        for n in ('user.a', 'security.selinux',
                  'system.posix_acl_access'):
            print(p, 'get', n, res(os.getxattr, p, n, follow_symlinks=not nf))
            print(p, 'set', n, res(os.setxattr, p, n,
                                   ACL if 'acl' in n else b'v',
                                   follow_symlinks=not nf))
            print(p, 'remove', n, res(os.removexattr, p, n,
                                      follow_symlinks=not nf))
    for args in (['cp', '-a', 'xp_f', 'xp_c1'],
                 ['cp', '--preserve=xattr', 'xp_f', 'xp_c2'],
                 ['cp', '-a', '--preserve=xattr', 'xp_d', 'xp_c3']):
        r = subprocess.run(args, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        print(' '.join(args), 'exit', r.returncode,
              r.stdout.decode().replace(os.getcwd(), '.').strip())
    for p in ('xp_f', 'xp_c1', 'xp_c2'):
        os.unlink(p)
    os.unlink('xp_l')
    os.rmdir('xp_d')
    os.rmdir('xp_c3')


if __name__ == '__main__':
    main(sys.argv[1])
