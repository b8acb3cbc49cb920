#!/usr/bin/env bash
# A ZooKeeper server for tests and local clusters, from Debian's `zookeeper` package (installed by
# scripts/setup.sh), bound to 127.0.0.1.
#   scripts/zookeeper.sh start <port> <dir>   starts it in the background (data, config, log and
#                                              pid in <dir>) and returns once it answers
#   scripts/zookeeper.sh stop <dir>           stops it (SIGKILL: as a crash would)
# tickTime is 500 ms, so sessions of 1 s to 10 s are accepted (2 to 20 ticks).
set -euo pipefail

classpath() {
  local jars=(zookeeper zookeeper-jute slf4j-api slf4j-nop metrics-core snappy-java commons-cli
              netty-buffer netty-codec netty-common netty-handler netty-resolver netty-transport
              netty-transport-native-epoll netty-transport-native-unix-common)
  local cp="" jar
  for jar in "${jars[@]}"; do
    if [ ! -f "/usr/share/java/$jar.jar" ]; then
      echo "zookeeper.sh: /usr/share/java/$jar.jar is missing: run scripts/setup.sh" >&2
      exit 1
    fi
    cp="$cp${cp:+:}/usr/share/java/$jar.jar"
  done
  echo "$cp"
}

answers() {  # ZooKeeper's four-letter "ruok" over bash's /dev/tcp
  local port=$1
  [ "$( (exec 3<>"/dev/tcp/127.0.0.1/$port" && printf 'ruok' >&3 && timeout 2 cat <&3) \
        2>/dev/null)" = "imok" ]
}

case "${1:-}" in
  start)
    port=${2:?port}
    dir=$(mkdir -p "${3:?dir}" && cd "$3" && pwd)
    mkdir -p "$dir/data"
    cat > "$dir/zoo.cfg" <<CFG
tickTime=500
initLimit=10
syncLimit=5
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat
CFG
    java -Xmx256m -cp "$(classpath)" org.apache.zookeeper.server.ZooKeeperServerMain \
      "$dir/zoo.cfg" > "$dir/zookeeper.log" 2>&1 &
    echo $! > "$dir/zookeeper.pid"
    for _ in $(seq 1 100); do
      if answers "$port"; then exit 0; fi
      if ! kill -0 "$(cat "$dir/zookeeper.pid")" 2>/dev/null; then
        echo "zookeeper.sh: the server exited; its log:" >&2
        tail -20 "$dir/zookeeper.log" >&2
        exit 1
      fi
      sleep 0.1
    done
    echo "zookeeper.sh: no answer on 127.0.0.1:$port after 10 s" >&2
    exit 1
    ;;
  stop)
    dir=${2:?dir}
    if [ -f "$dir/zookeeper.pid" ]; then
      kill -9 "$(cat "$dir/zookeeper.pid")" 2>/dev/null || true
      rm -f "$dir/zookeeper.pid"
    fi
    ;;
  *)
    echo "usage: $0 start <port> <dir> | stop <dir>" >&2
    exit 2
    ;;
esac
