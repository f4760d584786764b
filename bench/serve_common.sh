# Shared by the serving benchmarks: start `tessera serve` on a free port, read its port,
# sample its CPU time and RSS, stop it with SIGTERM and report its exit code.
BIN=${TESSERA:-build/bin/tessera}

# start_server LOG ARGS...: sets SERVER_PID and PORT.
start_server() {
  local log=$1
  shift
  "$BIN" serve "$@" --port 0 > "$log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 600); do
    PORT=$(grep -o 'listening on http://[0-9.]*:[0-9]*' "$log" | sed 's/.*://' || true)
    [ -n "$PORT" ] && return 0
    kill -0 "$SERVER_PID" 2> /dev/null || { cat "$log"; echo "server died" >&2; exit 1; }
    sleep 0.2
  done
  echo "server did not start" >&2
  exit 1
}

# CPU seconds (user + system) the server has used.
server_cpu_seconds() {
  awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$SERVER_PID/stat"
}

server_rss_mib() {
  awk '/VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$SERVER_PID/status"
}

metric() {  # metric NAME: the value of one unlabelled-by-reason sample
  curl -s --max-time 10 "http://127.0.0.1:$PORT/metrics" | awk -v n="$1" 'index($0, n "{") == 1 { print $2; exit }'
}

stop_server() {
  kill -TERM "$SERVER_PID"
  local code=0
  wait "$SERVER_PID" || code=$?
  echo "server exit code after SIGTERM: $code"
}
