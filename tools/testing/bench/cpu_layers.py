#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Where the CPU of an IO goes, from the samples of `scripts/bench --perf`.

  cpu_layers.py DIR   for each job of DIR/runs.txt with samples of both
                      sides (DIR/perf/TAG.SIDE.data and .kallsyms, of
                      bench.sh's perf_start), each side's CPU microseconds
                      per IO in each layer of the stack, and the leaf
                      functions that cost the most

A sample is 1/499 s of a CPU (perf's cpu-clock).  Each side's samples are
those of its counted window (the counts_snap of runs.txt: perf timed them
with CLOCK_BOOTTIME, as /proc/uptime is), but for idle time (the idle
loop's halt, and the idle task outside an interrupt, as /proc/stat),
divided by the IOs its own disk did in that window, as report.py divides
the CPU of /proc/stat.  A sample goes to the layer of the first function
of its call chain, from the leaf up, that has one: the module it is in
(the ULPs, ib_core, Soft-RoCE, virtio-net, null_blk), else its name's
prefix in the core kernel (the network stack, the block layer, system
calls, the scheduler, softirq and interrupt entry); a helper that belongs
to none (memcpy, a spin lock, the slab) counts for its caller.  Samples of
the bench's own tools (bench.sh and what it runs to read the counters)
are a layer of their own, and fio's user space another.
"""

import bisect
import collections
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402

HZ = 499

MODULE_LAYERS = {
    "ULP": ("rtrs_core", "rtrs_client", "rtrs_server", "rnbd_client",
            "rnbd_server", "nvme_rdma", "nvme_core", "nvme_fabrics",
            "nvmet", "nvmet_rdma"),
    "ib_core, rdma_cm": ("ib_core", "rdma_cm", "ib_cm", "iw_cm",
                         "ib_uverbs"),
    "Soft-RoCE": ("rdma_rxe",),
    "virtio-net": ("virtio_net", "virtio_ring", "virtio_pci",
                   "virtio_pci_modern_dev", "virtio_pci_legacy_dev",
                   "net_failover", "failover", "virtio"),
    "block layer, null_blk": ("null_blk", "brd"),
}
MODULE_LAYER = {m: layer for layer, mods in MODULE_LAYERS.items()
                for m in mods}

# The core kernel's functions, by the prefix of their names.
PREFIX_LAYERS = (
    ("network stack", ("net_", "__net", "netif_", "__netif", "napi_",
                       "__napi", "gro_", "skb_", "__skb", "__alloc_skb",
                       "alloc_skb", "kfree_skb", "__kfree_skb",
                       "consume_skb", "ip_", "__ip", "ip6_", "udp",
                       "__udp", "inet_", "__inet", "dev_", "__dev_",
                       "sch_", "__qdisc", "qdisc_", "pfifo_", "neigh_",
                       "dst_", "fib_", "validate_xmit", "eth_", "arp_",
                       "sock_", "__sock", "sk_", "nf_", "ipt_",
                       "raw_local_deliver")),
    ("block layer, null_blk", ("blk_", "__blk", "bio_", "__bio",
                               "submit_bio", "__submit_bio", "bdev_",
                               "blkdev_", "__blkdev", "bvec_", "sbitmap_",
                               "__sbitmap", "disk_", "part_",
                               "iov_iter_get_pages", "dio_")),
    ("system calls, aio", ("aio_", "io_submit", "io_getevents",
                           "read_events", "do_io_getevents",
                           "lookup_ioctx", "__x64_sys_", "do_syscall",
                           "entry_SYSCALL", "syscall_", "io_uring",
                           "io_", "__io_", "vfs_", "ksys_",
                           "exit_to_user_mode", "fput", "fget",
                           "__fget")),
    ("scheduler, wake-ups", ("schedule", "__schedule", "preempt_schedule",
                             "finish_task_switch", "try_to_wake_up",
                             "ttwu_", "enqueue_", "dequeue_",
                             "pick_next", "update_curr", "update_load",
                             "load_balance", "newidle_balance",
                             "_nohz_idle_balance", "rebalance_domains",
                             "run_rebalance", "psi_", "__wake_up",
                             "wake_up_", "autoremove_wake", "complete",
                             "swake_up", "select_task_rq", "set_next_",
                             "put_prev_", "check_preempt", "resched_",
                             "kick_process", "native_smp_send_reschedule",
                             "tick_nohz_")),
    ("softirq, interrupt entry", ("handle_softirqs", "__do_softirq",
                                  "do_softirq", "__irq_exit", "irq_exit",
                                  "run_ksoftirqd", "tasklet_",
                                  "__tasklet", "irq_poll", "sysvec_",
                                  "__sysvec", "asm_", "common_interrupt",
                                  "handle_irq", "__handle_irq",
                                  "handle_edge_irq", "handle_fasteoi",
                                  "irq_work", "smpboot_thread_fn",
                                  "kthread", "process_one_work",
                                  "worker_thread", "ret_from_fork")),
)

# The halt of the idle loop: time no work took.
IDLE = {"native_safe_halt", "default_idle", "amd_e400_idle", "mwait_idle",
        "intel_idle", "acpi_idle_do_entry", "cpu_idle_poll", "poll_idle",
        "arch_cpu_idle", "default_idle_call"}

# Where the idle task works: an interrupt and the softirqs after it.
IRQ = ("asm_common_interrupt", "asm_sysvec_", "common_interrupt",
       "sysvec_", "__sysvec_", "irq_exit", "__irq_exit", "handle_softirqs",
       "__do_softirq")

# What bench.sh runs beside the IO, to read the counters and wait.
BENCH_TOOLS = {"bash", "cat", "sleep", "perf", "perf-exec", "mv", "cp",
               "rm", "mkdir", "awk", "sed", "tail", "head", "tr", "cut",
               "grep", "date", "ibv_devinfo", "rdma", "ip", "timeout",
               "ssh", "wc", "sort", "sync"}

FIO_USER = "fio, user space"
OTHER = "kernel, other"
LAYER_ORDER = ["ULP", "ib_core, rdma_cm", "Soft-RoCE", "network stack",
               "virtio-net", "block layer, null_blk", "system calls, aio",
               "scheduler, wake-ups", "softirq, interrupt entry", OTHER,
               FIO_USER, "user space, other", "bench tools"]


class Symbols:
    """A guest kernel's /proc/kallsyms: the module of an address."""

    def __init__(self, path):
        rows = []
        with open(path) as f:
            for line in f:
                w = line.split()
                if len(w) < 3 or w[1] in "aAuU":
                    continue
                try:
                    addr = int(w[0], 16)
                except ValueError:
                    continue
                if addr:
                    rows.append((addr, w[3].strip("[]") if len(w) > 3
                                 else "vmlinux"))
        rows.sort()
        self.addrs = [a for a, _ in rows]
        self.mods = [m for _, m in rows]
        self.lowest = self.addrs[0] if rows else 0

    def module(self, ip):
        """The module of a kernel address, "vmlinux" for the core kernel;
        None for one below every kernel symbol (user space)."""
        if ip < self.lowest:
            return None
        return self.mods[bisect.bisect_right(self.addrs, ip) - 1]


def prefix_layer(sym):
    for layer, prefixes in PREFIX_LAYERS:
        if sym.startswith(prefixes):
            return layer
    return None


def idle(comm, chain):
    """The idle loop's halt, or the idle task outside an interrupt: what
    /proc/stat counts as idle."""
    if chain and chain[0][1] in IDLE:
        return True
    return comm.startswith("swapper") and \
        not any(sym.startswith(IRQ) for _, sym in chain)


def classify(comm, chain, syms):
    """The layer of a sample of task COMM whose call chain is CHAIN,
    (ip, symbol) from the leaf up; None for idle time."""
    if idle(comm, chain):
        return None
    if comm in BENCH_TOOLS:
        return "bench tools"
    if not chain or syms.module(chain[0][0]) is None:
        return FIO_USER if comm == "fio" else "user space, other"
    for ip, sym in chain:
        mod = syms.module(ip)
        if mod is None:
            continue
        layer = (prefix_layer(sym) if mod == "vmlinux"
                 else MODULE_LAYER.get(mod))
        if layer:
            return layer
    return OTHER


def samples(data, kallsyms):
    """The samples of a perf.data: (comm, seconds, [(ip, symbol)...])."""
    out = subprocess.run(
        ["perf", "script", "-i", data, "--kallsyms", kallsyms,
         "-F", "comm,time,ip,sym"],
        capture_output=True, text=True, check=True).stdout
    return parse_script(out)


def parse_script(text):
    recs, cur = [], None
    for line in text.split("\n"):
        if not line.strip():
            if cur:
                recs.append(cur)
            cur = None
        elif not line[0].isspace():
            # "fio   123.456789: " (the comm may hold spaces)
            head, _, _ = line.rpartition(":")
            comm, _, t = head.rstrip().rpartition(" ")
            try:
                cur = (comm.strip(), float(t), [])
            except ValueError:
                cur = None
        elif cur is not None:
            w = line.split(None, 1)
            try:
                ip = int(w[0], 16)
            except (ValueError, IndexError):
                continue
            cur[2].append((ip, w[1].strip() if len(w) > 1 else "?"))
    if cur:
        recs.append(cur)
    return recs


def tally(recs, syms, t0, t1):
    """Samples between T0 and T1 s by layer, and by leaf function (the
    module's name added to one outside the core kernel)."""
    layers, leaves = collections.Counter(), collections.Counter()
    for comm, t, chain in recs:
        if not t0 <= t <= t1:
            continue
        layer = classify(comm, chain, syms)
        if layer is None:
            continue
        layers[layer] += 1
        if chain and layer != "bench tools":
            ip, sym = chain[0]
            mod = syms.module(ip)
            leaves[sym if mod in ("vmlinux", None) else
                   f"{sym} [{mod}]"] += 1
    return layers, leaves


def side_window(a, b, bs, iops):
    """(t0 s, t1 s, IOs) of a side's window between its two snaps, its IOs
    as report.py counts them (window_ios); None without IO."""
    a, b = report.parse_snap(a), report.parse_snap(b)
    if not a or not b or b[0] <= a[0]:
        return None
    _, ios = report.window_ios(a, b, iops, bs)
    return (a[0] / 1000, b[0] / 1000, ios) if ios > 0 else None


def fio_bs_iops(path):
    with open(path) as f:
        _, iops, bs = report.fio_totals(json.load(f)["jobs"][0])
    return bs, iops


def job_sides(folder, w):
    """Per side of the job of runs.txt's words W: (layers, leaves, IOs) of
    its window, or why there are none."""
    tag, snaps = w[5], {"client": w[7:9], "server": w[9:11]}
    try:
        bs, iops = fio_bs_iops(os.path.join(folder, "fio", tag + ".json"))
    except (OSError, ValueError, KeyError, IndexError) as e:
        return f"no fio figures ({e.__class__.__name__})"
    if not bs:
        return "fio did no IO"
    res = {}
    for side, (a, b) in snaps.items():
        base = os.path.join(folder, "perf", f"{tag}.{side}")
        win = side_window(a, b, bs, iops)
        if not win:
            return f"no counted window on the {side}"
        if not os.path.exists(base + ".data"):
            return f"no samples of the {side}"
        try:
            recs = samples(base + ".data", base + ".kallsyms")
        except (OSError, subprocess.CalledProcessError) as e:
            return f"perf script failed on the {side}'s samples: {e}"
        layers, leaves = tally(recs, Symbols(base + ".kallsyms"),
                               win[0], win[1])
        if not layers:
            return f"no samples in the {side}'s counted window"
        res[side] = (layers, leaves, win[2])
    return res


def us_per_io(n, ios):
    return n * 1e6 / HZ / ios


def job_table(label, cols):
    """COLS: [(config, side, (layers, leaves, IOs))...]."""
    heads = [f"{c} {report.SIDE_SHORT[s]}" for c, s, _ in cols]
    width = max([12] + [len(h) + 2 for h in heads])
    lines = [f"{label}: CPU us per IO by layer (perf samples)",
             "layer".ljust(26) + "".join(h.rjust(width) for h in heads)]
    seen = [x for x in LAYER_ORDER
            if any(t[0][x] for _, _, t in cols)]
    for layer in seen + ["all"]:
        vals = [us_per_io(sum(t[0].values()) if layer == "all"
                          else t[0][layer], t[2]) for _, _, t in cols]
        lines.append(layer.ljust(26) +
                     "".join(f"{v:{width}.1f}" for v in vals))
    leaves = collections.Counter()
    for _, _, t in cols:
        for k, v in t[1].items():
            leaves[k] += us_per_io(v, t[2])
    lines += ["", "leaf functions that cost the most".ljust(26) +
              "".join(h.rjust(width) for h in heads)]
    for k, _ in leaves.most_common(12):
        vals = [us_per_io(t[1][k], t[2]) for _, _, t in cols]
        lines.append(k[:26].ljust(26) +
                     "".join(f"{v:{width}.1f}" for v in vals))
    return lines


def cpu_layers(folder):
    jobs = collections.OrderedDict()
    notes = []
    with open(os.path.join(folder, "runs.txt")) as f:
        for line in f:
            w = line.split()
            if len(w) != 11 or w[0] != "job" or w[4] != "client":
                continue
            sides = job_sides(folder, w)
            if isinstance(sides, str):
                notes.append(f"round {w[1]} {w[2]} {w[3]}: {sides}")
                continue
            jobs.setdefault(w[3], []).append((w[2], sides))
    out = []
    for spec, runs in jobs.items():
        # The rounds of a configuration add up: samples over IOs.
        merged = collections.OrderedDict()
        for cfg, sides in runs:
            for side in ("client", "server"):
                layers, leaves, ios = sides[side]
                m = merged.setdefault((cfg, side), [collections.Counter(),
                                                    collections.Counter(), 0])
                m[0].update(layers)
                m[1].update(leaves)
                m[2] += ios
        cols = [(c, s, tuple(v)) for (c, s), v in merged.items()]
        out += job_table(report.job_label(spec), cols) + [""]
    out += notes
    if not jobs:
        out.append("no job with samples of both sides")
    print("\n".join(out))
    return 0 if jobs else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(cpu_layers(sys.argv[1]))
