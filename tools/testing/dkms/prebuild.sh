#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# prebuild.sh DEB KVER TARBALL: build the package DEB with DKMS for KVER
# here on the host, as its postinst would, and save the modules as DKMS's
# binaries-only archive TARBALL (dkms mktarball), which package.sh's guest
# loads into its DKMS tree (dkms ldtarball) as an admin does with the
# modules of one build host on many machines.
#
# Why: under TCG DKMS's build of the five modules took 4 to 5 minutes
# with every object from a compiler cache, 12 to 14 without it, and most
# of 20 beside CI's other guests (Kbuild's probes, modpost and BTF, each a
# program started at TCG's pace).  The build of the package's source with
# DKMS is this script's, for the kernel the guest boots, and
# dkms-build.sh's for every kernel with headers; the guest keeps the rest
# of an admin's life with the package.
#
# The build runs in DKMS's own tree, /var/lib/dkms, as the postinst's
# does; a private mount namespace lays an empty tmpfs over it for this
# build alone, so that the host's DKMS tree never sees the package.

set -u

[ $# -eq 3 ] || { echo "usage: $0 DEB KVER TARBALL" >&2; exit 2; }
DEB=$1
KVER=$2
TARBALL=$3

for t in dkms dpkg-deb unshare; do
	command -v "$t" >/dev/null ||
		{ echo "$t is not installed: run scripts/install-deps"; exit 1; }
done
[ -f "/lib/modules/$KVER/build/Makefile" ] ||
	{ echo "no headers of $KVER to build against"; exit 1; }

TMP=$(mktemp -d /tmp/rnbd-prebuild.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

dpkg-deb -x "$DEB" "$TMP/root" || exit 1
# The one source tree the package installs, /usr/src/NAME-VERSION.
src=$(find "$TMP/root/usr/src" -mindepth 1 -maxdepth 1 -type d)
[ -f "$src/dkms.conf" ] || { echo "$DEB installs no DKMS source tree"; exit 1; }
name_ver=$(basename "$src")
NAME=${name_ver%-*}
VERSION=${name_ver##*-}

rm -f "$TARBALL"
mkdir -p "$(dirname "$TARBALL")" || exit 1
TARBALL=$(cd "$(dirname "$TARBALL")" && pwd)/$(basename "$TARBALL")

# In the namespace: the tmpfs, then the build as postinst's dkms would
# do it, then the archive of the modules alone.
# shellcheck disable=SC2016 # expanded by the inner shell
unshare --mount --propagation private bash -c '
	mount -t tmpfs rnbd-prebuild /var/lib/dkms &&
	dkms add -m "$1" -v "$2" --sourcetree "$3" &&
	dkms build -m "$1" -v "$2" -k "$4" &&
	dkms mktarball -m "$1" -v "$2" -k "$4" --binaries-only --archive "$5"' \
	prebuild "$NAME" "$VERSION" "$TMP/root/usr/src" "$KVER" "$TARBALL" \
	>"$TMP/dkms.log" 2>&1 ||
	{ echo "dkms build of $NAME $VERSION for $KVER failed:"; tail -n 20 "$TMP/dkms.log"; exit 1; }
echo "$NAME $VERSION built for $KVER: $TARBALL," \
	"$(tar -tzf "$TARBALL" | grep -c '\.ko[.a-z]*$') modules"
