#!/usr/bin/env bash
# Kubernetes-native discovery against a real API server (interop cell 11).
#
#   interop/kubernetes/run.sh [BIN_DIR]   # BIN_DIR: interop-provider, interop-load
#                                         # (default $CARGO_TARGET_DIR/debug)
#
# Makes a network namespace as the "cluster" (lo up, pod IPs 10.251.0.x/32 on its lo:
# EndpointSlices reject 127.x), starts etcd, kube-apiserver and kube-controller-manager
# (EndpointSlice controllers) on the namespace's 127.0.0.1, plays the kubelet (creates a
# Node and Pods, patches their status Ready), runs Rust providers bound to the pod IPs
# and a consumer under load (interop-load) and prints one "PASS 11-kubernetes/<check>" /
# "FAIL 11-kubernetes/<check>: why" line per check, then "N passed, N failed". Every
# process it started and the namespace are removed at the end, also on failure.
# Needs root (ip netns) and the binaries interop/kubernetes/build.sh left in its cache.
# KEEP_WORK=1 keeps the work folder (logs) for a look.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
bin="${1:-${CARGO_TARGET_DIR:-$repo/target}/debug}"
cell=11-kubernetes
passed=0
failed=0
pass() { echo "PASS $cell/$1"; passed=$((passed + 1)); }
fail() { echo "FAIL $cell/$1: $2"; failed=$((failed + 1)); }
finish() {
    echo "$passed passed, $failed failed"
    (( failed == 0 ))
    exit
}

for b in interop-provider interop-load; do
    [[ -x "$bin/$b" ]] || { fail setup "no $bin/$b (cargo build -p interop)"; finish; }
done
# shellcheck source=interop/kubernetes/cluster.sh
source "$here/cluster.sh"

# The cluster: a Node, the Service "greeter" (the application), Pods on the Node.
k apply -f - >/dev/null <<EOF || { fail setup "Node and Service not created"; finish; }
apiVersion: v1
kind: Node
metadata: {name: node-1}
---
apiVersion: v1
kind: Service
metadata: {name: greeter}
spec:
  selector: {app: greeter}
  ports: [{name: dubbo, port: 20880, targetPort: 20880}]
EOF

registry="kubernetes://127.0.0.1:6443?namespace=default&oauthToken=$token&caCertFile=$work/certs/apiserver.crt&watch.max-backoff=1000"

# pod <name> <ip>: creates the Pod (labels app=greeter, role=dubbo) on node-1.
pod() {
    k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1
  labels: {app: greeter, role: dubbo}
spec:
  nodeName: node-1
  containers: [{name: app, image: rubbo/none}]
EOF
}
# ready <name> <ip> <True|False>: the kubelet's status patch.
ready() {
    k patch pod "$1" --subresource=status --type=merge -p \
        "{\"status\":{\"phase\":\"Running\",\"podIP\":\"$2\",\"podIPs\":[{\"ip\":\"$2\"}],\"conditions\":[{\"type\":\"Ready\",\"status\":\"$3\"}]}}" >/dev/null
}
# annotated <pod>: its io.dubbo/metadata annotation holds a revision.
annotated() {
    k get pod "$1" -o json | python3 -c 'import json,sys
a = json.load(sys.stdin)["metadata"].get("annotations") or {}
sys.exit(0 if "dubbo.metadata.revision" in a.get("io.dubbo/metadata", "") else 1)'
}
unannotated() {
    k get pod "$1" -o json | python3 -c 'import json,sys
a = json.load(sys.stdin)["metadata"].get("annotations") or {}
sys.exit(1 if "io.dubbo/metadata" in a else 0)'
}
# provider <name> <ip>: a Rust provider for Pod <name>, bound to its IP.
provider() {
    start "$1" env NO_COLOR=1 POD_NAME="$1" RUST_LOG="${RUST_LOG:-info}" "$bin/interop-provider" --host "$2" --port 20880 \
        --application greeter --registry "$registry" \
        --set dubbo.application.register-mode=instance --set dubbo.application.qos-enable=false
}
# pod_up <name> <ip>: Pod, provider, annotation written, then Ready.
pod_up() {
    pod "$1" || return 1
    provider "$1" "$2"
    poll 30 annotated "$1" || { echo "no annotation on $1" >&2; return 1; }
    ready "$1" "$2" True
}
who() { echo "greeter@$1:20880"; }
w="$work/load.log"
fails_since() { python3 "$here/windows.py" fails "$w" "$1"; }
seen() { python3 "$here/windows.py" seen "$w" "$1" "$(who "$2")"; }
gone() { python3 "$here/windows.py" gone "$w" "$1" "$(who "$2")" "${3:-5}"; }
zero_fails() {
    local f
    f="$(fails_since "$1")"
    [[ "$f" == 0 ]] || { echo "$f failed calls" ; return 1; }
}

# 1. Two provider Pods: the consumer spreads calls over both.
pod_up greeter-0 10.251.0.2 && pod_up greeter-1 10.251.0.3 || { fail setup "provider Pods not up"; finish; }
start load env NO_COLOR=1 RUST_LOG="${RUST_LOG:-info}" "$bin/interop-load" --registry "$registry&enableRegister=false" \
    --stop-file "$work/stop" --deadline 600000 \
    --set dubbo.consumer.provided-by=greeter --set dubbo.consumer.check=false \
    --set dubbo.application.service-discovery.migration=FORCE_APPLICATION \
    --set dubbo.application.qos-enable=false
# interop-load's W lines and its log share $work/load.log.
if ! poll 60 grep -q '^READY' "$w"; then
    fail spread-over-two-pods "the consumer found no provider in 60 s: $(tail -n 3 "$w" | tr '\n' ' ')"
    finish
fi
t=$(now_ms)
if poll 20 seen "$t" 10.251.0.2 && poll 20 seen "$t" 10.251.0.3; then
    pass spread-over-two-pods
else
    fail spread-over-two-pods "calls went to: $(python3 "$here/windows.py" who "$w" "$t")"
fi

# 2. A Pod turning unready, then deleted: its endpoint leaves, no call fails.
t=$(now_ms)
ready greeter-1 10.251.0.3 False
if poll 15 gone "$t" 10.251.0.3 && r="$(zero_fails "$t")"; then
    pass pod-unready-leaves
else
    fail pod-unready-leaves "${r:-greeter-1 still called after 15 s}"
fi
ready greeter-1 10.251.0.3 True
t=$(now_ms)
poll 15 seen "$t" 10.251.0.3 || fail pod-ready-again-returns "greeter-1 not called again in 15 s"
t=$(now_ms)
# As a kubelet would: the Pod is deleted (its endpoint terminates: no kubelet ends
# it) and its process gets SIGTERM at once, with calls in flight.
k delete pod greeter-1 --wait=false >/dev/null
stop greeter-1
if poll 15 gone "$t" 10.251.0.3 && r="$(zero_fails "$t")"; then
    pass pod-deleted-leaves-0-failed
else
    fail pod-deleted-leaves-0-failed "${r:-greeter-1 still called after 15 s}"
fi
k delete pod greeter-1 --grace-period=0 --force >/dev/null 2>&1

# 3. Scale-up under load: a third Pod gets calls within a bound (3 s).
pod greeter-2 && provider greeter-2 10.251.0.4
if poll 30 annotated greeter-2; then
    t=$(now_ms)
    ready greeter-2 10.251.0.4 True
    if poll 10 seen "$t" 10.251.0.4; then
        first="$(python3 "$here/windows.py" first "$w" "$t" "$(who 10.251.0.4)")"
        took=$(( first - t ))
        echo "kubernetes/run.sh: the third Pod got calls $took ms after Ready" >&2
        if (( took <= 3000 )) && r="$(zero_fails "$t")"; then
            pass scale-up-gets-calls
        else
            fail scale-up-gets-calls "${r:-first call after $took ms (bound 3000)}"
        fi
    else
        fail scale-up-gets-calls "greeter-2 not called in 10 s"
    fi
else
    fail scale-up-gets-calls "greeter-2's provider wrote no annotation"
fi

# 4. API server restart under load: calls go on while it is away; watches resume.
t=$(now_ms)
stop apiserver
down=$(now_ms)
# Calls keep flowing on the last address set: 50 answered while it is away.
calls_after() { (( $(python3 "$here/windows.py" calls "$w" "$1") >= $2 )); }
poll 10 calls_after "$down" 50
calls_down="$(python3 "$here/windows.py" calls "$w" "$down")"
start_apiserver
poll 60 apiserver_ready || fail apiserver-restart "not ready again in 60 s"
if [[ "$calls_down" -gt 0 ]] && r="$(zero_fails "$t")"; then
    pass apiserver-down-calls-go-on
else
    fail apiserver-down-calls-go-on "${r:-$calls_down calls while the API server was down}"
fi
# Resumed watches see a new Pod.
pod greeter-3 && provider greeter-3 10.251.0.5
if poll 30 annotated greeter-3; then
    t2=$(now_ms)
    ready greeter-3 10.251.0.5 True
    if poll 30 seen "$t2" 10.251.0.5 && r="$(zero_fails "$t")"; then
        pass watches-resume-after-apiserver-restart
    else
        fail watches-resume-after-apiserver-restart "${r:-greeter-3 not called in 30 s}"
    fi
else
    fail watches-resume-after-apiserver-restart "greeter-3's provider wrote no annotation"
fi

# 5. Garbage: a Pod whose annotation is garbage, a slice with no ports, a selector
# change; each logged and skipped, the valid addresses kept.
pod greeter-bad && provider greeter-bad 10.251.0.6
poll 30 annotated greeter-bad
k annotate pod greeter-bad --overwrite 'io.dubbo/metadata={not json' >/dev/null
t=$(now_ms)
ready greeter-bad 10.251.0.6 True
k apply -f - >/dev/null <<EOF
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: greeter-portless
  labels: {kubernetes.io/service-name: greeter, endpointslice.kubernetes.io/managed-by: rubbo-test}
addressType: IPv4
endpoints:
- addresses: [10.251.0.6]
  conditions: {ready: true}
  targetRef: {kind: Pod, name: greeter-0, namespace: default}
EOF
logged() { grep -q "$1" "$w"; }
if poll 15 logged 'greeter-bad has a bad io.dubbo/metadata' && poll 15 logged 'greeter-portless have no port'; then
    # A few windows more: the skipped address never gets a call, the others do.
    t2=$(now_ms)
    poll 10 seen "$t2" 10.251.0.2
    poll 10 seen "$t2" 10.251.0.5
    if ! python3 "$here/windows.py" seen "$w" "$t" "$(who 10.251.0.6)" && seen "$t2" 10.251.0.2 &&
        seen "$t2" 10.251.0.4 && seen "$t2" 10.251.0.5 && r="$(zero_fails "$t")"; then
        pass garbage-annotation-and-portless-slice-skipped
    else
        fail garbage-annotation-and-portless-slice-skipped "${r:-calls went to: $(python3 "$here/windows.py" who "$w" "$t")}"
    fi
else
    fail garbage-annotation-and-portless-slice-skipped "the consumer did not log both skips"
fi
t=$(now_ms)
k patch service greeter --type=merge -p '{"spec":{"selector":{"app":null,"role":"dubbo"}}}' >/dev/null
if poll 15 logged 'Service selector changed'; then
    t2=$(now_ms)
    if poll 10 seen "$t2" 10.251.0.2 && poll 10 seen "$t2" 10.251.0.4 && poll 10 seen "$t2" 10.251.0.5 &&
        r="$(zero_fails "$t")"; then
        pass selector-change-keeps-valid-addresses
    else
        fail selector-change-keeps-valid-addresses "${r:-calls went to: $(python3 "$here/windows.py" who "$w" "$t2")}"
    fi
else
    fail selector-change-keeps-valid-addresses "the consumer did not see the selector change"
fi

# The load's own total, then a graceful provider shutdown removes its annotation.
touch "$work/stop"
poll 30 grep -q '^TOTAL' "$w"
total="$(grep '^TOTAL' "$w" || true)"
if [[ "$total" == *" fail=0" ]]; then
    pass no-failed-call-overall
else
    fail no-failed-call-overall "${total:-no TOTAL line}; $(grep -m 3 '^E ' "$w" | tr '\n' ' ')"
fi
stop load
stop greeter-0
if poll 15 unannotated greeter-0; then
    pass annotation-removed-at-shutdown
else
    fail annotation-removed-at-shutdown "greeter-0 still annotated 15 s after SIGTERM"
fi
finish
