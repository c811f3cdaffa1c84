#!/usr/bin/env bash
# Nsight Compute on the GPU machine, for what the probe cannot say: one update_kernel launch from
# the pair graph at 1e5 and one sample_kernel launch from the pair graph at 1e7 (bench_replay's
# launch counts: 2,000 warm-up, then 1,600 per mode; the pair graph is the fourth mode), each with
# the full section set and the per-instruction SASS page (warp stall samples, memory counters).
# Writes ncu/<kernel>.txt (details), ncu/<kernel>-sass.csv (source page) and the reports, packed
# into $OUT/ncu.tgz. Usage: B=out/bin/main OUT=dir lab/replay/ncu-kernels.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64"
B="${B:-out/bin/main}"
OUT="${OUT:-$PWD/lab-out}"
mkdir -p "$OUT/ncu"
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [[ -z "$ncu" ]]; then
  echo "ncu: not found"; ls /usr/local/cuda/bin /opt/nvidia 2>&1 | head -40; exit 1
fi
"$ncu" --version | tail -1
profile() {  # kernel, capacity
  local rep="$OUT/ncu/$1"
  timeout 240 "$ncu" --set full --import-source no --warp-sampling-interval 0 \
    -k "regex:$1" --launch-skip 5300 --launch-count 1 -f -o "$rep" \
    "$B/bench_replay" "$2" >"$OUT/ncu/$1-run.log" 2>&1
  echo "$1 at $2: exit $? $(tail -2 "$OUT/ncu/$1-run.log" | tr '\n' ' ')"
  "$ncu" -i "$rep.ncu-rep" --page details >"$OUT/ncu/$1.txt" 2>&1
  "$ncu" -i "$rep.ncu-rep" --page source --csv --print-source sass >"$OUT/ncu/$1-sass.csv" 2>&1 ||
    "$ncu" -i "$rep.ncu-rep" --page source --csv >"$OUT/ncu/$1-sass.csv" 2>&1
  head -c 300 "$OUT/ncu/$1-sass.csv"; echo
}
profile update_kernel 100000
profile sample_kernel 10000000
(cd "$OUT" && tar -czf ncu.tgz ncu && rm -rf ncu)
