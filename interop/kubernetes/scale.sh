#!/usr/bin/env bash
# The scale bench of Kubernetes discovery (issue 19), beside ZooKeeper's
# application-level discovery in the same run:
#
#   interop/kubernetes/scale.sh [BIN_DIR]   # BIN_DIR: interop-k8s-scale
#                                           # (default $CARGO_TARGET_DIR/debug)
#
# Sets up the cluster as run.sh does (cluster.sh: network namespace, etcd,
# kube-apiserver, kube-controller-manager on the namespace's 127.0.0.1), starts
# ZooKeeper (scripts/zookeeper.sh) in the same namespace on its 127.0.0.1:2181, runs
# interop-k8s-scale there (10 Services x 100 Pods and their EndpointSlices, 10% churn;
# the same 1,000 instances in ZooKeeper) and prints its markdown table and the load
# average. Everything it started, the namespace and the work folder go at the end.
# Needs root (ip netns), the binaries of interop/kubernetes/build.sh and ZooKeeper
# (apt-get install zookeeper). KEEP_WORK=1 keeps the work folder.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
bin="${1:-${CARGO_TARGET_DIR:-$repo/target}/debug}"
status=0
fail() { echo "FAIL scale/$1: $2"; status=1; }
finish() { exit "$status"; }

[[ -x "$bin/interop-k8s-scale" ]] || { fail setup "no $bin/interop-k8s-scale (cargo build -p interop --bin interop-k8s-scale)"; finish; }
zk_started=0
before_cleanup() {
    if (( zk_started )); then "$repo/scripts/zookeeper.sh" stop "$work/zk" >/dev/null 2>&1; fi
}
# shellcheck source=interop/kubernetes/cluster.sh
source "$here/cluster.sh"

inns "$repo/scripts/zookeeper.sh" start 2181 "$work/zk" >/dev/null || { fail setup "ZooKeeper not started"; finish; }
zk_started=1

registry="kubernetes://127.0.0.1:6443?namespace=default&oauthToken=$token&caCertFile=$work/certs/apiserver.crt&enableRegister=false&timeout=30000"
echo "kubernetes/scale.sh: load average before: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)" >&2
inns timeout 1200 "$bin/interop-k8s-scale" --registry "$registry" --zookeeper 127.0.0.1:2181 \
    >"$work/table.md" 2>"$work/bench.log"
rc=$?
echo "kubernetes/scale.sh: load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
if (( rc == 0 )); then
    cat "$work/table.md"
else
    fail bench "interop-k8s-scale exited $rc: $(tail -n 5 "$work/bench.log" | tr '\n' ' ')"
fi
finish
