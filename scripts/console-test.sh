#!/usr/bin/env bash
# The web app's end-to-end flows (tests/console/app.mjs, playwright-core)
# in headless Chromium against a fresh server: every page's flow at 1280
# px, every page at 375 px, axe-core on each, sign-out between two
# accounts, a read-only key; no error in the browser console and no
# request to another origin. Screenshots go to target/console/; with
# --refresh-docs a passing run also copies them to docs/console/
# (docs/console.md), so that `make test` never changes a tracked file.
# Chromium comes from Debian, playwright-core and axe-core from npm,
# installed by scripts/ensure-chromium.sh. Usage: scripts/console-test.sh
# [--refresh-docs] [bin] (default: the debug build).
set -euo pipefail
cd "$(dirname "$0")/.."
refresh=0
if [ "${1:-}" = --refresh-docs ]; then refresh=1; shift; fi
bin=${1:-./target/debug/mediagen}
scripts/ensure-chromium.sh
port=18293
dir=$(mktemp -d)
MEDIAGEN_LOG=info "$bin" serve --bind "127.0.0.1:$port" --data-dir "$dir" >"$dir/out" 2>&1 &
pid=$!
trap 'kill -9 $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
key=$(grep -o 'mg_live_[A-Za-z0-9]*' "$dir/out" | head -1)
[ -n "$key" ] || { echo "console-test: the server printed no admin key" >&2; exit 1; }
# The media the flows upload: a spoken sentence (espeak-ng), a 6-second
# test picture with a tone (ffmpeg), a short video whose sound is speech,
# and a 13-second sample of a high voice to clone.
media=$dir/media
mkdir -p "$media"
espeak-ng -v en-us -s 150 -w "$media/speech.wav" "The quick brown fox jumps over the lazy dog. Then it runs into the forest."
ffmpeg -nostdin -v error -f lavfi -i testsrc=size=320x240:rate=25:duration=6 -f lavfi -i sine=frequency=440:duration=6 \
  -c:v libx264 -preset veryfast -pix_fmt yuv420p -c:a aac -shortest "$media/clip.mp4"
espeak-ng -v en-us -s 150 -w "$media/line.wav" "Good morning. The weather is very nice today."
ffmpeg -nostdin -v error -f lavfi -i testsrc=size=320x240:rate=25:duration=4 -i "$media/line.wav" \
  -c:v libx264 -preset veryfast -pix_fmt yuv420p -c:a aac -shortest "$media/talk.mp4"
# A real two-person telephone call (the pyannote.audio wheel's, installed by
# scripts/models.sh), for the speakers who talk at the same time.
cp "${MEDIAGEN_MODELS_DIR:-models}/diarize/sample.wav" "$media/call.wav"
espeak-ng -v en-us+f3 -p 70 -s 150 -w "$media/sample.wav" "My name is Anna and this is a sample of my voice. I read a few sentences aloud so that the voice can be measured. The morning was bright and the streets were quiet as I walked to work."
# On a failure the server's last log lines say which job was slow or stuck
# (they carry job ids and kinds, never request text).
rm -rf target/console
node tests/console/app.mjs "http://127.0.0.1:$port" "$key" target/console "$media" || {
  status=$?
  echo "console-test: the server's last log lines:" >&2
  tail -n 40 "$dir/out" >&2
  exit "$status"
}
# With --refresh-docs, a passing run refreshes the screenshots
# docs/console.md shows (every page at 1280 and 375 px wide).
if [ "$refresh" = 1 ]; then
  mkdir -p docs/console
  rm -f docs/console/*.jpg docs/console/*.png
  cp target/console/app-*.jpg docs/console/
fi
