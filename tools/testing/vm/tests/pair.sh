#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A clean test of two sides: the server side hands the client a value
# through the sync directory and waits for the client's answer, the client
# checks it; both pass, and the test bed must pass the test and show the
# server side's output.
#
# rnbd-vm: topology=two
# rnbd-vm: timeout=60

. "$(dirname "$0")/../../selftests/rnbd/lib.sh"

test_server() {
	rnbd_sync_put token "$(hostname)"
	rnbd_sync_wait answer 50 >/dev/null || return 1
	echo "the client answered"
}

# token_is VALUE: the server's token is VALUE.
token_is() {
	local t

	t=$(rnbd_sync_wait token 50) || return 1
	echo "token: $t"
	[ "$t" = "$1" ]
}

test_client() {
	ktap_header 1
	ktap_check "the server's token came" token_is rnbd-server
	rnbd_sync_put answer
	ktap_finish
}

rnbd_run_roles
