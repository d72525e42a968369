#!/usr/bin/env bash
# Runs every test: the Rust workspace (unit, integration, doc tests; the ZooKeeper tests
# start their own server), then the Java interop checks. One build profile (debug) for all.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "==> cargo test --workspace"
# Bounded: a test that hangs fails the run instead of holding it until CI's limit.
timeout "${RUBBO_TEST_TIMEOUT:-3600}" cargo test --workspace --no-fail-fast

for script in interop/hessian/run.sh interop/run; do
  if [ -x "$script" ]; then
    echo "==> $script"
    "$script"
  fi
done
