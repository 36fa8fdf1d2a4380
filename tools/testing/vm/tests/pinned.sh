#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Passes by its own verdict but leaves modules of ours loaded and in use:
# a process it leaves behind holds a debugfs file of the test module
# rtrs-bad-clt open (debugfs takes a reference on the module that owns an
# open file), so that rtrs-bad-clt and the rtrs-core it uses cannot
# unload.  The test bed must fail it, name the modules that would not
# unload, and boot the guest afresh for the tests after it.  Needs the test
# modules (make RNBD_TESTS=y, as make check builds them).
#
# rnbd-vm: timeout=60

mod=/sys/module/rtrs_bad_clt
modprobe rtrs-bad-clt server=ip:192.168.120.1 device=/dev/null || exit 1
# Its own session: it outlives the test whatever kills the test's group.
setsid sleep infinity </sys/kernel/debug/rtrs_bad_clt/cases \
	>/dev/null 2>&1 &
for _ in $(seq 50); do
	[ "$(cat "$mod/refcnt")" -gt 0 ] && break
	sleep 0.1
done
echo "TAP version 13"
echo "1..1"
if [ "$(cat "$mod/refcnt")" -gt 0 ]; then
	echo "ok 1 rtrs-bad-clt is in use"
else
	echo "not ok 1 rtrs-bad-clt is in use: refcnt $(cat "$mod/refcnt")"
	exit 1
fi
