#!/usr/bin/env bash
# Avatar expansion, side by side in one run: a generated 10-second 512x512
# 25 fps clip of quasi-periodic motion (no whole loop of it is exact, like an
# idle presenter) expanded to 60 s by
#   - ours, seamless (the whole HTTP request on a release server, the clip
#     uploaded beforehand with POST /v1/files), and ours loop and pingpong;
#   - plain ffmpeg `-stream_loop -1 … -t 60` re-encode;
#   - an ffmpeg ping-pong chain (split, reverse, concat, loop, trim).
# The ffmpeg runs use our encoder settings (libx264 veryfast, crf 18) so the
# time compares the work, not the preset; a run with ffmpeg's default preset
# is printed too. Three runs each, medians. Seams are measured on the decoded
# outputs by the expand example (`--score`): the largest frame-to-frame
# step against the source's largest, and the largest jolt (second
# difference) in units of the source's mean step. Usage: bench/avatar.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
work=target/bench/avatar
mkdir -p $work
src=$work/idle-10s-512.mp4
if [ ! -f $src ]; then
  ffmpeg -v error -y -f lavfi -i "nullsrc=s=512x512:r=25:d=10,geq=lum='128+60*sin(X/24+2*PI*0.7*T)+30*sin(Y/36+2*PI*1.4*T)+12*sin((X+Y)/48+2*PI*0.23*T)':cb=128:cr=128" \
    -c:v libx264 -preset veryfast -pix_fmt yuv420p $src
fi
cargo build --release --locked --quiet --bin mediagen --example expand
port=18194
MEDIAGEN_SYNC_WAIT_SECONDS=3600 start_server $port
file=$(curl -sf "http://127.0.0.1:$port/v1/files" -H "Authorization: Bearer $key" -F "file=@$src" | python3 -c "import json,sys; print(json.load(sys.stdin)['id'])")
ours() {
  local t0; t0=$(now)
  curl -sf "http://127.0.0.1:$port/v1/avatar-expansion" -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
    -d "{\"fileId\":\"$file\",\"duration\":60,\"mode\":\"$1\"}" > $work/ours-$1.json
  python3 -c "print(round($(now) - $t0, 2))"
  curl -sf "$(python3 -c "import json; print(json.load(open('$work/ours-$1.json'))['result']['videoUrl'])")" -o $work/ours-$1.mp4
}
enc="-c:v libx264 -preset veryfast -crf 18 -pix_fmt yuv420p"
timed() { local t0; t0=$(now); "$@"; python3 -c "print(round($(now) - $t0, 2))"; }
loop() { ffmpeg -v error -y -stream_loop -1 -i $src -t 60 $enc $work/ffmpeg-loop.mp4; }
loop_default() { ffmpeg -v error -y -stream_loop -1 -i $src -t 60 -c:v libx264 -pix_fmt yuv420p $work/ffmpeg-loop-default.mp4; }
pingpong() {
  ffmpeg -v error -y -i $src -filter_complex "[0:v]split[f][b];[b]reverse[r];[f][r]concat=n=2:v=1:a=0,loop=loop=-1:size=500,trim=duration=60" \
    $enc $work/ffmpeg-pingpong.mp4
}
median() { python3 -c "import statistics,sys; print(statistics.median(map(float, sys.argv[1:])))" "$@"; }
s=(); l=(); p=()
for _ in 1 2 3; do s+=("$(ours seamless)"); l+=("$(timed loop)"); p+=("$(timed pingpong)"); done
ol=$(ours loop); op=$(ours pingpong); ld=$(timed loop_default)
echo "## Avatar expansion, 10 s 512x512 25 fps → 60 s, $(date -u +%F)"
echo "ours seamless: ${s[*]} s (median $(median "${s[@]}")), jumps $(python3 -c "import json; r=json.load(open('$work/ours-seamless.json'))['result']; print(r['jumps'], 'seamScore', r['seamScore'])")"
echo "ffmpeg -stream_loop re-encode: ${l[*]} s (median $(median "${l[@]}")); with ffmpeg's default preset: ${ld} s"
echo "ffmpeg ping-pong chain: ${p[*]} s (median $(median "${p[@]}"))"
echo "ours loop: ${ol} s, ours pingpong: ${op} s"
echo "time seamless / ffmpeg loop: $(python3 -c "print(round($(median "${s[@]}") / $(median "${l[@]}"), 2))")x"
./target/release/examples/expand --score $src $work/ours-seamless.mp4 $work/ffmpeg-loop.mp4 $work/ffmpeg-pingpong.mp4 $work/ours-loop.mp4 $work/ours-pingpong.mp4
