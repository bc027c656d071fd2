# SPDX-License-Identifier: GPL-2.0-or-later
# The keep-subset points of a workload (tests/crash/crashtest.sh,
# repair.sh, undo.sh). Input: the write count at each of its syncs, one
# a line (R4_FAULT_SYNCS). Output: "K HELD" for the last write K before
# a sync whose window (the writes since the sync before) holds two
# writes or more, HELD the writes held before K; spread over at most k
# of them (-v k=N; 0 or unset: all). A window of one write is left out:
# keep-subset there leaves what cut-after does. A sync left out of the
# code merges two windows, so its point is never skipped.
$1 > prev {
	if ($1 - prev >= 2) {
		p[++n] = $1
		h[n] = $1 - prev - 1
	}
	prev = $1
}
END {
	if (!k || k >= n) {
		for (i = 1; i <= n; i++)
			print p[i], h[i]
		exit
	}
	for (i = 0; i < k; i++) {
		j = 1 + int(i * (n - 1) / (k > 1 ? k - 1 : 1))
		if (j != last)
			print p[j], h[j]
		last = j
	}
}
