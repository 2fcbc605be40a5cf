#!/usr/bin/env bash
# Runs the code context benchmark: a run of 1+1 through the agent against the same request on a live
# runner's pipe, and context creation against the interpreter started directly (see
# docs/performance.md, "Code contexts").
#   bash benchmarks/scripts/code.sh [--runs 2000] [--warmup 1000] [--contexts 30] [--languages python,javascript] [--smoke]
# Builds the benchmarks module and the agent jar first if they are missing. A language whose
# interpreter (python3, node) is not on PATH is skipped with a line saying so.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/launch.sh"
bench_build
bench_agent_jar
launch --jdk-only dev.sandboxsdk.bench.agent.CodeBench -- "$@"
