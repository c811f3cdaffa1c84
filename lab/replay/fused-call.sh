#!/usr/bin/env bash
# The fused variants' device call (lab/README.md): first each fused build's two new GPU tests with
# a short time limit, so that a launch that hangs or fails costs a minute and not the call; the
# builds that pass go on to lab/replay/binaries-call.sh with main (all GPU replay tests, then the
# mirrored timing with the peer); then main's 1e8 test, and the SASS counts of divergence guards.
# Output: $OUT/fused-call.txt beside binaries-call.sh's files (its logs.tgz takes the first tests'
# logs too).
# Usage: OUT=dir lab/replay/fused-call.sh   (carry out/bin, built by build-binaries.sh main fused
#        fused16 fusedtop fusedtop16 fused-stamps as lab/README.md says; a build missing from
#        out/bin is skipped)
set -uo pipefail
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64:/usr/local/cuda/lib"
export PATH="$PATH:/usr/local/cuda/bin"
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/lab-out}"
mkdir -p "$OUT"
report="$OUT/fused-call.txt"
say() { echo "$*" | tee -a "$report"; }
say "fused-call $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader)"
bins="out/bin/main" tested="out/bin/main"
for n in fused fused16 fusedtop fusedtop16; do
  [[ -x out/bin/$n/test_replay ]] || { say "$n: not built, skipped"; continue; }
  timeout 60 "out/bin/$n/test_replay" --gtest_filter='GpuReplay.UpdateAndSample*' \
    >"$OUT/$n-first.log" 2>&1
  rc=$?
  say "$n first tests: exit $rc $(grep -E '^\[  PASSED  \]' "$OUT/$n-first.log")"
  grep -E "Failure|error|FAILED  \] [A-Z]" "$OUT/$n-first.log" | head -8 | tee -a "$report"
  if [[ $rc -eq 0 ]]; then
    bins="$bins out/bin/$n" tested="$tested out/bin/$n"
  fi
done
[[ " $bins " == *" out/bin/fused "* ]] && bins="$bins out/bin/fused-stamps"  # fused passed
say "timed: $bins"
BINS="$bins" TESTED="$tested" OUT="$OUT" lab/replay/binaries-call.sh
timeout 60 out/bin/main/test_replay --gtest_filter='GpuReplay.HundredMillion*' 2>&1 |
  grep -E '^\[  (PASSED|FAILED)' | sed 's/^/main 1e8: /' | tee -a "$report"
for n in main fused fused16 fusedtop fusedtop16; do
  [[ -x out/bin/$n/test_replay ]] || continue
  command -v cuobjdump >/dev/null || break
  say "$n SASS BRA.DIV / WARPSYNC: $(cuobjdump -sass "out/bin/$n/test_replay" 2>/dev/null |
    grep -c 'BRA.DIV') / $(cuobjdump -sass "out/bin/$n/test_replay" 2>/dev/null | grep -c WARPSYNC)"
done
