# Sourced by the bench scripts that run the daemon (idle_bench.sh,
# load_test.sh, memory_bench.sh).

# start_serve BIN CONFIG LOG: starts `BIN serve` on CONFIG on a free port,
# logging to LOG, and waits for it to say its port. Sets $pid and $port;
# exits with the log when the daemon did not start within 30 s.
start_serve() {
  "$1" serve --config.file "$2" --web.listen-address 127.0.0.1:0 2>"$3" &
  pid=$!
  port=""
  for _ in $(seq 300); do
    port=$(grep -o 'port=[0-9]*' "$3" | head -1 | cut -d= -f2 || true)
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || { echo "the daemon did not start:"; cat "$3"; exit 1; }
}

# wait_ready SECONDS: waits for /-/ready of the daemon on $port; exits when
# it is not ready within SECONDS. Sets $start (when the wait began).
wait_ready() {
  start=$(date +%s)
  until curl -sf "127.0.0.1:$port/-/ready" >/dev/null; do
    [ $(($(date +%s) - start)) -gt "$1" ] && { echo "not ready after $1 s"; exit 1; }
    sleep 1
  done
}
