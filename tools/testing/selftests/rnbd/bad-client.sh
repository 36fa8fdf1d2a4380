#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Malformed messages: rtrs-bad-clt (tools/testing/rtrs-bad-clt), a test
# client that speaks raw RTRS, sends our server wrong CON_REQs, INFO_REQs,
# IMMs, trailers and RNBD messages, one case per KTAP result.  Each case
# must get what it expects: its connection rejected with an errno, its
# path closed, or an error response on a path that goes on serving; and
# the test client's shared session writes and reads its disk after each.
# That session must not break: the case it broke during fails, or the next
# case when it broke between two (its note names the case before).  A case
# that cannot be made against this server is a skip with its reason.
# Then rtrs-bad-clt's fuzzer sends RNBD_TEST_FUZZ_COUNT messages (5000)
# made from RNBD_TEST_FUZZ_SEED (random; printed, to replay a failure) in
# at most RNBD_TEST_FUZZ_SECONDS (400; 500 on the debug kernel): every
# request must be answered or its path closed, and the shared session must
# go on serving.  Meanwhile, the server's sysfs files of its paths are
# read over and over, as the fuzzer's paths come and go.
# A client of ours maps another disk before the cases and must still write
# and read it after them; no session of the cases may be left on the
# server, and every module unloads.
#
# rnbd-vm: topology=one
# rnbd-vm: timeout=1500

. "$(dirname "$0")/lib.sh"

# Not a power of two, so that a chunk id beyond it fits the IMM.
SRV_PARAMS="sess_queue_depth=48"
DBG=/sys/kernel/debug/rtrs_bad_clt
SRV_LIMITS=/sys/module/rtrs_server/parameters
# limit-half-open's limit, set on the server for that case alone, with
# paths closed 3 s after they came.
HALF_OPEN=4
HALF_OPEN_MS=3000
CTL=/sys/devices/virtual/rnbd-client/ctl
DEV=rnbd0
SESSNAME=good
DISK_MB=32
# write-chunk-in-use's disk, whose IO completes 3 s after it came.
SLOW=rnbd-bad-slow
SLOW_NS=3000000000
IMG=/dev/shm/rnbd-bad-client
GOOD_DISK=
BAD_DISK=
SERVER_UP=
CASES=
FUZZ_SEED=${RNBD_TEST_FUZZ_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
FUZZ_COUNT=${RNBD_TEST_FUZZ_COUNT:-5000}
# The debug kernel sent 2000 in 62 s in CI.
FUZZ_SECONDS=${RNBD_TEST_FUZZ_SECONDS:-400}
rnbd_debug_kernel && FUZZ_SECONDS=${RNBD_TEST_FUZZ_SECONDS:-500}

# The exported disks: loop devices over tmpfs files, one for our client,
# one for the test client's shared session, and a slow null_blk, whose
# IO completes from a timer, for a case to find the server holding a READ.
disks_up() {
	modprobe loop || return 1
	truncate -s "${DISK_MB}M" "$IMG.good" "$IMG.bad" &&
		GOOD_DISK=$(losetup -f --show "$IMG.good") &&
		BAD_DISK=$(losetup -f --show "$IMG.bad") &&
		rnbd_nullb_up "$SLOW" 16 irqmode=2 completion_nsec="$SLOW_NS"
}

disks_down() {
	[ -z "$GOOD_DISK" ] || losetup -d "$GOOD_DISK"
	[ -z "$BAD_DISK" ] || losetup -d "$BAD_DISK"
	rm -f "$IMG.good" "$IMG.bad"
	rnbd_nullb_down "$SLOW"
}

bad_client_load() {
	modprobe rtrs-bad-clt server="ip:$(rnbd_path_addr 0 server)" \
		device="$BAD_DISK" slow_device="/dev/$SLOW" \
		half_open="$HALF_OPEN" && [ -r "$DBG/cases" ]
}

# half_open_limits MAX MS: the server's limits of paths not up, which
# limit-half-open checks, set at run time.
half_open_limits() {
	echo "$1" >"$SRV_LIMITS/max_half_open_paths" &&
		echo "$2" >"$SRV_LIMITS/half_open_timeout_ms"
}

server_up() {
	# shellcheck disable=SC2086 # one word per parameter
	modprobe rtrs-server $SRV_PARAMS && modprobe rnbd-server &&
		SERVER_UP=1
}

map() {
	local opts="sessname=$SESSNAME" i

	for i in $(seq 0 $((RNBD_NR_PATHS - 1))); do
		opts+=" path=ip:$(rnbd_path_addr "$i" client),ip:$(rnbd_path_addr "$i" server)"
	done
	modprobe rnbd-client || return 1
	echo "$opts device_path=$GOOD_DISK" >"$CTL/map_device" || return 1
	rnbd_wait 30 test -b "/dev/$DEV" ||
		{ echo "/dev/$DEV did not appear"; return 1; }
}

# verify TAG: 1 MiB written through /dev/$DEV, read back, and found on
# the server's disk.
verify() {
	local want=/tmp/rnbd-bad-client.want got=/tmp/rnbd-bad-client.got rc=0

	[ -b "/dev/$DEV" ] || { echo "/dev/$DEV is not mapped"; return 1; }
	yes "rnbd bad-client $1 $$" | head -c 1M >"$want"
	dd if="$want" of="/dev/$DEV" bs=1M seek=2 oflag=direct conv=fsync \
		status=none &&
		dd if="/dev/$DEV" of="$got" bs=1M skip=2 count=1 iflag=direct \
			status=none &&
		cmp "$want" "$got" &&
		dd if="$GOOD_DISK" of="$got" bs=1M skip=2 count=1 iflag=direct \
			status=none &&
		cmp "$want" "$got" || rc=1
	rm -f "$want" "$got"
	return $rc
}

# run_case NAME: the module's verdict; its line is the diagnostic.
run_case() {
	local result

	[ -n "$SERVER_UP" ] || { echo "not run: the server is not up"; return 1; }
	# A failed case fails the write: the result says why.
	echo "$1" 2>/dev/null >"$DBG/run"
	result=$(cat "$DBG/result")
	echo "$result"
	case $result in
	"pass $1:"*) return 0 ;;
	"skip $1:"*) return 4 ;;
	*) return 1 ;;
	esac
}

# sysfs_reader STOP: reads what the server shows of its paths, as a
# monitoring tool would, while the fuzzer's paths come and go, until STOP
# exists; prints how many rounds it read.
sysfs_reader() {
	local n=0 srv=/sys/class/rtrs-server

	until [ -e "$1" ]; do
		cat "$srv"/*/paths/*/{hca_name,hca_port,src_addr,dst_addr} \
			"$srv"/*/paths/*/stats/* >/dev/null 2>&1
		n=$((n + 1))
	done
	echo "$n"
}

# fuzz: the fuzzer's whole count of messages, and its result line; the
# server's sysfs is read all along.
fuzz() {
	local result stop=/tmp/rnbd-bad-client.stop reads=/tmp/rnbd-bad-client.reads

	[ -n "$SERVER_UP" ] || { echo "not run: the server is not up"; return 1; }
	echo "to replay: RNBD_TEST_FUZZ_SEED=$FUZZ_SEED RNBD_TEST_FUZZ_COUNT=$FUZZ_COUNT"
	rm -f "$stop"
	sysfs_reader "$stop" >"$reads" &
	echo "$FUZZ_SEED $FUZZ_COUNT $((FUZZ_SECONDS * 1000))" 2>/dev/null \
		>"$DBG/fuzz"
	touch "$stop"
	wait $!
	echo "the server's sysfs read $(cat "$reads") times meanwhile"
	rm -f "$stop" "$reads"
	result=$(cat "$DBG/result")
	echo "$result"
	if ! [[ $result =~ ^"pass fuzz: seed $FUZZ_SEED: "([0-9]+)" messages " ]]; then
		return 1
	fi
	[ "${BASH_REMATCH[1]}" -ge "$FUZZ_COUNT" ] ||
		{ echo "fewer than $FUZZ_COUNT messages in $FUZZ_SECONDS s"; return 1; }
}

# server_sessions NAME...: the server has exactly these sessions.
server_sessions() {
	local want have

	want=$(printf '%s\n' "$@" | sort | xargs)
	have=$(find /sys/class/rtrs-server -mindepth 1 -maxdepth 1 \
		-printf '%f\n' 2>/dev/null | sort | xargs)
	[ "$have" = "$want" ]
}

# wait_sessions NAME...: until the server has exactly these sessions, for
# 30 s by the clock (a poll is slow under TCG).
wait_sessions() {
	local end=$((SECONDS + 30))

	until server_sessions "$@"; do
		if [ $SECONDS -ge $end ]; then
			echo "sessions: $(find /sys/class/rtrs-server -mindepth 1 \
				-maxdepth 1 -printf '%f ' 2>/dev/null), expected: $*"
			return 1
		fi
		rnbd_nap 0.5
	done
}

unmap() {
	[ -b "/dev/$DEV" ] || { echo "/dev/$DEV is not mapped"; return 1; }
	echo normal >"/sys/block/$DEV/rnbd/unmap_device" || return 1
	rnbd_wait 30 test ! -e "/sys/block/$DEV" ||
		{ echo "/dev/$DEV still there"; return 1; }
}

bad_client_unload() {
	rnbd_unload rtrs-bad-clt && wait_sessions "$SESSNAME"
}

# The cases' refused connections and malformed messages were traced.
bad_traced() {
	rnbd_traced 1 rtrs_srv_conn_rejected "err=-" &&
		rnbd_traced 1 rtrs_srv_bad_msg "what=" &&
		rnbd_trace_off rtrs_srv
}

unmap_unload() {
	unmap && rnbd_unload rnbd-client rtrs-client rnbd-server rtrs-server rtrs-core
}

# ktap_case NAME EXPECT: a case's KTAP line; a skip gives the module's
# reason, its result line without "skip NAME: ".
ktap_case() {
	local name=$1 expect=$2 out rc

	out=$(run_case "$name" 2>&1)
	rc=$?
	[ -n "$out" ] && printf '%s\n' "$out" | sed 's/^/# /'
	case $rc in
	0) ktap_pass "$name: $expect" ;;
	4) ktap_skip "$name: $expect" "${out#"skip $name: "}" ;;
	*) ktap_fail "$name: $expect" ;;
	esac
}

modinfo rtrs-bad-clt >/dev/null 2>&1 ||
	ktap_skip_all "rtrs-bad-clt.ko is not built (make check builds it with RNBD_TESTS=y)"

# The case list comes from the module: it loads before the plan, and
# connects to nothing until a case runs.
# Not in a subshell: it sets GOOD_DISK and BAD_DISK.
disks_up >/tmp/rnbd-bad-client.setup 2>&1 &&
	bad_client_load >>/tmp/rnbd-bad-client.setup 2>&1
setup_rc=$?
setup=$(cat /tmp/rnbd-bad-client.setup)
rm -f /tmp/rnbd-bad-client.setup
[ $setup_rc -eq 0 ] && CASES=$(cat "$DBG/cases")

ktap_header $((12 + $(grep -c . <<<"$CASES")))
[ -n "$setup" ] && printf '%s\n' "$setup" | sed 's/^/# /'
ktap_check "disks up, rtrs-bad-clt loads with its case list" \
	test $setup_rc -eq 0
ktap_check "rxe up" rnbd_rdma_up
# Not through ktap_check: its subshell would lose SERVER_UP.
server_up >/dev/null 2>&1 && rnbd_trace_on rtrs_srv >/dev/null 2>&1
ktap_check "server: rtrs-server ($SRV_PARAMS) and rnbd-server load" \
	test -n "$SERVER_UP"
ktap_check "our client maps $GOOD_DISK over both paths" map
ktap_check "our client writes and reads back 1 MiB" verify before
while IFS=$'\t' read -r name expect; do
	case $name in
	"") ;;
	limit-half-open)
		saved=("$(cat "$SRV_LIMITS/max_half_open_paths")"
		       "$(cat "$SRV_LIMITS/half_open_timeout_ms")")
		half_open_limits "$HALF_OPEN" "$HALF_OPEN_MS"
		ktap_case "$name" "$expect"
		half_open_limits "${saved[@]}"
		;;
	*) ktap_case "$name" "$expect" ;;
	esac
done <<<"$CASES"
ktap_check "fuzz: $FUZZ_COUNT messages from seed $FUZZ_SEED, the shared session serves after them" \
	fuzz
ktap_check "our client: both paths still connected" rnbd_paths_connected
ktap_check "our client writes and reads back 1 MiB after the cases" \
	verify after
ktap_check "server: rtrs_srv_conn_rejected and rtrs_srv_bad_msg traced" \
	bad_traced
ktap_check "server: only our client's and the shared session are left" \
	wait_sessions "$SESSNAME" rtrs-bad-clt
ktap_check "rtrs-bad-clt unloads, the server closes its session" \
	bad_client_unload
ktap_check "our client unmaps, every module unloads" unmap_unload
rnbd_unload rtrs-bad-clt rnbd-client rtrs-client rnbd-server rtrs-server rtrs-core
disks_down
ktap_finish
