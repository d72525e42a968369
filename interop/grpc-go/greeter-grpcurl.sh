#!/usr/bin/env bash
# A plain gRPC client (grpcurl, built by build.sh) calls the contract's Greeter on HOST:PORT in IDL
# mode, with greeter.proto given as a file (no reflection needed):
#
#   interop/grpc-go/greeter-grpcurl.sh 127.0.0.1 PORT
#
# Prints "PASS grpcurl/greeter/<check>" or "FAIL grpcurl/greeter/<check>: <output>" per check, then
# "N passed, N failed"; exits 1 if any failed. Env: GRPC_GO_BIN (skip build.sh).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
host="${1:?usage: greeter-grpcurl.sh HOST PORT}"
port="${2:?usage: greeter-grpcurl.sh HOST PORT}"
bin="${GRPC_GO_BIN:-$(timeout 1800 "$here/build.sh")}"
[[ -x "$bin/grpcurl" ]] || { echo "greeter-grpcurl.sh: no grpcurl in $bin" >&2; exit 2; }
passed=0
failed=0

# call <name> <json> <expected-exit> <expected-substring>...: one unary Greet.
call() {
    local name="$1" body="$2" want_rc="$3"
    shift 3
    local out rc=0
    out="$(timeout 20 "$bin/grpcurl" -plaintext -import-path "$here/../proto" -proto greeter.proto \
        -d "$body" "$host:$port" org.rubbo.interop.Greeter/Greet 2>&1)" || rc=$?
    local ok=1 s
    (( rc == want_rc )) || ok=0
    for s in "$@"; do [[ "$out" == *"$s"* ]] || ok=0; done
    if (( ok )); then
        echo "PASS grpcurl/greeter/$name"
        passed=$((passed + 1))
    else
        echo "FAIL grpcurl/greeter/$name: exit $rc (wanted $want_rc): $(tr '\n' ' ' <<<"$out")"
        failed=$((failed + 1))
    fi
}

call greet '{"name":"grpcurl"}' 0 '"message": "Hello, grpcurl"'
# payload is bytes: base64 in grpcurl's JSON ("AAEC/w==" = 00 01 02 ff)
call payload '{"name":"p","payload":"AAEC/w=="}' 0 '"message": "Hello, p"' '"payload": "AAEC/w=="'
# grpcurl exits 64 + the gRPC status code: INVALID_ARGUMENT (3) -> 67
call error-status '{"name":"error"}' 67 'Code: InvalidArgument' 'Message: bad name'
echo "$passed passed, $failed failed"
(( failed == 0 ))
