#!/usr/bin/env bash
# Builds redline for whatever this machine has (CUDA, ROCm or CPU) and runs the main job.
# Usage: scripts/run.sh [redline arguments...]   (default: doctor)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake --preset auto >/dev/null
cmake --build --preset auto -j "$(nproc)" --target redline
if [[ $# -eq 0 ]]; then
  set -- doctor
fi
exec build/auto/redline "$@"
