#!/usr/bin/env python3
"""Per-kernel GPU time from `ncu --csv --metrics gpu__time_duration.sum` output: total and mean per kernel
name over the profiled launches (the benchmark's profile sections profile 2 decode steps)."""
import collections
import csv
import sys

rows = list(csv.reader(open(sys.argv[1])))
head = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
if head is None:
    print("no ncu rows")
    sys.exit(0)
cols = rows[head]
k, v, u = cols.index("Kernel Name"), cols.index("Metric Value"), cols.index("Metric Unit")
tot, cnt = collections.Counter(), collections.Counter()
for r in rows[head + 1:]:
    if len(r) <= v or not r[v]:
        continue
    name = r[k].split("(")[0]
    name = name.replace("tf::cuda::", "").replace("(anonymous namespace)::", "")
    val = float(r[v].replace(",", ""))
    # ncu spells the unit "nsecond" in older releases and "ns" in newer ones.
    scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}[r[u]]
    tot[name] += val * scale
    cnt[name] += 1
steps = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
print(f"{'kernel':60s} {'launches/step':>14s} {'us/step':>10s} {'us/launch':>10s}")
for name, t in tot.most_common():
    print(f"{name[:60]:60s} {cnt[name] / steps:14.1f} {t / steps:10.1f} {t / cnt[name]:10.2f}")
print(f"{'total':60s} {sum(cnt.values()) / steps:14.1f} {sum(tot.values()) / steps:10.1f}")
