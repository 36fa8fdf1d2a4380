#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The statistics and the tracepoints of a session of two paths.  The client
# maps a ram disk of the server over both paths, round-robin, and fio
# writes and reads it: the client's stats/rdma of the paths count the
# requests and bytes the block layer counted, a message back for each,
# reads too (rxe's counters), each path the same as the
# server's stats/rdma of that path; its sg_entries and rdma_lat count each
# of those requests once, by its sg entries and by its latency, whose
# maximum is in the slowest row; the work requests posted and completions
# reaped of each path, on both sides, are within what the protocol does
# per request, and its polls (wc_completion) reaped those completions, some
# of the server's several in one poll; the CPU migrations add up; each
# stats file resets on "1", reset_all resets them all.  The tracepoints of
# both sides fire as the paths come up and go, as the server answers each
# message, and as the client recovers a path the server closed; those
# Linux's own RTRS and RNBD have fire under its names.
#
# rnbd-vm: topology=two

SESSNAME=stats
MAP_NULL_BLK=0
. "$(dirname "$0")/map-lib.sh"

SRV_PATHS=/sys/class/rtrs-server/$SESSNAME/paths
# The user header of each RNBD IO, struct rnbd_msg_io, in the bytes counted.
IO_HDR=32
# fio's IO, "rw:bs:size", at iodepth 16, of no more sizes (the block
# layer merges none) for wr_counted to tell its reads apart.
FIO_IO="randwrite:4k:2M write:64k:2M randread:4k:2M read:64k:2M"
# A READ of this many bytes at most goes through the request's bounce
# buffer (RTRS_CLT_BOUNCE_SIZE).
BOUNCE_SIZE=4096

# The server's side.

# srv_reset: every path's stats/rdma, wr_counts and wc_completion reset,
# and read as zero.
srv_reset() {
	local p

	for p in "$SRV_PATHS"/*/stats; do
		echo 1 >"$p/rdma" && echo 1 >"$p/wr_counts" &&
			echo 1 >"$p/wc_completion" || return 1
		[ "$(cat "$p/rdma")" = "0 0 0 0" ] ||
			{ echo "$p/rdma: $(cat "$p/rdma") after reset"; return 1; }
		wr_zeroed "$p/wr_counts" && wr_zeroed "$p/wc_completion" ||
			return 1
	done
}

# srv_stats: "<path> <rdma> <wr_counts> <wc_completion>" for each path.
# wc_completion is read first: a completion reaped between the two reads
# (a heartbeat's) then shows in wr_counts, which counts each one it does.
srv_stats() {
	local p s wc

	for p in "$SRV_PATHS"/*; do
		s=$p/stats
		wc=$(cat "$s/wc_completion")
		echo "$(basename "$p") $(cat "$s/rdma") $(cat "$s/wr_counts") $wc"
	done
}

# srv_disconnect: the server closes its side of one path.
srv_disconnect() {
	local p

	for p in "$SRV_PATHS"/*; do
		echo 1 >"$p/disconnect"
		return
	done
	echo "no path in $SRV_PATHS"
	return 1
}

# srv_trace: a session came and went, with two paths up and closed; each
# message of RNBD, and each answer of RTRS, traced.
srv_trace() {
	rnbd_traced 1 rtrs_srv_sess_created "sess=$SESSNAME " &&
		rnbd_traced 2 rtrs_srv_path_connected "sess=$SESSNAME " &&
		rnbd_wait 30 rnbd_traced 2 rtrs_srv_path_closed "sess=$SESSNAME " &&
		rnbd_wait 30 rnbd_traced 1 rtrs_srv_sess_destroyed "sess=$SESSNAME " &&
		rnbd_traced 2 rtrs_srv_path_closed "sess=$SESSNAME " &&
		rnbd_traced 1 create_sess "sess=$SESSNAME" &&
		rnbd_traced 1 process_msg_sess_info "sess=$SESSNAME clt_ver=2 ver=2" &&
		rnbd_traced 1 process_msg_open "sess=$SESSNAME dev_name=$DISK access_mode=rw" &&
		rnbd_traced 100 process_rdma "sess=$SESSNAME device_id=0 op=WRITE" &&
		rnbd_traced 100 process_rdma "sess=$SESSNAME device_id=0 op=READ" &&
		rnbd_traced 200 send_io_resp_imm "sess=$SESSNAME msg_id=[0-9]* dir=\(READ\|WRITE\) errno=0 need_inval=[01] rereg=1" &&
		rnbd_traced 1 process_msg_close "sess=$SESSNAME device_id=0" &&
		rnbd_traced 1 destroy_sess "sess=$SESSNAME"
}

test_server() {
	local status rc=0

	if server_up && rnbd_trace_on rtrs_srv && rnbd_trace_on rnbd_srv; then
		rnbd_sync_put server-ready "ok $(blockdev --getsize64 "$DISK") $DISKS"
	else
		rnbd_sync_put server-ready fail
		server_finish
		return 1
	fi
	if rnbd_sync_wait srv-reset "$RNBD_VM_TIMEOUT" >/dev/null; then
		status=$(srv_reset 2>&1) && status=ok
		rnbd_sync_put srv-reset-done "$status"
		rnbd_sync_wait srv-stats "$RNBD_VM_TIMEOUT" >/dev/null &&
			rnbd_sync_put srv-stats-done "$(srv_stats)"
		status="no request to disconnect"
		rnbd_sync_wait srv-disconnect "$RNBD_VM_TIMEOUT" >/dev/null &&
			status=$(srv_disconnect 2>&1) && status=ok
		rnbd_sync_put srv-disconnect-done "$status"
	fi
	rnbd_sync_wait client-done "$RNBD_VM_TIMEOUT" >/dev/null || rc=1
	status=$(srv_trace 2>&1) && status=ok
	rnbd_sync_put srv-trace "$status"
	rnbd_trace_off rtrs_srv
	rnbd_trace_off rnbd_srv
	server_finish || rc=1
	return $rc
}

# The client's side.

# possible_cpus: how many CPUs the kernel has room for.
possible_cpus() {
	local r n=0

	for r in $(tr ',' ' ' </sys/devices/system/cpu/possible); do
		if [[ $r == *-* ]]; then
			n=$((n + ${r#*-} - ${r%-*} + 1))
		else
			n=$((n + 1))
		fi
	done
	echo $n
}

# per_cpu FILE: one number per possible CPU.
per_cpu() {
	local v re='^[0-9]+( [0-9]+)*$'

	read -ra v <"$1"
	if [ "${#v[@]}" -ne "$(possible_cpus)" ] || ! [[ "${v[*]}" =~ $re ]]; then
		echo "$1: '${v[*]}' for $(possible_cpus) CPUs"
		return 1
	fi
}

# sum FILE: the sum of its numbers.
sum() {
	local v n=0 i

	read -ra v <"$1"
	for i in "${v[@]}"; do
		n=$((n + i))
	done
	echo $n
}

# sg_rows FILE: its rows, "<entries>: <requests>", 0 to 16 and ">16".
sg_rows() {
	local want

	want=$( (seq 0 16; echo '>16') | sed 's/$/: N/')
	[ "$(sed 's/: [0-9]*$/: N/' "$1")" = "$want" ] ||
		{ echo "$1:"; cat "$1"; return 1; }
}

# lat_rows FILE: its rows, "<N> ms: <reads> <writes>" for N 1 to 65536,
# then ">= 65536 ms" and "maximum ms".
lat_rows() {
	local want n

	want=$(for n in $(seq 0 16); do echo "$((1 << n)) ms: N N"; done
		echo ">= 65536 ms: N N"; echo "maximum ms: N N")
	[ "$(sed 's/: [0-9]* [0-9]*$/: N N/' "$1")" = "$want" ] ||
		{ echo "$1:"; cat "$1"; return 1; }
}

stats_files() {
	local p s re='^[0-9]+( [0-9]+){5}$'

	for p in "$SESS/paths"/*; do
		s=$p/stats
		[[ "$(cat "$s/rdma")" =~ $re ]] ||
			{ echo "$s/rdma: '$(cat "$s/rdma")'"; return 1; }
		[ "$(cat "$s/reconnects")" = "0 0" ] ||
			{ echo "$s/reconnects: '$(cat "$s/reconnects")'"; return 1; }
		per_cpu "$s/cpu_migration_from" && per_cpu "$s/cpu_migration_to" ||
			return 1
		sg_rows "$s/sg_entries" && lat_rows "$s/rdma_lat" || return 1
		[[ "$(cat "$s/wr_counts")" =~ ^[0-9]+\ [0-9]+$ ]] ||
			{ echo "$s/wr_counts: '$(cat "$s/wr_counts")'"; return 1; }
		[[ "$(cat "$s/wc_completion")" =~ ^[0-9]+\ [0-9]+$ ]] ||
			{ echo "$s/wc_completion: '$(cat "$s/wc_completion")'"; return 1; }
		[ "$(cat "$s/reset_all")" = "echo 1 to reset all statistics" ] ||
			{ echo "$s/reset_all: '$(cat "$s/reset_all")'"; return 1; }
	done
}

# wr_zeroed FILE: a wr_counts or wc_completion just reset: zero, but for
# the heartbeats both sides may have exchanged since (seen under load: "4
# 4"; each exchange is at most two work requests and two completions a
# side).
wr_zeroed() {
	local n c

	read -ra c <"$1"
	for n in "${c[@]}"; do
		[ "$n" -le 8 ] || { echo "$1: ${c[*]} after reset"; return 1; }
	done
}

# zeroed PATHDIR [rdma|sg|lat|wr|wc|migr|reconnects|all]: those counters
# read zero.
zeroed() {
	local s=$1/stats what=${2:-all} z

	z=$(possible_cpus)
	z=$(printf '0 %.0s' $(seq "$z"))
	if [ "$what" = rdma ] || [ "$what" = all ]; then
		[ "$(cat "$s/rdma")" = "0 0 0 0 0 0" ] ||
			{ echo "$s/rdma: $(cat "$s/rdma")"; return 1; }
	fi
	if [ "$what" = sg ] || [ "$what" = all ]; then
		! grep -qv ': 0$' "$s/sg_entries" ||
			{ echo "$s/sg_entries:"; cat "$s/sg_entries"; return 1; }
	fi
	if [ "$what" = lat ] || [ "$what" = all ]; then
		! grep -qv ': 0 0$' "$s/rdma_lat" ||
			{ echo "$s/rdma_lat:"; cat "$s/rdma_lat"; return 1; }
	fi
	if [ "$what" = wr ] || [ "$what" = all ]; then
		wr_zeroed "$s/wr_counts" || return 1
	fi
	if [ "$what" = wc ] || [ "$what" = all ]; then
		wr_zeroed "$s/wc_completion" || return 1
	fi
	if [ "$what" = migr ] || [ "$what" = all ]; then
		if [ "$(cat "$s/cpu_migration_from")" != "$z" ] ||
			[ "$(cat "$s/cpu_migration_to")" != "$z" ]; then
			echo "$s: cpu_migration_from $(cat "$s/cpu_migration_from"), to $(cat "$s/cpu_migration_to")"
			return 1
		fi
	fi
	if [ "$what" = reconnects ] || [ "$what" = all ]; then
		[ "$(cat "$s/reconnects")" = "0 0" ] ||
			{ echo "$s/reconnects: $(cat "$s/reconnects")"; return 1; }
	fi
}

# reset_both: the server's counters, then ours, all zero.
reset_both() {
	local status p

	rnbd_sync_put srv-reset
	status=$(rnbd_sync_wait srv-reset-done 60) || return 1
	[ "$status" = ok ] || { echo "server: $status"; return 1; }
	for p in "$SESS/paths"/*; do
		echo 1 >"$p/stats/reset_all" && zeroed "$p" || return 1
	done
}

# blk_stat: reads, sectors read, writes and flushes, sectors written.
blk_stat() {
	local s

	read -ra s <"/sys/block/$DEV/stat"
	echo "${s[0]} ${s[2]} $((s[4] + ${s[14]:-0})) ${s[6]}"
}

# rxe_recvs: the messages (SENDs, RDMA WRITEs with immediate) this
# guest's Soft-RoCE devices received, by their hw_counters.
rxe_recvs() {
	local i n=0 v

	for i in $(seq 0 $((RNBD_NR_PATHS - 1))); do
		read -r v <"/sys/class/infiniband/$(rnbd_path_rxe "$i")/ports/1/hw_counters/rdma_recvs" ||
			return 1
		n=$((n + v))
	done
	echo "$n"
}

# The block layer's counts and rxe_recvs before the last fio_io
# (ktap_check runs it in a subshell).
BLK_BEFORE=/tmp/rnbd-stats.blk
RECVS_BEFORE=/tmp/rnbd-stats.recvs
fio_io() {
	local run rw bs size

	echo 2 >"/sys/block/$DEV/queue/nomerges" || return 1
	blk_stat >"$BLK_BEFORE" && rxe_recvs >"$RECVS_BEFORE" || return 1
	for run in $FIO_IO; do
		IFS=: read -r rw bs size <<<"$run"
		timeout 150 fio --name=stats --filename="/dev/$DEV" --rw="$rw" \
			--bs="$bs" --size="$size" --iodepth=16 --ioengine=libaio \
			--direct=1 --randrepeat=0 >/dev/null ||
			{ echo "fio $run failed"; return 1; }
	done
}

# counted: the paths' rdma counts add up to the block layer's, their
# bytes to its sectors and a header per request; each path took some.
counted() {
	local b a p r rc=0 reads=0 rbytes=0 writes=0 wbytes=0

	read -ra b <"$BLK_BEFORE"
	read -ra a <<<"$(blk_stat)"
	for p in "$SESS/paths"/*; do
		read -ra r <"$p/stats/rdma"
		echo "$(basename "$p"): ${r[*]}"
		[ $((r[0] + r[2])) -gt 0 ] || { echo "no IO on it"; rc=1; }
		[ "${r[4]}" -eq 0 ] || { echo "${r[4]} in flight"; rc=1; }
		reads=$((reads + r[0]))
		rbytes=$((rbytes + r[1]))
		writes=$((writes + r[2]))
		wbytes=$((wbytes + r[3]))
	done
	a[0]=$((a[0] - b[0])) a[1]=$((a[1] - b[1]))
	a[2]=$((a[2] - b[2])) a[3]=$((a[3] - b[3]))
	echo "block layer: ${a[0]} reads of ${a[1]} sectors, ${a[2]} writes of ${a[3]}"
	[ "$reads" -eq "${a[0]}" ] && [ "$writes" -eq "${a[2]}" ] &&
		[ "$rbytes" -eq $((a[1] * 512 + reads * IO_HDR)) ] &&
		[ "$wbytes" -eq $((a[3] * 512 + writes * IO_HDR)) ] || rc=1
	return $rc
}

# messages_back: the client received a message per request, its response,
# the heartbeats on top: it invalidates a read's memory itself, and the
# server, not asked to (RTRS_MSG_NEED_INVAL_F), sends no SEND_WITH_INV, a
# message more per read.
messages_back() {
	local p r n=0 reads=0 recvs

	for p in "$SESS/paths"/*; do
		read -ra r <"$p/stats/rdma"
		n=$((n + r[0] + r[2]))
		reads=$((reads + r[0]))
	done
	recvs=$(($(rxe_recvs) - $(cat "$RECVS_BEFORE")))
	echo "$recvs messages received for $n requests ($reads reads)"
	[ "$recvs" -ge "$n" ] && [ "$recvs" -le $((n + 100)) ]
}

# sg_counted PATHDIR: sg_entries counts each request of stats/rdma once;
# fio's IO of 4 KiB and 64 KiB has 1 to 16 entries, 1 for some.
sg_counted() {
	local r total f=$1/stats/sg_entries

	read -ra r <"$1/stats/rdma"
	total=$(awk -F': ' '{ n += $2 } END { print n + 0 }' "$f")
	echo "$(basename "$1"): $total requests by sg entries, $((r[0] + r[2])) posted"
	if [ "$total" -ne $((r[0] + r[2])) ] || ! grep -qx '0: 0' "$f" ||
		! grep -qx '>16: 0' "$f" || grep -qx '1: 0' "$f"; then
		cat "$f"
		return 1
	fi
}

# lat_counted PATHDIR: rdma_lat counts each read and each write of
# stats/rdma once, and each direction's maximum is within the bounds of
# its slowest row: row i (from 1) holds [2^(i-2), 2^(i-1)) ms, the first
# [0, 1), the 18th 65536 ms and more.
lat_counted() {
	local r

	read -ra r <"$1/stats/rdma"
	awk -v want1="${r[0]}" -v want2="${r[2]}" -v p="$(basename "$1")" '
		NR <= 18 {
			lo = NR == 1 ? 0 : 2 ^ (NR - 2)
			hi = NR <= 17 ? 2 ^ (NR - 1) : -1
			for (d = 1; d <= 2; d++) {
				v = $(NF - 2 + d)
				n[d] += v
				if (v) { slow_lo[d] = lo; slow_hi[d] = hi }
			}
		}
		NR == 19 { max[1] = $(NF - 1); max[2] = $NF }
		END {
			printf "%s: %d reads, %d writes by latency; maximum %d and %d ms\n",
				p, n[1], n[2], max[1], max[2]
			if (n[1] != want1 || n[2] != want2)
				exit 1
			for (d = 1; d <= 2; d++)
				if (n[d] && (max[d] < slow_lo[d] ||
				    (slow_hi[d] >= 0 && max[d] >= slow_hi[d])))
					exit 1
		}' "$1/stats/rdma_lat" || { cat "$1/stats/rdma_lat"; return 1; }
}

# by_sg_and_lat: sg_entries and rdma_lat of each path count its requests.
by_sg_and_lat() {
	local p

	for p in "$SESS/paths"/*; do
		sg_counted "$p" && lat_counted "$p" || return 1
	done
}

# The server's srv_stats, for wr_counted after same_as_server (ktap_check
# runs each in a subshell).
SRV_STATS=/tmp/rnbd-stats.srv

# same_as_server: each path counted what the server counted on it.
same_as_server() {
	local p name r s n=0 srv

	rnbd_sync_put srv-stats
	srv=$(rnbd_sync_wait srv-stats-done 60) || return 1
	echo "$srv" >"$SRV_STATS"
	echo "server: $srv"
	for p in "$SESS/paths"/*; do
		name=$(basename "$p")
		read -ra r <"$p/stats/rdma"
		s=$(grep "^$name " <<<"$srv" | cut -d' ' -f2-5)
		[ "$s" = "${r[*]:0:4}" ] ||
			{ echo "$name: ${r[*]:0:4} here, '$s' on the server"; return 1; }
		n=$((n + 1))
	done
	[ "$n" -eq "$RNBD_NR_PATHS" ]
}

# wr_within SIDE REQUESTS POSTED REAPED WANT: a side's wr_counts of a path
# against the work requests the protocol takes for its REQUESTS requests,
# WANT (see wr_counted): as many posted, but for the heartbeats of both
# sides (every 5 s, two work requests and one or two completions each on
# either side); a completion reaped for each request's receive at least,
# and no more than were posted.
wr_within() {
	local side=$1 n=$2 posted=$3 reaped=$4 want=$5 slack=100

	echo "  $side: $posted posted for $want, $reaped reaped" \
		"($(awk -v a="$posted" -v b="$reaped" -v n="$n" \
			'BEGIN { printf "%.2f and %.2f per request", a / n, b / n }'))"
	[ "$posted" -ge "$want" ] && [ "$posted" -le $((want + slack)) ] &&
		[ "$reaped" -ge "$n" ] && [ "$reaped" -le $((posted + slack)) ]
}

# srv_counts NAME: the server's counts of path NAME as srv_stats read
# them, after its rdma: "<posted> <reaped>" of wr_counts, then "<max>
# <reaped> <polls>" of wc_completion.
srv_counts() {
	grep "^$1 " "$SRV_STATS" | cut -d' ' -f6-
}

# big_reads READS BYTES: how many of a path's READS, of BYTES in all (a
# user header each), were of 64 KiB rather than 4 KiB, fio's two sizes.
big_reads() {
	local n=$1 bytes=$(($2 - $1 * IO_HDR)) big=$((65536 - BOUNCE_SIZE))

	bytes=$((bytes - n * BOUNCE_SIZE))
	if [ "$bytes" -lt 0 ] || [ $((bytes % big)) -ne 0 ]; then
		echo "reads of other sizes than 4 and 64 KiB: $n of $2 bytes"
		return 1
	fi
	echo $((bytes / big))
}

# wr_counted: each path's wr_counts on both sides against its requests.
# The client posts for a WRITE its request (data and all in one RDMA
# WRITE) and the receive for the answer; for a READ of more than a page
# also the registration of its buffer and, once answered, its
# invalidation; for a READ of a page, whose data the server writes into a
# bounce buffer of the request, registered once, that registration the
# first time (among the heartbeats' slack).  The server
# (always_invalidate=Y) posts for either the receive for the next request,
# the invalidation of the chunk, its registration again and the answer,
# which a READ's data carries.
wr_counted() {
	local p name r w s big rc=0

	for p in "$SESS/paths"/*; do
		name=$(basename "$p")
		read -ra r <"$p/stats/rdma"
		read -ra w <"$p/stats/wr_counts"
		read -ra s <<<"$(srv_counts "$name")"
		big=$(big_reads "${r[0]}" "${r[1]}") || { echo "$big"; return 1; }
		echo "$name: ${r[0]} reads ($big of 64 KiB), ${r[2]} writes"
		[ $((r[0] + r[2])) -gt 0 ] && [ ${#s[@]} -eq 5 ] || return 1
		wr_within client $((r[0] + r[2])) "${w[0]}" "${w[1]}" \
			$((2 * r[0] + 2 * big + 2 * r[2])) || rc=1
		wr_within server $((r[0] + r[2])) "${s[0]}" "${s[1]}" \
			$((4 * (r[0] + r[2]))) || rc=1
	done
	return $rc
}

# wc_within SIDE MAX MEAN POLLS REAPED: a side's wc_completion of a path
# against the completions its wr_counts reaped (REAPED): the polls reaped
# them all and their mean is no more than their maximum.  The client gives
# its mean rounded and no count of polls (POLLS empty); the server the
# polls, and no mean (MEAN empty), and under fio's iodepth 16 some run of
# its softirq reaped more than one.  (The client's may not: on 6.12 it ran
# for about every completion.)
wc_within() {
	local side=$1 max=$2 mean=$3 polls=$4 reaped=$5

	echo "  $side: at most $max completions a poll, ${mean:-$(awk \
		-v a="$reaped" -v b="$polls" 'BEGIN { printf "%.2f", a / b }')} on average"
	[ "$max" -ge 1 ] && [ "$max" -le "$reaped" ] || return 1
	if [ -n "$polls" ]; then
		[ "$max" -ge 2 ] && [ "$polls" -ge 1 ] &&
			[ "$polls" -lt "$reaped" ] && [ $((max * polls)) -ge "$reaped" ]
	else
		[ "$mean" -ge 1 ] && [ "$mean" -le "$max" ]
	fi
}

# wc_counted: each path's wc_completion on both sides against its
# wr_counts.  The server's counts each completion its wr_counts does
# (reset at the same time, but for the heartbeats' between the resets).
wc_counted() {
	local p name w c s rc=0

	for p in "$SESS/paths"/*; do
		name=$(basename "$p")
		read -ra w <"$p/stats/wr_counts"
		read -ra c <"$p/stats/wc_completion"
		read -ra s <<<"$(srv_counts "$name")"
		echo "$name:"
		[ ${#c[@]} -eq 2 ] && [ ${#s[@]} -eq 5 ] || return 1
		wc_within client "${c[0]}" "${c[1]}" "" "${w[1]}" || rc=1
		wc_within server "${s[2]}" "" "${s[4]}" "${s[3]}" || rc=1
		if [ "${s[3]}" -gt "${s[1]}" ] || [ "${s[3]}" -lt $((s[1] - 8)) ]; then
			echo "  server: ${s[3]} reaped in polls, ${s[1]} in all"
			rc=1
		fi
	done
	return $rc
}

# migrations: the numbers per CPU, as many to as from.
migrations() {
	local p from to

	for p in "$SESS/paths"/*; do
		per_cpu "$p/stats/cpu_migration_from" &&
			per_cpu "$p/stats/cpu_migration_to" || return 1
		from=$(sum "$p/stats/cpu_migration_from")
		to=$(sum "$p/stats/cpu_migration_to")
		echo "$(basename "$p"): $from migrations from, $to to"
		[ "$from" -eq "$to" ] || return 1
	done
}

# some_counted PATHDIR: its rdma counts are not all zero.
some_counted() {
	local r

	read -ra r <"$1/stats/rdma"
	[ $((r[0] + r[2])) -gt 0 ] || { echo "$1: nothing counted"; return 1; }
}

# reset_one FILE WHAT: "1" to FILE of the first path zeroes WHAT of it, and
# nothing of the other path.
reset_one() {
	local p q

	read -r p q < <(echo "$SESS/paths"/*)
	some_counted "$p" && some_counted "$q" || return 1
	echo 1 >"$p/stats/$1" && zeroed "$p" "$2" && some_counted "$q"
}

# reset_all_second: reset_all of the second path zeroes it all.
reset_all_second() {
	local p q

	read -r p q < <(echo "$SESS/paths"/*)
	some_counted "$q" && echo 1 >"$q/stats/reset_all" && zeroed "$q"
}

# recovery_traced: the server closes a path; the client's recovery of it
# fires the events of Linux's client: the error, the teardown, and the
# reconnect of the closed path, which then connects.
recovery_traced() {
	local status

	rnbd_sync_put srv-disconnect
	status=$(rnbd_sync_wait srv-disconnect-done 60) || return 1
	[ "$status" = ok ] || { echo "server: $status"; return 1; }
	rnbd_wait 30 rnbd_traced 1 rtrs_rdma_error_recovery \
		"sess=$SESSNAME path=.* state=CLOSING attempts=0 max_attempts=-1" &&
		rnbd_wait 30 rnbd_traced 1 rtrs_clt_close_conns \
			"sess=$SESSNAME path=.* state=CLOSING" &&
		rnbd_wait 60 rnbd_traced 1 rtrs_clt_reconnect_work \
			"sess=$SESSNAME path=.* state=CLOSED attempts=0 max_attempts=-1" &&
		rnbd_wait 60 rnbd_paths_connected >/dev/null
}

srv_trace_ok() {
	local status

	status=$(rnbd_sync_wait srv-trace 90) || return 1
	[ "$status" = ok ] || { echo "$status"; return 1; }
}

round_robin() {
	echo round-robin >"/sys/class/rtrs-client/$SESSNAME/mpath_policy"
}

test_client() {
	ktap_header 32
	ktap_check "rxe up" rnbd_rdma_up
	# Not through ktap_check: its subshell would lose SERVER_*.
	server_ready >/dev/null 2>&1
	ktap_check "server: a ram disk exported, its events traced" \
		test -n "$SERVER_DISK"
	ktap_check "rtrs-client and rnbd-client load" client_modules_load
	ktap_check "events/rtrs_clt in tracefs, enabled" rnbd_trace_on rtrs_clt
	ktap_check "map_device over both paths" map
	ktap_check "both paths connected" rnbd_paths_connected
	ktap_check "rtrs_clt_path_connected traced for both paths" \
		rnbd_traced 2 rtrs_clt_path_connected "sess=$SESSNAME path=.* hca=rxe"
	ktap_check "stats/ of both paths: rdma, reconnects, cpu_migration_*, reset_all" \
		stats_files
	ktap_check "round-robin" round_robin
	ktap_check "stats reset on both sides" reset_both
	ktap_check "fio: $FIO_IO at iodepth 16" fio_io
	ktap_check "stats/rdma: the block layer's requests and bytes, on both paths" \
		counted
	ktap_check "a message back per request, reads too (rxe's rdma_recvs)" \
		messages_back
	ktap_check "stats/rdma of each path: the same as the server's" \
		same_as_server
	ktap_check "stats/sg_entries and rdma_lat: each request once, by entries and by latency" \
		by_sg_and_lat
	ktap_check "stats/wr_counts of both sides: the protocol's work per request" \
		wr_counted
	ktap_check "stats/wc_completion of both sides: the completions by the poll that reaped them" \
		wc_counted
	ktap_check "stats/cpu_migration_from and _to add up" migrations
	ktap_check "stats/rdma resets on 1, of its path only" reset_one rdma rdma
	fio_io >/dev/null 2>&1
	ktap_check "stats/sg_entries resets on 1" reset_one sg_entries sg
	ktap_check "stats/rdma_lat resets on 1" reset_one rdma_lat lat
	ktap_check "stats/wr_counts resets on 1" reset_one wr_counts wr
	ktap_check "stats/wc_completion resets on 1" reset_one wc_completion wc
	ktap_check "stats/cpu_migration_to resets both migration files" \
		reset_one cpu_migration_to migr
	ktap_check "stats/reconnects resets on 1" reset_one reconnects reconnects
	ktap_check "stats/reset_all resets everything" reset_all_second
	ktap_check "the server closes a path: its recovery traced, it connects again" \
		recovery_traced
	ktap_check "unmap_device normal" unmap
	ktap_check "rtrs_clt_path_closed traced for both paths" \
		rnbd_wait 30 rnbd_traced 2 rtrs_clt_path_closed "sess=$SESSNAME path=.* reason=closed"
	rnbd_trace_off rtrs_clt
	rnbd_sync_put client-done
	ktap_check "server: sessions and paths traced as they came and went" \
		srv_trace_ok
	ktap_check "client modules unload" rnbd_unload rnbd-client rtrs-client
	ktap_check "server: server modules unload" server_down
	rm -f "$BLK_BEFORE"
	ktap_finish
}

map_test
