#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Print the figures of a fio run of the demo from its JSON output.

The demo's runs write and read back what they wrote (verify_backlog), so
fio's own read rates, which count only the time spent reading, say little:
rates here are per second of the whole run.  Exits 1 when fio reported an
error or verified nothing.
"""

import json
import sys


def ms(ns):
    return f"{ns / 1e6:.1f} ms" if ns >= 1e5 else f"{ns / 1e3:.0f} us"


def direction(name, d, secs):
    p99 = d.get("clat_ns", {}).get("percentile", {}).get("99.000000")
    print(f"  {name:<6} {d['total_ios'] / secs:8.0f} IOPS "
          f"{d['io_bytes'] / secs / 2**20:8.2f} MiB/s   "
          f"latency avg {ms(d['lat_ns']['mean'])}"
          + (f", p99 {ms(p99)}" if p99 else ""))


def main():
    with open(sys.argv[1]) as f:
        job = json.load(f)["jobs"][0]
    secs = job["job_runtime"] / 1000 or 1
    direction("write", job["write"], secs)
    direction("read", job["read"], secs)
    written = job["write"]["io_bytes"] / 2**20
    verified = job["read"]["io_bytes"] / 2**20
    print(f"  {written:.1f} MiB written in {secs:.1f} s, "
          f"{verified:.1f} MiB of it read back and checked (crc32c)")
    if job["error"]:
        print(f"  fio error {job['error']}")
        return 1
    return 0 if job["read"]["total_ios"] else 1


if __name__ == "__main__":
    sys.exit(main())
