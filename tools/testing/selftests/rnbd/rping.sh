#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# rping (rdma_cm + RC verbs) between the two guests on each of the two
# paths; with the cable of path 1 pulled (QEMU set_link off, both NICs lose
# carrier) rping fails on path 1 while path 0 still works, and path 1 works
# again once the link is back.
#
# rnbd-vm: topology=two

. "$(dirname "$0")/lib.sh"

COUNT=5

# rping_listening ADDR...: an rping listens on each address.
rping_listening() {
	local a ids

	ids=$(rdma res show cm_id) || return 1
	for a in "$@"; do
		grep -q "state LISTEN .* comm rping src-addr $a:" <<<"$ids" ||
			return 1
	done
}

test_server() {
	local i addrs=() pids=()

	rnbd_rdma_up || return 1
	# Persistent servers: they serve every client of the test.
	for i in $(seq 0 $((RNBD_NR_PATHS - 1))); do
		addrs+=("$(rnbd_path_addr "$i" server)")
		rping -s -P -a "${addrs[i]}" &
		pids+=($!)
	done
	# The client's first connect would be rejected before they listen.
	rnbd_wait 30 rping_listening "${addrs[@]}" ||
		echo "rping does not listen on ${addrs[*]}"
	rnbd_sync_put listening
	rnbd_sync_wait client-done "$RNBD_VM_TIMEOUT"
	kill "${pids[@]}"
	wait "${pids[@]}" 2>/dev/null
	return 0
}

# ping PATH: COUNT verified round trips to the server on PATH.
ping_path() {
	local out

	out=$(timeout 60 rping -c -v -C "$COUNT" -a "$(rnbd_path_addr "$1" server)" 2>&1) ||
		{ echo "$out" | tail -5; return 1; }
	[ "$(grep -c 'ping data' <<<"$out")" -eq "$COUNT" ] ||
		{ echo "$out" | tail -5; return 1; }
}

ping_fails() {
	! timeout 30 rping -c -C 1 -a "$(rnbd_path_addr "$1" server)" >/dev/null 2>&1
}

carrier() {
	[ "$(cat "/sys/class/net/$(rnbd_path_netdev "$1")/carrier")" = "$2" ]
}

# link PATH on|off: the host pulls or plugs the cable of PATH.
link() {
	rnbd_host set_link "p$1" "$2" &&
		rnbd_wait 20 carrier "$1" "$([ "$2" = on ] && echo 1 || echo 0)"
}

test_client() {
	ktap_header 8
	ktap_check "rxe up" rnbd_rdma_up
	rnbd_sync_wait listening 120 >/dev/null
	ktap_check "path 0: rping" ping_path 0
	ktap_check "path 1: rping" ping_path 1
	ktap_check "path 1: link down" link 1 off
	ktap_check "path 1: rping fails while its link is down" ping_fails 1
	ktap_check "path 0: rping still passes" ping_path 0
	ktap_check "path 1: link up" link 1 on
	ktap_check "path 1: rping passes again" rnbd_wait 60 ping_path 1
	rnbd_sync_put client-done
	ktap_finish
}

rnbd_run_roles
