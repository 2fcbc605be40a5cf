#!/usr/bin/env bash
# Runs KubernetesBench against a cluster: KUBECONFIG (or --kubeconfig FILE), namespace sandbox-it,
# image localhost/sandbox-agent:k8s on the node. sandbox-sdk-kubernetes/it/run.sh --keep starts such a cluster.
# Usage: bash sandbox-sdk-kubernetes/bench/run.sh [--runs 5] [--execs 200] [--kubeconfig FILE] [--namespace NS] [--image NAME]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"
cp_file=$(mktemp)
trap 'rm -f "$cp_file"' EXIT
./mvnw -q -B -pl sandbox-sdk-kubernetes -am package dependency:build-classpath -DskipTests -Dcheckstyle.skip \
  -Dmdep.outputFile="$cp_file" -Dmdep.includeScope=runtime
cp="sandbox-sdk-kubernetes/target/classes:sandbox-sdk/target/classes:$(cat "$cp_file")"
java_bin="java"
if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then
  java_bin="$JAVA_HOME/bin/java"
fi
exec "$java_bin" -cp "$cp" -Dorg.slf4j.simpleLogger.defaultLogLevel=warn "$here/KubernetesBench.java" "$@"
