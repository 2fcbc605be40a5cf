#!/usr/bin/env bash
# Start-up benchmark of container sandboxes beside LocalSandbox (see docs/containers.md, "Start-up").
#   bash sandbox-sdk-container/bench/run.sh [--runs 5] [--image sandbox-agent]
# Needs a container engine with the agent image; builds the modules it runs first.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"
cp_file=$(mktemp)
trap 'rm -f "$cp_file"' EXIT
# One reactor run, so the SDK resolves from it: every module writes the file, the container module last.
./mvnw -q -B -pl container-agent,sandbox-sdk-container -am package dependency:build-classpath -DskipTests \
  -Dmdep.outputFile="$cp_file" -Dmdep.includeScope=runtime
cp="sandbox-sdk-container/target/classes:$(cat "$cp_file"):container-agent/target/container-agent.jar"
java_bin="java"
if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then
  java_bin="$JAVA_HOME/bin/java"
fi
exec "$java_bin" -cp "$cp" -Dorg.slf4j.simpleLogger.defaultLogLevel=warn "$here/StartBench.java" "$@"
