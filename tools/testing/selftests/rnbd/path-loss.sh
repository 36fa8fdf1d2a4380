#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The client's IO when its session loses every path.  A ram disk of the
# server is mapped over both paths and fio writes and verifies it; the
# host pulls the cables of both paths (where rxe would not survive that,
# the client's packets are dropped instead: rnbd_cable in lib.sh).
#
# Round one: fio's IO waits, no error until the session has waited
# reconnect_timeout, then errors, the device reads "closed" and new IO
# fails at once; with the cables back, the session reconnects and the
# device works again, also after a remap.  Round two: with reconnect_timeout raised at run time, a normal
# unmap while the IO waits is refused at once (the device is open), a
# force unmap fails that IO at once.  Round three: the cables are back
# before reconnect_timeout: the session reconnects, the device is opened
# again, and fio ends without an error, all it wrote read back and
# checked.  Round four: the server's modules are unloaded and loaded
# again under fio: the same.  Round five: a second device, which the
# server does not find when the session reconnects, is "closed" and its IO
# fails while the first goes on; once it is back, remap_device opens it.
# As Linux's client, the disk's uevents say "offline" when the session
# lost its paths and "online" when the device is open again.
# The server side is map-lib.sh's, restarting on request.
#
# rnbd-vm: topology=two
# rnbd-vm: timeout=1500
# rnbd-vm: cuts=paths

SESSNAME=pathloss
MAP_NULL_BLK=0
. "$(dirname "$0")/map-lib.sh"

# reconnect_timeout of round one, and of the others.
WAIT_SEC=20
LONG_WAIT_SEC=600
# How long the cables stay out in round three.
CUT_SEC=10
# How long a reconnect may take once the cables are back: the paths try
# every 5 to 7.5 s, an attempt that started while the cables were out may
# wait 20 s for the address, and TCG is slow.
RECONNECT_SEC=180
PARAM=/sys/module/rnbd_client/parameters/reconnect_timeout
SYSDEV=/sys/block/$DEV/rnbd
FIO_OUT=/tmp/rnbd-path-loss.fio
FIO_PID=

# A second disk of the server, exported through a symlink that round five
# takes away while the server restarts.
NULLB_PL=plnull
LINK=/tmp/rnbd-path-loss.link

second_disk_up() {
	rnbd_nullb_up "$NULLB_PL" 16 && ln -sf "/dev/$NULLB_PL" "$LINK"
}

second_disk_down() {
	rm -f "$LINK"
	rnbd_nullb_down "$NULLB_PL"
}

# server_restart WANT: on the client's request WANT, unload the server's
# modules and load them again; the disks stay.  "missing": without the
# link, put back on the client's next request.  Each request has its own
# names in the sync directory, whose files stay.
server_restart() {
	local status=ok

	[ "$(rnbd_sync_wait "restart-$1" "$RNBD_VM_TIMEOUT")" = go ] ||
		return 1
	[ "$1" = missing ] && rm -f "$LINK"
	if ! rnbd_unload rnbd-server rtrs-server; then
		status="rmmod failed"
	else
		sleep 3
		server_modules_load || status="modprobe failed"
	fi
	rnbd_sync_put "restarted-$1" "$status"
	[ "$status" = ok ] || return 1
	[ "$1" = missing ] || return 0
	[ "$(rnbd_sync_wait relink "$RNBD_VM_TIMEOUT")" = go ] || return 1
	ln -sf "/dev/$NULLB_PL" "$LINK" && rnbd_sync_put relinked ok
}

test_server() {
	local rc=0

	if server_up && second_disk_up; then
		rnbd_sync_put server-ready "ok $(blockdev --getsize64 "$DISK") $DISK"
		server_restart go || rc=1
		server_restart missing || rc=1
	else
		rnbd_sync_put server-ready fail
		rc=1
	fi
	server_finish || rc=1
	second_disk_down
	return $rc
}

now() {
	date +%s.%N
}

# within SECONDS CMD...: CMD succeeds within SECONDS of wall time, polled;
# for long waits, which rnbd_wait's count of polls stretches on a loaded
# TCG guest.
within() {
	local end=$((SECONDS + $1))

	shift
	until "$@" >/dev/null 2>&1; do
		[ "$SECONDS" -lt "$end" ] || return 1
		rnbd_nap 0.5
	done
}

# elapsed SINCE: whole seconds from SINCE to now.
elapsed() {
	echo "$(now) - $1" | bc | cut -d. -f1
}

load_client() {
	modprobe rnbd-client reconnect_timeout=$WAIT_SEC || return 1
	[ "$(cat "$PARAM")" = "$WAIT_SEC" ] ||
		{ echo "reconnect_timeout reads $(cat "$PARAM")"; return 1; }
}

# What fio writes once, at ONCE_SEC seconds' pace whatever the link's, so
# that the cut comes while it writes; the debug kernel is ten times slower.
ONCE_KIB=8192
[ -e /sys/kernel/debug/kmemleak ] && ONCE_KIB=1024
ONCE_SEC=80

# fio_start forever|once: random 4k writes of the device in the
# background, fio stopping at the first error.  "forever": for 900 s,
# every 16 blocks written read back and checked; "once": ONCE_KIB
# written in ONCE_SEC, then all of it read back and checked.  Its pid and,
# once it is done, its exit code go to files, for the checks' subshells.
fio_start() {
	local how=(--size=8M --time_based --runtime=900 --verify_backlog=16)

	[ "$1" = once ] && how=(--size="${ONCE_KIB}k"
		"--rate_iops=,$((ONCE_KIB / 4 / ONCE_SEC + 1))")
	rm -f "$FIO_OUT" "$FIO_OUT.pid" "$FIO_OUT.rc"
	(
		fio --name=path-loss --filename="/dev/$DEV" --rw=randwrite \
			--bs=4k --ioengine=libaio --direct=1 \
			--iodepth=8 "${how[@]}" --verify=crc32c --do_verify=1 \
			--verify_fatal=1 --randrepeat=0 --verify_state_save=0 \
			>"$FIO_OUT" 2>&1 &
		echo $! >"$FIO_OUT.pid"
		wait $!
		echo $? >"$FIO_OUT.rc"
	) &
	rnbd_wait 5 test -s "$FIO_OUT.pid"
	FIO_PID=$(cat "$FIO_OUT.pid")
}

fio_running() {
	kill -0 "$FIO_PID" 2>/dev/null
}

fio_stopped() {
	! fio_running
}

# fio_passed: fio ends, with 0 and no error, having read back and checked
# all it wrote.
fio_passed() {
	local rc

	within 600 fio_stopped || { echo "fio still runs"; return 1; }
	rnbd_wait 10 test -s "$FIO_OUT.rc" || { echo "fio has no exit code"; return 1; }
	rc=$(cat "$FIO_OUT.rc")
	grep -E 'err= *[0-9]+|(read|write): IOPS=' "$FIO_OUT"
	[ "$rc" -eq 0 ] || { echo "fio exited $rc:"; tail -n 20 "$FIO_OUT"; return 1; }
	grep -qE 'err= *0' "$FIO_OUT" || { echo "fio saw errors"; return 1; }
	grep -qE "read: IOPS=.*\\(${ONCE_KIB}KiB/" "$FIO_OUT" ||
		{ echo "fio did not read back $ONCE_KIB KiB"; return 1; }
}

# fio_failed: fio is done, and not with 0.
fio_failed() {
	local rc

	rnbd_wait 10 test -s "$FIO_OUT.rc" || { echo "fio has no exit code"; return 1; }
	rc=$(cat "$FIO_OUT.rc")
	[ "$rc" -ne 0 ] || { echo "fio exited 0"; return 1; }
}

# fio_ios: it has done IO, it goes on.
fio_ios() {
	sleep 5
	fio_running || { echo "fio stopped:"; tail -n 20 "$FIO_OUT"; return 1; }
}

# fio_stop: kill it if it is still there.
fio_stop() {
	[ -n "$FIO_PID" ] || return 0
	kill "$FIO_PID" 2>/dev/null
	rnbd_wait 30 fio_stopped
	# Not a bare wait: the uevent monitor runs in the background too.
	wait "$FIO_PID" 2>/dev/null
	FIO_PID=
}

# bed_up: rxe up; where rxe would not survive a pulled cable, netem in
# place on the client's NICs for rnbd_cable.
bed_up() {
	rnbd_rdma_up || return 1
	rnbd_rxe_survives_pull || rnbd_netem_ready
}

# links on|off: the cables of both paths plugged or pulled (rnbd_cable).
links() {
	local i

	for i in $(seq 0 $((RNBD_NR_PATHS - 1))); do
		rnbd_cable "$i" "$1" || return 1
	done
}

# kmsg_seen PATTERN: a kernel message of the session matches PATTERN.
kmsg_seen() {
	dmesg | grep -q "rnbd_client: $SESSNAME: $1"
}

# kmsg_count PATTERN: how many kernel messages of the session match it.
kmsg_count() {
	dmesg | grep -c "rnbd_client: $SESSNAME: $1"
}

# kmsg_more PATTERN N: more than N match it.
kmsg_more() {
	[ "$(kmsg_count "$1")" -gt "$2" ]
}

# kmsg_time PATTERN: the kernel's timestamp of the last such message.
kmsg_time() {
	dmesg | grep "rnbd_client: $SESSNAME: $1" | tail -n 1 |
		sed -n 's/^\[ *\([0-9.]*\)\].*/\1/p'
}

# losses WAIT: how many times the client said its session lost its last
# path and IO waits WAIT s.
losses() {
	kmsg_count "lost its last path: IO waits up to $1 s"
}

# lost WAIT N: the client says so for the N+1th time, within 90 s of the
# cut (a heartbeat or a CM error finds the paths down); fio is still
# running then.
lost() {
	within 90 kmsg_more "lost its last path: IO waits up to $1 s" "$2" ||
		{ echo "no loss in the kernel log:"; dmesg | tail -n 20; return 1; }
	now >"$FIO_OUT.lost"
	fio_running ||
		{ echo "fio failed before the loss:"; tail -n 20 "$FIO_OUT"; return 1; }
}

state_is() {
	local s

	s=$(cat "$SYSDEV/state")
	[ "$s" = "$1" ] || { echo "state: $s, not $1"; return 1; }
}

# waits_then_fails: fio runs on, no error, until the session waited
# WAIT_SEC; then it stops on an IO error, soon after the kernel says the
# IO fails; the kernel says so WAIT_SEC after the loss.
waits_then_fails() {
	local lost took t_lost t_fail

	lost=$(cat "$FIO_OUT.lost")
	within 90 fio_stopped ||
		{ echo "fio still runs $(elapsed "$lost") s after the loss"; return 1; }
	took=$(elapsed "$lost")
	echo "fio stopped $took s after the client saw the loss"
	[ "$took" -ge $((WAIT_SEC - 3)) ] ||
		{ echo "too early:"; tail -n 20 "$FIO_OUT"; return 1; }
	fio_failed || return 1
	grep -qE 'Input/output error|err= *5' "$FIO_OUT" ||
		{ echo "fio did not stop on EIO:"; tail -n 20 "$FIO_OUT"; return 1; }
	t_lost=$(kmsg_time "lost its last path")
	t_fail=$(kmsg_time "no path for $WAIT_SEC s: IO fails until one is back")
	[ -n "$t_fail" ] || { echo "the kernel does not say the IO fails"; return 1; }
	echo "kernel: lost at $t_lost, IO fails at $t_fail"
	[ "$(echo "$t_fail - $t_lost >= $WAIT_SEC && $t_fail - $t_lost < $WAIT_SEC + 5" | bc)" = 1 ]
}

# fails_at_once RNBDN: a read of it fails, in a few seconds.
fails_at_once() {
	local start=$SECONDS

	if timeout 30 dd if="/dev/$1" of=/dev/null bs=4k count=1 \
		iflag=direct status=none 2>/dev/null; then
		echo "a read of $1 went through"
		return 1
	fi
	[ $((SECONDS - start)) -lt 5 ] ||
		{ echo "the read took $((SECONDS - start)) s to fail"; return 1; }
}

# force_unmap LIMIT: the device goes in less than LIMIT seconds.
force_unmap() {
	local start=$SECONDS

	timeout "$1" bash -c "echo force >$SYSDEV/unmap_device" ||
		{ echo "force unmap failed or took over $1 s"; return 1; }
	rnbd_wait 10 test ! -e "/sys/block/$DEV" ||
		{ echo "/dev/$DEV still there"; return 1; }
	echo "unmapped in $((SECONDS - start)) s"
}

# normal_refused: a normal unmap of the open device is refused at once.
normal_refused() {
	local start=$SECONDS

	if timeout 30 bash -c "echo normal >$SYSDEV/unmap_device" 2>/dev/null; then
		echo "a normal unmap of the open device went through"
		return 1
	fi
	[ $((SECONDS - start)) -lt 10 ] ||
		{ echo "it took $((SECONDS - start)) s"; return 1; }
	[ -b "/dev/$DEV" ] || { echo "/dev/$DEV is gone"; return 1; }
}

# map_again: map once the server dropped the session of the last round,
# which it may keep until its heartbeats find the paths gone: a session
# of the same name is refused meanwhile.
map_again() {
	local end=$((SECONDS + 120))

	until map; do
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 5
	done
}

set_param() {
	echo "$1" >"$PARAM" && [ "$(cat "$PARAM")" = "$1" ]
}

# waiting_io_fails: fio waits for the session, the force unmap made its
# IO fail: it stops on an error.
waiting_io_fails() {
	within 30 fio_stopped ||
		{ echo "fio still runs after the unmap"; return 1; }
	fio_failed
}

UEVENTS=/tmp/rnbd-path-loss.uevents
UEVENTS_PID=

# The kernel's uevents of block devices, into $UEVENTS.
uevents_start() {
	udevadm monitor --kernel --subsystem-match=block >"$UEVENTS" 2>&1 &
	UEVENTS_PID=$!
}

uevents_stop() {
	[ -n "$UEVENTS_PID" ] && kill "$UEVENTS_PID" 2>/dev/null
	wait "$UEVENTS_PID" 2>/dev/null
	UEVENTS_PID=
}

# uevents_seen RNBDN ACTION...: the offline and online uevents of RNBDN
# (not of its partitions) are these ACTIONs, in this order.
uevents_seen() {
	local all got

	all=$(awk -v dev="/$1 (block)" '$1 ~ /^KERNEL/ &&
		substr($0, length($0) - length(dev) + 1) == dev { printf "%s ", $2 }' \
		"$UEVENTS")
	echo "uevents of $1: ${all:-none}"
	got=$(tr ' ' '\n' <<<"$all" | grep -E '^(offline|online)$' | tr '\n' ' ')
	[ "$got" = "${*:2} " ]
}

# round_one: the IO waits reconnect_timeout, then fails; once the cables
# are back the device works again, and remaps.
round_one() {
	local n

	ktap_check "map_device over both paths" map
	ktap_check "both paths connected" rnbd_paths_connected
	fio_start forever
	ktap_check "fio writes and verifies" fio_ios
	uevents_start
	ktap_check "the host pulls both cables" links off
	ktap_check "the session lost its paths: IO waits up to $WAIT_SEC s, fio still runs" \
		lost "$WAIT_SEC" 0
	ktap_check "while it waits, the device is \"closed\"" state_is closed
	ktap_check "fio gets errors only after $WAIT_SEC s" waits_then_fails
	fio_stop
	ktap_check "then new IO fails at once" fails_at_once "$DEV"
	n=$(kmsg_count "reconnected, 1 devices reopened")
	ktap_check "the host plugs both cables back" links on
	ktap_check "the session reconnects, the device is open again" \
		reconnected "$n"
	ktap_check "uevents of $DEV: offline at the loss, online when open again" \
		rnbd_wait 10 uevents_seen "$DEV" offline online
	uevents_stop
	ktap_check "$DEV: a block written and read back" rw_ok "$DEV"
	ktap_check "remap_device opens $DEV again" remap_ok "$DEV"
	ktap_check "$DEV: a block written and read back" rw_ok "$DEV"
	ktap_check "unmap_device normal" unmap_one
}

# round_two: a force unmap while the IO waits.
round_two() {
	local n

	ktap_check "map_device over both paths again" map_again
	ktap_check "reconnect_timeout takes $LONG_WAIT_SEC at run time" \
		set_param "$LONG_WAIT_SEC"
	fio_start forever
	ktap_check "fio writes and verifies" fio_ios
	n=$(losses "$LONG_WAIT_SEC")
	ktap_check "the host pulls both cables" links off
	ktap_check "the session lost its paths: IO waits up to $LONG_WAIT_SEC s" \
		lost "$LONG_WAIT_SEC" "$n"
	ktap_check "normal unmap while the IO waits: refused, the device is open" \
		normal_refused
	ktap_check "force unmap while the IO waits: in less than 30 s" \
		force_unmap 30
	ktap_check "the waiting IO failed" waiting_io_fails
	fio_stop
	ktap_check "the host plugs both cables back" links on
}

# reconnected N: the client logged more than N reconnects, the device is
# open again.
reconnected() {
	local t0=$SECONDS

	within "$RECONNECT_SEC" kmsg_more "reconnected, 1 devices reopened" "$1" ||
		{ echo "no reconnect in the kernel log:"; dmesg | tail -n 20; return 1; }
	echo "reconnected within $((SECONDS - t0)) s"
	state_is open
}

# no_io_failed: the session did not give up on its IO.
no_io_failed() {
	! kmsg_seen "no path for $LONG_WAIT_SEC s"
}

# round_three: the cables come back before reconnect_timeout.
round_three() {
	local lost n

	n=$(kmsg_count "reconnected, 1 devices reopened")
	ktap_check "map_device over both paths again" map_again
	fio_start once
	ktap_check "fio writes and verifies" fio_ios
	lost=$(losses "$LONG_WAIT_SEC")
	ktap_check "the host pulls both cables" links off
	ktap_check "the session lost its paths: IO waits up to $LONG_WAIT_SEC s" \
		lost "$LONG_WAIT_SEC" "$lost"
	sleep "$CUT_SEC"
	ktap_check "after $CUT_SEC s the host plugs both cables back" links on
	ktap_check "the session reconnects, the device is open again" \
		reconnected "$n"
	ktap_check "fio ends without an error, all verified" fio_passed
	ktap_check "the IO never failed" no_io_failed
	ktap_check "both paths connected" rnbd_paths_connected
}

# server_restarted WANT: the server side unloaded and loaded its modules,
# as asked with restart WANT.
server_restarted() {
	local status

	status=$(rnbd_sync_wait "restarted-$1" 120) || return 1
	[ "$status" = ok ] || { echo "$status"; return 1; }
}

# round_four: the server's modules go and come back under fio.
round_four() {
	local lost n

	lost=$(kmsg_count "lost its last path")
	n=$(kmsg_count "reconnected, 1 devices reopened")
	fio_start once
	ktap_check "fio writes and verifies" fio_ios
	rnbd_sync_put restart-go go
	ktap_check "server: its modules unload and load again" \
		server_restarted go
	ktap_check "the session lost its paths" \
		within 60 kmsg_more "lost its last path" "$lost"
	ktap_check "the session reconnects, the device is open again" \
		reconnected "$n"
	ktap_check "fio ends without an error, all verified" fio_passed
	ktap_check "the IO never failed" no_io_failed
}

# map_link: the server's second disk, through its link, as rnbd1.
DEV2=rnbd1
map_link() {
	local opts="sessname=$SESSNAME" i

	for i in $(seq 0 $((RNBD_NR_PATHS - 1))); do
		opts+=" path=ip:$(rnbd_path_addr "$i" client),ip:$(rnbd_path_addr "$i" server)"
	done
	echo "$opts device_path=$LINK" >"$CTL/map_device" &&
		rnbd_wait 30 test -b "/dev/$DEV2"
}

# dev_state RNBDN STATE
dev_state() {
	local s

	s=$(cat "/sys/block/$1/rnbd/state")
	[ "$s" = "$2" ] || { echo "$1: $s, not $2"; return 1; }
}

# rw_ok RNBDN: a block written and read back.
rw_ok() {
	local got=/tmp/rnbd-path-loss.got rc=0

	yes "path-loss $1" | head -c 4096 >"$got.want"
	dd if="$got.want" of="/dev/$1" bs=4k count=1 oflag=direct \
		status=none && dd if="/dev/$1" of="$got" bs=4k count=1 \
		iflag=direct status=none && cmp "$got.want" "$got" || rc=1
	rm -f "$got" "$got.want"
	return $rc
}

# one_closed N: the session reconnected (more than N times), rnbd0 is
# open again, rnbd1, whose device the server did not find, is closed and
# the kernel says so.
one_closed() {
	within "$RECONNECT_SEC" kmsg_more "reconnected, 1 devices reopened" "$1" ||
		{ echo "no reconnect in the kernel log:"; dmesg | tail -n 20; return 1; }
	kmsg_seen "$DEV2 ($LINK) cannot be opened again" ||
		{ echo "the kernel does not say $DEV2 cannot be opened"; return 1; }
	dev_state "$DEV" open && dev_state "$DEV2" closed
}

relinked() {
	local status

	rnbd_sync_put relink go
	status=$(rnbd_sync_wait relinked 60) || return 1
	[ "$status" = ok ] || { echo "$status"; return 1; }
}

# remap_ok RNBDN
remap_ok() {
	echo 1 >"/sys/block/$1/rnbd/remap_device" && dev_state "$1" open
}

unmap_one() {
	rnbd_unmap "$DEV" && rnbd_wait 30 test ! -e "/sys/block/$DEV"
}

unmap_both() {
	rnbd_unmap "$DEV" && rnbd_unmap "$DEV2" &&
		rnbd_wait 30 test ! -e "/sys/block/$DEV" &&
		rnbd_wait 30 test ! -e "/sys/block/$DEV2"
}

# round_five: a second device the server does not find at the reconnect
# is closed, the first goes on; a remap opens it once it is back.
round_five() {
	local n

	ktap_check "map the server's null_blk through a symlink as $DEV2" \
		map_link
	ktap_check "$DEV2: a block written and read back" rw_ok "$DEV2"
	n=$(kmsg_count "reconnected, 1 devices reopened")
	rnbd_sync_put restart-missing go
	ktap_check "server: the link gone, its modules unload and load again" \
		server_restarted missing
	ktap_check "reconnected: $DEV open, $DEV2 not found, \"closed\"" \
		one_closed "$n"
	ktap_check "$DEV: a block written and read back" rw_ok "$DEV"
	ktap_check "$DEV2: IO fails at once" fails_at_once "$DEV2"
	ktap_check "server: the link is back" relinked
	ktap_check "remap_device opens $DEV2 again" remap_ok "$DEV2"
	ktap_check "$DEV2: a block written and read back" rw_ok "$DEV2"
	ktap_check "unmap_device normal of both" unmap_both
}

test_client() {
	ktap_header 54
	echo "# cables pulled by $(rnbd_cable_how)"
	ktap_check "rxe up$(rnbd_rxe_survives_pull || echo ", netem in place")" bed_up
	server_ready >/dev/null 2>&1
	ktap_check "server: rnbd-server exports a $DISK_MB MiB disk" \
		test -n "$SERVER_DISK"
	ktap_check "rnbd-client loads with reconnect_timeout=$WAIT_SEC" \
		load_client
	round_one
	round_two
	round_three
	round_four
	round_five
	fio_stop
	links on >/dev/null 2>&1
	ktap_check "client modules unload" rnbd_unload rnbd-client rtrs-client
	rnbd_netem_gone
	rnbd_sync_put client-done
	ktap_check "server: server modules unload" server_down
	rm -f "$FIO_OUT" "$FIO_OUT.lost" "$FIO_OUT.pid" "$FIO_OUT.rc"
	ktap_finish
}

map_test
