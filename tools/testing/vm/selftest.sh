#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The test bed's own test: a clean test passes, a test that makes the
# kernel log a WARNING fails, a test that hangs fails by timeout and shows
# the stack of its task stuck in the kernel, a test the guest kills on its
# timeout fails, the guest boots again after each of these two and the
# test after them passes, and no QEMU is left behind.

set -u

HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d /tmp/rnbd-vm-selftest.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

out=$("$HERE/rnbd-vm" run --timeout 5 --host-slack 15 --work "$WORK" \
	--summary "$WORK/summary" "$@" \
	"$HERE/tests/pass.sh" "$HERE/tests/warn.sh" "$HERE/tests/hang.sh" \
	"$HERE/tests/slow.sh" "$HERE/tests/pass.sh" 2>&1)
rc=$?
echo "$out"

fail=0
expect() {
	grep -qE "$1" <<<"$out" || { echo "expected: $1"; fail=1; }
}
expect '^ok 1 selftests: rnbd: pass.sh$'
expect '^not ok 2 selftests: rnbd: warn.sh$'
expect 'bad line.*|WARNING: CPU: 0 PID: .* planted'
expect '^not ok 3 selftests: rnbd: hang.sh$'
expect '# timed out in hang.sh'
expect 'console: .*task:dd +state:D'
expect 'console: .*blk_mq|console: .*io_schedule'
expect '# the guests boot again for the tests after it'
expect '^not ok 4 selftests: rnbd: slow.sh$'
expect '# single: the test was killed on its timeout'
expect '^ok 5 selftests: rnbd: pass.sh$'
expect 'one\.3: 1 guest\(s\) up'
[ $rc -ne 0 ] || { echo "rnbd-vm exited 0 with failed tests"; fail=1; }
summary=$(cat "$WORK/summary" 2>/dev/null)
[ "$summary" = "2 3 0" ] || { echo "summary '$summary', expected '2 3 0'"; fail=1; }
if pgrep -f "qemu-system.*$WORK" >/dev/null; then
	echo "QEMU left running"
	pkill -9 -f "qemu-system.*$WORK"
	fail=1
fi
exit $fail
