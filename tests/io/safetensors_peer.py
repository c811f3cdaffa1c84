#!/usr/bin/env python3
"""Cross-checks redline's safetensors files with PyTorch's `safetensors` package, both ways.

Run on a machine with PyTorch and safetensors installed (the H200 machine):

    python3 tests/io/safetensors_peer.py --test-binary build/cuda/tests/test_io

1. writes torch_written.safetensors with safetensors.torch.save_file (one (3, 5) tensor per dtype
   F32, BF16, F16, U8, I32, I64, BOOL, F64, filled with the pattern below, metadata producer=torch);
2. runs `test_io --gtest_filter=SafetensorsPeer.*` with REDLINE_SAFETENSORS_PEER_DIR set, which
   checks that redline reads those values and writes redline_written.safetensors;
3. loads redline_written.safetensors with safetensors.torch.load_file and checks every value,
   dtype, shape and the metadata.

Prints one line per check and a summary; exits 1 on any mismatch. The pattern must stay in step
with `pattern()` in tests/io/safetensors_test.cpp.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

DTYPES = {
    "f32": torch.float32,
    "bf16": torch.bfloat16,
    "f16": torch.float16,
    "u8": torch.uint8,
    "i32": torch.int32,
    "i64": torch.int64,
    "bool": torch.bool,
    "f64": torch.float64,
}


def pattern(name: str) -> torch.Tensor:
    i = torch.arange(15, dtype=torch.float64)
    if name in ("f32", "bf16", "f16"):
        values = (i - 7.0) * 0.375
    elif name == "f64":
        values = (i - 7.0) * 0.375 + 1e-12
    elif name == "u8":
        values = (torch.arange(15) * 37) % 256
    elif name == "i32":
        values = (i - 7.0) * 100000.0
    elif name == "i64":
        return ((torch.arange(15, dtype=torch.int64) - 7) * 10**12).reshape(3, 5)
    else:
        values = (torch.arange(15) % 3 == 0)
    return values.to(DTYPES[name]).reshape(3, 5)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--test-binary", required=True, help="path of redline's test_io")
    parser.add_argument("--dir", help="working directory (default: a new temporary one)")
    args = parser.parse_args()
    work = args.dir or tempfile.mkdtemp(prefix="redline_safetensors_peer_")
    os.makedirs(work, exist_ok=True)
    failures = 0

    torch_path = os.path.join(work, "torch_written.safetensors")
    save_file({f"pattern_{n}": pattern(n) for n in DTYPES}, torch_path,
              metadata={"producer": "torch"})
    print(f"wrote {torch_path} with torch {torch.__version__}")

    env = dict(os.environ, REDLINE_SAFETENSORS_PEER_DIR=work)
    run = subprocess.run([args.test_binary, "--gtest_filter=SafetensorsPeer.*"], env=env,
                         capture_output=True, text=True)
    ok_cpp = run.returncode == 0 and "[  PASSED  ] 1 test" in run.stdout
    print(f"redline reads the torch file: {'ok' if ok_cpp else 'FAILED'}")
    if not ok_cpp:
        print(run.stdout[-4000:], run.stderr[-2000:])
        failures += 1

    redline_path = os.path.join(work, "redline_written.safetensors")
    if not os.path.exists(redline_path):
        print(f"torch reads the redline file: FAILED ({redline_path} was not written)")
        failures += 1
    else:
        loaded = load_file(redline_path)
        with safe_open(redline_path, framework="pt") as f:
            metadata = f.metadata() or {}
        for name in DTYPES:
            key = f"pattern_{name}"
            want = pattern(name)
            got = loaded.get(key)
            ok = (got is not None and got.dtype == want.dtype and got.shape == want.shape
                  and torch.equal(got, want))
            print(f"torch reads redline {key}: {'ok' if ok else 'FAILED'}")
            if not ok:
                print(f"  want {want}\n  got  {got}")
                failures += 1
        if metadata.get("producer") != "redline":
            print(f"metadata: FAILED (got {metadata})")
            failures += 1
        else:
            print("metadata: ok")

    print(f"safetensors peer check: {'PASSED' if failures == 0 else f'{failures} FAILED'}"
          f" (files in {work})")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
