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
#   race: ours and the peer, WhisperLive 0.10.0 (PyPI `whisper-live`, its
#        faster-whisper backend on the same CTranslate2 `base` folder, in a
#        venv of its own, target/bench/wl-venv), 1 and 2 sessions at once,
#        alternated for ROUNDS rounds (default 3).
# Usage: [ROUNDS=3] bench/realtime.sh [stt|tts|race|all] (default all).
# Prints JSON lines.
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
if [ "$what" = race ]; then
  wl=target/bench/wl-venv
  if [ ! -x "$wl/bin/python" ]; then
    python3 -m venv "$wl"
    # PyAudio (its microphone client, which needs PortAudio's headers) is
    # left out: bench/realtime_peer.py is the client.
    "$wl/bin/pip" install --quiet --no-deps whisper-live==0.10.0
    "$wl/bin/pip" install --quiet faster-whisper==1.2.0 torch websockets fastapi uvicorn \
      python-multipart "numpy<2.5" scipy onnxruntime websocket-client requests
  fi
  # Its voice-activity model (Silero v5), which it would fetch from GitHub:
  # the one the silero-vad 5.1.2 wheel ships (MIT), in a home of its own.
  wl_home=$PWD/target/bench/wl-home
  if [ ! -f "$wl_home/.cache/whisper-live/silero_vad.onnx" ]; then
    mkdir -p "$wl_home/.cache/whisper-live"
    d=$(mktemp -d)
    python3 -m pip download --quiet --no-deps silero-vad==5.1.2 -d "$d"
    python3 -c 'import glob,sys,zipfile; z=zipfile.ZipFile(glob.glob(sys.argv[1]+"/*.whl")[0]); open(sys.argv[2],"wb").write(z.read("silero_vad/data/silero_vad.onnx"))' \
      "$d" "$wl_home/.cache/whisper-live/silero_vad.onnx"
    rm -rf "$d"
  fi
  HOME=$wl_home "$wl/bin/python" bench/realtime_peer.py serve 18432 "$models/whisper/base" \
    >target/bench/wl-server.log 2>&1 &
  wl_pid=$!
  trap 'kill -9 $pid $wl_pid 2>/dev/null; rm -rf "$dir"' EXIT
  for _ in $(seq 1 900); do (echo >/dev/tcp/127.0.0.1/18432) 2>/dev/null && break; sleep 0.2; done
  for round in $(seq 1 "${ROUNDS:-3}"); do
    for n in 1 2; do
      echo "{\"round\": $round, \"side\": \"ours\", \"stt_sessions\": $n, \"run\": $("$python" bench/realtime.py stt "$base" "$key" "$models/diarize/sample.wav" "$n" 500)}"
      echo "{\"round\": $round, \"side\": \"whisperlive\", \"stt_sessions\": $n, \"run\": $("$wl/bin/python" bench/realtime_peer.py stt 18432 "$models/diarize/sample.wav" "$n")}"
    done
  done
fi
if [ "$what" = tts ] || [ "$what" = all ]; then
  for engine in piper kokoro; do
    voice=$(curl -sf -H "Authorization: Bearer $key" "$base/v1/voices?engine=$engine&language=en&limit=1" \
      | "$python" -c 'import json,sys; print(json.load(sys.stdin)["data"][0]["id"])')
    echo "{\"tts_engine\": \"$engine\", \"run\": $("$python" bench/realtime.py tts "$base" "$key" "$voice")}"
  done
fi
