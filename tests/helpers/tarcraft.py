#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# tarcraft.py DIR: writes crafted tar archives into DIR for the tests that
# compare r4pack's own tar header reader with libarchive's
# (pack-tarread.bats): every header kind the own reader takes (ustar,
# GNU, pax 'x' and 'g', 'L', 'K'), the ones it hands to libarchive one
# entry at a time (other types, sparse files, ACLs, charsets, Mac "._"
# names, odd numbers), between ordinary entries on both sides so that
# the reader must come back from libarchive, and damaged or cut ones.
import os
import sys

BS = 512


def num(v, n):
    """An octal field of n bytes: n-1 digits and a NUL."""
    return (b'%0*o' % (n - 1, v)) + b'\0'


def b256(v, n):
    return bytes([0x80]) + v.to_bytes(n - 1, 'big')


def hdr(name, t=b'0', size=0, mode=0o644, uid=1000, gid=1000,
        mtime=1600000000, link=b'', magic=b'ustar\x0000', prefix=b'',
        major=0, minor=0, gnu_times=None, raw=None, signed=False,
        badsum=False):
    """One 512-byte header; raw: {offset: bytes} written over the fields
    before the checksum is computed."""
    h = bytearray(BS)
    h[0:len(name)] = name
    h[100:108] = num(mode, 8)
    h[108:116] = num(uid, 8)
    h[116:124] = num(gid, 8)
    h[124:136] = size if isinstance(size, bytes) else num(size, 12)
    h[136:148] = num(mtime, 12)
    h[156:157] = t
    h[157:157 + len(link)] = link
    h[257:265] = magic
    h[265:269] = b'root'
    h[297:301] = b'root'
    h[329:337] = num(major, 8)
    h[337:345] = num(minor, 8)
    if magic.startswith(b'ustar\0'):
        h[345:345 + len(prefix)] = prefix
    elif gnu_times:
        h[345:357] = num(gnu_times[0], 12)
        h[357:369] = num(gnu_times[1], 12)
    for off, b in (raw or {}).items():
        h[off:off + len(b)] = b
    h[148:156] = b' ' * 8
    if signed:
        s = sum((x - 256 if x > 127 else x) for x in h)
    else:
        s = sum(h)
    if badsum:
        s += 1
    h[148:156] = b'%06o\0 ' % (s & 0o777777)
    return bytes(h)


def pad(b):
    return b + b'\0' * (-len(b) % BS)


def data(size, seed=1):
    return bytes((i * 7 + seed) & 0xff for i in range(size))


def pax(recs, t=b'x', name=b'PaxHeader'):
    body = b''
    for k, v in recs:
        line = k + b'=' + v + b'\n'
        n = len(line) + 2
        while len(b'%d ' % n) + len(line) != n:
            n += 1
        body += b'%d ' % n + line
    return hdr(name, t, len(body)) + pad(body)


def special(t, body, name=b'././@LongLink'):
    return hdr(name, t, len(body), magic=b'ustar  \0') + pad(body)


def gnu(name, **kw):
    kw.setdefault('magic', b'ustar  \0')
    return hdr(name, **kw)


def entry(h, d=b''):
    return h + pad(d)


END = b'\0' * (2 * BS)


def plain(i, gnu_hdr=False):
    """An ordinary file and directory, for around the odd entries."""
    mk = gnu if gnu_hdr else hdr
    return (entry(mk(b'p%d/' % i, t=b'5', mode=0o755)) +
            entry(mk(b'p%d/f' % i, size=700 + i), data(700 + i, i)))


def basics():
    out = {}
    g = b''
    g += entry(gnu(b'd/', t=b'5', mode=0o755))
    for i, n in enumerate([0, 1, 511, 512, 513, 5000, 70000]):
        g += entry(gnu(b'd/f%d' % i, size=n, mode=0o600 + i,
                       gnu_times=(1600000100 + i, 1600000200 + i) if i % 2
                       else None), data(n, i))
    g += entry(gnu(b'd/sym', t=b'2', link=b'f1'))
    g += entry(gnu(b'd/hard', t=b'1', link=b'd/f2'))
    g += entry(gnu(b'd/hard2', t=b'1', link=b'd/f3', size=99))
    g += entry(gnu(b'd/chr', t=b'3', major=4, minor=64))
    g += entry(gnu(b'd/blk', t=b'4', major=8, minor=1))
    g += entry(gnu(b'd/fifo', t=b'6'))
    g += entry(gnu(b'd/dirsize/', t=b'5', size=1024))
    long = b'd/' + b'n' * 150 + b'/' + b'x' * 200
    g += special(b'L', long + b'\0') + entry(gnu(long[:100], size=3), b'abc')
    g += special(b'K', b'd/' + b't' * 300 + b'\0') + \
        entry(gnu(b'd/longsym', t=b'2', link=b'short'))
    g += special(b'K', b'd/f4\0') + entry(gnu(b'd/longhard', t=b'1'))
    g += entry(gnu(b'd/suid', size=4, mode=0o4755, uid=0, gid=0), b'suid')
    # names as they are (bytes not in ASCII, control bytes)
    g += entry(gnu(b'd/na\xefve', size=2), b'na')
    g += entry(gnu(b'd/caf\xc3\xa9\x01\n', size=1), b'c')
    g += entry(gnu(b'd/symna', t=b'2', link=b'na\xefve'))
    g += special(b'L', b'd/' + b'\xc3\xa9' * 80 + b'\0') + \
        entry(gnu(b'd/short', size=1), b'L')
    g += entry(gnu(b'd/b256', size=b256(10, 12), uid=0), data(10))
    g += entry(gnu(b'd/bigid', size=1, raw={108: b256(5 << 32, 8)}), b'x')
    g += entry(gnu(b'd/blanks', size=2, raw={124: b'    2      \0',
                                            100: b'  755 \0\0'}), b'hi')
    out['gnu-basic'] = g + END
    u = b''
    u += entry(hdr(b'u/', t=b'5', mode=0o755))
    u += entry(hdr(b'name', prefix=b'u/' + b'p' * 90, size=20), data(20))
    u += entry(hdr(b'/name2', prefix=b'u/q/', size=0))
    u += entry(hdr(b'u/nomagicver', size=5, magic=b'ustar\0xx'), b'hello')
    u += entry(hdr(b'u/dev', t=b'3', major=1, minor=3))
    u += entry(hdr(b'u/link', t=b'1', link=b'u/nomagicver'))
    u += entry(hdr(b'u/zero', t=b'\0', size=3), b'zzz')
    out['ustar-prefix'] = u + END
    return out


def paxes():
    out = {}
    p = pax([(b'comment', b'global')], t=b'g') + plain(0)
    p += pax([(b'path', b'px/' + b'long' * 40), (b'mtime', b'1600000000.5'),
              (b'atime', b'1600000001.123456789123'), (b'ctime', b'1600000002.'),
              (b'uid', b'70000'), (b'gid', b'5000000000'),
              (b'uname', b'someone'), (b'gname', b'group')])
    p += entry(hdr(b'px/short', size=33), data(33))
    p += pax([(b'SCHILY.xattr.user.a', b'1'),
              (b'SCHILY.xattr.security.capability', b'\x01\x00\x00\x02\0\0'),
              (b'SCHILY.xattr.user.b', b'x\ny')])
    p += entry(hdr(b'px/xattrs', size=4), b'data')
    p += pax([(b'linkpath', b'px/' + b'target' * 30)])
    p += entry(hdr(b'px/sym', t=b'2', link=b'cut'))
    p += pax([(b'linkpath', b'px/xattrs')]) + entry(hdr(b'px/hl', t=b'1',
                                                       link=b'x'))
    p += pax([(b'size', b'1000')]) + entry(hdr(b'px/paxsize', size=0),
                                           data(1000))
    p += pax([(b'SCHILY.devmajor', b'300'), (b'SCHILY.devminor', b'70000')])
    p += entry(hdr(b'px/bigdev', t=b'4'))
    p += pax([(b'mtime', b'99'), (b'path', b'')]) + \
        entry(hdr(b'px/emptypath', size=1), b'e')
    p += entry(hdr(b'px/after', t=b'1', link=b'px/xattrs', size=7), data(7))
    p += pax([(b'comment', b'mid')], t=b'g') + plain(1)
    p += pax([(b'SCHILY.dev', b'1'), (b'SCHILY.ino', b'2'),
              (b'SCHILY.nlink', b'3'), (b'charset', b'x')])
    p += entry(hdr(b'px/ignored', size=2), b'ig')
    out['pax-basic'] = p + END
    # pax headers at every place in the reader's window (a body read
    # over the window that holds its header), bodies long and short
    w = plain(0)
    for i in range(80):
        path = b'pw/' + b'/'.join([b'%d-d' % i] * (1 + (i * 37) % 90))
        w += pax([(b'path', path), (b'mtime', b'%d.%d' % (1600000000 + i, i))])
        n = (i * 1499) % 40000 if i % 4 == 3 else (i * 523) % 3000
        w += entry(hdr(b'pw/f%d' % i, size=n), data(n, i))
    out['pax-window'] = w + END
    # taken by the own reader too: a pax size on a directory (its data
    # skipped), an id field of digits without a NUL
    out['pax-extra'] = (plain(0) + pax([(b'size', b'600')]) +
                        entry(hdr(b'o/pds/', t=b'5'), data(600)) +
                        entry(hdr(b'o/bigid', size=1,
                                  raw={108: b'77777777'}), b'i') + END)
    # an empty link after one was read: "" to libarchive, an error
    out['pax-emptysym'] = p + entry(hdr(b'px/emptysym', t=b'2')) + END
    out['pax-emptyhard'] = p + entry(hdr(b'px/emptyhard', t=b'1')) + END
    return out


# Odd entries, each between plain ones (libarchive reads them alone).
ODD = {
    'type7': lambda: entry(hdr(b'o/contig', t=b'7', size=5), b'seven'),
    'typeD': lambda: entry(gnu(b'o/gnudir', t=b'D')),
    'sparseS': lambda: entry(gnu(b'o/sparse', t=b'S', size=512,
                                 raw={386: num(4096, 12), 398: num(512, 12),
                                      483: num(8192, 12)}), data(512)),
    'paxsparse': lambda: pax([(b'GNU.sparse.major', b'1'),
                              (b'GNU.sparse.minor', b'0'),
                              (b'GNU.sparse.name', b'o/ps'),
                              (b'GNU.sparse.realsize', b'3000')]) +
    entry(hdr(b'o/GNUSparseFile.0/ps', size=1024),
          pad(b'1\n0\n512\n') + data(512)),
    'acl': lambda: pax([(b'SCHILY.acl.access', b'user::rw-,group::r--,other::r--,user:1:r--,mask::r--')]) +
    entry(hdr(b'o/acl', size=1), b'a'),
    'hdrcharset': lambda: pax([(b'hdrcharset', b'BINARY'),
                               (b'path', b'o/bin\xe9')]) +
    entry(hdr(b'o/b', size=1), b'b'),
    'utf8pax': lambda: pax([(b'path', b'o/caf\xc3\xa9')]) +
    entry(hdr(b'o/c', size=1), b'c'),
    'mac': lambda: entry(hdr(b'o/._mac', size=3), b'mac') +
    entry(hdr(b'o/mac', size=3), b'MAC'),
    'slash': lambda: entry(hdr(b'o/regslash/', size=0)),
    'signedsum': lambda: entry(hdr(b'o/signed', size=1, signed=True,
                                   raw={265: b'\xe9t\xe9'}), b's'),
    'ustarhard': lambda: entry(hdr(b'o/uh', t=b'1', link=b'p0/f', size=3),
                               b'') ,
    'libxattr': lambda: pax([(b'LIBARCHIVE.xattr.user.q', b'YWJj')]) +
    entry(hdr(b'o/lx', size=1), b'l'),
    'rht': lambda: pax([(b'RHT.security.selinux', b'system_u:object_r:x')]) +
    entry(hdr(b'o/se', size=1), b's'),
    'fflags': lambda: pax([(b'SCHILY.fflags', b'nodump')]) +
    entry(hdr(b'o/ff', size=1), b'f'),
    'xandL': lambda: special(b'L', b'o/fromL\0') +
    pax([(b'path', b'o/fromx')]) + entry(hdr(b'o/xl', size=1), b'x'),
    'twoL': lambda: special(b'L', b'o/first\0') +
    special(b'L', b'o/second\0') + entry(gnu(b'o/2l', size=1), b'2'),
    'emptyL': lambda: special(b'L', b'\0') + entry(gnu(b'o/el', size=1),
                                                    b'e'),
    'negtime': lambda: pax([(b'mtime', b'-5.5')]) +
    entry(hdr(b'o/neg', size=1), b'n'),
    'junknum': lambda: entry(hdr(b'o/junk', size=2,
                                 raw={100: b'0644x\0\0\0'}), b'jj'),
    'b256neg': lambda: entry(gnu(b'o/negmt', size=1,
                                 raw={136: b'\xff' * 12}), b'm'),
    'paxjunk': lambda: pax([(b'uid', b'12a')]) +
    entry(hdr(b'o/pj', size=1), b'j'),
    'paxunknown': lambda: pax([(b'foo.bar', b'1')]) +
    entry(hdr(b'o/pu', size=1), b'u'),
    'v7': lambda: entry(hdr(b'o/v7', size=4, magic=b'\0' * 8), b'v7v7'),
    'volume': lambda: entry(gnu(b'VOLNAME', t=b'V')),
    'symempty': lambda: entry(hdr(b'o/se2', t=b'2')),
    'hardempty': lambda: entry(hdr(b'o/he', t=b'1')),
    'Kreg': lambda: special(b'K', b'o/kk\0') + entry(gnu(b'o/kreg',
                                                          size=1), b'k'),
    'paxlinkreg': lambda: pax([(b'linkpath', b'o/zz')]) +
    entry(hdr(b'o/plr', size=1), b'p'),
    'realsize': lambda: entry(gnu(b'o/rs', size=1,
                                  raw={483: num(5, 12)}), b'r'),
    'malformedpax': lambda: hdr(b'PaxHeader', b'x', 8) +
    pad(b'9 path=q\n') + entry(hdr(b'o/mp', size=1), b'm'),
    'nullname': lambda: entry(hdr(b'', size=1, raw={1: b'x'}), b'n'),
}


def odds():
    out = {}
    for k, f in ODD.items():
        out['odd-' + k] = plain(0) + f() + plain(1, True) + plain(2) + END
    allodd = plain(0)
    for i, (k, f) in enumerate(ODD.items()):
        if k not in ('symempty', 'hardempty'):     # errors: tested alone
            allodd += f() + plain(10 + i, i % 2 == 1)
    out['odd-all'] = allodd + END
    # more odd entries than the own reader hands over one by one: the
    # rest of the archive read by libarchive
    many = plain(0)
    for i in range(60):
        many += ODD['utf8pax']() + plain(100 + i, i % 2 == 1)
    out['odd-many'] = many + END
    # a link libarchive read (an entry left to it before its own header:
    # two 'L'), plain entries, then an empty one: "" to libarchive once a
    # link was read
    out['odd-linkcarry'] = (plain(0) + special(b'L', b'o/l1\0') +
                            special(b'L', b'o/l2\0') +
                            entry(gnu(b'o/s', t=b'2', link=b'tgt')) +
                            plain(1) + entry(hdr(b'o/empty', t=b'2')) + END)
    return out


def review():
    """A review's cases: a link only from a pax linkpath or a 'K' with
    the header's own field empty, no link read before (libarchive 3.6
    drops it); what libarchive carries past an odd entry (the pax state,
    a link text read) to a ustar hard link with a size or an empty one."""
    out = {}
    f1 = entry(hdr(b'a', size=5), data(5))
    f2 = entry(hdr(b'b', size=3), data(3, 2))
    p1 = pax([(b'mtime', b'1.5')]) + f1
    fflags = pax([(b'SCHILY.fflags', b'nodump')])
    cases = {
        'symlinkpath': pax([(b'linkpath', b'a')]) + entry(hdr(b'l', b'2')),
        'hardlinkpath': pax([(b'linkpath', b'a')]) + entry(hdr(b'h', b'1')),
        'symK': special(b'K', b'a\0') + entry(hdr(b'l', b'2')),
        'hardK': special(b'K', b'a\0') + entry(hdr(b'h', b'1')),
        'Klinkpath': special(b'K', b'kk\0') + pax([(b'linkpath', b'pl')]) +
        entry(hdr(b's', b'2', link=b'u')),
        'emptyhard-linked': entry(hdr(b's', b'2', link=b'a')) + fflags +
        entry(hdr(b'h', b'1')),
        'emptyhard-v7': entry(hdr(b's', b'2', link=b'a')) +
        entry(hdr(b'h', b'1', raw={257: b'xxxxx'})),
    }
    for k, v in cases.items():
        out['odd-rv-' + k] = f1 + v + f2 + END
    # in a pax archive: an odd hard link with a size; a ustar one with a
    # size after an odd entry; an odd empty one with a size after a link
    out['odd-rv-pax-hardsize'] = (p1 + entry(hdr(b'h', b'1', size=4, link=b'a',
                                                  raw={100: b'0000644x'}),
                                             b'abcd') + f2 + END)
    out['odd-rv-pax-then-hard'] = (p1 + entry(hdr(b'o', b'7')) +
                                   entry(hdr(b'h', b'1', size=4, link=b'a'),
                                         b'abcd') + f2 + END)
    out['odd-rv-emptyhard-size'] = (p1 + entry(hdr(b's', b'2', link=b'a')) +
                                    fflags + entry(hdr(b'h', b'1', size=4),
                                                   b'abcd') + f2 + END)
    # the same as the first after a link was read: the own reader's
    out['rv-symlinkpath-linked'] = (f1 + entry(hdr(b's0', b'2', link=b'a')) +
                                    pax([(b'linkpath', b'a')]) +
                                    entry(hdr(b'l', b'2')) + f2 + END)
    out['rv-pax-hardsize'] = (p1 + entry(hdr(b'h', b'1', size=4, link=b'a'),
                                         b'abcd') + f2 + END)
    return out


def damaged():
    out = {}
    good = plain(0) + plain(1) + plain(2)
    out['dmg-badsum'] = plain(0) + hdr(b'bad', size=3, badsum=True) + \
        pad(b'bad') + plain(1) + END
    out['dmg-noend'] = good
    out['dmg-oneblock'] = good + b'\0' * BS
    out['dmg-trailer'] = good + END + b'garbage after the end' * 30
    out['dmg-zerofirst'] = plain(0) + hdr(b'', size=0,
                                          raw={10: b'y'}) + plain(1) + END
    out['dmg-bigL'] = plain(0) + special(b'L', b'a' * (1 << 20) + b'b\0') + \
        entry(gnu(b'x', size=1), b'x') + END
    out['dmg-hugesize'] = plain(0) + entry(hdr(b'huge',
                                               size=b256(1 << 61, 12))) + END
    for cut in [len(good) - 5, len(good) - 300, len(good) - 700,
                len(plain(0)) + 100, len(plain(0)) + 600]:
        out['dmg-cut%d' % cut] = good[:cut]
    xl = plain(0) + pax([(b'path', b'z' * 200)])
    out['dmg-cutpax'] = xl[:-100]
    out['dmg-cutafterpax'] = xl
    out['dmg-endinseq'] = plain(0) + special(b'L', b'o/x\0') + END
    return out


def main():
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    allv = {}
    for f in (basics, paxes, odds, review, damaged):
        allv.update(f())
    for k, v in allv.items():
        with open(os.path.join(d, k + '.tar'), 'wb') as fh:
            fh.write(v)


main()
