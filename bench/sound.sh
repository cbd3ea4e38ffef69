#!/usr/bin/env bash
# Sound generation, side by side in one run: 30-second sounds from prompts,
# each request timed whole (HTTP, planning, synthesis, WAV encoding, storage)
# on a release server, three runs each, medians; real-time factor = 30 s /
# time. The peer is what a user would otherwise script: ffmpeg's own noise
# source filtered to a rain-like hiss (`anoisesrc` pink + high-pass) into a
# WAV of the same length. Usage: bench/sound.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
cargo build --release --locked --quiet --bin mediagen
port=18194
start_server $port
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
