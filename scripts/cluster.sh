#!/usr/bin/env bash
# A local Oxbow cluster on 127.0.0.1 (docs/cluster.md): ZooKeeper and N oxbowd servers from
# build/release, each with its own data dir under ${OXBOW_CLUSTER_DIR:-build/cluster}.
#   scripts/cluster.sh up [N]      start ZooKeeper and servers 1..N (default 3)
#   scripts/cluster.sh status      oxbow cluster status (asks server 1, else any live one)
#   scripts/cluster.sh kill I      SIGKILL server I          start I   start it again
#   scripts/cluster.sh pause I     SIGSTOP server I          resume I  SIGCONT it
#   scripts/cluster.sh roll        restart every server in turn: SIGTERM (its buckets' leadership
#                                  moves first), start, wait until every bucket is in sync again
#   scripts/cluster.sh down        stop everything (the data stays; rm -rf the dir to forget it)
# Server I listens for Flight on 127.0.0.1:(9100+I), Kafka on 9200+I, metrics on 9300+I, the
# Iceberg REST catalog on 9400+I; all share the warehouse build/cluster/warehouse;
# ZooKeeper on ${OXBOW_ZOOKEEPER_PORT:-2181}.
set -euo pipefail
cd "$(dirname "$0")/.."

DIR=${OXBOW_CLUSTER_DIR:-build/cluster}
BIN=${OXBOW_BUILD_DIR:-build/release}/tools
# The port `up` used, remembered for the commands after it.
ZK_PORT=${OXBOW_ZOOKEEPER_PORT:-$(cat "$DIR/zookeeper.port" 2>/dev/null || echo 2181)}

need_binaries() {
  if [ ! -x "$BIN/oxbowd" ] || [ ! -x "$BIN/oxbow" ]; then
    echo "cluster.sh: $BIN/oxbowd is missing: run scripts/build.sh release first" >&2
    exit 1
  fi
}

pid_of() { cat "$DIR/server$1/oxbowd.pid" 2>/dev/null || true; }

start_server() {
  local i=$1
  mkdir -p "$DIR/server$i"
  "$BIN/oxbowd" --data-dir "$DIR/server$i/data" --warehouse "$DIR/warehouse" \
    --listen "127.0.0.1:$((9100 + i))" --kafka-listen "127.0.0.1:$((9200 + i))" \
    --metrics-listen "127.0.0.1:$((9300 + i))" --catalog-listen "127.0.0.1:$((9400 + i))" \
    --zookeeper "127.0.0.1:$ZK_PORT/oxbow-local" --server-id "$i" \
    >> "$DIR/server$i/oxbowd.log" 2>&1 &
  echo $! > "$DIR/server$i/oxbowd.pid"
  for _ in $(seq 1 100); do
    if curl -sf "http://127.0.0.1:$((9300 + i))/readyz" > /dev/null 2>&1; then
      echo "server $i: flight grpc://127.0.0.1:$((9100 + i))  kafka 127.0.0.1:$((9200 + i))  log $DIR/server$i/oxbowd.log"
      return 0
    fi
    if ! kill -0 "$(pid_of "$i")" 2>/dev/null; then
      echo "cluster.sh: server $i exited; its log:" >&2
      tail -5 "$DIR/server$i/oxbowd.log" >&2
      return 1
    fi
    sleep 0.1
  done
  echo "cluster.sh: server $i not ready after 10 s (see $DIR/server$i/oxbowd.log)" >&2
  return 1
}

# Waits (up to 120 s) until server $1 is registered and, as it sees the cluster, every bucket
# has a leader and its whole ISR.
wait_in_sync() {
  local i=$1 status
  for _ in $(seq 1 1200); do
    status=$("$BIN/oxbow" cluster status --json --server "127.0.0.1:$((9100 + i))" 2>/dev/null) &&
      python3 -c '
import json, sys
s = json.load(sys.stdin)
ok = any(x["id"] == int(sys.argv[1]) for x in s["servers"]) and all(
    b["leader"] >= 0 and sorted(b["isr"]) == sorted(b["replicas"]) for b in s["buckets"])
sys.exit(0 if ok else 1)' "$i" <<< "$status" && return 0
    sleep 0.1
  done
  echo "cluster.sh: the buckets are not in sync 120 s after server $i started" >&2
  return 1
}

stop_server() {
  local i=$1 pid
  pid=$(pid_of "$i")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 300); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "cluster.sh: server $i did not stop within 30 s of SIGTERM" >&2
      return 1
    fi
  fi
  rm -f "$DIR/server$i/oxbowd.pid"
}

signal_server() {
  local pid
  pid=$(pid_of "$2")
  [ -n "$pid" ] || { echo "cluster.sh: server $2 is not running" >&2; exit 1; }
  kill "-$1" "$pid"
}

case "${1:-}" in
  up)
    need_binaries
    n=${2:-3}
    mkdir -p "$DIR"
    scripts/zookeeper.sh start "$ZK_PORT" "$DIR/zookeeper"
    echo "$ZK_PORT" > "$DIR/zookeeper.port"
    echo "zookeeper: 127.0.0.1:$ZK_PORT"
    for i in $(seq 1 "$n"); do start_server "$i"; done
    echo "$n" > "$DIR/servers"
    ;;
  start) need_binaries; start_server "${2:?server}" ;;
  kill) signal_server KILL "${2:?server}"; rm -f "$DIR/server$2/oxbowd.pid" ;;
  pause) signal_server STOP "${2:?server}" ;;
  resume) signal_server CONT "${2:?server}" ;;
  roll)
    need_binaries
    for i in $(seq 1 "$(cat "$DIR/servers" 2>/dev/null || echo 3)"); do
      stop_server "$i"
      echo "server $i: stopped"
      start_server "$i"
      wait_in_sync "$i"
      echo "server $i: back, every bucket in sync"
    done
    ;;
  status)
    need_binaries
    for i in $(seq 1 "$(cat "$DIR/servers" 2>/dev/null || echo 3)"); do
      if [ -n "$(pid_of "$i")" ] && kill -0 "$(pid_of "$i")" 2>/dev/null; then
        exec "$BIN/oxbow" cluster status --server "127.0.0.1:$((9100 + i))"
      fi
    done
    echo "cluster.sh: no server is running" >&2
    exit 1
    ;;
  down)
    for pidfile in "$DIR"/server*/oxbowd.pid; do
      [ -f "$pidfile" ] || continue
      kill -CONT "$(cat "$pidfile")" 2>/dev/null || true
      kill -TERM "$(cat "$pidfile")" 2>/dev/null || true
      rm -f "$pidfile"
    done
    sleep 1
    scripts/zookeeper.sh stop "$DIR/zookeeper"
    ;;
  *)
    sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
