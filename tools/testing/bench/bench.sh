#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The two sides of `make bench` (scripts/bench): fio through our RNBD,
# Linux's own RNBD, NVMe-oF over RDMA and the server's disks used locally,
# round after round, each configuration once a round in turn.  Not a test:
# it measures, and exits non-zero only when nothing could be measured at
# all.  The client keeps a line per job in BENCH_OUT/runs.txt and fio's
# output in BENCH_OUT/fio/; tools/testing/bench/report.py makes the
# report of them on the host.
#
# The client drives: it asks the server for each step (load these
# modules, export over NVMe-oF, run fio locally, a CPU reading) and waits
# for the answer.  In the test bed's two guests the asks and answers are
# files in the sync directory, which the server side polls; on real hosts
# (BENCH_SERVER_SSH) each ask is `ssh SERVER bench.sh do STEP...`, so the
# server keeps no state but what is loaded and made.
#
# Settings (scripts/bench sets them all; the defaults are a short run):
#   BENCH_ROUNDS        rounds (1)
#   BENCH_ROUND         run only this round of them (scripts/bench boots
#                       the guests afresh for each), numbered as such
#   BENCH_RUNTIME       seconds of each fio job that count (5)
#   BENCH_WARMUP        seconds of it before, not counted (1)
#   BENCH_CONFIGS       what to measure, in this order each round:
#                       local-null, local-brd (fio on the server's disk);
#                       ours-1p, ours-2p-mi, ours-2p-rr, each with
#                       -noinval for always_invalidate=N; the same with
#                       upstream-; nvmeof
#   BENCH_JOBS          fio jobs, "rw:bs:iodepth:numjobs:ioengine" each
#   BENCH_OUT           where the results go (the guests' share)
#   BENCH_NULLB_MB      size of the server's null_blk (1024)
#   BENCH_BRD_MB        size of its brd ram disk (256)
#   BENCH_SRV_PARAMS    rtrs-server parameters of both RNBD servers
#   BENCH_MTU           the test bed's RDMA MTU, 4096 (default, as RoCE
#                       fabrics are set up) or 1024; real hosts keep theirs
#   BENCH_SERVER_SSH    real hosts: the server, as ssh reaches it
#   BENCH_SERVER_ADDRS, BENCH_CLIENT_ADDRS
#                       real hosts: the RDMA addresses of each path, in
#                       path order ("A" or "A B")
#   BENCH_PROFILE       1: profile each job of an RDMA configuration too,
#                       from its first IO to its end (profile_start): its
#                       figures then count the tracing's cost
#   BENCH_PERF          1: sample both sides' CPUs in each job of an RDMA
#                       configuration with perf (perf_start), for
#                       cpu_layers.py
#   BENCH_OURS_DIR      real hosts: a tree where our modules were built
#                       (insmod by path); else modprobe finds them
#   RNBD_UPSTREAM_MODULES  the upstream peer's .ko files (none: the
#                       upstream configurations are reported as not run)
#
# rnbd-vm: topology=two

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../selftests/rnbd/lib.sh
. "$HERE/../selftests/rnbd/lib.sh"

: "${BENCH_ROUNDS:=1}" "${BENCH_RUNTIME:=5}" "${BENCH_WARMUP:=1}"
: "${BENCH_CONFIGS:=local-null ours-1p upstream-1p nvmeof}"
: "${BENCH_JOBS:=randread:4k:32:1:libaio}"
: "${BENCH_OUT:=$RNBD_SHARE/bench}" "${BENCH_NULLB_MB:=1024}"
: "${BENCH_BRD_MB:=256}" "${BENCH_SRV_PARAMS:=sess_queue_depth=128}"
: "${BENCH_SERVER_SSH:=}" "${BENCH_SERVER_ADDRS:=}" "${BENCH_CLIENT_ADDRS:=}"
: "${BENCH_OURS_DIR:=}" "${RNBD_UPSTREAM_MODULES:=}" "${BENCH_MTU:=4096}"
: "${BENCH_PROFILE:=}" "${BENCH_PERF:=}" "${BENCH_ROUND:=}"

STATE=/run/rnbd-bench
NULLB=benchnull
SESSNAME=bench
NQN=nqn.2024-01.io.rnbd:bench
NVME_PORT=4420
CTL=/sys/devices/virtual/rnbd-client/ctl
NVMET=/sys/kernel/config/nvmet
# How long one step of the other side may take (a map under TCG: seconds).
STEP_SECS=300

# The settings the server side needs too, passed on with each ssh ask.
SHARED_SETTINGS="BENCH_RUNTIME BENCH_WARMUP BENCH_OUT BENCH_NULLB_MB
BENCH_BRD_MB BENCH_SRV_PARAMS BENCH_SERVER_ADDRS BENCH_CLIENT_ADDRS
BENCH_OURS_DIR RNBD_UPSTREAM_MODULES BENCH_PROFILE BENCH_PERF"

say() {
	echo "bench: $*"
}

# bench_nap SECONDS: sleep without a process: a poll loop that forked
# sleep(1) five times a second would count in the CPU it measures.
bench_nap() {
	read -r -t "$1" -u 8 _
	return 0
}

nap_setup() {
	mkdir -p "$STATE" && { [ -p "$STATE/nap" ] || mkfifo "$STATE/nap"; } &&
		exec 8<>"$STATE/nap"
}

now_ms() {
	local up

	read -r up _ </proc/uptime
	echo $((${up/./} * 10))
}

# nap_until MS: until /proc/uptime reaches MS.
nap_until() {
	local left=$(($1 - $(now_ms)))

	[ $left -gt 0 ] || return 0
	bench_nap "$((left / 1000)).$(printf '%03d' $((left % 1000)))"
}

# alive PID: a child of ours still runs (it is not a zombie yet).
alive() {
	local st

	read -r _ _ st _ 2>/dev/null <"/proc/$1/stat" && [ "$st" != Z ]
}

# reap PID SECONDS: wait for a child for SECONDS at most; its exit code,
# or 124 with the child left running: a process stuck on IO that never
# completes cannot be killed.
reap() {
	local limit=$(($2 * 10)) t=0

	while alive "$1"; do
		t=$((t + 1))
		[ $t -lt $limit ] || return 124
		bench_nap 0.1
	done
	wait "$1"
}

# bounded SECONDS CMD...: CMD, given up on after SECONDS (see reap).
bounded() {
	local secs=$1

	shift
	"$@" &
	reap $! "$secs"
}

# rdma_counts: ",pkts_tx=N,pkts_rx=N[,sends=N,recvs=N]": the packets
# every RDMA port of this host sent and received since it came, and the
# SENDs completed and the RECVs (and RDMA WRITEs with immediate) received
# where the device counts them (Soft-RoCE's hw_counters; an InfiniBand
# port's counters give the packets only).  Nothing where there is neither.
rdma_counts() {
	local p v tx=0 rx=0 sends=0 recvs=0 how=

	for p in /sys/class/infiniband/*/ports/*; do
		if [ -r "$p/hw_counters/sent_pkts" ]; then
			how=rxe
			read -r v <"$p/hw_counters/sent_pkts" && tx=$((tx + v))
			read -r v <"$p/hw_counters/rcvd_pkts" && rx=$((rx + v))
			read -r v <"$p/hw_counters/rdma_sends" && sends=$((sends + v))
			read -r v <"$p/hw_counters/rdma_recvs" && recvs=$((recvs + v))
		elif [ -r "$p/counters/port_xmit_packets" ]; then
			how=${how:-ib}
			read -r v <"$p/counters/port_xmit_packets" && tx=$((tx + v))
			read -r v <"$p/counters/port_rcv_packets" && rx=$((rx + v))
		fi
	done
	[ -n "$how" ] || return 0
	printf ',pkts_tx=%d,pkts_rx=%d' $tx $rx
	[ "$how" = ib ] || printf ',sends=%d,recvs=%d' $sends $recvs
}

# wr_counts: ",wrs=N,wcs=N[,polls=N]": the work requests our RTRS posted
# and the completions it reaped on every path of this host, client's and
# server's (stats/wr_counts), and on a server the wake-ups of the workers
# that polled its CQs (stats/wc_completion); nothing where ours is not
# loaded.
wr_counts() {
	local f p r wrs=0 wcs=0 polls=0 found=

	for f in /sys/class/rtrs-client/*/paths/*/stats/wr_counts \
		/sys/class/rtrs-server/*/paths/*/stats/wr_counts; do
		read -r p r 2>/dev/null <"$f" || continue
		wrs=$((wrs + p))
		wcs=$((wcs + r))
		found=1
	done
	[ -z "$found" ] || printf ',wrs=%d,wcs=%d' $wrs $wcs
	found=
	for f in /sys/class/rtrs-server/*/paths/*/stats/wc_completion; do
		read -r _ _ p 2>/dev/null <"$f" || continue
		polls=$((polls + p))
		found=1
	done
	[ -z "$found" ] || printf ',polls=%d' $polls
}

# irq_polls: ",irqpoll=N": the runs of the IRQ_POLL softirq since boot,
# over the CPUs (/proc/softirqs): the polls of the CQs ib_core polls in
# softirq, whichever driver's (a client's, of all three RDMA block devices
# here).
irq_polls() {
	local f v n=0

	while read -ra f; do
		[ "${f[0]}" = IRQ_POLL: ] || continue
		for v in "${f[@]:1}"; do
			n=$((n + v))
		done
	done </proc/softirqs
	printf ',irqpoll=%d' $n
}

# counts_snap [DEV]: "MS,TICKS,NAME=N,...", one word: the uptime in ms;
# the CPU time, in USER_HZ ticks, all CPUs spent on anything but idle and
# iowait since boot; what the report divides by the IOs: the context
# switches, interrupts and softirqs since boot (/proc/stat), irq_polls,
# rdma_counts and wr_counts; and the sectors DEV read and wrote
# (disk_done), whose IOs it divides by, where DEV keeps counts.  Builtins
# only, in the forks of this shell the $(...) make: the reading counts in
# the CPU it measures.
counts_snap() {
	local k a b c f g h busy=0 ctxt=0 intr=0 sirq=0 sect=

	# cpu user nice system idle iowait irq softirq steal ...
	while read -r k a b c _ _ f g h _; do
		case $k in
		cpu) busy=$((a + b + c + f + g + h)) ;;
		intr) intr=$a ;;
		ctxt) ctxt=$a ;;
		softirq) sirq=$a ;;
		esac
	done </proc/stat
	if [ -n "${1:-}" ] && sect=$(disk_done "$1" 2>/dev/null); then
		sect=",sectors=${sect#* }"
	else
		sect=
	fi
	echo "$(now_ms),$busy,ctxt=$ctxt,intr=$intr,softirq=$sirq$(irq_polls)$(rdma_counts)$(wr_counts)$sect"
}

# ---- the profile of an IO (BENCH_PROFILE) ----

TRACEFS=/sys/kernel/tracing
# What the profile counts, each where this kernel has it: the verbs calls
# of a ULP (Soft-RoCE's: post_send, post_recv, an MR's mapping, a poll, a
# rearm); ib_core's CQ events, by how it polls the CQ, and its polls, in
# softirq, in a worker, or direct; Soft-RoCE's work: the completions it
# made, its tasks' runs (rxe_do_task on 6.1, do_task on 6.12) and their
# steps, the packets it sent and received; the block IO the server began
# and that ended; and the wake-ups of tasks.  ULP-neutral: the same
# functions run for our RTRS, Linux's and NVMe-oF alike.
PROFILE_FUNCS="rxe_post_send rxe_post_recv rxe_map_mr_sg rxe_poll_cq
rxe_req_notify_cq ib_cq_completion_softirq ib_cq_completion_workqueue
ib_poll_handler ib_cq_poll_work ib_process_cq_direct rxe_cq_post
rxe_do_task do_task:mod:rdma_rxe rxe_requester rxe_completer rxe_responder
rxe_receiver rxe_xmit_packet rxe_rcv submit_bio_noacct
blk_mq_complete_request bio_endio try_to_wake_up"

# profile_setup: the function tracer on PROFILE_FUNCS, off; a function
# this kernel lacks is left out, and none at all is an error (an empty
# filter would trace every function).
profile_setup() {
	local f t=$TRACEFS

	[ -w "$t/set_ftrace_filter" ] || { echo "no ftrace in $t"; return 1; }
	echo 0 >"$t/tracing_on" && echo nop >"$t/current_tracer" &&
		echo 16384 >"$t/buffer_size_kb" && : >"$t/set_ftrace_filter" ||
		return 1
	for f in $PROFILE_FUNCS; do
		echo "$f" 2>/dev/null >>"$t/set_ftrace_filter"
	done
	[ -n "$(head -c1 "$t/set_ftrace_filter")" ] ||
		{ echo "ftrace knows none of the functions to profile"; return 1; }
	echo function >"$t/current_tracer"
}

# ---- where the CPU goes (BENCH_PERF) ----

# perf_start: perf samples every CPU of this side with the kernel's clock
# (cpu-clock, a timer, not a hardware counter: TCG has none), with call
# chains, timed by CLOCK_BOOTTIME as /proc/uptime is, so that
# cpu_layers.py takes the samples of the counted window (counts_snap).
# Under TCG perf takes seconds to begin, longer beside the IO: it is up
# once it runs the command it records around, started before fio and
# long enough for a job.  The kernel's throttling of samples is off while
# it records (perf_stop puts it back): a sample takes long under TCG, and
# throttled, perf takes few or none while the CPUs are busy.
PERF_THROTTLE=/proc/sys/kernel/perf_cpu_time_max_percent
perf_start() {
	local t=0 pid kid comm=

	nap_setup && cp "$PERF_THROTTLE" "$STATE/perf.throttle" &&
		echo 0 >"$PERF_THROTTLE" || return 1
	perf record -a -g -F 499 -e cpu-clock -k boottime \
		-o "$STATE/perf.data" -- \
		sleep $((BENCH_WARMUP + BENCH_RUNTIME + 30)) \
		</dev/null >"$STATE/perf.log" 2>&1 &
	pid=$!
	echo "$pid" >"$STATE/perf.pid"
	# Its child is perf's own until perf execs the command.  The list of
	# children ends without a newline: read fails but reads it.
	while :; do
		kid=
		read -r kid _ 2>/dev/null <"/proc/$pid/task/$pid/children"
		[ -z "$kid" ] || read -r comm 2>/dev/null <"/proc/$kid/comm"
		[ "$comm" != sleep ] || break
		if ! alive "$pid" || [ $t -ge 1200 ]; then
			echo "perf did not start: $(tail -n1 "$STATE/perf.log")"
			return 1
		fi
		t=$((t + 1))
		bench_nap 0.1
	done
	echo "perf up"
}

# perf_stop TAG SIDE: the end of perf_start's recording, kept as
# BENCH_OUT/perf/TAG.SIDE.data, with this kernel's symbols (.kallsyms:
# perf on the host resolves the guest's kernel and modules with them).
perf_stop() {
	local d=$BENCH_OUT/perf pid

	nap_setup && read -r pid <"$STATE/perf.pid" || return 1
	while alive "$pid"; do
		bench_nap 0.2
	done
	cat "$STATE/perf.throttle" >"$PERF_THROTTLE" || return 1
	mkdir -p "$d" && mv "$STATE/perf.data" "$d/$1.$2.data" &&
		cat /proc/kallsyms >"$d/$1.$2.kallsyms" && echo "perf kept"
}

# profile_start DEV: an empty trace, and tracing on; DEV's IOs so far kept.
profile_start() {
	echo 0 >"$TRACEFS/tracing_on" && : >"$TRACEFS/trace" &&
		ios_done "$1" >"$STATE/profile.ios" &&
		echo 1 >"$TRACEFS/tracing_on"
}

# profile_stop DEV: tracing off; prints "ios=N lost=N FUNC@CTX=N...": the
# IOs DEV completed while it traced, the entries the trace lost (it must
# be 0) and how many times each function ran in each context, from the
# trace's hardirq/softirq flag and the task: irq, softirq, kworker or
# task (fio, a kernel thread).
profile_stop() {
	local ios0 ios lost=0 f k v

	echo 0 >"$TRACEFS/tracing_on" || return 1
	read -r ios0 <"$STATE/profile.ios" && ios=$(ios_done "$1") || return 1
	for f in "$TRACEFS"/per_cpu/cpu*/stats; do
		while read -r k v; do
			[ "$k" != overrun: ] || lost=$((lost + v))
		done <"$f"
	done
	awk -v ios=$((ios - ios0)) -v lost=$lost '
		/^#/ { next }
		{
			i = index($0, "] ")
			if (!i)
				next
			split(substr($0, i + 2), w, " ")
			task = substr($0, 1, i)
			sub(/^ +/, "", task)
			c = substr(w[1], 3, 1)
			if (c ~ /[hHzZ]/)
				ctx = "irq"
			else if (c == "s")
				ctx = "softirq"
			else if (task ~ /^kworker\//)
				ctx = "kworker"
			else
				ctx = "task"
			n[w[3] "@" ctx]++
		}
		END {
			printf "ios=%d lost=%d", ios, lost
			for (k in n)
				printf " %s=%d", k, n[k]
			print ""
		}' "$TRACEFS/trace"
}

# bench_addr N ROLE: ROLE's address of path N; on real hosts the lists
# given, else the test bed's.
bench_addr() {
	local list=$BENCH_SERVER_ADDRS

	[ "$2" = client ] && list=$BENCH_CLIENT_ADDRS
	if [ -n "$list" ]; then
		# shellcheck disable=SC2086 # a list of addresses
		set -- $(($1 + 1)) $list
		[ "$1" -lt $# ] || return 1
		shift "$1"
		echo "$1"
		return 0
	fi
	rnbd_path_addr "$1" "$2"
}

nr_paths() {
	if [ -n "$BENCH_SERVER_ADDRS" ]; then
		wc -w <<<"$BENCH_SERVER_ADDRS"
	else
		echo "$RNBD_NR_PATHS"
	fi
}

# The test bed's paths are Soft-RoCE, at BENCH_MTU: Soft-RoCE takes the
# largest RDMA MTU that fits in its netdev's MTU with the headers, 4096 in
# 9000 and 1024 in 1500, and a connection the smaller of its two ends'.
# Real hosts have their RDMA up, at the MTU their admin set.
rdma_up() {
	local i mtu

	[ -n "$BENCH_SERVER_ADDRS" ] && return 0
	case $BENCH_MTU in
	4096) mtu=9000 ;;
	1024) mtu=1500 ;;
	*) echo "BENCH_MTU=$BENCH_MTU: 4096 or 1024"; return 1 ;;
	esac
	for i in $(seq 0 $((RNBD_NR_PATHS - 1))); do
		ip link set dev "$(rnbd_path_netdev "$i")" mtu $mtu || return 1
	done
	rnbd_rdma_up
}

# Module sets.  IMPL is "ours" or "upstream"; both have the same module
# names, so only one set is loaded at a time.  Ours come from the modules
# index (the test bed's) or BENCH_OURS_DIR; the peer's by path.
ko_path() {
	local impl=$1 m=$2

	if [ "$impl" = upstream ]; then
		echo "$RNBD_UPSTREAM_MODULES/$m.ko"
	else
		echo "$BENCH_OURS_DIR/${m%%-*}/$m.ko"
	fi
}

# load IMPL MODULE [PARAM...]
load() {
	local impl=$1 m=$2

	shift 2
	if [ "$impl" = ours ] && [ -z "$BENCH_OURS_DIR" ]; then
		modprobe "$m" "$@"
		return
	fi
	if [ "$impl" = upstream ] && [ -z "$RNBD_UPSTREAM_MODULES" ]; then
		echo "no upstream peer (RNBD_UPSTREAM_MODULES is not set)"
		return 1
	fi
	modprobe -a ib_core rdma_cm || return 1
	grep -q "^${m//-/_} " /proc/modules && return 0
	insmod "$(ko_path "$impl" "$m")" "$@"
}

# ---- the server's side: each step prints its answer ----

nullb_up() {
	local d=/sys/kernel/config/nullb/$NULLB

	[ -b /dev/$NULLB ] && return 0
	modprobe null_blk nr_devices=0 && modprobe configfs || return 1
	mountpoint -q /sys/kernel/config ||
		mount -t configfs none /sys/kernel/config || return 1
	# Not memory-backed: the ceiling of a block device, which IO of
	# every kind completes at once.
	mkdir -p "$d" && echo "$BENCH_NULLB_MB" >"$d/size" &&
		echo 0 >"$d/memory_backed" && echo 1 >"$d/power" &&
		rnbd_wait 10 test -b /dev/$NULLB
}

brd_up() {
	[ -b /dev/ram0 ] && return 0
	modprobe brd rd_nr=1 rd_size=$((BENCH_BRD_MB << 10)) &&
		rnbd_wait 10 test -b /dev/ram0
}

srv_setup() {
	rdma_up || { echo "RDMA did not come up"; return 1; }
	nullb_up || { echo "no null_blk"; return 1; }
	brd_up || { echo "no brd"; return 1; }
	[ -z "$BENCH_PROFILE" ] || profile_setup
}

srv_teardown() {
	local d=/sys/kernel/config/nullb/$NULLB

	srv_rnbd_down
	srv_nvmet_down
	if [ -d "$d" ]; then
		echo 0 >"$d/power" && rmdir "$d"
	fi
	grep -q '^brd ' /proc/modules && rmmod brd
	return 0
}

# srv_rnbd_up IMPL Y|N: IMPL's server side exports what dev_search_path
# finds, with always_invalidate Y or N.
srv_rnbd_up() {
	local impl=$1 params

	# modprobe would keep the parameters of a module still loaded.
	if grep -q '^rtrs_server ' /proc/modules; then
		echo "rtrs-server is still loaded"
		return 1
	fi
	params="always_invalidate=$2 $BENCH_SRV_PARAMS"
	# shellcheck disable=SC2086 # parameters, one a word
	load "$impl" rtrs-core && load "$impl" rtrs-server $params &&
		load "$impl" rnbd-server || return 1
	[ "$(cat /sys/module/rtrs_server/parameters/always_invalidate)" = "$2" ] ||
		{ echo "rtrs-server did not take always_invalidate=$2"; return 1; }
}

srv_rnbd_down() {
	bounded 60 rnbd_unload rnbd-server rtrs-server rtrs-core
}

# NVMe-oF over RDMA: nvmet exports the same null_blk on path 0.
srv_nvmet_up() {
	local sub=$NVMET/subsystems/$NQN port=$NVMET/ports/1

	modprobe -a nvmet nvmet-rdma || return 1
	mkdir -p "$sub/namespaces/1" "$port" || return 1
	echo 1 >"$sub/attr_allow_any_host" &&
		echo -n /dev/$NULLB >"$sub/namespaces/1/device_path" &&
		echo 1 >"$sub/namespaces/1/enable" &&
		echo rdma >"$port/addr_trtype" && echo ipv4 >"$port/addr_adrfam" &&
		bench_addr 0 server >"$port/addr_traddr" &&
		echo $NVME_PORT >"$port/addr_trsvcid" &&
		ln -s "$sub" "$port/subsystems/$NQN"
}

srv_nvmet_down() {
	local sub=$NVMET/subsystems/$NQN port=$NVMET/ports/1

	[ -d "$NVMET" ] || return 0
	rm -f "$port/subsystems/$NQN"
	[ -d "$port" ] && rmdir "$port"
	if [ -d "$sub" ]; then
		echo 0 >"$sub/namespaces/1/enable"
		rmdir "$sub/namespaces/1" && rmdir "$sub"
	fi
	modprobe -r nvmet-rdma nvmet
}

# facts ROLE: what a run depends on, "key=value" a line.
facts() {
	local role=$1 i dev rxe

	echo "$role.kernel=$(uname -r)"
	echo "$role.cpus=$(nproc)"
	echo "$role.cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)"
	echo "$role.mem_mib=$(($(sed -n 's/^MemTotal: *\([0-9]*\) kB/\1/p' /proc/meminfo) >> 10))"
	echo "$role.fio=$(fio --version)"
	for i in $(seq 0 $(($(nr_paths) - 1))); do
		echo "$role.path$i.addr=$(bench_addr "$i" "$role")"
		dev=$(ip -o addr show | awk -v a="$(bench_addr "$i" "$role")" \
			'index($4, a "/") == 1 { print $2; exit }')
		[ -n "$dev" ] || continue
		echo "$role.path$i.netdev=$dev mtu $(cat "/sys/class/net/$dev/mtu")"
		# "link rxe0/1 state ACTIVE physical_state LINK_UP netdev rnbd0"
		rxe=$(rdma link show 2>/dev/null | awk -v d="$dev" '$NF == d { print $2; exit }')
		[ -n "$rxe" ] || continue
		echo "$role.path$i.rdma=${rxe%/*} active_mtu $(ibv_devinfo -d "${rxe%/*}" 2>/dev/null |
			sed -n 's/^[[:space:]]*active_mtu:[[:space:]]*//p' | head -n1)"
	done
	[ "$role" = server ] || return 0
	echo "server.null_blk=/dev/$NULLB $BENCH_NULLB_MB MiB, not memory-backed, null_blk defaults otherwise"
	echo "server.brd=/dev/ram0 $BENCH_BRD_MB MiB"
	echo "server.rtrs_server_params=$BENCH_SRV_PARAMS (both RNBD servers)"
}

# srv_do STEP ARG...: one step of the server's side; prints the answer.
srv_do() {
	local step=$1

	shift
	case $step in
	setup) srv_setup ;;
	teardown) srv_teardown ;;
	facts) facts server ;;
	window-start) srv_window_start ;;
	window-get) srv_window_get ;;
	profile-start) profile_start /dev/$NULLB ;;
	profile-stop) profile_stop /dev/$NULLB ;;
	perf-start) perf_start ;;
	perf-stop) perf_stop "$1" server ;;
	rnbd-up) srv_rnbd_up "$@" ;;
	rnbd-down) srv_rnbd_down ;;
	nvmet-up) srv_nvmet_up ;;
	nvmet-down) srv_nvmet_down ;;
	fio) srv_fio "$@" ;;
	*) echo "unknown step '$step'"; return 1 ;;
	esac
}

# bench_wait_file FILE SECONDS: poll for FILE with bench_nap, ten times a
# second, then, after two seconds, twice.  On the sync directory a look is
# a 9p round trip through QEMU, and the server waits for its next ask
# through every job: ten a second cost it 3 % of a CPU in the counted
# window.
bench_wait_file() {
	local limit=$(($2 * 10)) t=0 nap=1

	until [ -e "$1" ]; do
		[ $t -lt 20 ] || nap=5
		t=$((t + nap))
		[ $t -lt $limit ] || return 1
		bench_nap "0.$nap"
	done
}

# The server's loop in the test bed: ask N is the file ask.N of the sync
# directory, its answer answer.N: the exit code, then what the step printed.
srv_loop() {
	local n=0 ask out rc

	nap_setup || return 1
	while :; do
		n=$((n + 1))
		# The client may measure for an hour between two asks.
		bench_wait_file "$RNBD_SYNC_DIR/ask.$n" 86400 || return 1
		ask=$(cat "$RNBD_SYNC_DIR/ask.$n")
		[ "$ask" = quit ] && { rnbd_sync_put "answer.$n" 0; return 0; }
		# shellcheck disable=SC2086 # the step and its words
		out=$(srv_do $ask 2>&1)
		rc=$?
		rnbd_sync_put "answer.$n" "$rc"$'\n'"$out"
	done
}

# ---- the client's side ----

# ask STEP ARG...: have the server do STEP; prints its answer, returns its
# exit code.  Asks are numbered in a file, as most are made in a subshell.
ask() {
	local n=0 f rc

	if [ -n "$BENCH_SERVER_SSH" ]; then
		ask_ssh "$@"
		return
	fi
	[ -r "$STATE/asks" ] && read -r n <"$STATE/asks"
	n=$((n + 1))
	echo "$n" >"$STATE/asks"
	rnbd_sync_put "ask.$n" "$*"
	f="$RNBD_SYNC_DIR/answer.$n"
	bench_wait_file "$f" $((STEP_SECS + BENCH_WARMUP + BENCH_RUNTIME)) ||
		{ echo "the server did not answer '$*'"; return 1; }
	{ read -r rc; cat; } <"$f"
	return "$rc"
}

# Real hosts: this script on the server, with the settings it shares.
ask_ssh() {
	local env=() v

	for v in $SHARED_SETTINGS; do
		env+=("$v=${!v}")
	done
	# shellcheck disable=SC2029 # expanded here on purpose
	ssh -o BatchMode=yes "$BENCH_SERVER_SSH" \
		"env $(printf '%q ' "${env[@]}") bash $(printf '%q' "$HERE/bench.sh") do $(printf '%q ' "$@")"
}

# disk_done DEV: "IOS SECTORS", the reads and writes DEV completed since
# boot and their 512-byte sectors; for an NVMe multipath head nvmeXnY,
# those of its paths nvmeXcZnY (6.1 counts none on the head).
disk_done() {
	local d=${1##*/} p r rs w ws n=0 s=0 paths=()

	[[ $d =~ ^(nvme[0-9]+)(n[0-9]+)$ ]] &&
		paths=(/sys/block/"${BASH_REMATCH[1]}"c*"${BASH_REMATCH[2]}")
	[ -e "${paths[0]:-}" ] || paths=("/sys/block/$d")
	for p in "${paths[@]}"; do
		read -r r _ rs _ w _ ws _ <"$p/stat" || return 1
		n=$((n + r + w))
		s=$((s + rs + ws))
	done
	echo "$n $s"
}

# ios_done DEV: the reads and writes DEV completed since boot (disk_done).
ios_done() {
	local n

	n=$(disk_done "$1") && echo "${n% *}"
}

# io_start DEV IOS [PID]: when (now_ms) DEV completed more than IOS, that
# is, when fio PID began; now if PID ended first or after a minute.  A
# device that keeps no counts (brd) is taken to begin when fio has
# started its job's process.  Without PID (the server's side of a job
# the client runs), the first IO is waited for alone.
io_start() {
	local t=0 n iostats=1 kids

	read -r iostats 2>/dev/null <"/sys/block/${1##*/}/queue/iostats"
	while { [ -z "${3:-}" ] || alive "$3"; } && [ $t -lt 1200 ]; do
		if [ "$iostats" = 0 ] && [ -n "${3:-}" ]; then
			read -r kids 2>/dev/null <"/proc/$3/task/$3/children"
			[ -z "$kids" ] || break
		else
			n=$(ios_done "$1") || break
			[ "$n" -eq "$2" ] || break
		fi
		t=$((t + 1))
		bench_nap 0.05
	done
	now_ms
}

# count_job DEV T0: "A B", the counts (counts_snap DEV) of a job whose
# first IO completed at T0, read a little after the warm-up and a little
# before the end: a second of edge inside the counted time, less for
# short runs.
count_job() {
	local edge=$((BENCH_RUNTIME * 250)) a

	[ $edge -le 1000 ] || edge=1000
	nap_until $(($2 + BENCH_WARMUP * 1000 + edge))
	a=$(counts_snap "$1")
	nap_until $(($2 + (BENCH_WARMUP + BENCH_RUNTIME) * 1000 - edge))
	echo "$a $(counts_snap "$1")"
}

# srv_window_start: the server's counts of the job the client is about to
# start, read in the background (count_job) into STATE/window, timed as
# the client times its own, from the first IO the server's disk
# completes: the time an ask takes, a second and more under TCG beside
# the IO, would put readings asked for at the client's moments past the
# end of the job.  srv_window_get answers them.
srv_window_start() {
	local ios0

	rm -f "$STATE/window" "$STATE/window.tmp" "$STATE/window.pid" &&
		ios0=$(ios_done /dev/$NULLB) || return 1
	{
		nap_setup &&
			count_job /dev/$NULLB "$(io_start /dev/$NULLB "$ios0")" \
				>"$STATE/window.tmp" &&
			mv "$STATE/window.tmp" "$STATE/window"
	} </dev/null >/dev/null 2>&1 &
	echo $! >"$STATE/window.pid"
}

# srv_window_get: the readings of srv_window_start, "A B"; "- -" if they
# are not there a job's time after the client's fio ended (its job did
# no IO), and the reading given up.
srv_window_get() {
	local pid

	if ! bench_wait_file "$STATE/window" $((BENCH_WARMUP + BENCH_RUNTIME + 10)); then
		read -r pid <"$STATE/window.pid" && kill "$pid" 2>/dev/null
		echo "- -"
		return 0
	fi
	cat "$STATE/window"
}

# run_fio DIR TAG DEV SPEC SIDE: one fio job on DEV, SPEC "rw:bs:iodepth:
# numjobs:ioengine", for BENCH_WARMUP + BENCH_RUNTIME s, its JSON output
# and errors left in DIR/TAG.json and .err.  The CPU and the counts of
# this side (SIDE: "client" or "server") and, on the client, of the
# server too, are read a little after the warm-up and a little before the
# end (count_job), each side timed from its own disk's first IO.  Prints
# "RC" and the readings (counts_snap), this side's two then the server's
# ("-" each on the server).
# Nothing in the guests reads fio's figures but for a line of progress:
# Python starts in seconds under TCG; report.py reads them on the host.
run_fio() {
	local dir=$1 tag=$2 dev=$3 spec=$4 side=$5 rw bs qd nj eng
	local t0 counts peer="- -" pid rc ios0

	IFS=: read -r rw bs qd nj eng <<<"$spec"
	mkdir -p "$dir" && nap_setup || return 1
	[ "$side" = server ] || ask window-start >/dev/null || return 1
	ios0=$(ios_done "$dev")
	if [ "$side" = client ] && [ -n "$BENCH_PERF" ]; then
		ask perf-start >/dev/null && perf_start >/dev/null || return 1
	fi
	fio --name="$tag" --filename="$dev" --rw="$rw" --bs="$bs" \
		--iodepth="$qd" --numjobs="$nj" --ioengine="$eng" --direct=1 \
		--time_based --ramp_time="$BENCH_WARMUP" --runtime="$BENCH_RUNTIME" \
		--group_reporting --norandommap --randrepeat=0 \
		--lat_percentiles=1 --clat_percentiles=0 \
		--output-format=json --output="$dir/$tag.json" >"$dir/$tag.err" 2>&1 &
	pid=$!
	# fio takes seconds to start under TCG (it loads 60 libraries): its
	# time counts from its first IO.
	t0=$(io_start "$dev" "$ios0" "$pid")
	# The profile spans all of fio's IO: an ask may take seconds.
	[ "$side" = client ] && [ -n "$BENCH_PROFILE" ] &&
		ask profile-start >/dev/null && profile_start "$dev"
	counts=$(count_job "$dev" "$t0")
	# IO that never completes must not stop the run.
	reap "$pid" $((BENCH_WARMUP + BENCH_RUNTIME + 60))
	rc=$?
	if [ "$side" = client ] && [ -n "$BENCH_PERF" ]; then
		perf_stop "$tag" client >/dev/null &&
			ask perf-stop "$tag" >/dev/null || return 1
	fi
	[ "$side" = server ] || peer=$(ask window-get | tail -n1)
	if [ "$side" = client ] && [ -n "$BENCH_PROFILE" ]; then
		profile_stop "$dev" >"$dir/$tag.prof"
		ask profile-stop | tail -n1 >"$dir/$tag.srv.prof"
	fi
	if [ $rc -eq 124 ]; then
		kill -9 "$pid" 2>/dev/null
		echo "fio did not end $((BENCH_WARMUP + BENCH_RUNTIME + 60)) s after it began: IO stuck? kernel: $(dmesg | tail -n 2 | tr '\n' ' ')"
		return 1
	fi
	echo "$rc $counts $peer"
}

# srv_fio TAG DEV SPEC: run_fio on the server; answers its line, the last
# lines fio wrote to stderr as one, then fio's JSON output.
srv_fio() {
	local dir=$STATE/fio

	# Its first line is the answer's: what else it says goes to the log.
	run_fio "$dir" "$1" "$2" "$3" server 2>>"$STATE/server.log" || return 1
	tail -n 3 "$dir/$1.err" | tr '\n' ' '
	echo
	cat "$dir/$1.json" 2>/dev/null
	rm -f "$dir/$1.json" "$dir/$1.err"
}

RUNS=
# record ROUND CONFIG SPEC SIDE LINE TAG: a job run_fio ran, its line
# and where its output is (BENCH_OUT/fio/TAG.json), a line of runs.txt
# (report.py reads the figures on the host); prints its IOPS for a person.
record() {
	echo "job $1 $2 $3 $4 $6 $5" >>"$RUNS"
	echo "$(job_label "$3"): $(awk -F: '/"iops" :/ { gsub(/[ ,]/, "", $2); n += $2 }
		END { printf "%.0f IOPS", n }' "$BENCH_OUT/fio/$6.json" 2>/dev/null)"
}

# record_error ROUND CONFIG SPEC WHY: a job that did not run.
record_error() {
	echo "error $1 $2 $3 ${4//$'\n'/ }" >>"$RUNS"
	echo "$(job_label "$3"): not measured: $4"
}

# job_label SPEC: as a person reads it.
job_label() {
	local rw bs qd nj eng

	IFS=: read -r rw bs qd nj eng <<<"$1"
	echo "$rw $bs qd$qd$([ "$nj" = 1 ] || echo " x$nj jobs") $eng"
}

# one_job TAG DEV SPEC SIDE: run_fio on SIDE, its output in BENCH_OUT/fio
# on the client; prints run_fio's line, or why it did not run.
one_job() {
	local tag=$1 dir="$BENCH_OUT/fio" out

	[ "$4" = client ] && { run_fio "$dir" "$tag" "$2" "$3" client; return; }
	out=$(ask fio "$tag" "$2" "$3") || { echo "$out"; return 1; }
	sed -n 2p <<<"$out" >"$dir/$tag.err" &&
		tail -n +3 <<<"$out" >"$dir/$tag.json" &&
		head -n1 <<<"$out"
}

# jobs_of ROUND CONFIG DEV SIDE: every job on DEV, fio on SIDE.
jobs_of() {
	local round=$1 cfg=$2 dev=$3 side=$4 spec tag line i=0

	mkdir -p "$BENCH_OUT/fio"
	for spec in $BENCH_JOBS; do
		i=$((i + 1))
		tag="r$round-$cfg-j$i"
		if line=$(one_job "$tag" "$dev" "$spec" "$side"); then
			record "$round" "$cfg" "$spec" "$side" "$line" "$tag"
		else
			record_error "$round" "$cfg" "$spec" "$(tail -n1 <<<"${line:-fio did not run}")"
		fi | sed "s/^/    /"
	done
}

# all_failed ROUND CONFIG WHY: every job of it recorded as not run.
all_failed() {
	local spec

	say "  $2: $3"
	for spec in $BENCH_JOBS; do
		record_error "$1" "$2" "$spec" "$3" >/dev/null
	done
}

clt_load() {
	local impl=$1

	load "$impl" rtrs-core && load "$impl" rtrs-client &&
		load "$impl" rnbd-client
}

clt_unload() {
	rnbd_unload rnbd-client rtrs-client rtrs-core
}

# map_rnbd PATHS: the server's null_blk over the first PATHS paths; prints
# the rnbdN.  Once retried, as map-lib.sh does: a first connection of a
# boot on a loaded TCG host may outlast the client's connect timeout.
map_rnbd() {
	local opts="sessname=$SESSNAME" i try dev

	for i in $(seq 0 $(($1 - 1))); do
		opts+=" path=ip:$(bench_addr "$i" client),ip:$(bench_addr "$i" server)"
	done
	opts+=" device_path=/dev/$NULLB"
	for try in 1 2; do
		echo "$opts" >"$CTL/map_device" 2>/dev/null && break
		[ "$try" -lt 2 ] || { echo "map_device failed: $opts"; return 1; }
	done
	rnbd_wait 30 rnbd_dev_of "$SESSNAME" /dev/$NULLB ||
		{ echo "no rnbd device after: $opts"; return 1; }
	dev=$(rnbd_dev_of "$SESSNAME" /dev/$NULLB)
	rnbd_wait 30 test -b "/dev/$dev" || { echo "no /dev/$dev"; return 1; }
	echo "$dev"
}

# unmap_one RNBDN normal|force
unmap_one() {
	echo "$2" >"/sys/block/$1/rnbd/unmap_device" 2>/dev/null &&
		rnbd_wait 30 test ! -e "/sys/block/$1"
}

# unmap_rnbd: normally, else by force (a fio stuck on it keeps it open).
unmap_rnbd() {
	local dev mode

	dev=$(rnbd_dev_of "$SESSNAME" /dev/$NULLB) || return 0
	for mode in normal force; do
		bounded 60 unmap_one "$dev" "$mode" && return 0
	done
	return 1
}

# Once a configuration could not be taken down (IO stuck, a module that
# does not unload), the RNBD and NVMe-oF configurations after it are not
# run: they would load modules over a wedged session.  What it was:
WEDGED=
wedge() {
	say "  $1: $2; the configurations over RDMA after it are not run"
	[ -n "$WEDGED" ] || WEDGED="$1 in round $3: $2"
}

# set_policy POLICY: the session's multipath policy, as both
# implementations name it.
set_policy() {
	local f=/sys/class/rtrs-client/$SESSNAME/mpath_policy

	echo "$1" >"$f" || return 1
	grep -q "^$1" "$f" || { echo "mpath_policy reads '$(cat "$f")'"; return 1; }
}

# parse_rnbd CONFIG: IMPL PATHS POLICY INVAL of an RNBD configuration,
# as IMPL-{1p,2p-mi,2p-rr}[-noinval].
parse_rnbd() {
	local impl=${1%%-*} rest=${1#*-} inval=Y paths policy

	case $rest in
	*-noinval) inval=N; rest=${rest%-noinval} ;;
	esac
	case $rest in
	1p) paths=1; policy=min-inflight ;;
	2p-mi) paths=2; policy=min-inflight ;;
	2p-rr) paths=2; policy='round-robin' ;;
	*) return 1 ;;
	esac
	echo "$impl $paths $policy $inval"
}

# rnbd_config ROUND CONFIG: one RNBD configuration, set up, measured and
# taken down.
rnbd_config() {
	local round=$1 cfg=$2 impl paths policy inval dev why=

	read -r impl paths policy inval < <(parse_rnbd "$cfg") ||
		{ all_failed "$round" "$cfg" "unknown configuration"; return; }
	if [ "$impl" = upstream ] && [ -z "$RNBD_UPSTREAM_MODULES" ]; then
		all_failed "$round" "$cfg" "no upstream peer"
		return
	fi
	[ "$paths" -le "$(nr_paths)" ] ||
		{ all_failed "$round" "$cfg" "needs $paths paths"; return; }
	if ! why=$(ask rnbd-up "$impl" "$inval"); then
		all_failed "$round" "$cfg" "server: ${why:-modules did not load}"
		ask rnbd-down >/dev/null
		return
	fi
	if ! why=$(clt_load "$impl" 2>&1); then
		why="client modules did not load: $why"
	elif ! dev=$(map_rnbd "$paths" 2>&1); then
		why=$dev
	elif [ "$paths" -gt 1 ] && ! why=$(set_policy "$policy" 2>&1); then
		:
	else
		why=
		say "  $cfg: /dev/$dev, $paths path(s), $policy, always_invalidate=$inval"
		jobs_of "$round" "$cfg" "/dev/$dev" client
	fi
	[ -z "$why" ] || all_failed "$round" "$cfg" "$why"
	if ! unmap_rnbd; then
		wedge "$cfg" "the rnbd device did not unmap" "$round"
	elif ! bounded 60 clt_unload; then
		wedge "$cfg" "the client modules did not unload" "$round"
	elif ! ask rnbd-down >/dev/null; then
		wedge "$cfg" "the server modules did not unload" "$round"
	fi
}

# nvme_dev: the namespace of the bench's subsystem, as nvmeXnY.
nvme_dev() {
	local d

	for d in /sys/block/nvme*n*; do
		# Not nvmeXcYnZ: multipath's hidden device of one controller.
		[[ ${d##*/} =~ ^nvme[0-9]+n[0-9]+$ ]] || continue
		[ "$(cat "$d/device/subsysnqn" 2>/dev/null)" = "$NQN" ] &&
			{ basename "$d"; return 0; }
	done
	return 1
}

# The host NQN and id are given: the guests have no /etc/nvme.
nvme_connect() {
	local id

	id=$(cat /proc/sys/kernel/random/uuid)
	modprobe nvme-rdma || return 1
	nvme connect -t rdma -a "$(bench_addr 0 server)" -s $NVME_PORT \
		-w "$(bench_addr 0 client)" -n $NQN \
		--hostnqn="nqn.2014-08.org.nvmexpress:uuid:$id" --hostid="$id" \
		>/dev/null || return 1
	rnbd_wait 30 nvme_dev || { echo "no namespace of $NQN appeared"; return 1; }
	nvme_dev
}

nvme_config() {
	local round=$1 cfg=$2 dev why

	if ! why=$(ask nvmet-up); then
		all_failed "$round" "$cfg" "server: nvmet: ${why:-failed}"
	elif ! dev=$(nvme_connect 2>&1); then
		all_failed "$round" "$cfg" "nvme connect: $dev"
	else
		say "  $cfg: /dev/$dev, NVMe-oF RDMA, path 0"
		jobs_of "$round" "$cfg" "/dev/$dev" client
	fi
	if ! bounded 60 nvme disconnect -n $NQN >/dev/null 2>&1; then
		wedge "$cfg" "nvme disconnect did not end" "$round"
	else
		modprobe -r nvme-rdma nvme-fabrics 2>/dev/null
		ask nvmet-down >/dev/null || say "  $cfg: nvmet did not come down"
	fi
}

run_config() {
	local round=$1 cfg=$2 start=$SECONDS

	if [ -n "$WEDGED" ] && [[ $cfg != local-* ]]; then
		all_failed "$round" "$cfg" "not run: stuck since $WEDGED"
		return
	fi
	case $cfg in
	local-null) say "  $cfg: /dev/$NULLB on the server"
		jobs_of "$round" "$cfg" /dev/$NULLB server ;;
	local-brd) say "  $cfg: /dev/ram0 on the server"
		jobs_of "$round" "$cfg" /dev/ram0 server ;;
	nvmeof) nvme_config "$round" "$cfg" ;;
	ours-* | upstream-*) rnbd_config "$round" "$cfg" ;;
	*) all_failed "$round" "$cfg" "unknown configuration" ;;
	esac
	say "  $cfg: $((SECONDS - start)) s"
}

client_main() {
	local round rounds cfg start=$SECONDS why rc=0

	nap_setup || return 1
	if [ -n "$BENCH_ROUND" ] && ! [[ $BENCH_ROUND =~ ^[1-9][0-9]*$ &&
		$BENCH_ROUND -le $BENCH_ROUNDS ]]; then
		say "BENCH_ROUND=$BENCH_ROUND: not a round of 1 to $BENCH_ROUNDS"
		return 1
	fi
	mkdir -p "$BENCH_OUT" || return 1
	RUNS="$BENCH_OUT/runs.txt"
	: >"$RUNS"
	rdma_up || { say "RDMA did not come up"; return 1; }
	if [ -n "$BENCH_PROFILE" ] && ! why=$(profile_setup); then
		say "no profile: $why"
		return 1
	fi
	if ! why=$(ask setup); then
		say "server setup failed: $why"
		ask teardown >/dev/null
		return 1
	fi
	{
		facts client
		ask facts
		echo "rounds=$BENCH_ROUNDS"
		echo "warmup_s=$BENCH_WARMUP"
		echo "runtime_s=$BENCH_RUNTIME"
		echo "configs=$BENCH_CONFIGS"
		echo "jobs=$BENCH_JOBS"
		echo "clk_tck=$(getconf CLK_TCK)"
		echo "profiled=${BENCH_PROFILE:-0}"
	} >"$BENCH_OUT/facts.txt"
	rounds=${BENCH_ROUND:-$(seq 1 "$BENCH_ROUNDS")}
	say "$(wc -w <<<"$BENCH_CONFIGS") configurations, $(wc -w <<<"$BENCH_JOBS") fio jobs" \
		"each, round(s) ${rounds//$'\n'/ } of $BENCH_ROUNDS, $BENCH_WARMUP + $BENCH_RUNTIME s a job"
	for round in $rounds; do
		say "round $round of $BENCH_ROUNDS ($((SECONDS - start)) s)"
		for cfg in $BENCH_CONFIGS; do
			run_config "$round" "$cfg"
		done
	done
	ask teardown >/dev/null || say "server teardown failed"
	say "done in $((SECONDS - start)) s"
	# Nothing measured at all is a failed run.
	grep -q '^job ' "$RUNS" || rc=1
	return $rc
}

test_server() {
	srv_loop
	local rc=$?

	srv_teardown >/dev/null 2>&1
	return $rc
}

# In the test bed the server's loop ends when told, however the client's
# side ended.
test_client() {
	client_main
	local rc=$?

	[ -n "$BENCH_SERVER_SSH" ] || ask quit >/dev/null
	return $rc
}

if [ "${1:-}" = "do" ]; then
	shift
	nap_setup || exit 1
	srv_do "$@"
	exit
fi
rnbd_run_roles
