#!/usr/bin/env bash
# Runs the cancel-latency benchmark (see docs/performance.md, "Cancel").
#   bash sandbox-sdk/bench/cancel.sh [--rounds 20] [--smoke]
# Builds the samples jar (SDK + agent + dependencies) first if it is missing.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/launch.sh"
launch CancelBench.java -- "$@"
