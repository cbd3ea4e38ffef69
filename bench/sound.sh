#!/usr/bin/env bash
# Sound generation, side by side in one run: 30-second sounds from prompts,
# each request timed whole (HTTP, planning, synthesis, WAV encoding, storage)
# on a release server, three runs each, medians; real-time factor = 30 s /
# time. The peer is what a user would otherwise script: ffmpeg's own noise
# source filtered to a rain-like hiss (`anoisesrc` pink + high-pass) into a
# WAV of the same length. Usage: bench/sound.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --quiet --bin mediagen
dir=$(mktemp -d); port=18194
MEDIAGEN_LOG=warn ./target/release/mediagen serve --bind 127.0.0.1:$port --data-dir "$dir" >"$dir/out" 2>&1 &
pid=$!; trap 'kill $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
key=$(grep -o 'mg_live_[A-Za-z0-9]*' "$dir/out" | head -1)
now() { date +%s.%N; }
median() { python3 -c "import statistics,sys; print(round(statistics.median(map(float, sys.argv[1:])), 3))" "$@"; }
ours() {
  local t0; t0=$(now)
  curl -sf "http://127.0.0.1:$port/v1/sound-generation" -H "Authorization: Bearer $key" \
    -H 'Content-Type: application/json' \
    -d "{\"prompt\":\"$1\",\"duration\":30,\"seed\":1,\"format\":\"wav\"}" >/dev/null
  python3 -c "print($(now) - $t0)"
}
peer() {
  local t0; t0=$(now)
  ffmpeg -v error -y -f lavfi -i anoisesrc=color=pink:duration=30:sample_rate=44100 \
    -af highpass=f=500 -c:a pcm_s16le "$dir/peer.wav"
  python3 -c "print($(now) - $t0)"
}
echo "## Sound generation, 30 s WAV at 44.1 kHz, $(date -u +%F) (median of 3)"
for prompt in "heavy rain" "distant thunder and heavy rain" "footsteps at 100 bpm" \
  "busy crowd with applause" "upbeat piano melody with drums at 120 bpm"; do
  t=$(median "$(ours "$prompt")" "$(ours "$prompt")" "$(ours "$prompt")")
  echo "ours \"$prompt\": ${t} s, $(python3 -c "print(round(30 / $t))")x real time"
done
p=$(median "$(peer)" "$(peer)" "$(peer)")
echo "ffmpeg anoisesrc pink + highpass: ${p} s, $(python3 -c "print(round(30 / $p))")x real time"
