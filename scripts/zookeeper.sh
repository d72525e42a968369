#!/usr/bin/env bash
# Standalone ZooKeeper for tests (Debian package `zookeeper`), loopback only.
#
#   scripts/zookeeper.sh start <port> <workdir>   # prints the pid once `ruok` answers `imok`
#   scripts/zookeeper.sh stop <workdir>           # kills it and waits for exit
#   scripts/zookeeper.sh status <workdir>         # exit 0 if the recorded pid is alive
#
# Writes <workdir>/zoo.cfg, <workdir>/data/, <workdir>/zk.log and <workdir>/zk.pid.
# Needs no systemd; safe to call repeatedly (start on a live workdir fails, stop is idempotent).
# Env: ZK_START_TIMEOUT (seconds, default 20), ZK_CLASSPATH (override jar list), JAVA (java binary).
set -euo pipefail

die() { echo "zookeeper.sh: $*" >&2; exit 1; }

ZK_START_TIMEOUT="${ZK_START_TIMEOUT:-20}"
JAVA="${JAVA:-java}"

zk_classpath() {
    if [[ -n "${ZK_CLASSPATH:-}" ]]; then
        echo "$ZK_CLASSPATH"
        return
    fi
    local jars=() j
    for j in /usr/share/java/zookeeper.jar /usr/share/java/zookeeper-jute.jar \
             /usr/share/java/slf4j-api.jar /usr/share/java/slf4j-simple.jar; do
        [[ -f "$j" ]] && jars+=("$j")
    done
    [[ -f /usr/share/java/zookeeper.jar ]] || die "ZooKeeper not installed (apt-get install -y zookeeper)"
    (IFS=:; echo "${jars[*]}")
}

# Sends a four-letter word to 127.0.0.1:<port>, prints the answer (empty on failure).
four_letter() {
    local port="$1" word="$2" reply=""
    {
        exec 3<>"/dev/tcp/127.0.0.1/$port" || return 0
        printf '%s' "$word" >&3
        reply="$(timeout 2 cat <&3 || true)"
        exec 3<&- 3>&-
    } 2>/dev/null || true
    printf '%s' "$reply"
}

pid_alive() { [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null; }

cmd_start() {
    local port="${1:-}" workdir="${2:-}"
    [[ "$port" =~ ^[0-9]+$ ]] || die "usage: $0 start <port> <workdir>"
    [[ -n "$workdir" ]] || die "usage: $0 start <port> <workdir>"
    mkdir -p "$workdir/data"
    workdir="$(cd "$workdir" && pwd)"
    if [[ -f "$workdir/zk.pid" ]] && pid_alive "$(cat "$workdir/zk.pid")"; then
        die "already running in $workdir (pid $(cat "$workdir/zk.pid"))"
    fi
    if [[ "$(four_letter "$port" ruok)" == "imok" ]]; then
        die "port $port already serves a ZooKeeper"
    fi
    cat > "$workdir/zoo.cfg" <<CFG
tickTime=2000
initLimit=10
syncLimit=5
dataDir=$workdir/data
clientPort=$port
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat,mntr,cons
maxSessionTimeout=60000
maxClientCnxns=0
autopurge.purgeInterval=0
CFG
    local cp
    cp="$(zk_classpath)"
    # setsid: own process group, so stop can take down anything it spawns.
    setsid "$JAVA" -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
        -Dzookeeper.admin.enableServer=false \
        -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
        -cp "$cp" org.apache.zookeeper.server.ZooKeeperServerMain "$workdir/zoo.cfg" \
        </dev/null >"$workdir/zk.log" 2>&1 &
    local pid=$!
    echo "$pid" > "$workdir/zk.pid"
    local deadline=$((SECONDS + ZK_START_TIMEOUT))
    while (( SECONDS < deadline )); do
        if ! pid_alive "$pid"; then
            tail -n 20 "$workdir/zk.log" >&2 || true
            rm -f "$workdir/zk.pid"
            die "ZooKeeper exited during start (log: $workdir/zk.log)"
        fi
        if [[ "$(four_letter "$port" ruok)" == "imok" ]]; then
            echo "$pid"
            return 0
        fi
        sleep 0.1
    done
    tail -n 20 "$workdir/zk.log" >&2 || true
    cmd_stop "$workdir" >/dev/null 2>&1 || true
    die "ZooKeeper not ready on 127.0.0.1:$port after ${ZK_START_TIMEOUT}s"
}

cmd_stop() {
    local workdir="${1:-}"
    [[ -n "$workdir" ]] || die "usage: $0 stop <workdir>"
    local pidfile="$workdir/zk.pid"
    [[ -f "$pidfile" ]] || return 0
    local pid
    pid="$(cat "$pidfile")"
    if pid_alive "$pid"; then
        kill -TERM "$pid" 2>/dev/null || true
        local i
        for ((i = 0; i < 100; i++)); do   # 10 s
            pid_alive "$pid" || break
            sleep 0.1
        done
        if pid_alive "$pid"; then
            kill -KILL "$pid" 2>/dev/null || true
            for ((i = 0; i < 50; i++)); do
                pid_alive "$pid" || break
                sleep 0.1
            done
        fi
    fi
    # Reap if it is our child (no-op otherwise).
    wait "$pid" 2>/dev/null || true
    pid_alive "$pid" && die "pid $pid still alive"
    rm -f "$pidfile"
}

cmd_status() {
    local workdir="${1:-}"
    [[ -n "$workdir" && -f "$workdir/zk.pid" ]] || return 1
    pid_alive "$(cat "$workdir/zk.pid")"
}

case "${1:-}" in
    start) shift; cmd_start "$@" ;;
    stop) shift; cmd_stop "$@" ;;
    status) shift; cmd_status "$@" ;;
    *) die "usage: $0 start <port> <workdir> | stop <workdir> | status <workdir>" ;;
esac
