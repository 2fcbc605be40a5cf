#!/usr/bin/env bash
# Reproduces every figure of docs/performance.md: runs each benchmark in turn, in the foreground,
# and writes its text output (<name>.txt) and its SVG plots into one directory.
#   bash benchmarks/all.sh [--smoke] [OUT_DIR]        (default OUT_DIR: target/bench/<UTC time>)
# 8 minutes on the 2-core machine of docs/performance.md at load 7-12 (--smoke: 1-2 minutes). Builds
# the jars it needs first if they are missing (each script in benchmarks/scripts/ does). Run it on an otherwise idle machine, not with `&`
# from a non-interactive shell (see docs/performance.md, "Reproduce"). Exits non-zero if any
# benchmark failed (a verification, not a timing: no figure is asserted).
set -uo pipefail
cd "$(dirname "$0")/.."
smoke=()
if [[ "${1:-}" == "--smoke" ]]; then
  smoke=(--smoke)
  shift
fi
out="${1:-target/bench/$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
failed=()
started=$SECONDS

# name, then the command; its output goes to the terminal and to $out/<name>.txt
run() {
  local name="$1"
  shift
  local t0=$SECONDS
  echo "== $name: $*" | tee "$out/$name.txt"
  echo "   load average: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/$name.txt"
  if "$@" 2>&1 | tee -a "$out/$name.txt"; then
    echo "== $name: done in $((SECONDS - t0)) s"
  else
    echo "== $name: FAILED after $((SECONDS - t0)) s (see $out/$name.txt)"
    failed+=("$name")
  fi
}

files=(--mib 1024 --runs 2)
[[ ${#smoke[@]} -gt 0 ]] && files=(--mib 8 --runs 1)
run agent-bench bash benchmarks/scripts/agent.sh ${smoke[@]+"${smoke[@]}"} --plots "$out"
run sdk-bench bash benchmarks/scripts/sdk.sh ${smoke[@]+"${smoke[@]}"} --plots "$out"
run cancel-bench bash benchmarks/scripts/cancel.sh ${smoke[@]+"${smoke[@]}"}
run files-bench bash benchmarks/scripts/files.sh "${files[@]}"
run isolation-bench bash benchmarks/scripts/isolation.sh ${smoke[@]+"${smoke[@]}"}
run egress-bench bash benchmarks/scripts/egress.sh ${smoke[@]+"${smoke[@]}"}
run code-bench bash benchmarks/scripts/code.sh ${smoke[@]+"${smoke[@]}"}
run mcp-bench bash benchmarks/scripts/mcp.sh ${smoke[@]+"${smoke[@]}"}

echo
echo "all benchmarks: $((SECONDS - started)) s; text output and plots in $out:"
ls "$out"
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "FAILED: ${failed[*]}"
  exit 1
fi
