#!/usr/bin/env bash
# Runs the MCP server benchmark (see docs/performance.md, "The MCP server").
#   bash sandbox-sdk-mcp-adapter/bench/run.sh [--calls 2000] [--warmup 1000] [--cold-starts 5]
#        [--stream-bytes 67108864] [--stream-reps 5] [--concurrent 20] [--server-jvm-opts "..."]
#   bash sandbox-sdk-mcp-adapter/bench/run.sh --smoke   (seconds: every part once, results checked, for CI)
# Builds the server jar (SDK + agent + Jackson in one jar) first if it is missing: offline if the
# local Maven repository has everything, else with network. The benchmark runs from a private copy
# of the jar, so a rebuild during the run does not disturb it. Run it in the foreground on an
# otherwise idle machine; it takes about 4 minutes and ends with a SUMMARY block.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
jar="$root/sandbox-sdk-mcp-adapter/target/sandbox-mcp.jar"
if [[ ! -f "$jar" ]]; then
  echo "run.sh: $jar is missing; building it" >&2
  (cd "$root" && { ./mvnw -q -B -o -pl sandbox-sdk-mcp-adapter -am package -DskipTests \
    || ./mvnw -q -B -pl sandbox-sdk-mcp-adapter -am package -DskipTests; })
fi
java_bin="java"
if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then
  java_bin="$JAVA_HOME/bin/java"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/mcp-bench-run.XXXXXX")"
cleanup() {
  # The benchmark stops its servers itself (also on failure); this only catches servers left by a
  # benchmark JVM that was killed outright. Only processes running our private jar copy are touched.
  if [[ -f "$work/pids" ]]; then
    while read -r pid; do
      if [[ -n "$pid" && -r "/proc/$pid/cmdline" ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$work/sandbox-mcp.jar"; then
        echo "run.sh: stopping leftover server $pid" >&2
        kill -TERM "$pid" 2>/dev/null || true
      fi
    done <"$work/pids"
    sleep 1
    while read -r pid; do
      if [[ -n "$pid" && -r "/proc/$pid/cmdline" ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$work/sandbox-mcp.jar"; then
        kill -KILL "$pid" 2>/dev/null || true
      fi
    done <"$work/pids"
  fi
  rm -rf "$work"
}
trap cleanup EXIT
cp "$jar" "$work/sandbox-mcp.jar"

cd "$root"
"$java_bin" -cp "$work/sandbox-mcp.jar" -Djava.io.tmpdir="$work" -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
  "$here/McpBench.java" \
  --jar "$work/sandbox-mcp.jar" --jar-origin "$jar" --repo "$root" --pid-file "$work/pids" "$@"
