#!/usr/bin/env bash
# Video trimming, side by side in one run: a generated 10-minute 1280x720 25 fps
# H.264 (keyframe every 10 s, x264's default) + AAC file, three ranges.
#   - ours accurate (smart cut) vs the plain re-encode users would type:
#     `ffmpeg -ss A -to B -i in -c:v libx264 -c:a aac` per range, then joined;
#   - ours fast vs `ffmpeg -ss A -to B -i in -c copy` per range, then joined
#     (five runs each, medians).
# Ours is timed as the whole HTTP request on a release server (the file
# uploaded beforehand with POST /v1/files). Frame counts of the outputs are
# printed so the cut points can be compared. Usage: bench/video.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
work=target/bench/video
mkdir -p $work
src=$work/ten-minutes-720p.mp4
if [ ! -f $src ]; then
  ffmpeg -v error -y -f lavfi -i testsrc2=size=1280x720:rate=25:duration=600 \
    -f lavfi -i sine=frequency=440:duration=600 -c:v libx264 -preset veryfast \
    -pix_fmt yuv420p -c:a aac -shortest $src
fi
cargo build --release --locked --quiet --bin mediagen
port=18193
MEDIAGEN_SYNC_WAIT_SECONDS=3600 start_server $port
file=$(curl -sf "http://127.0.0.1:$port/v1/files" -H "Authorization: Bearer $key" -F "file=@$src" | python3 -c "import json,sys; print(json.load(sys.stdin)['id'])")
ranges='[{"start":30.5,"end":90.2},{"start":200.04,"end":260},{"start":400.3,"end":480.7}]'
frames() { ffprobe -v error -select_streams v:0 -count_packets -show_entries stream=nb_read_packets -of csv=p=0 "$1"; }
ours() {
  local t0; t0=$(now)
  curl -sf "http://127.0.0.1:$port/v1/video/trim" -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
    -d "{\"fileId\":\"$file\",\"ranges\":$ranges,\"mode\":\"$1\"}" > $work/ours-$1.json
  python3 -c "print(round($(now) - $t0, 2))"
  curl -sf "$(python3 -c "import json; print(json.load(open('$work/ours-$1.json'))['result']['videoUrl'])")" -o $work/ours-$1.mp4
}
peer() {
  local t0 i=0; t0=$(now); : > $work/list.txt
  for r in "30.5 90.2" "200.04 260" "400.3 480.7"; do
    set -- $r
    if [ "$PEER_MODE" = copy ]; then
      ffmpeg -v error -y -ss $1 -to $2 -i $src -c copy $work/peer$i.mp4
    else
      ffmpeg -v error -y -ss $1 -to $2 -i $src -c:v libx264 -c:a aac $work/peer$i.mp4
    fi
    echo "file peer$i.mp4" >> $work/list.txt; i=$((i + 1))
  done
  ffmpeg -v error -y -f concat -safe 0 -i $work/list.txt -c copy $work/peer-$PEER_MODE.mp4
  python3 -c "print(round($(now) - $t0, 2))"
}
echo "## Video trimming, 10 min 1280x720 H.264, 3 ranges (180.06 s), $(date -u +%F)"
a=$(ours accurate); pa=$(PEER_MODE=reencode peer)
echo "ours accurate (smart cut): ${a} s, $(frames $work/ours-accurate.mp4) frames, re-encoded $(python3 -c "import json; print(json.load(open('$work/ours-accurate.json'))['result']['reencodedSeconds'])") s"
echo "ffmpeg re-encode (libx264 default preset): ${pa} s, $(frames $work/peer-reencode.mp4) frames"
echo "speed-up accurate: $(python3 -c "print(round($pa / $a, 1))")x"
# Sub-second runs vary by tens of percent here: five of each, alternating,
# medians compared.
fs=(); pfs=()
for _ in 1 2 3 4 5; do fs+=("$(ours fast)"); pfs+=("$(PEER_MODE=copy peer)"); done
median() { python3 -c "import statistics,sys; print(statistics.median(map(float, sys.argv[1:])))" "$@"; }
f=$(median "${fs[@]}"); pf=$(median "${pfs[@]}")
echo "ours fast: ${fs[*]} s (median ${f}), $(frames $work/ours-fast.mp4) frames"
echo "ffmpeg -c copy: ${pfs[*]} s (median ${pf}), $(frames $work/peer-copy.mp4) frames"
echo "ratio fast / copy (medians): $(python3 -c "print(round($f / $pf, 2))")"
