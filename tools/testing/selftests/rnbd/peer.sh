#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The upstream peer works in the test bed: Linux's own RTRS and RNBD, built
# from Debian's linux-source by tools/testing/upstream/build-upstream.sh, on
# both sides of the map test (see map-lib.sh).  The interop tests and the
# benchmarks of our modules stand on this.  Skipped where the peer was not
# built (RNBD_UPSTREAM_MODULES unset).
#
# rnbd-vm: topology=two

MAP_SERVER=upstream
MAP_CLIENT=upstream
SESSNAME=peer
MAP_FIO=short
. "$(dirname "$0")/map-lib.sh"
map_test
