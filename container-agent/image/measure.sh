#!/usr/bin/env bash
# Measures agent images as the SDK's container provider runs them: image size, time from
# `run` to the ready line on stdout (median of RUNS starts; most of it is the engine creating the
# container), from the container's start (its StartedAt) to the agent's "listening" log line
# (the entry script and the JVM alone), the agent's RSS idle (3 s after the ready line) and the
# first POST /api/execute after the ready line, and the CPU time the JVM used for all that (less
# disturbed by a busy machine than the clock). Builds nothing.
#   bash container-agent/image/measure.sh sandbox-agent:check [other images...]
# Environment (all optional):
#   ENGINE       podman or docker (default: podman if installed, else docker)
#   EXTRA_FLAGS  added to every `run`, e.g. "--runtime runc --ulimit nofile=20000:20000"
#   RUN_FLAGS    the hardening flags (default: the provider's policy below)
#   ARGS         arguments after the image name (default: none, the image's CMD)
#   RUNS         starts per image (default 5)
#   PORT         host port, bound to 127.0.0.1 (default 3998)
set -euo pipefail
engine=${ENGINE:-$(command -v podman >/dev/null 2>&1 && echo podman || echo docker)}
runs=${RUNS:-5}
port=${PORT:-3998}
read -r -a extra <<<"${EXTRA_FLAGS:-}"
read -r -a flags <<<"${RUN_FLAGS:---cap-drop ALL --cap-add SETUID,SETGID,SETPCAP,KILL --security-opt no-new-privileges --read-only -v /workspace --tmpfs /tmp --pids-limit 1024 --memory 1g --cpus 1}"
read -r -a args <<<"${ARGS:-}"
token="measure-$RANDOM$RANDOM"
name="sandbox-agent-measure-$$"
tmp=$(mktemp -d)
trap '"$engine" rm -f -v "$name" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
now_ms() { echo $(($(date +%s%N) / 1000000)); }
median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

ms_of() { date -d "${1% UTC}" +%s%3N; } # a timestamp from inspect or the agent's log, in ms
printf '%-34s %7s %-34s %-30s %8s %9s %8s\n' image "size MB" "run to ready line, ms: median (all)" \
  "start to listening, ms" "idle RSS" "1st exec" "JVM CPU"
for image in "$@"; do
  readys=() inside=() rss=() firsts=() cpus=()
  for ((i = 0; i < runs; i++)); do
    rm -f "$tmp/out"
    mkfifo "$tmp/out"
    t=$(now_ms)
    "$engine" run --name "$name" "${extra[@]}" "${flags[@]}" -e SANDBOX_AGENT_TOKEN="$token" \
      -p "127.0.0.1:$port:3000" "$image" "${args[@]}" >"$tmp/out" 2>/dev/null &
    exec 4<"$tmp/out"
    read -r -t 60 line <&4 || true
    readys+=($(($(now_ms) - t)))
    cat <&4 >/dev/null &
    [[ $line == SANDBOX_AGENT_READY* ]] || { echo "$image: no ready line" >&2; exit 1; }
    first=$(curl -sS -o /dev/null -w '%{time_total}' -H "Authorization: Bearer $token" \
      -d '{"command":"true"}' "http://127.0.0.1:$port/api/execute")
    firsts+=($(awk -v s="$first" 'BEGIN { printf "%d", s * 1000 }'))
    started=$("$engine" inspect "$name" --format '{{.State.StartedAt}}')
    listening=$("$engine" logs "$name" 2>&1 | sed -n 's/^\([0-9T:.+-]*\) INFO AgentServer - .* listening on .*/\1/p')
    inside+=($(($(ms_of "$listening") - $(ms_of "$started"))))
    sleep 3
    read -r kb ticks < <("$engine" exec "$name" sh -c 'p=$(pgrep -x java)
      sed -n "s/^VmRSS:[^0-9]*\([0-9]*\).*/\1/p" /proc/$p/status | tr "\n" " "
      awk "{ print \$14 + \$15 }" /proc/$p/stat')
    rss+=($((kb / 1024)))
    cpus+=($((ticks * 1000 / $(getconf CLK_TCK))))
    "$engine" stop -t 20 "$name" >/dev/null
    wait
    exec 4<&-
    "$engine" rm -f -v "$name" >/dev/null
  done
  size=$("$engine" image inspect "$image" --format '{{.Size}}')
  printf '%-34s %7d %-34s %-30s %4s MiB %6s ms %5s ms\n' "$image" $((size / 1000000)) \
    "$(echo "${readys[*]}" | median) (${readys[*]})" "$(echo "${inside[*]}" | median) (${inside[*]})" \
    "$(echo "${rss[*]}" | median)" "$(echo "${firsts[*]}" | median)" "$(echo "${cpus[*]}" | median)"
done
