#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Polled queues, in one guest: a null_blk (under dm-linear) mapped over
# both paths with nr_poll_queues=1 has a polled hardware queue; fio with
# io_uring's IOPOLL writes and verifies it (crc32c) through that queue,
# also while each path in turn, then both at once, are disconnected and
# reconnected: the requests unanswered on a lost path fail over, the IO
# goes on over the other, and the reconnected path is polled again; and
# while the server's disk stops for longer than the IO timeout, which
# closes the paths that hold unanswered requests.  The server's disk
# holds what the client read.  A device of the same session must ask for
# as many polled queues; nr_poll_queues=-1 is one per CPU.
#
# rnbd-vm: topology=one
# rnbd-vm: timeout=900
# rnbd-vm: cuts=paths

. "$(dirname "$0")/lib.sh"

SESSNAME=poll
NULLB=pollnull
DM=rnbd-poll
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
	# The server exports it through dm-linear, which a suspend stops.
	if ! modprobe dm_mod ||
	   ! dmsetup create "$DM" --noudevsync --table \
		"0 $(blockdev --getsz "/dev/$NULLB") linear /dev/$NULLB 0" ||
	   ! dmsetup mknodes "$DM"; then
		echo "no dm-linear"
		return 1
	fi
	LOOP=$(rnbd_loop_up "$LOOP_FILE" 16) || { echo "no loop device"; return 1; }
	mountpoint -q "$DEBUGFS" || mount -t debugfs none "$DEBUGFS" || return 1
	# With both paths down, IO waits for them however long the kernel
	# takes to reconnect (the debug kernel, under load, half a minute):
	# path-loss.sh tests the timeout itself.
	# shellcheck disable=SC2086 # SRV_PARAMS is a list of parameters
	modprobe rtrs-server $SRV_PARAMS && modprobe rnbd-server &&
		modprobe rnbd-client reconnect_timeout=600 &&
		poll_trace_on || return 1
	echo "sessname=$SESSNAME$(paths) device_path=/dev/mapper/$DM nr_poll_queues=1" \
		>"$CTL/map_device" || return 1
	DEV=$(rnbd_dev_of "$SESSNAME" "/dev/mapper/$DM")
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

# Polled fio runs one after the other over IO_MB regions, until told to
# stop; a failed run is kept.  The count of runs is read while it changes.
io_loop() {
	local n=0

	while [ ! -e "$RUN.stop" ]; do
		n=$((n + 1))
		fio_polled randwrite 4k "${IO_MB}M" $(((n % 4) * IO_MB))M \
			>"$RUN.fio.$n" 2>&1 || echo "$n" >>"$RUN.failed"
		rnbd_put "$RUN.runs" "$n"
	done
}

fio_runs() {
	cat "$RUN.runs" 2>/dev/null || echo 0
}

# runs_since N: a fio run ended since N fio runs had.  The one that ran
# at that moment ended: each request it had in flight completed.
runs_since() {
	[ "$(fio_runs)" -gt "$1" ]
}

# paths_are "PATH..." STATE: every one of those paths is in STATE.
paths_are() {
	local i

	for i in $1; do
		rnbd_path_is "$i" "$2" || return 1
	done
}

# carried PATH: the requests PATH has carried.
carried() {
	rnbd_path_stat "$1" rdma 1 3
}

carries_since() {
	[ "$(carried "$1")" -gt "$2" ]
}

# failovers: the requests all paths took over from a failed one.
failovers() {
	cat "/sys/class/rtrs-client/$SESSNAME"/paths/*/stats/rdma |
		awk '{ n += $6 } END { print n + 0 }'
}

failed_over_since() {
	[ "$(failovers)" -gt "$1" ]
}

# outage "PATH...": with those paths down, and some left, the IO goes on:
# the fio run of the moment ends, and with it each request it had in
# flight on them when they went (a run that ended between the cut and that
# moment ended with the paths down too).  With none left, no IO can
# complete, so no fio run may end (one that completed its last IO just
# before the cut gets a second to exit before the count is taken).
outage() {
	local runs

	sleep 1
	runs=$(fio_runs)
	if [ "$(wc -w <<<"$1")" -lt "$RNBD_NR_PATHS" ]; then
		rnbd_wait "$OUTAGE_S" runs_since "$runs" ||
			{ echo "with paths $1 down, $(($(fio_runs) - runs)) fio run(s) ended in $OUTAGE_S s"; return 1; }
		return 0
	fi
	sleep 3
	[ "$(fio_runs)" = "$runs" ] ||
		{ echo "a fio run ended with no path connected"; return 1; }
}

# back "PATH...": each reconnected path carries IO again, and a whole fio
# run, one that began after the trace was emptied, ends: polling reaped
# each of its writes and reads.  (The run under way then may have done
# its last IO before, and end without a poll: CI saw it.)
back() {
	local i runs n

	declare -A was
	: >"$TRACEFS/trace"
	for i in $1; do
		was[$i]=$(carried "$i") || return 1
	done
	runs=$(fio_runs)
	for i in $1; do
		rnbd_wait "$OUTAGE_S" carries_since "$i" "${was[$i]}" ||
			{ echo "path $i carries no IO after its reconnect"; return 1; }
	done
	rnbd_wait "$OUTAGE_S" runs_since $((runs + 1)) ||
		{ echo "no whole fio run after paths $1 came back"; return 1; }
	n=$(polled_completions)
	echo "paths $1 back: $n completions reaped by polling, a fio run has $RUN_IOS IOs"
	[ "$n" -ge "$RUN_IOS" ]
}

# disconnect "PATH...": those paths closed from the client's sysfs.
disconnect() {
	local i

	for i in $1; do
		rnbd_path_ctl "$i" disconnect || return 1
	done
	rnbd_wait 30 paths_are "$1" disconnected ||
		{ echo "paths $1 did not disconnect"; return 1; }
}

# in_flight PATH: the requests PATH has in flight, by its stats.
in_flight() {
	rnbd_path_stat "$1" rdma 5
}

busy() {
	local i

	for i in $1; do
		[ "$(in_flight "$i")" -gt 0 ] || return 1
	done
}

# cut_unanswered "PATH...": the server's disk stopped (its dm-linear
# suspended) with requests in flight on those paths, then the paths
# disconnected: with the disk stopped, the only way out for their
# requests is to fail over, and they wait on the others until the disk
# goes on.  A disconnect returns once the path is closed, when no answer
# can come on it any more: the disk goes on at once, before the requests
# waiting on the other paths are old enough for the client to close those
# too (30 s: a loaded debug kernel can take that long to close a path).
cut_unanswered() {
	local fo stopped busy_at rc=0

	fo=$(failovers)
	# A fio run under way, not one starting (seconds on the debug kernel).
	rnbd_wait 60 busy "$1" ||
		{ echo "paths $1: no request in flight in 60 s"; return 1; }
	dmsetup suspend --nolockfs "$DM" || return 1
	stopped=$(date +%s)
	if ! rnbd_wait 60 busy "$1"; then
		echo "paths $1: no request in flight in 60 s with the disk stopped"
		rc=1
	else
		busy_at=$(date +%s)
		disconnect "$1" || rc=1
	fi
	dmsetup resume "$DM" || return 1
	echo "paths $1 cut: the disk stopped for $(($(date +%s) - stopped)) s, $((${busy_at:-$stopped} - stopped)) s of them until requests were in flight on the path"
	[ $rc -eq 0 ] || return 1
	if ! rnbd_wait 60 failed_over_since "$fo"; then
		echo "paths $1: no request failed over"
		return 1
	fi
	echo "paths $1 cut: $(($(failovers) - fo)) requests in flight failed over"
}

# path_cycle "PATH...": those paths disconnected, the IO goes on or waits
# (outage), then reconnected, and the IO is polled on them (back).
path_cycle() {
	local i

	if [ "$(wc -w <<<"$1")" -lt "$RNBD_NR_PATHS" ]; then
		cut_unanswered "$1" || return 1
	else
		disconnect "$1" || return 1
	fi
	outage "$1" || return 1
	for i in $1; do
		echo 1 >"$(rnbd_path_dir "$i")/reconnect" || return 1
	done
	rnbd_wait 60 paths_are "$1" connected ||
		{ echo "paths $1 did not reconnect"; return 1; }
	back "$1"
}

# cycle_paths "PATHS"...: each set of paths in turn disconnected, then
# reconnected, under polled IO: with one path gone, its requests in
# flight, on a completion queue nobody polls any more, fail over to the
# other; with both gone, the IO waits for them and goes on, no error.
cycle_paths() {
	with_io path_cycles "$@"
}

path_cycles() {
	local set

	for set in "$@"; do
		path_cycle "$set" || return 1
	done
}

# with_io CMD...: CMD while polled fio runs go on one after the other;
# CMD and every run must pass.
with_io() {
	local pid rc=0

	rm -f "$RUN.stop" "$RUN.failed" "$RUN.runs" "$RUN".fio.*
	io_loop &
	pid=$!
	sleep 3
	"$@" || rc=1
	touch "$RUN.stop"
	wait "$pid"
	echo "$(fio_runs) fio runs"
	if [ -e "$RUN.failed" ]; then
		echo "failed runs: $(tr '\n' ' ' <"$RUN.failed")"
		grep -h -E 'err=|verify|error' "$RUN.fio.$(head -n 1 "$RUN.failed")" |
			head -n 5
		return 1
	fi
	return $rc
}

# overdue: the server's disk stopped (its dm-linear suspended) for longer
# than the client's IO timeout (30 s), with requests in flight: blk-mq's
# timeout has RTRS close each path that held one that long ("unanswered
# for 30 s"), and the requests go to the other path or wait for one.
# Once the disk goes on, the fio run of the moment ends, verified, and
# both paths are connected.
overdue() {
	local since runs n

	since=$(rnbd_kmsg_mark)
	rnbd_wait 60 busy 0 || rnbd_wait 60 busy 1 ||
		{ echo "no request in flight in 60 s"; return 1; }
	runs=$(fio_runs)
	dmsetup suspend --nolockfs "$DM" || return 1
	sleep "$STUCK_S"
	dmsetup resume "$DM" || return 1
	n=$(rnbd_kmsg_since "$since" |
		grep -cE "unanswered for [0-9]+ s, closing the path")
	echo "the disk stood still for $STUCK_S s: $n path(s) closed by the IO timeout"
	[ "$n" -gt 0 ] || return 1
	rnbd_wait "$OUTAGE_S" runs_since "$runs" ||
		{ echo "no fio run ended after the disk went on"; return 1; }
	rnbd_wait "$OUTAGE_S" paths_are "0 1" connected ||
		{ echo "the paths are not connected again"; return 1; }
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

# exited PID: the process has exited (a zombie, or gone).
exited() {
	! grep -q '^State:[[:space:]]*[RSD]' "/proc/$1/status" 2>/dev/null
}

# rnbd-client unloads within a minute; else the stacks of rmmod and of
# every task in D state say what it waits for (CI saw the test hang after
# its last unmap once, with nothing on the console).
client_unload() {
	local pid p

	rmmod rnbd-client &
	pid=$!
	if rnbd_wait 60 exited "$pid"; then
		wait "$pid"
		return
	fi
	echo "rmmod rnbd-client still runs after 60 s: $(cat "/proc/$pid/stack")"
	for p in /proc/[0-9]*; do
		grep -q '^State:.*D' "$p/status" 2>/dev/null || continue
		echo "$(cat "$p/comm") ($(basename "$p")), D: $(cat "$p/stack")"
	done
	return 1
}

dm_down() {
	dmsetup resume "$DM" 2>/dev/null
	dmsetup remove --noudevsync "$DM"
}

# The debug kernel: a quarter of the IO, each kind of cut once, and a
# quarter of the queue depth: a reconnect registers the server's chunks
# again, and with 512 of them a path took over half a minute to come back
# there under load (CI saw it).
SRV_PARAMS=
if rnbd_debug_kernel; then
	SRV_PARAMS=sess_queue_depth=128
	IO_MB=1 VERIFY_4K=512k VERIFY_64K=2M SINGLE_CUTS=(0 1) OUTAGE_S=300
	BOTH_CUTS=("0 1")
	STUCK_S=45
else
	IO_MB=4 VERIFY_4K=2M VERIFY_64K=8M SINGLE_CUTS=(0 1 0 1) OUTAGE_S=60
	BOTH_CUTS=("0 1" "0 1")
	STUCK_S=40
fi
# The writes and the verifying reads of one fio run of io_loop.
RUN_IOS=$((2 * IO_MB * 256))

ktap_header 13
setup >"$RUN.setup" 2>&1
ktap_check "map a null_blk with nr_poll_queues=1 over both paths" setup_done
ktap_check "one polled queue, and the block layer polls it" poll_queues
ktap_check "fio io_uring IOPOLL: $VERIFY_4K randwrite in 4k blocks verified, polled" \
	polled_verify randwrite 4k "$VERIFY_4K"
ktap_check "fio io_uring IOPOLL: $VERIFY_64K write in 64k blocks verified, polled" \
	polled_verify write 64k "$VERIFY_64K"
ktap_check "polled IO verified while each path is disconnected (its requests fail over) and reconnected (polled again), ${#SINGLE_CUTS[@]} cuts" \
	cycle_paths "${SINGLE_CUTS[@]}"
ktap_check "polled IO verified while both paths are down for 3 s, ${#BOTH_CUTS[@]} time(s)" \
	cycle_paths "${BOTH_CUTS[@]}"
ktap_check "polled IO verified while the server's disk stops for $STUCK_S s: the IO timeout closes the paths that hold requests" \
	with_io overdue
ktap_check "the server's disk holds what the client reads" same_data
ktap_check "a device of the session without its polled queue is refused" \
	rnbd_map_refused "Invalid argument" "$SESSNAME" "$LOOP"
ktap_check "nr_poll_queues=-1: a polled queue per CPU" poll_per_cpu
ktap_check "unmap_device normal" unmap
ktap_check "nothing left mapped" test "$(rnbd_nr_mapped)" = 0
poll_trace_off
ktap_check "rnbd-client unloads" client_unload
rnbd_modules_unload
dm_down
rnbd_nullb_down "$NULLB"
[ -n "$LOOP" ] && rnbd_loop_down "$LOOP" "$LOOP_FILE"
rm -rf "$RUN" "$RUN".*
ktap_finish
