#!/usr/bin/env bash
# Platform overhead: authenticated GET /v1/account and GET /v1/jobs/{id}
# (key hash + lookup, rate limit, account/job query) next to the
# unauthenticated /healthz as the baseline. Loopback, wrk, release build.
# Usage: bench/platform.sh [seconds per run] [sqlite|postgres]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
backend=${2:-sqlite}
command -v wrk >/dev/null || { echo "bench: installing wrk"; apt-get install -y -qq wrk >/dev/null; }
bin=./target/release/mediagen
[ -x $bin ] || cargo build --release --locked
dir=$(mktemp -d)
port=18181
export MEDIAGEN_DATA_DIR=$dir MEDIAGEN_BIND=127.0.0.1:$port MEDIAGEN_ENABLE_TEST_JOBS=true \
  MEDIAGEN_RATE_LIMIT_PER_MINUTE=1000000000 MEDIAGEN_RATE_LIMIT_PER_HOUR=1000000000 MEDIAGEN_LOG=warn
if [ "$backend" = postgres ]; then
  admin=$(scripts/ensure-postgres.sh)
  db=mg_bench_$$
  psql "$admin" -qc "CREATE DATABASE $db"
  export MEDIAGEN_DATABASE_URL="${admin%/*}/$db"
fi
$bin serve > "$dir/out.txt" 2> "$dir/err.txt" &
pid=$!
cleanup() {
  kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true
  [ "$backend" = postgres ] && psql "$admin" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" || true
  rm -rf "$dir"
}
trap cleanup EXIT
for _ in $(seq 1 50); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
key=$(grep -o 'mg_live_[A-Za-z0-9]*' "$dir/out.txt" | head -1)
job=$(curl -sf -X POST "http://127.0.0.1:$port/v1/test-jobs" -H "Authorization: Bearer $key" \
  -H 'content-type: application/json' -d '{"ms":0}' | sed -E 's/.*"id":"(job_[A-Za-z0-9]+)".*/\1/')

run() { # name, connections, threads, path, auth?
  local args=(-t"$3" -c"$2" -d"${secs}s" --latency "http://127.0.0.1:$port$4")
  [ "$5" = auth ] && args=(-H "Authorization: Bearer $key" "${args[@]}")
  local out; out=$(wrk "${args[@]}")
  local rps p50 p99
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p50=$(awk '$1=="50%" {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {print $2}' <<<"$out")
  local non2xx; non2xx=$(awk '/Non-2xx/ {print $4}' <<<"$out")
  printf '| %s | %s | %s | %s | %s | %s |\n' "$1" "$2" "$rps" "$p50" "$p99" "${non2xx:-0}"
}
echo "backend: $backend, $secs s per run, $(nproc) cores, wrk and server on the same machine"
echo "| route | connections | requests/s | p50 | p99 | non-2xx |"
echo "|---|---|---|---|---|---|"
for c in 1 32; do
  t=$([ $c = 1 ] && echo 1 || echo 2)
  run "GET /healthz (no auth, baseline)" $c $t /healthz none
  run "GET /v1/account" $c $t /v1/account auth
  run "GET /v1/jobs/{id}" $c $t "/v1/jobs/$job" auth
done
