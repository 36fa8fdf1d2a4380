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
iowait, every CPU), per second of the counted part of the run, divided by
the IOs per second fio counted: microseconds of CPU per IO.
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
]

METRICS = ["iops", "mib_s", "lat_mean_us", "lat_p99_us",
           "clt_cpu_us_per_io", "srv_cpu_us_per_io",
           "clt_cpu_busy", "srv_cpu_busy"]


def busy_rate(reading, hz):
    """CPU seconds per second between two readings, "MS TICKS MS TICKS"."""
    if len(reading) != 4 or not all(x.isdigit() for x in reading):
        return None
    t0, b0, t1, b1 = (int(x) for x in reading)
    if t1 <= t0:
        return None
    return (b1 - b0) / hz / ((t1 - t0) / 1000)


def fio_figures(path, fio_rc, side, cpu, peer_cpu, hz):
    """The record of one fio job, or why there is none: its JSON output
    (and next to it, .err, what it wrote to stderr), the CPU readings of
    its side and, for the client, the server's."""
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
    ios = sum(job[d]["total_ios"] for d in ("read", "write"))
    iops = sum(job[d]["iops"] for d in ("read", "write"))
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
    rates = {"client": None, "server": None}
    rates[side] = busy_rate(cpu, hz)
    if side == "client":
        rates["server"] = busy_rate(peer_cpu, hz)
    for side, rate in rates.items():
        short = {"client": "clt", "server": "srv"}[side]
        rec[f"{short}_cpu_busy"] = rate
        rec[f"{short}_cpu_us_per_io"] = (rate / iops * 1e6
                                         if rate is not None and iops
                                         else None)
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
    "job ROUND CONFIG SPEC SIDE TAG RC A_MS A_TICKS B_MS B_TICKS
    PA_MS PA_TICKS PB_MS PB_TICKS" (the peer's "-" on the server) or
    "error ROUND CONFIG SPEC WHY"."""
    recs = []
    with open(os.path.join(folder, "runs.txt")) as f:
        for line in f:
            w = line.split()
            if len(w) < 4:
                continue
            if w[0] == "job" and len(w) == 15 and w[6].isdigit():
                rec = fio_figures(os.path.join(folder, "fio", w[5]), w[6],
                                  w[4], w[7:11], w[11:15], hz)
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


def target_lines(tgts, cells, facts):
    lines = ["", "Targets (ratio of the means; the rounds' own ratios in "
             "brackets; then the CPUs busy, client/server, of "
             f"{facts.get('client.cpus', '?')}/"
             f"{facts.get('server.cpus', '?')} vCPUs on "
             f"{facts.get('host.cpus', '?')} host CPUs):"]
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


def chart(folder, jobs, configs, cells):
    """IOPS per configuration (mean, min-max bars), a panel per job."""
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        return "no gnuplot: no chart (apt-get install gnuplot-nox)"
    data = os.path.join(folder, "chart.dat")
    png = os.path.join(folder, "bench.png")
    with open(data, "w") as f:
        for job in jobs:
            f.write(f"# {job_label(job)}\n")
            for cfg in configs:
                s = (cells.get((job, cfg)) or {}).get("iops")
                f.write(f'"{cfg}" ' + (f'{s["mean"]} {s["min"]} {s["max"]}'
                                       if s else "NaN NaN NaN") + "\n")
            f.write("\n\n")
    cols = 3 if len(jobs) > 4 else 2 if len(jobs) > 1 else 1
    rows = (len(jobs) + cols - 1) // cols
    script = [
        f"set terminal pngcairo noenhanced size {560 * cols},{380 * rows} "
        "font 'sans,9'",
        f"set output '{png}'",
        f"set multiplot layout {rows},{cols} title "
        "'make bench: IOPS, log scale (mean of the rounds, bars min-max)'",
        "set style data histograms",
        "set style histogram errorbars gap 1 lw 1",
        "set style fill solid 0.6 border -1",
        "set xtics rotate by -40 left nomirror",
        "set logscale y", "set grid ytics", "unset key",
        "set bmargin 7",
    ]
    for i, job in enumerate(jobs):
        script += [f"set title '{job_label(job)}'",
                   f"plot '{data}' index {i} using 2:3:4:xtic(1) "
                   "linecolor rgb '#4477aa'"]
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
             "each round; figures: mean (min-max) of the rounds"]
    lines += setup_lines(facts)
    lines += table(jobs, configs, cells)
    lines += ["", "x up, x nvme, x local: IOPS over that of upstream RNBD "
              "(the same paths and policy, else upstream-1p), of NVMe-oF and "
              "of the server's null_blk used locally.  CPU us/IO: busy CPU "
              "time of the client and server guests (/proc/stat) per IO."]
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
    why = chart(a.dir, jobs, configs, cells)
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
