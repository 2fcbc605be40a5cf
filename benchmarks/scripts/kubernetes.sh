#!/usr/bin/env bash
# Runs KubernetesBench against a cluster: KUBECONFIG (or --kubeconfig FILE), namespace sandbox-it,
# image localhost/sandbox-agent:k8s on the node. sandbox-sdk-kubernetes/e2e/cluster/run.sh --keep
# starts such a cluster. Builds the benchmarks module first if its jar is missing or older than its sources.
# Usage: bash benchmarks/scripts/kubernetes.sh [--runs 5] [--execs 200] [--kubeconfig FILE] [--namespace NS] [--image NAME]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/launch.sh"
launch dev.sandboxsdk.bench.kubernetes.KubernetesBench -- "$@"
