#!/usr/bin/env bash
# Builds test_replay and bench_replay for lab/replay/binaries-call.sh: one folder out/bin/<name>/
# per spec, from this checkout's HEAD commit (uncommitted changes are not included) with the spec's
# patches applied in order. A spec is `name` (HEAD as it is) or `name=patch[+patch...]`.
# One git worktree and one CUDA Release build folder (sm_90) serve every spec, so each spec after
# the first rebuilds only what its patches touch. Each folder gets a SOURCE file naming the commit
# and the patches with their checksums, which binaries-call.sh prints beside the figures.
# Usage:
#   lab/replay/build-binaries.sh main va=lab/replay/va.patch \
#     va-probe=lab/replay/va.patch+lab/replay/probe.patch
# TREE and BUILD set the worktree and build folders (default under /tmp).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
commit=$(git rev-parse HEAD)
tree=${TREE:-/tmp/redline-lab-tree}
build=${BUILD:-/tmp/redline-lab-build}
if [[ $# -eq 0 ]]; then
  echo "build-binaries: name at least one build, e.g. main or va=lab/replay/va.patch" >&2
  exit 2
fi
for spec in "$@"; do  # every patch must exist before anything is built
  [[ $spec == *=* ]] || continue
  IFS=+ read -r -a patches <<<"${spec#*=}"
  for p in "${patches[@]}"; do
    [[ -f $p ]] || { echo "build-binaries: $p (in $spec) does not exist" >&2; exit 2; }
  done
done
if [[ ! -e $tree/.git ]]; then
  git worktree add -q --detach "$tree" "$commit"
fi
if [[ ! -f $build/build.ninja ]]; then
  cmake -S "$tree" -B "$build" -G Ninja -DREDLINE_GPU=cuda -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90 >"$build.configure.log" 2>&1 ||
    { echo "build-binaries: configure failed, see $build.configure.log" >&2; exit 1; }
fi
for spec in "$@"; do
  name=${spec%%=*}
  git -C "$tree" reset -q --hard "$commit"
  git -C "$tree" clean -qfd
  source_lines=("commit $commit")
  if [[ $spec == *=* ]]; then
    IFS=+ read -r -a patches <<<"${spec#*=}"
    for p in "${patches[@]}"; do
      git -C "$tree" apply "$root/$p" ||
        { echo "build-binaries: $p does not apply to $commit" >&2; exit 1; }
      source_lines+=("patch $p $(sha256sum "$p" | cut -c1-16)")
    done
  fi
  echo "build-binaries: $name" >&2
  ninja -C "$build" test_replay bench_replay >"$build.$name.log" 2>&1 ||
    { echo "build-binaries: $name failed to build, see $build.$name.log" >&2; exit 1; }
  mkdir -p "out/bin/$name"
  cp "$build/tests/test_replay" "$build/bench/bench_replay" "out/bin/$name/"
  printf '%s\n' "${source_lines[@]}" >"out/bin/$name/SOURCE"
done
git -C "$tree" reset -q --hard "$commit"
echo "build-binaries: built $* into out/bin" >&2
