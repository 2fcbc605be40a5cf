#!/usr/bin/env bash
# Runs the SDK benchmark (see docs/performance.md, "The SDK").
#   bash sandbox-sdk/bench/run.sh [--calls 1000] [--warmup 300] [--stream-only] [--stream-reps 5] [--stream-mib 256]
#        [--plots target/bench-plots] [--smoke]
# Builds the samples jar (SDK + agent + dependencies) first if it is missing.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/launch.sh"
launch SdkBench.java -- "$@"
