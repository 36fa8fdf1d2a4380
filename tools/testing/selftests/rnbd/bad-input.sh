#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Bad input from the administrator, in one guest: map_device strings with
# missing, unknown, overlong or wrong options, unreachable servers, missing
# devices and paths that leave dev_search_path; bad writes to the writable
# sysfs files; bad module parameters.  Each is refused with an error and a
# message in the kernel log, and leaves nothing mapped, loaded or changed.
#
# rnbd-vm: topology=one

. "$(dirname "$0")/lib.sh"

CTL=/sys/devices/virtual/rnbd-client/ctl
LOOP_FILE=/dev/shm/rnbd-bad-input.img
LOG=/tmp/rnbd-bad-input.log
# The server looks for devices in /dev: device paths are relative to it.
SEARCH=/dev
LOOP=
NAME=
ADDR=
# An address of path 0's subnet that no guest has.
NOBODY=

setup() {
	rnbd_rdma_up || { echo "rxe did not come up"; return 1; }
	LOOP=$(rnbd_loop_up "$LOOP_FILE" 16) || return 1
	NAME=${LOOP#/dev/}
	ADDR=$(rnbd_path_addr 0 server)
	NOBODY=${ADDR%.*}.77
	modprobe rnbd-server dev_search_path=$SEARCH && modprobe rnbd-client
}

nr_sessions() {
	find /sys/class/rtrs-client -mindepth 1 -maxdepth 1 | wc -l
}

kmsg_lines() {
	dmesg | wc -l
}

# new_errors SINCE: the kernel's messages of our modules after line SINCE.
new_errors() {
	dmesg | tail -n +$(($1 + 1)) |
		grep -E '(rnbd|rtrs)_(client|server|core): '
}

# refused WANT WRITE_TO STRING: writing STRING fails, with WANT in its
# error ("" takes any error), and says why in the kernel log; nothing is
# mapped and no session is left.
refused() {
	local want=$1 file=$2 str=$3 since mapped sessions

	since=$(kmsg_lines)
	mapped=$(rnbd_nr_mapped)
	sessions=$(nr_sessions)
	# shellcheck disable=SC2016 # the inner shell expands them
	if timeout 120 bash -c 'echo "$1" >"$2"' - "$str" "$file" \
		2>"$LOG"; then
		echo "'$str' accepted"
		return 1
	fi
	cat "$LOG"
	if [ -n "$want" ] && ! grep -q "$want" "$LOG"; then
		echo "the error is not '$want'"
		return 1
	fi
	new_errors "$since" ||
		{ echo "nothing in the kernel log says why"; return 1; }
	[ "$(rnbd_nr_mapped)" -eq "$mapped" ] ||
		{ echo "devices: $mapped before, $(rnbd_nr_mapped) after"; return 1; }
	rnbd_wait 10 test "$(nr_sessions)" -eq "$sessions" ||
		{ echo "sessions: $sessions before, $(nr_sessions) after"; return 1; }
}

# bad_map DESC WANT STRING: a map_device string refused.
bad_map() {
	ktap_check "map_device refuses $1" refused "$2" "$CTL/map_device" "$3"
}

EINVAL="Invalid argument"
long=$(printf 'x%.0s' $(seq 300))

map_cases() {
	local ok="path=ip:$ADDR device_path=$NAME" path7="" i

	for i in $(seq 7); do
		path7+=" path=ip:$ADDR"
	done
	bad_map "an empty line" "$EINVAL" ""
	bad_map "no sessname" "$EINVAL" "$ok"
	bad_map "no path" "$EINVAL" "sessname=bad device_path=$NAME"
	bad_map "no device_path" "$EINVAL" "sessname=bad path=ip:$ADDR"
	bad_map "an unknown option" "$EINVAL" "sessname=bad $ok color=red"
	bad_map "seven paths" "$EINVAL" "sessname=bad$path7 device_path=$NAME"
	bad_map "an overlong sessname" "$EINVAL" "sessname=$long $ok"
	bad_map "an overlong device_path" "$EINVAL" \
		"sessname=bad path=ip:$ADDR device_path=$long"
	bad_map "an address that is not one" "$EINVAL" \
		"sessname=bad path=ip:300.1.2.3 device_path=$NAME"
	bad_map "an unknown address type" "$EINVAL" \
		"sessname=bad path=xx:$ADDR device_path=$NAME"
	bad_map "a bad gid" "$EINVAL" \
		"sessname=bad path=gid:zz device_path=$NAME"
	bad_map "access_mode=rwx" "$EINVAL" "sessname=bad $ok access_mode=rwx"
	bad_map "dest_port=0" "$EINVAL" "sessname=bad $ok dest_port=0"
	bad_map "dest_port=70000" "$EINVAL" "sessname=bad $ok dest_port=70000"
	bad_map "nr_poll_queues=-2" "$EINVAL" "sessname=bad $ok nr_poll_queues=-2"
	bad_map "nr_poll_queues=many" "$EINVAL" \
		"sessname=bad $ok nr_poll_queues=many"
	bad_map "more polled queues than CPUs" "$EINVAL" \
		"sessname=bad $ok nr_poll_queues=$(($(rnbd_nr_cpu_ids) + 1))"
	bad_map "a sessname with a slash" "$EINVAL" "sessname=a/b $ok"
	bad_map "an unreachable server" "" \
		"sessname=bad path=ip:$NOBODY device_path=$NAME"
	bad_map "a port nobody listens on" "" "sessname=bad $ok dest_port=4000"
	bad_map "a missing device" "" \
		"sessname=bad path=ip:$ADDR device_path=nosuchdisk"
	bad_map "a path out of dev_search_path" "" \
		"sessname=bad path=ip:$ADDR device_path=../$SEARCH/$NAME"
	bad_map "a device that is not a block device" "" \
		"sessname=bad path=ip:$ADDR device_path=null"
}

usage() {
	grep -q sessname "$CTL/map_device"
}

DEV=
mapped_good() {
	[ -n "$DEV" ] && [ -b "/dev/$DEV" ]
}

# bad_write DESC FILE VALUE...: each VALUE refused with EINVAL, FILE reads
# the same after.
bad_write() {
	local desc=$1 file=$2 before v

	shift 2
	before=$(cat "$file")
	for v in "$@"; do
		refused "$EINVAL" "$file" "$v" || return 1
		[ "$(cat "$file")" = "$before" ] ||
			{ echo "$file changed: $(cat "$file")"; return 1; }
	done
}

srv_path() {
	local p

	for p in /sys/class/rtrs-server/good/paths/*; do
		[ -d "$p" ] && { echo "$p"; return 0; }
	done
	return 1
}

clt_path() {
	local p

	for p in /sys/class/rtrs-client/good/paths/*; do
		[ -d "$p" ] && { echo "$p"; return 0; }
	done
	return 1
}

still_works() {
	[ -b "/dev/$DEV" ] && dd if="/dev/$DEV" of=/dev/null bs=4k count=1 \
		iflag=direct status=none
}

sysfs_cases() {
	local sp cp f

	sp=$(srv_path)
	cp=$(clt_path)
	ktap_check "unmap_device refuses 'gently'" bad_write unmap_device \
		"/sys/block/$DEV/rnbd/unmap_device" gently
	ktap_check "mpath_policy refuses a name, a number and nothing" \
		bad_write mpath_policy /sys/class/rtrs-client/good/mpath_policy \
		fastest 3 -1 ""
	ktap_check "server force_close refuses 2" bad_write force_close \
		"/sys/class/rnbd-server/ctl/devices/$NAME/sessions/good/force_close" 2
	ktap_check "server disconnect refuses 0 and 'now'" bad_write \
		disconnect "$sp/disconnect" 0 now
	for f in rdma reconnects cpu_migration_from cpu_migration_to reset_all; do
		ktap_check "client stats/$f refuses 0, 2, 'yes' and nothing" \
			bad_write "$f" "$cp/stats/$f" 0 2 yes ""
	done
	ktap_check "server stats/rdma refuses 0 and 'reset'" bad_write rdma \
		"$sp/stats/rdma" 0 reset
	ktap_check "reconnect_timeout refuses -1, 86401, 'soon' and nothing" \
		bad_write reconnect_timeout \
		/sys/module/rnbd_client/parameters/reconnect_timeout \
		-1 86401 soon ""
	ktap_check "the device still works" still_works
	ktap_check "unmap" rnbd_unmap "$DEV"
}

# bad_param MODULE PARAM=VALUE: modprobe fails, the module is not loaded
# and the log names the parameter.
bad_param() {
	local m=$1 p=$2 since

	since=$(kmsg_lines)
	modprobe "$m" "$p" 2>&1 && { echo "$m loaded with $p"; return 1; }
	grep -q "^${m//-/_} " /proc/modules && { echo "$m is loaded"; return 1; }
	dmesg | tail -n +$((since + 1)) | grep "${p%%=*}" ||
		{ echo "the log does not name ${p%%=*}"; return 1; }
}

param_cases() {
	local c

	for c in rtrs-server:sess_queue_depth=0 rtrs-server:sess_queue_depth=65536 \
		rtrs-server:max_chunk_size=4096 rtrs-server:max_chunk_size=12288 \
		rtrs-server:max_chunk_size=big rtrs-server:always_invalidate=maybe \
		rnbd-server:port_nr=0 rnbd-server:port_nr=65536 \
		rnbd-server:dev_search_path=dev \
		rnbd-client:reconnect_timeout=-1 \
		rnbd-client:reconnect_timeout=86401 \
		rnbd-client:reconnect_timeout=soon; do
		ktap_check "${c%%:*} refuses ${c#*:}" bad_param "${c%%:*}" "${c#*:}"
	done
}

ktap_header 52
setup_done() {
	[ -n "$NAME" ] && grep -q '^rnbd_client ' /proc/modules && return 0
	cat "$LOG.setup"
	return 1
}

setup >"$LOG.setup" 2>&1
ktap_check "server up, exporting $SEARCH/$NAME" setup_done
ktap_check "map_device prints its usage" usage
map_cases
# Not in ktap_check, whose subshell would lose DEV.
rnbd_map good "$NAME" && DEV=$(rnbd_dev_of good "$NAME")
ktap_check "a good map after all that" mapped_good
sysfs_cases
ktap_check "modules unload" rnbd_modules_unload
param_cases
rnbd_modules_unload 2>/dev/null
[ -n "$LOOP" ] && rnbd_loop_down "$LOOP" "$LOOP_FILE"
rm -f "$LOG" "$LOG.setup"
ktap_finish
