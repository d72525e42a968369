#!/usr/bin/env bash
# Builds etcd, kube-apiserver and kube-controller-manager with the Go module proxy into a
# cache directory outside the repository, and prints that directory's bin/ path on stdout.
#
#   interop/kubernetes/build.sh   # -> $KUBERNETES_CACHE/bin/{etcd,kube-apiserver,kube-controller-manager}
#
# KUBERNETES_CACHE (default ~/.cache/rubbo/kubernetes) holds GOPATH, GOCACHE, the scratch
# module and bin/. Binaries already there are not rebuilt; delete bin/ to force. The Go
# caches (about 3.4 GB) may be deleted after a build; bin/ is about 210 MiB.
# A cold build takes about 9 minutes on 2 idle cores (nice -n 19, go build -p 1), much
# longer on a loaded machine: each go build is bounded by KUBERNETES_BUILD_TIMEOUT
# (s, default 3600); what it compiled stays in GOCACHE, so a rerun goes on from there.
# The recipe is the one in shared/reference/peers.md ("Kubernetes API server").
set -euo pipefail
k8s_version="${KUBERNETES_VERSION:-v1.35.4}"
cache="${KUBERNETES_CACHE:-$HOME/.cache/rubbo/kubernetes}"
bin="$cache/bin"
mod="$cache/module"
mkdir -p "$bin" "$cache/gopath" "$cache/gocache" "$mod/etcd"
export GOPATH="$cache/gopath" GOCACHE="$cache/gocache" GOMODCACHE="$cache/gopath/pkg/mod"
export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0
log="$(mktemp "${TMPDIR:-/tmp}/rubbo-k8s-build.XXXXXX")"
trap 'rm -f "$log"' EXIT
t0=$SECONDS

# run <seconds> <command...>: bounded step; its output goes to the log, shown on failure.
run() {
    local secs="$1" s=$SECONDS
    shift
    if ! timeout "$secs" "$@" >>"$log" 2>&1; then
        echo "kubernetes/build.sh: failed (or timed out after ${secs}s): $*" >&2
        tail -n 30 "$log" >&2
        return 1
    fi
    echo "kubernetes/build.sh: $(( SECONDS - s ))s: ${*: -1}" >&2
}

if [[ -x "$bin/etcd" && -x "$bin/kube-apiserver" && -x "$bin/kube-controller-manager" ]]; then
    echo "$bin"
    exit 0
fi
echo "kubernetes/build.sh: building etcd, kube-apiserver, kube-controller-manager ($k8s_version)" >&2

cd "$mod"
if [[ ! -f go.sum ]]; then
    # The go and godebug lines and the staging replaces come from k8s.io/kubernetes' go.mod.
    gomod="$(cd "$cache" && timeout 600 go mod download -json "k8s.io/kubernetes@$k8s_version" |
        sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
    [[ -f "$gomod" ]] || { echo "kubernetes/build.sh: no go.mod for k8s.io/kubernetes@$k8s_version" >&2; exit 1; }
    staging_version="v0.${k8s_version#v1.}"
    {
        echo "module local/rubbo-kubernetes"
        echo
        grep -E '^go [0-9.]+$' "$gomod"
        grep -E '^godebug ' "$gomod" || true
        echo
        echo "require k8s.io/kubernetes $k8s_version"
        echo
        grep -oE 'k8s\.io/[a-z0-9-]+ => \./staging/src/k8s\.io/[a-z0-9-]+' "$gomod" |
            awk -v v="$staging_version" '{ print "replace " $1 " => " $1 " " v }'
    } >go.mod
    echo "kubernetes/build.sh: $(grep -c '^replace' go.mod) staging replaces" >&2
    cat >tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
GO
    cat >etcd/main.go <<'GO'
// Command etcd runs etcd's server main.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
    run 1200 go mod tidy
fi

ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$k8s_version \
-X k8s.io/component-base/version.gitMajor=1 \
-X k8s.io/component-base/version.gitMinor=$(echo "$k8s_version" | cut -d. -f2) \
-X k8s.io/component-base/version.gitTreeState=clean"
build() {
    local out="$1" pkg="$2"
    [[ -x "$bin/$out" ]] && return 0
    run "${KUBERNETES_BUILD_TIMEOUT:-3600}" nice -n 19 go build -p 1 -trimpath -tags providerless -ldflags "$ldflags" \
        -o "$bin/$out.tmp" "$pkg"
    mv "$bin/$out.tmp" "$bin/$out"
}
build etcd ./etcd
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
echo "kubernetes/build.sh: done in $(( SECONDS - t0 ))s" >&2
echo "$bin"
