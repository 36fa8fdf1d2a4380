#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# rping (rdma_cm + RC verbs) between the two guests on each of the two
# paths, each round trip verified; with the cable of path 1 pulled (QEMU
# set_link off, both NICs lose carrier) rping fails on path 1 while path 0
# still works, and path 1 works again once the link is back.  The server
# side fails too when an rping server of it did not listen, died, reported
# an error or served fewer round trips than the client made.
#
# rnbd-vm: topology=two

. "$(dirname "$0")/lib.sh"

COUNT=5
# The round trips each path's server must serve: two runs of ping_path
# each (the retries of "rping passes again" may add more).
SERVED=$((2 * COUNT))

# rping_listening ADDR...: an rping listens on each address.
rping_listening() {
	local a ids

	ids=$(rdma res show cm_id) || return 1
	for a in "$@"; do
		grep -q "state LISTEN .* comm rping src-addr $a:" <<<"$ids" ||
			return 1
	done
}

# rping_served PATH LOG RC: the rping server of PATH, whose output is LOG
# and which ended with RC, ran until killed (a persistent server ends on
# its own only on an error), printed nothing but the lines of round trips
# and of clients that went ("server DISCONNECT EVENT...", then "wait for
# RDMA_READ_ADV state 10": DISCONNECTED where the next ping would start),
# and served SERVED round trips at least.
rping_served() {
	local path=$1 log=$2 rc=$3 n other bad=0

	n=$(grep -c '^server ping data: rdma-ping-[0-9]*: ' "$log")
	rnbd_log "path $path: the rping server served $n round trips"
	if [ "$rc" -ne 143 ]; then
		rnbd_log "path $path: the rping server ended with $rc before it was killed"
		bad=1
	fi
	other=$(grep -v -e '^server ping data: rdma-ping-[0-9]*: ' \
		-e '^server DISCONNECT EVENT\.\.\.$' \
		-e '^wait for RDMA_READ_ADV state 10$' "$log")
	if [ -n "$other" ]; then
		rnbd_log "path $path: the rping server reported:"
		printf '%s\n' "$other" | head -n 10 | sed 's/^/#   /'
		bad=1
	fi
	if [ "$n" -lt "$SERVED" ]; then
		rnbd_log "path $path: $n round trips served, not at least $SERVED"
		bad=1
	fi
	if [ $bad -ne 0 ] && [ -s "$log" ]; then
		rnbd_log "path $path: the tail of the rping server's output:"
		tail -n 10 "$log" | sed 's/^/#   /'
	fi
	return $bad
}

test_server() {
	local i rc fail=0 dir addrs=() pids=() logs=()

	if ! rnbd_rdma_up; then
		rnbd_log "cannot bring up Soft-RoCE"
		rnbd_sync_put listening
		return 1
	fi
	dir=$(mktemp -d)
	# Persistent servers: they serve every client of the test.  -v prints
	# a line per round trip served, line-buffered so that the kill at the
	# end loses none.
	for i in $(seq 0 $((RNBD_NR_PATHS - 1))); do
		addrs+=("$(rnbd_path_addr "$i" server)")
		logs+=("$dir/rping-$i.log")
		stdbuf -oL rping -s -P -v -a "${addrs[i]}" >"${logs[i]}" 2>&1 &
		pids+=($!)
	done
	# The client's first connect would be rejected before they listen.
	if ! rnbd_wait 30 rping_listening "${addrs[@]}"; then
		rnbd_log "rping does not listen on ${addrs[*]}"
		fail=1
	fi
	rnbd_sync_put listening
	rnbd_sync_wait client-done "$RNBD_VM_TIMEOUT" >/dev/null || fail=1
	for i in "${!pids[@]}"; do
		kill "${pids[i]}" 2>/dev/null
		wait "${pids[i]}" 2>/dev/null
		rc=$?
		rping_served "$i" "${logs[i]}" "$rc" || fail=1
	done
	rm -rf "$dir"
	return $fail
}

# ping PATH: COUNT round trips to the server on PATH, each one validated
# (-V: the buffer the server wrote back is the one the client sent) and
# printed (-v).  rping ends with 0 when the server disconnects early, so
# the round trips are counted too.
ping_path() {
	local out

	out=$(timeout 60 rping -c -v -V -C "$COUNT" -a "$(rnbd_path_addr "$1" server)" 2>&1) ||
		{ echo "$out" | tail -5; return 1; }
	[ "$(grep -c '^ping data: rdma-ping-[0-9]*: ' <<<"$out")" -eq "$COUNT" ] ||
		{ echo "$out" | tail -5; return 1; }
}

ping_fails() {
	! timeout 30 rping -c -C 1 -a "$(rnbd_path_addr "$1" server)" >/dev/null 2>&1
}

test_client() {
	ktap_header 8
	ktap_check "rxe up" rnbd_rdma_up
	rnbd_sync_wait listening 120 >/dev/null
	ktap_check "path 0: rping" ping_path 0
	ktap_check "path 1: rping" ping_path 1
	ktap_check "path 1: link down" rnbd_link 1 off
	ktap_check "path 1: rping fails while its link is down" ping_fails 1
	ktap_check "path 0: rping still passes" ping_path 0
	ktap_check "path 1: link up" rnbd_link 1 on
	ktap_check "path 1: rping passes again" rnbd_wait 60 ping_path 1
	rnbd_sync_put client-done
	ktap_finish
}

rnbd_run_roles
