#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Linux's RNBD client against our server: the upstream rtrs-client and
# rnbd-client (built from Debian's linux-source) map a disk our rnbd-server
# exports, with always_invalidate=Y, fio verifies it, and a pattern the
# client wrote is on the server's disk (see map-lib.sh).
#
# rnbd-vm: topology=two

MAP_SERVER=ours
MAP_CLIENT=upstream
SESSNAME=interop-srv
MAP_FIO=short
. "$(dirname "$0")/map-lib.sh"
map_test
