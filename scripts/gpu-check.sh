#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: builds the cuda preset, runs every test (GPU parity included),
# `redline doctor`, the benchmarks and their PyTorch peers, and writes logs plus a summary to
# $OUT (default: ./gpu-check-out).
# Usage: scripts/gpu-check.sh [stage ...]   stages: build test doctor bench peers (default: all),
#        sanitize (only when named: every test binary's GPU tests under compute-sanitizer's memcheck,
#        racecheck and synccheck; SANITIZE_TIMEOUT seconds per binary and tool, default 300)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-check-out}"
mkdir -p "$OUT"
# The device tool returns at most 8 files: logs are gathered in LOGS and packed into one archive.
LOGS=$(mktemp -d)
trap 'tar czf "$OUT/logs.tgz" -C "$LOGS" . 2>/dev/null' EXIT
stages=("$@")
[[ ${#stages[@]} -gt 0 ]] || stages=(build test doctor bench peers)
want() { local s; for s in "${stages[@]}"; do [[ "$s" == "$1" ]] && return 0; done; return 1; }
summary="$OUT/summary.txt"
log() { echo "$*" | tee -a "$summary"; }
build=build/gpu-check
export PATH="$PATH:/usr/local/cuda/bin"
export REDLINE_CACHE_DIR="$PWD/$build/cache"

log "gpu-check $(date -u +%FT%TZ) commit ${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader 2>&1 | tee -a "$summary"

if want build; then
  t=$(date +%s)
  if ! cmake -S . -B "$build" -G Ninja -DREDLINE_GPU=cuda -DCMAKE_BUILD_TYPE=Release \
       -DCMAKE_CUDA_ARCHITECTURES=90 >"$LOGS/configure.log" 2>&1; then
    log "configure: FAILED"; tail -40 "$LOGS/configure.log"; exit 1
  fi
  # Keep going past a failing target so that everything else still builds and runs.
  if cmake --build "$build" -j "$(nproc)" -- -k 0 >"$LOGS/build.log" 2>&1; then
    log "build: ok in $(( $(date +%s) - t ))s"
  else
    log "build: FAILED in part after $(( $(date +%s) - t ))s:"
    grep -E "^FAILED|error" "$LOGS/build.log" | head -20 | tee -a "$summary"
  fi
fi

if want test; then
  ctest --test-dir "$build" -j 4 --timeout 300 --output-on-failure >"$LOGS/ctest.log" 2>&1
  log "tests: $(grep -E 'tests passed|tests failed' "$LOGS/ctest.log" | tail -1)"
  grep -E '^\s*[0-9]+ - .*\((Failed|SEGFAULT|Timeout|Exception|Subprocess)' "$LOGS/ctest.log" | tee -a "$summary"
  # GPU tests: count those that ran (not skipped) and those that passed.
  for t in "$build"/tests/test_*; do
    [[ -x "$t" ]] || continue
    "$t" --gtest_filter='*Gpu*:*GPU*:*gpu*' >"$LOGS/$(basename "$t")_gpu.log" 2>&1
    ran=$(grep -c '^\[       OK \]\|^\[  FAILED  \] [A-Za-z]' "$LOGS/$(basename "$t")_gpu.log")
    failed=$(grep -c '^\[  FAILED  \] [A-Za-z].*(' "$LOGS/$(basename "$t")_gpu.log")
    skipped=$(grep -c '^\[  SKIPPED \] [A-Za-z].*(' "$LOGS/$(basename "$t")_gpu.log")
    log "  $(basename "$t") GPU tests: $((ran - failed)) passed, $failed failed, $skipped skipped"
  done
  # safetensors files exchanged with PyTorch's package, both ways (needs torch and safetensors).
  python3 tests/io/safetensors_peer.py --test-binary "$build/tests/test_io" \
    >"$LOGS/safetensors_peer.log" 2>&1
  log "  safetensors exchange with PyTorch: exit $? ($(tail -1 "$LOGS/safetensors_peer.log"))"
fi

if want sanitize; then
  # Left out: the 1e8 test (about 40 GiB, which memcheck would shadow) and the refusal sized from the
  # device's free memory. The fault tests raise their errors from flags the kernels set, not from
  # bad accesses, so a clean run reports 0 errors for every binary.
  for tool in memcheck racecheck synccheck; do
    for t in "$build"/tests/test_*; do
      [[ -x "$t" ]] || continue
      l="$LOGS/sanitize_${tool}_$(basename "$t").log"
      timeout "${SANITIZE_TIMEOUT:-300}" compute-sanitizer --tool "$tool" --error-exitcode 99 \
        --print-limit 20 "$t" \
        --gtest_filter='*Gpu*:*GPU*:*gpu*:-*HundredMillion*:*BeyondDeviceMemory*' >"$l" 2>&1
      log "  $tool $(basename "$t"): exit $? ($(grep -E '(ERROR|RACECHECK|SYNCCHECK) SUMMARY' "$l" | tail -1 || true)," \
        "$(grep -cE '^\[       OK \]' "$l") tests passed)"
    done
  done
fi

if want doctor; then
  "$build/redline" doctor >"$OUT/doctor.txt" 2>&1; log "doctor: exit $?"
  "$build/redline" doctor --json >"$OUT/doctor.json" 2>"$LOGS/doctor_json.err"; log "doctor --json: exit $?"
fi

if want bench; then
  for b in "$build"/bench/bench_*; do
    [[ -x "$b" ]] || continue
    name=$(basename "$b")
    timeout "${BENCH_TIMEOUT:-240}" "$b" >"$LOGS/$name.txt" 2>&1; log "$name: exit $?"
    cp "$LOGS/$name.txt" "$OUT/$name.txt"
  done
  # The replay memory at the issue's capacity (1e8 MinAtar transitions, about 40 GiB) where the
  # GPU holds it: bytes, fill time and the sample+update pair, into the summary.
  if [[ -x "$build/bench/bench_replay" ]]; then
    timeout "${BENCH_TIMEOUT:-240}" "$build/bench/bench_replay" 100000000 \
      >"$LOGS/bench_replay_1e8.txt" 2>&1
    log "bench_replay 1e8: exit $?"
    grep -E '^\| 100000000|RESULT' "$LOGS/bench_replay_1e8.txt" | tee -a "$summary"
    # The seed's Atari stacks ((4, 84, 84) u8, frame_stack 4): the "+gather" column is the cost
    # of rebuilding the stacks from frames stored once.
    timeout "${BENCH_TIMEOUT:-240}" "$build/bench/bench_replay" 100000 1000000 --atari \
      >"$LOGS/bench_replay_atari.txt" 2>&1
    log "bench_replay --atari: exit $?"
    grep -E '^\| [0-9]' "$LOGS/bench_replay_atari.txt" | tee -a "$summary"
  fi
fi

if want peers; then
  for p in bench/peer_*.py; do
    [[ -f "$p" ]] || continue
    name=$(basename "$p" .py)
    PYTHONUNBUFFERED=1 timeout "${BENCH_TIMEOUT:-240}" python3 "$p" >"$LOGS/$name.txt" 2>&1
    log "$name: exit $?"
    cp "$LOGS/$name.txt" "$OUT/$name.txt"
  done
fi
log "gpu-check done $(date -u +%FT%TZ)"
