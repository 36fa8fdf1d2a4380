#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Hangs as a test stuck in the kernel would: a 64 MiB direct read of a
# null_blk throttled to 1 MB/s waits in D state for a minute, and the
# guest's per-test timeout is stopped.  The host must give up on the guest,
# kill it, and show the stuck read's stack.
#
# The timeout is stopped first, before the set-up, which took 6 s and more
# on a loaded host, longer than the 5 s of the test bed's self-test: the
# timeout then ended the test before it hung, or the guest printed its
# blocked tasks before the read was stuck.  It prints them after 15 s.
#
# rnbd-vm: timeout=15

d=/sys/kernel/config/nullb/hang

kill -STOP "$PPID"
modprobe null_blk nr_devices=0
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
mkdir "$d" && echo 128 >"$d/size" && echo 1 >"$d/mbps" &&
	echo 1 >"$d/power"
for _ in $(seq 50); do
	[ -b /dev/hang ] && break
	sleep 0.1
done
dd if=/dev/hang of=/dev/null bs=64M count=1 iflag=direct &

sleep infinity
