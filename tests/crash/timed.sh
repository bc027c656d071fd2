#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Run one part of make crashcheck and print how long it took, so that a
# CI log shows where the crash checks spend their time:
#   timed.sh NAME COMMAND...  ->  "crash part NAME: ok|FAILED in N s"
name=$1
shift
start=$(date +%s)
"$@"
rc=$?
if [ "$rc" -eq 0 ]; then res=ok; else res=FAILED; fi
echo "crash part $name: $res in $(( $(date +%s) - start )) s"
exit "$rc"
