#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The map test: the server side exports a disk, the client side maps it
# over both paths, fio writes and verifies it (crc32c) in several block
# sizes and patterns, a pattern the client writes is found on the server's
# disk, bad requests are refused, and both sides unload cleanly.
#
# Which modules each side runs is the test's choice, so that the same test
# covers our modules against each other and against Linux's own:
#   MAP_SERVER, MAP_CLIENT   "ours" or "upstream" (the peer built from
#                            linux-source-6.1, RNBD_UPSTREAM_MODULES)
#   RTRS_SRV_PARAMS          parameters of our rtrs-server
#   SESSNAME                 the session's name
# then source this file and call map_test.

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${MAP_SERVER:=ours}" "${MAP_CLIENT:=ours}" "${SESSNAME:=map}"
: "${RTRS_SRV_PARAMS:=}"

DISK_MB=64
# The client's pattern: 1 MiB at 8 MiB into the disk.
PATTERN_MB=1
PATTERN_AT_MB=8
CTL=/sys/devices/virtual/rnbd-client/ctl
DEV=rnbd0
TOKEN=$$.$RANDOM
PATTERN=/tmp/rnbd-map.pattern

# fio runs: rw mode, block size, size.  Sized for TCG, where two guests do
# a few hundred 4k IOs a second; a tenth of that on the debug kernel.
if [ -e /sys/kernel/debug/kmemleak ]; then
	FIO_RUNS="randwrite:4k:1M randwrite:64k:4M write:1m:4M"
else
	FIO_RUNS="randwrite:4k:4M write:4k:2M randwrite:64k:16M write:64k:16M
randwrite:1m:16M write:1m:16M"
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

# unload MODULE...: rmmod those of them that are loaded, in that order.
unload() {
	local m rc=0

	for m in "$@"; do
		grep -q "^${m//-/_} " /proc/modules || continue
		rmmod "$m" || rc=1
	done
	return $rc
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

# The exported disk: a brd ram disk.  Where brd is built in (the debug
# kernel) modprobe cannot size it: a loop device over a tmpfs file stands
# in.  In one guest the client's side must not see the server's brd go.
DISK=
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
		return 0
	fi
	rnbd_log "/dev/ram0 has ${size:-no} bytes: a loop device instead"
	truncate -s "${DISK_MB}M" "$LOOP_FILE" &&
		DISK=$(losetup -f --show "$LOOP_FILE")
}

disk_down() {
	case $DISK in
	/dev/loop*) losetup -d "$DISK"; rm -f "$LOOP_FILE" ;;
	esac
	[ -z "$BRD_LOADED" ] || rmmod brd
}

server_up() {
	rnbd_rdma_up || { rnbd_log "rxe did not come up"; return 1; }
	disk_up || { rnbd_log "no disk to export"; return 1; }
	server_modules_load ||
		{ rnbd_log "the $MAP_SERVER server modules did not load"; return 1; }
}

# server_check TOKEN: the client's pattern is on the disk.
server_check() {
	local want=/tmp/rnbd-map.want got=/tmp/rnbd-map.got rc=0

	pattern "$1" "$want" &&
		dd if="$DISK" of="$got" bs=1M skip="$PATTERN_AT_MB" \
			count="$PATTERN_MB" iflag=direct status=none &&
		cmp "$want" "$got" || rc=1
	rm -f "$want" "$got"
	return $rc
}

test_server() {
	local token rc=0

	if server_up; then
		rnbd_sync_put server-ready "ok $DISK $(blockdev --getsize64 "$DISK")"
		token=$(rnbd_sync_wait written "$RNBD_VM_TIMEOUT") || rc=1
		if [ -z "$token" ]; then
			rnbd_sync_put checked "the client wrote no pattern"
		elif server_check "$token"; then
			rnbd_sync_put checked ok
		else
			rnbd_sync_put checked "the pattern is not at $PATTERN_AT_MB MiB of $DISK"
		fi
	else
		rnbd_sync_put server-ready fail
		rc=1
	fi
	# The client has unmapped and closed its session by then.
	rnbd_sync_wait client-done "$RNBD_VM_TIMEOUT" >/dev/null || rc=1
	if unload rnbd-server rtrs-server; then
		rnbd_sync_put server-down ok
	else
		rnbd_sync_put server-down "rmmod failed"
		rc=1
	fi
	disk_down
	return $rc
}

SERVER_DISK=
SERVER_SIZE=
server_ready() {
	local status

	read -r status SERVER_DISK SERVER_SIZE < <(rnbd_sync_wait server-ready 120)
	[ "$status" = ok ]
}

mapped() {
	[ -b "/dev/$DEV" ] || { echo "/dev/$DEV is not mapped"; return 1; }
}

# map: both paths, client address first, as "path=src,dst".  Once retried:
# on a loaded 2-core TCG host the first connection of a boot was seen to
# outlast a client's connect timeout (ETIMEDOUT); the try is logged.
map() {
	local opts="sessname=$SESSNAME" i size start try

	[ -n "$SERVER_DISK" ] || { echo "no disk to map"; return 1; }
	for i in $(seq 0 $((RNBD_NR_PATHS - 1))); do
		opts+=" path=ip:$(rnbd_path_addr "$i" client),ip:$(rnbd_path_addr "$i" server)"
	done
	opts+=" device_path=$SERVER_DISK"
	echo "$opts"
	for try in 1 2; do
		start=$SECONDS
		echo "$opts" >"$CTL/map_device" && break
		echo "try $try failed after $((SECONDS - start)) s"
		[ "$try" -lt 2 ] || return 1
	done
	rnbd_wait 30 test -b "/dev/$DEV" || { mapped; return 1; }
	echo "mapped in $((SECONDS - start)) s"
	size=$(blockdev --getsize64 "/dev/$DEV")
	[ "$size" = "$SERVER_SIZE" ] ||
		{ echo "/dev/$DEV has $size bytes, $SERVER_DISK $SERVER_SIZE"; return 1; }
}

paths_connected() {
	local dir=/sys/class/rtrs-client/$SESSNAME/paths p n=0

	for p in "$dir"/*/state; do
		[ -e "$p" ] || continue
		echo "$(basename "$(dirname "$p")"): $(cat "$p")"
		[ "$(cat "$p")" = connected ] && n=$((n + 1))
	done
	[ "$n" -eq "$RNBD_NR_PATHS" ]
}

# fio_verify RW BS SIZE: SIZE written in blocks of BS, read back and
# checked against each block's crc32c; timeout bounds it.
fio_verify() {
	local out rc

	mapped || return 1
	out=$(timeout 150 fio --name="map-$1-$2" --filename="/dev/$DEV" \
		--rw="$1" --bs="$2" --size="$3" --ioengine=libaio --direct=1 \
		--iodepth=16 --verify=crc32c --do_verify=1 --verify_fatal=1 \
		--randrepeat=0 --verify_state_save=0 2>&1)
	rc=$?
	grep -E '(read|write): IOPS=|err=' <<<"$out"
	[ $rc -eq 0 ] || { echo "fio exited with $rc"; tail -n 20 <<<"$out"; }
	return $rc
}

# write_pattern: the pattern at its offset, direct, read back through RNBD.
write_pattern() {
	local got=/tmp/rnbd-map.got rc=0

	mapped || return 1
	dd if="$PATTERN" of="/dev/$DEV" bs=1M seek="$PATTERN_AT_MB" \
		count="$PATTERN_MB" oflag=direct conv=fsync status=none &&
		dd if="/dev/$DEV" of="$got" bs=1M skip="$PATTERN_AT_MB" \
			count="$PATTERN_MB" iflag=direct status=none &&
		cmp "$PATTERN" "$got" || rc=1
	rm -f "$got"
	[ $rc -eq 0 ] && : >"$PATTERN.written"
	return $rc
}

# bad_map: a map_device with an unknown option fails and maps nothing.
bad_map() {
	! echo "sessname=$SESSNAME path=ip:$(rnbd_path_addr 0 server) device_path=$SERVER_DISK bogus=1" \
		>"$CTL/map_device" 2>/dev/null && [ ! -e /dev/rnbd1 ]
}

# busy_unmap: a normal unmap fails while the device is open.
busy_unmap() {
	local rc=0

	mapped || return 1
	exec 3<"/dev/$DEV"
	echo normal >"/sys/block/$DEV/rnbd/unmap_device" 2>/dev/null && rc=1
	exec 3<&-
	mapped && return $rc
}

unmap() {
	mapped || return 1
	echo normal >"/sys/block/$DEV/rnbd/unmap_device" || return 1
	rnbd_wait 30 test ! -e "/sys/block/$DEV" ||
		{ echo "/dev/$DEV still there"; return 1; }
}

# server_saw_pattern: after the unmap the server reads its own disk.
server_saw_pattern() {
	local status

	if [ -e "$PATTERN.written" ]; then
		rnbd_sync_put written "$TOKEN"
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
	local run rw bs size

	ktap_header $((12 + $(wc -w <<<"$FIO_RUNS")))
	pattern "$TOKEN" "$PATTERN"
	rm -f "$PATTERN.written"
	ktap_check "rxe up" rnbd_rdma_up
	# Not through ktap_check: its subshell would lose SERVER_*.
	server_ready >/dev/null 2>&1
	ktap_check "server: $MAP_SERVER rnbd-server ${RTRS_SRV_PARAMS:+($RTRS_SRV_PARAMS) }exports a $DISK_MB MiB disk" \
		test -n "$SERVER_DISK"
	ktap_check "$MAP_CLIENT rtrs-client and rnbd-client load" \
		client_modules_load
	ktap_check "map_device over both paths: /dev/$DEV of the disk's size" map
	ktap_check "both paths connected" paths_connected
	for run in $FIO_RUNS; do
		IFS=: read -r rw bs size <<<"$run"
		ktap_check "fio: $size $rw in $bs blocks verified (crc32c)" \
			fio_verify "$rw" "$bs" "$size"
	done
	ktap_check "1 MiB pattern written at $PATTERN_AT_MB MiB, read back" write_pattern
	ktap_check "map_device refuses an unknown option" bad_map
	ktap_check "unmap_device normal refused while open" busy_unmap
	ktap_check "unmap_device normal" unmap
	ktap_check "server: the pattern is on its disk" server_saw_pattern
	ktap_check "client modules unload" unload rnbd-client rtrs-client
	rnbd_sync_put client-done
	ktap_check "server: server modules unload" server_down
	rm -f "$PATTERN" "$PATTERN.written"
	ktap_finish
}

# The core goes last, when both sides are done with it (one guest).
map_test() {
	rnbd_run_roles
	local rc=$?

	unload rtrs-core
	return $rc
}
