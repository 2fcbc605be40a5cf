#!/usr/bin/env bash
# Runs the isolation benchmark: what --isolation bwrap costs per command (see docs/performance.md,
# "Isolated commands").
#   bash benchmarks/scripts/isolation.sh [--calls 500] [--warmup 100] [--modes none,bwrap] [--smoke]
# Builds the benchmarks module and the agent jar first if they are missing. Needs bubblewrap (bwrap).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/launch.sh"
bench_build
bench_agent_jar
launch --jdk-only dev.sandboxsdk.bench.agent.IsolationBench -- "$@"
