#!/usr/bin/env bash
# Runs the checkpoint benchmark (see docs/performance.md, "Checkpoints").
#   bash benchmarks/scripts/checkpoints.sh [--mib 1024] [--small 10000] [--runs 1]
# Builds the benchmarks module first if its jar is missing or older than its sources.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/launch.sh"
launch dev.sandboxsdk.bench.sdk.CheckpointBench -Xmx256m -- "$@"
