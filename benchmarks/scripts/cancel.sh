#!/usr/bin/env bash
# Runs the cancel-latency benchmark (see docs/performance.md, "Cancel").
#   bash benchmarks/scripts/cancel.sh [--rounds 20] [--smoke]
# Builds the benchmarks module first if its jar is missing or older than its sources.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/launch.sh"
launch dev.sandboxsdk.bench.sdk.CancelBench -- "$@"
