#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# ccache-fill.sh DEB KVER CACHE: build the package DEB with DKMS for KVER
# here on the host, as its postinst will in package.sh's guest, with
# Debian's kernel headers' own compiler cache switch
# (DEBIAN_KERNEL_USE_CCACHE), into the ccache directory CACHE.
#
# Why: a guest runs the host's root, so it has the same compiler and the
# same headers, but under TCG each compilation takes a minute: alone, the
# package's install took 12 to 14 minutes with them, 4 to 5 without
# (beside other guests the rest of the install still takes most of 20).
# The guest's build
# then finds each object here and still runs everything else of DKMS's
# install: a compilation whose input differs from this one's is a miss,
# and compiles.  ccache keys an object by the paths on the compiler's
# command line too, so the build runs in DKMS's own tree, /var/lib/dkms,
# as in the guest; a private mount namespace lays an empty tmpfs over it
# for this build alone, so the host's DKMS tree never sees the package.

set -u

[ $# -eq 3 ] || { echo "usage: $0 DEB KVER CACHE" >&2; exit 2; }
DEB=$1
KVER=$2
CACHE=$3

for t in ccache dkms dpkg-deb unshare; do
	command -v "$t" >/dev/null ||
		{ echo "$t is not installed: run scripts/install-deps"; exit 1; }
done
[ -f "/lib/modules/$KVER/build/Makefile" ] ||
	{ echo "no headers of $KVER to build against"; exit 1; }

TMP=$(mktemp -d /tmp/rnbd-ccache.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

dpkg-deb -x "$DEB" "$TMP/root" || exit 1
# The one source tree the package installs, /usr/src/NAME-VERSION.
src=$(find "$TMP/root/usr/src" -mindepth 1 -maxdepth 1 -type d)
[ -f "$src/dkms.conf" ] || { echo "$DEB installs no DKMS source tree"; exit 1; }
name_ver=$(basename "$src")
NAME=${name_ver%-*}
VERSION=${name_ver##*-}

rm -rf "$CACHE"
mkdir -p "$CACHE" || exit 1
export CCACHE_DIR=$CACHE DEBIAN_KERNEL_USE_CCACHE=1 CCACHE=ccache

# In the namespace: the tmpfs, then the build, as postinst's dkms would.
# shellcheck disable=SC2016 # expanded by the inner shell
unshare --mount --propagation private bash -c '
	mount -t tmpfs rnbd-ccache /var/lib/dkms &&
	dkms add -m "$1" -v "$2" --sourcetree "$3" &&
	dkms build -m "$1" -v "$2" -k "$4"' \
	fill "$NAME" "$VERSION" "$TMP/root/usr/src" "$KVER" \
	>"$TMP/dkms.log" 2>&1 ||
	{ echo "dkms build of $NAME $VERSION for $KVER failed:"; tail -n 20 "$TMP/dkms.log"; exit 1; }
echo "$NAME $VERSION built for $KVER into $CACHE:" \
	"$(ccache --print-stats | awk '$1 == "cache_miss" { print $2 }') objects"
