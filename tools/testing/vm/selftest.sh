#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The test bed's own test, in one run of rnbd-vm that boots each topology.
# One guest: a clean test passes; a test that makes the kernel log a
# WARNING fails, with the warning shown; a test that leaves a module of
# ours loaded fails, naming it, and the guest runs the next test; a test
# that hangs fails by timeout and shows the stack of its task stuck in the
# kernel; a test the guest kills on its timeout fails; the guest boots
# again after each of these two and the test after them passes; a test
# that leaves modules of ours in use fails, naming them, and the guest is
# taken for unfit.  Two guests: a module the server side leaves loaded
# fails the test on the server's account, and the guests run the next
# test; a clean test of both sides passes; a test whose server side fails
# fails even though its client side passes, with the server's exit code
# and output shown.  And no QEMU is left behind.
#
# Each expectation is looked for in the result of its test only.

set -u

HERE=$(cd "$(dirname "$0")" && pwd)
T="$HERE/tests"
WORK=$(mktemp -d /tmp/rnbd-vm-selftest.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# One guest: 1 pass, 2 warn, 3 leftover, 4 hang, 5 slow, 6 pass, 7 pinned
# (last: no boot is spent on the tests after it).  Two guests: 8 leftover,
# 9 pair, 10 server-fails.
start=$SECONDS
out=$("$HERE/rnbd-vm" run --timeout 5 --host-slack 15 --work "$WORK" \
	--summary "$WORK/summary" "$@" \
	"$T/pass.sh" "$T/warn.sh" "$T/leftover.sh" "$T/hang.sh" \
	"$T/slow.sh" "$T/pass.sh" "$T/pinned.sh" "$T/pair.sh" \
	"$T/server-fails.sh" 2>&1)
rc=$?
echo "$out"
echo "# selftest: rnbd-vm took $((SECONDS - start)) s"

fail=0

# result N: the lines of result N, from its "# selftests: rnbd: NAME" to
# its "ok N" or "not ok N".
result() {
	awk -v n="$1" '
		/^# selftests: rnbd: / { buf = "" }
		{ buf = buf $0 "\n" }
		$0 ~ "^(not )?ok " n " " { printf "%s", buf; exit }
	' <<<"$out"
}

# expect N ERE: result N has a line that matches ERE.
expect() {
	result "$1" | grep -qE -- "$2" ||
		{ echo "expected in result $1: $2"; fail=1; }
}

# refute N ERE: result N has no line that matches ERE.
refute() {
	! result "$1" | grep -qE -- "$2" ||
		{ echo "not expected in result $1: $2"; fail=1; }
}

# verdict N ok|"not ok" NAME TOPOLOGY
verdict() {
	expect "$1" "^$2 $1 selftests: rnbd: ${3//./\\.} \\[$4\\]\$"
}

# stack_of N TASK ERE: in result N, the stack the console showed of TASK
# blocked (the 16 lines after its "task:TASK state:D") has a line that
# matches ERE.
stack_of() {
	result "$1" | awk -v t="$2" '
		$0 ~ "console: .*task:" t " +state:D" { n = 16; next }
		n > 0 { print; n-- }
	' | grep -qE -- "$3" ||
		{ echo "expected in the stack of $2 in result $1: $3"; fail=1; }
}

BOOT_AGAIN='^# the guests boot again for the tests after it$'

verdict 1 ok pass.sh one
expect 1 '^# ok 1 nothing to see$'

verdict 2 "not ok" warn.sh one
expect 2 '^# ok 1 planted a warning$'
expect 2 '^# single kernel log has 1 bad line\(s\):$'
expect 2 '^#   \[ *[0-9]+\.[0-9]+\] WARNING: CPU: [0-9]+ PID: [0-9]+ at rnbd-vm/tests/warn\.sh: planted by the test bed.s self-test$'
refute 2 "$BOOT_AGAIN"

verdict 3 "not ok" leftover.sh one
expect 3 '^# ok 1 single: left what it loaded$'
expect 3 '^# single: modules left loaded: rtrs_core$'
refute 3 'would not unload'
refute 3 "$BOOT_AGAIN"

verdict 4 "not ok" hang.sh one
expect 4 '^# timed out in hang\.sh$'
# dd waits for IO, in the block layer: for a tag or for its bios.
stack_of 4 dd ' io_schedule\+0x'
stack_of 4 dd ' (blk_mq_[a-z_]+|__blkdev_direct_IO[a-z_]*)\+0x'
expect 4 "$BOOT_AGAIN"

verdict 5 "not ok" slow.sh one
expect 5 '^# single side exited with 124$'
expect 5 '^# single: the test was killed on its timeout$'
expect 5 "$BOOT_AGAIN"

verdict 6 ok pass.sh one
expect 6 '^# ok 1 nothing to see$'

verdict 7 "not ok" pinned.sh one
expect 7 '^# ok 1 rtrs-bad-clt is in use$'
expect 7 '^# single: modules left loaded: rtrs_bad_clt rtrs_core$'
expect 7 '^# single: modules that would not unload: rtrs_bad_clt rtrs_core$'
expect 7 "$BOOT_AGAIN"

verdict 8 "not ok" leftover.sh two
expect 8 '^# ok 1 client: left what it loaded$'
expect 8 '^# server: modules left loaded: rtrs_core$'
refute 8 '^# client: modules'
refute 8 'would not unload'
refute 8 "$BOOT_AGAIN"

verdict 9 ok pair.sh two
expect 9 '^# # token: rnbd-server$'
expect 9 '^# ok 1 the server.s token came$'
expect 9 '^# \[server\] the client answered$'

verdict 10 "not ok" server-fails.sh two
expect 10 '^# ok 1 the server side ran$'
expect 10 '^# \[server\] planted: the server side fails$'
expect 10 '^# server side exited with 1$'
refute 10 '^# client side exited'

# The boots: one guest three times (after the hang and after the timeout;
# not after the leftover, nor after the last test), two guests once.
boots=$(grep -oE '^# rnbd-vm: [a-z0-9.]+: [0-9] guest\(s\) up' <<<"$out" |
	awk '{ print $3 $4 }' | xargs)
[ "$boots" = "one:1 one.2:1 one.3:1 two:2" ] ||
	{ echo "boots '$boots', expected 'one:1 one.2:1 one.3:1 two:2'"; fail=1; }
grep -qx '1\.\.10' <<<"$out" || { echo "expected the plan 1..10"; fail=1; }

[ $rc -ne 0 ] || { echo "rnbd-vm exited 0 with failed tests"; fail=1; }
summary=$(cat "$WORK/summary" 2>/dev/null)
[ "$summary" = "3 7 0" ] || { echo "summary '$summary', expected '3 7 0'"; fail=1; }
if pgrep -f "qemu-system.*$WORK" >/dev/null; then
	echo "QEMU left running"
	pkill -9 -f "qemu-system.*$WORK"
	fail=1
fi
exit $fail
