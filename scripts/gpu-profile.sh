#!/usr/bin/env bash
# On a machine with an NVIDIA GPU and Nsight Compute: builds one bench program with line info and
# profiles the kernels whose names match a pattern. Writes to $OUT (default ./gpu-profile-out):
#   profile_summary.txt  duration, instructions, issue and stall statistics per launch
#   profile_lines.txt    stall samples and instructions per CUDA source line and SASS instruction,
#                        summed over the profiled launches (scripts/ncu_lines.py)
#   profile_listing.txt  each kernel's SASS in address order with its samples and CUDA lines
#                        (scripts/ncu_lines.py --listing)
#   profile_source.csv.gz  the raw source page, for a closer look
# Usage: scripts/gpu-profile.sh <bench target> <kernel regex> [bench arguments ...]
#   e.g. scripts/gpu-profile.sh bench_replay 'sample_kernel|update_kernel' 1000000
# SKIP (default 2000) matching launches are skipped first (warm-up and fill), then COUNT (default
# 20) are profiled. Nsight Compute locks clocks to base, so compare its durations with each other,
# not with the bench's figures. Caches stay warm between launches (--cache-control none), as they
# are in the bench; CACHE=all flushes them instead.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -ge 2 ]] || { sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 2; }
target="$1" kernels="$2"
shift 2
OUT="${OUT:-$PWD/gpu-profile-out}"
mkdir -p "$OUT"
export PATH="$PATH:/usr/local/cuda/bin"
command -v ncu >/dev/null || { echo "gpu-profile: ncu (Nsight Compute) not found" >&2; exit 1; }
build=build/gpu-profile
cmake -S . -B "$build" -G Ninja -DREDLINE_GPU=cuda -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_FLAGS=-lineinfo >"$OUT/profile_configure.log" 2>&1
cmake --build "$build" -j "$(nproc)" --target "$target" >"$OUT/profile_build.log" 2>&1 ||
  { tail -30 "$OUT/profile_build.log"; exit 1; }
program=$(find "$build" -name "$target" -type f -perm -u+x | head -1)
[[ -n "$program" ]] || { echo "gpu-profile: no program $target in $build" >&2; exit 1; }
common=(-k "regex:$kernels" -s "${SKIP:-2000}" -c "${COUNT:-20}" --cache-control "${CACHE:-none}")
ncu "${common[@]}" --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
  --section LaunchStats --section InstructionStats "$program" "$@" >"$OUT/profile_summary.txt" 2>&1
# The sampling option's name differs between Nsight Compute versions. The help text is read
# whole first: `ncu --help | grep -q` fails under pipefail when grep stops reading early.
ncu_help=$(ncu --help 2>&1 || true)
sampling=()
if grep -q -- '--warp-sampling-interval' <<<"$ncu_help"; then
  sampling=(--warp-sampling-interval 0)
elif grep -q -- '--sampling-interval' <<<"$ncu_help"; then
  sampling=(--sampling-interval 0)
fi
ncu "${common[@]}" --set full "${sampling[@]}" --import-source yes --page source \
  --print-source sass,cuda --csv "$program" "$@" >"$OUT/profile_source.csv" 2>&1
python3 scripts/ncu_lines.py "$OUT/profile_source.csv" >"$OUT/profile_lines.txt"
python3 scripts/ncu_lines.py --listing "$OUT/profile_source.csv" >"$OUT/profile_listing.txt"
gzip -f "$OUT/profile_source.csv"
head -60 "$OUT/profile_lines.txt"
