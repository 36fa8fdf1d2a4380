#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The package's DKMS life on a machine with several kernels, in a scratch
# source, dkms and install tree (the system's dkms tree gets no package and
# /lib/modules is not touched; dkms may create its module-signing key in
# /var/lib/dkms, as on any first use):
#  - `dkms install` for the first kernel with headers, as the package's
#    postinst does for the running one;
#  - `dkms autoinstall` for every other, as the hook of Debian's dkms
#    (/etc/kernel/header_postinst.d/dkms) does when a kernel's headers come
#    after the package: it builds only what AUTOINSTALL asks for.
# Each kernel must get the five modules, with its vermagic, and no other.

set -u

SRC=$(cd "$(dirname "$0")/../../.." && pwd)
MODULES="rtrs-core rtrs-client rtrs-server rnbd-client rnbd-server"

command -v dkms >/dev/null || { echo "dkms is not installed"; exit 1; }
command -v dpkg-parsechangelog >/dev/null ||
	{ echo "dpkg-dev is not installed"; exit 1; }

conf_value() {
	sed -n "s/^$1=\"\(.*\)\"/\1/p" "$SRC/dkms.conf"
}

NAME=$(conf_value PACKAGE_NAME)
# dkms.conf has #MODULE_VERSION#, for the upstream part of the version in
# debian/changelog, as dh_dkms -V does.
VERSION=$(dpkg-parsechangelog -l "$SRC/debian/changelog" -S Version) || exit 1
VERSION=${VERSION#*:}
VERSION=${VERSION%-*}
TMP=$(mktemp -d /tmp/rnbd-dkms.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# The package's sources: what git tracks, as a user's tarball would hold.
mkdir -p "$TMP/src/$NAME-$VERSION" "$TMP/tree"
(cd "$SRC" && git ls-files -co --exclude-standard -- Kbuild Makefile dkms.conf include rtrs rnbd |
	cpio -pdm --quiet "$TMP/src/$NAME-$VERSION") || exit 1
sed -i "s/#MODULE_VERSION#/$VERSION/" "$TMP/src/$NAME-$VERSION/dkms.conf"

dkms_do() {
	dkms "$@" --sourcetree "$TMP/src" --dkmstree "$TMP/tree" \
		--installtree "$TMP/inst" --no-depmod
}

# check_modules KVER: the five modules, and only they, installed for KVER.
check_modules() {
	local dir=$TMP/inst/$1/updates/dkms others m ko rc=0

	others=$(find "$TMP/inst/$1" -name '*.ko*' -printf '%f\n' |
		grep -vxE "(${MODULES// /|})\.ko.*")
	[ -z "$others" ] ||
		{ echo "$1: the package has other modules: ${others//$'\n'/ }"; rc=1; }
	for m in $MODULES; do
		ko=$(find "$dir" -name "$m.ko*" 2>/dev/null | head -n1)
		if [ -z "$ko" ]; then
			echo "$1: $m.ko was not installed"
			rc=1
		elif [ "$(modinfo -F vermagic "$ko" | cut -d' ' -f1)" != "$1" ]; then
			echo "$1: $m.ko has the wrong vermagic"
			rc=1
		fi
	done
	return $rc
}

done_for=0
fail=0
dkms_do add -m "$NAME" -v "$VERSION" >"$TMP/add.log" 2>&1 ||
	{ cat "$TMP/add.log"; exit 1; }
for kdir in /lib/modules/*/build; do
	[ -f "$kdir/Makefile" ] || continue
	kver=$(basename "$(dirname "$kdir")")
	mkdir -p "$TMP/inst/$kver"
	if [ $done_for -eq 0 ]; then
		how=install
		dkms_do install -m "$NAME" -v "$VERSION" -k "$kver" \
			>"$TMP/dkms.log" 2>&1
	else
		how=autoinstall
		dkms_do autoinstall -k "$kver" >"$TMP/dkms.log" 2>&1
	fi
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "$kver: dkms $how failed"
		tail -n 20 "$TMP/dkms.log"
		tail -n 20 "$TMP/tree/$NAME/$VERSION/build/make.log" 2>/dev/null
		fail=1
	elif check_modules "$kver"; then
		echo "$kver: dkms $how: installed"
	else
		fail=1
	fi
	done_for=$((done_for + 1))
done
[ $done_for -gt 0 ] || { echo "no kernel headers installed"; exit 1; }
[ $done_for -gt 1 ] ||
	echo "only one kernel has headers: dkms autoinstall not tried"
exit $fail
