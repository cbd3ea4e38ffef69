# Shared by the bench scripts (sourced, not run).
# start_server PORT [serve options…]: a release server on a fresh data
# directory, stopped and removed on exit; sets $dir, $pid and $key (the
# printed admin key). Environment (MEDIAGEN_*) passes through; BIN names
# another build (default ./target/release/mediagen).
start_server() {
  local port=$1; shift
  dir=$(mktemp -d)
  MEDIAGEN_LOG=${MEDIAGEN_LOG:-warn} "${BIN:-./target/release/mediagen}" serve --bind "127.0.0.1:$port" \
    --data-dir "$dir" "$@" >"$dir/out" 2>&1 &
  pid=$!
  # SIGKILL: a graceful stop would wait for a long request still running.
  trap 'kill -9 $pid 2>/dev/null; rm -rf "$dir"' EXIT
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
  key=$(grep -o 'mg_live_[A-Za-z0-9]*' "$dir/out" | head -1)
}

now() { date +%s.%N; }

# stt_peer_and_builds: faster-whisper 1.2.1 in target/bench/fw-venv (sets
# $venv), our release server and the engine-only `stt_bench` example.
stt_peer_and_builds() {
  venv=target/bench/fw-venv
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet faster-whisper==1.2.1 ctranslate2==4.7.1
  fi
  cargo build --release --locked --quiet --bin mediagen
  cargo build --release --locked --quiet --example stt_bench -p mediagen-speech
}
