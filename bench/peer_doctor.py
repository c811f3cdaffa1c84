#!/usr/bin/env python3
"""The PyTorch peer of `redline doctor`'s smoke tests, for bench/RESULTS.md.

Measures on one GPU, with the same sizes and timing method as src/backend/gpu/smoke.cu:
  - torch.matmul TFLOP/s at n x n x n (n = 8192, halved until three f32 matrices fit in half the
    free memory) in f32 (allow_tf32 off), tf32 (allow_tf32 on) and bf16 (bf16 in and out);
  - tensor.to('cuda') GB/s from pageable and pinned host tensors of 256 MiB, device->host copies
    into preallocated pageable and pinned tensors, and a device->device copy.
Timing: 3 warm-up runs, then 10 repeats queued back to back on the current stream, each between two
CUDA events; the figure is the median repeat. TFLOP/s = 2 n^3 / time; GB/s = bytes / time / 1e9.

Usage (on the GPU machine, next to `redline doctor --json`):
  python3 bench/peer_doctor.py [--device 0] [--size 8192] [--copy-mib 256] [--json]
"""
import argparse
import json
import statistics
import sys

try:
    import torch
except ImportError:
    sys.exit("peer_doctor: PyTorch is not installed (pip install torch); nothing to compare with")


def time_median_ms(fn, warmup, repeats):
    """Median milliseconds of fn() over repeats, each between events, queued back to back."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    events = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        events.append((start, stop))
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in events)


def gemm_size(requested, free_bytes):
    n = requested
    while n > 1024 and 3 * n * n * 4 + (64 << 20) > free_bytes // 2:
        n //= 2
    return n


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--size", type=int, default=8192)
    parser.add_argument("--copy-mib", type=int, default=256)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()

    if not torch.cuda.is_available():
        sys.exit("peer_doctor: torch.cuda.is_available() is False; no GPU to measure")
    torch.cuda.set_device(args.device)
    props = torch.cuda.get_device_properties(args.device)
    free_bytes, _ = torch.cuda.mem_get_info(args.device)
    n = gemm_size(args.size, free_bytes)
    w, r = args.warmup, args.repeats
    results = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "hip": getattr(torch.version, "hip", None),
        "device": f"gpu:{args.device}",
        "name": props.name,
        "gemm": [],
        "copy": [],
    }

    # ---- GEMM: torch.matmul as users call it
    a32 = torch.empty(n, n, device="cuda").uniform_(-1, 1)
    b32 = torch.empty(n, n, device="cuda").uniform_(-1, 1)
    for dtype, allow_tf32, a, b in (
        ("f32", False, a32, b32),
        ("tf32", True, a32, b32),
        ("bf16", False, a32.bfloat16(), b32.bfloat16()),
    ):
        torch.backends.cuda.matmul.allow_tf32 = allow_tf32
        ms = time_median_ms(lambda: torch.matmul(a, b), w, r)
        results["gemm"].append(
            {"dtype": dtype, "engine": "torch.matmul", "size": n, "median_ms": round(ms, 3),
             "tflops": round(2.0 * n ** 3 / (ms * 1e-3) / 1e12, 2)})
    torch.backends.cuda.matmul.allow_tf32 = False
    del a32, b32
    torch.cuda.empty_cache()

    # ---- copies
    nbytes = args.copy_mib << 20
    free_bytes, _ = torch.cuda.mem_get_info(args.device)
    while nbytes > (16 << 20) and 2 * nbytes > free_bytes // 2:
        nbytes //= 2
    pageable = torch.ones(nbytes, dtype=torch.uint8)  # touched, like redline's buffers
    pinned = torch.ones(nbytes, dtype=torch.uint8).pin_memory()
    src = torch.full((nbytes,), 2, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    cases = (
        ("host_to_device_pinned", "tensor.to('cuda', non_blocking=True)",
         lambda: pinned.to("cuda", non_blocking=True)),
        ("host_to_device_pageable", "tensor.to('cuda')", lambda: pageable.to("cuda")),
        ("device_to_host_pinned", "pinned.copy_(gpu, non_blocking=True)",
         lambda: pinned.copy_(src, non_blocking=True)),
        ("device_to_host_pageable", "pageable.copy_(gpu)", lambda: pageable.copy_(src)),
        ("device_to_device", "dst.copy_(src)", lambda: dst.copy_(src)),
    )
    for kind, how, fn in cases:
        ms = time_median_ms(fn, w, r)
        results["copy"].append(
            {"kind": kind, "how": how, "bytes": nbytes, "median_ms": round(ms, 3),
             "gbps": round(nbytes / (ms * 1e-3) / 1e9, 2)})

    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"peer_doctor: PyTorch {results['torch']} "
          f"({'HIP ' + results['hip'] if results['hip'] else 'CUDA ' + str(results['cuda'])}) "
          f"on {results['device']} ({results['name']})")
    for g in results["gemm"]:
        print(f"  gemm {g['dtype']:<4} {g['size']}^3   {g['engine']:<14} "
              f"{g['tflops']:8.1f} TFLOP/s ({g['median_ms']:.2f} ms median)")
    for c in results["copy"]:
        print(f"  {c['kind']:<24} {c['gbps']:7.1f} GB/s ({c['bytes'] >> 20} MiB, "
              f"{c['median_ms']:.2f} ms median)  {c['how']}")


if __name__ == "__main__":
    main()
