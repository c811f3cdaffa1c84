#!/usr/bin/env bash
# Builds the CPU configuration and runs every test (GPU tests report themselves skipped).
# Usage: scripts/test.sh [preset]   (default preset: cpu)
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-cpu}"
scripts/deps.sh
cmake --preset "$preset"
cmake --build --preset "$preset" -j "$(nproc)"
ctest --preset "$preset" -j "$(nproc)"
