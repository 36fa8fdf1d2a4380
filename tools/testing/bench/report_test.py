#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Checks of report.py's arithmetic that do not need a bench run: how a
side's two readings (counts_snap in bench.sh) become CPU and counts per
IO.  scripts/check runs it with the static checks."""

import os
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402

HZ = 100
BS = 4096


def snap(ms, ticks, **counts):
    return f"{ms},{ticks}," + ",".join(f"{k}={v}" for k, v in counts.items())


class SidePerIo(unittest.TestCase):
    def test_divides_by_the_disks_own_ios(self):
        # 1,000 IOs of 4 KiB in 2 s, whatever fio's IOPS of the job.
        busy, cpu_us, per_io = report.side_per_io(
            snap(10000, 500, pkts_tx=100, sectors=800),
            snap(12000, 600, pkts_tx=2100, sectors=8800),
            HZ, 5000.0, BS)
        self.assertAlmostEqual(busy, 0.5)
        self.assertAlmostEqual(cpu_us, 1000.0)
        self.assertEqual(per_io, {"pkts_tx": 2.0})

    def test_a_disk_that_counts_nothing_takes_fios_iops(self):
        # brd keeps no sectors: 500 IOPS over the 2 s window.
        _, cpu_us, per_io = report.side_per_io(
            snap(10000, 500, pkts_tx=100, sectors=0),
            snap(12000, 600, pkts_tx=2100, sectors=0),
            HZ, 500.0, BS)
        self.assertAlmostEqual(cpu_us, 1000.0)
        self.assertEqual(per_io, {"pkts_tx": 2.0})

    def test_a_window_without_io_has_nothing_per_io(self):
        # The disk counted earlier IO but none in the window: IO stalled.
        # fio's IOPS of the job's other seconds are not this window's.
        busy, cpu_us, per_io = report.side_per_io(
            snap(10000, 500, pkts_tx=100, sectors=328),
            snap(12000, 510, pkts_tx=100, sectors=328),
            HZ, 1900.0, BS)
        self.assertAlmostEqual(busy, 0.05)
        self.assertIsNone(cpu_us)
        self.assertEqual(per_io, {})

    def test_readings_out_of_order_are_none(self):
        self.assertIsNone(report.side_per_io(
            snap(12000, 600, sectors=8), snap(10000, 500, sectors=8),
            HZ, 1.0, BS))


if __name__ == "__main__":
    unittest.main()
