#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Shared by the RNBD selftests and the test bed's guest init: KTAP output,
# the addresses of the two RDMA paths, Soft-RoCE set-up, synchronisation
# between the server and the client side of a test, and requests to the host.
#
# A test that needs both sides defines test_server and test_client and calls
# rnbd_run_roles.  In the two-guest topology each guest runs its own side; in
# the one-guest topology both sides run in the same guest, the server side in
# the background.  Only the client side prints KTAP; the server side logs
# with rnbd_log and fails by returning non-zero.

RNBD_TOPOLOGY=${RNBD_VM_TOPOLOGY:-one}
RNBD_ROLE=${RNBD_ROLE:-single}
RNBD_NR_PATHS=2
RNBD_SHARE=${RNBD_SHARE:-/mnt/rnbd-vm}

KTAP_N=0
KTAP_PASS=0
KTAP_FAIL=0
KTAP_SKIP=0
KTAP_PLAN=

rnbd_log() {
	echo "# [$RNBD_ROLE] $*"
}

ktap_header() {
	KTAP_PLAN=$1
	echo "TAP version 13"
	echo "1..$1"
}

ktap_result() {
	local status=$1 desc=$2 directive=$3

	KTAP_N=$((KTAP_N + 1))
	echo "$status $KTAP_N $desc${directive:+ # $directive}"
}

ktap_pass() {
	KTAP_PASS=$((KTAP_PASS + 1))
	ktap_result ok "$1"
}

ktap_fail() {
	KTAP_FAIL=$((KTAP_FAIL + 1))
	ktap_result "not ok" "$1"
}

# ktap_skip DESC REASON
ktap_skip() {
	KTAP_SKIP=$((KTAP_SKIP + 1))
	ktap_result ok "$1" "SKIP $2"
}

# ktap_check DESC CMD...: one test point, passed when CMD succeeds.  What CMD
# prints becomes KTAP diagnostics.
ktap_check() {
	local desc=$1 out rc

	shift
	out=$("$@" 2>&1)
	rc=$?
	# Not sed: each program started costs up to a second under the debug
	# kernel and TCG, and some tests make a hundred checks.
	[ -n "$out" ] && printf '# %s\n' "${out//$'\n'/$'\n'# }"
	if [ $rc -eq 0 ]; then
		ktap_pass "$desc"
	else
		ktap_fail "$desc"
	fi
	return $rc
}

# The whole test is skipped: kselftest's exit code 4.
ktap_skip_all() {
	echo "TAP version 13"
	echo "1..0 # SKIP $1"
	exit 4
}

# The totals; returns the test's exit code: 1 on any failure or when the
# points run are not those planned (a test that stopped half-way, or a
# plan that no longer counts its checks), 4 (skip) when nothing passed,
# else 0.
ktap_finish() {
	echo "# totals: pass:$KTAP_PASS fail:$KTAP_FAIL skip:$KTAP_SKIP"
	[ "$KTAP_FAIL" -eq 0 ] || return 1
	if [ "$KTAP_N" -ne "${KTAP_PLAN:-0}" ]; then
		echo "# planned ${KTAP_PLAN:-no} test points, ran $KTAP_N"
		return 1
	fi
	[ "$KTAP_PASS" -gt 0 ] || return 4
	return 0
}

# Path N's address on ROLE's side.  In one guest both sides share it.
rnbd_path_addr() {
	local addr

	rnbd_path_addr_in addr "$1" "$2"
	echo "$addr"
}

# rnbd_path_addr_in VAR N ROLE: the same into VAR, without the subshell
# of $(...), for what rnbd_wait polls.
rnbd_path_addr_in() {
	local host=1

	[ "$3" = client ] && [ "$RNBD_TOPOLOGY" = two ] && host=2
	printf -v "$1" '192.168.%d.%d' $((120 + $2)) "$host"
}

# The MAC of ROLE's NIC of path N in the two-guest topology; the host's
# runner gives the NICs the same ones.
rnbd_path_mac() {
	local r=0

	[ "$2" = client ] && r=1
	printf '52:54:00:12:3%d:0%d\n' "$r" "$1"
}

rnbd_path_netdev() {
	echo "rnbd$1"
}

rnbd_path_rxe() {
	echo "rxe$1"
}

# rnbd_path_dir PATH: the client's sysfs directory, in session $SESSNAME, of
# the path to the server's address number PATH.
rnbd_path_dir() {
	local dir

	rnbd_path_dir_in dir "$1" && echo "$dir"
}

# rnbd_path_dir_in VAR N: the same into VAR, with no process of its own:
# rnbd_path_is is what waits poll most.
rnbd_path_dir_in() {
	local want p addr

	rnbd_path_addr_in want "$2" server
	for p in "/sys/class/rtrs-client/$SESSNAME"/paths/*; do
		read -r addr 2>/dev/null <"$p/dst_addr" || continue
		[ "$addr" = "ip:$want" ] && { printf -v "$1" '%s' "$p"; return 0; }
	done
	return 1
}

rnbd_path_state() {
	local state

	rnbd_path_state_in state "$1" && echo "$state"
}

# rnbd_path_state_in VAR N: the same into VAR, with no process of its own.
rnbd_path_state_in() {
	local dir

	rnbd_path_dir_in dir "$2" && read -r "$1" 2>/dev/null <"$dir/state"
}

# rnbd_path_is PATH STATE
rnbd_path_is() {
	local state

	rnbd_path_state_in state "$1" && [ "$state" = "$2" ]
}

# rnbd_path_ctl PATH FILE: write 1 to FILE of PATH's sysfs (disconnect,
# reconnect, remove_path).
rnbd_path_ctl() {
	local d

	d=$(rnbd_path_dir "$1") || { echo "no path $1"; return 1; }
	echo 1 >"$d/$2"
}

# rnbd_path_stat PATH FILE FIELD...: the sum of those fields of PATH's
# stats/FILE, e.g. fields 1 and 3 of rdma: the requests it carried.
rnbd_path_stat() {
	local d

	d=$(rnbd_path_dir "$1") || return 1
	awk -v fields="${*:3}" \
		'{ n = split(fields, f, " "); s = 0
		   for (i = 1; i <= n; i++) s += $f[i]
		   print s }' "$d/stats/$2"
}

# rnbd_paths_connected: every path of session $SESSNAME is connected; prints
# the state of each.
rnbd_paths_connected() {
	local p n=0

	for p in "/sys/class/rtrs-client/$SESSNAME"/paths/*/state; do
		[ -e "$p" ] || continue
		echo "$(basename "$(dirname "$p")"): $(cat "$p")"
		[ "$(cat "$p")" = connected ] && n=$((n + 1))
	done
	[ "$n" -eq "$RNBD_NR_PATHS" ] ||
		{ echo "$n of $RNBD_NR_PATHS paths connected"; return 1; }
}

# Soft-RoCE over the netdev of each path.  Idempotent, and serialised: in
# one guest both sides of a test bring it up at the same time.
rnbd_rdma_up() {
	(
		local i dev

		flock 9 || return 1
		modprobe -a rdma_rxe rdma_ucm ib_uverbs || return 1
		for i in $(seq 0 $((RNBD_NR_PATHS - 1))); do
			dev=$(rnbd_path_rxe "$i")
			rdma link show "$dev/1" >/dev/null 2>&1 && continue
			rdma link add "$dev" type rxe \
				netdev "$(rnbd_path_netdev "$i")" || return 1
		done
	) 9>/run/rnbd-rdma-up.lock
}

# rnbd_carrier PATH 0|1: the carrier of PATH's netdev reads so.
rnbd_carrier() {
	[ "$(cat "/sys/class/net/$(rnbd_path_netdev "$1")/carrier")" = "$2" ]
}

# rnbd_link PATH on|off: the host's QEMU plugs or pulls the cable of PATH
# (both guests' NICs), and this guest sees the carrier come or go.
rnbd_link() {
	local c=0

	[ "$2" = on ] && c=1
	rnbd_host set_link "p$1" "$2" || return 1
	rnbd_wait 20 rnbd_carrier "$1" "$c" ||
		{ echo "path $1: carrier not $c"; return 1; }
}

# rnbd_rxe_survives_pull: whether this kernel's Soft-RoCE keeps its
# connection manager through a cable pulled under traffic.  A carrier loss
# puts a qdisc that refuses every packet in place a moment before the
# neighbours are flushed.  Debian 6.1's rxe retried a refused packet;
# Debian 6.12's fails its queue pair, and when the packet was a connection
# manager message (a DREQ of a path closed in that moment) the device's GSI
# queue pair stays in the error state, and no rdma_cm connection is ever
# made over the device again (testing.rst).  Kernels between the two were
# not looked at.
rnbd_rxe_survives_pull() {
	local major minor

	IFS=. read -r major minor _ <<<"$(uname -r)"
	[ "$major" -lt 6 ] || { [ "$major" -eq 6 ] && [ "$minor" -le 1 ]; }
}

# rnbd_netem_ready: a netem qdisc on this guest's NIC of each path, that
# passes everything until rnbd_netem_drop changes its loss.  Put in place
# before the map, while no RDMA traffic crosses the NICs: adding or
# deleting a root qdisc puts the noop qdisc in place for a moment
# (dev_deactivate(), seconds in a loaded TCG guest), which refuses every
# packet, and 6.12's rxe fails a queue pair whose packet is refused, its
# GSI queue pair too (as for a pulled cable, above).  failover.sh's cut of
# the heartbeats' check, a netem qdisc added under IO, once left the
# client's rxe0 connecting nowhere for the rest of the test.
rnbd_netem_ready() {
	local i

	modprobe sch_netem || return 1
	for i in $(seq 0 $((RNBD_NR_PATHS - 1))); do
		tc qdisc replace dev "$(rnbd_path_netdev "$i")" root netem loss 0% ||
			return 1
	done
}

# rnbd_netem_gone: the NICs' default qdiscs again, once no RDMA traffic
# crosses them.  Only a netem root goes: the kernel refuses to delete a
# root of another kind, where rnbd_netem_ready did not run.
rnbd_netem_gone() {
	local i

	for i in $(seq 0 $((RNBD_NR_PATHS - 1))); do
		tc qdisc del dev "$(rnbd_path_netdev "$i")" root netem 2>/dev/null
	done
	return 0
}

# rnbd_netem_drop PATH on|off: drop (netem loss 100%) or pass again what
# this guest sends on PATH, by changing the loss of rnbd_netem_ready's
# qdisc in place.  netem reports a dropped packet as sent, so the sender's
# rxe sees no local error.
rnbd_netem_drop() {
	local loss=0%

	[ "$2" = on ] && loss=100%
	tc qdisc change dev "$(rnbd_path_netdev "$1")" root netem loss "$loss"
}

# rnbd_gsi_states: the state of the GSI queue pair (QP1) of each rxe
# device of this guest, on one line ("rxe0/1 QP1 RTS, rxe1/1 QP1 ERR"): a
# test's diagnostic when a path does not come back, as no rdma_cm
# connection is made over a device whose QP1 is in ERR (testing.rst).
rnbd_gsi_states() {
	rdma res show qp lqpn 1 2>/dev/null | awk '{
		l = s = "?"
		for (i = 1; i < NF; i++) {
			if ($i == "link")
				l = $(i + 1)
			if ($i == "state")
				s = $(i + 1)
		}
		printf "%s%s QP1 %s", sep, l, s
		sep = ", "
	} END { print "" }'
}

# rnbd_cable PATH on|off, on the client: the cable of PATH pulled or
# plugged; where rxe does not survive that, what the client sends on PATH
# is dropped instead (netem loss 100%): for RTRS the same lost path, without
# the carrier loss, on the qdisc rnbd_netem_ready put in place before the
# map.  rnbd_cable_how says which.
rnbd_cable() {
	rnbd_rxe_survives_pull && { rnbd_link "$@"; return; }
	if [ "$2" = off ]; then
		rnbd_netem_drop "$1" on
	else
		rnbd_netem_drop "$1" off
	fi
}

rnbd_cable_how() {
	if rnbd_rxe_survives_pull; then
		echo "QEMU set_link"
	else
		echo "netem loss 100% on the client, as rxe of $(uname -r) does not survive a pulled cable"
	fi
}

# rnbd_rdma_state RXE: the state of port 1 of RXE ("ACTIVE", "DOWN", ...).
rnbd_rdma_state() {
	rdma link show "$1/1" 2>/dev/null |
		sed -n 's/.* state \([A-Z_]*\) .*/\1/p'
}

# rnbd_nap SECONDS: sleep without a process.  A TCG guest that forks
# sleep five times a second, as a wait's poll did, spends about a quarter
# of a host CPU on it, which the host's other guests lack (testing.rst);
# read's timeout on a pipe that nobody writes to costs next to nothing.
exec {RNBD_NAP_FD}<> <(:)
rnbd_nap() {
	read -r -t "$1" -u "$RNBD_NAP_FD" || :
}

# rnbd_wait SECONDS CMD...: poll CMD every 0.2 s until it succeeds.
rnbd_wait() {
	local limit=$(($1 * 5)) t=0

	shift
	until "$@" >/dev/null 2>&1; do
		t=$((t + 1))
		[ $t -lt $limit ] || return 1
		rnbd_nap 0.2
	done
}

# rnbd_put FILE TEXT: FILE holds TEXT, written whole: a reader that may
# look at any moment sees it or what FILE held before, never an empty or
# partly written file (as it can between the truncation and the write of
# a plain redirection).
rnbd_put() {
	printf '%s\n' "$2" >"$1.tmp.$$" && mv "$1.tmp.$$" "$1"
}

# Synchronisation between the two sides of a test, through files in a
# directory both guests see (the host's share, without caching).
rnbd_sync_put() {
	rnbd_put "$RNBD_SYNC_DIR/$1" "${2:-}"
}

# rnbd_sync_wait NAME [SECONDS]: wait for NAME to be put, print its value.
rnbd_sync_wait() {
	local f="$RNBD_SYNC_DIR/$1"

	rnbd_wait "${2:-60}" test -e "$f" || {
		rnbd_log "timed out waiting for '$1' from the other side"
		return 1
	}
	cat "$f"
}

rnbd_run_roles() {
	local pid rc

	case $RNBD_ROLE in
	server)
		test_server
		;;
	client)
		test_client
		;;
	*)
		test_server &
		pid=$!
		test_client
		rc=$?
		if ! wait "$pid"; then
			echo "# server side failed"
			[ "$rc" -eq 0 ] && rc=1
		fi
		return "$rc"
		;;
	esac
}

# rnbd_host CMD...: ask the host's runner to act on the guests' QEMU:
# "set_link p1 off" pulls the cable of path 1, "pause server 4" stops the
# server's guest for 4 s.  Only in the two-guest topology.
rnbd_host() {
	local dir="$RNBD_SHARE/ctl" id

	mkdir -p "$dir"
	id="$RNBD_ROLE.$$.$RANDOM"
	echo "$*" >"$dir/$id.tmp" && mv "$dir/$id.tmp" "$dir/$id.req"
	rnbd_wait 30 test -e "$dir/$id.done" || {
		rnbd_log "host did not answer '$*'"
		return 1
	}
	[ "$(cat "$dir/$id.done")" = ok ]
}

# The modules under test, loaded by modprobe from the index the test bed
# installed; rnbd_modules_unload removes whatever of them is loaded.
export RNBD_MODULES="rtrs-core rtrs-client rtrs-server rnbd-client rnbd-server"

# rnbd_unload MODULE...: rmmod those of them that are loaded, in that order.
rnbd_unload() {
	local m rc=0

	for m in "$@"; do
		grep -q "^${m//-/_} " /proc/modules || continue
		rmmod "$m" || rc=1
	done
	return $rc
}

rnbd_modules_unload() {
	modprobe -r rnbd-client rnbd-server rtrs-client rtrs-server rtrs-core
}

# Disks to export.  rnbd_nullb_up NAME MB [ATTR=VALUE...]: a memory-backed
# null_blk made through configfs (the way that works where null_blk is
# built in), with a write cache, so that flushes and FUA reach it, and
# discard, which frees its memory, and the configfs attributes given:
# /dev/NAME.
rnbd_nullb_up() {
	rnbd_nullb_make "$@" && rnbd_wait 10 test -b "/dev/$1"
}

# rnbd_nullb_make NAME MB [ATTR=VALUE...]: the same, without waiting for
# /dev/NAME.
rnbd_nullb_make() {
	local d=/sys/kernel/config/nullb/$1 a

	if [ ! -d /sys/kernel/config/nullb ]; then
		modprobe null_blk nr_devices=0 && modprobe configfs || return 1
		mountpoint -q /sys/kernel/config ||
			mount -t configfs none /sys/kernel/config || return 1
	fi
	mkdir "$d" || return 1
	echo "$2" >"$d/size" && echo 1 >"$d/memory_backed" &&
		echo 1 >"$d/discard" && echo 8 >"$d/cache_size" || return 1
	for a in "${@:3}"; do
		echo "${a#*=}" >"$d/${a%%=*}" || return 1
	done
	echo 1 >"$d/power"
}

rnbd_nullb_down() {
	local d=/sys/kernel/config/nullb/$1

	[ -d "$d" ] || return 0
	echo 0 >"$d/power" && rmdir "$d"
}

# rnbd_loop_up FILE MB: a loop device over a file in tmpfs, which takes
# discard and write-zeroes as hole punching and zeroing; prints the device.
rnbd_loop_up() {
	modprobe loop && truncate -s "${2}M" "$1" && losetup -f --show "$1"
}

# rnbd_loop_down DEV FILE
rnbd_loop_down() {
	losetup -d "$1"
	rm -f "$2"
}

# rnbd_dev_of SESSNAME DEVICE_PATH: the rnbdN a client mapped it as.
rnbd_dev_of() {
	local d

	for d in /sys/block/rnbd*; do
		[ -e "$d/rnbd/session" ] || continue
		[ "$(cat "$d/rnbd/session")" = "$1" ] &&
			[ "$(cat "$d/rnbd/mapping_path")" = "$2" ] &&
			{ basename "$d"; return 0; }
	done
	return 1
}

# rnbd_nr_mapped: how many devices the client has mapped, printed and
# left in RNBD_NR_MAPPED (for callers that do not want $(...)'s fork).
rnbd_nr_mapped() {
	local d n=0

	for d in /sys/block/rnbd*; do
		[ -e "$d" ] && n=$((n + 1))
	done
	# shellcheck disable=SC2034 # for the caller
	RNBD_NR_MAPPED=$n
	echo $n
}

# rnbd_nr_cpu_ids: the kernel's nr_cpu_ids, one more than the highest
# possible CPU.
rnbd_nr_cpu_ids() {
	local possible

	possible=$(cat /sys/devices/system/cpu/possible)
	echo $((${possible##*[-,]} + 1))
}

# rnbd_map SESSNAME DEVICE_PATH [OPTION...]: map over path 0 in one guest.
rnbd_map() {
	local sess=$1 path=$2

	shift 2
	echo "sessname=$sess path=ip:$(rnbd_path_addr 0 server) device_path=$path $*" \
		>/sys/devices/virtual/rnbd-client/ctl/map_device
}

# rnbd_map_refused ERROR SESSNAME DEVICE_PATH [OPTION...]: the map fails
# with ERROR (what the write says, "Invalid argument" for EINVAL) and
# nothing new is mapped.
rnbd_map_refused() {
	local want=$1 n err

	shift
	n=$(rnbd_nr_mapped)
	err=$(rnbd_map "$@" 2>&1) && { echo "mapped"; return 1; }
	echo "$err"
	grep -q "$want" <<<"$err" && [ "$(rnbd_nr_mapped)" = "$n" ]
}

# rnbd_unmap RNBDN [normal|force]
rnbd_unmap() {
	echo "${2:-normal}" >"/sys/block/$1/rnbd/unmap_device"
}

# rnbd_unmap_busy DEV [LOG]: a normal unmap of DEV, open, fails with EBUSY
# and says why in the kernel log: a line with LOG (default: our client's
# "DEV is open: not unmapped").
rnbd_unmap_busy() {
	rnbd_write_refused "/sys/block/$1/rnbd/unmap_device" normal \
		"Device or resource busy" "${2:-"$1 is open: not unmapped"}"
}

# rnbd_write_refused FILE STRING ERROR LOG: writing STRING to FILE fails
# with ERROR (its text, "Invalid argument" for EINVAL), and a line of the
# kernel log since has LOG in it, as is.
rnbd_write_refused() {
	local err mark

	mark=$(rnbd_kmsg_mark)
	if err=$(rnbd_write_err "$1" "$2"); then
		echo "'$2' into $1 was taken"
		return 1
	fi
	[ "$err" = "$3" ] ||
		{ echo "'$2' into $1 failed with '$err', not '$3'"; return 1; }
	rnbd_logged_since "$mark" "$4" ||
		{ echo "'$2' into $1: no kernel log line with '$4'"; return 1; }
}

# rnbd_write_err FILE STRING: write STRING and a newline to FILE.  On
# failure print the error as its text ("Invalid argument" for EINVAL,
# "No such file or directory" when FILE cannot be opened) and return 1.
rnbd_write_err() {
	local out

	out=$({ echo "$2" >"$1"; } 2>&1) && return 0
	echo "${out##*: }"
	return 1
}

# rnbd_kmsg_mark: a line of the test's own into the kernel log, which it
# prints and leaves in RNBD_KMSG_MARK (called without $(...), which forks),
# for rnbd_kmsg_since.  A write, not a count of dmesg's lines:
# under the debug kernel and TCG, each program a check starts costs up to
# a second, and bad-input.sh marks the log some 150 times.
rnbd_kmsg_mark() {
	RNBD_KMSG_MARK="rnbd-selftest: mark $BASHPID.$RANDOM.$SECONDS"
	echo "$RNBD_KMSG_MARK" >/dev/kmsg && echo "$RNBD_KMSG_MARK"
}

# rnbd_kmsg_since MARK: the lines of the kernel log after MARK.  Bash
# reads dmesg: an awk would be one more program a check.
rnbd_kmsg_since() {
	local line seen=

	while IFS= read -r line; do
		if [ -n "$seen" ]; then
			printf '%s\n' "$line"
		elif [[ $line == *"$1"* ]]; then
			seen=1
		fi
	done < <(dmesg)
}

# rnbd_logged_since MARK TEXT: a line of the kernel log after MARK has
# TEXT in it, as is.
rnbd_logged_since() {
	rnbd_kmsg_since "$1" | grep -qF -e "$2"
}

# Tracepoints.  rnbd_trace_on SYSTEM: record the events of SYSTEM
# (rtrs_clt, rtrs_srv) from now on, in a trace buffer emptied first.
RNBD_TRACEFS=/sys/kernel/tracing
rnbd_trace_on() {
	[ -e "$RNBD_TRACEFS/trace" ] ||
		mount -t tracefs nodev "$RNBD_TRACEFS" || return 1
	[ -d "$RNBD_TRACEFS/events/$1" ] ||
		{ echo "no events/$1 in tracefs"; return 1; }
	# tracing_on too: something before may have stopped the ring buffer.
	echo >"$RNBD_TRACEFS/trace" && echo 1 >"$RNBD_TRACEFS/events/$1/enable" &&
		echo 1 >"$RNBD_TRACEFS/tracing_on"
}

rnbd_trace_off() {
	[ ! -e "$RNBD_TRACEFS/events/$1/enable" ] ||
		echo 0 >"$RNBD_TRACEFS/events/$1/enable"
}

# rnbd_traced N EVENT PATTERN: at least N events EVENT were recorded whose
# line matches PATTERN (grep); else say what was.
rnbd_traced() {
	local n

	n=$(grep " $2: " "$RNBD_TRACEFS/trace" | grep -c -e "$3")
	[ "$n" -ge "$1" ] && return 0
	echo "$n $2 events with '$3', not $1; the last events:"
	grep -v '^#' "$RNBD_TRACEFS/trace" | tail -n 20
	return 1
}

# rnbd_debug_kernel: the kernel is the debug one of ../shared/test-kernel
# (kmemleak, KASAN, lockdep), where IO runs about ten times slower: a test
# may take a shorter form there, with every kind of fault and assertion.
rnbd_debug_kernel() {
	[ -e /sys/kernel/debug/kmemleak ]
}
