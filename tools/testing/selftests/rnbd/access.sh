#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The server's access rules (/sys/devices/virtual/rnbd-server/ctl/access_*),
# in one guest, with our own client.  With no rule any session maps any
# disk, as upstream's server lets it.  A bad rule is refused with EINVAL
# and a log line.  Once rules exist, a disk maps only for the session
# names, client addresses and access modes a rule names; anything else is
# refused with EACCES and a log line naming the session, its address and
# the disk.  A path from an address the rules do not allow cannot join a
# session with a disk open.  A disk in use on the server (here claimed by
# dm-linear) is refused with EBUSY unless a rule says in_use=allow, and a
# disk exported under the rules cannot be claimed on the server.  Rules
# removed leave what is open open and serving; once closed, it cannot map
# again.
#
# In one guest the client's address of a path is the server's:
# 192.168.120.1 for path 0, 192.168.121.1 for path 1.
#
# rnbd-vm: topology=one

. "$(dirname "$0")/lib.sh"

CTL=/sys/devices/virtual/rnbd-server/ctl
CLT_CTL=/sys/devices/virtual/rnbd-client/ctl
IMG=/dev/shm/rnbd-access
DATA=/tmp/rnbd-access.data
DM=rnbd-access-claim
NR_DISKS=3
ADDR0=$(rnbd_path_addr 0 server)
ADDR1=$(rnbd_path_addr 1 server)

# disk N: the loop device of image N.
disk() {
	losetup -n -O NAME -j "$IMG.$1"
}

setup() {
	local i

	rnbd_rdma_up || { echo "rxe did not come up"; return 1; }
	for i in $(seq 1 $NR_DISKS); do
		rnbd_loop_up "$IMG.$i" 8 >/dev/null ||
			{ echo "no loop device"; return 1; }
	done
	modprobe dm_mod && modprobe rnbd-server && modprobe rnbd-client
}

rules() {
	cat "$CTL/access_rules"
}

# rule_add RULE / rule_del RULE
rule_add() {
	echo "$*" >"$CTL/access_add"
}

rule_del() {
	echo "$*" >"$CTL/access_del"
}

# map_over PATH SESSNAME DISK [OPTION...]: map over path number PATH.
map_over() {
	local path=$1 sess=$2 dev=$3

	shift 3
	echo "sessname=$sess path=ip:$(rnbd_path_addr "$path" server) device_path=$dev $*" \
		>"$CLT_CTL/map_device"
}

unmap() {
	local dev

	dev=$(rnbd_dev_of "$1" "$2") || { echo "$2 of $1 is not mapped"; return 1; }
	rnbd_unmap "$dev" &&
		rnbd_wait 30 test ! -e "/sys/class/rtrs-server/$1"
}

# refused ERROR LOG CMD...: CMD fails with ERROR (its text), and a line of
# the kernel log since has LOG in it.
refused() {
	local want=$1 log=$2 mark err

	shift 2
	mark=$(rnbd_kmsg_mark)
	if err=$("$@" 2>&1); then
		echo "$* was not refused"
		return 1
	fi
	grep -q "$want" <<<"$err" ||
		{ echo "$*: '$err', not '$want'"; return 1; }
	rnbd_kmsg_since "$mark" | grep -F -e "$log" ||
		{ echo "$*: no log line with '$log'"; return 1; }
}

# write_read SESSNAME DISK: 1 MiB written through the mapping, read back.
write_read() {
	local dev

	dev=$(rnbd_dev_of "$1" "$2") || { echo "$2 of $1 is not mapped"; return 1; }
	head -c 1M /dev/urandom >"$DATA" &&
		dd if="$DATA" of="/dev/$dev" bs=1M oflag=direct status=none &&
		cmp "$DATA" <(dd if="/dev/$dev" bs=1M count=1 iflag=direct \
			status=none)
}

no_rules_maps_all() {
	[ -z "$(rules)" ] || { echo "rules at load: $(rules)"; return 1; }
	map_over 0 anyone "$(disk 1)" && write_read anyone "$(disk 1)" &&
		unmap anyone "$(disk 1)"
}

bad_rules() {
	local rule

	for rule in "bogus=1" "sessname=x" "path=dev/loop0" \
		"path=/dev/../etc/x" "path=/dev/x addr=ip:10.0.0.1/33" \
		"path=/dev/x addr=mac:1" "path=/dev/x access_mode=all" \
		"path=/dev/x in_use=maybe"; do
		rnbd_write_refused "$CTL/access_add" "$rule" "Invalid argument" \
			"access rule '$rule'" || return 1
	done
	[ -z "$(rules)" ] || { echo "rules after bad ones: $(rules)"; return 1; }
}

# The first rule, as access_rules shows it.
rule1() {
	echo "path=$(disk 1) sessname=good addr=ip:$ADDR0/32 access_mode=rw in_use=deny"
}

first_rule() {
	rule_add "path=$(disk 1)  sessname=good addr=ip:$ADDR0" || return 1
	rules
	[ "$(rules)" = "$(rule1)" ] || { echo "not '$(rule1)'"; return 1; }
	rnbd_write_refused "$CTL/access_add" "$(rule1)" "File exists" \
		"access rule '$(rule1)' exists"
}

allowed_maps() {
	map_over 0 good "$(disk 1)" && write_read good "$(disk 1)"
}

other_session_refused() {
	refused "Permission denied" \
		"other: from $ADDR0: rw $(disk 1) refused by the access rules" \
		map_over 0 other "$(disk 1)"
}

other_disk_refused() {
	refused "Permission denied" \
		"good2: from $ADDR0: rw $(disk 2) refused by the access rules" \
		map_over 0 good2 "$(disk 2)"
}

# Disk 2, for reading only: rw and migration refused, ro maps.
mode_rule() {
	rule_add "path=$(disk 2) access_mode=ro" || return 1
	refused "Permission denied" "rw $(disk 2) refused" \
		map_over 0 ro "$(disk 2)" || return 1
	refused "Permission denied" "migration $(disk 2) refused" \
		map_over 0 ro "$(disk 2)" access_mode=migration || return 1
	map_over 0 ro "$(disk 2)" access_mode=ro &&
		unmap ro "$(disk 2)"
}

# Disk 3, from path 1's network only; the rule names it by an address in
# it, and shows it as the network.
addr_rule() {
	rule_add "path=$(disk 3) addr=ip:$ADDR1/24" || return 1
	rules | grep -qx "path=$(disk 3) addr=ip:${ADDR1%.*}.0/24 access_mode=rw in_use=deny" ||
		{ echo "the prefix is not shown as a network:"; rules; return 1; }
	refused "Permission denied" "from $ADDR0: rw $(disk 3) refused" \
		map_over 0 net "$(disk 3)" || return 1
	map_over 1 net "$(disk 3)" && write_read net "$(disk 3)"
}

# Session net has disk 3 open over path 1: a path from path 0's address
# may not join it; the session serves on.
path_join_refused() {
	local mark n p

	mark=$(rnbd_kmsg_mark)
	echo "ip:$ADDR0@ip:$ADDR0" >/sys/class/rtrs-client/net/add_path 2>/dev/null
	rnbd_wait 30 rnbd_logged_since "$mark" "net: from $ADDR0: path refused" ||
		{ echo "no log line of the refused path"; rnbd_kmsg_since "$mark"; return 1; }
	rnbd_kmsg_since "$mark" | grep -F "path refused"
	n=$(find /sys/class/rtrs-server/net/paths -mindepth 1 -maxdepth 1 | wc -l)
	[ "$n" -eq 1 ] || { echo "the server's session has $n paths"; return 1; }
	write_read net "$(disk 3)" || return 1
	# The client would try that path again and again.
	for p in /sys/class/rtrs-client/net/paths/*; do
		grep -qsx "ip:$ADDR0" "$p/dst_addr" && echo 1 >"$p/remove_path"
	done
	unmap net "$(disk 3)"
}

# Disk 2, exported under the rules, is the server's alone: dm-linear
# cannot claim it.  Once unmapped, dm-linear claims it, and it is refused
# (EBUSY) until its rule says in_use=allow.
in_use() {
	local d2 table

	d2=$(disk 2)
	table="0 $(blockdev --getsz "$d2") linear $d2 0"
	map_over 0 ro "$d2" access_mode=ro || return 1
	if dmsetup create "$DM" --noudevsync --table "$table" 2>/dev/null; then
		echo "dm-linear claimed $d2 while exported"
		return 1
	fi
	unmap ro "$d2" || return 1
	dmsetup create "$DM" --noudevsync --table "$table" || return 1
	refused "Device or resource busy" \
		"$d2 is in use on the server, which no access rule allows" \
		map_over 0 ro "$d2" access_mode=ro || return 1
	rule_del "path=$d2 access_mode=ro" &&
		rule_add "path=$d2 access_mode=ro in_use=allow" || return 1
	map_over 0 ro "$d2" access_mode=ro && unmap ro "$d2" &&
		dmsetup remove "$DM"
}

# Rule 1 goes: good's disk 1 stays mapped and serves; closed by the
# server, it cannot map again until the rule is back.
rule_removed() {
	local dir

	dir=/sys/class/rnbd-server/ctl/devices/$(basename "$(disk 1)")/sessions/good
	rule_del "$(rule1)" || return 1
	write_read good "$(disk 1)" || { echo "the open mapping failed"; return 1; }
	echo 1 >"$dir/force_close" &&
		rnbd_wait 30 test ! -e "$dir" || return 1
	unmap good "$(disk 1)" || return 1
	refused "Permission denied" "good: from $ADDR0: rw $(disk 1) refused" \
		map_over 0 good "$(disk 1)" || return 1
	rule_add "$(rule1)" && allowed_maps && unmap good "$(disk 1)"
}

del_unknown() {
	rnbd_write_refused "$CTL/access_del" "path=/dev/nothing" \
		"No such file or directory" "access rule 'path=/dev/nothing"
}

# Every rule removed: the server is open to all again.
all_removed() {
	local r

	while read -r r; do
		rule_del "$r" || return 1
	done < <(rules)
	[ -z "$(rules)" ] || { echo "left: $(rules)"; return 1; }
	map_over 0 anyone "$(disk 2)" && unmap anyone "$(disk 2)"
}

teardown() {
	local d i

	for d in /sys/block/rnbd*; do
		[ -e "$d" ] && rnbd_unmap "$(basename "$d")" force
	done
	dmsetup remove "$DM" 2>/dev/null
	rnbd_unload rnbd-client rtrs-client rnbd-server rtrs-server rtrs-core
	for i in $(seq 1 $NR_DISKS); do
		rnbd_loop_down "$(disk "$i")" "$IMG.$i"
	done
	rm -f "$DATA"
}

ktap_header 15
ktap_check "three disks, server and client up" setup
ktap_check "no rule: any session maps any disk" no_rules_maps_all
ktap_check "bad rules refused with EINVAL and a log line, none taken" bad_rules
ktap_check "a rule shows as written out in full; the same again is EEXIST" \
	first_rule
ktap_check "the rule's session from its address maps the disk, writes, reads" \
	allowed_maps
ktap_check "another session: EACCES, logged with its name, address, disk" \
	other_session_refused
ktap_check "a disk no rule names: EACCES" other_disk_refused
ktap_check "access_mode=ro: ro maps, rw and migration are EACCES" mode_rule
ktap_check "addr with a prefix: from outside EACCES, from inside maps" addr_rule
ktap_check "a path from an address not allowed cannot join a session" \
	path_join_refused
ktap_check "in use on the server: EBUSY, unless in_use=allow; exported, not claimable" \
	in_use
ktap_check "a rule removed: open stays and serves, closed cannot map again" \
	rule_removed
ktap_check "access_del of a rule that does not exist: ENOENT" del_unknown
ktap_check "every rule removed: any session maps again" all_removed
ktap_check "modules unload, disks go" teardown
ktap_finish
