#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Bad input from the administrator, in one guest: map_device strings with
# missing, unknown, overlong or wrong options, unreachable servers, missing
# devices and paths that leave dev_search_path; bad writes to the writable
# sysfs files; bad module parameters.  Each is refused with its own error
# and a line in the kernel log about its own input, and leaves nothing
# mapped, loaded or changed.
#
# rnbd-vm: topology=one

. "$(dirname "$0")/lib.sh"

CTL=/sys/devices/virtual/rnbd-client/ctl
LOOP_FILE=/dev/shm/rnbd-bad-input.img
LOOP_FILE2=/dev/shm/rnbd-bad-input2.img
LOG=/tmp/rnbd-bad-input.log
# The server looks for devices in /dev: device paths are relative to it.
SEARCH=/dev
LOOP=
NAME=
LOOP2=
NAME2=
ADDR=
# An address of path 0's subnet that no guest has.
NOBODY=

setup() {
	rnbd_rdma_up || { echo "rxe did not come up"; return 1; }
	LOOP=$(rnbd_loop_up "$LOOP_FILE" 16) || return 1
	NAME=${LOOP#/dev/}
	LOOP2=$(rnbd_loop_up "$LOOP_FILE2" 16) || return 1
	NAME2=${LOOP2#/dev/}
	ADDR=$(rnbd_path_addr 0 server)
	NOBODY=${ADDR%.*}.77
	modprobe rnbd-server dev_search_path=$SEARCH && modprobe rnbd-client
}

# Neither programs nor $(...) where bash does it alone: under the debug
# kernel and TCG each process started costs up to a second, and each case
# here started a dozen.  Each of these sets a variable of its name.

# nr_sessions: the client's sessions, into NR_SESSIONS.
nr_sessions() {
	local s=(/sys/class/rtrs-client/*)

	[ -e "${s[0]}" ] || s=()
	NR_SESSIONS=${#s[@]}
}

# new_errors SINCE: the kernel's messages of our modules after SINCE
# (rnbd_kmsg_mark), into NEW_ERRORS, a line each.
new_errors() {
	local line

	NEW_ERRORS=
	while IFS= read -r line; do
		[[ $line =~ (rnbd|rtrs)_(client|server|core):\  ]] &&
			NEW_ERRORS+=$line$'\n'
	done < <(rnbd_kmsg_since "$1")
	NEW_ERRORS=${NEW_ERRORS%$'\n'}
}

# has_line ERE TEXT: a line of TEXT matches ERE (as grep -E's).
has_line() {
	local line

	while IFS= read -r line; do
		[[ $line =~ $1 ]] && return 0
	done <<<"$2"
	return 1
}

# file_text FILE: what FILE holds, into FILE_TEXT.
file_text() {
	FILE_TEXT=
	IFS= read -r -d '' FILE_TEXT <"$1"
	return 0
}

# re STRING: STRING as an extended regular expression that matches it.
re() {
	printf '%s\n' "$1" | sed 's/[].[\*^$+?(){}|]/\\&/g'
}

# pace: half a second at least since the last write refused.  Our modules
# log bad input rate-limited, ten lines every 5 s at most from one place
# in the code: written faster (a fast host, not TCG), a line a check looks
# for could be left out.  The time (in us) is kept in a file: the checks
# run in subshells.
pace() {
	local last=0 left nap

	[ ! -r "$LOG.pace" ] || read -r last <"$LOG.pace"
	left=$((last + 500000 - ${EPOCHREALTIME/./}))
	if [ "$left" -gt 0 ]; then
		printf -v nap '0.%06d' "$left"
		rnbd_nap "$nap"
	fi
	echo "${EPOCHREALTIME/./}" >"$LOG.pace"
}

# refused WANT FILE STRING PATTERN...: writing STRING to FILE fails with
# the error WANT (its text: "Invalid argument" for EINVAL); each PATTERN
# (grep -E) matches a line our modules logged since the write began;
# nothing is mapped and no session is left.  The write is bash's own, not
# under timeout(1): a write that hangs is the test's timeout (rnbd-vm).
refused() {
	local want=$1 file=$2 str=$3 since mapped sessions rc err p

	shift 3
	[ $# -gt 0 ] || { echo "refused: no kernel log line to look for"; return 1; }
	pace
	rnbd_kmsg_mark >/dev/null
	since=$RNBD_KMSG_MARK
	rnbd_nr_mapped >/dev/null
	mapped=$RNBD_NR_MAPPED
	nr_sessions
	sessions=$NR_SESSIONS
	rc=0
	{ echo "$str" >"$file"; } 2>"$LOG" || rc=1
	file_text "$LOG"
	err=${FILE_TEXT%$'\n'}
	new_errors "$since"
	[ -z "$err" ] || echo "$err"
	[ -z "$NEW_ERRORS" ] || echo "$NEW_ERRORS"
	[ $rc -ne 0 ] || { echo "'$str' accepted"; return 1; }
	[ "${err##*: write error: }" = "$want" ] ||
		{ echo "the error is not '$want'"; return 1; }
	for p in "$@"; do
		has_line "$p" "$NEW_ERRORS" ||
			{ echo "no line of the kernel log matches '$p'"; return 1; }
	done
	rnbd_nr_mapped >/dev/null
	[ "$RNBD_NR_MAPPED" -eq "$mapped" ] ||
		{ echo "devices: $mapped before, $RNBD_NR_MAPPED after"; return 1; }
	rnbd_wait 10 same_sessions "$sessions" ||
		{ echo "sessions: $sessions before, $NR_SESSIONS after"; return 1; }
}

# same_sessions N: the client has N sessions.
same_sessions() {
	nr_sessions
	[ "$NR_SESSIONS" -eq "$1" ]
}

# bad_map DESC WANT STRING PATTERN...: a map_device string refused.
bad_map() {
	ktap_check "map_device refuses $1" refused "$2" "$CTL/map_device" "$3" \
		"${@:4}"
}

EINVAL="Invalid argument"
long=$(printf 'x%.0s' $(seq 300))
# The start of a line of rnbd-client's parser.
MAP="rnbd_client: map_device:"

# srv_refused DEVICE_PATH ERRNO: the client's line when the server refused
# to open DEVICE_PATH with -ERRNO.
srv_refused() {
	echo "rnbd_client: bad: cannot open $(re "$1") on the server: -$2\$"
}

# The errors of the map_device cases, and the lines of the log that say
# why, from what rnbd-client, rtrs-client and rnbd-server print: the
# parser's EINVAL names the option; the connection errors are those
# Documentation/admin-guide.rst lists: ETIMEDOUT for a connection request
# nobody answers in 40 s (the one guest's dummy netdevs have no ARP, so
# the address resolves and the request goes unanswered), ECONNRESET for the
# CM's "invalid service ID" reject (no line names the port: the reject
# says that nothing listens there); the server's errors of OPEN come back
# as they are (ENOENT, EINVAL for "..", ENOTBLK) and both sides log them.
map_cases() {
	local ok="path=ip:$ADDR device_path=$NAME" path7="" i o cpus up

	for i in $(seq 7); do
		path7+=" path=ip:$ADDR"
	done
	cpus=$(rnbd_nr_cpu_ids)
	up="../$SEARCH/$NAME"
	bad_map "an empty line" "$EINVAL" "" "$MAP sessname= is mandatory"
	bad_map "no sessname" "$EINVAL" "$ok" "$MAP sessname= is mandatory"
	bad_map "no path for a new session" "$EINVAL" \
		"sessname=bad device_path=$NAME" \
		"$MAP path= is mandatory: no session bad yet\$"
	bad_map "no device_path" "$EINVAL" "sessname=bad path=ip:$ADDR" \
		"$MAP device_path= is mandatory"
	bad_map "an unknown option" "$EINVAL" "sessname=bad $ok color=red" \
		"$MAP unknown option or missing value 'color=red'"
	bad_map "seven paths" "$EINVAL" "sessname=bad$path7 device_path=$NAME" \
		"$MAP more than 6 path="
	bad_map "an overlong sessname" "$EINVAL" "sessname=$long $ok" \
		"$MAP sessname must be 1 to [0-9]+ characters"
	bad_map "an overlong device_path" "$EINVAL" \
		"sessname=bad path=ip:$ADDR device_path=$long" \
		"$MAP device_path must be 1 to [0-9]+ characters"
	bad_map "an address that is not one" "$EINVAL" \
		"sessname=bad path=ip:300.1.2.3 device_path=$NAME" \
		"rtrs_core: invalid destination address 'ip:300\.1\.2\.3'"
	bad_map "an unknown address type" "$EINVAL" \
		"sessname=bad path=xx:$ADDR device_path=$NAME" \
		"rtrs_core: invalid destination address 'xx:$(re "$ADDR")'"
	bad_map "a bad gid" "$EINVAL" \
		"sessname=bad path=gid:zz device_path=$NAME" \
		"rtrs_core: invalid destination address 'gid:zz'"
	bad_map "access_mode=rwx" "$EINVAL" "sessname=bad $ok access_mode=rwx" \
		"$MAP access_mode must be ro, rw or migration"
	bad_map "dest_port=0" "$EINVAL" "sessname=bad $ok dest_port=0" \
		"$MAP dest_port must be 1 to 65535"
	bad_map "dest_port=70000" "$EINVAL" "sessname=bad $ok dest_port=70000" \
		"$MAP dest_port must be 1 to 65535"
	bad_map "nr_poll_queues=-2" "$EINVAL" \
		"sessname=bad $ok nr_poll_queues=-2" \
		"$MAP nr_poll_queues must be -1 to $cpus\$"
	bad_map "nr_poll_queues=many" "$EINVAL" \
		"sessname=bad $ok nr_poll_queues=many" \
		"$MAP unknown option or missing value 'nr_poll_queues=many'"
	bad_map "more polled queues than CPUs" "$EINVAL" \
		"sessname=bad $ok nr_poll_queues=$((cpus + 1))" \
		"$MAP nr_poll_queues must be -1 to $cpus\$"
	bad_map "a sessname with a slash" "$EINVAL" "sessname=a/b $ok" \
		"$MAP sessname must not contain '/'"
	for o in sessname=bad device_path=$NAME access_mode=ro dest_port=1234 \
		nr_poll_queues=0; do
		bad_map "${o%%=*}= twice" "$EINVAL" "sessname=bad $ok $o $o" \
			"$MAP ${o%%=*}= given more than once\$"
	done
	bad_map "an unreachable server" "Connection timed out" \
		"sessname=bad path=ip:$NOBODY device_path=$NAME" \
		"rtrs_client: bad: cannot connect path [^ ]*@ip:$(re "$NOBODY"): -110\$"
	bad_map "a port nobody listens on" "Connection reset by peer" \
		"sessname=bad dest_port=4000 $ok" \
		"rtrs_client: bad: connection 0 rejected: invalid service ID \(-104\)" \
		"rtrs_client: bad: cannot connect path [^ ]*@ip:$(re "$ADDR"): -104\$"
	bad_map "a missing device" "No such file or directory" \
		"sessname=bad path=ip:$ADDR device_path=nosuchdisk" \
		"rnbd_server: bad: cannot open $SEARCH/nosuchdisk: -2\$" \
		"$(srv_refused nosuchdisk 2)"
	bad_map "a path out of dev_search_path" "$EINVAL" \
		"sessname=bad path=ip:$ADDR device_path=$up" \
		"rnbd_server: bad: device path '$(re "$up")' leaves dev_search_path" \
		"$(srv_refused "$up" 22)"
	bad_map "a device that is not a block device" "Block device required" \
		"sessname=bad path=ip:$ADDR device_path=null" \
		"rnbd_server: bad: cannot open $SEARCH/null: -15\$" \
		"$(srv_refused null 15)"
}

usage() {
	grep -q sessname "$CTL/map_device"
}

DEV=
mapped_good() {
	[ -n "$DEV" ] && [ -b "/dev/$DEV" ]
}

# A second device of the session, mapped without path=, and unmapped.
second_without_path() {
	local dev

	echo "sessname=good device_path=$NAME2" >"$CTL/map_device" || return 1
	dev=$(rnbd_dev_of good "$NAME2")
	if [ -z "$dev" ] || [ ! -b "/dev/$dev" ]; then
		echo "$NAME2 is not mapped"
		return 1
	fi
	rnbd_unmap "$dev"
}

# bad_write NAME FILE VALUE...: each VALUE refused with EINVAL and a line
# of the kernel log that names NAME and quotes VALUE (neither has a
# character special to grep -E); FILE reads the same after, or, for the
# counts the heartbeats move, no less than before (not reset): both of
# wr_counts, the three of the server's wc_completion, the maximum of the
# client's (its mean per poll may drop).
bad_write() {
	local name=$1 file=$2 before v n=0

	case $file in
	*/wr_counts) n=2 ;;
	*/rtrs-server/*/wc_completion) n=3 ;;
	*/wc_completion) n=1 ;;
	esac
	shift 2
	file_text "$file"
	before=$FILE_TEXT
	for v in "$@"; do
		refused "$EINVAL" "$file" "$v" "$name.*'$v'" || return 1
		file_text "$file"
		if [ "$n" -gt 0 ]; then
			not_less "$n" "$before" "$FILE_TEXT" ||
				{ echo "$file went from $before to $FILE_TEXT"; return 1; }
		elif [ "$FILE_TEXT" != "$before" ]; then
			echo "$file changed: $FILE_TEXT"
			return 1
		fi
	done
}

# not_less N "A..." "B...": the first N numbers of B no less than A's.
not_less() {
	local n=$1 i a b

	read -ra a <<<"$2"
	read -ra b <<<"$3"
	for ((i = 0; i < n; i++)); do
		[ "${b[i]}" -ge "${a[i]}" ] || return 1
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

# one_line_refused FILE STRING PATTERN: STRING refused with EINVAL as
# refused() checks, in one line of the kernel log, which PATTERN matches.
one_line_refused() {
	refused "$EINVAL" "$1" "$2" "$3" || return 1
	[[ $NEW_ERRORS != *$'\n'* ]] || { echo "more than one line logged"; return 1; }
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
	ktap_check "mpath_policy refuses a name, numbers and nothing" \
		bad_write mpath_policy /sys/class/rtrs-client/good/mpath_policy \
		fastest 3 -1 0x1 rrr ""
	ktap_check "server force_close refuses 2" bad_write force_close \
		"/sys/class/rnbd-server/ctl/devices/$NAME/sessions/good/force_close" 2
	ktap_check "server disconnect refuses 0 and 'now'" bad_write \
		disconnect "$sp/disconnect" 0 now
	for f in rdma sg_entries rdma_lat wr_counts wc_completion reconnects \
		cpu_migration_from cpu_migration_to reset_all; do
		ktap_check "client stats/$f refuses 0, 2, 'yes' and nothing" \
			bad_write "stats/$f" "$cp/stats/$f" 0 2 yes ""
	done
	ktap_check "server stats/rdma refuses 0 and 'reset'" bad_write stats/rdma \
		"$sp/stats/rdma" 0 reset
	ktap_check "server stats/wr_counts refuses 0 and 'reset'" bad_write \
		stats/wr_counts "$sp/stats/wr_counts" 0 reset
	ktap_check "server stats/wc_completion refuses 0 and 'reset'" bad_write \
		stats/wc_completion "$sp/stats/wc_completion" 0 reset
	f=/sys/class/rtrs-client/good
	ktap_check "add_path refuses an address that is not one, in one line" \
		one_line_refused "$f/add_path" ip:300.1.2.3 \
		"rtrs_core: invalid destination address 'ip:300\.1\.2\.3'"
	ktap_check "hb_interval_ms refuses 99, 60001, 'soon' and nothing" \
		bad_write hb_interval_ms "$f/hb_interval_ms" 99 60001 soon ""
	ktap_check "hb_missed_max refuses 0, 101, 'many' and nothing" \
		bad_write hb_missed_max "$f/hb_missed_max" 0 101 many ""
	ktap_check "max_reconnect_attempts refuses -2, 10000, 'x' and nothing" \
		bad_write max_reconnect_attempts "$f/max_reconnect_attempts" \
		-2 10000 x ""
	ktap_check "reconnect_timeout refuses -1, 86401, 'soon' and nothing" \
		bad_write reconnect_timeout \
		/sys/module/rnbd_client/parameters/reconnect_timeout \
		-1 86401 soon ""
	ktap_check "the device still works" still_works
	ktap_check "unmap" rnbd_unmap "$DEV"
}

# bad_param MODULE PARAM=VALUE: modprobe fails with EINVAL, the module is
# not loaded and the log names the parameter.
bad_param() {
	local m=$1 p=$2 since out

	rnbd_kmsg_mark >/dev/null
	since=$RNBD_KMSG_MARK
	out=$(modprobe "$m" "$p" 2>&1) && { echo "$m loaded with $p"; return 1; }
	echo "$out"
	[ "${out##*: }" = "$EINVAL" ] || { echo "the error is not EINVAL"; return 1; }
	grep -q "^${m//-/_} " /proc/modules && { echo "$m is loaded"; return 1; }
	rnbd_kmsg_since "$since" | grep "${p%%=*}" ||
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

ktap_header 68
setup_done() {
	[ -n "$NAME" ] && grep -q '^rnbd_client ' /proc/modules && return 0
	cat "$LOG.setup"
	return 1
}

setup >"$LOG.setup" 2>&1
ktap_check "server up, exporting $SEARCH/$NAME" setup_done
ktap_check "map_device prints its usage" usage
map_cases
# Not in ktap_check, whose subshell would lose DEV.  As upstream's parser,
# a dest_port= is the port of the path= after it only: this one is not.
rnbd_map good "$NAME" dest_port=4000 && DEV=$(rnbd_dev_of good "$NAME")
ktap_check "a good map after all that, its dest_port= after its path=" \
	mapped_good
ktap_check "a second device of the session mapped without path=" \
	second_without_path
sysfs_cases
ktap_check "modules unload" rnbd_modules_unload
param_cases
rnbd_modules_unload 2>/dev/null
[ -n "$LOOP" ] && rnbd_loop_down "$LOOP" "$LOOP_FILE"
[ -n "$LOOP2" ] && rnbd_loop_down "$LOOP2" "$LOOP_FILE2"
rm -f "$LOG" "$LOG.setup" "$LOG.pace"
ktap_finish
