#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# As map.sh, with the server's always_invalidate=N: chunks keep their rkey
# while the server uses them.
#
# rnbd-vm: topology=two

SESSNAME=map-noinval
RTRS_SRV_PARAMS="always_invalidate=N"
. "$(dirname "$0")/map-lib.sh"
map_test
