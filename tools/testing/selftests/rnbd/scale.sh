#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A server with many clients, as the client guest can make it: 64 sessions
# of 2 devices each (128 memory-backed null_blk disks on the server),
# sessions over path 0 and path 1 in turn.  All of them map; verified IO
# (crc32c) runs on all 128 at once; half the sessions are closed (their
# devices unmapped by force) while IO runs on every device: the IO of the
# closed ones fails, the other half's goes on verified; the closed half
# maps again, and all 128 verify again.  Then everything is unmapped and
# the server's memory comes back.  No message of the client may have been
# taken as bad by the server, and no connection refused.
#
# The time to map all sessions and the server's memory per session are
# printed as diagnostics.  The server's chunks are kept small (32 of
# 64 KiB a session) so that 64 sessions fit in the guest's memory.
#
# rnbd-vm: topology=two
# rnbd-vm: timeout=1500

. "$(dirname "$0")/lib.sh"

NR_SESS=64
# Two devices a session, not more: what a session costs the server comes
# with its paths and connections, which 64 sessions have; each device
# more costs CI minutes of forks and IO under TCG.
DEVS_PER_SESS=2
NR_DEVS=$((NR_SESS * DEVS_PER_SESS))
DISK_MB=8
QUEUE_DEPTH=32
SRV_PARAMS="sess_queue_depth=$QUEUE_DEPTH max_chunk_size=65536"
CTL=/sys/devices/virtual/rnbd-client/ctl
# The client's mappings, one line "SESSION DISK RNBDN" each.
MAPS=/tmp/rnbd-scale.maps
FIO_TIMEOUT=600

sess_name() {
	echo "scale-$1"
}

# disk_name S D: the server's disk number D of session S.
disk_name() {
	echo "scale$(($1 * DEVS_PER_SESS + $2))"
}

# The server side.

# srv_disks_up: the disks, waited for all at once (one by one, 256 took
# minutes).
srv_disks_up() {
	local i

	for i in $(seq 0 $((NR_DEVS - 1))); do
		rnbd_nullb_make "scale$i" "$DISK_MB" ||
			{ rnbd_log "null_blk scale$i did not come up"; return 1; }
	done
	rnbd_wait 60 srv_disks_there ||
		{ rnbd_log "not every /dev/scaleN is there"; return 1; }
}

srv_disks_there() {
	local i

	for i in $(seq 0 $((NR_DEVS - 1))); do
		[ -b "/dev/scale$i" ] || return 1
	done
}

srv_disks_down() {
	local i rc=0

	for i in $(seq 0 $((NR_DEVS - 1))); do
		rnbd_nullb_down "scale$i" || rc=1
	done
	return $rc
}

# srv_state: what the client's queries get: sessions, open devices, the
# server's MemAvailable in KiB, the messages taken as bad and the
# connections refused since the server came up.
srv_state() {
	local sessions devices mem bad refused

	sessions=$(find /sys/class/rtrs-server/ -mindepth 1 -maxdepth 1 | wc -l)
	devices=$(find /sys/class/rnbd-server/ctl/devices/ -mindepth 3 \
		-maxdepth 3 -path '*/sessions/*' | wc -l)
	mem=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
	bad=$(grep -c ' rtrs_srv_bad_msg: ' "$RNBD_TRACEFS/trace")
	refused=$(grep -c ' rtrs_srv_conn_rejected: ' "$RNBD_TRACEFS/trace")
	echo "$sessions $devices $mem $bad $refused"
}

# srv_answer: answer the client's queries q.N with a.N until it is done.
srv_answer() {
	local n=1 q

	while :; do
		q=$(rnbd_sync_wait "q.$n" "$RNBD_VM_TIMEOUT") || return 1
		[ "$q" = stop ] && return 0
		# Without the caches, which come and go with the server's other
		# work, where MemAvailable is to be compared.
		if [ "$q" = memory ]; then
			sync && echo 3 >/proc/sys/vm/drop_caches
		fi
		rnbd_sync_put "a.$n" "$(srv_state)"
		n=$((n + 1))
	done
}

test_server() {
	local rc=0

	rnbd_rdma_up || { rnbd_sync_put server-ready fail; return 1; }
	# shellcheck disable=SC2086 # one word per parameter
	if ! modprobe rtrs-server $SRV_PARAMS || ! modprobe rnbd-server ||
		! rnbd_trace_on rtrs_srv || ! srv_disks_up; then
		rnbd_sync_put server-ready fail
		return 1
	fi
	rnbd_sync_put server-ready ok
	srv_answer || rc=1
	rnbd_trace_off rtrs_srv
	rnbd_unload rnbd-server rtrs-server || rc=1
	srv_disks_down || rc=1
	rnbd_sync_put server-down "$rc"
	return $rc
}

# The client side.

# shared_tags: every device has a tag for each IO permit of its session,
# the server's chunks less the 2 the client keeps for admin messages,
# shared by its hardware queues (blk-mq's TAG_HCTX_SHARED): fio's 1024
# requests on a session's devices wait for a tag, none for a permit.
# Shared tags do not bring an IO scheduler: none, as without.
shared_tags() {
	local dev f v debugfs=/sys/kernel/debug

	mountpoint -q "$debugfs" || mount -t debugfs none "$debugfs" || return 1
	while read -r _ _ dev; do
		for f in /sys/block/"$dev"/mq/*/nr_tags; do
			read -r v <"$f"
			[ "$v" -eq $((QUEUE_DEPTH - 2)) ] ||
				{ echo "$f: $v"; return 1; }
		done
		f=$debugfs/block/$dev/hctx0/flags
		read -r v <"$f"
		[[ $v == *TAG_HCTX_SHARED* ]] || { echo "$f: $v"; return 1; }
		f=/sys/block/$dev/queue/scheduler
		read -r v <"$f"
		[[ $v == *'[none]'* ]] || { echo "$f: $v"; return 1; }
	done <"$MAPS"
}

# The number of the last query, in a file: ktap_check runs its command in
# a subshell.
QUERY_N=/tmp/rnbd-scale.query

# srv_ask WHAT: query WHAT ("state", "memory" or "stop") to the server,
# under the next number, which it prints.
srv_ask() {
	local n

	n=$(($(cat "$QUERY_N" 2>/dev/null || echo 0) + 1))
	echo "$n" >"$QUERY_N"
	rnbd_sync_put "q.$n" "$1"
	echo "$n"
}

# srv_query [memory]: the server's state, as srv_state prints it; with
# "memory", after the server dropped its caches.
srv_query() {
	local n

	n=$(srv_ask "${1:-state}") && rnbd_sync_wait "a.$n" 120
}

# srv_done: the server side stops answering.
srv_done() {
	srv_ask stop >/dev/null
}

# The server's state at each step, its memory to compare.
STATE=/tmp/rnbd-scale.state
save_state() {
	srv_query memory >"$STATE.$1"
}

# state_field STEP N: field N (1 sessions, 2 devices, 3 MemAvailable,
# 4 bad messages, 5 refused connections) of the state saved at STEP.
state_field() {
	awk -v n="$2" '{ print $n }' "$STATE.$1"
}

server_ready() {
	[ "$(rnbd_sync_wait server-ready 300)" = ok ]
}

client_modules_load() {
	modprobe rtrs-client && modprobe rnbd-client
}

# map_sess S: the session's devices, over path S % 2.
map_sess() {
	local addr d

	addr=$(rnbd_path_addr $(($1 % RNBD_NR_PATHS)) server)
	for d in $(seq 0 $((DEVS_PER_SESS - 1))); do
		echo "sessname=$(sess_name "$1") path=ip:$addr device_path=/dev/$(disk_name "$1" "$d")" \
			>"$CTL/map_device" ||
			{ echo "$(sess_name "$1"): $(disk_name "$1" "$d") did not map"; return 1; }
	done
}

# map_range FIRST LAST: sessions FIRST to LAST map; prints how long it
# took.
map_range() {
	local s t0 t1

	t0=$(date +%s%N)
	for s in $(seq "$1" "$2"); do
		map_sess "$s" || return 1
	done
	t1=$(date +%s%N)
	echo "sessions $1-$2 ($((($2 - $1 + 1) * DEVS_PER_SESS)) devices) mapped in $(((t1 - t0) / 1000000)) ms"
}

# list_maps: the client's mappings, into $MAPS.
list_maps() {
	local d sess path

	for d in /sys/block/rnbd*; do
		[ -e "$d/rnbd/session" ] || continue
		read -r sess <"$d/rnbd/session"
		read -r path <"$d/rnbd/mapping_path"
		echo "$sess $path ${d##*/}"
	done >"$MAPS"
}

# devs_of FIRST LAST: the rnbdN of sessions FIRST to LAST.
devs_of() {
	awk -v a="$1" -v b="$2" '{ s = $1; sub(/^scale-/, "", s) }
		s + 0 >= a && s + 0 <= b { print $3 }' "$MAPS"
}

# all_mapped: every disk of every session is mapped once, at its size,
# and the server has the sessions and the devices open.
all_mapped() {
	local s d want=/tmp/rnbd-scale.want missing dev size

	list_maps
	for s in $(seq 0 $((NR_SESS - 1))); do
		for d in $(seq 0 $((DEVS_PER_SESS - 1))); do
			echo "$(sess_name "$s") /dev/$(disk_name "$s" "$d")"
		done
	done >"$want"
	missing=$(awk 'NR == FNR { m[$1 " " $2]++; next }
		m[$0] != 1 { print }' "$MAPS" "$want")
	rm -f "$want"
	[ -z "$missing" ] ||
		{ echo "not mapped once:"; head -n 5 <<<"$missing"; return 1; }
	[ "$(wc -l <"$MAPS")" -eq "$NR_DEVS" ] ||
		{ echo "$(wc -l <"$MAPS") devices mapped, not $NR_DEVS"; return 1; }
	while read -r _ _ dev; do
		read -r size <"/sys/block/$dev/size"
		[ "$size" -eq $((DISK_MB << 11)) ] ||
			{ echo "/dev/$dev is not $DISK_MB MiB"; return 1; }
	done <"$MAPS"
	server_has "$NR_SESS" "$NR_DEVS"
}

# server_has SESSIONS DEVICES: the server says so.
server_has() {
	local state

	state=$(srv_query) || return 1
	echo "server: sessions, open devices, MemAvailable KiB, bad, refused: $state"
	[ "$(echo "$state" | cut -d' ' -f1-2)" = "$1 $2" ] ||
		{ echo "not $1 sessions and $2 devices"; return 1; }
}

# fio_jobs KIB DEV...: fio's job options: one job for each group of
# FIO_GROUP devices, going round them all at once, KIB KiB of each.
# Kept light for TCG, at iodepth 4: a thread for each of 256 devices, or
# 16 IOs of a job in flight, held up Soft-RoCE enough to retry, and the
# retries ran into Debian 6.1 rxe's fault (testing.rst), a 30 s stall
# each time.
FIO_GROUP=32
fio_jobs() {
	local kib=$1 n=0 nr=0 files=

	shift
	while [ $# -gt 0 ]; do
		files+="${files:+:}/dev/$1"
		n=$((n + 1))
		nr=$((nr + 1))
		shift
		if [ "$nr" -eq "$FIO_GROUP" ] || [ $# -eq 0 ]; then
			printf -- '--name=g%d --filename=%s --size=%dk ' \
				"$n" "$files" $((nr * kib))
			files=
			nr=0
		fi
	done
}

# fio_verify DEV...: 256 KiB written to each device in 64 KiB blocks,
# all devices at once, read back and checked.
fio_verify() {
	local out rc

	# shellcheck disable=SC2046 # one word per option
	out=$(timeout "$FIO_TIMEOUT" fio --thread --disk_util=0 \
		--rw=randwrite --bs=64k --iodepth=4 --ioengine=libaio \
		--direct=1 --verify=crc32c --do_verify=1 --verify_fatal=1 \
		--verify_state_save=0 --group_reporting \
		$(fio_jobs 256 "$@") 2>&1)
	rc=$?
	grep -E '(read|write): IOPS=|err=' <<<"$out"
	[ "$rc" -eq 0 ] || { echo "fio exited with $rc"; tail -n 20 <<<"$out"; }
	return "$rc"
}

fio_verify_all() {
	list_maps
	# shellcheck disable=SC2046 # one word per device
	fio_verify $(devs_of 0 $((NR_SESS - 1)))
}

HALF=$((NR_SESS / 2))
STOP=/tmp/rnbd-scale.stop
KEPT_LOG=/tmp/rnbd-scale.kept
CLOSED_LOG=/tmp/rnbd-scale.closed

# kept_io DEV...: verified fio runs, one after the other, until $STOP;
# "RUNS FAILED" into $KEPT_LOG.
kept_io() {
	local runs=0 failed=0

	while [ ! -e "$STOP" ]; do
		runs=$((runs + 1))
		fio_verify "$@" >"$KEPT_LOG.$runs" 2>&1 || failed=$((failed + 1))
	done
	echo "$runs $failed" >"$KEPT_LOG"
}

# closed_io DEV...: reads and writes on each device until they fail; the
# exit code of fio into $CLOSED_LOG.
closed_io() {
	local rc

	# shellcheck disable=SC2046 # one word per option
	timeout "$FIO_TIMEOUT" fio --thread --disk_util=0 --rw=randrw \
		--bs=4k --iodepth=4 --ioengine=libaio --direct=1 --time_based \
		--runtime=$((FIO_TIMEOUT - 60)) $(fio_jobs 1024 "$@") \
		>"$CLOSED_LOG.out" 2>&1
	rc=$?
	echo "$rc" >"$CLOSED_LOG"
}

# close_half_under_io: IO on every device, then sessions 0 to HALF - 1
# closed by unmapping their devices by force.  The fio on them fails; the
# verified runs on the other half all pass, at least one of them begun
# after the close.
close_half_under_io() {
	local closed kept kept_pid closed_pid dev runs_at_close runs failed
	local rc=0

	list_maps
	closed=$(devs_of 0 $((HALF - 1)))
	kept=$(devs_of "$HALF" $((NR_SESS - 1)))
	rm -f "$STOP" "$KEPT_LOG"* "$CLOSED_LOG"*
	# shellcheck disable=SC2086 # one word per device
	kept_io $kept &
	kept_pid=$!
	# shellcheck disable=SC2086 # one word per device
	io_count $closed >"$CLOSED_LOG.before"
	# shellcheck disable=SC2086 # one word per device
	closed_io $closed &
	closed_pid=$!
	rnbd_wait 120 io_since "$CLOSED_LOG.before" ||
		{ echo "no IO on some device to close"; rc=1; }
	for dev in $closed; do
		rnbd_unmap "$dev" force ||
			{ echo "force unmap of $dev failed"; rc=1; }
	done
	runs_at_close=$(kept_runs)
	wait "$closed_pid"
	rnbd_wait "$FIO_TIMEOUT" kept_runs_past $((runs_at_close + 1))
	touch "$STOP"
	wait "$kept_pid"
	read -r runs failed <"$KEPT_LOG"
	echo "kept half: $runs verified fio runs, $failed failed ($runs_at_close begun before the close)"
	echo "closed half: fio exited with $(cat "$CLOSED_LOG")"
	grep -m 3 -E 'err=|error' "$CLOSED_LOG.out"
	[ "$failed" -eq 0 ] || { tail -n 20 "$KEPT_LOG.$runs"; rc=1; }
	[ "$runs" -gt "$runs_at_close" ] ||
		{ echo "no verified run on the kept half after the close"; rc=1; }
	case $(cat "$CLOSED_LOG") in
	0 | 124)
		echo "the IO on the closed devices did not fail"
		rc=1
		;;
	esac
	return "$rc"
}

# kept_runs: how many runs kept_io has begun.
kept_runs() {
	local runs=("$KEPT_LOG".*)

	[ -e "${runs[0]}" ] || { echo 0; return; }
	echo "${#runs[@]}"
}

kept_runs_past() {
	[ "$(kept_runs)" -gt "$1" ]
}

# dev_ios DEV: the reads and writes DEV completed, into $IOS.
dev_ios() {
	local reads writes

	read -r reads _ _ _ writes _ <"/sys/block/$1/stat"
	IOS=$((reads + writes))
}

# io_count DEV...: "DEV IOS" for each.
io_count() {
	local d

	for d in "$@"; do
		dev_ios "$d"
		echo "$d $IOS"
	done
}

# io_since FILE: each device of FILE (io_count's) completed IO since.
io_since() {
	local d n

	while read -r d n; do
		dev_ios "$d"
		[ "$IOS" -gt "$n" ] || return 1
	done <"$1"
}

half_closed() {
	list_maps
	[ "$(wc -l <"$MAPS")" -eq $((NR_DEVS - HALF * DEVS_PER_SESS)) ] ||
		{ echo "$(wc -l <"$MAPS") devices mapped"; return 1; }
	[ -z "$(devs_of 0 $((HALF - 1)))" ] ||
		{ echo "still mapped: $(devs_of 0 $((HALF - 1)))"; return 1; }
	[ ! -e "/sys/class/rtrs-client/$(sess_name 0)" ] ||
		{ echo "session $(sess_name 0) is still there"; return 1; }
	rnbd_wait 60 server_has $((NR_SESS - HALF)) $((NR_DEVS - HALF * DEVS_PER_SESS)) ||
		server_has $((NR_SESS - HALF)) $((NR_DEVS - HALF * DEVS_PER_SESS))
}

# discard_unmap_all: every device discarded (null_blk frees the memory)
# and unmapped; the server closes every session.
discard_unmap_all() {
	local dev

	list_maps
	while read -r _ _ dev; do
		if ! blkdiscard "/dev/$dev" || ! rnbd_unmap "$dev"; then
			echo "$dev: discard or unmap failed"
			return 1
		fi
	done <"$MAPS"
	rnbd_wait 60 server_has 0 0 || server_has 0 0
}

# memory_back: at least 80 % of what the mappings took is available again
# (runs left 2 to 8 % behind): a session's queue pairs or chunks not freed
# would leave about half behind.
memory_back() {
	local before mapped after took

	before=$(state_field idle 3)
	mapped=$(state_field mapped 3)
	after=$(state_field unmapped 3)
	took=$((before - mapped))
	echo "server MemAvailable: $before KiB idle, $mapped KiB with $NR_SESS sessions, $after KiB after"
	echo "server memory per session: $((took / NR_SESS)) KiB"
	[ "$after" -ge $((before - took / 5)) ] ||
		{ echo "$(((before - after) / NR_SESS)) KiB a session not back"; return 1; }
}

# nothing_bad: no message of the client taken as bad, no connection refused.
nothing_bad() {
	local bad refused

	bad=$(state_field unmapped 4)
	refused=$(state_field unmapped 5)
	echo "server: $bad messages taken as bad, $refused connections refused"
	[ "$bad" -eq 0 ] && [ "$refused" -eq 0 ]
}

memory_back_nothing_bad() {
	memory_back && nothing_bad
}

server_down() {
	[ "$(rnbd_sync_wait server-down 300)" = 0 ]
}

test_client() {
	rm -f "$QUERY_N"
	ktap_header 16
	ktap_check "rxe up" rnbd_rdma_up
	ktap_check "server: $NR_DEVS null_blk disks of $DISK_MB MiB exported" \
		server_ready
	ktap_check "rtrs-client and rnbd-client load" client_modules_load
	save_state idle
	ktap_check "$NR_SESS sessions x $DEVS_PER_SESS devices map" \
		map_range 0 $((NR_SESS - 1))
	save_state mapped
	ktap_check "all $NR_DEVS devices mapped; the server has them open" \
		all_mapped
	ktap_check "$((QUEUE_DEPTH - 2)) tags a device, one per IO permit, shared by its hardware queues, no scheduler" \
		shared_tags
	ktap_check "fio verified on all $NR_DEVS devices at once" fio_verify_all
	ktap_check "$HALF sessions closed under IO: their IO fails, the rest verifies" \
		close_half_under_io
	ktap_check "the closed sessions are gone on both sides" half_closed
	ktap_check "the closed sessions map again" map_range 0 $((HALF - 1))
	ktap_check "all $NR_DEVS devices mapped again" all_mapped
	ktap_check "fio verified on all $NR_DEVS devices again" fio_verify_all
	ktap_check "every device discarded and unmapped, every session closed" \
		discard_unmap_all
	save_state unmapped
	ktap_check "the server's memory is back, nothing taken as bad" \
		memory_back_nothing_bad
	ktap_check "client modules unload" rnbd_unload rnbd-client rtrs-client
	srv_done
	ktap_check "server: server modules unload, disks removed" \
		server_down
	rm -f "$MAPS" "$STATE".* "$QUERY_N" "$STOP" "$KEPT_LOG"* "$CLOSED_LOG"*
	ktap_finish
}

# The core goes last, when both sides are done with it.
rnbd_run_roles
ret=$?
rnbd_unload rtrs-core || ret=1
exit "$ret"
