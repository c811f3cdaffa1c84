#!/usr/bin/env bash
# One device call that tests and times variant trees against the mainline, with peers between:
# each variant (an ignored copy under out/, carried to the device) and the mainline (this tree) are
# built side by side; the GPU replay tests of each variant and of the mainline run (TESTS, the 1e8
# test left out by default); then bench_replay of main, the peer,
# each variant, the peer, main, each variant. Output: $OUT/variant.txt and the logs beside it.
# Usage: VARIANTS="out/variant-a out/variant-b" OUT=dir [TESTS=gtest-filter] [VARIANT_TESTS=0]
#        lab/replay/variant-call.sh
# VARIANT_TESTS=0 runs the mainline's tests only (for variants that differ in a constant).
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
OUT="${OUT:-$root/lab-out}"
VARIANTS="${VARIANTS:-out/variant-tree}"
TESTS="${TESTS:-GpuReplay.*:-GpuReplay.HundredMillion*}"
mkdir -p "$OUT"
export PATH="$PATH:/usr/local/cuda/bin"
report="$OUT/variant.txt"
say() { echo "$*" | tee -a "$report"; }
say "variant-call $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
build() {  # tree, build dir, log name, targets...
  local tree="$1" dir="$2" log="$3"; shift 3
  cmake -S "$tree" -B "$dir" -G Ninja -DREDLINE_GPU=cuda -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90 >"$OUT/$log-configure.log" 2>&1 &&
    ninja -C "$dir" -j6 "$@" >"$OUT/$log-build.log" 2>&1
}
build "$root" "$root/build/main-lab" main test_replay bench_replay & pids=($!) names=(main)
for t in $VARIANTS; do
  build "$root/$t" "$root/$t/build-lab" "$(basename "$t")" test_replay bench_replay & pids+=($!)
  names+=("$(basename "$t")")
done
for k in "${!pids[@]}"; do wait "${pids[$k]}"; say "build ${names[$k]}: exit $?"; done
tested=". $VARIANTS"
[[ "${VARIANT_TESTS:-1}" == 0 ]] && tested=.
for t in $tested; do
  if [[ "$t" == . ]]; then n=main dir="$root/build/main-lab"; else n=$(basename "$t") dir="$root/$t/build-lab"; fi
  if [[ -x "$dir/tests/test_replay" ]]; then
    timeout 150 "$dir/tests/test_replay" --gtest_filter="$TESTS" >"$OUT/$n-test.log" 2>&1
    say "$n test_replay: exit $? $(grep -E '^\[  PASSED  \]' "$OUT/$n-test.log") $(grep -cE '^\[  FAILED  \] [A-Za-z].*\(' "$OUT/$n-test.log") failed"
    grep -E "Failure|differ|FAILED  \] [A-Z]" "$OUT/$n-test.log" | head -12 | tee -a "$report"
  else
    say "$n: not built"; tail -20 "$OUT/$n-build.log" | tee -a "$report"
  fi
done
bench() {  # name, binary, round
  [[ -x "$2" ]] || return 0
  timeout 150 "$2" >"$OUT/$1-bench-$3.log" 2>&1
  grep -E '^\| [0-9]' "$OUT/$1-bench-$3.log" | sed "s/^/$1 $3 /" | tee -a "$report"
}
peer() {
  PYTHONUNBUFFERED=1 timeout 90 python3 bench/peer_replay.py >"$OUT/peer-$1.log" 2>&1
  grep -E '^\| [0-9]' "$OUT/peer-$1.log" | sed "s/^/peer $1 /" | tee -a "$report"
}
bench main "$root/build/main-lab/bench/bench_replay" 1
peer 1
for t in $VARIANTS; do bench "$(basename "$t")" "$root/$t/build-lab/bench/bench_replay" 1; done
peer 2
bench main "$root/build/main-lab/bench/bench_replay" 2
for t in $VARIANTS; do bench "$(basename "$t")" "$root/$t/build-lab/bench/bench_replay" 2; done
