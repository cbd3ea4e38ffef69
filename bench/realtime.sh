#!/usr/bin/env bash
# Live sessions on a release server (bench/realtime.py does the talking):
#   stt: the real two-person call of the pyannote.audio wheel (installed with
#        the diarization models; MIT) fed at real-time pace in 100-ms frames,
#        1, 2 and 3 sessions at once: the median lag of a word's first
#        appearance after its end, of a committed turn after its last word,
#        and whether each session kept up (its last commit within 3 s of the
#        sound's end);
#   tts: text fed at 15 words a second to a Piper and a Kokoro voice: per
#        sentence, the first audio after its text, beside the sentence's own
#        synthesis alone.
# Usage: bench/realtime.sh [stt|tts|all] (default all). Prints JSON lines.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
what=${1:-all}
python=$(scripts/ensure-sdk.sh)
models=${MEDIAGEN_MODELS_DIR:-$PWD/models}
cargo build --release --locked --quiet --bin mediagen
start_server 18431
base=http://127.0.0.1:18431
if [ "$what" = stt ] || [ "$what" = all ]; then
  for n in 1 2 3; do
    echo "{\"stt_sessions\": $n, \"run\": $("$python" bench/realtime.py stt "$base" "$key" "$models/diarize/sample.wav" "$n" 500)}"
  done
fi
if [ "$what" = tts ] || [ "$what" = all ]; then
  for engine in piper kokoro; do
    voice=$(curl -sf -H "Authorization: Bearer $key" "$base/v1/voices?engine=$engine&language=en&limit=1" \
      | "$python" -c 'import json,sys; print(json.load(sys.stdin)["data"][0]["id"])')
    echo "{\"tts_engine\": \"$engine\", \"run\": $("$python" bench/realtime.py tts "$base" "$key" "$voice")}"
  done
fi
