#!/usr/bin/env bash
# Checks that every publishable crate packages: metadata, version requirements on our
# own path dependencies, and the file list (crates that never publish are left out).
# Fast: no build. For the full proof, which builds each package from its tarball
# against the others (cargo overlays a local registry), run it with --verify; that
# takes a while.
set -euo pipefail
cd "$(dirname "$0")/.."

verify=(--no-verify)
if [ "${1:-}" = "--verify" ]; then
  verify=()
fi

# Not published: publish = false in their Cargo.toml (the fuzz crate is its own
# workspace and not a member).
unpublished=(interop rubbo-ui-tests rubbo-bench rubbo-fuzz config-yaml protobuf-example bench-chart)

exclude=()
for p in "${unpublished[@]}"; do
  exclude+=(--exclude "$p")
done

# --allow-dirty: the check is about the files a package would carry, which also holds
# for a working tree with edits (CI runs on a clean clone anyway).
cargo package --workspace "${exclude[@]}" --locked --allow-dirty "${verify[@]}"
