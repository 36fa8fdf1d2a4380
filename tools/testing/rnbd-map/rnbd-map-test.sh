#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# rnbd-map (utils/rnbd-map) on the host, against a fake sysfs of plain
# files (RNBD_SYSFS): the parser of /etc/rnbdtab, what start writes to
# map_device and stop to unmap_device, the retries, and the udev link names.
# Nothing is loaded, nothing of the real /sys is read or written.  Where the
# kernel's answer matters (a refused map, a busy device), the test sources
# rnbd-map and stands in for sysfs_write() and the other functions that ask
# the system.  Prints KTAP; exits 0 when every case passed, else 1.

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../../.." && pwd)
TOOL=$SRC/utils/rnbd-map
# shellcheck source=../selftests/rnbd/lib.sh
. "$SRC/tools/testing/selftests/rnbd/lib.sh"

TMP=$(mktemp -d /tmp/rnbd-map-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

export RNBD_SYSFS=$TMP/sys
export RNBDTAB=$TMP/rnbdtab
export RNBD_MAP_INTERVAL=0.1
export RNBD_UDEV_WAIT=0
MAP=$RNBD_SYSFS/devices/virtual/rnbd-client/ctl/map_device
GID=fe80:0000:0000:0000:0002:c903:0001:0001

# A client with rnbd-client loaded, one ACTIVE RDMA port, four CPUs and
# nothing mapped.
fake_sysfs() {
	rm -rf "$RNBD_SYSFS"
	mkdir -p "${MAP%/*}" "$RNBD_SYSFS/class/infiniband/rxe0/ports/1/gids" \
		"$RNBD_SYSFS/devices/system/cpu" "$RNBD_SYSFS/block"
	: >"$MAP"
	echo "4: ACTIVE" >"$RNBD_SYSFS/class/infiniband/rxe0/ports/1/state"
	echo "$GID" >"$RNBD_SYSFS/class/infiniband/rxe0/ports/1/gids/0"
	echo 0-3 >"$RNBD_SYSFS/devices/system/cpu/possible"
}

# fake_mapped N SESSION DEVICE_PATH: /dev/rnbdN is mapped for them.
fake_mapped() {
	local d=$RNBD_SYSFS/block/rnbd$1/rnbd

	mkdir -p "$d" "${d%/rnbd}/holders"
	echo "$2" >"$d/session"
	echo "$3" >"$d/mapping_path"
	echo open >"$d/state"
	: >"$d/unmap_device"
}

# hooked HOOK ARGS...: rnbd-map ARGS, the function HOOK run once rnbd-map's
# functions are defined, to replace some of them.
hooked() {
	local hook=$1

	shift
	bash -c '. "$1" && eval "$2" && "$3" && shift 3 && main "$@"' rnbd-map \
		"$TOOL" "$(declare -f "$hook")" "$hook" "$@"
}

# run OUT ARGS...: rnbd-map ARGS, its stdout and stderr in OUT.out and
# OUT.err; returns its exit status.
run() {
	local out=$1

	shift
	"$@" >"$TMP/$out.out" 2>"$TMP/$out.err"
}

# expect_rc RC CMD...: CMD exits with RC.
expect_rc() {
	local want=$1 rc

	shift
	"$@"
	rc=$?
	[ $rc -eq "$want" ] && return 0
	echo "exit status $rc, expected $want"
	return 1
}

# has FILE TEXT: FILE has a line that is TEXT.
has() {
	grep -qxF -- "$2" "$TMP/$1" && return 0
	echo "no line '$2' in $1:"
	cat "$TMP/$1"
	return 1
}

# has_sub FILE TEXT: FILE has a line with TEXT in it.
has_sub() {
	grep -qF -- "$2" "$TMP/$1" && return 0
	echo "nothing like '$2' in $1:"
	cat "$TMP/$1"
	return 1
}

# same FILE TEXT: FILE holds TEXT exactly.
same() {
	[ "$(cat "$1")" = "$2" ] && return 0
	printf 'expected:\n%s\ngot:\n%s\n' "$2" "$(cat "$1")"
	return 1
}

# The lines of a file with some of everything good.
GOOD_TAB=$(
	cat <<'EOF'
# rnbdtab of the test

sessname=s1 path=ip:192.0.2.10 device_path=/dev/nvme0n1
	sessname=s1   path=ip:192.0.2.10	device_path=/dev/nvme1n1 # a comment
sessname=s2 path=ip:198.51.100.1@ip:198.51.100.10 path=ip:fe80::1%eth1,ip:fe80::2%eth1 device_path=ram0 access_mode=ro dest_port=0x4d2 nr_poll_queues=-1
sessname=s3 path=gid:fe80::2:c903:1:1@gid:fe80::2:c903:1:2 device_path=x#y access_mode=migration nr_poll_queues=4
   # indented comment
EOF
)
# What start writes for them, in that order.
GOOD_WRITTEN='sessname=s1 path=ip:192.0.2.10 device_path=/dev/nvme0n1
sessname=s1 path=ip:192.0.2.10 device_path=/dev/nvme1n1
sessname=s2 path=ip:198.51.100.1@ip:198.51.100.10 path=ip:fe80::1%eth1,ip:fe80::2%eth1 device_path=ram0 access_mode=ro dest_port=0x4d2 nr_poll_queues=-1
sessname=s3 path=gid:fe80::2:c903:1:1@gid:fe80::2:c903:1:2 device_path=x#y access_mode=migration nr_poll_queues=4'
# Hooks, run in rnbd-map's shell.  The source addresses of GOOD_TAB are
# this host's.
host_addrs() {
	host_ip_addrs() { printf '%s\n' 198.51.100.1 fe80::1; }
}

# The kernel refuses /dev/gone: the server has no such device.
refuse_gone() {
	eval "real_$(declare -f sysfs_write)"
	sysfs_write() {
		case $2 in
		*/dev/gone*) WRITE_ERR="No such file or directory"; return 1 ;;
		esac
		real_sysfs_write "$@"
	}
}

# The server answers the third try.
refuse_twice() {
	eval "real_$(declare -f sysfs_write)"
	tries=0
	sysfs_write() {
		tries=$((tries + 1))
		if [ "$tries" -le 2 ]; then
			WRITE_ERR="Connection refused"
			return 1
		fi
		real_sysfs_write "$@"
	}
}

refuse_always() {
	sysfs_write() { WRITE_ERR="Connection refused"; return 1; }
}

no_device() {
	sysfs_write() { WRITE_ERR="No such device"; return 1; }
}

# The RDMA port comes up at the fourth look.
port_up_later() {
	eval "real_$(declare -f rdma_active)"
	polls=0
	rdma_active() {
		polls=$((polls + 1))
		[ "$polls" -gt 3 ] && real_rdma_active
	}
}

other_addr() {
	host_ip_addrs() { echo 192.0.2.2; }
	sysfs_write() { WRITE_ERR="Cannot assign requested address"; return 1; }
}

# shellcheck disable=SC2034 # WRITE_ERR is rnbd-map's
rnbd0_busy() {
	eval "real_$(declare -f sysfs_write)"
	sysfs_write() {
		case $1 in
		*/rnbd0/*) WRITE_ERR="Device or resource busy"; return 1 ;;
		esac
		real_sysfs_write "$@"
	}
}

# Bad lines, each "LINE|what the report says".  Each line is alone of its
# session, so that none is refused for another.
BAD_CASES=(
	'sessname=b1 path=ip:192.0.2.10 device_path=x foo=1|unknown option or missing value '"'foo=1'"
	'sessname=b2 path= device_path=x|unknown option or missing value '"'path='"
	'SESSNAME=b3 path=ip:192.0.2.10 device_path=x|unknown option or missing value'
	'path=ip:192.0.2.10 device_path=x|sessname= is mandatory'
	'sessname=b5 device_path=x|path= is mandatory: no line before makes session b5'
	'sessname=b6 path=ip:192.0.2.10|device_path= is mandatory'
	'sessname=b7/x path=ip:192.0.2.10 device_path=x|sessname must not contain '"'/'"
	'sessname=b7.x path=ip:192.0.2.10 device_path=x|sessname must not contain '"'.'"
	'sessname=b8 path=ip:192.0.2.10 device_path=x access_mode=RW|access_mode must be ro, rw or migration'
	'sessname=b9 path=ip:192.0.2.10 device_path=x access_mode=rw,ro|access_mode must be ro, rw or migration'
	'sessname=b10 path=ip:192.0.2.10 device_path=x dest_port=0|dest_port must be 1 to 65535'
	'sessname=b11 path=ip:192.0.2.10 device_path=x dest_port=65536|dest_port must be 1 to 65535'
	'sessname=b12 path=ip:192.0.2.10 device_path=x dest_port=08|dest_port must be 1 to 65535'
	'sessname=b13 path=ip:192.0.2.10 device_path=x nr_poll_queues=-2|nr_poll_queues must be -1 to 4'
	'sessname=b14 path=ip:192.0.2.10 device_path=x nr_poll_queues=5|nr_poll_queues must be -1 to 4'
	'sessname=b15 path=ip:192.0.2.10 device_path=x nr_poll_queues=two|nr_poll_queues must be -1 to 4'
	'sessname=b16 path=192.0.2.10 device_path=x|path=192.0.2.10: invalid destination address '"'192.0.2.10'"
	'sessname=b17 path=ip:192.0.2.1@192.0.2.10 device_path=x|path=ip:192.0.2.1@192.0.2.10: invalid destination address '"'192.0.2.10'"
	'sessname=b18 path=ip:192.0.2@ip:192.0.2.10 device_path=x|path=ip:192.0.2@ip:192.0.2.10: invalid source address '"'ip:192.0.2'"
	'sessname=b19 path=ip:192.0.2.256 device_path=x|path=ip:192.0.2.256: invalid destination address'
	'sessname=b20 path=ip:fe80::1::2 device_path=x|path=ip:fe80::1::2: invalid destination address'
	'sessname=b21 path=gid:fe80::1%eth0 device_path=x|path=gid:fe80::1%eth0: invalid destination address'
	'sessname=b22 path=ip:1.1.1.1 path=ip:1.1.1.2 path=ip:1.1.1.3 path=ip:1.1.1.4 path=ip:1.1.1.5 path=ip:1.1.1.6 path=ip:1.1.1.7 device_path=x|more than 6 path='
	"sessname=b23 path=ip:192.0.2.10 device_path=x$(printf '\r')|control character in the line"
	"sessname=b24 path=ip:192.0.2.10 device_path=$(printf '%0255d' 0)|device_path must be 1 to 254 characters"
	'sessname=b25 path=ip:192.0.2.10 device_path=x device_path=y|device_path= given more than once'
	'dest_port=1 sessname=b26 path=ip:192.0.2.10 device_path=x dest_port=2|dest_port= given more than once'
)

# Link names: "SESSION|DEVICE_PATH|PARTITION|the link".
UDEV_CASES=(
	's1|/dev/nvme0n1||disk/by-rnbd/s1/+dev+nvme0n1'
	's1|/dev/nvme0n1|2|disk/by-rnbd/s1/+dev+nvme0n1-part2'
	's1|dev/nvme0n1||disk/by-rnbd/s1/dev+nvme0n1'
	's1|ram0||disk/by-rnbd/s1/ram0'
	'my.sess-1|/dev/disk/by-id/nvme-X_Y:Z@1||disk/by-rnbd/my.sess-1/+dev+disk+by-id+nvme-X_Y:Z@1'
	's+1|a+b=c!d#e||disk/by-rnbd/s=2b1/a=2bb=3dc=21d=23e'
	's1|/dev/x-part1||disk/by-rnbd/s1/+dev+x=2dpart1'
	's1|/dev/x-part1|1|disk/by-rnbd/s1/+dev+x=2dpart1-part1'
	'..|.||disk/by-rnbd/=2e=2e/=2e'
	"s1|/dev/$(printf '\303\251')||disk/by-rnbd/s1/+dev+=c3=a9"
)
# The cases

check_good() {
	echo "$GOOD_TAB" >"$RNBDTAB"
	expect_rc 0 run check "$TOOL" check &&
		has check.out "$RNBDTAB: 4 devices, no error"
}

# Each bad line at an even line number, followed by a good one.
check_bad() {
	local c n=0

	{
		echo "# bad lines, each followed by a good one"
		for c in "${BAD_CASES[@]}"; do
			n=$((n + 1))
			echo "${c%%|*}"
			echo "sessname=ok path=ip:192.0.2.10 device_path=ok$n"
		done
	} >"$RNBDTAB"
	expect_rc 1 run bad "$TOOL" check
}

# Lines of one session with other paths: the kernel ignores those of all
# but the first to map, and rnbd-map warns.  A dest_port= is the port of
# the paths after it only; a line may leave the paths out.
check_paths_differ() {
	printf '%s\n' "sessname=s1 path=ip:192.0.2.10 device_path=a" \
		"sessname=s1 path=ip:192.0.2.10 path=ip:192.0.2.11 device_path=b" \
		"sessname=s1 dest_port=1 path=ip:192.0.2.10 device_path=c" \
		"sessname=s1 device_path=d path=ip:192.0.2.10 dest_port=1" \
		"dest_port=1234 sessname=s1 device_path=e path=ip:192.0.2.10" \
		"sessname=s1 device_path=f" >"$RNBDTAB"
	expect_rc 0 run differ "$TOOL" check &&
		has differ.err "$RNBDTAB:2: warning: the paths or dest_port differ from line 1's, of the same session s1: the line that maps first sets them for all" &&
		has_sub differ.err "$RNBDTAB:3: warning: the paths or dest_port differ" &&
		[ "$(wc -l <"$TMP/differ.err")" -eq 2 ]
}

# An option given twice (not path=) is refused, as the kernel refuses it.
check_twice() {
	echo "sessname=x sessname=s1 path=ip:192.0.2.10 device_path=a" >"$RNBDTAB"
	expect_rc 1 run twice "$TOOL" status &&
		has twice.err "$RNBDTAB:1: sessname= given more than once: line ignored"
}

start_good() {
	echo "$GOOD_TAB" >"$RNBDTAB"
	expect_rc 0 run start hooked host_addrs start &&
		same "$MAP" "$GOOD_WRITTEN"
}

MIXED_TAB='sessname=s1 path=ip:192.0.2.10 device_path=/dev/a
sessname=s1 path=ip:192.0.2.10 device_path=/dev/b access_mode=bad
# comment
sessname=s1 path=ip:192.0.2.10 device_path=/dev/c
sessname=s1 path=ip:192.0.2.10 device_path=/dev/a
sessname=s1 path=ip:192.0.2.10 device_path=/dev/d nr_poll_queues=2'

start_mixed() {
	echo "$MIXED_TAB" >"$RNBDTAB"
	expect_rc 1 run mixed "$TOOL" start &&
		has mixed.err "$RNBDTAB:2: access_mode must be ro, rw or migration: line ignored" &&
		has mixed.err "$RNBDTAB:5: s1 /dev/a: line 1 maps it already: line ignored" &&
		has_sub mixed.err "$RNBDTAB:6: nr_poll_queues=2, but line 1 has 0 for session s1" &&
		same "$MAP" "sessname=s1 path=ip:192.0.2.10 device_path=/dev/a
sessname=s1 path=ip:192.0.2.10 device_path=/dev/c"
}

start_again() {
	echo "$MIXED_TAB" >"$RNBDTAB"
	fake_mapped 0 s1 /dev/a
	expect_rc 1 run again "$TOOL" start &&
		has again.out "$RNBDTAB:1: s1 /dev/a: mapped already as /dev/rnbd0" &&
		same "$MAP" "sessname=s1 path=ip:192.0.2.10 device_path=/dev/c"
}

start_all_mapped() {
	echo "sessname=s1 path=ip:192.0.2.10 device_path=/dev/a" >"$RNBDTAB"
	fake_mapped 0 s1 /dev/a
	expect_rc 0 run allmapped "$TOOL" start && same "$MAP" ""
}

start_comments() {
	printf '# nothing\n\n  # at all\n' >"$RNBDTAB"
	rm "$MAP"
	expect_rc 0 run comments "$TOOL" start && [ ! -e "$MAP" ]
}

start_no_client() {
	echo "sessname=s1 path=ip:192.0.2.10 device_path=/dev/a" >"$RNBDTAB"
	rm "$MAP"
	expect_rc 2 run noclt "$TOOL" start &&
		has_sub noclt.err "map_device is missing: rnbd-client did not load"
}

start_refused() {
	printf '%s\n' "sessname=s1 path=ip:192.0.2.10 device_path=/dev/a" \
		"sessname=s1 path=ip:192.0.2.10 device_path=/dev/gone" \
		"sessname=s1 path=ip:192.0.2.10 device_path=/dev/c" >"$RNBDTAB"
	expect_rc 1 run refused hooked refuse_gone start &&
		has refused.err "$RNBDTAB:2: s1 /dev/gone: No such file or directory: the server has no such device: device_path is relative to the server's dev_search_path" &&
		same "$MAP" "sessname=s1 path=ip:192.0.2.10 device_path=/dev/a
sessname=s1 path=ip:192.0.2.10 device_path=/dev/c"
}

ONE_LINE="sessname=s1 path=ip:192.0.2.10 device_path=/dev/a"

start_retry() {
	echo "$ONE_LINE" >"$RNBDTAB"
	expect_rc 0 run retry hooked refuse_twice -t 30 start &&
		same "$MAP" "$ONE_LINE"
}

start_timeout() {
	echo "$ONE_LINE" >"$RNBDTAB"
	expect_rc 1 run never hooked refuse_always -t 1 start &&
		has_sub never.err "$RNBDTAB:1: s1 /dev/a: Connection refused (tried for 1 s): is rnbd-server loaded"
}

start_port_down() {
	echo "$ONE_LINE" >"$RNBDTAB"
	echo "1: DOWN" >"$RNBD_SYSFS/class/infiniband/rxe0/ports/1/state"
	expect_rc 1 run down hooked no_device -t 0 start &&
		has_sub down.err "$RNBDTAB:1: s1 /dev/a: No such device (waited 0 s: no RDMA port is ACTIVE"
}

start_port_up() {
	echo "$ONE_LINE" >"$RNBDTAB"
	expect_rc 0 run up hooked port_up_later -t 30 start &&
		same "$MAP" "$ONE_LINE"
}

start_no_addr() {
	echo "sessname=s1 path=ip:192.0.2.1@ip:192.0.2.10 device_path=/dev/a" >"$RNBDTAB"
	expect_rc 1 run noaddr hooked other_addr -t 0 start &&
		has_sub noaddr.err "(waited 0 s: the source address 192.0.2.1 is not one of this host)"
}

start_gid() {
	echo "sessname=s1 path=gid:fe80::2:c903:1:1@gid:fe80::2:c903:1:2 device_path=/dev/a" >"$RNBDTAB"
	expect_rc 0 run gid "$TOOL" -t 0 start &&
		same "$MAP" "sessname=s1 path=gid:fe80::2:c903:1:1@gid:fe80::2:c903:1:2 device_path=/dev/a"
}

STOP_TAB='sessname=s1 path=ip:192.0.2.10 device_path=/dev/a
sessname=s1 path=ip:192.0.2.10 device_path=/dev/b
sessname=s2 path=ip:192.0.2.10 device_path=/dev/a'

# rnbd0 and rnbd2 are the file's, rnbd1 is not.
fake_three() {
	echo "$STOP_TAB" >"$RNBDTAB"
	fake_mapped 0 s1 /dev/a
	fake_mapped 1 s1 /dev/other
	fake_mapped 2 s2 /dev/a
}

status_some() {
	fake_three
	expect_rc 1 run status "$TOOL" status &&
		has status.out "$RNBDTAB:1: s1 /dev/a: /dev/rnbd0 (open), /dev/disk/by-rnbd/s1/+dev+a" &&
		has status.out "$RNBDTAB:2: s1 /dev/b: not mapped (would be /dev/disk/by-rnbd/s1/+dev+b)"
}

stop_file() {
	fake_three
	expect_rc 0 run stop "$TOOL" stop &&
		same "$RNBD_SYSFS/block/rnbd0/rnbd/unmap_device" normal &&
		same "$RNBD_SYSFS/block/rnbd2/rnbd/unmap_device" normal &&
		same "$RNBD_SYSFS/block/rnbd1/rnbd/unmap_device" ""
}

stop_busy() {
	fake_three
	mkdir "$RNBD_SYSFS/block/rnbd0/holders/dm-0"
	expect_rc 1 run busy hooked rnbd0_busy stop &&
		has busy.err "$RNBDTAB:1: s1 /dev/a: /dev/rnbd0 is busy (held by dm-0, mounted or open): left mapped" &&
		same "$RNBD_SYSFS/block/rnbd2/rnbd/unmap_device" normal
}

bad_options() {
	expect_rc 2 run opt1 "$TOOL" --bogus start &&
		expect_rc 2 run opt2 "$TOOL" -t soon start &&
		expect_rc 2 run opt3 "$TOOL" map &&
		expect_rc 2 run opt4 "$TOOL" check extra &&
		expect_rc 2 run opt5 "$TOOL" -f "$TMP/none" check
}

missing_file() {
	expect_rc 0 run nofile "$TOOL" -f "$TMP/none" start &&
		has nofile.out "$TMP/none: no such file, nothing to map"
}

# udev_case SESSION DEVICE_PATH PARTITION LINK
udev_case() {
	rm -rf "$RNBD_SYSFS/block/rnbd7"
	fake_mapped 7 "$1" "$2"
	run udev "$TOOL" udev-name "rnbd7${3:+p$3}" &&
		same "$TMP/udev.out" "RNBD_LINK=$4"
}

udev_unmapped() {
	run udev "$TOOL" udev-name rnbd9 && same "$TMP/udev.out" ""
}

# tcase DESC FUNCTION ARGS...: one test point, on a fresh fake sysfs.
tcase() {
	fake_sysfs
	ktap_check "$@"
}

ktap_header $((23 + ${#BAD_CASES[@]} + ${#UDEV_CASES[@]}))

tcase "check: a good file, comments and blank lines pass" check_good
tcase "check: a file with bad lines exits 1" check_bad
n=0
for c in "${BAD_CASES[@]}"; do
	n=$((n + 2))
	ktap_check "check: line $n: ${c#*|}" has_sub bad.err "$RNBDTAB:$n: ${c#*|}"
done
tcase "check: a session's lines with other paths get a warning" check_paths_differ
tcase "check: an option given twice is refused" check_twice
tcase "start: writes each good line to map_device, comments dropped" start_good
tcase "start: bad lines reported by number, the good ones mapped, exit 1" start_mixed
tcase "start: a device mapped already is skipped" start_again
tcase "start: every device mapped already, nothing written, exit 0" start_all_mapped
tcase "start: a file of comments maps nothing and needs no rnbd-client" start_comments
tcase "start: without map_device (rnbd-client not loaded) exits 2" start_no_client
tcase "start: a line the kernel refuses is reported, the others map" start_refused
tcase "start: a transient error (ECONNREFUSED) is retried until the map works" start_retry
tcase "start: the retries end with the timeout, exit 1" start_timeout
tcase "start: waits for an ACTIVE RDMA port, then tries once and says so" start_port_down
tcase "start: maps once an RDMA port is ACTIVE" start_port_up
tcase "start: waits for the source address of a path" start_no_addr
tcase "start: a GID source address of this host's port" start_gid
tcase "status: the devices mapped, their links, and exit 1 for one that is not" status_some
tcase "stop: unmaps (normal) what the file maps, and only that" stop_file
tcase "stop: a busy device is named and left, the others unmapped, exit 1" stop_busy
tcase "options: an unknown option, a bad timeout or command exit 2" bad_options
tcase "options: -f names the file, and a missing one has nothing to map" missing_file
for c in "${UDEV_CASES[@]}"; do
	IFS='|' read -r sess path part link <<<"$c"
	tcase "udev-name: '$sess' '$path'${part:+ partition $part}" \
		udev_case "$sess" "$path" "$part" "$link"
done
tcase "udev-name: no rnbd/ directory (not mapped yet), no link" udev_unmapped

ktap_finish
