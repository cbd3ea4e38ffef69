#!/usr/bin/env bash
# The queue: how fast jobs are accepted and how soon an idle worker claims
# one, on PostgreSQL with 1, 2 and 4 worker processes (`mediagen worker`,
# two jobs at once each, woken by LISTEN/NOTIFY) and on SQLite with the
# workers inside `mediagen serve` (the single-process default). Loopback,
# release build, `test.sleep` jobs of 0 ms (the queue's own cost).
#
# - submissions/s: wrk POSTs jobs (`Prefer: respond-async`) on 8
#   connections for SECONDS while the workers drain them; every POST is a
#   transaction (idempotency scope, credit hold, job row, NOTIFY).
# - claim latency: 200 jobs submitted one by one, 50 ms apart, to idle
#   workers; the time from a job's creation to its claim (`started_at -
#   created_at` in the jobs table, milliseconds), p50 and p99.
#
# Usage: bench/queue.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
command -v wrk >/dev/null || { echo "bench: installing wrk"; apt-get install -y -qq wrk >/dev/null; }
bin=./target/release/mediagen
[ -x $bin ] || cargo build --release --locked
admin=$(scripts/ensure-postgres.sh)
port=18282
lua=$(mktemp --suffix .lua)
cat > "$lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"ms":0}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Prefer"] = "respond-async"
LUA
export MEDIAGEN_ENABLE_TEST_JOBS=true MEDIAGEN_LOG=warn \
  MEDIAGEN_RATE_LIMIT_PER_MINUTE=1000000000 MEDIAGEN_RATE_LIMIT_PER_HOUR=1000000000 \
  MEDIAGEN_MAX_CONCURRENT_JOBS=100000000 MEDIAGEN_WORKER_CONCURRENCY=2 \
  MEDIAGEN_JOB_RETENTION_DAYS=0 MEDIAGEN_FILE_RETENTION_DAYS=0
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; pids=(); }
trap 'cleanup; rm -f "$lua"' EXIT

# Percentiles of the claim latencies (ms) of jobs created after $1 (ms).
latency() {
  local since=$1 db=$2
  if [ "$backend" = postgres ]; then
    psql "$db" -qtAc "SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY started_at - created_at)::numeric, 1) || ' ms | ' || round(percentile_cont(0.99) WITHIN GROUP (ORDER BY started_at - created_at)::numeric, 1) || ' ms' FROM jobs WHERE created_at > $since"
  else
    python3 - "$db" "$since" <<'PY'
import sqlite3, sys
rows = sorted(r[0] for r in sqlite3.connect(sys.argv[1]).execute(
    "SELECT started_at - created_at FROM jobs WHERE created_at > ?", (int(sys.argv[2]),)))
pick = lambda q: rows[min(len(rows) - 1, int(q * (len(rows) - 1) + 0.5))]
print(f"{pick(0.5):.1f} ms | {pick(0.99):.1f} ms")
PY
  fi
}

run() { # backend, worker processes (0: the workers of serve)
  backend=$1; local workers=$2 dir db url
  dir=$(mktemp -d)
  if [ "$backend" = postgres ]; then
    db=mg_bench_queue_$$_$workers
    psql "$admin" -qc "CREATE DATABASE $db"
    url="${admin%/*}/$db"
    export MEDIAGEN_DATABASE_URL=$url
    MEDIAGEN_WORKERS=0 $bin serve --bind 127.0.0.1:$port --data-dir "$dir" >"$dir/out" 2>&1 &
  else
    unset MEDIAGEN_DATABASE_URL
    url=$dir/mediagen.db
    MEDIAGEN_WORKERS=2 $bin serve --bind 127.0.0.1:$port --data-dir "$dir" >"$dir/out" 2>&1 &
  fi
  pids+=($!)
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
  local key; key=$(grep -o 'mg_live_[A-Za-z0-9]*' "$dir/out" | head -1)
  for _ in $(seq 1 "$workers"); do
    $bin worker --kinds test.sleep --data-dir "$dir" >/dev/null 2>&1 &
    pids+=($!)
  done
  sleep 2
  local out rps non2xx
  out=$(wrk -t2 -c8 -d"${secs}s" -s "$lua" -H "Authorization: Bearer $key" "http://127.0.0.1:$port/v1/test-jobs")
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  non2xx=$(awk '/Non-2xx/ {print $4}' <<<"$out")
  # Drained, then idle workers take jobs one at a time.
  for _ in $(seq 1 600); do
    [ "$(curl -s -H "Authorization: Bearer $key" "http://127.0.0.1:$port/v1/jobs?status=queued&limit=1" | grep -o '"total":[0-9]*' | cut -d: -f2)" = 0 ] && break
    sleep 0.5
  done
  sleep 1
  local since; since=$(($(date +%s%3N)))
  for _ in $(seq 1 200); do
    curl -s -o /dev/null -X POST -H "Authorization: Bearer $key" -H 'content-type: application/json' \
      -H 'prefer: respond-async' -d '{"ms":0}' "http://127.0.0.1:$port/v1/test-jobs"
    sleep 0.05
  done
  sleep 1
  local lat; lat=$(latency "$since" "$url")
  local label
  if [ "$backend" = postgres ]; then label="PostgreSQL, $workers worker process(es)"; else label="SQLite, one process (2 in-process workers)"; fi
  printf '| %s | %s | %s | %s |\n' "$label" "$rps" "${non2xx:-0}" "$lat"
  cleanup
  [ "$backend" = postgres ] && psql "$admin" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)"
  rm -rf "$dir"
}

echo "$secs s of submissions per row, $(nproc) cores, client, API, workers and database on one machine"
echo "| setup | submissions/s | non-2xx | claim p50 | claim p99 |"
echo "|---|---|---|---|---|"
run sqlite 0
for w in 1 2 4; do run postgres "$w"; done
