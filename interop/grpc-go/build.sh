#!/usr/bin/env bash
# Builds the grpc-go interop peers (and grpcurl) with the Go module proxy into a cache
# directory outside the repository, and prints that directory's bin/ path on stdout.
#
#   interop/grpc-go/build.sh            # -> $GRPC_GO_CACHE/bin/{client,server,grpcurl}
#
# GRPC_GO_CACHE (default ~/.cache/rubbo/grpc-go-v1.85.0) holds GOPATH, GOCACHE, the two
# scratch modules and bin/. A binary already there is not rebuilt; delete bin/ to force.
# grpcurl is best effort: when it does not build, a warning says so and the exit is 0.
set -euo pipefail
grpc_version="v1.85.0"
grpcurl_version="${GRPCURL_VERSION:-v1.9.4}"
cache="${GRPC_GO_CACHE:-$HOME/.cache/rubbo/grpc-go-$grpc_version}"
bin="$cache/bin"
mkdir -p "$bin" "$cache/gopath" "$cache/gocache"
export GOPATH="$cache/gopath" GOCACHE="$cache/gocache" GOMODCACHE="$cache/gopath/pkg/mod"
export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0
log="$(mktemp "${TMPDIR:-/tmp}/rubbo-grpc-go-build.XXXXXX")"
trap 'rm -f "$log"' EXIT

# run <seconds> <command...>: bounded step; its output goes to the log, shown on failure.
run() {
    local secs="$1"
    shift
    if ! timeout "$secs" "$@" >>"$log" 2>&1; then
        echo "grpc-go/build.sh: failed (or timed out after ${secs}s): $*" >&2
        tail -n 30 "$log" >&2
        return 1
    fi
}

# module <dir> <name>: a scratch module of our own to build from.
module() {
    mkdir -p "$1"
    [[ -f "$1/go.mod" ]] || (cd "$1" && run 60 go mod init "$2")
}

if [[ ! -x "$bin/client" || ! -x "$bin/server" ]]; then
    echo "grpc-go/build.sh: building grpc-go $grpc_version interop client and server" >&2
    module "$cache/interop" local/grpcinterop
    (
        cd "$cache/interop"
        run 600 go get "google.golang.org/grpc@$grpc_version"
        run 900 nice -n 10 go build -p 1 -trimpath -o "$bin/" \
            google.golang.org/grpc/interop/client google.golang.org/grpc/interop/server
    )
fi

# Our grpc-go peer for the compression cases (compression/main.go): grpc-go's interop
# binaries have neither those cases nor a gzip codec. Rebuilt when its source changes.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src_sum="$(sha256sum "$here/compression/main.go" | cut -d' ' -f1)"
if [[ ! -x "$bin/compression" || "$(cat "$bin/compression.sha256" 2>/dev/null)" != "$src_sum" ]]; then
    echo "grpc-go/build.sh: building the compression peer" >&2
    module "$cache/compression" local/grpccompression
    cp "$here/compression/main.go" "$cache/compression/main.go"
    (
        cd "$cache/compression"
        run 600 go get "google.golang.org/grpc@$grpc_version"
        run 900 nice -n 10 go build -p 1 -trimpath -o "$bin/compression" .
    )
    echo "$src_sum" >"$bin/compression.sha256"
fi

if [[ ! -x "$bin/grpcurl" ]]; then
    echo "grpc-go/build.sh: building grpcurl ($grpcurl_version)" >&2
    module "$cache/grpcurl" local/grpcurl
    if ! (
        cd "$cache/grpcurl" &&
            run 600 go get "github.com/fullstorydev/grpcurl/cmd/grpcurl@$grpcurl_version" &&
            run 900 nice -n 10 go build -p 1 -trimpath -o "$bin/" github.com/fullstorydev/grpcurl/cmd/grpcurl
    ); then
        echo "grpc-go/build.sh: warning: grpcurl not built (reflection checks will be skipped)" >&2
    fi
fi

echo "$bin"
