#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The Debian package, as an admin uses it, in a guest that boots systemd
# and udev: apt installs build/rnbd-dkms_*.deb (make deb) on a machine
# without the kernel's headers, where the postinst leaves DKMS's build
# for later and says so; DKMS then takes the five modules a build host
# made of the same package for the running kernel (dkms ldtarball of
# RNBD_TEST_DKMS_TARBALL, tools/testing/dkms/prebuild.sh) and installs
# them; modprobe finds them in DKMS's tree; rnbd-server.service loads the
# server; rnbd-map.service maps the devices of an /etc/rnbdtab with a bad
# line among good ones (the good ones map, the bad one is reported with
# its line number, the unit stays active); udev gives each mapped device
# its /dev/disk/by-rnbd link; fio verifies through the links; the unit's
# stop unmaps them and the links go.  apt remove takes the modules and
# leaves only the admin's configuration files, and purge those too: no
# file the package listed is left, and the system is as it was before the
# install.
#
# Needs RNBD_TEST_DEB, the package, and RNBD_TEST_DKMS_TARBALL, its
# modules for the running kernel (make check makes both for the selftests
# that use them).  DKMS's build of the package is make check's (prebuild.sh
# for the kernel booted here, dkms-build.sh for every kernel with
# headers): under TCG it took 4 to 20 minutes.
#
# rnbd-vm: topology=one
# rnbd-vm: init=systemd
# rnbd-vm: timeout=2400

. "$(dirname "$0")/lib.sh"

[ -f "${RNBD_TEST_DEB:-}" ] || ktap_skip_all "RNBD_TEST_DEB names no package"
[ -f "${RNBD_TEST_DKMS_TARBALL:-}" ] ||
	ktap_skip_all "RNBD_TEST_DKMS_TARBALL names no archive of the modules"

KVER=$(uname -r)
MODULES="rtrs-core rtrs-client rtrs-server rnbd-client rnbd-server"
SESS=pkg
DISKS="pkgdisk0 pkgdisk1"
DISK_MB=16
LINKS=/dev/disk/by-rnbd/$SESS
RUN=/tmp/rnbd-package
mkdir -p "$RUN"

# took SECONDS WHAT: print how long WHAT took.
took() {
	rnbd_log "$2 took $(($(date +%s) - $1)) s"
}

# Every kernel's headers are taken away for the install: the postinst
# then builds for none of them, as on a machine without headers.
headers_away() {
	local kdir

	for kdir in /lib/modules/*/build; do
		[ -e "$kdir" ] && { mv "$kdir" "$kdir.away" || return 1; }
	done
	return 0
}

headers_back() {
	local kdir

	for kdir in /lib/modules/*/build.away; do
		[ -e "$kdir" ] && { mv "$kdir" "${kdir%.away}" || return 1; }
	done
	return 0
}

# As README says, on a machine without the kernel's headers.  apt cannot
# fetch anything in the guest, and needs nothing: the package's
# dependencies are the test bed's own.
install_package() {
	local t0 status

	headers_away || return 1
	t0=$(date +%s)
	apt-get install -y "$RNBD_TEST_DEB" >"$RUN/apt.log" 2>&1 ||
		{ tail -n 20 "$RUN/apt.log"; headers_back; return 1; }
	headers_back || return 1
	took "$t0" "installing the package ($(du -k "$RNBD_TEST_DEB" | cut -f 1) KiB)"
	dpkg -L rnbd-dkms | sort >"$RUN/files"
	grep -A 1 "build for kernel $KVER was skipped" "$RUN/apt.log" |
		grep -q "headers for this kernel do not seem to be installed" ||
		{ echo "no word of the build left for the headers:"; tail -n 20 "$RUN/apt.log"; return 1; }
	status=$(dkms status -m rnbd -k "$KVER" 2>/dev/null)
	[[ $status == *": added"* ]] || { echo "dkms status: $status"; return 1; }
}

# The build host's modules into DKMS's tree, then DKMS's install of them.
# ldtarball adds the package's source as it loads the modules, and will not
# add it a second time: the postinst's add, which built nothing, goes
# first.
install_prebuilt() {
	local t0 status version

	t0=$(date +%s)
	# The package's version, as the postinst gives it to DKMS: no epoch,
	# no Debian revision.
	version=$(dpkg-query -W -f='${Version}' rnbd-dkms)
	version=${version#*:}
	version=${version%-*}
	{ dkms remove -m rnbd -v "$version" --all &&
		dkms ldtarball --archive "$RNBD_TEST_DKMS_TARBALL"; } \
		>"$RUN/ldtarball.log" 2>&1 || { cat "$RUN/ldtarball.log"; return 1; }
	status=$(dkms status -m rnbd -k "$KVER" 2>/dev/null)
	[[ $status == *": built"* ]] || { echo "dkms status after ldtarball: $status"; return 1; }
	dkms install -m rnbd -v "$version" -k "$KVER" >"$RUN/dkms-install.log" 2>&1 ||
		{ tail -n 20 "$RUN/dkms-install.log"; return 1; }
	took "$t0" "dkms ldtarball and install for $KVER"
	status=$(dkms status -m rnbd -k "$KVER" 2>/dev/null)
	[[ $status == *": installed"* ]] || { echo "dkms status: $status"; return 1; }
}

# built_for KVER: the five modules are in DKMS's tree of KVER, for KVER.
built_for() {
	local m f vermagic

	for m in $MODULES; do
		f=$(find "/lib/modules/$1/updates/dkms" -name "$m.ko*" 2>/dev/null |
			head -n 1)
		[ -n "$f" ] || { echo "no $m in /lib/modules/$1/updates/dkms"; return 1; }
		vermagic=$(modinfo -F vermagic "$f" | cut -d ' ' -f 1)
		[ "$vermagic" = "$1" ] ||
			{ echo "$f is for '$vermagic', not $1"; return 1; }
	done
}

from_dkms_tree() {
	local m f

	for m in $MODULES; do
		f=$(modinfo -n "$m") || return 1
		case $f in
		"/lib/modules/$KVER/updates/dkms/"*) ;;
		*) echo "modprobe would load $m from $f"; return 1 ;;
		esac
	done
}

server_up() {
	local d

	rnbd_rdma_up || return 1
	for d in $DISKS; do
		rnbd_nullb_up "$d" "$DISK_MB" || return 1
	done
	systemctl start rnbd-server || return 1
	systemctl is-active -q rnbd-server && [ -d /sys/module/rnbd_server ]
}

# Line 4 is the bad one: an option map_device does not know.
write_rnbdtab() {
	local paths

	paths="path=ip:$(rnbd_path_addr 0 server) path=ip:$(rnbd_path_addr 1 server)"
	cat >/etc/rnbdtab <<-EOF
	# written by package.sh
	sessname=$SESS $paths device_path=/dev/pkgdisk0

	sessname=$SESS $paths device_path=/dev/pkgdisk1 colour=blue
	sessname=$SESS $paths device_path=/dev/pkgdisk1  # the good twin
	EOF
}

map_by_unit() {
	local t0 log

	write_rnbdtab
	t0=$(date +%s)
	systemctl start rnbd-map || { systemctl status rnbd-map --no-pager; return 1; }
	took "$t0" "rnbd-map.service's start"
	systemctl is-active -q rnbd-map ||
		{ echo "rnbd-map.service is not active"; return 1; }
	log=$(journalctl -b -u rnbd-map --no-pager -o cat)
	printf '%s\n' "$log" | grep -q "^/etc/rnbdtab:4: .*colour=blue.*: line ignored$" ||
		{ echo "no report of line 4 in:"; printf '%s\n' "$log"; return 1; }
	printf '%s\n' "$log" | grep "^/etc/rnbdtab:[0-9]*: " |
		grep -Ev -e "^/etc/rnbdtab:4: .*: line ignored$" \
			-e "^/etc/rnbdtab:[25]: $SESS /dev/pkgdisk[01]: mapped( as /dev/rnbd[0-9]+)?$" &&
		{ echo "other reports about the lines"; return 1; }
	return 0
}

# mapped DEVICE_PATH: the rnbdN of the session's DEVICE_PATH, if mapped.
mapped() {
	rnbd_dev_of "$SESS" "$1"
}

good_ones_mapped() {
	local d dev

	[ "$(rnbd_nr_mapped)" -eq 2 ] ||
		{ echo "$(rnbd_nr_mapped) devices mapped, not 2"; return 1; }
	for d in $DISKS; do
		dev=$(mapped "/dev/$d")
		[ -n "$dev" ] || { echo "/dev/$d is not mapped"; return 1; }
	done
}

link_of() {
	echo "$LINKS/+dev+$1"
}

links_there() {
	local d dev

	for d in $DISKS; do
		dev=$(mapped "/dev/$d")
		[ "$(readlink -f "$(link_of "$d")")" = "/dev/$dev" ] || return 1
	done
}

links_gone() {
	local d

	for d in $DISKS; do
		[ ! -e "$(link_of "$d")" ] || return 1
	done
}

fio_verify() {
	local d args=()

	for d in $DISKS; do
		args+=(--name="$d" --filename="$(link_of "$d")")
	done
	fio --output-format=terse --minimal --direct=1 --ioengine=libaio \
		--rw=randwrite --bs=4k --size=4M --iodepth=16 --verify=crc32c \
		--verify_fatal=1 --do_verify=1 "${args[@]}" >"$RUN/fio.log" 2>&1 ||
		{ tail -n 20 "$RUN/fio.log"; return 1; }
}

unmap_by_unit() {
	systemctl stop rnbd-map || return 1
	[ "$(rnbd_nr_mapped)" -eq 0 ] ||
		{ echo "$(rnbd_nr_mapped) devices still mapped"; return 1; }
	udevadm settle
	rnbd_wait 10 links_gone || { ls -lR "$LINKS"; return 1; }
}

server_down() {
	local d

	systemctl stop rnbd-server
	for d in $DISKS; do
		rnbd_nullb_down "$d"
	done
	modprobe -r rnbd-client rnbd-server rtrs-client rtrs-server rtrs-core
}

# The system as the package must leave it once purged: every name under
# the trees that DKMS, a package's maintainer scripts or its services
# write to, and what each file of /etc holds; the files the package
# installs are the purge check's (dpkg -L).  Left out: dpkg's and apt's
# own records, and DKMS's module-signing key, which dkms makes on its
# first build of any package and keeps.  Not all of /usr: the guest reads
# the host's root over 9p, where listing all of it twice took 5 minutes;
# nor the kernels' own modules (/lib/modules/*/kernel, some 5000 files a
# kernel), which DKMS does not write to: it installs into updates/dkms.
TREES="/etc /lib/modules /var/lib /usr/local /usr/bin /usr/sbin /opt /srv"
tree() {
	# shellcheck disable=SC2086 # a list of directories
	find $TREES -path /var/lib/dpkg -prune -o -path /var/lib/apt -prune \
		-o -path '/var/lib/dkms/mok.*' -prune \
		-o -path '/lib/modules/*/kernel' -prune -o -print 2>/dev/null |
		sort
	find /usr/src -maxdepth 1 | sort
	find /etc -type f -exec md5sum {} + 2>/dev/null | sort -k 2
}

# as_before: the system is as tree printed it before the install.
as_before() {
	tree >"$RUN/tree.after"
	diff "$RUN/tree.before" "$RUN/tree.after" >"$RUN/tree.diff" && return 0
	echo "what differs (<: before the install, >: after the purge):"
	grep '^[<>]' "$RUN/tree.diff" | head -n 40
	return 1
}

# removed KEEP remove|purge STATE: apt-get remove or purge leaves the
# package in STATE and nothing of it but the files of KEEP (a remove's
# configuration files): no module of any kernel, no source, nothing in
# DKMS.
removed() {
	local f state left=0 keep=$1

	apt-get "$2" -y rnbd-dkms >"$RUN/remove.log" 2>&1 ||
		{ tail -n 20 "$RUN/remove.log"; return 1; }
	state=$(dpkg-query -W -f='${db:Status-Status}' rnbd-dkms 2>/dev/null)
	[ "${state:-not-installed}" = "$3" ] ||
		{ echo "rnbd-dkms is $state, not $3"; return 1; }
	while read -r f; do
		[ -d "$f" ] && continue
		if [ -e "$f" ] && ! grep -qx "$f" <<<"$keep"; then
			echo "left behind: $f"
			left=1
		fi
	done <"$RUN/files"
	if find /lib/modules/*/updates/dkms -name 'r[nt][br][ds]-*.ko*' 2>/dev/null | grep .; then
		echo "modules left behind"
		left=1
	fi
	[ ! -e /var/lib/dkms/rnbd ] || { echo "left in DKMS: /var/lib/dkms/rnbd"; left=1; }
	return $left
}

ktap_header 13
# man-db's trigger indexes the guest's manual pages after each apt run,
# about a minute under TCG, for nothing this test reads: off for both
# snapshots of the tree.
rm -f /var/lib/man-db/auto-update
tree >"$RUN/tree.before"
ktap_check "apt installs the package without headers, DKMS's build left for them" \
	install_package
ktap_check "dkms ldtarball and install: a build host's modules for $KVER" \
	install_prebuilt
ktap_check "the five modules in DKMS's tree, for $KVER" built_for "$KVER"
ktap_check "modprobe finds them there (modinfo -n)" from_dkms_tree
ktap_check "rnbd-server.service loads the server, which exports two disks" \
	server_up
ktap_check "rnbd-map.service: the good lines map, the bad one is reported by line" \
	map_by_unit
ktap_check "both good lines mapped, the bad one not" good_ones_mapped
ktap_check "udev links /dev/disk/by-rnbd/$SESS/+dev+pkgdiskN" \
	rnbd_wait 20 links_there
ktap_check "fio verifies through the links" fio_verify
ktap_check "rnbd-map.service's stop unmaps them, the links go" unmap_by_unit
server_down
ktap_check "apt remove: no module, source or DKMS state left, only conffiles" \
	removed "$(dpkg-query -W -f='${Conffiles}\n' rnbd-dkms | awk 'NF { print $1 }')" \
	remove config-files
ktap_check "apt purge: no file of the package left" removed "" purge not-installed
ktap_check "the system as before the install: no file left, none gone, /etc the same" \
	as_before
rm -rf "$RUN" /etc/rnbdtab
ktap_finish
