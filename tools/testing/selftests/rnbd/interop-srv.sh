#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Linux's RNBD client against our server: the upstream rtrs-client and
# rnbd-client (built from Debian's linux-source) map a disk our rnbd-server
# exports, with always_invalidate=Y, fio verifies it, and a pattern the
# client wrote is on the server's disk (see map-lib.sh).  The queue
# depth is 128, below the admin connection's 512: our server sizes the IO
# connections' queues at the queue depth, and Linux's client must find
# that enough.
#
# rnbd-vm: topology=two

MAP_SERVER=ours
MAP_CLIENT=upstream
RTRS_SRV_PARAMS="sess_queue_depth=128"
SESSNAME=interop-srv
MAP_FIO=short
. "$(dirname "$0")/map-lib.sh"
map_test
