#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Hangs as a test stuck in the kernel would: a 64 MiB direct read of a
# null_blk throttled to 1 MB/s waits in D state for a minute, and the
# guest's per-test timeout is stopped.  The host must give up on the guest,
# kill it, and show the stuck read's stack.

d=/sys/kernel/config/nullb/hang

modprobe null_blk nr_devices=0
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
mkdir "$d" && echo 128 >"$d/size" && echo 1 >"$d/mbps" &&
	echo 1 >"$d/power"
for _ in $(seq 50); do
	[ -b /dev/hang ] && break
	sleep 0.1
done
dd if=/dev/hang of=/dev/null bs=64M count=1 iflag=direct &

kill -STOP "$PPID"
sleep infinity
