#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# What clients may take of the server, in one guest, with our own client:
# each of rtrs-server's limits (max_sessions, max_chunk_memory_mb,
# max_paths_per_session, max_cons_per_path), set at run time, lets a
# client map up to it and refuses the next session, path or connection
# with the limit's own errno and a log line that names the limit and the
# client's address; once a session goes, another maps.  A bad value for a limit is refused with
# EINVAL and a log line, and changes nothing.  (max_half_open_paths and
# half_open_timeout_ms need a client that leaves its paths half open:
# rtrs-bad-clt's limit-half-open, in bad-client.sh.)
#
# rnbd-vm: topology=one

. "$(dirname "$0")/lib.sh"

LIMITS=/sys/module/rtrs_server/parameters
CTL=/sys/devices/virtual/rnbd-client/ctl
IMG=/dev/shm/rnbd-limits
# A session's chunks: 16 of 64 KiB, 1 MiB.
SRV_PARAMS="sess_queue_depth=16 max_chunk_size=65536"
NR_DISKS=3

# disk N: the loop device of image N, 1 to NR_DISKS.
disk() {
	losetup -n -O NAME -j "$IMG.$1"
}

setup() {
	local i

	rnbd_rdma_up || { echo "rxe did not come up"; return 1; }
	for i in $(seq 1 $NR_DISKS); do
		rnbd_loop_up "$IMG.$i" 8 >/dev/null ||
			{ echo "no loop device"; return 1; }
	done
	# shellcheck disable=SC2086 # one word per parameter
	modprobe rtrs-server $SRV_PARAMS && modprobe rnbd-server &&
		modprobe rnbd-client
}

# limit NAME [VALUE]: print the limit, or set it.
limit() {
	if [ $# -eq 1 ]; then
		cat "$LIMITS/$1"
	else
		echo "$2" >"$LIMITS/$1"
	fi
}

# bad_value NAME VALUE: refused with EINVAL and a log line naming NAME,
# and NAME keeps its value.
bad_value() {
	local before

	before=$(limit "$1")
	# Below printk's rate limit (10 lines in 5 s), which the server's
	# line of a bad value is under.
	sleep 1
	rnbd_write_refused "$LIMITS/$1" "$2" "Invalid argument" "$1 must be" ||
		return 1
	[ "$(limit "$1")" = "$before" ] ||
		{ echo "$1 is $(limit "$1") after $1=$2, was $before"; return 1; }
}

bad_values() {
	bad_value max_sessions 0 && bad_value max_sessions 65537 &&
		bad_value max_sessions ten &&
		bad_value max_paths_per_session 129 &&
		bad_value max_cons_per_path 1 &&
		bad_value max_cons_per_path 4097 &&
		bad_value max_half_open_paths 0 &&
		bad_value half_open_timeout_ms 999 &&
		bad_value half_open_timeout_ms 600001 &&
		bad_value max_chunk_memory_mb 0 &&
		bad_value max_chunk_memory_mb -1
}

# The default of max_chunk_memory_mb is half of the memory.
chunk_memory_default() {
	local mem

	mem=$(awk '/^MemTotal:/ { print int($2 / 2048) }' /proc/meminfo)
	echo "max_chunk_memory_mb $(limit max_chunk_memory_mb), MemTotal / 2: $mem MiB"
	[ "$(limit max_chunk_memory_mb)" -le "$mem" ] &&
		[ "$(limit max_chunk_memory_mb)" -ge $((mem * 9 / 10)) ]
}

# map_sess N: session lim<N> maps disk N over path 0.
map_sess() {
	rnbd_map "lim$1" "$(disk "$1")"
}

unmap_sess() {
	local dev

	dev=$(rnbd_dev_of "lim$1" "$(disk "$1")") || return 1
	rnbd_unmap "$dev" &&
		rnbd_wait 30 test ! -e "/sys/class/rtrs-server/lim$1"
}

# refused ERROR LOG CMD...: CMD fails with ERROR (as the write says it),
# and the kernel logs a line with LOG.
refused() {
	local want=$1 log=$2 mark err

	shift 2
	mark=$(rnbd_kmsg_mark)
	if err=$("$@" 2>&1); then
		echo "$* was not refused"
		return 1
	fi
	echo "$err"
	grep -q "$want" <<<"$err" ||
		{ echo "refused, but not with '$want'"; return 1; }
	rnbd_kmsg_since "$mark" | grep -q "$log" ||
		{ echo "no log line with '$log'"; return 1; }
}

# max_sessions 2: two sessions map, the third is refused (EUSERS); once
# one is unmapped, the third maps.
sessions() {
	limit max_sessions 2 || return 1
	if ! { map_sess 1 && map_sess 2; }; then
		echo "two sessions did not map"
		return 1
	fi
	refused "Too many users" "past max_sessions 2" map_sess 3 || return 1
	if ! { unmap_sess 1 && map_sess 3; }; then
		echo "the third did not map once the first went"
		return 1
	fi
	unmap_sess 2 && unmap_sess 3 && limit max_sessions 1024
}

# max_chunk_memory_mb 2: the chunks of two sessions fit, the third's do not
# (ENOMEM).
chunk_memory() {
	local saved

	saved=$(limit max_chunk_memory_mb)
	limit max_chunk_memory_mb 2 || return 1
	if ! { map_sess 1 && map_sess 2; }; then
		echo "two sessions did not map"
		return 1
	fi
	refused "Cannot allocate memory" "past max_chunk_memory_mb 2" map_sess 3 ||
		return 1
	if ! { unmap_sess 2 && map_sess 3; }; then
		echo "the third did not map once the second went"
		return 1
	fi
	unmap_sess 1 && unmap_sess 3 && limit max_chunk_memory_mb "$saved"
}

# max_cons_per_path below what our client opens (one per CPU and an admin
# connection): refused with EINVAL.
cons() {
	local need=$(($(rnbd_nr_cpu_ids) + 1))

	limit max_cons_per_path $((need - 1)) || return 1
	refused "Invalid argument" "max_cons_per_path is $((need - 1))" map_sess 1 ||
		return 1
	limit max_cons_per_path "$need" && map_sess 1 && unmap_sess 1 &&
		limit max_cons_per_path 513
}

# map_both N: session lim<N> maps disk N over every path.
map_both() {
	local opts="sessname=lim$1" i

	for i in $(seq 0 $((RNBD_NR_PATHS - 1))); do
		opts+=" path=ip:$(rnbd_path_addr "$i" server)"
	done
	echo "$opts device_path=$(disk "$1")" >"$CTL/map_device"
}

# max_paths_per_session 1: a session over two paths is refused (EMLINK:
# our client maps only with every path it was given); over one, it maps.
paths() {
	limit max_paths_per_session 1 || return 1
	refused "Too many links" "past max_paths_per_session 1" map_both 1 ||
		return 1
	if ! { map_sess 1 && unmap_sess 1; }; then
		echo "one path did not map"
		return 1
	fi
	limit max_paths_per_session 128 && map_both 1 && unmap_sess 1
}

teardown() {
	local i

	rnbd_unload rnbd-client rtrs-client rnbd-server rtrs-server rtrs-core
	for i in $(seq 1 $NR_DISKS); do
		rnbd_loop_down "$(disk "$i")" "$IMG.$i"
	done
}

ktap_header 8
ktap_check "setup: rxe, $NR_DISKS loop devices, rtrs-server ($SRV_PARAMS)" setup
ktap_check "a bad value of a limit is refused with EINVAL, and changes nothing" \
	bad_values
ktap_check "max_chunk_memory_mb is half of the memory by default" \
	chunk_memory_default
ktap_check "max_sessions 2: the third session is refused with EUSERS" sessions
ktap_check "max_chunk_memory_mb 2 (1 MiB a session): the third session is refused with ENOMEM" \
	chunk_memory
ktap_check "max_cons_per_path: a path of one connection too many is refused with EINVAL" \
	cons
ktap_check "max_paths_per_session 1: a session of two paths is refused with EMLINK" \
	paths
ktap_check "teardown" teardown
ktap_finish
