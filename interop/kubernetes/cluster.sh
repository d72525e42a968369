# The cluster both Kubernetes drivers use, sourced by run.sh (interop cell 11) and
# scale.sh (the scale bench): checks the cached binaries and kubectl, makes the network
# namespace $ns (lo up, pod IPs 10.251.0.2-6/32 on its lo), the work folder $work, the
# credentials ($token, $work/kubeconfig), and starts etcd, kube-apiserver and
# kube-controller-manager (EndpointSlice controllers) on the namespace's 127.0.0.1.
#
# The sourcing script defines fail <check> <why> and finish (called on a setup
# failure), and may define before_cleanup (run first by the EXIT trap). It gets:
# pid (name -> pid), inns, k (kubectl), now_ms, stop, start, poll, start_apiserver,
# apiserver_ready, cleanup (the EXIT trap: every process started, the namespace,
# the work folder unless KEEP_WORK=1).
kbin="${KUBERNETES_CACHE:-$HOME/.cache/rubbo/kubernetes}/bin"
for b in etcd kube-apiserver kube-controller-manager; do
    [[ -x "$kbin/$b" ]] || { fail setup "no $kbin/$b: run interop/kubernetes/build.sh first"; finish; }
done
command -v kubectl >/dev/null || { fail setup "no kubectl"; finish; }

ns="rubbo-k8s-$$"
work="$(mktemp -d "${TMPDIR:-/tmp}/rubbo-k8s.XXXXXX")"
declare -A pid
inns() { ip netns exec "$ns" "$@"; }
k() { inns kubectl --kubeconfig "$work/kubeconfig" "$@"; }
now_ms() { date +%s%3N; }

# stop <name> [signal]: ends one process we started and waits (bounded) for it.
stop() {
    local p="${pid[$1]:-}" n
    [[ -n "$p" ]] || return 0
    kill "-${2:-TERM}" "$p" 2>/dev/null
    for n in $(seq 1 100); do
        kill -0 "$p" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$p" 2>/dev/null
    wait "$p" 2>/dev/null
    unset "pid[$1]"
}

cleanup() {
    local name p
    if declare -F before_cleanup >/dev/null; then before_cleanup; fi
    for name in "${!pid[@]}"; do
        [[ "$name" == apiserver || "$name" == etcd ]] || stop "$name"
    done
    stop apiserver
    stop etcd
    if ip netns list 2>/dev/null | grep -qw "$ns"; then
        # Anything left in the namespace was started by this script.
        for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
        ip netns del "$ns"
    fi
    if [[ "${KEEP_WORK:-}" == 1 ]]; then
        echo "kubernetes/$(basename "$0"): work folder $work" >&2
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start <name> <command...>: runs a command in the namespace, output in $work/<name>.log.
start() {
    local name="$1"
    shift
    # exec: the pid is the command's (ip netns exec and env exec too).
    (exec ip netns exec "$ns" "$@") >"$work/$name.log" 2>&1 &
    pid[$name]=$!
}

# poll <seconds> <command...>: true once the command succeeds, false after the bound.
poll() {
    local secs="$1" end
    shift
    end=$(( $(now_ms) + secs * 1000 ))
    until "$@" >/dev/null 2>&1; do
        (( $(now_ms) > end )) && return 1
        sleep 0.1
    done
}

ip netns add "$ns" || { fail setup "ip netns add (needs root)"; finish; }
ip -n "$ns" link set lo up
for i in 2 3 4 5 6; do ip -n "$ns" addr add "10.251.0.$i/32" dev lo; done

# Credentials: the service-account keys and one admin token (system:masters).
mkdir -p "$work/certs"
openssl genrsa -out "$work/sa.key" 2048 2>/dev/null
openssl rsa -in "$work/sa.key" -pubout -out "$work/sa.pub" 2>/dev/null
token="$(openssl rand -hex 16)"
echo "$token,admin,admin-uid,system:masters" >"$work/tokens.csv"
cat >"$work/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: "$token"}
contexts:
- name: local
  context: {cluster: local, user: admin, namespace: default}
current-context: local
EOF

start etcd "$kbin/etcd" --name default --data-dir "$work/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster default=http://127.0.0.1:2380
poll 30 inns curl -sf http://127.0.0.1:2379/health || { fail setup "etcd not healthy in 30 s"; finish; }

start_apiserver() {
    start apiserver "$kbin/kube-apiserver" --etcd-servers=http://127.0.0.1:2379 \
        --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port=6443 \
        --cert-dir="$work/certs" --service-cluster-ip-range=10.0.0.0/24 \
        --service-account-issuer=https://kubernetes.default.svc.cluster.local \
        --service-account-key-file="$work/sa.pub" --service-account-signing-key-file="$work/sa.key" \
        --token-auth-file="$work/tokens.csv" --authorization-mode=RBAC \
        --disable-admission-plugins=ServiceAccount --endpoint-reconciler-type=none
}
apiserver_ready() {
    [[ "$(inns curl -sk -H "Authorization: Bearer $token" https://127.0.0.1:6443/readyz)" == ok ]]
}
t0=$(now_ms)
start_apiserver
poll 60 apiserver_ready || { fail setup "kube-apiserver not ready in 60 s"; finish; }
echo "kubernetes/$(basename "$0"): kube-apiserver ready in $(( $(now_ms) - t0 )) ms" >&2
start controller-manager "$kbin/kube-controller-manager" --kubeconfig="$work/kubeconfig" \
    --controllers=endpointslice-controller,endpoints-controller,endpointslice-mirroring-controller \
    --leader-elect=false --bind-address=127.0.0.1
