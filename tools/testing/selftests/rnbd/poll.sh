#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Polled queues, in one guest: a null_blk mapped over both paths with
# nr_poll_queues=1 has a polled hardware queue; fio with io_uring's IOPOLL
# writes and verifies it (crc32c) through that queue, also while each path
# in turn, then both at once, are disconnected and reconnected, and the
# server's disk holds what the client read.  A device of the same session
# must ask for as many polled queues; nr_poll_queues=-1 is one per CPU.
#
# rnbd-vm: topology=one

. "$(dirname "$0")/lib.sh"

SESSNAME=poll
NULLB=pollnull
LOOP_FILE=/dev/shm/rnbd-poll.img
CTL=/sys/devices/virtual/rnbd-client/ctl
DEBUGFS=/sys/kernel/debug
TRACEFS=/sys/kernel/tracing
# A return probe of rtrs_clt_poll(): what each poll reaped.
KPROBE=rnbd_selftest_poll
RUN=/tmp/rnbd-poll
NR_CPU_IDS=$(rnbd_nr_cpu_ids)
# The polled queue comes after one per CPU.
POLL_HCTX=hctx$NR_CPU_IDS
DEV=
LOOP=

paths() {
	local i opts=

	for i in $(seq 0 $((RNBD_NR_PATHS - 1))); do
		opts+=" path=ip:$(rnbd_path_addr "$i" server)"
	done
	echo "$opts"
}

setup() {
	rnbd_rdma_up || { echo "rxe did not come up"; return 1; }
	rnbd_nullb_up "$NULLB" 64 || { echo "no null_blk"; return 1; }
	LOOP=$(rnbd_loop_up "$LOOP_FILE" 16) || { echo "no loop device"; return 1; }
	mountpoint -q "$DEBUGFS" || mount -t debugfs none "$DEBUGFS" || return 1
	# With both paths down, IO waits for them however long the kernel
	# takes to reconnect (the debug kernel, under load, half a minute):
	# path-loss.sh tests the timeout itself.
	modprobe rnbd-server && modprobe rnbd-client reconnect_timeout=600 &&
		poll_trace_on || return 1
	echo "sessname=$SESSNAME$(paths) device_path=/dev/$NULLB nr_poll_queues=1" \
		>"$CTL/map_device" || return 1
	DEV=$(rnbd_dev_of "$SESSNAME" "/dev/$NULLB")
}

setup_done() {
	[ -n "$DEV" ] && return 0
	cat "$RUN.setup"
	return 1
}

# What the device says of its queues: one polled, and the block layer polls.
poll_queues() {
	local hctx=$DEBUGFS/block/$DEV/$POLL_HCTX

	echo "nr_poll_queues $(cat "/sys/block/$DEV/rnbd/nr_poll_queues"), io_poll $(cat "/sys/block/$DEV/queue/io_poll"), $POLL_HCTX: $(cat "$hctx/type" 2>/dev/null)"
	[ "$(cat "/sys/block/$DEV/rnbd/nr_poll_queues")" = 1 ] &&
		[ "$(cat "/sys/block/$DEV/queue/io_poll")" = 1 ] &&
		[ "$(cat "$hctx/type")" = poll ] &&
		[ ! -e "$DEBUGFS/block/$DEV/hctx$((NR_CPU_IDS + 1))" ]
}

poll_trace_on() {
	mountpoint -q "$TRACEFS" || mount -t tracefs nodev "$TRACEFS" || return 1
	echo "r:$KPROBE rtrs_clt_poll ret=\$retval:s32" >>"$TRACEFS/kprobe_events" &&
		echo 'ret > 0' >"$TRACEFS/events/kprobes/$KPROBE/filter" &&
		echo 1 >"$TRACEFS/events/kprobes/$KPROBE/enable" &&
		echo 1 >"$TRACEFS/tracing_on"
}

poll_trace_off() {
	[ -e "$TRACEFS/events/kprobes/$KPROBE" ] || return 0
	echo 0 >"$TRACEFS/events/kprobes/$KPROBE/enable"
	echo "-:$KPROBE" >>"$TRACEFS/kprobe_events"
}

# The completions rtrs_clt_poll() reaped since the trace was last emptied.
polled_completions() {
	grep -o " ret=[0-9]*" "$TRACEFS/trace" |
		awk -F= '{ n += $2 } END { print n + 0 }'
}

# fio_polled RW BS SIZE OFFSET: io_uring with IOPOLL (hipri), 16 in flight,
# SIZE written at OFFSET in blocks of BS, read back and checked.
fio_polled() {
	timeout 300 fio --name=poll --filename="/dev/$DEV" --rw="$1" \
		--bs="$2" --size="$3" --offset="$4" --iodepth=16 \
		--ioengine=io_uring --hipri=1 --direct=1 --verify=crc32c \
		--do_verify=1 --verify_fatal=1 --randrepeat=0 \
		--verify_state_save=0
}

# polled_verify RW BS SIZE: a verified fio run whose IO completed by
# polling: each write and each read of the verify is answered on the
# polled connection, where only rtrs_clt_poll() reaps it.
polled_verify() {
	local ios out rc n

	ios=$((2 * $(numfmt --from=iec "${3^^}") / $(numfmt --from=iec "${2^^}")))
	: >"$TRACEFS/trace"
	out=$(fio_polled "$1" "$2" "$3" 0 2>&1)
	rc=$?
	grep -E '(read|write): IOPS=|err=' <<<"$out"
	[ $rc -eq 0 ] || { echo "fio exited with $rc"; tail -n 20 <<<"$out"; return 1; }
	n=$(polled_completions)
	echo "$ios IOs, $n completions reaped by polling"
	[ "$n" -ge "$ios" ]
}

# The client's and the server's view of the first MiBs fio wrote.
same_data() {
	local a b

	a=$(dd if="/dev/$DEV" bs=1M count=8 iflag=direct status=none | md5sum)
	b=$(dd if="/dev/$NULLB" bs=1M count=8 iflag=direct status=none | md5sum)
	[ "$a" = "$b" ] || { echo "rnbd: $a, server: $b"; return 1; }
}

# Polled fio runs one after the other over 4 MiB regions, until told to
# stop; a failed run is kept.
io_loop() {
	local n=0

	while [ ! -e "$RUN.stop" ]; do
		n=$((n + 1))
		fio_polled randwrite 4k 4M $(((n % 4) * 4))M >"$RUN.fio.$n" 2>&1 ||
			echo "$n" >>"$RUN.failed"
		echo "$n" >"$RUN.runs"
	done
}

# paths_are "PATH..." STATE: every one of those paths is in STATE.
paths_are() {
	local i

	for i in $1; do
		rnbd_path_is "$i" "$2" || return 1
	done
}

# path_cycle "PATH...": those paths disconnected for a while, then
# reconnected.
path_cycle() {
	local i runs

	for i in $1; do
		rnbd_path_ctl "$i" disconnect || return 1
	done
	rnbd_wait 30 paths_are "$1" disconnected ||
		{ echo "paths $1 did not disconnect"; return 1; }
	# With no path left no IO can complete, so no fio run may end.  A run
	# that completed its last IO just before the cut gets a second to exit
	# before the count is taken.
	sleep 1
	runs=$(cat "$RUN.runs" 2>/dev/null)
	sleep 3
	if [ "$(wc -w <<<"$1")" -eq "$RNBD_NR_PATHS" ] &&
	   [ "$(cat "$RUN.runs" 2>/dev/null)" != "$runs" ]; then
		echo "a fio run ended with no path connected"
		return 1
	fi
	for i in $1; do
		echo 1 >"$(rnbd_path_dir "$i")/reconnect" || return 1
	done
	rnbd_wait 60 paths_are "$1" connected ||
		{ echo "paths $1 did not reconnect"; return 1; }
	sleep 2
}

# cycle_paths "PATHS"...: each set of paths in turn disconnected, then
# reconnected, under polled IO.  With one path gone, its requests in
# flight, on a completion queue nobody polls any more, fail over to the
# other; with both gone, the IO waits for them and goes on, no error.
cycle_paths() {
	local set runs pid rc=0

	rm -f "$RUN.stop" "$RUN.failed" "$RUN.runs" "$RUN".fio.*
	io_loop &
	pid=$!
	sleep 3
	for set in "$@"; do
		if ! path_cycle "$set"; then
			rc=1
			break
		fi
	done
	touch "$RUN.stop"
	wait "$pid"
	runs=$(cat "$RUN.runs" 2>/dev/null)
	echo "${runs:-0} fio runs"
	if [ -e "$RUN.failed" ]; then
		echo "failed runs: $(tr '\n' ' ' <"$RUN.failed")"
		grep -h -E 'err=|verify|error' "$RUN.fio.$(head -n 1 "$RUN.failed")" |
			head -n 5
		return 1
	fi
	[ "${runs:-0}" -ge 2 ] && [ $rc -eq 0 ]
}

# nr_poll_queues=-1 on a session of its own: one polled queue per CPU.
poll_per_cpu() {
	local dev n rc=0

	rnbd_map poll-all "$LOOP" nr_poll_queues=-1 || return 1
	dev=$(rnbd_dev_of poll-all "$LOOP") || return 1
	n=$(cat "/sys/block/$dev/rnbd/nr_poll_queues")
	echo "nr_poll_queues $n, $NR_CPU_IDS CPUs"
	[ "$n" = "$NR_CPU_IDS" ] &&
		[ -e "$DEBUGFS/block/$dev/hctx$((2 * NR_CPU_IDS - 1))" ] || rc=1
	dd if=/dev/zero of="/dev/$dev" bs=4k count=16 oflag=direct \
		status=none || rc=1
	rnbd_unmap "$dev" || rc=1
	return $rc
}

unmap() {
	rnbd_unmap "$DEV" && rnbd_wait 30 test ! -e "/sys/block/$DEV"
}

ktap_header 11
setup >"$RUN.setup" 2>&1
ktap_check "map a null_blk with nr_poll_queues=1 over both paths" setup_done
ktap_check "one polled queue, and the block layer polls it" poll_queues
ktap_check "fio io_uring IOPOLL: 2M randwrite in 4k blocks verified, polled" \
	polled_verify randwrite 4k 2M
ktap_check "fio io_uring IOPOLL: 8M write in 64k blocks verified, polled" \
	polled_verify write 64k 8M
ktap_check "polled IO verified while each path is disconnected and reconnected" \
	cycle_paths 0 1 0 1
ktap_check "polled IO verified while both paths are down for 3 s, twice" \
	cycle_paths "0 1" "0 1"
ktap_check "the server's disk holds what the client reads" same_data
ktap_check "a device of the session without its polled queue is refused" \
	rnbd_map_refused "Invalid argument" "$SESSNAME" "$LOOP"
ktap_check "nr_poll_queues=-1: a polled queue per CPU" poll_per_cpu
ktap_check "unmap_device normal" unmap
ktap_check "nothing left mapped" test "$(rnbd_nr_mapped)" = 0
poll_trace_off
ktap_check "rnbd-client unloads" rmmod rnbd-client
rnbd_modules_unload
rnbd_nullb_down "$NULLB"
[ -n "$LOOP" ] && rnbd_loop_down "$LOOP" "$LOOP_FILE"
rm -rf "$RUN" "$RUN".*
ktap_finish
