#!/usr/bin/env bash
# Runs the file transfer benchmark (see docs/performance.md, "Files").
#   bash benchmarks/scripts/files.sh [--mib 1024] [--runs 2]
# Builds the benchmarks module first if its jar is missing or older than its sources.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/launch.sh"
launch dev.sandboxsdk.bench.sdk.FilesBench -Xmx256m -- "$@"
