#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The server side fails, after it said why, while the client side passes by
# its own verdict.  The test bed must fail the test, say that the server
# side exited with 1, and show the server's output.
#
# rnbd-vm: topology=two
# rnbd-vm: timeout=60

. "$(dirname "$0")/../../selftests/rnbd/lib.sh"

test_server() {
	rnbd_sync_put served
	echo "planted: the server side fails"
	return 1
}

test_client() {
	ktap_header 1
	ktap_check "the server side ran" rnbd_sync_wait served 50
	ktap_finish
}

rnbd_run_roles
