#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The client's remap_device and resize, and its ctl/devices/ link: a disk of
# the server is mapped, the link points to its block device, data written
# is there after a remap of the open device, bad remap_device and resize
# input is refused, resize moves the capacity down and back, a device the
# server force-closed works again after a remap, and the unmap removes the
# link.  The server side is map-lib.sh's, with the force_close on request.
#
# rnbd-vm: topology=two

SESSNAME=remap
MAP_NULL_BLK=0
. "$(dirname "$0")/map-lib.sh"

# The device's directory of this session on the server.
srv_sess_dir() {
	echo "/sys/class/rnbd-server/ctl/devices/$(basename "$DISK")/sessions/$SESSNAME"
}

# server_force_close: on the client's request, close the device for the
# session; then see the client's remap open it again.
server_force_close() {
	local dir

	dir=$(srv_sess_dir)
	[ "$(rnbd_sync_wait force-close "$RNBD_VM_TIMEOUT")" = go ] || return 1
	if [ ! -e "$dir/force_close" ]; then
		rnbd_sync_put force-closed "no $dir/force_close"
		return 1
	fi
	echo 1 >"$dir/force_close" || {
		rnbd_sync_put force-closed "force_close write failed"
		return 1
	}
	rnbd_wait 30 test ! -e "$dir" || {
		rnbd_sync_put force-closed "$dir still there"
		return 1
	}
	rnbd_sync_put force-closed ok
	[ "$(rnbd_sync_wait remapped "$RNBD_VM_TIMEOUT")" = ok ] || return 1
	if [ -e "$dir/force_close" ]; then
		rnbd_sync_put reopened ok
	else
		rnbd_sync_put reopened "the remap did not open $DISK for $SESSNAME"
		return 1
	fi
}

test_server() {
	local rc=0

	if server_up; then
		rnbd_sync_put server-ready "ok $(blockdev --getsize64 "$DISK") $DISK"
		server_force_close || rc=1
	else
		rnbd_sync_put server-ready fail
		rc=1
	fi
	server_finish || rc=1
	return $rc
}

SYSDEV=/sys/block/$DEV/rnbd
# A second pattern, written after the remap, at 40 MiB: beyond the half
# that resize leaves.
PATTERN2=/tmp/rnbd-remap.pattern2
PATTERN2_AT_MB=40

link_name() {
	echo "$CTL/devices/${SERVER_DISK//\//!}@$SESSNAME"
}

# link_ok: ctl/devices/<device_path, '/' as '!'>@<session> is the disk's.
link_ok() {
	local link

	link=$(link_name)
	[ -L "$link" ] || { echo "no link $link"; ls -l "$CTL/devices"; return 1; }
	[ "$(readlink -f "$link")" = "$(readlink -f "/sys/block/$DEV")" ] ||
		{ echo "$link -> $(readlink -f "$link")"; return 1; }
	[ "$(cat "$link/dev")" = "$(cat "/sys/block/$DEV/dev")" ]
}

link_gone() {
	local left

	if [ -e "$(link_name)" ] || [ -L "$(link_name)" ]; then
		echo "$(link_name) is still there"
		return 1
	fi
	left=$(ls -A "$CTL/devices" 2>/dev/null)
	[ -z "$left" ] || { echo "left in devices/: $left"; return 1; }
}

# read_back FILE AT_MB: FILE is on the device at AT_MB MiB.
read_back() {
	local got=/tmp/rnbd-remap.got size rc=0

	size=$(stat -c %s "$1")
	dd if="/dev/$DEV" of="$got" bs=1M skip="$2" count=$((size >> 20)) \
		iflag=direct status=none && cmp "$1" "$got" || rc=1
	rm -f "$got"
	return $rc
}

# write_at FILE AT_MB: FILE written to the device at AT_MB MiB, read back.
write_at() {
	dd if="$1" of="/dev/$DEV" bs=1M seek="$2" oflag=direct conv=fsync \
		status=none && read_back "$1" "$2"
}

# What must not change when the device refuses input.
dev_snapshot() {
	printf '%s %s %s\n' "$(cat "$SYSDEV/state")" \
		"$(cat "/sys/block/$DEV/dev")" \
		"$(blockdev --getsize64 "/dev/$DEV")"
}

remaps_logged() {
	dmesg | grep -c "$SESSNAME: $DEV remapped"
}

# remap_open: remap_device while a reader holds the device open; the block
# device is the same one after, and open.
remap_open() {
	local before logged rc=0

	mapped || return 1
	before=$(dev_snapshot)
	logged=$(remaps_logged)
	exec 3<"/dev/$DEV"
	echo 1 >"$SYSDEV/remap_device" || rc=1
	exec 3<&-
	[ $rc -eq 0 ] || { echo "remap_device failed"; return 1; }
	[ "$(dev_snapshot)" = "$before" ] ||
		{ echo "before: $before, after: $(dev_snapshot)"; return 1; }
	[ "$(remaps_logged)" -gt "$logged" ] ||
		{ echo "the kernel log has no remap"; return 1; }
}

# refused FILE VALUE: writing VALUE to FILE fails and changes nothing.
refused() {
	local before

	before=$(dev_snapshot)
	if printf '%s' "$2" >"$SYSDEV/$1" 2>/dev/null; then
		echo "$1 took '$2'"
		return 1
	fi
	[ "$(dev_snapshot)" = "$before" ] ||
		{ echo "'$2' > $1 changed $before to $(dev_snapshot)"; return 1; }
}

bad_remap() {
	local v rc=0

	mapped || return 1
	for v in 0 2 yes "1 1" -1 " "; do
		refused remap_device "$v" || rc=1
	done
	return $rc
}

bad_resize() {
	local sectors=$((SERVER_SIZE >> 9)) v rc=0

	mapped || return 1
	for v in abc 0 -8 "$((sectors + 8))" 18446744073709551616 "12 34" " "; do
		refused resize "$v" || rc=1
	done
	return $rc
}

# resize_to SECTORS: the capacity follows.
resize_to() {
	local size

	echo "$1" >"$SYSDEV/resize" || { echo "resize to $1 failed"; return 1; }
	size=$(blockdev --getsize64 "/dev/$DEV")
	[ "$size" = $(($1 << 9)) ] ||
		{ echo "resized to $1 sectors: $size bytes"; return 1; }
}

# beyond_end AT_MB: a read at AT_MB MiB finds the end of the device.
beyond_end() {
	local n

	n=$(dd if="/dev/$DEV" bs=1M skip="$1" count=1 iflag=direct \
		status=none | wc -c)
	[ "$n" -eq 0 ] || { echo "read $n bytes at $1 MiB"; return 1; }
}

# resize_down_up: to half the disk, the pattern below the half still there,
# nothing beyond it; then back to the server's size, the second pattern
# (beyond the half) there again.
resize_down_up() {
	local sectors=$((SERVER_SIZE >> 9))

	mapped || return 1
	resize_to $((sectors / 2)) &&
		read_back "$PATTERN" "$PATTERN_AT_MB" &&
		beyond_end "$PATTERN2_AT_MB" &&
		resize_to "$sectors" &&
		read_back "$PATTERN2" "$PATTERN2_AT_MB"
}

# force_closed: the server closed the device; the client's IO fails.
force_closed() {
	local status

	rnbd_sync_put force-close go
	status=$(rnbd_sync_wait force-closed 120) || return 1
	[ "$status" = ok ] || { echo "$status"; return 1; }
	if dd if="/dev/$DEV" of=/dev/null bs=4k count=1 iflag=direct \
		status=none 2>/dev/null; then
		echo "a read went through after force_close"
		return 1
	fi
}

# remap_after_close: the remap opens the device again on the server.
remap_after_close() {
	local status rc=0

	echo 1 >"$SYSDEV/remap_device" || { echo "remap_device failed"; rc=1; }
	[ "$(cat "$SYSDEV/state")" = open ] ||
		{ echo "state: $(cat "$SYSDEV/state")"; rc=1; }
	if [ $rc -eq 0 ]; then
		rnbd_sync_put remapped ok
	else
		rnbd_sync_put remapped fail
	fi
	status=$(rnbd_sync_wait reopened 60) || return 1
	[ "$status" = ok ] || { echo "$status"; return 1; }
	return $rc
}

both_patterns() {
	read_back "$PATTERN" "$PATTERN_AT_MB" &&
		read_back "$PATTERN2" "$PATTERN2_AT_MB"
}

test_client() {
	ktap_header 21
	pattern "$TOKEN" "$PATTERN"
	pattern "$TOKEN.2" "$PATTERN2"
	ktap_check "rxe up" rnbd_rdma_up
	server_ready >/dev/null 2>&1
	ktap_check "server: rnbd-server exports a $DISK_MB MiB disk" \
		test -n "$SERVER_DISK"
	ktap_check "rtrs-client and rnbd-client load" client_modules_load
	ktap_check "map_device: /dev/$DEV of the disk's size" map
	ktap_check "ctl/devices/ links to /sys/block/$DEV" link_ok
	ktap_check "1 MiB pattern written at $PATTERN_AT_MB MiB, read back" \
		write_at "$PATTERN" "$PATTERN_AT_MB"
	ktap_check "remap_device of the open device: same disk, same size" \
		remap_open
	ktap_check "after the remap: the pattern is there" \
		read_back "$PATTERN" "$PATTERN_AT_MB"
	ktap_check "after the remap: a new pattern written, read back" \
		write_at "$PATTERN2" "$PATTERN2_AT_MB"
	ktap_check "after the remap: fio 1M randwrite 4k verified" \
		fio_verify randwrite 4k 1M 16
	ktap_check "remap_device refuses anything but 1" bad_remap
	ktap_check "resize refuses non-numbers, 0 and more than the server's" \
		bad_resize
	ktap_check "resize to half and back: the capacity follows" \
		resize_down_up
	ktap_check "server: force_close, the client's IO fails" force_closed
	ktap_check "remap_device after force_close opens it again" \
		remap_after_close
	ktap_check "after the second remap: both patterns are there" \
		both_patterns
	ktap_check "after the second remap: fio 1M write 64k verified" \
		fio_verify write 64k 1M 16
	ktap_check "unmap_device normal" unmap
	ktap_check "the unmap removed the ctl/devices/ link" link_gone
	ktap_check "client modules unload" rnbd_unload rnbd-client rtrs-client
	rnbd_sync_put client-done
	ktap_check "server: server modules unload" server_down
	rm -f "$PATTERN" "$PATTERN2"
	ktap_finish
}

map_test
