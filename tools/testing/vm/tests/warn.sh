#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Passes by its own verdict but logs a kernel warning: the test bed must
# fail it.

echo "<4>WARNING: CPU: 0 PID: $$ at rnbd-vm/tests/warn.sh: planted by the test bed's self-test" >/dev/kmsg
echo "TAP version 13"
echo "1..1"
echo "ok 1 planted a warning"
