#!/usr/bin/env bash
# Runs one of the interop mains without Maven (after a build made target/classpath.txt):
#   interop/java/run-java.sh InteropProvider --port 20880 [--registry zookeeper://127.0.0.1:2181]
#   interop/java/run-java.sh InteropConsumer --url dubbo://127.0.0.1:20880 [--timeout 3000]
#   interop/java/run-java.sh FrameCapture --out interop/fixtures/dubbo
#   interop/java/run-java.sh RuleWriter --zk 127.0.0.1:2181 --key K (--file F | --delete)
# Extra JVM options: JAVA_OPTS. The process is exec'd, so its pid is the caller's child pid.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
main="${1:?usage: run-java.sh <MainClass> [args...]}"
shift
[[ -f "$here/target/classpath.txt" && -d "$here/target/classes" ]] ||
    { echo "run-java.sh: not built; run interop/java/build.sh" >&2; exit 2; }
[[ "$main" == *.* ]] || main="org.rubbo.interop.$main"
# RUBBO_JAVA_TRACING=1 adds Dubbo's tracing dependencies (target/classpath-tracing.txt).
cp="$here/target/classes:$(cat "$here/target/classpath.txt")"
if [[ "${RUBBO_JAVA_TRACING:-}" == 1 ]]; then
    cp="$cp:$(cat "$here/target/classpath-tracing.txt")"
fi
# shellcheck disable=SC2086
exec java -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djava.net.preferIPv4Stack=true \
    ${JAVA_OPTS:-} -cp "$cp" "$main" "$@"
