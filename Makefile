# SPDX-License-Identifier: GPL-2.0-only
#
# RTRS and RNBD as out-of-tree modules.
#
#   make [KDIR=<kernel build dir>] [W=1] [C=2]   build the five modules
#   make RNBD_TESTS=y                            also the test modules of
#                                                tools/testing/ (never installed)
#   make install                                 install them and run depmod
#   make check                                   build, static checks, selftests in QEMU
#   make demo                                    map a disk between two QEMU guests
#   make bench                                   measure it against upstream RNBD
#                                                and NVMe-oF (not a test)
#   make deb                                     the Debian package rnbd-dkms,
#                                                from the files git tracks, into
#                                                build/ (scripts/deb)
#   make clean
#
# make check boots Debian's 6.1 kernel by default; KERNEL=<bzImage> or
# KDIR=<its build tree> choose another, TEST_KERNEL_DIR=<dir of .debs> a
# packaged one such as the debug kernel (see scripts/check).  make demo boots
# the same kernel; INSTALL_DEPS=1 (as root) installs what it lacks.  make bench
# too; BENCH_* set it (scripts/bench --help).

# The running kernel's build tree, else the newest headers installed.
KDIR ?= $(shell for d in /lib/modules/$$(uname -r)/build \
		$$(ls -d /lib/modules/*/build 2>/dev/null | sort -rV); do \
		[ -f "$$d/Makefile" ] && { echo "$$d"; break; }; done)

KBUILD = $(MAKE) -C $(KDIR) M=$(CURDIR)

# The release modules_install installs for: UTS_RELEASE, which in Debian's
# header packages differs from include/config/kernel.release.
KRELEASE = $(shell sed -n 's/^\#define UTS_RELEASE "\(.*\)"/\1/p' \
		$(KDIR)/include/generated/utsrelease.h)

export KERNEL TEST_KERNEL_DIR CHECKS SELFTESTS RESULTS INSTALL_DEPS

.PHONY: all modules install clean check demo bench deb need-kdir

all: modules

need-kdir:
	@if [ -z "$(KDIR)" ] || [ ! -f "$(KDIR)/Makefile" ]; then \
		echo "no kernel build tree: install headers (scripts/install-deps) or set KDIR=" >&2; \
		exit 1; \
	fi

modules: need-kdir
	$(KBUILD) modules

# INSTALL_MOD_PATH (a staging root) is passed on to kbuild as given.
install: modules
	$(KBUILD) modules_install
	depmod $(if $(INSTALL_MOD_PATH),-b $(INSTALL_MOD_PATH)) $(KRELEASE)

# The test modules are cleaned where their sources are (not in DKMS's copy).
clean:
	@if [ -f "$(KDIR)/Makefile" ]; then $(KBUILD) clean \
		$(if $(wildcard tools/testing/rtrs-bad-clt/Kbuild),RNBD_TESTS=y); fi
	rm -rf build

# make check picks the kernel it boots: KDIR reaches it only when given.
check:
	@KDIR="$(if $(filter command line environment,$(origin KDIR)),$(KDIR))" \
		scripts/check

# make demo too.
demo:
	@KDIR="$(if $(filter command line environment,$(origin KDIR)),$(KDIR))" \
		scripts/demo

# make bench too.
bench:
	@KDIR="$(if $(filter command line environment,$(origin KDIR)),$(KDIR))" \
		scripts/bench

# The package builds no module: KDIR plays no part.
deb:
	@scripts/deb
