#!/usr/bin/env bash
# Runs every cargo-fuzz target (libFuzzer, nightly) for a bounded time on its committed
# corpus and dictionary, prints the executions per target, and fails on a crash, a
# timeout or an allocation over rubbo_fuzz::MAX_ALLOC. Called by .ci/run.
#
#   fuzz/ci.sh [SECONDS_PER_TARGET]     (default 20; RUBBO_FUZZ_JOBS targets at a time,
#                                        default the number of cores; RUBBO_FUZZ_TARGETS
#                                        a subset, default all; RUBBO_FUZZ_ARGS more
#                                        libFuzzer flags)
#
# Built once with `-s none` (no AddressSanitizer): the decoders are safe Rust, so ASan
# finds little here, while it roughly doubles the build and slows every execution; the
# coverage instrumentation, debug assertions and overflow checks stay on. New inputs go
# to a temporary directory, so the committed corpus (fuzz/corpus/<target>/) is only
# read; a crash leaves its input in fuzz/artifacts/<target>/ and is printed in hex: add
# it to the corpus and as a regression test in crates/rubbo-fuzz/tests/.
set -euo pipefail
cd "$(dirname "$0")"
fuzz_dir=$PWD

secs=${1:-20}
jobs=${RUBBO_FUZZ_JOBS:-$(nproc)}
# Outside the tree and apart from the workspace's target dir (other flags, other
# toolchain), kept between runs like the grpc-go peers: after the first run only the
# changed crates rebuild.
target_dir=${RUBBO_FUZZ_TARGET_DIR:-$HOME/.cache/rubbo/fuzz-target}
flags=(--sanitizer none --target-dir "$target_dir")

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  timeout 600 rustup toolchain install nightly --profile minimal
fi
if ! command -v cargo-fuzz >/dev/null 2>&1; then
  # Into ~/.cargo/bin: installed once per machine.
  timeout 600 cargo install cargo-fuzz --version 0.13.2 --locked
fi
rustup run nightly rustc --version
cargo fuzz --version

started=$(date +%s)
timeout 2400 cargo +nightly fuzz build "${flags[@]}"
echo "cargo-fuzz build: $(($(date +%s) - started)) s"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Artifacts newer than this are this run's.
touch "$work/stamp"

# One target: its log in $work/<t>.log, its exit status in $work/<t>.rc.
run_one() {
  local t=$1 rc=0
  mkdir -p "$work/new/$t"
  timeout $((secs + 120)) cargo +nightly fuzz run "${flags[@]}" "$t" \
    "$work/new/$t" "$fuzz_dir/corpus/$t" -- \
    -max_total_time="$secs" -print_final_stats=1 -dict="$fuzz_dir/dict/$t.dict" \
    -timeout=10 -rss_limit_mb=2048 ${RUBBO_FUZZ_ARGS:-} >"$work/$t.log" 2>&1 || rc=$?
  echo "$rc" >"$work/$t.rc"
}

targets=${RUBBO_FUZZ_TARGETS:-$(cargo +nightly fuzz list)}
running=0
for t in $targets; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  run_one "$t" &
  running=$((running + 1))
done
wait

failed=()
total=0
for t in $targets; do
  log=$work/$t.log
  rc=$(cat "$work/$t.rc" 2>/dev/null || echo missing)
  execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -1 || true)
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1 || true)
  cov=$(grep -oE 'cov: [0-9]+' <<<"$done_line" | grep -oE '[0-9]+' || true)
  corp=$(grep -oE 'corp: [0-9]+' <<<"$done_line" | grep -oE '[0-9]+' || true)
  printf 'cargo-fuzz %-22s %10s execs in %s s, coverage %s, corpus %s, exit %s\n' \
    "$t" "${execs:-?}" "$secs" "${cov:-?}" "${corp:-?}" "$rc"
  total=$((total + ${execs:-0}))
  if [ "$rc" != 0 ]; then
    failed+=("$t")
    echo "---- $t: last lines of its log"
    tail -n 40 "$log"
    for a in "$fuzz_dir/artifacts/$t"/*; do
      [ -f "$a" ] && [ "$a" -nt "$work/stamp" ] && echo "input $(basename "$a"): $(od -An -v -tx1 "$a" | tr -d ' \n' | head -c 4096)"
    done
  fi
done
echo "cargo-fuzz: $total executions in $(wc -w <<<"$targets") targets (${#failed[@]} failed), $(($(date +%s) - started)) s with the build"
if [ ${#failed[@]} -gt 0 ]; then
  echo "error: cargo-fuzz failed: ${failed[*]}" >&2
  exit 1
fi
