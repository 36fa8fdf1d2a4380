#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Our RNBD client against Linux's server: our rtrs-client and rnbd-client
# map a disk the upstream rnbd-server (built from Debian's linux-source)
# exports, fio verifies it, and a pattern the client wrote is on the
# server's disk (see map-lib.sh).
#
# rnbd-vm: topology=two

MAP_SERVER=upstream
MAP_CLIENT=ours
SESSNAME=interop-clt
MAP_FIO=short
. "$(dirname "$0")/map-lib.sh"
map_test
