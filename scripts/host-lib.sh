#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# What scripts/check, scripts/demo and scripts/bench share on the host:
# which kernel the guests boot and the tree to build against, what is
# missing to run them, and a plain build of the modules.  Sourced; the
# caller sets SRC (the source tree), VM (tools/testing/vm/rnbd-vm) and
# PROG (the name its messages start with).

MODULE_SOURCES="Kbuild include rtrs rnbd"

# rnbd_newest PATH...: the last of the existing paths, in version order.
rnbd_newest() {
	local f

	for f in "$@"; do
		[ -e "$f" ] && echo "$f"
	done | sort -V | tail -n1
}

# rnbd_kdir_release KDIR: the release a build tree is of.
rnbd_kdir_release() {
	sed -n 's/^#define UTS_RELEASE "\(.*\)"/\1/p' \
		"$1/include/generated/utsrelease.h" 2>/dev/null
}

# rnbd_unpack_test_kernel DIR: unpack a kernel from the .debs in DIR once,
# under /tmp; sets KERNEL, KDIR and MODDIR.  Returns 2 when it cannot.
rnbd_unpack_test_kernel() {
	local dir=$1 image headers dst

	image=$(rnbd_newest "$dir"/linux-image-*.deb)
	headers=$(rnbd_newest "$dir"/linux-headers-*.deb)
	if [ -z "$image" ] || [ -z "$headers" ]; then
		echo "$PROG: no linux-image/linux-headers .deb in $dir" >&2
		return 2
	fi
	dst="/tmp/rnbd-kernels/$(basename "$image" .deb)"
	mkdir -p /tmp/rnbd-kernels || return 2
	# One unpack at a time: CI runs two runs of this kernel side by side.
	(
		flock 9 || exit 1
		[ -e "$dst/.unpacked" ] && exit 0
		rm -rf "$dst"
		mkdir -p "$dst"
		dpkg-deb -x "$image" "$dst" && dpkg-deb -x "$headers" "$dst" &&
			touch "$dst/.unpacked"
	) 9>/tmp/rnbd-kernels/.lock || return 2
	KERNEL=$(rnbd_newest "$dst"/boot/vmlinuz-*)
	KDIR=$(rnbd_newest "$dst"/usr/src/linux-headers-*)
	MODDIR="$dst/lib/modules/$("$VM" release --kernel "$KERNEL")"
}

# rnbd_resolve_kernel: the kernel the guests boot and its build tree, from
# TEST_KERNEL_DIR (packaged kernel), KERNEL (a bzImage), KDIR (a build tree,
# booting /boot/vmlinuz-<its release>) or else Debian's newest 6.1 in
# /boot.  Sets KERNEL, KDIR, KVER and MODDIR.  Returns 1 when nothing was
# given and there is no 6.1 kernel, or no headers of the one found (KERNEL
# is then set): something to install; 2, with a message, when what was
# given is wrong.
rnbd_resolve_kernel() {
	local rel

	MODDIR=
	if [ -n "${TEST_KERNEL_DIR:-}" ]; then
		rnbd_unpack_test_kernel "$TEST_KERNEL_DIR" || return 2
	elif [ -n "${KERNEL:-}" ]; then
		[ -f "$KERNEL" ] || { echo "$PROG: KERNEL=$KERNEL: no such file" >&2; return 2; }
	elif [ -n "${KDIR:-}" ]; then
		rel=$(rnbd_kdir_release "$KDIR")
		[ -n "$rel" ] || { echo "$PROG: KDIR=$KDIR: not a kernel build tree" >&2; return 2; }
		KERNEL=/boot/vmlinuz-$rel
		[ -f "$KERNEL" ] || {
			echo "$PROG: KDIR=$KDIR: no $KERNEL to boot (linux-image-$rel, or KERNEL=)" >&2
			return 2
		}
	else
		KERNEL=$(rnbd_newest /boot/vmlinuz-6.1.*)
		[ -n "$KERNEL" ] || return 1
	fi
	KVER=$("$VM" release --kernel "$KERNEL") || {
		echo "$PROG: cannot read the release of $KERNEL" >&2
		return 2
	}
	MODDIR=${MODDIR:-/lib/modules/$KVER}
	if [ -z "${KDIR:-}" ]; then
		KDIR=/lib/modules/$KVER/build
		[ -f "$KDIR/Makefile" ] || return 1
	fi
	[ -f "$KDIR/Makefile" ] || { echo "$PROG: KDIR=$KDIR: not a kernel build tree" >&2; return 2; }
}

# rnbd_missing_tools: of the "command package" lines on stdin, those whose
# command is not found, as "command (package)"; and a static busybox, which
# the guests' initramfs needs (it has no libraries).  The guests run the
# host's own root file system, so what they use must be installed here.
rnbd_missing_tools() {
	local cmd pkg bb

	while read -r cmd pkg; do
		[ -n "$cmd" ] || continue
		command -v "$cmd" >/dev/null || echo "$cmd ($pkg)"
	done
	bb=$(command -v busybox)
	if [ -z "$bb" ] || ldd "$bb" >/dev/null 2>&1; then
		echo "a static busybox (busybox-static)"
	fi
}

# What every guest run needs, for rnbd_missing_tools.
# shellcheck disable=SC2034 # for the scripts that source this
RNBD_GUEST_TOOLS="python3 python3
make build-essential
gcc build-essential
qemu-system-x86_64 qemu-system-x86
cpio cpio
xz xz-utils
depmod kmod
modinfo kmod
ip iproute2
rdma iproute2
fio fio
blockdev util-linux
flock util-linux"

# rnbd_build_plain DIR: a plain build (no W=1, no sparse) of a copy of the
# sources in DIR against KDIR; on failure prints the end of the log.
rnbd_build_plain() {
	local dir=$1 log

	rm -rf "$dir"
	mkdir -p "$dir" || return 1
	# shellcheck disable=SC2086 # a list of names
	(cd "$SRC" && cp -a $MODULE_SOURCES "$dir/") || return 1
	if ! log=$(make -C "$KDIR" M="$dir" modules 2>&1); then
		tail -n 20 <<<"$log" >&2
		return 1
	fi
}
