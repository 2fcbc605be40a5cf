#!/usr/bin/env bash
# Runs the container-agent benchmark (see docs/performance.md).
#   bash container-agent/bench/run.sh [AgentBench options...]
# Builds the agent jar first if it is missing. Needs only a JDK 17+ (and ./mvnw for the build).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
jar="$root/container-agent/target/container-agent.jar"
if [[ ! -f "$jar" ]]; then
  echo "run.sh: $jar is missing; building it" >&2
  (cd "$root" && ./mvnw -q -B -pl container-agent package -DskipTests)
fi
java_bin="java"
if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then
  java_bin="$JAVA_HOME/bin/java"
fi
cd "$root"
exec "$java_bin" "$here/AgentBench.java" --jar "$jar" --self "$here/AgentBench.java" "$@"
