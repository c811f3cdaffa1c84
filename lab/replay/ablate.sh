#!/usr/bin/env bash
# Where update's time goes: throwaway builds of the mainline with one part of update_kernel
# removed each (their trees are wrong, so they are timed only, never tested or landed), timed by
# bench_replay at one capacity in the order A, each ablation, A. Output: $OUT/ablate.txt, one line
# per build (the bench's row: graph, sample and update µs).
# Ablations:
#   wait     update returns right after its wait for the kernel before (launch and wait only)
#   levels   no ancestor levels (phase 1, the checks and the leaves only)
#   power    the new leaf is the priority itself, not priority^alpha
#   oldleaf  no load of the old leaf (every slot taken as sampleable)
#   levels=N only the N lowest ancestor levels (the time of each level, from N = 1, 2, ...)
#   steps=N  with PATCH set to variant 07's patch: only its N lowest steps
#   atomics  the sum block adds each last occurrence's change (new leaf - old leaf) to its
#            ancestors with one atomic add per level and skips the level-by-level recomputation;
#            the min block skips its levels too: the floor of a sum tree whose sums do not depend
#            on their order (masses on a common grid, branch replay-grid), with the min tree's levels
#            taken off update's path
#   atomics-min  the same, but the min block keeps its levels
#   l2leaves the draws' loads of leaves (the last step's grandchildren) and the slots they return
#            wrap into the first 2^21 leaves (16 MiB), which stay in L2, so update's leaf traffic
#            stays there too: what leaves resident in L2 would give at capacities whose leaves do
#            not fit. Read its sample column only: the wrapped slots are no longer sorted, so its
#            update takes the hash table's path (0.7 µs more at 1e7, bench/RESULTS.md)
#   atomics-l2leaves  both of the above
#   file=PATH  the kernel replaced by PATH (relative to the tree's root): an edited copy
# PATCH: a patch (lab/apply_patch.py) applied to every build, A included, before its ablation;
# a dropped variant's patch comes back from git, e.g.
#   git show baa0c87:lab/replay/07-update-lines-one-barrier-per-level.patch >lab/replay/07.patch
# (left untracked, so that the device tool carries it).
# BATCH: the batch of every timed run (bench_replay --batch; 128 unless set).
# CAP: one capacity or several, separated by spaces (each build is timed at each).
# Usage: CAP=10000000 OUT=dir [PATCH=file] [BATCH=n] lab/replay/ablate.sh [ablation ...]
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
OUT="${OUT:-$root/lab-out}"
CAP="${CAP:-10000000}"
BATCH="${BATCH:-128}"
mkdir -p "$OUT"
export PATH="$PATH:/usr/local/cuda/bin"
ablations=("$@")
[[ ${#ablations[@]} -gt 0 ]] || ablations=(wait levels power oldleaf)
work=build/ablate
# As lab/replay/run.sh: only files whose content differs are copied (an earlier call's patch and
# ablation among them), so that a warm machine rebuilds only what changed.
(find . \( -path ./build -o -path ./.git -o -path ./lab-out \) -prune -o -type f -print) |
  while IFS= read -r f; do
    if ! cmp -s "$f" "$work/tree/$f"; then
      mkdir -p "$work/tree/$(dirname "$f")" && cp "$f" "$work/tree/$f"
    fi
  done
kernel="$work/tree/src/backend/gpu/replay_tree.cu"
if [[ -n "${PATCH:-}" ]]; then
  patch_file="$PATCH"
  [[ "$patch_file" == /* ]] || patch_file="$root/$patch_file"
  (cd "$work/tree" && python3 "$root/lab/apply_patch.py" "$patch_file") || { echo "PATCH does not apply"; exit 1; }
fi
cp "$kernel" "$work/kernel.orig"
cmake -S "$work/tree" -B "$work/obj" -G Ninja -DREDLINE_GPU=cuda -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES=90 >"$OUT/ablate-configure.log" 2>&1 || { echo "configure failed"; exit 1; }
edit() {  # one ablation's change to the kernel; fails if its anchor is gone
  local file="$1" name="$2"
  case "$name" in
    A) return 0 ;;
    wait) python3 - "$file" <<'PY' ;;
import sys
p = sys.argv[1]; s = open(p).read()
a = "  wait_for_previous_grid();  // before any global read: the indices may come from the kernel before\n"
assert s.count(a) == 1; open(p, "w").write(s.replace(a, a + "  if (batch > 0) return;\n"))
PY
    levels) python3 - "$file" <<'PY' ;;
import sys, re
p = sys.argv[1]; s = open(p).read()
n = len(re.findall(r"\n    update_ancestors<(true|false)>\(v, batch, indices, staged_index, use_staged\);", s))
assert n == 2
s = re.sub(r"\n    update_ancestors<(true|false)>\(v, batch, indices, staged_index, use_staged\);", "\n    (void)0;", s)
open(p, "w").write(s)
PY
    power) python3 - "$file" <<'PY' ;;
import sys
p = sys.argv[1]; s = open(p).read()
a = "priority_power(p_ok ? static_cast<double>(p) : 1.0, v.alpha)"
assert s.count(a) == 1; open(p, "w").write(s.replace(a, "(p_ok ? static_cast<double>(p) : 1.0)"))
PY
    oldleaf) python3 - "$file" <<'PY' ;;
import sys
p = sys.argv[1]; s = open(p).read()
a = "const double old_leaf = v.sum[leaf0 + (idx_ok ? idx : 0)];"
assert s.count(a) == 1; open(p, "w").write(s.replace(a, "const double old_leaf = idx_ok ? 1.0 : 0.0;"))
PY
    levels=*) python3 - "$file" "${name#levels=}" <<'PY' ;;
import sys
p, n = sys.argv[1], int(sys.argv[2]); s = open(p).read()
a = "      if (d >= leaf_level) continue;  // the same in every thread\n"
assert s.count(a) == 1
open(p, "w").write(s.replace(a, "      if (d >= leaf_level || d < leaf_level - %d) continue;\n" % n))
PY
    steps=*) python3 - "$file" "${name#steps=}" <<'PY' ;;
import sys
p, n = sys.argv[1], int(sys.argv[2]); s = open(p).read()
a = "    if (k > leaf_level) break;  // the same in every thread\n"
assert s.count(a) == 1
open(p, "w").write(s.replace(a, "    if (k > leaf_level || k > %d) break;\n" % n))
PY
    atomics|atomics-min) python3 - "$file" "$name" <<'PY' ;;
import sys
p, name = sys.argv[1], sys.argv[2]; s = open(p).read()
def once(a, b):
    global s
    assert s.count(a) == 1, a
    s = s.replace(a, b)
once("  double new_leaf = 0.0;", "  double new_leaf = 0.0, old_kept = 0.0;")
once("const double old_leaf = v.sum[leaf0 + (idx_ok ? idx : 0)];",
     "const double old_leaf = v.sum[leaf0 + (idx_ok ? idx : 0)]; old_kept = old_leaf;")
once("    if (last && new_leaf > 0.0) set_leaf(v, my_index, new_leaf);\n",
     "    if (last && new_leaf > 0.0) set_leaf(v, my_index, new_leaf);\n"
     "    if (!mins && last && new_leaf > 0.0) {\n"
     "      const double delta = new_leaf - old_kept;\n"
     "#pragma unroll\n"
     "      for (int d = kMaxLevels - 2; d >= 0; --d) {  // unrolled: a computed loop cost 0.4 us\n"
     "        if (d >= leaf_level) continue;\n"
     "        atomicAdd(&v.sum[v.tree.offset[d] + (my_index >> (kFanoutBits * (leaf_level - d)))], delta);\n"
     "      }\n"
     "    }\n")
once("    update_ancestors<false>(v, batch, indices, staged_index, use_staged);", "    (void)0;")
if name == "atomics":
    once("    update_ancestors<true>(v, batch, indices, staged_index, use_staged);", "    (void)0;")
open(p, "w").write(s)
PY
    l2leaves) python3 - "$file" <<'PY' ;;
import sys
p = sys.argv[1]; s = open(p).read()
a = "  const double* at = v.sum + start + (first + h) * kFanout + j;"
assert s.count(a) == 1
# The leaf level's loads wrapped into its first 2^21 leaves (16 MiB), which stay in L2.
b = ("  const int64_t row0 = (first + h) * kFanout;\n"
     "  const double* at = v.sum + start + (d + 3 == v.tree.levels ? (row0 & ((int64_t{1} << 21) - 1)) : row0) + j;")
s = s.replace(a, b)
# The returned slots wrap too, so that update's leaf traffic stays in the same 16 MiB.
a = "      indices[i] = node;"
assert s.count(a) == 1
open(p, "w").write(s.replace(a, "      indices[i] = node & ((int64_t{1} << 21) - 1);"))
PY
    atomics-l2leaves) edit "$file" atomics && edit "$file" l2leaves ;;
    file=*) cp "$root/${name#file=}" "$file" ;;
    *) echo "unknown ablation $name"; return 1 ;;
  esac
}
: >"$OUT/ablate.txt"
for name in A "${ablations[@]}" A; do
  cp "$work/kernel.orig" "$kernel"
  if ! edit "$kernel" "$name"; then echo "$name: edit failed" | tee -a "$OUT/ablate.txt"; continue; fi
  if ! ninja -C "$work/obj" bench_replay >"$OUT/ablate-build-${name//[^A-Za-z0-9.-]/_}.log" 2>&1; then
    echo "$name: build failed" | tee -a "$OUT/ablate.txt"; continue
  fi
  for cap in $CAP; do
    row=$(timeout 120 "$work/obj/bench/bench_replay" --batch "$BATCH" "$cap" 2>&1 | grep -E "^\| *$cap " | head -1)
    echo "$name $row" | tee -a "$OUT/ablate.txt"
  done
done
