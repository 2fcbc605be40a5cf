#!/usr/bin/env bash
# Start-up benchmark of container sandboxes beside LocalSandbox (see docs/containers.md, "Start-up").
#   bash benchmarks/scripts/container.sh [--runs 5] [--image sandbox-agent]
# Needs a container engine with the agent image; builds the benchmarks module first if its jar is
# missing or older than its sources.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/launch.sh"
launch dev.sandboxsdk.bench.container.StartBench -- "$@"
