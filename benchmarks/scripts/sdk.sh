#!/usr/bin/env bash
# Runs the SDK benchmark (see docs/performance.md, "The SDK").
#   bash benchmarks/scripts/sdk.sh [--calls 1000] [--warmup 300] [--stream-only] [--stream-reps 5] [--stream-mib 256]
#        [--plots target/bench-plots] [--smoke]
# Builds the benchmarks module first if its jar is missing or older than its sources.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/launch.sh"
launch dev.sandboxsdk.bench.sdk.SdkBench -- "$@"
