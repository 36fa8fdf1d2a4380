#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The five modules load by modprobe from the tree under test, make their
# sysfs and block-major anchors, and unload without leaving anything behind,
# several times in a row.
#
# rnbd-vm: topology=one

. "$(dirname "$0")/lib.sh"

ROUNDS=3

# The sysfs directories the modules own while loaded.
ANCHORS="/sys/class/rtrs-client /sys/class/rtrs-server
/sys/devices/virtual/rnbd-client/ctl /sys/class/rnbd-server/ctl"

from_tree_under_test() {
	local m path

	for m in $RNBD_MODULES; do
		path=$(modinfo -n "$m") || return 1
		case $path in
		*/updates/*) ;;
		*) echo "$m resolves to $path"; return 1 ;;
		esac
	done
}

all_loaded() {
	local m

	for m in $RNBD_MODULES; do
		grep -q "^${m//-/_} " /proc/modules || { echo "$m not loaded"; return 1; }
	done
}

anchors_present() {
	local a

	for a in $ANCHORS; do
		[ -d "$a" ] || { echo "missing $a"; return 1; }
	done
	grep -qw rnbd /proc/devices || { echo "no rnbd block major"; return 1; }
}

nothing_left() {
	local a

	if grep -E '^(rtrs|rnbd)_' /proc/modules; then
		return 1
	fi
	for a in $ANCHORS; do
		[ -e "$a" ] && { echo "$a still exists"; return 1; }
	done
	if grep -qw rnbd /proc/devices; then
		echo "rnbd block major still registered"
		return 1
	fi
	return 0
}

load_round() {
	# The ULP first: modprobe must pull in what it depends on.
	modprobe -a rnbd-server rnbd-client rtrs-client rtrs-server rtrs-core &&
		all_loaded && anchors_present
}

unload_round() {
	rnbd_modules_unload && nothing_left
}

ktap_header $((1 + 2 * ROUNDS))
ktap_check "modules resolve to the tree under test" from_tree_under_test
for i in $(seq 1 $ROUNDS); do
	ktap_check "round $i: load, sysfs and block major present" load_round
	ktap_check "round $i: unload, nothing left" unload_round
done
ktap_finish
