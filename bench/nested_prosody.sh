#!/usr/bin/env bash
# The outside probe's SSML case (issue 47): "Hello there." inside 0, 7 and 9
# nested <prosody rate='50%'>, spoken by a Kokoro voice through
# POST /v1/text-to-speech on a fresh server; prints each answer's audio
# length and the server's resident memory before and at its peak.
# Usage: bench/nested_prosody.sh [path/to/mediagen]  (default: the debug build)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/debug/mediagen}
dir=$(mktemp -d)
port=18400
MEDIAGEN_PREVIEWS_AT_START=false "$bin" serve --bind 127.0.0.1:$port --data-dir "$dir" >"$dir/log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 120); do curl -sf 127.0.0.1:$port/readyz >/dev/null && break; sleep 1; done
key=$(grep -o "mg_[A-Za-z0-9_]*" "$dir/log" | head -1)
voice=$(curl -s -H "Authorization: Bearer $key" "127.0.0.1:$port/v1/voices?engine=kokoro&language=en&limit=1" |
  python3 -c "import sys, json; print(json.load(sys.stdin)['data'][0]['id'])")
for levels in 0 0 7 9 0; do
  body=$(python3 -c "
import json, sys
n = int(sys.argv[1])
text = '<speak>' + \"<prosody rate='50%'>\" * n + 'Hello there.' + '</prosody>' * n + '</speak>'
print(json.dumps({'text': text, 'voiceId': sys.argv[2], 'format': 'wav'}))" "$levels" "$voice")
  before=$(ps -o rss= -p $server)
  (peak=0; for _ in $(seq 60); do r=$(ps -o rss= -p $server); [ "$r" -gt "$peak" ] && peak=$r; echo $peak >"$dir/peak"; sleep 0.05; done) &
  watcher=$!
  seconds=$(curl -s -H "Authorization: Bearer $key" -H 'content-type: application/json' -d "$body" \
    127.0.0.1:$port/v1/text-to-speech | python3 -c "import sys, json; print(json.load(sys.stdin)['result']['duration'])")
  wait $watcher
  echo "levels $levels: ${seconds} s of audio; RSS $((before / 1024)) MB before, $(($(cat "$dir/peak") / 1024)) MB at peak"
done
