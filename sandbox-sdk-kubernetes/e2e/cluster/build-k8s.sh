#!/bin/bash
# (From the team's ../shared/k8s/build-k8s-from-debian.sh.) Kubernetes v1.20.2 server binaries from Debian bookworm's `kubernetes` source package. Needs only apt.
# Usage: build-k8s-from-debian.sh WORKDIR    -> WORKDIR/bin/{kube-apiserver,kubelet,kube-scheduler,kube-controller-manager}
set -euo pipefail
W=$1; mkdir -p "$W"/apt/lists/partial "$W"/apt/cache/archives/partial "$W"/bin; cd "$W"; T0=$(date +%s)
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
  golang-go dpkg-dev make rsync jq golang-github-modern-go-reflect2-dev >/dev/null
# deb-src entries for the archives apt already uses, kept in WORKDIR (system apt config untouched)
apt-get indextargets --format '$(REPO_URI) $(RELEASE)' | sort -u | awk '{print "deb-src", $1, $2, "main"}' > apt/sources.list
A="-o Dir::Etc::SourceList=$W/apt/sources.list -o Dir::Etc::SourceParts=$W/apt/parts.d -o Dir::State::Lists=$W/apt/lists -o Dir::Cache=$W/apt/cache"
apt-get $A update -q >/dev/null
apt-get $A source -q kubernetes=1.20.5+really1.20.2-1.1+deb12u1 >/dev/null 2>&1   # orig tarball has vendor/ and cmd/*
S="$W/kubernetes-1.20.5+really1.20.2"; echo "source ready: $(( $(date +%s)-T0 )) s"
# Go >= 1.18 + vendored reflect2 v1.0.1 = runtime crash ("fatal error: unexpected fault address"); use Debian's 1.0.2
R2=$(dirname "$(dpkg -L golang-github-modern-go-reflect2-dev | grep '/reflect2.go$')")
rm -rf "$S/vendor/github.com/modern-go/reflect2"; mkdir -p "$S/vendor/github.com/modern-go/reflect2"
cp "$R2"/*.go "$R2"/*.s "$S/vendor/github.com/modern-go/reflect2/"
export GOCACHE="$W/gocache" GOPROXY=off GOFLAGS= CGO_ENABLED=0
(cd "$S" && make gen_openapi >/dev/null)   # pkg/generated/openapi is generated at build time upstream
echo "openapi generated: $(( $(date +%s)-T0 )) s"
# upstream 1.20 builds in GOPATH mode (module mode fails: "updates to go.mod needed, disabled by -mod=vendor")
mkdir -p "$W/gopath/src/k8s.io"; ln -sfn "$S" "$W/gopath/src/k8s.io/kubernetes"; cd "$W/gopath/src/k8s.io/kubernetes"
export GOPATH="$W/gopath" GO111MODULE=off
LD="-s -w"; for p in k8s.io/kubernetes/vendor/k8s.io/component-base/version k8s.io/kubernetes/vendor/k8s.io/client-go/pkg/version; do
  LD="$LD -X $p.gitVersion=v1.20.2 -X $p.gitMajor=1 -X $p.gitMinor=20 -X $p.gitTreeState=clean"; done
for w in kube-apiserver kubelet kube-scheduler kube-controller-manager; do
  go build -ldflags "$LD" -o "$W/bin/$w" "./cmd/$w"; echo "built $w: $(( $(date +%s)-T0 )) s"
done
