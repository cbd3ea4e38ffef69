#!/usr/bin/env bash
# Voice changing, side by side in one run: a 60-second espeak-ng clip (a low
# male voice) changed toward a cloned high female voice by ours (`convert`
# and `revoice`, the whole HTTP request on a release server, the clip
# uploaded beforehand)
# and by Rubber Band R3 (`rubberband -3 -p <semitones> -F`, pitch and formant
# shift by the same median-pitch ratio: the peer a user would pick), three
# runs each, medians. Real-time factor = seconds taken / 60. The peer is
# installed from Debian (rubberband-cli, GPL: run as a program) if missing.
# Usage: bench/voice.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
command -v rubberband >/dev/null || sudo apt-get install -y -qq rubberband-cli >/dev/null 2>&1 \
  || apt-get install -y -qq rubberband-cli >/dev/null
work=target/bench/voice
mkdir -p $work
text="The weather will be sunny tomorrow morning, with a light breeze from the west. Later in the day clouds will gather over the hills and a few showers may reach the coast by evening."
if [ ! -f $work/source.wav ]; then
  for i in $(seq 1 6); do espeak-ng -v en-us -p 20 -s 150 -w $work/part$i.wav "$text"; done
  ffmpeg -v error -y $(for i in $(seq 1 6); do echo -i $work/part$i.wav; done) \
    -filter_complex "concat=n=6:v=0:a=1,apad=whole_dur=60,atrim=0:60" -ar 24000 $work/source.wav
  espeak-ng -v en-us+f3 -p 75 -s 150 -w $work/t1.wav "Peter Piper picked a peck of pickled peppers, and then he went home to count them all one by one."
  espeak-ng -v en-us+f3 -p 75 -s 150 -w $work/t2.wav "She sells sea shells by the sea shore, and the shells she sells are surely the finest in town."
fi
cargo build --release --locked --quiet --bin mediagen
port=18195
MEDIAGEN_SYNC_WAIT_SECONDS=3600 start_server $port
auth="Authorization: Bearer $key"
voice=$(curl -sf "http://127.0.0.1:$port/v1/voices" -H "$auth" -F name=Bright -F consent=true \
  -F files=@$work/t1.wav -F files=@$work/t2.wav)
vid=$(echo "$voice" | python3 -c "import json,sys; print(json.load(sys.stdin)['id'])")
target=$(echo "$voice" | python3 -c "import json,sys; print(json.load(sys.stdin)['profile']['pitchMedian'])")
file=$(curl -sf "http://127.0.0.1:$port/v1/files" -H "$auth" -F "file=@$work/source.wav" | python3 -c "import json,sys; print(json.load(sys.stdin)['id'])")
ours() { # mode
  local t0; t0=$(now)
  curl -sf "http://127.0.0.1:$port/v1/voice-changer" -H "$auth" -H 'Content-Type: application/json' \
    -d "{\"fileId\":\"$file\",\"voiceId\":\"$vid\",\"format\":\"wav\",\"mode\":\"$1\"}" > $work/$1.json
  python3 -c "print(round($(now) - $t0, 2))"
}
ours convert >/dev/null
ours revoice >/dev/null
before=$(python3 -c "import json; print(json.load(open('$work/convert.json'))['result']['pitchBefore'])")
semitones=$(python3 -c "import math; print(round(12 * math.log2($target / $before), 2))")
peer() {
  local t0; t0=$(now)
  rubberband -q -3 -p $semitones -F $work/source.wav $work/rubberband.wav >/dev/null 2>&1
  python3 -c "print(round($(now) - $t0, 2))"
}
o=(); r=(); p=()
for _ in 1 2 3; do o+=("$(ours convert)"); r+=("$(ours revoice)"); p+=("$(peer)"); done
median() { python3 -c "import statistics,sys; print(statistics.median(map(float, sys.argv[1:])))" "$@"; }
mo=$(median "${o[@]}"); mr=$(median "${r[@]}"); mp=$(median "${p[@]}")
echo "## Voice changing, 60 s espeak-ng clip toward a cloned voice, $(date -u +%F)"
echo "source median pitch ${before} Hz, target ${target} Hz (${semitones} semitones)"
echo "ours convert (WORLD): ${o[*]} s (median ${mo}, RTF $(python3 -c "print(round($mo / 60, 3))")), pitch after $(python3 -c "import json; print(json.load(open('$work/convert.json'))['result']['pitchAfter'])") Hz"
echo "ours revoice (whisper + base voice + WORLD fit and conversion): ${r[*]} s (median ${mr}, RTF $(python3 -c "print(round($mr / 60, 3))")), pitch after $(python3 -c "import json; r=json.load(open('$work/revoice.json'))['result']; print(r['pitchAfter'], 'Hz,', len(r['segments']), 'lines, speedups', sorted(s['speedup'] for s in r['segments']))")"
echo "rubberband -3 -p ${semitones} -F: ${p[*]} s (median ${mp}, RTF $(python3 -c "print(round($mp / 60, 3))"))"
echo "ours convert / rubberband: $(python3 -c "print(round($mo / $mp, 2))")x"
echo "ours revoice / rubberband: $(python3 -c "print(round($mr / $mp, 2))")x"
