#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Stops the guest's per-test timeout and never ends, as a test stuck in the
# kernel would: the host must give up on the guest and kill it.

kill -STOP "$PPID"
sleep infinity
