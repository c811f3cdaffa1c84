#!/usr/bin/env bash
# variant-call.sh without the build: test_replay and bench_replay built on another machine with the
# same CUDA major version (Release, -DCMAKE_CUDA_ARCHITECTURES=90), one folder per build under
# BINS, each holding both programs; the first folder is the mainline. The device machine then
# spends its time on tests and timing only. Order: the GPU replay tests of every build but the
# first (TESTS; TESTED names the folders to test instead, for timed-only builds), then bench_replay
# of each build, the peer, each build in reverse, the peer.
# Output: $OUT/binaries.txt, and every log in $OUT/logs.tgz (the device tool returns only a few
# files from $OUT).
# lab/replay/build-binaries.sh builds such folders from patches.
# SANITIZE="memcheck racecheck synccheck" (optional) first runs the mainline's GPU replay tests
# under each of compute-sanitizer's tools (SANITIZE_TIMEOUT seconds each, default 240).
# Usage: BINS="out/bin/main out/bin/va" OUT=dir [TESTS=gtest-filter] [TESTED="out/bin/va"]
#        [SANITIZE=tools] lab/replay/binaries-call.sh
set -uo pipefail
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64:/usr/local/cuda/lib"
export PATH="$PATH:/usr/local/cuda/bin"
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/lab-out}"
BINS="${BINS:-out/bin/main}"
TESTS="${TESTS:-GpuReplay.*:-GpuReplay.HundredMillion*}"
mkdir -p "$OUT"
report="$OUT/binaries.txt"
say() { echo "$*" | tee -a "$report"; }
say "binaries-call $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader)"
read -r -a builds <<<"$BINS"
for b in "${builds[@]}"; do  # build-binaries.sh's record of each build's commit and patches
  [[ -f $b/SOURCE ]] && sed "s|^|$(basename "$b"): |" "$b/SOURCE" | tee -a "$report"
done
for b in "${builds[@]}"; do
  if ! "$b/test_replay" --gtest_list_tests >/dev/null 2>"$OUT/$(basename "$b")-run.log"; then
    say "$(basename "$b"): the carried binaries do not run here:"
    head -5 "$OUT/$(basename "$b")-run.log" | tee -a "$report"
    ldd "$b/test_replay" | grep -i "not found" | tee -a "$report"
    (cd "$OUT" && tar -czf logs.tgz -- *.log && rm -f -- *.log)
    exit 1
  fi
done
for tool in ${SANITIZE:-}; do
  l="$OUT/sanitize-$tool.log"
  timeout "${SANITIZE_TIMEOUT:-240}" compute-sanitizer --tool "$tool" --error-exitcode 99 \
    --print-limit 20 "${builds[0]}/test_replay" --gtest_filter="$TESTS" >"$l" 2>&1
  # A run stopped by the time limit may still exit 0, with no summary line.
  say "$(basename "${builds[0]}") $tool: exit $? ($(grep -E '(ERROR|RACECHECK|SYNCCHECK) SUMMARY' "$l" | tail -1 || true)," \
    "$(grep -cE '^\[       OK \]' "$l") tests passed)"
done
read -r -a tested <<<"${TESTED:-${builds[*]:1}}"
for b in "${tested[@]}"; do
  n=$(basename "$b")
  timeout 200 "$b/test_replay" --gtest_filter="$TESTS" >"$OUT/$n-test.log" 2>&1
  say "$n test_replay: exit $? $(grep -E '^\[  PASSED  \]' "$OUT/$n-test.log") $(grep -cE '^\[  FAILED  \] [A-Za-z].*\(' "$OUT/$n-test.log") failed"
  grep -E "Failure|differ|wrong|FAILED  \] [A-Z]" "$OUT/$n-test.log" | head -12 | tee -a "$report"
done
bench() {  # folder, round
  local n
  n=$(basename "$1")
  timeout 150 "$1/bench_replay" >"$OUT/$n-bench-$2.log" 2>&1
  grep -E '^\| [0-9]' "$OUT/$n-bench-$2.log" | sed "s/^/$n $2 /" | tee -a "$report"
}
peer() {
  PYTHONUNBUFFERED=1 timeout 120 python3 bench/peer_replay.py >"$OUT/peer-$1.log" 2>&1
  grep -E '^\| [0-9]' "$OUT/peer-$1.log" | sed "s/^/peer $1 /" | tee -a "$report"
}
for b in "${builds[@]}"; do bench "$b" 1; done
peer 1
for ((k = ${#builds[@]} - 1; k >= 0; --k)); do bench "${builds[$k]}" 2; done
peer 2
say "end $(date -u +%FT%TZ)"
(cd "$OUT" && tar -czf logs.tgz -- *.log && rm -f -- *.log)
