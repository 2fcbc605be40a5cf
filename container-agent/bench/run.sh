#!/usr/bin/env bash
# Runs the container-agent benchmark (see docs/performance.md).
#   bash container-agent/bench/run.sh [AgentBench options...]     (--smoke: seconds-long, for CI)
# Builds the agent jar first if it is missing. Needs only a JDK 17+ (and ./mvnw for the build).
# The benchmark is compiled together with the plot writer bench/Svg.java into a temporary directory.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
jar="$root/container-agent/target/container-agent.jar"
if [[ ! -f "$jar" ]]; then
  echo "run.sh: $jar is missing; building it" >&2
  (cd "$root" && ./mvnw -q -B -pl container-agent package -DskipTests)
fi
java_bin="java"
javac_bin="javac"
if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then
  java_bin="$JAVA_HOME/bin/java"
  javac_bin="$JAVA_HOME/bin/javac"
fi
classes="$(mktemp -d)"
trap 'rm -rf "$classes"' EXIT
"$javac_bin" -nowarn -d "$classes" "$here/AgentBench.java" "$root/bench/Svg.java"
cd "$root"
"$java_bin" -cp "$classes" AgentBench --jar "$jar" "$@"
