#!/usr/bin/env python3
"""Sums Nsight Compute's source page (ncu --page source --print-source sass,cuda --csv) per kernel.

    python3 scripts/ncu_lines.py profile.csv [--top N] [--listing]

For every kernel: its warp-stall samples and executed warp instructions per CUDA source line (the
rows ncu prints with a line number; the SASS rows under them are not counted twice), the hottest
lines first, then the hottest SASS instructions. Samples from several launches of one kernel add
up, so profile a few dozen launches of a short kernel to get enough samples.

With --listing it prints instead every kernel's SASS in address order, each instruction with its
samples, its executed instructions and its CUDA line: the place to see what the compiler put
between a barrier and the loads after it.
"""
import argparse
import collections
import csv
import sys


def number(text):
    try:
        return int(text.replace(",", ""))
    except ValueError:
        return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("csv_file")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--listing", action="store_true", help="every kernel's SASS in order")
    args = parser.parse_args()

    lines = collections.defaultdict(lambda: [0, 0])  # (kernel, place, text) -> [samples, instructions]
    sass = collections.defaultdict(lambda: [0, 0])  # (kernel, instruction) -> [samples, instructions]
    listing = collections.defaultdict(dict)  # kernel -> address -> (text, samples, instructions, line)
    place = "?"
    path, kernel, header = "?", "?", None
    with open(args.csv_file, errors="replace") as f:
        for row in csv.reader(f):
            if not row:
                continue
            if row[0] == "File Path" and len(row) > 1:
                path = row[1].rsplit("/", 1)[-1]
            elif row[0] == "Function Name" and len(row) > 1:
                kernel = row[1].split("(")[0].rsplit("::", 1)[-1]
            elif row[0] == "Line No":
                header = row
            elif header is not None and len(row) >= len(header) - 1 and len(row) > 7:
                samples, instructions = number(row[4]), number(row[7])
                if row[0].isdigit():
                    place = f"{path}:{row[0]}"
                    entry = lines[(kernel, place, row[1].strip()[:80])]
                elif row[2].startswith("0x"):
                    entry = sass[(kernel, row[3].strip()[:70])]
                    address = int(row[2], 16)
                    if address not in listing[kernel]:
                        listing[kernel][address] = (row[3].strip(), samples, instructions, place)
                else:
                    continue
                entry[0] += samples
                entry[1] += instructions

    if not lines:
        print("no source rows found: was the profile taken with --page source --csv?", file=sys.stderr)
        return 1
    if args.listing:
        for name in sorted(listing):
            code = listing[name]
            first = min(code)
            print(f"== {name}: {len(code)} SASS instructions (offset, samples, executed, line)")
            for address in sorted(code):
                text, s, i, where = code[address]
                print(f"{address - first:6x} {s:6d} {i:8d}  {text[:72]:72s}  {where}")
            print()
        return 0
    for name in sorted({k for k, _, _ in lines}):
        mine = {key: v for key, v in lines.items() if key[0] == name}
        total_samples = sum(v[0] for v in mine.values()) or 1
        total_instructions = sum(v[1] for v in mine.values())
        print(f"== {name}: {total_samples} stall samples, {total_instructions} warp instructions")
        print("samples  share  instructions  line")
        for (_, place, text), (s, i) in sorted(mine.items(), key=lambda kv: -kv[1][0])[: args.top]:
            print(f"{s:7d} {100.0 * s / total_samples:5.1f}% {i:13d}  {place}  {text}")
        hot = sorted(((v, key[1]) for key, v in sass.items() if key[0] == name), reverse=True)
        print("hottest SASS instructions (samples, instructions):")
        for (s, i), text in hot[: args.top // 2]:
            print(f"{s:7d} {i:9d}  {text}")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
