#!/usr/bin/env bash
# Runs the container-agent benchmark (see docs/performance.md).
#   bash benchmarks/scripts/agent.sh [AgentBench options...]     (--smoke: seconds-long, for CI)
# Builds the benchmarks module and the agent jar first if they are missing. Needs only a JDK 17+
# (and ./mvnw for the build).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/launch.sh"
bench_build
bench_agent_jar
launch --jdk-only dev.sandboxsdk.bench.agent.AgentBench -- --jar "$bench_root/container-agent/target/container-agent.jar" "$@"
