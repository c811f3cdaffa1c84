#!/usr/bin/env bash
# The replay kernel lab, on a machine with an NVIDIA GPU: builds the mainline ("A") and each
# variant (lab/replay/NN-*.patch, a patch against the mainline), runs test_replay for each (the
# CPU reference and the GPU parity tests: a variant that fails any is not timed), then times them
# with bench_replay in a mirrored order (A 01 02 .. 02 01 A) with bench/peer_replay.py between the
# two halves, and writes a summary to $OUT/summary.txt, the logs to $OUT/lab-logs.tgz (the device
# tool returns few files).
# Usage: lab/replay/run.sh [stage ...] (stages: build test bench; default: all)
# Env: VARIANTS (default: every patch here, by number), CAPS (default: 100000 1000000 10000000),
#      TESTS (a gtest filter, default: all), PEER=0 to leave the peer out, OUT (default: ./lab-out),
#      TEST_TIMEOUT / BENCH_TIMEOUT (seconds per run, default 240 / 180: a hung kernel stops there).
# Builds go to build/lab (kept between calls on a warm machine, so `bench` alone can follow).
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
OUT="${OUT:-$root/lab-out}"
mkdir -p "$OUT"
LOGS=$(mktemp -d)
trap 'tar czf "$OUT/lab-logs.tgz" -C "$LOGS" . 2>/dev/null; rm -rf "$LOGS"' EXIT
export PATH="$PATH:/usr/local/cuda/bin"
stages=("$@")
[[ ${#stages[@]} -gt 0 ]] || stages=(build test bench)
want() { local s; for s in "${stages[@]}"; do [[ "$s" == "$1" ]] && return 0; done; return 1; }
summary="$OUT/summary.txt"
log() { echo "$*" | tee -a "$summary"; }
lab=build/lab
if [[ -n "${VARIANTS:-}" ]]; then
  read -r -a variants <<<"$VARIANTS"
else
  variants=()
  for p in lab/replay/[0-9][0-9]-*.patch; do [[ -e "$p" ]] && variants+=("$(basename "$p" .patch)"); done
fi
caps="${CAPS:-100000 1000000 10000000}"
log "replay lab $(date -u +%FT%TZ): A ${variants[*]}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader 2>&1 | tee -a "$summary"

if want build; then
  # One copy of the tree; each variant is patched in, built, its binaries kept, and patched out
  # (lab/apply_patch.py: the GPU machine may have neither `patch` nor `git`).
  mkdir -p "$lab/bin"
  # Files are copied only where their content differs, so that the build sees exactly what changed
  # since the last call (a copy that kept the files' old times could hide a variant's leftovers).
  (find . \( -path ./build -o -path ./.git -o -path ./lab-out \) -prune -o -type f -print) |
    while IFS= read -r f; do
      if ! cmp -s "$f" "$lab/tree/$f"; then
        mkdir -p "$lab/tree/$(dirname "$f")" && cp "$f" "$lab/tree/$f"
      fi
    done
  if ! cmake -S "$lab/tree" -B "$lab/obj" -G Ninja -DREDLINE_GPU=cuda -DCMAKE_BUILD_TYPE=Release \
       -DCMAKE_CUDA_ARCHITECTURES="${ARCH:-90}" >"$LOGS/configure.log" 2>&1; then
    log "configure: FAILED"; tail -30 "$LOGS/configure.log"; exit 1
  fi
  for v in A "${variants[@]}"; do
    t=$(date +%s)
    rm -rf "${lab:?}/bin/$v"  # a variant that fails to build keeps no binaries from before
    patch=""
    [[ "$v" != A ]] && patch="$root/lab/replay/$v.patch"
    if [[ -n "$patch" ]] && ! (cd "$lab/tree" && python3 "$root/lab/apply_patch.py" "$patch"); then
      log "$v: patch does not apply"; continue
    fi
    if ninja -C "$lab/obj" test_replay bench_replay >"$LOGS/build-$v.log" 2>&1; then
      mkdir -p "$lab/bin/$v"
      cp "$lab/obj/tests/test_replay" "$lab/obj/bench/bench_replay" "$lab/bin/$v/"
      log "$v: built in $(( $(date +%s) - t ))s"
    else
      log "$v: build FAILED"; grep -E "error" "$LOGS/build-$v.log" | head -10 | tee -a "$summary"
    fi
    [[ -n "$patch" ]] && (cd "$lab/tree" && python3 "$root/lab/apply_patch.py" -R "$patch")
  done
fi

# A variant is timed only once its tests have passed, in this call or an earlier one on the same
# machine (the verdict is kept next to its binaries; a new build clears it).
timed=()
for v in A "${variants[@]}"; do
  [[ -x "$lab/bin/$v/bench_replay" ]] || continue
  if want test; then
    timeout "${TEST_TIMEOUT:-240}" "$lab/bin/$v/test_replay" --gtest_filter="${TESTS:-*}" >"$LOGS/test-$v.log" 2>&1
    rc=$?
    log "$v: test_replay exit $rc: $(grep -E '^\[  PASSED  \]' "$LOGS/test-$v.log") $(grep -cE '^\[  FAILED  \] [A-Za-z].*\(' "$LOGS/test-$v.log") failed, $(grep -cE '^\[  SKIPPED \] [A-Za-z].*\(' "$LOGS/test-$v.log") skipped"
    grep -E '^\[  FAILED  \] [A-Za-z].*\(' "$LOGS/test-$v.log" | tee -a "$summary"
    [[ $rc -eq 0 ]] && echo "${TESTS:-*}" >"$lab/bin/$v/tests-passed"
  fi
  if [[ ! -e "$lab/bin/$v/tests-passed" ]]; then
    log "$v: not timed (its tests have not passed on this machine)"
    continue
  fi
  timed+=("$v")
done

if want bench; then
  order=("${timed[@]}")
  for (( k=${#timed[@]}-1; k>=0; k-- )); do order+=("${timed[k]}"); done
  half=${#timed[@]}
  log "bench order: ${order[*]}; columns: variant capacity graph_us graph_ops sample_us update_us"
  for (( k=0; k<${#order[@]}; k++ )); do
    if [[ $k -eq $half && "${PEER:-1}" != 0 ]]; then
      python3 bench/peer_replay.py >"$LOGS/peer.log" 2>&1
      log "peer: $(grep -E '^RESULT' "$LOGS/peer.log" | tr '\n' ' ')"
    fi
    v=${order[k]}
    timeout "${BENCH_TIMEOUT:-180}" "$lab/bin/$v/bench_replay" $caps >"$LOGS/bench-$v-$k.log" 2>&1
    awk -F'|' -v v="$v" '/^\| [0-9]/ { gsub(/ /, ""); print v, $2, $7, $8, $10, $11 }' \
      "$LOGS/bench-$v-$k.log" | tee -a "$summary"
  done
fi
