#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Checks of cpu_layers.py that need no samples: how perf script's output
is read, which layer a call chain goes to, and which samples and IOs a
side's window holds.  scripts/check runs it with the static checks."""

import os
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_layers  # noqa: E402

KALLSYMS = """\
ffffffff81000000 T _stext
ffffffff81001000 T memcpy_erms
ffffffff81002000 T __dev_queue_xmit
ffffffff81003000 T native_safe_halt
ffffffff81004000 T handle_softirqs
ffffffff81005000 T blk_mq_submit_bio
ffffffffc0100000 t rxe_requester\t[rdma_rxe]
ffffffffc0200000 t rtrs_clt_post_rdma\t[rtrs_client]
ffffffffc0300000 t start_xmit\t[virtio_net]
"""

SCRIPT = """\
fio   100.500000: 
\tffffffff81001010 memcpy_erms
\tffffffffc0100020 rxe_requester
\tffffffffc0200030 rtrs_clt_post_rdma

swapper     101.000000: 
\tffffffff81003004 native_safe_halt

kworker/0:1H-ib 101.500000: 
\tffffffff81002008 __dev_queue_xmit
\tffffffffc0300010 start_xmit

fio   102.000000: 
\t          4a1b2c [unknown]

swapper     102.500000: 
\tffffffffc0100020 rxe_requester
\tffffffff81004010 handle_softirqs

swapper     103.000000: 
\tffffffff81005010 blk_mq_submit_bio
"""


class Layers(unittest.TestCase):
    def setUp(self):
        fd, self.path = tempfile.mkstemp()
        with os.fdopen(fd, "w") as f:
            f.write(KALLSYMS)
        self.syms = cpu_layers.Symbols(self.path)
        self.recs = cpu_layers.parse_script(SCRIPT)

    def tearDown(self):
        os.unlink(self.path)

    def test_reads_comm_time_and_chain(self):
        self.assertEqual(len(self.recs), 6)
        self.assertEqual(self.recs[2][0], "kworker/0:1H-ib")
        self.assertEqual(self.recs[0][1], 100.5)
        self.assertEqual([s for _, s in self.recs[0][2]],
                         ["memcpy_erms", "rxe_requester",
                          "rtrs_clt_post_rdma"])

    def test_a_helper_counts_for_its_callers_layer(self):
        # memcpy has no layer: the first function up the chain with one,
        # Soft-RoCE's, takes it, not the ULP above.
        self.assertEqual(self.syms.module(0xffffffffc0100020), "rdma_rxe")
        self.assertEqual(self.syms.module(0xffffffff81001010), "vmlinux")
        self.assertEqual(cpu_layers.classify(*self.recs[0][::2], self.syms),
                         "Soft-RoCE")
        # The core kernel by prefix, before the module that called it.
        self.assertEqual(cpu_layers.classify(*self.recs[2][::2], self.syms),
                         "network stack")

    def test_idle_user_and_bench_tools(self):
        self.assertIsNone(cpu_layers.classify(*self.recs[1][::2],
                                              self.syms))
        # The idle task works in an interrupt, and idles outside one.
        self.assertEqual(cpu_layers.classify(*self.recs[4][::2], self.syms),
                         "Soft-RoCE")
        self.assertIsNone(cpu_layers.classify(*self.recs[5][::2],
                                              self.syms))
        self.assertEqual(cpu_layers.classify(*self.recs[3][::2], self.syms),
                         cpu_layers.FIO_USER)
        self.assertEqual(cpu_layers.classify("cat", self.recs[0][2],
                                             self.syms), "bench tools")

    def test_tally_keeps_the_window_only(self):
        layers, leaves = cpu_layers.tally(self.recs, self.syms, 100.0, 101.2)
        # The sample at 101.5 s is past the window, the halt is no work.
        self.assertEqual(dict(layers), {"Soft-RoCE": 1})
        self.assertEqual(dict(leaves), {"memcpy_erms": 1})


class Window(unittest.TestCase):
    def test_ios_are_the_disks_own(self):
        # 800 sectors of 4 KiB IOs in 2 s: 100 IOs, whatever fio's IOPS.
        self.assertEqual(cpu_layers.side_window("100000,5,sectors=0",
                                                "102000,9,sectors=800",
                                                4096, 5000.0),
                         (100.0, 102.0, 100.0))

    def test_a_disk_without_counts_takes_fios_iops(self):
        self.assertEqual(cpu_layers.side_window("100000,5,ctxt=1",
                                                "102000,9,ctxt=5",
                                                4096, 50.0),
                         (100.0, 102.0, 100.0))

    def test_no_io_no_window(self):
        self.assertIsNone(cpu_layers.side_window("100000,5,sectors=8",
                                                 "102000,9,sectors=8",
                                                 4096, 50.0))
        self.assertIsNone(cpu_layers.side_window("-", "102000,9", 4096, 1))


if __name__ == "__main__":
    unittest.main()
