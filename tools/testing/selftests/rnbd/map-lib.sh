#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The map test: the server side exports a ram disk (brd) and a null_blk,
# the client side maps both over both paths, fio writes and verifies them
# (crc32c) in a matrix of block sizes, patterns and queue depths, the
# server finds on its disks what the client wrote, bad requests are
# refused, and both sides unload cleanly.
#
# Which modules each side runs is the test's choice, so that the same test
# covers our modules against each other and against Linux's own:
#   MAP_SERVER, MAP_CLIENT   "ours" or "upstream" (the peer built from
#                            Debian's linux-source, RNBD_UPSTREAM_MODULES)
#   RTRS_SRV_PARAMS          parameters of our rtrs-server (on the debug
#                            kernel, none given: sess_queue_depth=128)
#   SESSNAME                 the session's name
#   MAP_FIO                  "matrix" (the default) or "short": the fio runs
#   MAP_NULL_BLK             1 (the default): export a null_blk too
# then source this file and call map_test.

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${MAP_SERVER:=ours}" "${MAP_CLIENT:=ours}" "${SESSNAME:=map}"
: "${RTRS_SRV_PARAMS:=}" "${MAP_FIO:=matrix}" "${MAP_NULL_BLK:=1}"

DISK_MB=64
# The client's pattern: 1 MiB at 8 MiB into the ram disk.
PATTERN_MB=1
PATTERN_AT_MB=8
# fio writes below that: what the client read there, the server must too.
FIO_MB=8
NULLB=srvnull
CTL=/sys/devices/virtual/rnbd-client/ctl
# The first device the client maps, where its pattern goes.
DEV=rnbd0
TOKEN=$$.$RANDOM
PATTERN=/tmp/rnbd-map.pattern

# fio runs "rw:bs:size:iodepth", each over both devices at once.  Sized
# for TCG, where two guests do a few hundred 4k IOs a second, and the
# debug kernel a tenth of that; one guest, and the tests of the upstream
# peer, get the short list.
# FIO_TIMEOUT bounds a run; on the debug kernel beside other guests a run
# of a few seconds of IO was seen to take more than 150 s.
FIO_TIMEOUT=150
if rnbd_debug_kernel; then
	FIO_TIMEOUT=600
	# There a path takes seconds to come up (each of fail-over's
	# reconnects), most of it per chunk of the server's queue depth (512
	# by default) and per request of the client's: fewer go through the
	# same code, as in devices.sh.
	[ -n "$RTRS_SRV_PARAMS" ] || RTRS_SRV_PARAMS=sess_queue_depth=128
	FIO_RUNS="randwrite:4k:512k:16 write:512:64k:1 randwrite:64k:2M:64
write:1m:4M:8"
elif [ "$MAP_FIO" = short ] || [ "$RNBD_TOPOLOGY" = one ]; then
	FIO_RUNS="randwrite:4k:2M:16 write:64k:8M:16 randwrite:1m:8M:16"
else
	# block size:size at iodepth 64:size at iodepth 1
	FIO_RUNS=
	for bs in 512:128k:32k 4k:1M:256k 64k:4M:1M 1m:8M:2M; do
		IFS=: read -r b deep shallow <<<"$bs"
		for rw in randwrite write; do
			FIO_RUNS+=" $rw:$b:$shallow:1 $rw:$b:$deep:64"
		done
	done
fi

# The server of the upstream peer: its default queue depth of 512 chunks
# takes longer to register on a loaded TCG host than its client waits.
UPSTREAM_SRV_PARAMS="sess_queue_depth=128"

if [ "$MAP_SERVER" = upstream ] || [ "$MAP_CLIENT" = upstream ]; then
	[ -n "${RNBD_UPSTREAM_MODULES:-}" ] ||
		ktap_skip_all "no upstream peer (RNBD_UPSTREAM_MODULES is not set)"
fi

# upstream_load MODULE...: insmod by path, so that nothing resolves to our
# modules of the same names in the modules index.
upstream_load() {
	local m params

	modprobe -a ib_core rdma_cm || return 1
	for m in "$@"; do
		params=
		[ "$m" = rtrs-server ] && params=$UPSTREAM_SRV_PARAMS
		# shellcheck disable=SC2086 # no parameter is no word
		insmod "$RNBD_UPSTREAM_MODULES/$m.ko" $params || return 1
	done
}

server_modules_load() {
	if [ "$MAP_SERVER" = upstream ]; then
		upstream_load rtrs-core rtrs-server rnbd-server
	else
		# shellcheck disable=SC2086 # no parameter is no word
		modprobe rtrs-server $RTRS_SRV_PARAMS && modprobe rnbd-server
	fi
}

client_modules_load() {
	if [ "$MAP_CLIENT" = upstream ]; then
		upstream_load rtrs-core rtrs-client rnbd-client
	else
		modprobe rnbd-client
	fi
}

# pattern TOKEN FILE: the client's pattern, made again by the server.
pattern() {
	yes "rnbd map test $1" | head -c $((PATTERN_MB << 20)) >"$2"
}

# The exported disks, DISKS: a brd ram disk and a null_blk.  Where brd is built
# in (the debug kernel) modprobe cannot size it: a loop device over a tmpfs
# file stands in.  In one guest the client's side must not see the
# server's brd go.
DISK=
DISKS=
BRD_LOADED=
LOOP_FILE=/dev/shm/rnbd-map.img
disk_up() {
	local size

	if ! grep -q '^brd ' /proc/modules; then
		modprobe brd rd_nr=1 rd_size=$((DISK_MB << 10)) || return 1
		grep -q '^brd ' /proc/modules && BRD_LOADED=1
	fi
	size=$(blockdev --getsize64 /dev/ram0 2>/dev/null)
	if [ "${size:-0}" -ge $((DISK_MB << 20)) ]; then
		DISK=/dev/ram0
	else
		rnbd_log "/dev/ram0 has ${size:-no} bytes: a loop device instead"
		DISK=$(rnbd_loop_up "$LOOP_FILE" "$DISK_MB") || return 1
	fi
	DISKS=$DISK
	[ "$MAP_NULL_BLK" = 1 ] || return 0
	rnbd_nullb_up "$NULLB" "$DISK_MB" && DISKS+=" /dev/$NULLB"
}

disk_down() {
	rnbd_nullb_down "$NULLB"
	case $DISK in
	/dev/loop*) rnbd_loop_down "$DISK" "$LOOP_FILE" ;;
	esac
	[ -z "$BRD_LOADED" ] || rmmod brd
}

server_up() {
	rnbd_rdma_up || { rnbd_log "rxe did not come up"; return 1; }
	disk_up || { rnbd_log "no disk to export"; return 1; }
	server_modules_load ||
		{ rnbd_log "the $MAP_SERVER server modules did not load"; return 1; }
}

# server_check TOKEN SUM...: the client's pattern is on the ram disk, and
# the first FIO_MB of each disk has the checksum the client read there.
server_check() {
	local want=/tmp/rnbd-map.want got=/tmp/rnbd-map.got rc=0 d

	pattern "$1" "$want" &&
		dd if="$DISK" of="$got" bs=1M skip="$PATTERN_AT_MB" \
			count="$PATTERN_MB" iflag=direct status=none &&
		cmp "$want" "$got" || rc=1
	rm -f "$want" "$got"
	[ $rc -eq 0 ] || { echo "the pattern is not at $PATTERN_AT_MB MiB of $DISK"; return 1; }
	shift
	for d in $DISKS; do
		[ "$(head_sum "$d")" = "${1:-}" ] ||
			{ echo "$d does not hold what the client read"; return 1; }
		shift
	done
}

# server_chunks_ok: our server never saw a request for a chunk it still
# held.  No good client sends one, as a chunk is the client's again only
# once the server's answer reached it: the server logging it means a race
# of its own, the chunk freed after the answer went.
server_chunks_ok() {
	local busy

	[ "$MAP_SERVER" = ours ] || return 0
	busy=$(dmesg | grep -c "is already in use")
	[ "$busy" -eq 0 ] ||
		{ echo "the server took $busy request(s) for a chunk in use"; return 1; }
}

# head_sum DISK: the md5 of its first FIO_MB.
head_sum() {
	dd if="$1" bs=1M count="$FIO_MB" iflag=direct status=none |
		md5sum | cut -d' ' -f1
}

# server_finish: once the client has unmapped and closed its session, the
# server's modules unload and the disks go; the client hears how that went
# (server_down).
server_finish() {
	local rc=0

	rnbd_sync_wait client-done "$RNBD_VM_TIMEOUT" >/dev/null || rc=1
	if rnbd_unload rnbd-server rtrs-server; then
		rnbd_sync_put server-down ok
	else
		rnbd_sync_put server-down "rmmod failed"
		rc=1
	fi
	disk_down
	return $rc
}

test_server() {
	local written status rc=0

	if server_up; then
		rnbd_sync_put server-ready "ok $(blockdev --getsize64 "$DISK") $DISKS"
		written=$(rnbd_sync_wait written "$RNBD_VM_TIMEOUT") || rc=1
		if [ -z "$written" ]; then
			rnbd_sync_put checked "the client wrote nothing"
		else
			# shellcheck disable=SC2086 # TOKEN SUM SUM2
			status=$(server_check $written && server_chunks_ok &&
				server_rxe_ok) &&
				status=ok
			rnbd_sync_put checked "$status"
		fi
	else
		rnbd_sync_put server-ready fail
		rc=1
	fi
	server_finish || rc=1
	return $rc
}

# What the server exports, its size, and what the client maps them as.
SERVER_DISK=
SERVER_DISKS=
SERVER_SIZE=
DEVS=
server_ready() {
	local status i=0 d

	read -r status SERVER_SIZE SERVER_DISKS \
		< <(rnbd_sync_wait server-ready 120)
	SERVER_DISK=${SERVER_DISKS%% *}
	for d in $SERVER_DISKS; do
		DEVS+="${DEVS:+ }rnbd$i"
		i=$((i + 1))
	done
	[ "$status" = ok ]
}

mapped() {
	local d

	[ -n "$DEVS" ] || { echo "nothing to map"; return 1; }
	for d in $DEVS; do
		[ -b "/dev/$d" ] || { echo "/dev/$d is not mapped"; return 1; }
	done
}

# map_one DEVICE_PATH RNBDN: over both paths, client address first, as
# "path=src,dst"; RNBDN of the disk's size.  Once retried: on a loaded
# 2-core TCG host the first connection of a boot was seen to outlast a
# client's connect timeout (ETIMEDOUT); the try is logged.
map_one() {
	local opts="sessname=$SESSNAME" i size start try

	for i in $(seq 0 $((RNBD_NR_PATHS - 1))); do
		opts+=" path=ip:$(rnbd_path_addr "$i" client),ip:$(rnbd_path_addr "$i" server)"
	done
	opts+=" device_path=$1"
	echo "$opts"
	for try in 1 2; do
		start=$SECONDS
		echo "$opts" >"$CTL/map_device" && break
		echo "try $try failed after $((SECONDS - start)) s"
		[ "$try" -lt 2 ] || return 1
	done
	rnbd_wait 30 test -b "/dev/$2" ||
		{ echo "/dev/$2 did not appear"; return 1; }
	echo "mapped in $((SECONDS - start)) s"
	size=$(blockdev --getsize64 "/dev/$2")
	[ "$size" = "$SERVER_SIZE" ] ||
		{ echo "/dev/$2 has $size bytes, $1 $SERVER_SIZE"; return 1; }
}

map() {
	local disks i=0 d

	read -ra disks <<<"$SERVER_DISKS"
	[ -n "$SERVER_DISKS" ] || { echo "no disk to map"; return 1; }
	for d in $DEVS; do
		map_one "${disks[$i]}" "$d" || return 1
		i=$((i + 1))
	done
}

# The session's directory in the client's sysfs, for the tests that source
# this file.
# shellcheck disable=SC2034
SESS=/sys/class/rtrs-client/$SESSNAME

# Linux's client has no IO timeout for a queue pair that stops without an
# error, and Debian 6.1's rxe stops one when an ACK comes late enough for a
# retry and the retry runs again a memory registration that already ran
# (it logs RXE_FAULT): the client's IO then waits forever.  While Linux's
# client does IO, a stall of its devices with that fault logged by the
# client's own rxe has the test do what our client's IO timeout does:
# reconnect each path in turn, which fails its requests over to the other.
# Each such rescue is counted and printed; the data is still verified, and
# a stall without the fault still fails the test.  The server's rxe logs it
# only when the server registers memory (always_invalidate=Y) and a retry
# runs that again: for our server, a re-registration of its own that went
# wrong looks the same, so our server's guest must not log it at all
# (server_rxe_ok).
RXE_FAULT='rxe_reg_fast_mr: .* not free'
STALL_S=30
RESCUES=/tmp/rnbd-map.rescues

# server_rxe_ok: our server, under Linux's client, never made rxe log its
# fault.
server_rxe_ok() {
	local n

	[ "$MAP_SERVER" = ours ] && [ "$MAP_CLIENT" = upstream ] || return 0
	n=$(dmesg | grep -c "$RXE_FAULT")
	[ "$n" -eq 0 ] ||
		{ echo "our server's rxe logged its fault $n time(s): $(dmesg | grep -m 1 "$RXE_FAULT")"; return 1; }
}

# io_counts: the IOs the client's devices completed, and those in flight.
io_counts() {
	local d

	for d in $DEVS; do
		cat "/sys/block/$d/stat"
	done | awk '{ done += $1 + $5; busy += $9 } END { print done + 0, busy + 0 }'
}

reconnect_paths() {
	local i

	for i in $(seq 0 $((RNBD_NR_PATHS - 1))); do
		rnbd_path_ctl "$i" reconnect || continue
		rnbd_wait 120 rnbd_path_is "$i" connected ||
			rnbd_log "path $i did not reconnect"
	done
}

# rescue_stalls: runs in the background while Linux's client does IO.
rescue_stalls() {
	local ended busy last=-1 idle=0

	while sleep 5; do
		read -r ended busy < <(io_counts)
		if [ "$busy" -gt 0 ] && [ "$ended" -eq "$last" ]; then
			idle=$((idle + 5))
		else
			idle=0
		fi
		last=$ended
		if [ "$idle" -lt "$STALL_S" ] ||
		   ! dmesg | grep -q "$RXE_FAULT"; then
			continue
		fi
		echo "$busy IOs stalled for $idle s after rxe's fault" >>"$RESCUES"
		reconnect_paths
		idle=0
	done
}

# rescues_print: how often Linux's client was rescued, and why.
rescues_print() {
	[ -e "$RESCUES" ] || { rnbd_log "Linux's client needed no rescue"; return 0; }
	rnbd_log "Linux's client rescued $(wc -l <"$RESCUES") time(s) by reconnecting its paths:"
	while read -r line; do
		rnbd_log "  $line"
	done <"$RESCUES"
	rm -f "$RESCUES"
}

# fio_verify RW BS SIZE IODEPTH: SIZE written to each device in blocks of
# BS, read back and checked against each block's crc32c; timeout bounds it.
fio_verify() {
	local out rc jobs=() d

	mapped || return 1
	for d in $DEVS; do
		jobs+=(--name="$d" --filename="/dev/$d")
	done
	out=$(timeout "$FIO_TIMEOUT" fio --rw="$1" --bs="$2" --size="$3" --iodepth="$4" \
		--ioengine=libaio --direct=1 --verify=crc32c --do_verify=1 \
		--verify_fatal=1 --randrepeat=0 --verify_state_save=0 \
		"${jobs[@]}" 2>&1)
	rc=$?
	grep -E '(read|write): IOPS=|err=' <<<"$out"
	[ $rc -eq 0 ] || { echo "fio exited with $rc"; tail -n 20 <<<"$out"; }
	return $rc
}

# write_pattern: the pattern at its offset, direct, read back through RNBD.
write_pattern() {
	local got=/tmp/rnbd-map.got rc=0 d

	mapped || return 1
	dd if="$PATTERN" of="/dev/$DEV" bs=1M seek="$PATTERN_AT_MB" \
		count="$PATTERN_MB" oflag=direct conv=fsync status=none &&
		dd if="/dev/$DEV" of="$got" bs=1M skip="$PATTERN_AT_MB" \
			count="$PATTERN_MB" iflag=direct status=none &&
		cmp "$PATTERN" "$got" || rc=1
	rm -f "$got"
	[ $rc -eq 0 ] || return 1
	for d in $DEVS; do
		head_sum "/dev/$d"
	done | tr '\n' ' ' >"$PATTERN.written"
}

# bad_map: a map_device with an unknown option, of a disk the server
# exports and the client has not mapped yet (it runs before map), so that
# nothing but the parser can refuse it: EINVAL, a line of the client's log
# quotes the option (ours and Linux's word it differently), nothing is
# mapped and no session made.  What a parser that let it through mapped is
# unmapped again.
bad_map() {
	local since n err dev

	[ -n "$SERVER_DISK" ] || { echo "no disk to map"; return 1; }
	since=$(rnbd_kmsg_mark)
	n=$(rnbd_nr_mapped)
	if err=$(rnbd_write_err "$CTL/map_device" \
		"sessname=$SESSNAME path=ip:$(rnbd_path_addr 0 server) device_path=$SERVER_DISK bogus=1"); then
		echo "bogus=1 accepted: $SERVER_DISK mapped"
		dev=$(rnbd_dev_of "$SESSNAME" "$SERVER_DISK") && rnbd_unmap "$dev"
		return 1
	fi
	echo "$err"
	[ "$err" = "Invalid argument" ] || { echo "the error is not EINVAL"; return 1; }
	rnbd_kmsg_since "$since" | grep "rnbd_client.*map_device: .*'bogus=1'" ||
		{ echo "no line of the client's log quotes 'bogus=1'"; return 1; }
	[ "$(rnbd_nr_mapped)" = "$n" ] ||
		{ echo "devices: $n before, $(rnbd_nr_mapped) after"; return 1; }
	[ ! -e "$SESS" ] || { echo "session $SESSNAME was made"; return 1; }
}

# busy_unmap: a normal unmap fails with EBUSY while the device is open,
# the client's log says so, and the device stays.
busy_unmap() {
	local rc=0 log=

	mapped || return 1
	[ "$MAP_CLIENT" = upstream ] && log="device is in use"
	exec 3<"/dev/$DEV"
	rnbd_unmap_busy "$DEV" "$log" || rc=1
	exec 3<&-
	mapped && return $rc
}

unmap() {
	local d

	mapped || return 1
	for d in $DEVS; do
		echo normal >"/sys/block/$d/rnbd/unmap_device" || return 1
		rnbd_wait 30 test ! -e "/sys/block/$d" ||
			{ echo "/dev/$d still there"; return 1; }
	done
}

# server_saw_writes: after the unmap the server reads its own disks: the
# pattern, and what the client read where fio wrote.
server_saw_writes() {
	local status

	if [ -e "$PATTERN.written" ]; then
		rnbd_sync_put written "$TOKEN $(cat "$PATTERN.written")"
	else
		rnbd_sync_put written
	fi
	status=$(rnbd_sync_wait checked 60) || return 1
	[ "$status" = ok ] || { echo "$status"; return 1; }
}

server_down() {
	local status

	status=$(rnbd_sync_wait server-down 60) || return 1
	[ "$status" = ok ] || { echo "$status"; return 1; }
}

test_client() {
	local run rw bs size qd rescuer=

	ktap_header $((12 + $(wc -w <<<"$FIO_RUNS")))
	pattern "$TOKEN" "$PATTERN"
	rm -f "$PATTERN.written"
	ktap_check "rxe up" rnbd_rdma_up
	# Not through ktap_check: its subshell would lose SERVER_*.
	server_ready >/dev/null 2>&1
	ktap_check "server: $MAP_SERVER rnbd-server ${RTRS_SRV_PARAMS:+($RTRS_SRV_PARAMS) }exports two $DISK_MB MiB disks" \
		test -n "$SERVER_DISK"
	ktap_check "$MAP_CLIENT rtrs-client and rnbd-client load" \
		client_modules_load
	ktap_check "map_device refuses an unknown option" bad_map
	ktap_check "map_device over both paths: brd and null_blk, of their size" map
	ktap_check "both paths connected" rnbd_paths_connected
	rm -f "$RESCUES"
	[ "$MAP_CLIENT" = upstream ] && { rescue_stalls & rescuer=$!; }
	for run in $FIO_RUNS; do
		IFS=: read -r rw bs size qd <<<"$run"
		ktap_check "fio: $size $rw in $bs blocks at iodepth $qd verified (crc32c)" \
			fio_verify "$rw" "$bs" "$size" "$qd"
	done
	ktap_check "1 MiB pattern written at $PATTERN_AT_MB MiB, read back" write_pattern
	[ -n "$rescuer" ] && { kill "$rescuer"; wait "$rescuer"; rescues_print; }
	ktap_check "unmap_device normal refused while open" busy_unmap
	ktap_check "unmap_device normal of both" unmap
	ktap_check "server: its disks hold what the client wrote" server_saw_writes
	ktap_check "client modules unload" rnbd_unload rnbd-client rtrs-client
	rnbd_sync_put client-done
	ktap_check "server: server modules unload" server_down
	rm -f "$PATTERN" "$PATTERN.written"
	ktap_finish
}

# The core goes last, when both sides are done with it (one guest).
map_test() {
	rnbd_run_roles
	local rc=$?

	rnbd_unload rtrs-core
	return $rc
}
