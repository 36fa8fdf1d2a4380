#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Our client and our server: a disk of the server mapped over both paths,
# fio verifies it, a pattern the client wrote is on the server's disk, bad
# requests are refused (see map-lib.sh); with always_invalidate=Y, the
# default.
#
# rnbd-vm: topology=one,two

SESSNAME=map
. "$(dirname "$0")/map-lib.sh"
map_test
