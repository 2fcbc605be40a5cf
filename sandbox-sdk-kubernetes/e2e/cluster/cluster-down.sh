#!/bin/bash
# Usage: cluster-down.sh RUNDIR — (from the team's ../shared/k8s/cluster-down.sh) stops what cluster-up.sh started (by PID) and removes its mounts, netns and bridge.
R=$1; cd "$R" || exit 0; C="ctr --address $R/containerd/containerd.sock -n k8s.io"
alive(){ [ -f "$1.pid" ] && kill -0 "$(cat "$1.pid")" 2>/dev/null; }
if alive kubelet; then
  api(){ curl -sk -H "Authorization: Bearer $(cat "$R/pki/admin.token")" "$@"; }
  for ns in $(api https://127.0.0.1:16443/api/v1/namespaces | jq -r '.items[]?.metadata.name'); do
    api -X DELETE "https://127.0.0.1:16443/api/v1/namespaces/$ns/pods?gracePeriodSeconds=0" >/dev/null
  done
  for i in $(seq 1 40); do [ "$($C tasks ls -q 2>/dev/null | wc -l)" = 0 ] && break; sleep 0.5; done
fi
for n in kubelet kube-scheduler kube-controller-manager; do alive $n && kill "$(cat $n.pid)"; done
for t in $($C tasks ls -q 2>/dev/null); do $C tasks kill -s SIGKILL "$t" >/dev/null 2>&1; done; sleep 1
for t in $($C tasks ls -q 2>/dev/null); do $C tasks delete "$t" >/dev/null 2>&1; done
for c in $($C containers ls -q 2>/dev/null); do $C containers delete "$c" >/dev/null 2>&1; done
for n in containerd kube-apiserver etcd; do   # apiserver before etcd, or it lingers retrying etcd
  alive $n || continue; kill "$(cat $n.pid)"; for i in $(seq 1 40); do alive $n || break; sleep 0.25; done
done
for n in kubelet kube-scheduler kube-controller-manager containerd kube-apiserver etcd; do alive $n && kill -9 "$(cat $n.pid)"; rm -f $n.pid; done
findmnt -rn -o TARGET | grep "^$R" | sort -r | while read -r m; do umount -l "$m"; done
for ns in $(comm -13 netns-before.txt <(ip netns list | awk '{print $1}' | sort)); do ip netns delete "$ns"; done
ip link show cni-local0 >/dev/null 2>&1 && ip link delete cni-local0
echo "down: mounts left=$(findmnt -rn -o TARGET | grep -c "^$R")"
