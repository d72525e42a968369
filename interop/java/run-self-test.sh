#!/usr/bin/env bash
# Self-test of the Java interop harness (no Rust involved):
#   1. build (Maven, offline first)
#   2. Java consumer -> Java provider, direct URL
#   3. Java consumer -> Java provider, through a real ZooKeeper (scripts/zookeeper.sh)
# Every step is bounded; no JVM or ZooKeeper is left running when this script exits.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/rubbo-java-selftest.XXXXXX")"
pids=()
zk_started=0

cleanup() {
    local rc=$?
    local p
    for p in "${pids[@]}"; do
        kill -TERM "$p" 2>/dev/null || true
    done
    for p in "${pids[@]}"; do
        for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    if (( zk_started )); then
        "$repo/scripts/zookeeper.sh" stop "$work/zk" || true
    fi
    if (( rc != 0 )); then
        echo "self-test failed (rc=$rc); logs kept in $work" >&2
    else
        rm -rf "$work"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# start_provider <name> <port> [args...]: starts a provider, waits (bounded) for READY.
start_provider() {
    local name="$1" port="$2"
    shift 2
    timeout 600 "$here/run-java.sh" InteropProvider --port "$port" --host 127.0.0.1 "$@" \
        >"$work/$name.out" 2>"$work/$name.err" &
    pids+=("$!")
    local deadline=$((SECONDS + 60))
    until grep -q "^READY dubbo $port\$" "$work/$name.out" 2>/dev/null; do
        if ! kill -0 "${pids[-1]}" 2>/dev/null || (( SECONDS > deadline )); then
            echo "provider $name did not become ready" >&2
            tail -n 40 "$work/$name.err" >&2 || true
            return 1
        fi
        sleep 0.1
    done
    echo "provider $name ready on 127.0.0.1:$port"
}

stop_provider() {
    local p="${pids[-1]}"
    kill -TERM "$p" 2>/dev/null || true
    local i
    for ((i = 0; i < 150; i++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
    unset 'pids[-1]'
}

# run_consumer <name> [args...]: runs the consumer, echoes its output, returns its status.
run_consumer() {
    local name="$1"
    shift
    local rc=0
    # In the background + wait, so a signal to this script is handled at once (trap kills it).
    timeout 300 "$here/run-java.sh" InteropConsumer --timeout 3000 "$@" \
        >"$work/$name.out" 2>"$work/$name.err" &
    pids+=("$!")
    wait "${pids[-1]}" || rc=$?
    unset 'pids[-1]'
    grep -v '^PASS ' "$work/$name.out" | sed "s/^/[$name] /" || true
    echo "[$name] exit $rc"
    return "$rc"
}

echo "== build"
timeout 1200 "$here/build.sh"

failed=0

echo "== direct: java consumer -> java provider"
port="$(free_port)"
start_provider direct-provider "$port" --registry N/A
run_consumer direct-consumer --url "dubbo://127.0.0.1:$port" \
    --expect-whoami "interop-provider@127.0.0.1:$port" || failed=1
stop_provider

echo "== zookeeper: java consumer -> java provider"
zk_port="$(free_port)"
timeout 60 "$repo/scripts/zookeeper.sh" start "$zk_port" "$work/zk" >/dev/null
zk_started=1
port="$(free_port)"
start_provider zk-provider "$port" --registry "zookeeper://127.0.0.1:$zk_port"
run_consumer zk-consumer --registry "zookeeper://127.0.0.1:$zk_port" \
    --expect-whoami "interop-provider@127.0.0.1:$port" || failed=1
stop_provider

count() { sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$1" | tail -n 1; }
read -r dp df <<<"$(count "$work/direct-consumer.out")" || true
read -r zp zf <<<"$(count "$work/zk-consumer.out")" || true
echo "direct: ${dp:-0} passed, ${df:-1} failed"
echo "zookeeper: ${zp:-0} passed, ${zf:-1} failed"
# Last line: the combined count, "N passed, N failed" (read by CI).
echo "self-test: $(( ${dp:-0} + ${zp:-0} )) passed, $(( ${df:-1} + ${zf:-1} )) failed"
exit "$failed"
