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
# Default cases: every case grpc-go runs without TLS or compression (below). Prints "PASS grpc-go/<client|server>/<case>" or
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
        unimplemented_service)
fi
case_timeout="${CASE_TIMEOUT:-30}"
bin="${GRPC_GO_BIN:-}"
if [[ -z "$bin" ]]; then
    bin="$(timeout 1800 "$here/build.sh")"
fi
[[ -x "$bin/client" && -x "$bin/server" ]] || { echo "run-cases.sh: no grpc-go binaries in $bin" >&2; exit 2; }

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

if [[ "$mode" == --server ]]; then
    # grpc-go's server listens on ":PORT" (it has no host flag); callers use 127.0.0.1 only.
    timeout 1800 "$bin/server" -port="$port" -use_tls=false >"$work/server.log" 2>&1 &
    server_pid=$!
    deadline=$((SECONDS + 30))
    until accepts; do
        if ! kill -0 "$server_pid" 2>/dev/null || (( SECONDS > deadline )); then
            echo "FAIL grpc-go/server/start: server not listening on $host:$port: $(tail -n 3 "$work/server.log" | tr '\n' ' ')"
            echo "0 passed, 1 failed"
            exit 1
        fi
        sleep 0.1
    done
    read -r -a client <<<"${INTEROP_CLIENT:-$bin/client}"
else
    client=("$bin/client")
fi

passed=0
failed=0
for c in "${cases[@]}"; do
    rc=0
    timeout "$case_timeout" "${client[@]}" -server_host="$host" -server_port="$port" -use_tls=false \
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
