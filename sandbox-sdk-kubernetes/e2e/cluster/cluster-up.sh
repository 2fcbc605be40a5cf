#!/bin/bash
# One-node Kubernetes on loopback (from the team's ../shared/k8s/cluster-up.sh; readiness checked with curl and jq): etcd + kube-apiserver + controller-manager + scheduler + kubelet -> containerd -> runc.
# Usage: cluster-up.sh BINDIR SRCDIR RUNDIR   (BINDIR/SRCDIR from build-k8s-from-debian.sh; RUNDIR under /tmp)
set -euo pipefail
B=$1; SRC=$2; R=$3; mkdir -p "$R"/{logs,pki,etcd,kubelet,kubelet-pki,containerd,cni/net.d,images,podman/tmp}; cd "$R"
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
  etcd-server containerd runc containernetworking-plugins podman busybox-static gcc libc6-dev openssl curl bc jq >/dev/null
T0=$(date +%s.%N); el(){ printf '%.1f s' "$(echo "$(date +%s.%N) - $T0" | bc)"; }
ip netns list | awk '{print $1}' | sort > netns-before.txt
# --- credentials: static admin token (system:masters) + service-account key pair
[ -f pki/sa.key ] || { openssl genrsa -out pki/sa.key 2048 2>/dev/null; openssl rsa -in pki/sa.key -pubout -out pki/sa.pub 2>/dev/null; }
[ -f pki/admin.token ] || { head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' > pki/admin.token; echo "$(cat pki/admin.token),admin,admin,system:masters" > pki/tokens.csv; }
cat > admin.kubeconfig <<KC
apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: "https://127.0.0.1:16443", insecure-skip-tls-verify: true}}]
users: [{name: admin, user: {token: "$(cat pki/admin.token)"}}]
contexts: [{name: local, context: {cluster: local, user: admin}}]
current-context: local
KC
# --- local images (no registry): static pause from the k8s source, static busybox
if [ ! -f images/pause-img.tar ]; then
  P="podman --root $R/podman/root --runroot $R/podman/run --tmpdir $R/podman/tmp"
  mkdir -p images/pause images/bb/bin images/bb/tmp
  gcc -Os -static -o images/pause/pause "$SRC/build/pause/linux/pause.c"
  cp "$(command -v busybox)" images/bb/bin/busybox
  for a in $(images/bb/bin/busybox --list); do [ "$a" = busybox ] || ln -sf busybox images/bb/bin/$a; done
  tar -C images/pause --numeric-owner -cf images/pause.tar .; tar -C images/bb --numeric-owner -cf images/bb.tar .
  $P import --change 'ENTRYPOINT ["/pause"]' images/pause.tar localhost/pause:local >/dev/null 2>&1
  $P import --change 'CMD ["/bin/sh"]' images/bb.tar localhost/busybox:local >/dev/null 2>&1
  $P save --format docker-archive -o images/pause-img.tar localhost/pause:local 2>/dev/null
  $P save --format docker-archive -o images/busybox-img.tar localhost/busybox:local 2>/dev/null
fi
# --- containerd (CRI plugin, runc, cgroupfs; oom_score_adj restricted: root here lacks CAP_SYS_RESOURCE)
CNI_BIN=$(dirname "$(dpkg -L containernetworking-plugins | grep '/bridge$')")
cat > containerd/config.toml <<EOT
version = 2
root = "$R/containerd/root"
state = "$R/containerd/state"
[grpc]
  address = "$R/containerd/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/pause:local"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN"
    conf_dir = "$R/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
EOT
cat > cni/net.d/10-local.conflist <<EOT
{"cniVersion": "0.4.0", "name": "localnet", "plugins": [
  {"type": "bridge", "bridge": "cni-local0", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.0.0/24"}]], "dataDir": "$R/cni/ipam"}},
  {"type": "loopback"}]}
EOT
cat > kubelet-config.yaml <<EOT
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
failSwapOn: false
evictionHard: {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"}
# Pods have no pids limit of their own: the kubelet bounds every pod (KubernetesAttackIT's fork bomb).
podPidsLimit: 512
EOT
# --- start
nohup etcd --name local --data-dir "$R/etcd" --listen-client-urls http://127.0.0.1:23790 --advertise-client-urls http://127.0.0.1:23790 \
  --listen-peer-urls http://127.0.0.1:23800 --initial-advertise-peer-urls http://127.0.0.1:23800 --initial-cluster local=http://127.0.0.1:23800 > logs/etcd.log 2>&1 &
echo $! > etcd.pid
# The API server gives up at start if etcd does not answer in time (seen on a loaded machine):
# start it only once etcd is healthy, and start it again if it exits before it is ready.
for i in $(seq 1 480); do curl -s http://127.0.0.1:23790/health 2>/dev/null | grep -q '"health":"true"' && break; sleep 0.25; done
curl -s http://127.0.0.1:23790/health | grep -q '"health":"true"' || { echo "etcd is not healthy after 120 s"; tail -20 logs/etcd.log; exit 1; }
start_apiserver() {
  nohup "$B/kube-apiserver" --etcd-servers=http://127.0.0.1:23790 --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port=16443 \
    --endpoint-reconciler-type=none --kubelet-preferred-address-types=Hostname --cert-dir="$R/pki/apiserver" \
    --token-auth-file="$R/pki/tokens.csv" --authorization-mode=Node,RBAC --allow-privileged=true --service-cluster-ip-range=10.0.0.0/24 \
    --service-account-issuer=https://kubernetes.default.svc --service-account-key-file="$R/pki/sa.pub" --service-account-signing-key-file="$R/pki/sa.key" \
    >> logs/apiserver.log 2>&1 &
  echo $! > kube-apiserver.pid
}
start_apiserver
nohup containerd --config "$R/containerd/config.toml" > logs/containerd.log 2>&1 &
echo $! > containerd.pid
C="ctr --address $R/containerd/containerd.sock -n k8s.io"
for i in $(seq 1 100); do $C version >/dev/null 2>&1 && break; sleep 0.1; done
$C images import images/pause-img.tar >/dev/null; $C images import images/busybox-img.tar >/dev/null
ready() { curl -sk -H "Authorization: Bearer $(cat pki/admin.token)" https://127.0.0.1:16443/readyz | grep -q '^ok'; }
starts=1
for i in $(seq 1 720); do
  ready && break
  if ! kill -0 "$(cat kube-apiserver.pid)" 2>/dev/null && [ "$starts" -lt 3 ]; then
    echo "the API server exited before it was ready; starting it again"; starts=$((starts + 1)); start_apiserver
  fi
  sleep 0.25
done
ready || { echo "the API server is not ready after $(el)"; tail -20 logs/apiserver.log; exit 1; }
echo "apiserver ready: $(el)"
nohup "$B/kube-controller-manager" --kubeconfig="$R/admin.kubeconfig" --bind-address=127.0.0.1 --secure-port=10257 --port=0 --leader-elect=false \
  --service-account-private-key-file="$R/pki/sa.key" --root-ca-file="$R/pki/apiserver/apiserver.crt" > logs/controller-manager.log 2>&1 &
echo $! > kube-controller-manager.pid
nohup "$B/kube-scheduler" --kubeconfig="$R/admin.kubeconfig" --bind-address=127.0.0.1 --secure-port=10259 --port=0 --leader-elect=false > logs/scheduler.log 2>&1 &
echo $! > kube-scheduler.pid
# node name "localhost" + apiserver preferring Hostname keeps apiserver->kubelet (exec/logs) traffic on loopback
nohup "$B/kubelet" --config="$R/kubelet-config.yaml" --kubeconfig="$R/admin.kubeconfig" --container-runtime=remote \
  --container-runtime-endpoint="unix://$R/containerd/containerd.sock" --root-dir="$R/kubelet" --cert-dir="$R/kubelet-pki" \
  --hostname-override=localhost > logs/kubelet.log 2>&1 &
echo $! > kubelet.pid
# node Ready, untainted, and the default service account made (checked with curl: no kubectl needed)
api(){ curl -sk -H "Authorization: Bearer $(cat "$R/pki/admin.token")" "https://127.0.0.1:16443$1"; }
for i in $(seq 1 240); do [ "$(api /api/v1/nodes/localhost | jq -r '.status.conditions[]? | select(.type=="Ready") | .status')" = True ] && break; sleep 0.25; done
for i in $(seq 1 240); do [ "$(api /api/v1/nodes/localhost | jq -r '.spec.taints // [] | length')" = 0 ] \
  && api /api/v1/namespaces/default/serviceaccounts/default | jq -e '.metadata.name' >/dev/null 2>&1 && break; sleep 0.25; done
[ "$(api /api/v1/nodes/localhost | jq -r '.status.conditions[]? | select(.type=="Ready") | .status')" = True ] \
  || { echo "the node is not Ready after $(el)"; tail -20 logs/kubelet.log; exit 1; }
echo "node Ready, untainted, default SA present: $(el)   KUBECONFIG=$R/admin.kubeconfig"
