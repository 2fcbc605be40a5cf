#!/usr/bin/env bash
# Builds the agent image and checks it by running it: ready line, commands run as the
# unprivileged user without the token, streaming, kill, timeout, zombie reaping, and a clean,
# quick stop on SIGTERM. Exits non-zero if any check fails.
#   bash container-agent/image/build-and-check.sh
# Environment (all optional):
#   ENGINE       podman or docker (default: podman if installed, else docker)
#   IMAGE        tag to build (default sandbox-agent:check)
#   BASE_IMAGE   passed as --build-arg, e.g. localhost/debian:bookworm where no registry is reachable
#   EXTRA_FLAGS  added to both `build` and `run`, e.g. "--runtime runc --ulimit nofile=20000:20000"
#   PORT         host port, bound to 127.0.0.1 (default 3999)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
engine=${ENGINE:-$(command -v podman >/dev/null 2>&1 && echo podman || echo docker)}
image=${IMAGE:-sandbox-agent:check}
port=${PORT:-3999}
name="sandbox-agent-check-$$"
token="check-$RANDOM$RANDOM"
read -r -a extra <<<"${EXTRA_FLAGS:-}"
build_args=()
[[ -n "${BASE_IMAGE:-}" ]] && build_args=(--build-arg "BASE_IMAGE=$BASE_IMAGE")

(cd "$root" && ./mvnw -q -B -pl container-agent package -DskipTests)
"$engine" build "${extra[@]}" "${build_args[@]}" -t "$image" "$root/container-agent"

trap '"$engine" rm -f "$name" >/dev/null 2>&1 || true' EXIT
url="http://127.0.0.1:$port"
auth="Authorization: Bearer $token"
now_ms() { echo $(($(date +%s%N) / 1000000)); }
api() { curl -sS -H "$auth" "$@"; }
failures=0
check() { # check DESCRIPTION COMMAND...: runs the command, prints ok or FAIL
  if "${@:2}"; then echo "ok   $1"; else echo "FAIL $1"; failures=$((failures + 1)); fi
}
has() { grep -qF -- "$2" <<<"$1"; }

start=$(now_ms)
"$engine" run -d --name "$name" "${extra[@]}" -e SANDBOX_AGENT_TOKEN="$token" -p "127.0.0.1:$port:3000" "$image" >/dev/null
for _ in $(seq 300); do
  "$engine" logs "$name" 2>/dev/null | grep -q '^SANDBOX_AGENT_READY ' && break
  sleep 0.1
done
ready_ms=$(($(now_ms) - start))
check "ready line on stdout (${ready_ms} ms after run)" has "$("$engine" logs "$name" 2>/dev/null)" 'SANDBOX_AGENT_READY {'
check "GET /api/ping" has "$(curl -sS "$url/api/ping")" '"status":"healthy"'
check "commands run as uid 1000 in /workspace and do not see the token" \
  has "$(api -d '{"command":"id -u; pwd; echo \"[$SANDBOX_AGENT_TOKEN]\""}' "$url/api/execute")" '"stdout":"1000\n/workspace\n[]\n"'
check "execute/stream ends with complete and the exit code" \
  has "$(api -N -d '{"command":"echo out; echo err >&2; exit 3"}' "$url/api/execute/stream")" '"type":"complete","exitCode":3'
api -d '{"command":"sleep 300 & echo hi","processId":"bg"}' "$url/api/process/start" >/dev/null
sleep 0.5
check "background process with a child" has "$(api "$url/api/process/bg/logs")" '"stdout":"hi\n"'
api -d '{"command":"sleep 100","processId":"victim"}' "$url/api/process/start" >/dev/null
sleep 0.3
api -X DELETE "$url/api/process/victim?graceMs=1000" >/dev/null
sleep 1.5
check "DELETE kills a background process" has "$(api "$url/api/process/victim")" '"status":"killed"'
t=$(now_ms)
out=$(api -d '{"command":"sleep 30","timeoutMs":500}' "$url/api/execute")
took=$(($(now_ms) - t))
timed_out() { [[ $took -lt 5000 ]] && has "$out" '"timedOut":true'; }
check "timeoutMs 500 stops sleep 30 (${took} ms)" timed_out
for _ in $(seq 10); do api -o /dev/null -d '{"command":"sleep 0.1 & exec true"}' "$url/api/execute"; done
sleep 1
zombies=$("$engine" exec "$name" ps -eo stat= | grep -c '^Z' || true)
check "orphans are reaped (zombies: $zombies)" test "$zombies" -eq 0
rss=$("$engine" exec "$name" sh -c 'grep VmRSS /proc/$(pgrep -x java)/status' | tr -s ' \t' ' ')
t=$(now_ms)
"$engine" stop -t 20 "$name" >/dev/null
stop_ms=$(($(now_ms) - t))
status=$("$engine" inspect "$name" --format '{{.State.ExitCode}}')
stopped_cleanly() { [[ $stop_ms -lt 5000 && $status -eq 0 ]]; }
check "SIGTERM stops the agent and its processes (${stop_ms} ms, exit status $status)" stopped_cleanly
echo "image $image: $("$engine" image inspect "$image" --format '{{.Size}}') bytes; agent $rss after the checks"
[[ $failures -eq 0 ]] || { echo "$failures check(s) failed"; "$engine" logs "$name" >&2; exit 1; }
