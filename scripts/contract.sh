#!/usr/bin/env bash
# The published contract against the server: schemathesis (PyPI) generates
# requests from /v1/openapi.json, authenticated with the operator's admin
# key of a fresh server, and checks every answer against the document.
# Usage: scripts/contract.sh [seconds] [bin] [st options…]  (default 120 s,
# the debug build). One worker: with two, hypothesis 6 sometimes trips over
# its own source cache ("AST constructor recursion depth mismatch").
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-120}
bin=${2:-./target/debug/mediagen}
venv=target/schemathesis-venv
if [ ! -x "$venv/bin/st" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet schemathesis==4.32.5
fi
port=18291
dir=$(mktemp -d)
# The run sends far more requests a minute than a client may (429 is
# documented and checked elsewhere), so the limits are raised here.
MEDIAGEN_RATE_LIMIT_PER_MINUTE=1000000 MEDIAGEN_RATE_LIMIT_PER_HOUR=100000000 \
MEDIAGEN_LOG=warn "$bin" serve --bind "127.0.0.1:$port" --data-dir "$dir" >"$dir/out" 2>&1 &
pid=$!
trap 'kill -9 $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
key=$(grep -o 'mg_live_[A-Za-z0-9]*' "$dir/out" | head -1)
"$venv/bin/st" --config-file tests/contract/schemathesis.toml \
  run "http://127.0.0.1:$port/v1/openapi.json" \
  -H "Authorization: Bearer $key" \
  --checks all --max-time "$seconds" --workers 1 \
  --suppress-health-check all "${@:3}"
