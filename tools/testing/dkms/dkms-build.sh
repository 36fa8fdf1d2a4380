#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# `dkms build` of the package for every kernel with headers installed, in a
# scratch source and dkms tree (the system's dkms tree gets no package; dkms
# may create its module-signing key there, as on any first use), for kernels
# that need not be running.  Each build must produce the five modules
# with the kernel's vermagic.

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
	dkms "$@" -m "$NAME" -v "$VERSION" --sourcetree "$TMP/src" \
		--dkmstree "$TMP/tree"
}

built=0
fail=0
dkms_do add >"$TMP/add.log" 2>&1 || { cat "$TMP/add.log"; exit 1; }
for kdir in /lib/modules/*/build; do
	[ -f "$kdir/Makefile" ] || continue
	kver=$(basename "$(dirname "$kdir")")
	if ! dkms_do build -k "$kver" --kernelsourcedir "$kdir" >"$TMP/build.log" 2>&1; then
		echo "$kver: dkms build failed"
		tail -n 20 "$TMP/build.log"
		tail -n 20 "$TMP/tree/$NAME/$VERSION/build/make.log" 2>/dev/null
		fail=1
		continue
	fi
	# The five and nothing else: no test module is packaged.
	others=$(find "$TMP/tree/$NAME/$VERSION/$kver" -name '*.ko*' -printf '%f\n' |
		grep -vxE "(${MODULES// /|})\.ko.*")
	if [ -n "$others" ]; then
		echo "$kver: the package has other modules: ${others//$'\n'/ }"
		fail=1
	fi
	for m in $MODULES; do
		ko=$(find "$TMP/tree/$NAME/$VERSION/$kver" -name "$m.ko*" | head -n1)
		if [ -z "$ko" ]; then
			echo "$kver: $m.ko was not built"
			fail=1
		elif [ "$(modinfo -F vermagic "$ko" | cut -d' ' -f1)" != "$kver" ]; then
			echo "$kver: $m.ko has the wrong vermagic"
			fail=1
		fi
	done
	echo "$kver: built"
	built=$((built + 1))
done
[ $built -gt 0 ] || { echo "no kernel headers installed"; exit 1; }
exit $fail
