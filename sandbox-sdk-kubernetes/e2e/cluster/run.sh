#!/usr/bin/env bash
# The Kubernetes suite on a real one-node cluster built and started on this machine:
#   1. builds kube-apiserver, kubelet, scheduler and controller-manager from Debian's kubernetes
#      source package, once (~4.5 min on 2 cores; cached in $SANDBOX_K8S_CACHE, default
#      ~/.cache/sandbox-sdk/k8s);
#   2. starts etcd, the control plane, containerd and the kubelet (~30 s; cluster-up.sh);
#   3. loads the agent image (podman's sandbox-agent, which must exist: see docs/containers.md,
#      "Container image") into the node's containerd, as localhost/sandbox-agent:k8s;
#   4. runs the Kubernetes ITs (and the MCP server's) against it, and a seconds-long run of
#      the Kubernetes benchmark (benchmarks/scripts/kubernetes.sh; no timing asserted), then stops the cluster.
# Usage: bash sandbox-sdk-kubernetes/e2e/cluster/run.sh [--keep] [extra Maven arguments, e.g. -Dit.test=KubernetesAttackIT]
#   --keep leaves the cluster running (KUBECONFIG is printed) for another run; a second run reuses it.
set -euo pipefail
cd "$(dirname "$0")/../../.."
it=sandbox-sdk-kubernetes/e2e/cluster
keep=false
if [ "${1:-}" = "--keep" ]; then keep=true; shift; fi
cache=${SANDBOX_K8S_CACHE:-$HOME/.cache/sandbox-sdk/k8s}
run=${SANDBOX_K8S_RUN:-/tmp/sandbox-k8s-run}
src="$cache/kubernetes-1.20.5+really1.20.2"
api() { curl -sk -H "Authorization: Bearer $(cat "$run/pki/admin.token")" "$@"; }

# apt hands its signature checks to the _apt user through /tmp: a /tmp that is not world-writable
# (seen on one machine of this type) makes every apt-get update fail as "not signed".
[ "$(stat -c %a /tmp)" = 1777 ] || chmod 1777 /tmp
if [ ! -x "$cache/bin/kube-controller-manager" ]; then
  echo "== building Kubernetes 1.20.2 from Debian's source package into $cache"
  bash "$it/build-k8s.sh" "$cache"
fi
if api -sf https://127.0.0.1:16443/readyz 2>/dev/null | grep -q '^ok' && [ -f "$run/kubelet.pid" ] \
    && kill -0 "$(cat "$run/kubelet.pid")" 2>/dev/null; then
  echo "== reusing the cluster in $run"
else
  echo "== starting a one-node cluster in $run"
  bash "$it/cluster-up.sh" "$cache/bin" "$src" "$run"
fi
if [ "$keep" = false ]; then
  trap 'bash "$PWD/$it/cluster-down.sh" "$run"' EXIT
fi

echo "== loading the agent image into the node"
# Which podman images to load: SANDBOX_K8S_AGENT_IMAGE and SANDBOX_K8S_CLIENTS_IMAGE override the
# defaults (to try an image built from a branch without retagging the one other runs use).
agent_image=${SANDBOX_K8S_AGENT_IMAGE:-sandbox-agent}
clients_image=${SANDBOX_K8S_CLIENTS_IMAGE:-sandbox-agent:clients}
podman image exists "$agent_image" || { echo "no podman image $agent_image: build it first (docs/containers.md, \"Container image\")"; exit 1; }
podman tag "$agent_image" localhost/sandbox-agent:k8s
rm -f "$run/images/agent.tar"
podman save -q --format docker-archive -o "$run/images/agent.tar" localhost/sandbox-agent:k8s
ctr --address "$run/containerd/containerd.sock" -n k8s.io images import "$run/images/agent.tar" >/dev/null
rm -f "$run/images/agent.tar"
# The same image with curl, python3 (and matplotlib) and node (.ci/run builds it), for the ITs that
# run clients or interpreters in a pod (KubernetesEgressIT, KubernetesCodeIT).
clients=()
if podman image exists "$clients_image"; then
  podman tag "$clients_image" localhost/sandbox-agent:k8s-clients
  podman save -q --format docker-archive -o "$run/images/clients.tar" localhost/sandbox-agent:k8s-clients
  ctr --address "$run/containerd/containerd.sock" -n k8s.io images import "$run/images/clients.tar" >/dev/null
  rm -f "$run/images/clients.tar"
  clients=(-Dsandbox.k8s.clientsImage=localhost/sandbox-agent:k8s-clients)
fi
# The tests' namespace (created once; 409 when it exists).
api -s -o /dev/null -X POST -H 'Content-Type: application/json' https://127.0.0.1:16443/api/v1/namespaces \
  -d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"sandbox-it"}}' \
  || { echo "the API server does not answer; its log:"; tail -20 "$run/logs/apiserver.log"; exit 1; }

echo "== the Kubernetes suite"
./mvnw -B -ntp -pl sandbox-sdk-kubernetes,sandbox-sdk-mcp-adapter -am verify -Dcheckstyle.skip \
  -Dsandbox.kubeconfig="$run/admin.kubeconfig" -Dsandbox.k8s.image=localhost/sandbox-agent:k8s \
  -Dit.test='Kubernetes*IT,McpKubernetes*IT' -Dtest=none "${clients[@]}" \
  -Dsurefire.failIfNoSpecifiedTests=false -Dfailsafe.failIfNoSpecifiedTests=false "$@"
echo "== the Kubernetes benchmark, smoke size"
bash benchmarks/scripts/kubernetes.sh --kubeconfig "$run/admin.kubeconfig" --runs 1 --execs 10
if [ "$keep" = true ]; then
  echo "the cluster keeps running: KUBECONFIG=$run/admin.kubeconfig; stop it with bash $it/cluster-down.sh $run"
fi
