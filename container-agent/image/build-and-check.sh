#!/usr/bin/env bash
# Builds the agent image and checks it by running it the way the SDK's container provider does:
# all capabilities dropped but SETUID, SETGID, SETPCAP and KILL, no-new-privileges, a read-only
# root, an anonymous volume on /workspace, a tmpfs on /tmp, pids/memory/cpu limits, the port
# published on 127.0.0.1 only; once with the network on and once with SANDBOX_NETWORK=off (plus
# NET_ADMIN, which only the entry script uses). Checks the ready line, ping and HEALTHCHECK, that
# commands run as uid 1000 without capabilities and can neither read the token anywhere, nor
# signal the agent, nor write outside /workspace and /tmp, that with the network off they cannot
# open a connection (and with it on they can), that off without NET_ADMIN refuses to start, that
# the agent keeps only its four capabilities even when the engine grants its defaults, streaming,
# background processes, kill, timeout, zombie reaping, and a clean, quick stop on SIGTERM.
# Exits non-zero if any check fails.
#   bash container-agent/image/build-and-check.sh
# Environment (all optional):
#   ENGINE       podman or docker (default: podman if installed, else docker)
#   IMAGE        tag to build (default sandbox-agent:check)
#   BASE_IMAGE   passed as --build-arg, e.g. localhost/debian:bookworm where no registry is reachable
#   EXTRA_FLAGS  added to both `build` and `run`, e.g. "--runtime runc --ulimit nofile=20000:20000"
#   PORT         host port, bound to 127.0.0.1 (default 3999; PORT+1 for the second container)
#   SKIP_BUILD   1: check the image IMAGE as it is (no jar or image build)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
engine=${ENGINE:-$(command -v podman >/dev/null 2>&1 && echo podman || echo docker)}
image=${IMAGE:-sandbox-agent:check}
port=${PORT:-3999}
port_off=$((port + 1))
name="sandbox-agent-check-$$"
token="check-$RANDOM$RANDOM$RANDOM"
read -r -a extra <<<"${EXTRA_FLAGS:-}"
build_args=()
[[ -n "${BASE_IMAGE:-}" ]] && build_args=(--build-arg "BASE_IMAGE=$BASE_IMAGE")
# Podman keeps HEALTHCHECK only in the docker image format.
[[ $engine == podman ]] && build_args+=(--format docker)
# The provider's policy; SANDBOX_NETWORK=off adds NET_ADMIN.
harden=(--cap-drop ALL --cap-add SETUID,SETGID,SETPCAP,KILL --security-opt no-new-privileges
        --read-only -v /workspace --tmpfs /tmp --pids-limit 1024 --memory 1g --cpus 1)
# Docker runs health checks itself (no `healthcheck run`): make it probe every second.
[[ $engine == podman ]] || harden+=(--health-interval 1s)

if [[ ${SKIP_BUILD:-} != 1 ]]; then
  (cd "$root" && ./mvnw -q -B -pl container-agent package -DskipTests)
  "$engine" build "${extra[@]}" "${build_args[@]}" -t "$image" "$root/container-agent"
fi

containers=()
cleanup() { for c in "${containers[@]}"; do "$engine" rm -f -v "$c" >/dev/null 2>&1 || true; done; }
trap cleanup EXIT
auth="Authorization: Bearer $token"
now_ms() { echo $(($(date +%s%N) / 1000000)); }
failures=0
check() { # check DESCRIPTION COMMAND...: runs the command, prints ok or FAIL
  if "${@:2}"; then echo "ok   $1"; else echo "FAIL $1"; failures=$((failures + 1)); fi
}
has() { grep -qF -- "$2" <<<"$1"; }
lacks() { ! grep -qF -- "$2" <<<"$1"; }
json() { # a JSON string
  local s=${1//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\t'/\\t}
  printf '"%s"' "${s//$'\n'/\\n}"
}
api() { # api PORT PATH [curl args...]
  curl -sS -H "$auth" "http://127.0.0.1:$1$2" "${@:3}" || true
}
run_cmd() { # run_cmd PORT COMMAND [MORE JSON FIELDS]: POST /api/execute, prints the answer
  api "$1" /api/execute -d "{\"command\":$(json "$2")${3:+,$3}}"
}
start() { # start NAME PORT RUN-FLAGS...: runs the image, waits for the ready line; sets ready_ms
  local t
  t=$(now_ms)
  containers+=("$1")
  "$engine" run -d --name "$1" "${extra[@]}" "${@:3}" -e SANDBOX_AGENT_TOKEN="$token" \
    -p "127.0.0.1:$2:3000" "$image" >/dev/null 2> >(grep -v 'systemd' >&2)
  for _ in $(seq 300); do
    "$engine" logs "$1" 2>/dev/null | grep -q '^SANDBOX_AGENT_READY ' && break
    sleep 0.1
  done
  ready_ms=$(($(now_ms) - t))
}
in_container() { "$engine" exec "$1" sh -c "$2"; } # as root, from outside the sandbox's reach
agent_status() { in_container "$1" 'sed -n "/^Cap\|^Uid\|^NoNewPrivs/p" /proc/$(pgrep -x java)/status | tr -s "\t" " "'; }
healthy() { # healthy NAME: HEALTHCHECK state turns healthy within 30 s
  for _ in $(seq 30); do
    [[ $engine == podman ]] && "$engine" healthcheck run "$1" >/dev/null 2>&1
    [[ $("$engine" inspect "$1" --format '{{.State.Health.Status}}') == healthy ]] && return 0
    sleep 1
  done
  return 1
}
stop_cleanly() { # stop_cleanly NAME: SIGTERM stops it within 5 s with exit status 0
  local t status
  t=$(now_ms)
  "$engine" stop -t 20 "$1" >/dev/null 2> >(grep -v systemd >&2)
  stop_ms=$(($(now_ms) - t))
  status=$("$engine" inspect "$1" --format '{{.State.ExitCode}}')
  stop_note="$stop_ms ms, exit status $status"
  [[ $stop_ms -lt 5000 && $status -eq 0 ]]
}
# Probes TCP connections from a command: "HOST/PORT open|refused|blocked" per target (refused:
# the packet got out and the host said no; blocked: the connect failed without an answer).
probe='for t in $TARGETS; do
  if e=$(timeout 3 bash -c "exec 3<>/dev/tcp/$t" 2>&1); then echo "$t open"
  elif echo "$e" | grep -q refused; then echo "$t refused"; else echo "$t blocked"; fi
done'
# Files, environments and command lines of every process a command can read, searched for the
# token, which the command assembles from two halves so that its own command line and
# environment do not hold it.
token_scan='pat=$(mktemp); printf "%s%s\n" "$T1" "$T2" >"$pat"
grep -rlsF -f "$pat" --exclude="${pat##*/}" --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev / \
  /proc/[0-9]*/environ /proc/[0-9]*/cmdline; rm -f "$pat"; echo scanned'
caps_line='sed -n "s/^\(Cap[A-Za-z]*\|NoNewPrivs\):[[:space:]]*/\1=/p" /proc/self/status | tr "\n" " "'
no_caps='CapInh=0000000000000000 CapPrm=0000000000000000 CapEff=0000000000000000 CapBnd=0000000000000000 CapAmb=0000000000000000 NoNewPrivs=1'
# KILL, SETGID, SETUID, SETPCAP: 0x1e0.
agent_caps='CapInh: 0000000000000000 CapPrm: 00000000000001e0 CapEff: 00000000000001e0 CapBnd: 00000000000001e0'

echo "== hardened, network on ($name-on)"
on="$name-on"
start "$on" "$port" "${harden[@]}"
check "ready line on stdout (${ready_ms} ms after run)" has "$("$engine" logs "$on" 2>/dev/null)" 'SANDBOX_AGENT_READY {'
check "GET /api/ping" has "$(curl -sS "http://127.0.0.1:$port/api/ping")" '"status":"healthy"'
check "HEALTHCHECK turns healthy" healthy "$on"
status=$(agent_status "$on")
check "the agent runs as root with SETUID, SETGID, SETPCAP and KILL only" has "$(tr '\n' ' ' <<<"$status")" "Uid: 0 0 0 0 $agent_caps"
check "the JVM maps the AppCDS archive of the agent's classes" \
  has "$(in_container "$on" 'cat /proc/$(pgrep -x java)/maps')" /opt/sandbox-agent/agent.jsa
check "commands run as uid 1000 in /workspace and do not see the token" \
  has "$(run_cmd "$port" 'id -u; pwd; echo "[$SANDBOX_AGENT_TOKEN]"')" '"stdout":"1000\n/workspace\n[]\n"'
check "commands have no capabilities and no-new-privs (/proc/self/status)" has "$(run_cmd "$port" "$caps_line")" "$no_caps"
out=$(run_cmd "$port" 'for p in 1 $(pgrep -x java); do if cat /proc/$p/environ >/dev/null 2>&1; then echo "$p readable"; else echo "$p unreadable"; fi; done')
check "/proc/1/environ and the agent's /proc/<pid>/environ are unreadable to commands" \
  has "$out" '"stdout":"1 unreadable\n'
check "  (the agent's too)" lacks "$out" ' readable\n'
out=$(run_cmd "$port" "$token_scan" "\"env\":{\"T1\":\"${token:0:8}\",\"T2\":\"${token:8}\"},\"timeoutMs\":120000")
check "the token is in no file, environment or command line a command can read" has "$out" '"stdout":"scanned\n"'
out=$(run_cmd "$port" 'for d in / /usr /etc /opt/sandbox-agent /workspace /tmp; do if touch "$d/.w" 2>/dev/null; then rm "$d/.w"; echo "$d rw"; else echo "$d ro"; fi; done')
check "commands cannot write /, /usr, /etc, /opt/sandbox-agent; can write /workspace, /tmp" \
  has "$out" '"stdout":"/ ro\n/usr ro\n/etc ro\n/opt/sandbox-agent ro\n/workspace rw\n/tmp rw\n"'
check "execute/stream ends with complete and the exit code" \
  has "$(api "$port" /api/execute/stream -N -d '{"command":"echo out; echo err >&2; exit 3"}')" '"type":"complete","exitCode":3'
api "$port" /api/process/start -d '{"command":"sleep 300 & echo hi","processId":"bg"}' >/dev/null
sleep 0.5
check "background process with a child" has "$(api "$port" /api/process/bg/logs)" '"stdout":"hi\n"'
api "$port" /api/process/start -d '{"command":"sleep 100","processId":"victim"}' >/dev/null
sleep 0.3
api "$port" '/api/process/victim?graceMs=1000' -X DELETE >/dev/null
sleep 1.5
check "DELETE kills a background process" has "$(api "$port" /api/process/victim)" '"status":"killed"'
t=$(now_ms)
out=$(run_cmd "$port" 'sleep 30' '"timeoutMs":500')
took=$(($(now_ms) - t))
timed_out() { [[ $took -lt 5000 ]] && has "$out" '"timedOut":true'; }
check "timeoutMs 500 stops sleep 30 (${took} ms)" timed_out
for _ in $(seq 10); do run_cmd "$port" 'sleep 0.1 & exec true' >/dev/null; done
sleep 1
zombies=$(in_container "$on" 'ps -eo stat=' | grep -c '^Z' || true)
check "orphans are reaped (zombies: $zombies)" test "$zombies" -eq 0
rss_on=$(in_container "$on" 'grep VmRSS /proc/$(pgrep -x java)/status' | tr -s ' \t' ' ')
out=$(run_cmd "$port" 'kill -9 $(pgrep -x java) 1; echo "status $?"')
check "kill -9 of the agent and of tini from a command fails" has "$out" 'status 1'
check "  and the agent still answers" has "$(curl -sS -m 5 "http://127.0.0.1:$port/api/ping")" '"status":"healthy"'

echo "== hardened, SANDBOX_NETWORK=off ($name-off)"
off="$name-off"
start "$off" "$port_off" "${harden[@]}" --cap-add NET_ADMIN -e SANDBOX_NETWORK=off
check "ready line on stdout (${ready_ms} ms after run)" has "$("$engine" logs "$off" 2>/dev/null)" 'SANDBOX_AGENT_READY {'
check "the published port answers: GET /api/ping" has "$(curl -sS "http://127.0.0.1:$port_off/api/ping")" '"status":"healthy"'
check "HEALTHCHECK turns healthy" healthy "$off"
check "the ruleset is installed" has "$(in_container "$off" 'nft list table inet sandbox')" 'policy drop'
status=$(agent_status "$off")
check "the agent dropped NET_ADMIN: SETUID, SETGID, SETPCAP and KILL only" has "$(tr '\n' ' ' <<<"$status")" "Uid: 0 0 0 0 $agent_caps"
check "commands have no capabilities and no-new-privs" has "$(run_cmd "$port_off" "$caps_line")" "$no_caps"
gateway=$("$engine" inspect "$on" --format '{{.NetworkSettings.Gateway}}')
ip_on=$("$engine" inspect "$on" --format '{{.NetworkSettings.IPAddress}}')
ip_off=$("$engine" inspect "$off" --format '{{.NetworkSettings.IPAddress}}')
targets="$gateway/9 $ip_on/3000 1.1.1.1/80"
out=$(run_cmd "$port_off" "$probe" "\"env\":{\"TARGETS\":\"$targets\"}")
check "network off: no TCP connection to the bridge gateway, another container, the internet" \
  has "$out" "\"stdout\":\"$gateway/9 blocked\n$ip_on/3000 blocked\n1.1.1.1/80 blocked\n\""
out_on=$(run_cmd "$port" "$probe" "\"env\":{\"TARGETS\":\"$gateway/9 $ip_off/3000 1.1.1.1/80\"}")
check "  while with the network on the gateway answers and the other container accepts" \
  has "$out_on" "\"stdout\":\"$gateway/9 refused\n$ip_off/3000 open\n"
has "$out_on" '1.1.1.1/80 open' || echo "     (note: no internet from this host, so that target proves less)"
out=$(run_cmd "$port_off" 'getent hosts deb.debian.org >/dev/null && echo resolved || echo unresolved')
check "network off: DNS does not resolve" has "$out" '"stdout":"unresolved\n"'
out=$(run_cmd "$port_off" 'nft flush ruleset 2>&1; echo "status $?"')
check "commands cannot remove the ruleset" has "$out" 'status 1'
check "  and it is still there" has "$(in_container "$off" 'nft list table inet sandbox')" 'policy drop'
stop_cleanly "$off" && stopped=0 || stopped=1
check "SIGTERM stops the network-off container ($stop_note)" test "$stopped" -eq 0

echo "== SANDBOX_NETWORK=off without NET_ADMIN ($name-closed)"
closed="$name-closed"
containers+=("$closed")
"$engine" run -d --name "$closed" "${extra[@]}" "${harden[@]}" -e SANDBOX_NETWORK=off \
  -e SANDBOX_AGENT_TOKEN="$token" "$image" >/dev/null 2> >(grep -v 'systemd' >&2)
"$engine" wait "$closed" >/dev/null 2>&1 || true
closed_status=$("$engine" inspect "$closed" --format '{{.State.ExitCode}}')
closed_log=$("$engine" logs "$closed" 2>&1)
refused() { [[ $closed_status -ne 0 ]] && has "$closed_log" 'Not starting with the network open' && lacks "$closed_log" SANDBOX_AGENT_READY; }
check "fails closed: exit status $closed_status, message, no ready line" refused

echo "== the engine's default capabilities, no hardening ($name-default)"
default="$name-default"
start "$default" "$((port + 2))"
status=$(agent_status "$default")
check "the agent still keeps only SETUID, SETGID, SETPCAP and KILL" has "$(tr '\n' ' ' <<<"$status")" "$agent_caps"
check "commands still have no capabilities" has "$(run_cmd "$((port + 2))" "$caps_line")" "CapEff=0000000000000000 CapBnd=0000000000000000"

echo "== stop ($name-on)"
stop_cleanly "$on" && stopped=0 || stopped=1
check "SIGTERM stops the agent and its processes ($stop_note)" test "$stopped" -eq 0
echo "image $image: $("$engine" image inspect "$image" --format '{{.Size}}') bytes; agent $rss_on after the checks"
[[ $failures -eq 0 ]] || { echo "$failures check(s) failed"; "$engine" logs "$on" >&2; exit 1; }
