#!/usr/bin/env python3
"""Medians of the probe-stamps patch's lines (lab/replay/probe-stamps.patch) from one run of
bench_replay at 1e5, 1e6, 1e7: per capacity and graph, the cycles between consecutive stamps of
warp 0's lane 0 in sample (block 0) and in each update block (b0 sums, b1 mins).
Usage: lab/replay/probe-summary.py probe.log"""
import re
import statistics
import sys

# Launches per capacity in bench_replay: sample 1 + 2000 warm-up, then 8 x 200 per timed mode
# (eager, sample alone, pair graph, gather graph); update 2000 warm-up, then 8 x 200 per mode
# (eager, update alone, pair graph, gather graph).
SAMPLE_MODES = [("warm", 2001), ("eager", 1600), ("alone", 1600), ("pair", 1600), ("gather", 1600)]
UPDATE_MODES = [("warm", 2000), ("eager", 1600), ("alone", 1600), ("pair", 1600), ("gather", 1600)]
CAPS = ["1e5", "1e6", "1e7"]


def mode_of(n, modes):
    per = sum(c for _, c in modes)
    cap, k = divmod(n, per)
    for name, count in modes:
        if k < count:
            return CAPS[cap] if cap < len(CAPS) else f"cap{cap}", name
        k -= count
    raise ValueError(n)


def main():
    rows = {}
    pat = re.compile(r"^(SPROBE|UPROBE) b(\d) L(\d+) c(\d+) n(\d+): (.*)$")
    for line in open(sys.argv[1]):
        m = pat.match(line.strip())
        if not m:
            continue
        tag, block, levels, n, pk = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5))
        vals = [int(x) for x in m.group(6).split()][: pk - 1]
        cap, mode = mode_of(n, SAMPLE_MODES if tag == "SPROBE" else UPDATE_MODES)
        rows.setdefault((cap, mode, tag, block, levels), []).append(vals)
    for key in sorted(rows):
        cap, mode, tag, block, levels = key
        if mode == "warm":
            continue
        lists = rows[key]
        width = min(len(v) for v in lists)
        med = [int(statistics.median(v[j] for v in lists)) for j in range(width)]
        print(f"{cap} {mode:6} {tag} b{block} L{levels} x{len(lists)}: total {sum(med)} | "
              + " ".join(str(x) for x in med))


if __name__ == "__main__":
    main()
