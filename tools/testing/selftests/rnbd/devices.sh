#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# What a mapped device does besides reading and writing, in one guest: the
# geometry and optimal IO size Linux's client gives it; a flush, a FUA write, a discard and a write-zeroes of the client reach the
# server's disk (its block trace, flush count and content show it); the
# access-mode rules; force_close on the server, also racing the client's
# unmap; a force unmap of an open device; rmmod of the client refused while
# a device is mapped; a hundred maps and unmaps in a row.
#
# rnbd-vm: topology=one

. "$(dirname "$0")/lib.sh"

NULLB=srvnull
LOOP_FILE=/dev/shm/rnbd-devices.img
TRACE=/sys/kernel/tracing
SRV_DEVS=/sys/class/rnbd-server/ctl/devices
DATA=/tmp/rnbd-devices.data
ROUNDS=100
RACE_ROUNDS=10
# The debug kernel takes seconds to set a session up, most of it per
# request of the queue depth (512 chunks on the server, as many requests
# on each of the client's connections): there, fewer rounds of a smaller
# session, which go through the same code.
SRV_PARAMS=
if rnbd_debug_kernel; then
	ROUNDS=10
	RACE_ROUNDS=6
	SRV_PARAMS=sess_queue_depth=128
fi

LOOP=
NULL_DEV=
LOOP_DEV=

setup() {
	rnbd_rdma_up || { echo "rxe did not come up"; return 1; }
	rnbd_nullb_up "$NULLB" 64 || { echo "no null_blk"; return 1; }
	LOOP=$(rnbd_loop_up "$LOOP_FILE" 64) || { echo "no loop device"; return 1; }
	# shellcheck disable=SC2086 # SRV_PARAMS is a list of parameters
	modprobe rtrs-server $SRV_PARAMS && modprobe rnbd-server &&
		modprobe rnbd-client || return 1
	rnbd_map ops "/dev/$NULLB" && rnbd_map ops "$LOOP" || return 1
	NULL_DEV=$(rnbd_dev_of ops "/dev/$NULLB") &&
		LOOP_DEV=$(rnbd_dev_of ops "$LOOP")
}

# geometry RNBDN: HDIO_GETGEO answers as Linux's client does.
geometry() {
	local got want

	got=$(python3 -c 'import fcntl, struct, sys
with open(sys.argv[1], "rb") as f:
    g = fcntl.ioctl(f, 0x0301, bytes(16))  # HDIO_GETGEO
print(*struct.unpack("BBHxxxxQ", g))' "/dev/$1") || return 1
	want="4 16 $((($(cat "/sys/block/$1/size") / 64) % 65536)) 0"
	echo "heads sectors cylinders start: $got"
	[ "$got" = "$want" ] || { echo "not $want"; return 1; }
}

# io_opt RNBDN: the optimal IO size is the session's largest IO, which
# max_hw_sectors_kb does not exceed.
io_opt() {
	local opt max

	opt=$(cat "/sys/block/$1/queue/optimal_io_size")
	max=$(cat "/sys/block/$1/queue/max_hw_sectors_kb")
	echo "optimal_io_size $opt, max_hw_sectors_kb $max"
	[ "$opt" -gt 0 ] && [ "$opt" -ge $((max * 1024)) ] &&
		[ $((opt % 4096)) -eq 0 ]
}

# The block trace of the server's side: the bios queued to its disks.
trace_start() {
	mountpoint -q "$TRACE" || mount -t tracefs nodev "$TRACE" || return 1
	echo 0 >"$TRACE/tracing_on" && : >"$TRACE/trace" &&
		echo 1 >"$TRACE/events/block/block_bio_queue/enable" &&
		echo 1 >"$TRACE/tracing_on"
}

trace_stop() {
	echo 0 >"$TRACE/events/block/block_bio_queue/enable"
	echo 0 >"$TRACE/tracing_on"
}

# bios DISK: "RWBS SECTOR NR_SECTORS" of each bio queued to DISK (a name
# in /sys/class/block) since trace_start.
bios() {
	local mm

	mm=$(tr : , <"/sys/class/block/$1/dev")
	sed -n "s/.*block_bio_queue: $mm \([A-Z]*\) \([0-9]*\) + \([0-9]*\) .*/\1 \2 \3/p" \
		"$TRACE/trace"
}

# saw DISK REGEX: a bio queued to DISK matches REGEX.
saw() {
	bios "$1" | grep -qE "$2" && return 0
	echo "no bio on $1 matches '$2'; seen:"
	bios "$1" | sort | uniq -c | head -n 20
	return 1
}

# write_data DEV MIB_OFFSET: 1 MiB of random data through DEV.
write_data() {
	head -c 1M /dev/urandom >"$DATA" &&
		dd if="$DATA" of="/dev/$1" bs=1M seek="$2" oflag=direct \
			status=none
}

# server_has DISK MIB_OFFSET FILE: the server's disk holds FILE there.
server_has() {
	cmp "$3" <(dd if="$1" bs=1M skip="$2" count=1 iflag=direct status=none)
}

zeroes() {
	head -c 1M /dev/zero >"$DATA.zero"
	echo "$DATA.zero"
}

flush_count() {
	awk '{ print $16 }' "/sys/block/$NULLB/stat"
}

fua_write() {
	local sector=$((100 * 8))

	trace_start || return 1
	head -c 4096 /dev/urandom >"$DATA.4k"
	dd if="$DATA.4k" of="/dev/$NULL_DEV" bs=4k seek=100 count=1 \
		oflag=direct,dsync status=none || return 1
	trace_stop
	saw "$NULLB" "^F?WF[A-Z]* $sector 8\$" &&
		cmp "$DATA.4k" <(dd if="/dev/$NULLB" bs=4k skip=100 count=1 \
			iflag=direct status=none)
}

flush() {
	local before after

	before=$(flush_count)
	write_data "$NULL_DEV" 4 || return 1
	trace_start || return 1
	sync "/dev/$NULL_DEV" || return 1
	trace_stop
	after=$(flush_count)
	echo "flushes completed by $NULLB: $before before, $after after"
	[ "$after" -gt "$before" ] && saw "$NULLB" "^F" &&
		server_has "/dev/$NULLB" 4 "$DATA"
}

# discard DEV DISK: 1 MiB written at 16 MiB, discarded, reads zeroes on
# the server; the MiB after it is untouched.
discard() {
	local sector=$((16 << 11))

	write_data "$1" 17 && cp "$DATA" "$DATA.after" &&
		write_data "$1" 16 && server_has "/dev/$2" 16 "$DATA" || return 1
	trace_start || return 1
	blkdiscard -o 16M -l 1M "/dev/$1" || return 1
	trace_stop
	saw "$2" "^D[A-Z]* $sector " && server_has "/dev/$2" 16 "$(zeroes)" &&
		server_has "/dev/$2" 17 "$DATA.after"
}

write_zeroes() {
	local sector=$((8 << 11)) max

	max=$(cat "/sys/block/$LOOP_DEV/queue/write_zeroes_max_bytes")
	[ "$max" -gt 0 ] ||
		{ echo "$LOOP_DEV does not do write-zeroes"; return 1; }
	write_data "$LOOP_DEV" 8 && server_has "$LOOP" 8 "$DATA" || return 1
	trace_start || return 1
	blkdiscard -z -o 8M -l 1M "/dev/$LOOP_DEV" || return 1
	trace_stop
	# A write-zeroes shows as "N" (no data).
	saw "${LOOP#/dev/}" "^N[A-Z]* $sector " && server_has "$LOOP" 8 "$(zeroes)"
}

srv_sess_dir() {
	echo "$SRV_DEVS/${2#/dev/}/sessions/$1"
}

access_ro() {
	local dev

	rnbd_map acc-ro "$LOOP" access_mode=ro || return 1
	dev=$(rnbd_dev_of acc-ro "$LOOP") || return 1
	[ "$(cat "$(srv_sess_dir acc-ro "$LOOP")/access_mode")" = ro ] &&
		[ "$(cat "$(srv_sess_dir acc-ro "$LOOP")/read_only")" = 1 ] &&
		[ "$(cat "/sys/block/$dev/ro")" = 1 ] || return 1
	if dd if=/dev/zero of="/dev/$dev" bs=4k count=1 oflag=direct \
		status=none 2>/dev/null; then
		echo "a write to the read-only $dev succeeded"
		return 1
	fi
	dd if="/dev/$dev" of=/dev/null bs=4k count=1 iflag=direct status=none
}

access_migration() {
	rnbd_map acc-mig "$LOOP" access_mode=migration &&
		[ "$(cat "$(srv_sess_dir acc-mig "$LOOP")/access_mode")" = migration ]
}

unmap_all_of() {
	local d rc=0

	for d in /sys/block/rnbd*; do
		[ -e "$d/rnbd/session" ] || continue
		[ "$(cat "$d/rnbd/session")" = "$1" ] || continue
		rnbd_unmap "$(basename "$d")" || rc=1
	done
	return $rc
}

unmap_access() {
	unmap_all_of acc-ro && unmap_all_of acc-mig
}

# force_close_bad: what is not 1 is refused with EINVAL, and the server's
# log quotes it; the device stays open.
force_close_bad() {
	local f v

	f="$(srv_sess_dir ops "/dev/$NULLB")/force_close"
	for v in 0 yes; do
		rnbd_write_refused "$f" "$v" "Invalid argument" \
			"rnbd_server: ops: force_close: write 1, not '$v'" ||
			return 1
	done
	[ -e "$f" ] && dd if="/dev/$NULL_DEV" of=/dev/null bs=4k count=1 \
		iflag=direct status=none
}

# force_close: the server drops the client's null_blk and says so; the
# client's IO on it fails, and it unmaps.
force_close() {
	local dir since err

	dir=$(srv_sess_dir ops "/dev/$NULLB")
	since=$(rnbd_kmsg_mark)
	err=$(rnbd_write_err "$dir/force_close" 1) ||
		{ echo "the write of 1 failed: $err"; return 1; }
	rnbd_wait 30 test ! -e "$dir" || { echo "$dir stays"; return 1; }
	rnbd_kmsg_since "$since" | grep -F "rnbd_server: ops: force_close of /dev/$NULLB" ||
		{ echo "the server's log does not say it closed /dev/$NULLB"; return 1; }
	err=$(timeout 60 dd if="/dev/$NULL_DEV" of=/dev/null bs=4k count=1 \
		iflag=direct status=none 2>&1)
	case $? in
	0) echo "a read of the closed device succeeded"; return 1 ;;
	124) echo "a read of the closed device did not end in 60 s"; return 1 ;;
	esac
	echo "the read failed: $err"
	rnbd_unmap "$NULL_DEV" && rnbd_wait 30 test ! -e "/sys/block/$NULL_DEV"
}

# force_close_race: the client's unmap and the server's force_close of
# the same device at the same moment, RACE_ROUNDS times.  The write of 1
# succeeds, with "force_close of" in the server's log when it closed the
# device first; or it fails because the unmap's CLOSE removed the session's
# directory first: ENOENT when the directory was gone before the write
# opened the file, EACCES when only the file was (the shell's open then
# creates it, which sysfs refuses), ENODEV when it went while open.
# Anything else fails.  Either way the directory goes, the unmap succeeds
# and the disk goes.
force_close_race() {
	local i dev dir since err first=0 late=0 gone=0

	for i in $(seq "$RACE_ROUNDS"); do
		rnbd_map race "/dev/$NULLB" || return 1
		dev=$(rnbd_dev_of race "/dev/$NULLB") || return 1
		dir=$(srv_sess_dir race "/dev/$NULLB")
		since=$(rnbd_kmsg_mark)
		rnbd_unmap "$dev" &
		if err=$(rnbd_write_err "$dir/force_close" 1); then
			if rnbd_kmsg_since "$since" |
				grep -qF "rnbd_server: race: force_close of /dev/$NULLB"; then
				first=$((first + 1))
			else
				late=$((late + 1))
			fi
		else
			case $err in
			"No such file or directory" | "Permission denied" | \
			"No such device")
				echo "round $i: the directory was gone: $err"
				gone=$((gone + 1)) ;;
			*)
				wait $!
				echo "round $i: the write of 1 failed: $err"
				return 1
				;;
			esac
		fi
		wait $! || { echo "round $i: unmap failed"; return 1; }
		rnbd_wait 30 test ! -e "$dir" ||
			{ echo "round $i: $dir stays"; return 1; }
		rnbd_wait 30 test ! -e "/sys/block/$dev" ||
			{ echo "round $i: $dev stays"; return 1; }
	done
	echo "force_close closed it first $first times, came after the unmap's CLOSE $late times, found it gone $gone times"
}

# force_unmap_open: a force unmap of an open device, the last of its
# session, succeeds; the disk goes, and closing it later is harmless.
force_unmap_open() {
	local dev rc=0

	rnbd_map force "/dev/$NULLB" || return 1
	dev=$(rnbd_dev_of force "/dev/$NULLB") || return 1
	exec 4<"/dev/$dev"
	rnbd_unmap_busy "$dev" || rc=1
	rnbd_unmap "$dev" force || rc=1
	rnbd_wait 30 test ! -e "/sys/block/$dev" ||
		{ echo "$dev stays after a force unmap"; rc=1; }
	exec 4<&-
	[ ! -e /sys/class/rtrs-client/force ] ||
		{ echo "the session stays"; rc=1; }
	return $rc
}

rmmod_refused() {
	rmmod rnbd-client 2>/dev/null && { echo "rnbd-client went"; return 1; }
	[ -b "/dev/$LOOP_DEV" ]
}

# The loop device, mapped and unmapped ROUNDS times.
map_unmap_rounds() {
	local i dev start=$SECONDS

	rnbd_unmap "$LOOP_DEV" || return 1
	for i in $(seq "$ROUNDS"); do
		rnbd_map rounds "$LOOP" || { echo "map $i failed"; return 1; }
		dev=$(rnbd_dev_of rounds "$LOOP") ||
			{ echo "map $i made no device"; return 1; }
		dd if="/dev/$dev" of=/dev/null bs=4k count=1 iflag=direct \
			status=none || { echo "read $i failed"; return 1; }
		rnbd_unmap "$dev" || { echo "unmap $i failed"; return 1; }
	done
	echo "$ROUNDS rounds in $((SECONDS - start)) s"
	[ ! -e /sys/class/rtrs-client/rounds ] ||
		{ echo "the session stays"; return 1; }
}

no_device_left() {
	[ "$(rnbd_nr_mapped)" -eq 0 ] || { echo "the client has $(rnbd_nr_mapped)"; return 1; }
	ls "$SRV_DEVS"
	[ -z "$(ls "$SRV_DEVS")" ]
}

setup_done() {
	[ -n "$NULL_DEV" ] && [ -n "$LOOP_DEV" ] && return 0
	cat "$DATA.setup"
	return 1
}

ktap_header 22
setup >"$DATA.setup" 2>&1
ktap_check "map a null_blk and a loop device" setup_done
ktap_check "HDIO_GETGEO: 4 heads, 16 sectors, a cylinder per 64 sectors" \
	geometry "$LOOP_DEV"
ktap_check "optimal_io_size: the session's largest IO" io_opt "$LOOP_DEV"
ktap_check "a FUA write reaches the server's disk as FUA" fua_write
ktap_check "a flush reaches the server's disk" flush
ktap_check "a discard reaches null_blk, which reads zeroes" \
	discard "$NULL_DEV" "$NULLB"
ktap_check "a discard reaches the loop device" discard "$LOOP_DEV" "${LOOP#/dev/}"
ktap_check "a write-zeroes reaches the loop device as one" write_zeroes
ktap_check "a second rw mapping is refused" \
	rnbd_map_refused "Operation not permitted" acc-rw "$LOOP"
ktap_check "a read-only mapping: the server says ro, writes fail" access_ro
ktap_check "the same session cannot map it twice" \
	rnbd_map_refused "File exists" acc-ro "$LOOP" access_mode=ro
ktap_check "a migration mapping beside the rw one" access_migration
ktap_check "a third writer is refused" \
	rnbd_map_refused "Operation not permitted" acc-rw2 "$LOOP" \
	access_mode=migration
ktap_check "unmap the access-mode mappings" unmap_access
ktap_check "force_close refuses what is not 1" force_close_bad
ktap_check "force_close: the client's IO fails, it unmaps" force_close
ktap_check "force_close racing the client's unmap, $RACE_ROUNDS times" \
	force_close_race
ktap_check "unmap of an open device: normal refused, force done" force_unmap_open
ktap_check "rmmod rnbd-client refused while a device is mapped" rmmod_refused
ktap_check "map and unmap $ROUNDS times" map_unmap_rounds
ktap_check "nothing mapped on either side" no_device_left
ktap_check "rnbd-client unloads after the unmaps" rmmod rnbd-client
rnbd_modules_unload
rnbd_nullb_down "$NULLB"
[ -n "$LOOP" ] && rnbd_loop_down "$LOOP" "$LOOP_FILE"
rm -f "$DATA" "$DATA".*
ktap_finish
