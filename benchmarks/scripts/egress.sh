#!/usr/bin/env bash
# Runs the egress benchmark: what the agent's egress proxy adds to a command's HTTPS requests and
# downloads (see docs/performance.md, "Egress proxy").
#   bash benchmarks/scripts/egress.sh [--requests 500] [--warmup 100] [--mib 1024] [--runs 2] [--smoke]
# Builds the benchmarks module and the agent jar first if they are missing.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/launch.sh"
bench_build
bench_agent_jar
launch --jdk-only dev.sandboxsdk.bench.agent.EgressBench -- "$@"
