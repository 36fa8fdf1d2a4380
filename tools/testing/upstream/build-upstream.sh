#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# build-upstream.sh KDIR OUTDIR
#
# Build Linux's own RTRS and RNBD (drivers/infiniband/ulp/rtrs and
# drivers/block/rnbd of Debian's linux-source of the same version as KDIR,
# linux-source-6.1 or linux-source-6.12) as external modules against the
# kernel build tree KDIR and copy the five modules into OUTDIR.
# They are the "upstream peer" our modules are tested against: none of
# their source enters this tree, it is unpacked under /tmp and built there.
#
# Quiet on success.  Exits 4 (kselftest's skip) with a one-line reason when
# the linux-source of KDIR's version is not installed, 1 with the tail of
# the build log when the build fails, 2 on a usage error.
#
# Environment:
#   LINUX_SOURCE  the tarball (default: /usr/src/linux-source-X.Y.tar.xz,
#                 X.Y the version of KDIR)

set -u

CACHE=/tmp/rnbd-upstream-src
DIRS="drivers/infiniband/ulp/rtrs drivers/block/rnbd"
MODULES="rtrs-core rtrs-client rtrs-server rnbd-client rnbd-server"

if [ $# -ne 2 ]; then
	echo "usage: $0 KDIR OUTDIR" >&2
	exit 2
fi
KDIR=$1
OUTDIR=$2

skip() {
	echo "$*"
	exit 4
}

[ -f "$KDIR/Makefile" ] || { echo "$KDIR is not a kernel build tree" >&2; exit 2; }
KVER=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"/\1/p' \
	"$KDIR/include/generated/utsrelease.h" 2>/dev/null)
# The peer's code must be of the kernel's own version: the kernel's
# internal API changes from one to the next.
MAJMIN=$(echo "$KVER" | sed -n 's/^\([0-9]*\.[0-9]*\)[.+-].*/\1/p')
[ -n "$MAJMIN" ] || skip "upstream peer: $KDIR is of no known release"
TARBALL=${LINUX_SOURCE:-/usr/src/linux-source-$MAJMIN.tar.xz}
[ -f "$TARBALL" ] ||
	skip "upstream peer: $TARBALL missing (apt-get install linux-source-$MAJMIN)"

# unpack: the two drivers' directories, once per tarball, under $CACHE.
# The stamp holds the tarball's size and time, so that an upgraded
# linux-source package is unpacked anew; the copy is made aside and renamed
# into place, so that concurrent runs never see half of it.
unpack() {
	local top dst stamp tmp dir members=()

	# The tarball's top directory, linux-source-X.Y/, is named after it.
	top=$(basename "$TARBALL" .tar.xz)
	dst="$CACHE/$top"
	stamp=$(stat -c '%s %Y' "$TARBALL")
	if [ "$(cat "$dst/.stamp" 2>/dev/null)" = "$stamp" ]; then
		SRC=$dst
		return 0
	fi
	mkdir -p "$CACHE" || return 1
	tmp=$(mktemp -d "$CACHE/.unpack.XXXXXX") || return 1
	chmod 755 "$tmp"
	# Member paths: only the two drivers are written out (tar still has to
	# read the whole tarball, about 15 s of xz).
	for dir in $DIRS; do
		members+=("$top/$dir")
	done
	if ! tar -xJf "$TARBALL" -C "$tmp" --strip-components=1 "${members[@]}"; then
		rm -rf "$tmp"
		return 1
	fi
	echo "$stamp" >"$tmp/.stamp"
	rm -rf "$dst"
	mv -T "$tmp" "$dst" 2>/dev/null || rm -rf "$tmp"
	SRC=$dst
}

# OUTDIR's modules are kept when they were built from the same tarball
# for the same kernel, and two runs for one OUTDIR take turns: CI runs the
# selftests of one kernel in two runs side by side.
mkdir -p "$(dirname "$OUTDIR")" || exit 1
exec 9>"$OUTDIR.lock"
flock 9
BUILT="$(stat -c '%s %Y' "$TARBALL") $KVER $(readlink -f "$KDIR")"
built_before() {
	local m

	[ "$(cat "$OUTDIR/.built" 2>/dev/null)" = "$BUILT" ] || return 1
	for m in $MODULES; do
		[ -f "$OUTDIR/$m.ko" ] || return 1
	done
}
built_before && exit 0

SRC=
unpack || { echo "upstream peer: cannot unpack $DIRS from $TARBALL"; exit 1; }

# Objects go to a scratch copy, not to the cache: each kernel gets its own
# and a failed build leaves nothing behind.
BUILD=$(mktemp -d /tmp/rnbd-upstream-build.XXXXXX) || exit 1
trap 'rm -rf "$BUILD"' EXIT

for dir in $DIRS; do
	mkdir -p "$BUILD/$(dirname "$dir")"
	cp -a "$SRC/$dir" "$BUILD/$dir" || exit 1
done

# One kbuild pass over both directories, so that modpost resolves rnbd's
# use of rtrs' symbols without KBUILD_EXTRA_SYMBOLS.  rnbd's Makefile finds
# rtrs.h through $(srctree), which for an external module is KDIR, where
# the headers package has no such file: subdir-ccflags-y adds the copy's
# rtrs directory to every directory's include path instead.
cat >"$BUILD/Kbuild" <<'EOF'
subdir-ccflags-y += -I$(src)/drivers/infiniband/ulp/rtrs
obj-m += drivers/infiniband/ulp/rtrs/ drivers/block/rnbd/
EOF

# The Kconfig symbols the two Makefiles test, and CONFIG_BLK_DEV_RNBD, the
# bool both rnbd modules select, set as Kconfig would though nothing tests it.
if ! make -C "$KDIR" M="$BUILD" -j"$(nproc)" \
	CONFIG_INFINIBAND_RTRS=m CONFIG_INFINIBAND_RTRS_CLIENT=m \
	CONFIG_INFINIBAND_RTRS_SERVER=m CONFIG_BLK_DEV_RNBD=y \
	CONFIG_BLK_DEV_RNBD_CLIENT=m CONFIG_BLK_DEV_RNBD_SERVER=m \
	modules >"$BUILD/build.log" 2>&1; then
	echo "upstream peer: build against $KDIR failed:"
	tail -n 30 "$BUILD/build.log"
	exit 1
fi

for m in $MODULES; do
	[ -n "$(find "$BUILD" -name "$m.ko")" ] && continue
	echo "upstream peer: $m.ko was not built"
	tail -n 30 "$BUILD/build.log"
	exit 1
done
# Each module replaced by a rename: a test bed may be loading the last
# build's from OUTDIR right now.
mkdir -p "$OUTDIR" || exit 1
for m in $MODULES; do
	cp "$(find "$BUILD" -name "$m.ko")" "$OUTDIR/.$m.ko.tmp" &&
		mv -f "$OUTDIR/.$m.ko.tmp" "$OUTDIR/$m.ko" || exit 1
done
cp "$BUILD/build.log" "$OUTDIR/build.log"
echo "$BUILT" >"$OUTDIR/.built"
