#!/usr/bin/env bash
# Runs the MCP server benchmark (see docs/performance.md, "The MCP server").
#   bash benchmarks/scripts/mcp.sh [--calls 2000] [--warmup 1000] [--cold-starts 5]
#        [--stream-bytes 67108864] [--stream-reps 5] [--concurrent 20] [--server-jvm-opts "..."]
#   bash benchmarks/scripts/mcp.sh --smoke   (seconds: every part once, results checked, for CI)
# Builds the benchmarks module and the server jar (SDK + agent + Jackson in one jar) first if they
# are missing: the server jar offline if the local Maven repository has everything, else with
# network. The benchmark runs from private copies of both jars, so a rebuild during the run does not
# disturb it. Run it in the foreground on an otherwise idle machine; it takes about 4 minutes and
# ends with a SUMMARY block.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/launch.sh"
root="$bench_root"
bench_build
jar="$root/sandbox-sdk-mcp-adapter/target/sandbox-mcp.jar"
if [[ ! -f "$jar" ]]; then
  echo "mcp.sh: $jar is missing; building it" >&2
  (cd "$root" && { ./mvnw -q -B -o -pl sandbox-sdk-mcp-adapter -am package -DskipTests \
    || ./mvnw -q -B -pl sandbox-sdk-mcp-adapter -am package -DskipTests; })
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/mcp-bench-run.XXXXXX")"
cleanup() {
  # The benchmark stops its servers itself (also on failure); this only catches servers left by a
  # benchmark JVM that was killed outright. Only processes running our private jar copy are touched.
  if [[ -f "$work/pids" ]]; then
    while read -r pid; do
      if [[ -n "$pid" && -r "/proc/$pid/cmdline" ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$work/sandbox-mcp.jar"; then
        echo "mcp.sh: stopping leftover server $pid" >&2
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
cp "$bench_jar" "$work/benchmarks.jar"

cd "$root"
# The server jar first: the benchmark's SDK, agent and Jackson are the server's own.
"$bench_java" -cp "$work/sandbox-mcp.jar:$work/benchmarks.jar" -Djava.io.tmpdir="$work" \
  -Dorg.slf4j.simpleLogger.defaultLogLevel=warn dev.sandboxsdk.bench.mcp.McpBench \
  --jar "$work/sandbox-mcp.jar" --jar-origin "$jar" --repo "$root" --pid-file "$work/pids" "$@"
