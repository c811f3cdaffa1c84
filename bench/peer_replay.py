#!/usr/bin/env python3
"""PyTorch peer of bench/replay.cpp: proportional prioritized replay the way the seed does it.

Priorities live in a CUDA tensor; sampling is cumsum + searchsorted over p^alpha with one
stratified draw per slice, importance weights are (N P(i))^-beta normalized by the largest weight
(from the smallest priority), and the update is a scatter of new priorities into the tensor. One
operation = one sample of 128 indices with weights + one update of their 128 priorities, as in
bench/replay.cpp. GPU time per operation from CUDA events: warm-up, then the median of 7 repeats
of 200 operations. The peer is bound by Python and launches on the host, and its figure moves by up
to 2x between runs, so each capacity is measured in ROUNDS rounds and the fastest is reported (the
ratio against it is the conservative one); the slowest is printed beside it. Prints a table and
RESULT lines like the redline program.
"""
import statistics
import sys

import torch

BATCH = 128
OPS = 200
REPEATS = 7
ROUNDS = 3
ALPHA = 0.6
BETA = 0.4


class TorchPrioritizedReplay:
    def __init__(self, capacity, device):
        self.capacity = capacity
        self.device = device
        self.priorities = torch.ones(capacity, dtype=torch.float32, device=device)
        self.max_priority = torch.ones((), dtype=torch.float32, device=device)
        self.size = capacity  # the memory is full, as in the redline bench
        self.slices = torch.arange(BATCH, dtype=torch.float32, device=device)
        self.beta = torch.tensor(BETA, dtype=torch.float32, device=device)

    def sample(self):
        p = self.priorities[: self.size].pow(ALPHA)
        cdf = torch.cumsum(p, 0)
        total = cdf[-1]
        u = (self.slices + torch.rand(BATCH, device=self.device)) * (total / BATCH)
        idx = torch.searchsorted(cdf, u).clamp_(max=self.size - 1)
        probs = p[idx] / total
        min_prob = p.min() / total
        weights = (self.size * probs).pow(-self.beta) / (self.size * min_prob).pow(-self.beta)
        return idx, weights

    def update(self, idx, priorities):
        self.priorities.index_put_((idx,), priorities)  # scatter; duplicates: one of them wins
        self.max_priority = torch.maximum(self.max_priority, priorities.max())


def time_ms(fn):
    fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(REPEATS):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        out.append(start.elapsed_time(stop))
    return statistics.median(out)


def run(capacity, device):
    mem = TorchPrioritizedReplay(capacity, device)
    gen = torch.Generator(device=device)
    gen.manual_seed(3)
    pris = [torch.rand(BATCH, device=device, generator=gen) * 9.99 + 0.01 for _ in range(16)]
    for i in range(2000):  # spread the priorities, as the redline bench does
        idx, _ = mem.sample()
        mem.update(idx, pris[i % 16])

    def ops():
        for _ in range(OPS):
            idx, _w = mem.sample()
            mem.update(idx, pris[0])

    return time_ms(ops) * 1000.0 / OPS


def main():
    if not torch.cuda.is_available():
        print("peer_replay: no CUDA device visible to PyTorch; nothing measured")
        return 0
    device = torch.device("cuda")
    print(f"PyTorch peer replay bench: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, "
          f"batch {BATCH}, alpha {ALPHA}, beta {BETA}")
    print("one op = sample (cumsum + searchsorted, importance weights) + scatter update; "
          f"GPU time per op from events, median of {REPEATS} x {OPS} ops\n")
    print(f"fastest of {ROUNDS} rounds; the slowest round beside it\n")
    print("| capacity | us/op | ops/s | slowest round ops/s |")
    print("| ---: | ---: | ---: | ---: |")
    for capacity in (100_000, 1_000_000, 10_000_000):
        rounds = [run(capacity, device) for _ in range(ROUNDS)]
        us = min(rounds)
        print(f"| {capacity} | {us:.2f} | {1e6 / us:.0f} | {1e6 / max(rounds):.0f} |")
        print(f"RESULT peer_replay capacity={capacity} ops_per_s={1e6 / us:.0f}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
