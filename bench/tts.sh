#!/usr/bin/env bash
# Text-to-speech speed, side by side on bench/sentences.txt (10 sentences):
# our Piper engine vs the `piper-tts` PyPI package on the same model, as RTF
# (compute seconds / audio seconds) in alternated rounds, and the streaming
# endpoint's time to first audio. Usage: [ROUNDS=5] bench/tts.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
models=${MEDIAGEN_MODELS_DIR:-./models}
venv=target/bench/piper-venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet piper-tts==1.8.0 kokoro-onnx==0.6.1 onnxruntime==1.31.1
fi
cargo build --release --locked --quiet --example tts_bench -p mediagen-speech
cargo build --release --locked --quiet --bin mediagen

# This VM's neighbours move a run's time by up to a third between minutes, so
# each engine runs ROUNDS times (default 5), ours and the peer back to back in
# each round, and the ratio reported is the median of the rounds' ratios.
rounds=${ROUNDS:-5}
side_by_side() { # NAME OURS_CMD... -- PEER_CMD...
  local name=$1; shift
  local ours=() peer=() ratios=()
  while [ "$1" != -- ]; do ours+=("$1"); shift; done; shift; peer=("$@")
  for r in $(seq "$rounds"); do
    local o p
    o=$("${ours[@]}" 2>/dev/null); p=$("${peer[@]}")
    echo "round $r: mediagen $o | peer $p"
    ratios+=("$(python3 -c "print($(rtf "$o") / $(rtf "$p"))")")
  done
  echo "$name ratio (ours / peer RTF), median of $rounds rounds: $(median "${ratios[@]}") (rounds: $(printf '%.2f ' "${ratios[@]}"))"
}
rtf() { sed -E 's/.*rtf=([0-9.]+).*/\1/' <<<"$1"; }
median() { python3 -c "import statistics,sys; print(round(statistics.median(map(float, sys.argv[1:])), 2))" "$@"; }

echo "## Piper en_US-joe-medium, 10 sentences, 2 threads, $(date -u +%F)"
side_by_side Piper ./target/release/examples/tts_bench "$models" bench/sentences.txt piper en_US-joe-medium \
  -- "$venv/bin/python" bench/piper_peer.py "$models/piper/en_US-joe-medium.onnx" bench/sentences.txt
echo "## Kokoro-82M int8, voice af_heart, same sentences"
side_by_side Kokoro ./target/release/examples/tts_bench "$models" bench/sentences.txt kokoro af_heart \
  -- "$venv/bin/python" bench/kokoro_peer.py "$models" bench/sentences.txt af_heart
espeak=$(./target/release/examples/tts_bench "$models" bench/sentences.txt espeak en-us 2>/dev/null)
echo "espeak-ng (ours): $espeak"

echo "## Streaming: time to first audio (1 KiB), release build"
port=18191
start_server $port --models-dir "$models"
voice=$(curl -s "http://127.0.0.1:$port/v1/voices?engine=piper" -H "Authorization: Bearer $key" | python3 -c "import json,sys; print(json.load(sys.stdin)['data'][0]['id'])")
for fmt in pcm mp3; do
  echo "piper $fmt: $(python3 bench/ttfb.py $port "$key" "$voice" $fmt 10)"
done
heart=$(curl -s "http://127.0.0.1:$port/v1/voices?engine=kokoro&q=heart" -H "Authorization: Bearer $key" | python3 -c "import json,sys; print(json.load(sys.stdin)['data'][0]['id'])")
for fmt in pcm mp3; do
  echo "kokoro $fmt: $(python3 bench/ttfb.py $port "$key" "$heart" $fmt 10)"
done
echo "server memory with all engines loaded and used (RSS): $(ps -o rss= -p $pid | awk '{printf "%.0f MB", $1/1024}')"
