#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The figures of `make bench` (tools/testing/bench/bench.sh).

  report.py report DIR   the rounds of DIR/runs.txt and the fio output
                         under DIR/fio aggregated (mean, min, max), printed
                         as a table with the ratios to upstream RNBD,
                         NVMe-oF and the local null_blk and the issue's
                         targets, and written as DIR/report.txt,
                         DIR/report.json, DIR/results.jsonl (a record per
                         job and round) and DIR/bench.png (gnuplot)

CPU per IO is the busy CPU time of a side (/proc/stat: all but idle and
iowait, every CPU) in the counted part of the run, divided by the IOs its
own disk did in that time (the sectors the client's /dev/rnbdN or NVMe
namespace, the server's null_blk, read and wrote, over the job's block
size; where the disk keeps no count, the IOPS fio counted):
microseconds of CPU per IO.  The counts per IO are taken the same way,
for each side: the packets its RDMA ports sent and received, the SENDs
they completed and the RECVs they received (Soft-RoCE's hw_counters),
its interrupts, softirqs and context switches (/proc/stat), its runs of
the IRQ_POLL softirq (/proc/softirqs) and our RTRS's work requests,
completions and, on the server, polls (its stats/wr_counts and
wc_completion).  Each side's counts are all of that
host's, the bench's traffic and what else ran.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

# The configurations the ratios are taken to.
LOCAL = "local-null"
NVMEOF = "nvmeof"
UPSTREAM = "upstream-1p"

# The targets: (what, job, config, reference, metric, test, bound).
# A ratio of means; "ge" is met at or above the bound, "le" at or below.
RR32 = "randread:4k:32:1:libaio"
RR1 = "randread:4k:1:1:libaio"
RW32 = "randwrite:4k:32:1:libaio"
# The targets of the issue that asked for make bench.
TARGETS = [
    ("4k randread qd32 IOPS, ours vs upstream", RR32, "ours-1p", UPSTREAM,
     "iops", "ge", 1.10),
    ("4k randread qd32 IOPS, ours vs NVMe-oF", RR32, "ours-1p", NVMEOF,
     "iops", "ge", 1.10),
    ("4k randread qd1 mean latency, ours vs upstream", RR1, "ours-1p",
     UPSTREAM, "lat_mean_us", "le", 1.00),
    ("4k randread qd1 mean latency, ours vs NVMe-oF", RR1, "ours-1p", NVMEOF,
     "lat_mean_us", "le", 1.00),
    ("4k randread qd32 IOPS, two paths (min-inflight) vs one", RR32,
     "ours-2p-mi", "ours-1p", "iops", "ge", 1.30),
    ("4k randread qd32 IOPS, two paths (round-robin) vs one", RR32,
     "ours-2p-rr", "ours-1p", "iops", "ge", 1.30),
    ("4k randread qd32 IOPS, always_invalidate=Y vs N", RR32,
     "ours-1p", "ours-1p-noinval", "iops", "ge", 0.90),
    ("4k randwrite qd32 IOPS, always_invalidate=Y vs N", RW32,
     "ours-1p", "ours-1p-noinval", "iops", "ge", 0.90),
    ("4k randread qd1 mean latency, always_invalidate=Y vs N", RR1,
     "ours-1p", "ours-1p-noinval", "lat_mean_us", "le", 1.10),
]

# A side as the report's names of its figures begin.
SIDE_SHORT = {"client": "clt", "server": "srv"}

# What bench.sh's counts_snap reads besides the CPU, as the report names
# them; a side's count per IO is "clt_NAME_per_io" or "srv_NAME_per_io".
COUNTS = [("pkts_tx", "pkts out"), ("pkts_rx", "pkts in"),
          ("sends", "SENDs"), ("recvs", "RECVs"), ("wrs", "WRs"),
          ("wcs", "CQEs"), ("irqpoll", "IRQ_POLL"), ("polls", "polls"),
          ("intr", "intr"), ("softirq", "softirq"), ("ctxt", "ctxt")]
# The totals per IO the chart and the ratios show, each a sum of counts
# of the sides: the packets on the wire (the client's, out and in); the
# messages, each counted once where it took a RECV (a SEND, or an RDMA
# WRITE with immediate); our RTRS's work requests posted and completions
# reaped (its stats/wr_counts: ours only); interrupts, softirqs, context
# switches of both.
BOTH = ("clt", "srv")
TOTALS = [("pkts", [("clt", "pkts_tx"), ("clt", "pkts_rx")]),
          ("msgs", [(s, "recvs") for s in BOTH]),
          ("wrs", [(s, "wrs") for s in BOTH]),
          ("wcs", [(s, "wcs") for s in BOTH]),
          ("intr", [(s, "intr") for s in BOTH]),
          ("softirq", [(s, "softirq") for s in BOTH]),
          ("ctxt", [(s, "ctxt") for s in BOTH])]

METRICS = ["iops", "mib_s", "lat_mean_us", "lat_p99_us",
           "clt_cpu_us_per_io", "srv_cpu_us_per_io",
           "clt_cpu_busy", "srv_cpu_busy"] + \
    [f"{s}_{c}_per_io" for s in BOTH for c, _ in COUNTS] + \
    [f"{t}_per_io" for t, _ in TOTALS]


# What a profile counts (bench.sh's PROFILE_FUNCS), in the order of the
# tables; of two names for one thing, each kernel has one.
PROFILE_ROWS = [
    ("rxe_post_send", "post_send calls"),
    ("rxe_post_recv", "post_recv calls"),
    ("rxe_map_mr_sg", "MR mappings"),
    ("rxe_poll_cq", "poll_cq calls"),
    ("rxe_req_notify_cq", "CQ rearms"),
    ("ib_cq_completion_softirq", "CQ events, softirq CQ"),
    ("ib_cq_completion_workqueue", "CQ events, worker CQ"),
    ("ib_poll_handler", "CQ polls in softirq"),
    ("ib_cq_poll_work", "CQ polls in a worker"),
    ("ib_process_cq_direct", "CQ polls, direct"),
    ("rxe_cq_post", "completions made"),
    ("rxe_do_task", "rxe task runs"),
    ("do_task", "rxe task runs"),
    ("rxe_requester", "rxe requester steps"),
    ("rxe_completer", "rxe completer steps"),
    ("rxe_responder", "rxe responder steps"),
    ("rxe_receiver", "rxe responder steps"),
    ("rxe_xmit_packet", "packets sent"),
    ("rxe_rcv", "packets received"),
    ("submit_bio_noacct", "bios submitted"),
    ("blk_mq_complete_request", "blk-mq completions"),
    ("bio_endio", "bios ended"),
    ("try_to_wake_up", "wake-ups"),
]
# The contexts of profile_stop, as the tables abbreviate them.
PROFILE_CTX = [("irq", "i"), ("softirq", "s"), ("kworker", "w"),
               ("task", "t")]


def read_profile(path):
    """A line of bench.sh's profile_stop, "ios=N lost=N FUNC@CTX=N...", as
    {"ios": N, "lost": N, "calls": {"FUNC@CTX": N}}; None if there is
    none."""
    try:
        with open(path) as f:
            words = f.read().split()
    except OSError:
        return None
    prof = {"ios": None, "lost": 0, "calls": {}}
    for kv in words:
        k, _, v = kv.partition("=")
        if not v.isdigit():
            continue
        if k in ("ios", "lost"):
            prof[k] = int(v)
        elif "@" in k:
            prof["calls"][k] = int(v)
    return prof if prof["ios"] is not None else None


def parse_snap(word):
    """bench.sh's counts_snap, "MS,TICKS,NAME=N,...", as (ms, ticks,
    {name: n}); None for "-" or a word that is not one."""
    f = word.split(",")
    if len(f) < 2 or not all(x.isdigit() for x in f[:2]):
        return None
    counts = {}
    for kv in f[2:]:
        k, _, v = kv.partition("=")
        if v.isdigit():
            counts[k] = int(v)
    return int(f[0]), int(f[1]), counts


def window_ios(a, b, iops, bs):
    """Between two parsed snaps of a side, in order: the window's seconds
    and the IOs of BS bytes its own disk read or wrote in it, where they
    have its sectors: fio's IOPS are of the whole job, and the rate of IOs
    in the snaps' window, a part of it, is not theirs under TCG.  Sectors,
    not the disk's IOs: the server's disk splits an IO larger than its
    limits.  Else fio's IOPS over the window's time, as for a disk that
    counts nothing (brd).  A disk that counts but counted no sector in the
    window did no IO there (IO stalled): 0 IOs, rather than IOs that fio
    counted elsewhere in its job."""
    secs = (b[0] - a[0]) / 1000
    if "sectors" in a[2] and "sectors" in b[2] and b[2]["sectors"] > 0:
        sectors = b[2]["sectors"] - a[2]["sectors"]
        return secs, sectors * 512 / bs if bs else 0
    return secs, iops * secs


def side_per_io(a, b, hz, iops, bs):
    """Between two snaps of a side: the CPUs it kept busy, and its CPU
    microseconds and each count per IO (window_ios); None where the snaps
    are missing or out of order, nothing per IO where its disk did no IO
    in the window."""
    a, b = parse_snap(a), parse_snap(b)
    if not a or not b or b[0] <= a[0]:
        return None
    secs, ios = window_ios(a, b, iops, bs)
    busy = (b[1] - a[1]) / hz
    delta = {k: b[2][k] - a[2][k] for k in a[2]
             if k in b[2] and k != "sectors"}
    if ios <= 0:
        return busy / secs, None, {}
    return busy / secs, busy / ios * 1e6, {k: v / ios
                                           for k, v in delta.items()}


def fio_totals(job):
    """A job of fio's JSON output: its IOs, IOPS and block size, its reads
    and writes together."""
    ios = sum(job[d]["total_ios"] for d in ("read", "write"))
    iops = sum(job[d]["iops"] for d in ("read", "write"))
    by = sum(job[d]["io_bytes"] for d in ("read", "write"))
    return ios, iops, (by / ios if ios else 0)


def fio_figures(path, fio_rc, side, snaps, peer_snaps, hz):
    """The record of one fio job, or why there is none: its JSON output
    (and next to it, .err, what it wrote to stderr), the two counts_snap
    of its side and, for the client, the server's."""
    try:
        with open(path + ".json") as f:
            job = json.load(f)["jobs"][0]
    except (OSError, ValueError, KeyError, IndexError) as e:
        err = ""
        try:
            with open(path + ".err") as f:
                err = " ".join(f.read().split()[-30:])
        except OSError:
            pass
        return {"error": f"fio exited with {fio_rc}, no figures "
                f"({e.__class__.__name__}): {err}"}
    ios, iops, bs = fio_totals(job)
    bw = sum(job[d]["bw_bytes"] for d in ("read", "write"))
    # A job reads or writes: the latency is that direction's.
    d = max(("read", "write"), key=lambda k: job[k]["total_ios"])
    lat = job[d]["lat_ns"]
    p99 = lat.get("percentile", {}).get("99.000000")
    rec = {
        "iops": iops,
        "mib_s": bw / 2**20,
        "lat_mean_us": lat["mean"] / 1e3,
        "lat_p99_us": p99 / 1e3 if p99 is not None else None,
        "ios": ios,
        "fio_error": job.get("error", 0) or int(fio_rc),
    }
    prof = {s: read_profile(f"{path}{ext}")
            for s, ext in (("clt", ".prof"), ("srv", ".srv.prof"))}
    if any(prof.values()):
        rec["profile"] = prof
    sides = {"client": None, "server": None}
    sides[side] = side_per_io(*snaps, hz, iops, bs)
    if side == "client":
        sides["server"] = side_per_io(*peer_snaps, hz, iops, bs)
    for side, r in sides.items():
        short = SIDE_SHORT[side]
        busy, cpu_us, per_io = r if r else (None, None, {})
        rec[f"{short}_cpu_busy"] = busy
        rec[f"{short}_cpu_us_per_io"] = cpu_us
        for c, _ in COUNTS:
            rec[f"{short}_{c}_per_io"] = per_io.get(c)
        if r and cpu_us is None and ios:
            rec.setdefault("stalled", []).append(side)
    # A total with a count missing is missing.
    for t, parts in TOTALS:
        vals = [rec[f"{sd}_{c}_per_io"] for sd, c in parts]
        rec[f"{t}_per_io"] = (sum(vals) if None not in vals else None)
    if not ios:
        rec["error"] = "fio did no IO"
    elif rec["fio_error"]:
        rec["error"] = f"fio error {rec['fio_error']}"
    return rec


def job_label(spec):
    rw, bs, qd, nj, eng = spec.split(":")
    return f"{rw} {bs} qd{qd}" + (f" x{nj} jobs" if nj != "1" else "") + \
        f" {eng}"


# ---- on the host ----

def fmt(v, digits=None):
    if v is None:
        return "-"
    if digits is None:
        digits = 0 if abs(v) >= 100 else 1 if abs(v) >= 10 else 2
    return f"{v:.{digits}f}"


def stats(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"mean": sum(values) / len(values), "min": min(values),
            "max": max(values), "n": len(values)}


def read_runs(folder, hz):
    """The records of runs.txt, a line per job the client ran:
    "job ROUND CONFIG SPEC SIDE TAG RC A B PA PB", counts_snap words (the
    peer's "-" on the server), or "error ROUND CONFIG SPEC WHY"."""
    recs = []
    with open(os.path.join(folder, "runs.txt")) as f:
        for line in f:
            w = line.split()
            if len(w) < 4:
                continue
            if w[0] == "job" and len(w) == 11 and w[6].isdigit():
                rec = fio_figures(os.path.join(folder, "fio", w[5]), w[6],
                                  w[4], w[7:9], w[9:11], hz)
            elif w[0] == "error":
                rec = {"error": " ".join(w[4:])}
            else:
                rec = {"error": f"bad line in runs.txt: {line.strip()}"}
            rec.update({"round": int(w[1]), "config": w[2], "job": w[3]})
            recs.append(rec)
    return recs


def load(folder):
    facts = {}
    try:
        with open(os.path.join(folder, "facts.txt")) as f:
            for line in f:
                k, _, v = line.rstrip("\n").partition("=")
                if k:
                    facts[k] = v
    except OSError:
        pass
    recs = read_runs(folder, int(facts.get("clk_tck") or 100))
    with open(os.path.join(folder, "results.jsonl"), "w") as f:
        for rec in recs:
            f.write(json.dumps(rec, sort_keys=True) + "\n")
    return recs, facts


def ordered(recs, key, listed):
    seen = [x for x in listed if any(r[key] == x for r in recs)]
    for r in recs:
        if r[key] not in seen:
            seen.append(r[key])
    return seen


def aggregate(recs, facts):
    jobs = ordered(recs, "job", facts.get("jobs", "").split())
    configs = ordered(recs, "config", facts.get("configs", "").split())
    cells = {}
    for job in jobs:
        for cfg in configs:
            mine = [r for r in recs if r["job"] == job and r["config"] == cfg]
            if not mine:
                continue
            ok = [r for r in mine if "error" not in r]
            cell = {"job": job, "config": cfg, "rounds": len(mine),
                    "rounds_measured": len(ok),
                    "errors": sorted({r["error"] for r in mine
                                      if "error" in r})}
            for m in METRICS:
                cell[m] = stats([r.get(m) for r in ok])
            cell["per_round"] = {r["round"]: {m: r.get(m) for m in METRICS}
                                 for r in ok}
            cell["stalled"] = {r["round"]: r["stalled"] for r in ok
                               if "stalled" in r}
            profs = [r["profile"] for r in ok if "profile" in r]
            if profs:
                cell["profile"] = profs[0]
            cells[(job, cfg)] = cell
    return jobs, configs, cells


def counterpart(cfg, configs):
    """The upstream configuration ours is set against."""
    if cfg.startswith("ours-"):
        twin = "upstream-" + cfg[len("ours-"):]
        if twin in configs:
            return twin
    return UPSTREAM


def ratio(cells, job, cfg, ref, metric):
    """The ratio of means, and the min and max of the rounds' ratios."""
    a, b = cells.get((job, cfg)), cells.get((job, ref))
    if not a or not b or not a[metric] or not b[metric] or \
            not b[metric]["mean"]:
        return None
    out = {"mean": a[metric]["mean"] / b[metric]["mean"]}
    per = [a["per_round"][r][metric] / b["per_round"][r][metric]
           for r in a["per_round"] if r in b["per_round"]
           and a["per_round"][r][metric] is not None
           and b["per_round"][r][metric]]
    if per:
        out.update({"min": min(per), "max": max(per), "n": len(per)})
    return out


def add_ratios(jobs, configs, cells):
    for (job, cfg), cell in cells.items():
        refs = {"upstream": counterpart(cfg, configs), "nvmeof": NVMEOF,
                "local": LOCAL}
        cell["ratios"] = {
            name: {"to": ref, **{m: ratio(cells, job, cfg, ref, m)
                                 for m in METRICS}}
            for name, ref in refs.items()}


def spread(s):
    if not s:
        return "-"
    if s["n"] == 1:
        return fmt(s["mean"])
    return f"{fmt(s['mean'])} ({fmt(s['min'])}-{fmt(s['max'])})"


def mean(s):
    return fmt(s["mean"]) if s else "-"


def rfmt(r):
    if not r:
        return "-"
    v = r["mean"]
    return f"{v:.3f}" if v < 0.1 else f"{v:.2f}" if v < 10 else \
        f"{v:.1f}" if v < 100 else f"{v:.0f}"


def table(jobs, configs, cells):
    head = (f"{'configuration':<20} {'IOPS (min-max)':>22} {'MiB/s':>8} "
            f"{'lat us (min-max)':>22} {'p99 us':>8} {'CPU us/IO clt':>13} "
            f"{'srv':>6} {'x up':>5} {'x nvme':>6} {'x local':>7}")
    lines = []
    for job in jobs:
        lines += ["", job_label(job), head]
        for cfg in configs:
            c = cells.get((job, cfg))
            if not c:
                continue
            if not c["rounds_measured"]:
                why = "; ".join(c["errors"])
                lines.append(f"{cfg:<20} not measured: "
                             + (why if len(why) < 110 else why[:107] + "..."))
                continue
            r = c["ratios"]
            lines.append(
                f"{cfg:<20} {spread(c['iops']):>22} {mean(c['mib_s']):>8} "
                f"{spread(c['lat_mean_us']):>22} {mean(c['lat_p99_us']):>8} "
                f"{mean(c['clt_cpu_us_per_io']):>13} "
                f"{mean(c['srv_cpu_us_per_io']):>6} "
                f"{rfmt(r['upstream']['iops']):>5} "
                f"{rfmt(r['nvmeof']['iops']):>6} {rfmt(r['local']['iops']):>7}"
                + (f"  ({c['rounds_measured']}/{c['rounds']} rounds)"
                   if c["rounds_measured"] < c["rounds"] else ""))
        lines += stall_notes(cells.get((job, cfg)) for cfg in configs)
    return lines


def pair(c, name):
    """A count per IO of both sides, as "client/server"."""
    return f"{mean(c[f'clt_{name}_per_io'])}/{mean(c[f'srv_{name}_per_io'])}"


def polls(c):
    """The CQ polls per IO, as "client/server": the client's runs of the
    IRQ_POLL softirq, whichever driver's CQs; on the server the runs of
    the softirq that polled our RTRS's CQs (its wc_completion), ours
    only."""
    return f"{mean(c['clt_irqpoll_per_io'])}/{mean(c['srv_polls_per_io'])}"


def counts_table(jobs, configs, cells):
    """Per job and configuration, the counts per IO (means of the
    rounds), and the totals' ratios to NVMe-oF's."""
    head = (f"{'configuration':<20} {'pkts out/in':>13} {'msgs':>6} "
            f"{'WRs clt/srv':>13} {'CQEs clt/srv':>13} "
            f"{'polls clt/srv':>13} "
            f"{'intr clt/srv':>14} {'softirq clt/srv':>16} "
            f"{'ctxt clt/srv':>14}   x nvme: {'pkts':>5} {'msgs':>5} "
            f"{'intr':>5} {'ctxt':>5}")
    lines = []
    for job in jobs:
        lines += ["", f"{job_label(job)}: counts per IO", head]
        for cfg in configs:
            c = cells.get((job, cfg))
            if not c or cfg.startswith("local-"):
                continue
            if not c["rounds_measured"]:
                lines.append(f"{cfg:<20} not measured")
                continue
            r = c["ratios"]["nvmeof"]
            pkts = (f"{mean(c['clt_pkts_tx_per_io'])}/"
                    f"{mean(c['clt_pkts_rx_per_io'])}")
            lines.append(
                f"{cfg:<20} {pkts:>13} "
                f"{mean(c['msgs_per_io']):>6} {pair(c, 'wrs'):>13} "
                f"{pair(c, 'wcs'):>13} {polls(c):>13} "
                f"{pair(c, 'intr'):>14} "
                f"{pair(c, 'softirq'):>16} {pair(c, 'ctxt'):>14}   "
                f"{'':>7} {rfmt(r['pkts_per_io']):>5} "
                f"{rfmt(r['msgs_per_io']):>5} {rfmt(r['intr_per_io']):>5} "
                f"{rfmt(r['ctxt_per_io']):>5}")
    return lines


def stall_notes(cells):
    """A line for each round whose counted window a side's disk did no
    IO in: fio's figures of that round stand, its CPU and counts per IO
    are left out of the means."""
    notes = []
    for c in cells:
        for rnd, sides in sorted((c or {}).get("stalled", {}).items()):
            disks = " and ".join(f"{s}'s" for s in sides) + \
                (" disks" if len(sides) > 1 else " disk")
            notes.append(f"  {c['config']}, round {rnd}: the {disks} did no "
                         "IO in the counted window (IO stalled; fio's "
                         "latency counts the stall): its CPU and counts "
                         "per IO are left out")
    return notes


def profile_cell(prof, func):
    """FUNC's runs per IO in a side's profile, "total (by context)"; "-"
    for a side not profiled, "" for a function that did not run."""
    if not prof or not prof["ios"]:
        return "-"
    by = [(a, prof["calls"].get(f"{func}@{ctx}", 0) / prof["ios"])
          for ctx, a in PROFILE_CTX]
    total = sum(n for _, n in by)
    if not total:
        return ""
    # A context under one run in 200 IOs is left out of the split.
    parts = [(a, n) for a, n in by if n >= 0.005]
    if len(parts) == 1:
        return f"{total:.2f} {parts[0][0]}"
    return f"{total:.2f} (" + " ".join(f"{a}{n:.2f}" for a, n in parts) + ")"


def profile_tables(jobs, configs, cells):
    """Per job and side, what ran per IO in each profiled configuration;
    nothing where none was profiled."""
    lines = []
    for job in jobs:
        cfgs = [c for c in configs
                if (cells.get((job, c)) or {}).get("profile")]
        if not cfgs:
            continue
        for side, name in (("clt", "client"), ("srv", "server")):
            profs = [cells[(job, c)]["profile"].get(side) for c in cfgs]
            ios = ", ".join(f"{c} {p['ios'] if p else '-'}"
                            for c, p in zip(cfgs, profs))
            lines += ["", f"{job_label(job)}: profile per IO, {name} "
                      f"(IOs traced: {ios})",
                      f"{'':<24}" + "".join(f"{c:>31}" for c in cfgs)]
            for func, label in PROFILE_ROWS:
                row = [profile_cell(p, func) for p in profs]
                if not any(x not in ("", "-") for x in row):
                    continue
                lines.append(f"{label:<24}" + "".join(f"{x:>31}"
                                                      for x in row))
            lost = [f"{c}: {p['lost']}" for c, p in zip(cfgs, profs)
                    if p and p["lost"]]
            if lost:
                lines.append(f"  the trace lost entries ({', '.join(lost)}): "
                             "those counts are too low")
    if lines:
        lines += ["", "profile: how many times each function ran per IO in "
                  "the job's traced seconds (bench.sh's PROFILE_FUNCS), and "
                  "in which contexts: i hardirq, s softirq, w kworker, t "
                  "another task (fio, a kernel thread).  Each side divides "
                  "by the IOs of its own disk in its own window."]
    return lines


def targets(cells):
    out = []
    for what, job, cfg, ref, metric, test, bound in TARGETS:
        r = ratio(cells, job, cfg, ref, metric)
        t = {"target": what, "job": job, "config": cfg, "reference": ref,
             "metric": metric, "bound": f"{'>=' if test == 'ge' else '<='} "
             f"{bound:.2f}", "ratio": r}
        if r is None:
            t["status"] = "not measured"
        else:
            good = r["mean"] >= bound if test == "ge" else r["mean"] <= bound
            t["status"] = "met" if good else "not met"
        out.append(t)
    return out


def busy(cells, job, cfg):
    """How many CPUs each side kept busy in a job, as "client/server"."""
    c = cells.get((job, cfg)) or {}
    return f"{mean(c.get('clt_cpu_busy'))}/{mean(c.get('srv_cpu_busy'))}"


def work_per_io(cells, job, cfg):
    """What a configuration's IO cost in a job, the counts a target's
    ratio is to be read with: messages, then client/server work requests,
    completions, CQ polls and context switches per IO."""
    c = cells.get((job, cfg))
    if not c or not c["rounds_measured"]:
        return "not measured"
    return (f"msgs {mean(c['msgs_per_io'])}, WRs {pair(c, 'wrs')}, "
            f"CQEs {pair(c, 'wcs')}, polls {polls(c)}, "
            f"ctxt {pair(c, 'ctxt')}")


def target_lines(tgts, cells, facts):
    lines = ["", "Targets (ratio of the means; the rounds' own ratios in "
             "brackets; then the CPUs busy, client/server, of "
             f"{facts.get('client.cpus', '?')}/"
             f"{facts.get('server.cpus', '?')} vCPUs on "
             f"{facts.get('host.cpus', '?')} host CPUs, and each "
             "configuration's counts per IO, client/server, as in the "
             "tables of counts):"]
    for t in tgts:
        r = t["ratio"]
        got = "-" if r is None else f"{r['mean']:.2f}" + (
            f" ({r['min']:.2f}-{r['max']:.2f})" if "min" in r else "")
        lines.append(f"  {t['target']:<56} {got:>18}  want {t['bound']}: "
                     f"{t['status']}")
        lines.append(f"    CPUs busy: {t['config']} "
                     f"{busy(cells, t['job'], t['config'])}, "
                     f"{t['reference']} "
                     f"{busy(cells, t['job'], t['reference'])}")
        for cfg in (t["config"], t["reference"]):
            lines.append(f"    {cfg}: "
                         f"{work_per_io(cells, t['job'], cfg)}")
    return lines


def setup_lines(facts):
    lines = ["Setup:"]
    for k in sorted(facts):
        if k not in ("jobs", "configs"):
            lines.append(f"  {k}: {facts[k]}")
    lines.append("  fio jobs (rw:bs:iodepth:numjobs:ioengine, direct=1, "
                 "time_based, ramp_time=warm-up):")
    lines += [f"    {j}" for j in facts.get("jobs", "").split()]
    lines.append(f"  configurations: {facts.get('configs', '')}")
    return lines


def rdma_mtu(facts):
    """The RDMA MTU of the paths, as the facts of both sides give it."""
    mtus = sorted({v.split("active_mtu ")[1].split()[0]
                   for k, v in facts.items()
                   if k.endswith(".rdma") and "active_mtu " in v},
                  key=lambda m: int(m) if m.isdigit() else 0)
    return " and ".join(mtus) if mtus else "unknown"


# The chart's titles of TOTALS, in their order.
TOTAL_TITLES = ["packets", "messages", "work requests", "completions",
                "interrupts", "softirqs", "context switches"]


def counts_plot(data, index, cells):
    """gnuplot's plot of the totals per IO of one job's configurations
    (columns 5 on of chart.dat), leaving out a total none of them has
    (work requests and completions without ours): gnuplot refuses a
    histogram without a point."""
    cols = [(5 + n, title) for n, ((t, _), title)
            in enumerate(zip(TOTALS, TOTAL_TITLES))
            if any(c.get(f"{t}_per_io") for c in cells)]
    if not cols:
        return ("set label 'no counts' at graph 0.5, graph 0.5 center; "
                "plot [0:1] [0:1] NaN notitle; unset label")
    # Each total keeps its colour, whichever are left out.
    parts = [f"'' index {index} using {col} title '{title}' lt {col - 4}"
             for col, title in cols]
    parts[0] = (f"'{data}' index {index} using {cols[0][0]}:xtic(1) "
                f"title '{cols[0][1]}' lt {cols[0][0] - 4}")
    return "plot " + ", ".join(parts)


def chart(folder, jobs, configs, cells, facts):
    """A row per job: the RDMA configurations' IOPS on a linear scale
    (mean, min-max bars; the local null_blk's in the title), and their
    counts per IO; a configuration not measured is marked so."""
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        return "no gnuplot: no chart (apt-get install gnuplot-nox)"
    rdma = [c for c in configs if not c.startswith("local-")]
    if not rdma:
        return "no RDMA configuration: no chart"
    data = os.path.join(folder, "chart.dat")
    png = os.path.join(folder, "bench.png")
    with open(data, "w") as f:
        for job in jobs:
            f.write(f"# {job_label(job)}\n")
            for cfg in rdma:
                c = cells.get((job, cfg)) or {}
                s = c.get("iops")
                f.write(f'"{cfg}" ' + (f'{s["mean"]} {s["min"]} {s["max"]}'
                                       if s else "NaN NaN NaN"))
                for t, _ in TOTALS:
                    v = c.get(f"{t}_per_io")
                    f.write(f" {v['mean']}" if v else " NaN")
                f.write("\n")
            f.write("\n\n")
    script = [
        f"set terminal pngcairo noenhanced size 1200,{400 * len(jobs)} "
        "font 'sans,9'",
        f"set output '{png}'",
        f"set multiplot layout {len(jobs)},2 title 'make bench: mean of "
        "the rounds (bars: min-max), RDMA MTU "
        f"{rdma_mtu(facts)}'",
        "set style fill solid 0.6 border -1",
        "set xtics rotate by -40 left nomirror",
        "set grid ytics", "set yrange [0:*]", "set bmargin 7",
    ]
    for i, job in enumerate(jobs):
        local = (cells.get((job, LOCAL)) or {}).get("iops")
        note = (f", local null_blk {local['mean']:.0f}" if local else "")
        missing = [n for n, cfg in enumerate(rdma)
                   if not (cells.get((job, cfg)) or {}).get("iops")]
        script += ["unset label"]
        script += [f"set label 'not measured' at {n},0 rotate by 90 "
                   "left offset 0,0.5 front" for n in missing]
        script += [
            "set style data histograms",
            "set style histogram errorbars gap 1 lw 1", "unset key",
            "set offsets 0, 0, 0, 0",
            f"set title '{job_label(job)}: IOPS{note}'",
            f"plot '{data}' index {i} using 2:3:4:xtic(1) "
            "linecolor rgb '#4477aa'",
            "set style histogram clustered gap 1",
            # Head room for the key, above the bars.
            "set offsets 0, 0, graph 0.2, 0",
            "set key inside top center horizontal maxrows 1",
            f"set title '{job_label(job)}: per IO (both sides)'",
            counts_plot(data, i, [(cells.get((job, cfg)) or {})
                                  for cfg in rdma])]
    script.append("unset multiplot")
    res = subprocess.run([gnuplot], input="\n".join(script), text=True,
                         capture_output=True)
    if res.returncode:
        return f"gnuplot failed: {res.stderr.strip()}"
    return None


def cmd_report(a):
    recs, facts = load(a.dir)
    if not recs:
        print("no results", file=sys.stderr)
        return 1
    jobs, configs, cells = aggregate(recs, facts)
    add_ratios(jobs, configs, cells)
    tgts = targets(cells)
    rounds = sorted({r["round"] for r in recs})
    lines = [f"make bench: {len(rounds)} round(s), configurations in turn "
             "each round; figures: mean (min-max) of the rounds; RDMA MTU "
             f"{rdma_mtu(facts)}"]
    lines += setup_lines(facts)
    lines += table(jobs, configs, cells)
    lines += ["", "x up, x nvme, x local: IOPS over that of upstream RNBD "
              "(the same paths and policy, else upstream-1p), of NVMe-oF and "
              "of the server's null_blk used locally.  CPU us/IO: busy CPU "
              "time of the client and server guests (/proc/stat) per IO."]
    lines += counts_table(jobs, configs, cells)
    lines += ["", "pkts out/in: the packets the client's RDMA ports sent and "
              "received per IO; msgs: the messages that took a RECV (SENDs, "
              "RDMA WRITEs with immediate), on both sides; WRs, CQEs: the "
              "work requests our RTRS posted and the completions it reaped "
              "(stats/wr_counts; the others have no such count); polls: the "
              "polls of the CQs, on the client the runs of the IRQ_POLL "
              "softirq (/proc/softirqs; whichever driver's CQs), on the "
              "server the runs of the softirq that polled our RTRS's CQs "
              "(stats/wc_completion; the others poll theirs in workers, "
              "uncounted); intr, softirq, "
              "ctxt: interrupts, softirqs and context switches of each side "
              "(/proc/stat); x nvme: the totals of both sides over NVMe-oF's.  "
              "Each side divides by the IOs of its own disk in its own "
              "window (the sectors over the block size)."]
    lines += profile_tables(jobs, configs, cells)
    lines += target_lines(tgts, cells, facts)
    text = "\n".join(lines) + "\n"
    print(text, end="")
    with open(os.path.join(a.dir, "report.txt"), "w") as f:
        f.write(text)
    out = {"facts": facts, "rounds": rounds,
           "results": [dict(c, per_round={str(k): v for k, v in
                                          c["per_round"].items()})
                       for c in cells.values()],
           "targets": tgts}
    with open(os.path.join(a.dir, "report.json"), "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
    why = chart(a.dir, jobs, configs, cells, facts)
    print(f"chart: {why}" if why else
          f"chart: {os.path.join(a.dir, 'bench.png')}")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    o = sub.add_parser("report")
    o.add_argument("dir")
    a = p.parse_args()
    return cmd_report(a)


if __name__ == "__main__":
    sys.exit(main())
