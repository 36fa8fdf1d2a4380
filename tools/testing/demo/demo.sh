#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The guests' side of `make demo` (scripts/demo).  The server exports a brd
# ram disk with our rnbd-server; the client maps it with our rnbd-client over
# both Soft-RoCE paths, writes data with fio, each block read back and
# checked (crc32c), and a dd pattern the server then finds on its disk,
# prints the figures and the sysfs both sides made, unmaps and unloads.
#
# The client prints everything, the server's sysfs included (it comes over
# the sync directory), and exits 0 only when all the data was verified and
# both sides came down cleanly.  Not a selftest: it reports for a person.
#
# rnbd-vm: topology=two

SESSNAME=demo
MAP_NULL_BLK=0
# shellcheck source=../selftests/rnbd/map-lib.sh
. "$(dirname "$0")/../selftests/rnbd/map-lib.sh"

HERE=$(dirname "$0")
DISK_MB=128
FIO_SECS=10
# How long each side waits for the other's next step.
PEER_SECS=${RNBD_VM_TIMEOUT:-300}

# Command files: reading them prints their usage, not a state.
COMMANDS="map_device unmap_device disconnect force_close"

# sysfs_tree DIR INDENT: DIR's attributes with their values, then its
# subdirectories; links are shown where they point.
sysfs_tree() {
	local dir=$1 ind=$2 f name

	for f in "$dir"/*; do
		name=${f##*/}
		case $name in uevent | power | subsystem | '*') continue ;; esac
		if [ -L "$f" ]; then
			echo "$ind$name -> $(readlink -f "$f")"
		elif [ -d "$f" ]; then
			continue
		elif [[ " $COMMANDS " == *" $name "* ]]; then
			echo "$ind$name (a command)"
		elif [ -r "$f" ]; then
			echo "$ind$name: $(tr '\n' ' ' <"$f" | sed 's/ *$//')"
		fi
	done
	for f in "$dir"/*/; do
		f=${f%/}
		name=${f##*/}
		[ -L "$f" ] && continue
		case $name in power | '*') continue ;; esac
		echo "$ind$name/"
		sysfs_tree "$f" "$ind  "
	done
}

# sysfs_show DIR: DIR (where a class link leads) and the tree under it.
sysfs_show() {
	local real

	real=$(readlink -f "$1")
	if [ "$real" = "$1" ]; then
		echo "  $1/"
	else
		echo "  $1/ (-> $real)"
	fi
	[ -d "$real" ] || { echo "    missing"; return 1; }
	sysfs_tree "$real" "    "
}

server_sysfs() {
	sysfs_show "/sys/class/rtrs-server/$SESSNAME"
	sysfs_show /sys/class/rnbd-server/ctl/devices
}

demo_server() {
	local status written rc=0

	if server_up; then
		rnbd_sync_put server-ready "ok $(blockdev --getsize64 "$DISK") $DISKS"
	else
		rnbd_sync_put server-ready fail
		rc=1
	fi
	status=$(rnbd_sync_wait mapped "$PEER_SECS") || rc=1
	if [ "$status" = ok ]; then
		rnbd_sync_wait io-done "$PEER_SECS" >/dev/null || rc=1
		rnbd_sync_put server-sysfs "$(server_sysfs 2>&1)"
	fi
	written=$(rnbd_sync_wait written "$PEER_SECS") || rc=1
	if [ -z "$written" ]; then
		rnbd_sync_put checked "the client wrote no pattern"
	else
		# shellcheck disable=SC2086 # TOKEN SUM
		status=$(server_check $written) && status=ok
		rnbd_sync_put checked "$status"
	fi
	server_finish || rc=1
	rnbd_unload rtrs-core || rc=1
	return $rc
}

# step DESC CMD...: run one step of the client, its output indented; a
# failure is said as such.
step() {
	local desc=$1 out rc

	shift
	echo "$desc"
	out=$("$@" 2>&1)
	rc=$?
	[ -n "$out" ] && printf '%s\n' "$out" | sed 's/^/  /'
	[ $rc -eq 0 ] || echo "  FAILED"
	return $rc
}

now_ms() {
	echo $(($(date +%s%N) / 1000000))
}

# demo_map: map() of map-lib.sh, timed to the millisecond; its first line
# is the map_device line it wrote.
demo_map() {
	local t0 ms out rc

	t0=$(now_ms)
	out=$(map)
	rc=$?
	ms=$(($(now_ms) - t0))
	echo "echo \"$(head -n1 <<<"$out")\" > $CTL/map_device"
	tail -n +2 <<<"$out" | grep -v '^mapped in '
	[ $rc -eq 0 ] || return 1
	printf '/dev/%s mapped in %d.%03d s, %d MiB\n' "$DEV" $((ms / 1000)) \
		$((ms % 1000)) $(($(blockdev --getsize64 "/dev/$DEV") >> 20))
}

client_map() {
	step "Soft-RoCE (rdma_rxe) on both paths" rnbd_rdma_up || return 1
	# Not through step: its subshell would lose SERVER_*.
	echo "server: rnbd-server exports $DISK_MB MiB of brd ram disk"
	server_ready >/dev/null 2>&1 || { echo "  FAILED: the server is not ready"; return 1; }
	echo "  $SERVER_DISK, $((SERVER_SIZE >> 20)) MiB"
	step "client: load rnbd-client" client_modules_load &&
		step "client: map the server's disk over both paths" demo_map &&
		step "paths of session $SESSNAME" rnbd_paths_connected
}

# fio_run RW BS DEPTH: FIO_SECS seconds of RW in blocks of BS, DEPTH of
# them in flight; every 2 * DEPTH blocks written are read back and checked
# against their crc32c (fio cannot check a mix of reads and writes).  The
# blocks written last, when time is up, may go unchecked: the figures say
# how much was.
fio_run() {
	local json=/tmp/demo-fio.json err=/tmp/demo-fio.err rc

	mapped || return 1
	timeout $((FIO_SECS + 120)) fio --name="demo-$1-$2" \
		--filename="/dev/$DEV" --rw="$1" --bs="$2" --ioengine=libaio \
		--direct=1 --iodepth="$3" --time_based --runtime="$FIO_SECS" \
		--verify=crc32c --verify_backlog=$(($3 * 2)) --verify_fatal=1 \
		--randrepeat=0 --verify_state_save=0 \
		--output-format=json --output="$json" 2>"$err"
	rc=$?
	python3 "$HERE/fio-report.py" "$json" || rc=1
	[ $rc -eq 0 ] || { echo "fio exited with $rc"; tail -n 20 "$err"; }
	rm -f "$json" "$err"
	return $rc
}

client_io() {
	local rc=0

	step "fio: 4k random writes, 16 in flight, $FIO_SECS s; read back and checked (crc32c) every 32" \
		fio_run randwrite 4k 16 || rc=1
	step "fio: 1M sequential writes, 4 in flight, $FIO_SECS s; read back and checked (crc32c) every 8" \
		fio_run write 1M 4 || rc=1
	step "dd: a $PATTERN_MB MiB pattern at $PATTERN_AT_MB MiB, written and read back" \
		write_pattern || rc=1
	return $rc
}

client_sysfs() {
	local server

	echo "client sysfs:"
	sysfs_show "/sys/block/$DEV/rnbd"
	sysfs_show "/sys/class/rtrs-client/$SESSNAME"
	echo "server sysfs:"
	server=$(rnbd_sync_wait server-sysfs "$PEER_SECS") || return 1
	echo "$server"
}

demo_unmap() {
	local t0

	t0=$(now_ms)
	unmap || return 1
	echo "unmapped in $(($(now_ms) - t0)) ms"
}

client_down() {
	local rc=0

	if [ -b "/dev/$DEV" ]; then
		step "client: unmap /dev/$DEV" demo_unmap || rc=1
	fi
	# The server reads its disk once the client is gone from it.
	step "server: its disk holds the dd pattern and what the client read" \
		server_saw_writes || rc=1
	step "client: unload rnbd-client, rtrs-client, rtrs-core" \
		rnbd_unload rnbd-client rtrs-client rtrs-core || rc=1
	rnbd_sync_put client-done
	step "server: unload rnbd-server, rtrs-server, rtrs-core" \
		server_down || rc=1
	return $rc
}

demo_client() {
	local rc=0 start=$SECONDS

	echo "RNBD demo: kernel $(uname -r), $(nproc) CPUs per guest;" \
		"client and server guests joined by two paths"
	pattern "$TOKEN" "$PATTERN"
	rm -f "$PATTERN.written"
	if client_map; then
		rnbd_sync_put mapped ok
		client_io || rc=1
		rnbd_sync_put io-done
		client_sysfs || rc=1
	else
		rnbd_sync_put mapped fail
		rc=1
	fi
	client_down || rc=1
	rm -f "$PATTERN" "$PATTERN.written"
	if [ $rc -eq 0 ]; then
		echo "RNBD demo: all data verified; done in $((SECONDS - start)) s"
	else
		echo "RNBD demo: FAILED (see above)"
	fi
	return $rc
}

# In place of map-lib.sh's sides.
test_server() {
	demo_server
}

test_client() {
	demo_client
}

rnbd_run_roles
