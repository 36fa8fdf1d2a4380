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


def record(cfg, job, **metrics):
    rec = {"job": job, "config": cfg, "round": 1}
    rec.update(metrics)
    return rec


class Targets(unittest.TestCase):
    # A read at iodepth 1 with always_invalidate=Y and N: Y's server posts
    # two more work requests and reaps one more completion an IO.
    RECS = [record("ours-1p", report.RR1, lat_mean_us=1500.0,
                   msgs_per_io=2.0, clt_wrs_per_io=2.0, srv_wrs_per_io=4.0,
                   clt_wcs_per_io=1.0, srv_wcs_per_io=2.0,
                   clt_irqpoll_per_io=1.0, srv_polls_per_io=1.0,
                   clt_ctxt_per_io=4.5, srv_ctxt_per_io=5.5),
            record("ours-1p-noinval", report.RR1, lat_mean_us=1000.0,
                   msgs_per_io=2.0, clt_wrs_per_io=2.0, srv_wrs_per_io=2.0,
                   clt_wcs_per_io=1.0, srv_wcs_per_io=1.0,
                   clt_irqpoll_per_io=1.0, srv_polls_per_io=1.0,
                   clt_ctxt_per_io=4.5, srv_ctxt_per_io=3.5)]

    def lines(self):
        _, _, cells = report.aggregate(self.RECS, {})
        tgts = {t["target"]: t for t in report.targets(cells)}
        return tgts, report.target_lines(list(tgts.values()), cells, {})

    def test_a_target_not_met_shows_both_configurations_counts(self):
        tgts, lines = self.lines()
        t = tgts["4k randread qd1 mean latency, always_invalidate=Y vs N"]
        self.assertEqual(t["status"], "not met")
        self.assertAlmostEqual(t["ratio"]["mean"], 1.5)
        at = lines.index(next(x for x in lines if x.lstrip().startswith(
            t["target"])))
        self.assertEqual(lines[at + 2].strip(), "ours-1p: msgs 2.00, WRs "
                         "2.00/4.00, CQEs 1.00/2.00, polls 1.00/1.00, ctxt "
                         "4.50/5.50")
        self.assertEqual(lines[at + 3].strip(), "ours-1p-noinval: msgs 2.00, "
                         "WRs 2.00/2.00, CQEs 1.00/1.00, polls 1.00/1.00, "
                         "ctxt 4.50/3.50")

    def test_a_configuration_not_run_is_not_measured(self):
        tgts, lines = self.lines()
        t = tgts["4k randread qd1 mean latency, ours vs NVMe-oF"]
        self.assertEqual(t["status"], "not measured")
        self.assertIn("    nvmeof: not measured", lines)


if __name__ == "__main__":
    unittest.main()
