#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/noise.py DIR BYTES: files of 20 to 200 KB of noise in DIR (h0,
# h1, ...) until they take BYTES in 4096-byte blocks; the same files on
# every run (fixed seeds). It fills an image nearly full for the
# repacker's test and bench (tests/bats/repacker.bats, bench/repack.sh).
import random
import sys

sizes, noise = random.Random(4), random.Random(5)
tot = i = 0
while tot < int(sys.argv[2]):
    n = sizes.randint(20000, 200000)
    tot += (n + 4095) // 4096 * 4096
    with open("%s/h%d" % (sys.argv[1], i), "wb") as f:
        f.write(noise.randbytes(n))
    i += 1
