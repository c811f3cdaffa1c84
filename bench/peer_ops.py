#!/usr/bin/env python3
"""PyTorch peer of bench_ops_gemm, bench_ops_conv and bench_ops_elementwise: the same shapes,
the same method (3 warm-ups, median of 7 event-timed repeats), the same Markdown tables.

    python3 bench/peer_ops.py [gemm] [conv] [elementwise] [convparts]
    (default: the first three; convparts times each gradient alone and lists the kernels)

GEMM: torch.matmul f32 (allow_tf32 off), tf32 (on) and bf16 at M x K x N = 4096^3,
128x3136x512 and 32x1024x128. Conv: the Nature-CNN layers at batch 128, forward and backward
(dx, dw, dbias) with torch.backends.cudnn.benchmark = True. Elementwise: copy, add, relu and
torch.optim.Adam(fused=True).step() on 2^28 f32 elements, GB/s and % of the copy's GB/s.
"""
import sys

import torch

DEV = torch.device("cuda")


def median_ms(fn, iterations=10, repeats=7, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iterations):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / iterations)
    times.sort()
    return times[len(times) // 2]


def gemm():
    print("| device | mode | M x K x N | ms | TFLOP/s |\n| --- | --- | --- | ---: | ---: |")
    for m, k, n in [(4096, 4096, 4096), (128, 3136, 512), (32, 1024, 128)]:
        for mode in ["f32", "tf32", "bf16"]:
            torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
            dtype = torch.bfloat16 if mode == "bf16" else torch.float32
            a = torch.rand(m, k, device=DEV).to(dtype)
            b = torch.rand(k, n, device=DEV).to(dtype)
            iterations = 5 if m * k * n > 2**32 else 50
            ms = median_ms(lambda: torch.matmul(a, b), iterations)
            print(f"| torch cuda | {mode} | {m}x{k}x{n} | {ms:.4f} | {2 * m * k * n / ms / 1e9:.2f} |")
    torch.backends.cuda.matmul.allow_tf32 = False


def conv():
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    print("cudnn.benchmark: True, tf32: off")
    print("| device | layer | output | forward ms | backward ms | total ms |")
    print("| --- | --- | --- | ---: | ---: | ---: |")
    for name, c, h, o, k, s in [("conv1 8x8 s4", 4, 84, 32, 8, 4), ("conv2 4x4 s2", 32, 20, 64, 4, 2),
                                ("conv3 3x3 s1", 64, 9, 64, 3, 1)]:
        x = torch.rand(128, c, h, h, device=DEV, requires_grad=True)
        layer = torch.nn.Conv2d(c, o, k, stride=s).to(DEV)
        y = layer(x)
        dy = torch.rand_like(y)
        fwd = median_ms(lambda: layer(x), 20)

        def backward():
            out = layer(x)
            torch.autograd.grad(out, [x, layer.weight, layer.bias], dy)

        total = median_ms(backward, 20)
        print(f"| torch cuda | {name} | {tuple(y.shape)} | {fwd:.4f} | {total - fwd:.4f} | {total:.4f} |")


def conv_parts():
    """Each gradient of the backward alone (forward time subtracted), and the CUDA kernels of one
    full backward from torch.profiler, to compare with bench_ops_conv --parts and
    REDLINE_CUDNN_LOG=1."""
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    print("| device | layer | dx ms | dw ms | dbias ms |")
    print("| --- | --- | ---: | ---: | ---: |")
    layers = [("conv1 8x8 s4", 4, 84, 32, 8, 4), ("conv2 4x4 s2", 32, 20, 64, 4, 2),
              ("conv3 3x3 s1", 64, 9, 64, 3, 1)]
    for name, c, h, o, k, s in layers:
        x = torch.rand(128, c, h, h, device=DEV, requires_grad=True)
        layer = torch.nn.Conv2d(c, o, k, stride=s).to(DEV)
        dy = torch.rand_like(layer(x))
        fwd = median_ms(lambda: layer(x), 20)
        parts = []
        for wrt in (x, layer.weight, layer.bias):
            parts.append(median_ms(lambda: torch.autograd.grad(layer(x), [wrt], dy), 20) - fwd)
        print(f"| torch cuda | {name} | {parts[0]:.4f} | {parts[1]:.4f} | {parts[2]:.4f} |")
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(10):
                torch.autograd.grad(layer(x), [x, layer.weight, layer.bias], dy)
            torch.cuda.synchronize()
        print(f"kernels of 10 forward+backward runs of {name}:")
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=12, max_name_column_width=90))


def elementwise():
    n = 1 << 28
    print("| device | op | elements | ms | GB/s | % of copy |\n| --- | --- | ---: | ---: | ---: | ---: |")
    a = torch.rand(n, device=DEV)
    b = torch.rand(n, device=DEV)
    out = torch.empty_like(a)
    rows = [("copy", median_ms(lambda: out.copy_(a)), 2), ("add", median_ms(lambda: a + b), 3),
            ("relu", median_ms(lambda: torch.relu(a)), 2)]
    p = torch.nn.Parameter(a.clone())
    p.grad = b.clone()
    adam = torch.optim.Adam([p], lr=1e-6, fused=True)
    rows.append(("adam step", median_ms(adam.step), 7))
    copy_gbs = 2 * 4 * n / rows[0][1] / 1e6
    for name, ms, factor in rows:
        gbs = factor * 4 * n / ms / 1e6
        print(f"| torch cuda | {name} | {n} | {ms:.4f} | {gbs:.1f} | {100 * gbs / copy_gbs:.0f}% |")


if __name__ == "__main__":
    suites = sys.argv[1:] or ["gemm", "conv", "elementwise"]
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    for suite in suites:
        {"gemm": gemm, "conv": conv, "convparts": conv_parts, "elementwise": elementwise}[suite]()
