#!/usr/bin/env bash
# Hessian interop between Rubbo and Java's hessian-lite (org.apache.dubbo:hessian-lite 4.0.4,
# the version Dubbo 3.3 uses), both directions:
#   1. Java writes every vector (src/org/rubbo/hessiangen/Vectors.java); the output must equal
#      the committed fixtures crates/rubbo-hessian2/tests/fixtures/java (which the Rust tests
#      decode and re-encode). `run.sh --regen` rewrites the fixtures instead.
#   2. Rubbo writes the same vectors (example write_vectors); Java reads and checks each one,
#      printing one line per vector and "N passed, N failed".
# Needs: java 17 + javac, mvn (first run only, to fetch the jar), cargo.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
FIXTURES="$ROOT/crates/rubbo-hessian2/tests/fixtures/java"
VERSION=4.0.4
JAR="$HOME/.m2/repository/org/apache/dubbo/hessian-lite/$VERSION/hessian-lite-$VERSION.jar"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

if [ ! -f "$JAR" ]; then
    timeout 300 mvn -q -B dependency:get -Dartifact="org.apache.dubbo:hessian-lite:$VERSION"
fi

echo "== compile the Java side"
# The contract types (User, Address, Gender, InteropException) are the interop project's own.
CONTRACT="$ROOT/interop/java/src/main/java/org/rubbo/interop"
mapfile -t SOURCES < <(
    find "$HERE/src" -name '*.java'
    for t in User Address Gender InteropException; do echo "$CONTRACT/$t.java"; done
)
timeout 120 javac -nowarn -d "$WORK/classes" -cp "$JAR" "${SOURCES[@]}"
CP="$WORK/classes:$JAR"

echo "== Java writes the vectors"
timeout 60 java -cp "$CP" org.rubbo.hessiangen.Gen "$WORK/java"
if [ "${1:-}" = "--regen" ]; then
    rm -rf "$FIXTURES"
    mkdir -p "$FIXTURES"
    cp "$WORK/java"/* "$FIXTURES/"
    echo "fixtures regenerated in $FIXTURES"
elif ! diff -rq "$WORK/java" "$FIXTURES"; then
    echo "FAIL: Java's output differs from the committed fixtures (run.sh --regen to update)"
    exit 1
else
    echo "committed fixtures match Java's output"
fi

echo "== Rubbo writes the vectors"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
(cd "$ROOT" && timeout 900 cargo build -q -p rubbo-hessian2 --example write_vectors)
timeout 60 "$TARGET/debug/examples/write_vectors" "$WORK/rust"

echo "== Java reads Rubbo's vectors"
timeout 120 java -cp "$CP" org.rubbo.hessiangen.Check "$WORK/rust"
