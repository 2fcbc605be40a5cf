#!/usr/bin/env bash
# Runs the file transfer benchmark (see docs/performance.md, "Files").
#   bash sandbox-sdk/bench/files.sh [--mib 1024] [--runs 2]
# Builds the samples jar (SDK + agent + dependencies) first if it is missing.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/launch.sh"
launch FilesBench.java -Xmx256m -- "$@"
