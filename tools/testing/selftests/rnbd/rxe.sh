#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The test bed: Soft-RoCE comes up on the netdev of each path (the rxe
# device exists, its port is ACTIVE, it sits on the path's netdev and its
# GID table holds the path's address; in two guests both sides are
# checked), and the guest's CPU has no CMPXCHG16B that QEMU gets wrong
# (tools/testing/vm/cx16-flags.c).
#
# rnbd-vm: topology=one,two

. "$(dirname "$0")/lib.sh"

CX16_FLAGS=$(cd "$(dirname "$0")/../../vm" && pwd)/cx16-flags.c

# cpu_flags_kept: CMPXCHG16B keeps the flags, or the CPU has none (4).
cpu_flags_kept() {
	local bin rc

	bin=$(mktemp) || return 1
	gcc -O2 -o "$bin" "$CX16_FLAGS" || { rm -f "$bin"; return 1; }
	"$bin"
	rc=$?
	rm -f "$bin"
	[ "$rc" -eq 0 ] || [ "$rc" -eq 4 ]
}

# check_path N ROLE
check_path() {
	local rxe netdev addr state

	rxe=$(rnbd_path_rxe "$1")
	netdev=$(rnbd_path_netdev "$1")
	addr=$(rnbd_path_addr "$1" "$2")
	rnbd_wait 20 test "$(rnbd_rdma_state "$rxe")" = ACTIVE
	state=$(rnbd_rdma_state "$rxe")
	[ "$state" = ACTIVE ] || { echo "$rxe port state '$state'"; return 1; }
	rdma link show "$rxe/1" | grep -qw "netdev $netdev" ||
		{ echo "$rxe is not on $netdev"; return 1; }
	ibv_devinfo -v -d "$rxe" | grep -q "GID\[.*\]:.*::ffff:$addr," ||
		{ echo "$rxe has no GID for $addr"; return 1; }
}

check_side() {
	local i

	rnbd_rdma_up || return 1
	for i in $(seq 0 $((RNBD_NR_PATHS - 1))); do
		check_path "$i" "$1" || return 1
	done
}

if [ "$RNBD_ROLE" = server ]; then
	out=$(check_side server 2>&1)
	rnbd_sync_put server-result "$?"
	[ -n "$out" ] && printf '%s\n' "$out" | sed 's/^/# /'
	exit 0
fi

nr=$((RNBD_NR_PATHS + 3))
[ "$RNBD_TOPOLOGY" = two ] && nr=$((nr + 1))
ktap_header $nr
ktap_check "the CPU's CMPXCHG16B keeps the flags, or there is none" \
	cpu_flags_kept
ktap_check "rxe devices created" rnbd_rdma_up
for i in $(seq 0 $((RNBD_NR_PATHS - 1))); do
	ktap_check "path $i: rxe$i ACTIVE on rnbd$i with its address" \
		check_path "$i" client
done
ktap_check "ib_uverbs lists every rxe device" \
	test "$(ibv_devices | grep -c rxe)" -eq "$RNBD_NR_PATHS"
if [ "$RNBD_TOPOLOGY" = two ]; then
	ktap_check "server side: rxe up on both paths" \
		test "$(rnbd_sync_wait server-result 60)" = 0
fi
ktap_finish
