#!/usr/bin/env bash
# Runs the terminal benchmark (see docs/performance.md, "Terminals").
#   bash benchmarks/scripts/terminal.sh [--keys 500] [--terminals 50,200] [--isolation none|required]
# Builds the benchmarks module first if its jar is missing or older than its sources.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/launch.sh"
launch dev.sandboxsdk.bench.sdk.TerminalBench -Xmx256m -- "$@"
