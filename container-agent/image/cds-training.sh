#!/bin/bash
# Makes /opt/sandbox-agent/agent.jsa, the AppCDS archive of the classes the agent loads: run once
# by the Dockerfile (RUN), after the jar is in place. Starts the agent through start.sh (so with the
# very JVM, flags and jar it runs with later) plus -XX:ArchiveClassesAtExit, sends it the requests
# a sandbox typically starts with, and stops it with SIGTERM; the JVM writes the archive as it
# exits. start.sh then passes -XX:SharedArchiveFile, and the classes come mapped from the archive
# instead of being read, parsed and verified from the jar (the JDK's own come from the archive
# jlink made). Arguments: the agent's, like the image's CMD (this script adds a scratch --workspace
# owned by uid 1000, removed afterwards like everything else it makes).
# The archive is only valid for this jar and this JVM; if either changes, the JVM ignores it
# (and starts more slowly), so run this again after replacing the jar in a derived image.
set -euo pipefail
dir=/opt/sandbox-agent
jsa=$dir/agent.jsa
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
install -d -m 755 -o 1000 -g 1000 "$work/workspace"
rm -f "$jsa"
SANDBOX_AGENT_TOKEN=cds-training JDK_JAVA_OPTIONS="-XX:ArchiveClassesAtExit=$jsa" \
  "$dir/start.sh" "$@" --workspace "$work/workspace" >"$work/out" 2>"$work/log" &
pid=$!
for _ in $(seq 300); do
  grep -q '^SANDBOX_AGENT_READY ' "$work/out" && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
port=$(sed -n 's/^SANDBOX_AGENT_READY .*"port":\([0-9]*\).*/\1/p' "$work/out")
[[ -n $port ]] || { echo "the agent did not start" >&2; cat "$work/log" >&2; exit 1; }

request() { # METHOD PATH [JSON BODY]: one HTTP/1.0 request, answer checked for a 2xx status
  local body=${3:-} status
  exec 3<>"/dev/tcp/127.0.0.1/$port"
  printf '%s %s HTTP/1.0\r\nAuthorization: Bearer cds-training\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' \
    "$1" "$2" "${#body}" "$body" >&3
  read -r _ status _ <&3
  cat <&3 >/dev/null
  exec 3<&-
  [[ $status == 2* ]] || { echo "$1 $2: HTTP $status" >&2; exit 1; }
}
request GET /api/ping
request POST /api/execute '{"command":"echo out; echo err >&2"}'
request POST /api/execute '{"argv":["true"],"env":{"A":"b"},"timeoutMs":5000}'
request POST /api/execute/stream '{"command":"echo streamed"}'
request POST /api/process/start '{"command":"echo bg; sleep 30","processId":"cds"}'
request GET /api/process/cds
request GET /api/process/list
request GET /api/process/cds/logs
request DELETE '/api/process/cds?graceMs=1000'
sleep 1.5

kill -TERM "$pid"
status=0
wait "$pid" || status=$?
# 143: stopped by SIGTERM, the agent's normal way to stop.
[[ $status == 143 && -s $jsa ]] || { echo "agent exit $status, archive missing" >&2; cat "$work/log" >&2; exit 1; }
echo "AppCDS archive $jsa: $(stat -c %s "$jsa") bytes"
