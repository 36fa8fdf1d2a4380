#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Passes by its own verdict but leaves a module of ours loaded, rtrs-core,
# that nothing uses (in the two-guest topology the server side does, the
# client side leaves nothing).  The test bed must fail it, name the module
# and the side that left it, unload it, and run the test after it in the
# same boot.
#
# rnbd-vm: topology=one,two
# rnbd-vm: timeout=60

if [ "$RNBD_ROLE" != client ]; then
	modprobe rtrs-core || exit 1
fi
echo "TAP version 13"
echo "1..1"
echo "ok 1 $RNBD_ROLE: left what it loaded"
