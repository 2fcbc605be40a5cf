#!/usr/bin/env bash
# Runs the terminal benchmark (see docs/performance.md, "Terminals").
#   bash sandbox-sdk/bench/terminal.sh [--keys 500] [--terminals 50,200] [--isolation none|required]
# Builds the samples jar (SDK + agent + dependencies) first if it is missing.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/launch.sh"
launch TerminalBench.java -Xmx256m -- "$@"
