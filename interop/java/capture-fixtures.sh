#!/usr/bin/env bash
# Regenerates interop/fixtures/dubbo/*.bin + README.md from real Java Dubbo (provider + consumer).
# Usage: interop/java/capture-fixtures.sh [outdir]   (default: interop/fixtures/dubbo)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="${1:-$repo/interop/fixtures/dubbo}"
work="$(mktemp -d "${TMPDIR:-/tmp}/rubbo-capture.XXXXXX")"
prov=""
cleanup() {
    local rc=$?
    if [[ -n "$prov" ]]; then
        kill -TERM "$prov" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$prov" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$prov" 2>/dev/null || true
        wait "$prov" 2>/dev/null || true
    fi
    if (( rc == 0 )); then rm -rf "$work"; else echo "capture failed; logs in $work" >&2; fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

timeout 1200 "$here/build.sh"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
timeout 300 "$here/run-java.sh" InteropProvider --port "$port" >"$work/provider.out" 2>"$work/provider.err" &
prov=$!
deadline=$((SECONDS + 60))
until grep -q "^READY dubbo $port\$" "$work/provider.out" 2>/dev/null; do
    kill -0 "$prov" 2>/dev/null && (( SECONDS <= deadline )) || { tail -n 30 "$work/provider.err" >&2; exit 1; }
    sleep 0.1
done
mkdir -p "$out"
timeout 180 "$here/run-java.sh" FrameCapture --provider "127.0.0.1:$port" --out "$out" 2>"$work/capture.err" ||
    { tail -n 40 "$work/capture.err" >&2; exit 1; }
