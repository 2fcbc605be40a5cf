#!/usr/bin/env bash
# Runs the SDK benchmark (see docs/performance.md, "The SDK").
#   bash sandbox-sdk/bench/run.sh [--calls 1000] [--warmup 300] [--stream-only] [--stream-reps 5] [--stream-mib 256]
# Builds the samples jar (SDK + agent + dependencies) first if it is missing.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
jar="$root/samples/target/samples.jar"
if [[ ! -f "$jar" ]]; then
  echo "run.sh: $jar is missing; building it" >&2
  (cd "$root" && ./mvnw -q -B -pl samples -am package -DskipTests)
fi
java_bin="java"
if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then
  java_bin="$JAVA_HOME/bin/java"
fi
cd "$root"
exec "$java_bin" -cp "$jar" -Dorg.slf4j.simpleLogger.defaultLogLevel=warn "$here/SdkBench.java" "$@"
