#!/usr/bin/env bash
# grpcurl (built by build.sh) against a Rust provider's Triple port with NO proto file: server
# reflection lists and describes the contract's services, and calls the Greeter with the schema
# it learned; gRPC health through reflection; then curl calls the Greeter (an IDL method) with
# JSON over HTTP/1.1:
#
#   interop/grpc-go/reflection-grpcurl.sh 127.0.0.1 PORT
#
# Run against `interop-provider --protocol tri --port PORT` (interop/run's cell 5). grpcurl asks
# for reflection v1 first; the Rust tests cover v1alpha. Prints "PASS reflection/<check>" or
# "FAIL reflection/<check>: <output>" per check, then "N passed, N failed"; exits 1 if any
# failed. Env: GRPC_GO_BIN (skip build.sh).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
host="${1:?usage: reflection-grpcurl.sh HOST PORT}"
port="${2:?usage: reflection-grpcurl.sh HOST PORT}"
bin="${GRPC_GO_BIN:-$(timeout 1800 "$here/build.sh")}"
[[ -x "$bin/grpcurl" ]] || { echo "reflection-grpcurl.sh: no grpcurl in $bin" >&2; exit 2; }
passed=0
failed=0

# check <name> <expected-exit> <output> <rc> <expected-substring>...
check() {
    local name="$1" want_rc="$2" out="$3" rc="$4"
    shift 4
    local ok=1 s
    (( rc == want_rc )) || ok=0
    for s in "$@"; do [[ "$out" == *"$s"* ]] || ok=0; done
    if (( ok )); then
        echo "PASS reflection/$name"
        passed=$((passed + 1))
    else
        echo "FAIL reflection/$name: exit $rc (wanted $want_rc): $(tr '\n' ' ' <<<"$out")"
        failed=$((failed + 1))
    fi
}

# grpcurl <name> <expected-exit> <grpcurl args> -- <expected-substring>...
grpcurl() {
    local name="$1" want_rc="$2" args=() out rc=0
    shift 2
    while (( $# )) && [[ "$1" != "--" ]]; do args+=("$1"); shift; done
    shift
    out="$(timeout 20 "$bin/grpcurl" -plaintext "${args[@]}" 2>&1)" || rc=$?
    check "$name" "$want_rc" "$out" "$rc" "$@"
}

# curl_json <name> <path> <body> <expected substring>...: the output is the body, then
# " <http code>".
curl_json() {
    local name="$1" path="$2" body="$3" out rc=0
    shift 3
    out="$(timeout 20 curl -s -w ' %{http_code}' -H 'content-type: application/json' \
        -d "$body" "http://$host:$port/$path" 2>&1)" || rc=$?
    check "$name" 0 "$out" "$rc" "$@"
}

target="$host:$port"
grpcurl list 0 "$target" list -- org.rubbo.interop.Greeter grpc.health.v1.Health \
    grpc.reflection.v1.ServerReflection grpc.reflection.v1alpha.ServerReflection
grpcurl list-methods 0 "$target" list org.rubbo.interop.Greeter -- \
    org.rubbo.interop.Greeter.Greet org.rubbo.interop.Greeter.GreetBidi
grpcurl describe 0 "$target" describe org.rubbo.interop.Greeter -- \
    'org.rubbo.interop.Greeter is a service:' \
    'rpc Greet ( .org.rubbo.interop.GreetRequest ) returns ( .org.rubbo.interop.GreetReply );' \
    'rpc GreetBidi ( stream .org.rubbo.interop.GreetRequest ) returns ( stream .org.rubbo.interop.GreetReply );'
grpcurl describe-message 0 "$target" describe org.rubbo.interop.GreetRequest -- \
    'string name = 1;' 'bytes payload = 3;'
# grpcurl exits 1 on a symbol the server does not know (reflection's NOT_FOUND).
grpcurl describe-unknown 1 "$target" describe no.such.Service -- 'Symbol not found'
grpcurl greet 0 -d '{"name":"x"}' "$target" org.rubbo.interop.Greeter/Greet -- '"message": "Hello, x"'
grpcurl server-stream 0 -d '{"name":"s","repeat":2}' "$target" \
    org.rubbo.interop.Greeter/GreetServerStream -- '"index": 1'
# 64 + INVALID_ARGUMENT (3)
grpcurl greet-error 67 -d '{"name":"error"}' "$target" org.rubbo.interop.Greeter/Greet -- \
    'Code: InvalidArgument' 'Message: bad name'
grpcurl health 0 -use-reflection -d '{}' "$target" grpc.health.v1.Health/Check -- \
    '"status": "SERVING"'
grpcurl health-service 0 -use-reflection -d '{"service":"org.rubbo.interop.Greeter"}' "$target" \
    grpc.health.v1.Health/Check -- '"status": "SERVING"'
# The reply's JSON, as Java's printer writes it (fields at their default left out).
curl_json curl-json-greet org.rubbo.interop.Greeter/Greet '{"name":"x"}' '{"message":"Hello, x"} 200'
curl_json curl-json-payload org.rubbo.interop.Greeter/Greet '{"name":"p","payload":"AAEC/w=="}' \
    '{"message":"Hello, p","payload":"AAEC/w=="} 200'
curl_json curl-json-error org.rubbo.interop.Greeter/Greet '{"name":"error"}' \
    '{"message":"bad name","status":"400"} 400'
curl_json curl-json-bad org.rubbo.interop.Greeter/Greet '{"name":5}' \
    'the body is not the JSON of org.rubbo.interop.GreetRequest' '"status":"400"} 400'
echo "$passed passed, $failed failed"
(( failed == 0 ))
