#!/usr/bin/env bash
# Builds the Java interop harness: target/classes + target/classpath.txt (runtime classpath).
# Offline first (when ~/.m2 already has everything), online as a fallback. Bounded in time.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
log="$(mktemp "${TMPDIR:-/tmp}/rubbo-java-build.XXXXXX")"
trap 'rm -f "$log"' EXIT
if ! timeout 300 mvn -B -q -o package >"$log" 2>&1; then
    echo "build.sh: offline build failed, retrying online" >&2
    timeout 900 mvn -B -q package >"$log" 2>&1 || {
        tail -n 40 "$log" >&2
        exit 1
    }
fi
[[ -s target/classpath.txt ]] || { echo "build.sh: target/classpath.txt missing" >&2; exit 1; }
