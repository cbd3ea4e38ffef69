#!/usr/bin/env bash
# Streaming speech through a separate worker: time to first audio of `POST
# /v1/text-to-speech/stream` (first 1 KiB, bench/ttfb.py, median of 10) when
# an API process without workers (`workers = 0`) relays what a `mediagen
# worker --kinds tts` process makes, on PostgreSQL (pieces through the
# stream_chunks table, woken by NOTIFY), beside the single-process default
# (SQLite, workers inside `serve`). Loopback, release build, both on the
# same 2 cores. Usage: bench/stream_worker.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
models=${MEDIAGEN_MODELS_DIR:-./models}
cargo build --release --locked --quiet --bin mediagen
admin=$(scripts/ensure-postgres.sh)
export MEDIAGEN_LOG=warn MEDIAGEN_RATE_LIMIT_PER_MINUTE=100000

voices() { # port key → "piper-id kokoro-id"
  local p=$1 k=$2 piper heart
  piper=$(curl -s "http://127.0.0.1:$p/v1/voices?engine=piper" -H "Authorization: Bearer $k" | python3 -c "import json,sys; print(json.load(sys.stdin)['data'][0]['id'])")
  heart=$(curl -s "http://127.0.0.1:$p/v1/voices?engine=kokoro&q=heart" -H "Authorization: Bearer $k" | python3 -c "import json,sys; print(json.load(sys.stdin)['data'][0]['id'])")
  echo "$piper $heart"
}

measure() { # label port key
  local label=$1 p=$2 k=$3 piper heart
  read -r piper heart <<<"$(voices "$p" "$k")"
  # Warm: the worker loads its models in the background at start.
  for _ in $(seq 1 120); do
    python3 bench/ttfb.py "$p" "$k" "$heart" pcm 1 >/dev/null 2>&1 && break
    sleep 0.5
  done
  python3 bench/ttfb.py "$p" "$k" "$piper" pcm 1 >/dev/null
  for fmt in pcm mp3; do
    echo "$label piper $fmt: $(python3 bench/ttfb.py "$p" "$k" "$piper" $fmt 10)"
  done
  for fmt in pcm mp3; do
    echo "$label kokoro $fmt: $(python3 bench/ttfb.py "$p" "$k" "$heart" $fmt 10)"
  done
}

echo "## Time to first audio, $(date -u +%F)"
port=18193
start_server $port --models-dir "$models"
measure "sqlite, one process:" $port "$key"
{ kill -9 "$pid"; wait "$pid"; } 2>/dev/null || true; rm -rf "$dir"

db=mg_bench_stream_$$
psql "$admin" -qc "CREATE DATABASE $db"
export MEDIAGEN_DATABASE_URL="${admin%/*}/$db"
MEDIAGEN_WORKERS=0 start_server $port --models-dir "$models"
# The worker shares the API's storage directory (a bucket on a cluster).
./target/release/mediagen worker --kinds tts --data-dir "$dir" --models-dir "$models" >"$dir/worker.out" 2>&1 &
wpid=$!
trap 'kill -9 $pid $wpid 2>/dev/null; rm -rf "$dir"; psql "$admin" -qc "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1' EXIT
measure "postgres, API + worker process:" $port "$key"
echo "API process peak memory (VmHWM): $(awk '/VmHWM/ {printf "%.1f MB", $2/1024}' /proc/$pid/status)"
