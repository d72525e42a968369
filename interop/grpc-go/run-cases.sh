#!/usr/bin/env bash
# Runs grpc-go's interop test cases, one run per case (-test_case takes one case).
#
#   run-cases.sh --client HOST PORT [cases...]
#       grpc-go's interop client calls the server already listening on HOST:PORT
#       (a Rubbo grpc.testing.TestService, or any other), once per case.
#   run-cases.sh --server HOST PORT [cases...]
#       starts grpc-go's interop server on PORT, waits (bounded) until HOST:PORT accepts, then
#       runs the client command once per case and stops the server. The client command is
#       $INTEROP_CLIENT (default: grpc-go's own client), given grpc-go's client flags
#       -server_host=HOST -server_port=PORT -use_tls=false -test_case=CASE.
#
# Default cases: every case grpc-go runs without TLS or compression, then the four compression
# cases (below). grpc-go's interop binaries have neither those cases nor a gzip codec: they run
# with our grpc-go peer, compression/main.go (built by build.sh as "compression"), as the client
# (--client) or as the server (--server, started in place of grpc-go's server for those cases).
# Prints "PASS grpc-go/<client|server>/<case>" or
# "FAIL grpc-go/<client|server>/<case>: <last lines of its output>" per case, then
# "N passed, N failed"; exits 1 if any case failed. <client|server> names the grpc-go peer used.
# Env: GRPC_GO_BIN (default: what build.sh prints; built if missing), CASE_TIMEOUT (seconds per
# case, default 30), INTEROP_CLIENT (see --server), INTEROP_LOG_DIR (keep each case's output).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
usage() { echo "usage: run-cases.sh --client|--server HOST PORT [cases...]" >&2; exit 2; }
(( $# >= 3 )) || usage
mode="$1" host="$2" port="$3"
shift 3
case "$mode" in
    --client) dir=client ;;
    --server) dir=server ;;
    *) usage ;;
esac
[[ "$port" =~ ^[0-9]+$ ]] || usage
cases=("$@")
if (( ${#cases[@]} == 0 )); then
    cases=(empty_unary large_unary client_streaming server_streaming ping_pong empty_stream
        timeout_on_sleeping_server cancel_after_begin cancel_after_first_response
        status_code_and_message special_status_message custom_metadata unimplemented_method
        unimplemented_service client_compressed_unary server_compressed_unary
        client_compressed_streaming server_compressed_streaming)
fi
# compressing <case>: whether the case runs with our grpc-go compression peer.
compressing() { [[ "$1" == *_compressed_* ]]; }
case_timeout="${CASE_TIMEOUT:-30}"
bin="${GRPC_GO_BIN:-}"
if [[ -z "$bin" ]]; then
    bin="$(timeout 1800 "$here/build.sh")"
fi
[[ -x "$bin/client" && -x "$bin/server" && -x "$bin/compression" ]] ||
    { echo "run-cases.sh: no grpc-go binaries in $bin" >&2; exit 2; }

work="$(mktemp -d "${TMPDIR:-/tmp}/rubbo-grpc-go.XXXXXX")"
server_pid=""
cleanup() {
    local rc=$?
    if [[ -n "$server_pid" ]]; then
        kill -TERM "$server_pid" 2>/dev/null || true
        for _ in $(seq 1 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    if [[ -n "${INTEROP_LOG_DIR:-}" ]]; then
        mkdir -p "$INTEROP_LOG_DIR" && cp -r "$work"/. "$INTEROP_LOG_DIR"/ || true
    fi
    rm -rf "$work"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

accepts() { (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; }

# serve <binary> <flags...>: starts a grpc-go server on PORT, waits (bounded) until it accepts.
serving=""
serve() {
    stop_server
    # grpc-go's server listens on ":PORT" (it has no host flag); callers use 127.0.0.1 only.
    timeout 1800 "$@" >"$work/server.log" 2>&1 &
    server_pid=$!
    local deadline=$((SECONDS + 30))
    until accepts; do
        if ! kill -0 "$server_pid" 2>/dev/null || (( SECONDS > deadline )); then
            echo "FAIL grpc-go/server/start: server not listening on $host:$port: $(tail -n 3 "$work/server.log" | tr '\n' ' ')"
            echo "0 passed, 1 failed"
            exit 1
        fi
        sleep 0.1
    done
}
stop_server() {
    if [[ -n "$server_pid" ]]; then
        kill -TERM "$server_pid" 2>/dev/null || true
        for _ in $(seq 1 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=""
    fi
    # Bounded: until the port is free again.
    for _ in $(seq 1 50); do accepts || break; sleep 0.1; done
}

if [[ "$mode" == --server ]]; then
    read -r -a client <<<"${INTEROP_CLIENT:-$bin/client}"
else
    client=("$bin/client")
fi

passed=0
failed=0
for c in "${cases[@]}"; do
    runner=("${client[@]}")
    if [[ "$mode" == --server ]]; then
        want=stock
        compressing "$c" && want=compression
        if [[ "$serving" != "$want" ]]; then
            if [[ "$want" == compression ]]; then
                serve "$bin/compression" -mode=server -port="$port"
            else
                serve "$bin/server" -port="$port" -use_tls=false
            fi
            serving="$want"
        fi
    elif compressing "$c"; then
        runner=("$bin/compression")
    fi
    rc=0
    timeout "$case_timeout" "${runner[@]}" -server_host="$host" -server_port="$port" -use_tls=false \
        -test_case="$c" >"$work/$c.log" 2>&1 || rc=$?
    if (( rc == 0 )); then
        echo "PASS grpc-go/$dir/$c"
        passed=$((passed + 1))
    else
        why="exit $rc"
        (( rc == 124 )) && why="timed out after ${case_timeout}s"
        echo "FAIL grpc-go/$dir/$c: $why: $(tail -n 3 "$work/$c.log" | tr '\n' ' ')"
        failed=$((failed + 1))
    fi
done
echo "$passed passed, $failed failed"
(( failed == 0 ))
