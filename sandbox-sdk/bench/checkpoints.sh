#!/usr/bin/env bash
# Runs the checkpoint benchmark (see docs/performance.md, "Checkpoints").
#   bash sandbox-sdk/bench/checkpoints.sh [--mib 1024] [--small 10000] [--runs 1]
# Builds the samples jar (SDK + agent + dependencies) first if it is missing.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/launch.sh"
launch CheckpointBench.java -Xmx256m -- "$@"
