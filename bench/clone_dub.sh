#!/usr/bin/env bash
# A two-speaker dub in clone mode, on real speakers (issue 49): two
# LibriSpeech test-other readers take turns (five utterances each, the
# conversation made by crates/pipelines/examples/clone_dub_bench.rs), a
# release server dubs it into Spanish with `voiceMode: clone`, and the
# example judges the dub: each reader's dubbed lines (told apart by who
# spoke when, not by the dub) against that reader's other utterances and
# the other reader's (GE2E likeness), and the recogniser's Spanish WER
# against the translated text the dub spoke.
#
# The readers come from github.com/resemble-ai/Resemblyzer's demo data
# (`audio_data/librispeech_test-other/`; LibriSpeech is CC BY 4.0), read
# with git from a checkout or mirror (RESEMBLYZER_REPO; the workplace's
# `fetch` puts one at the default path), as bench/clone.sh does.
#
# Usage: bench/clone_dub.sh [A:B ...]   (default: 1998:3005 2414:2609,
# a woman and a man, and two men)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
models=${MEDIAGEN_MODELS_DIR:-$PWD/models}
repo=${RESEMBLYZER_REPO:-/work/.mirror/resemble-ai+Resemblyzer/repo}
git_dir=$repo
[ -d "$repo/.git" ] && git_dir=$repo/.git
pairs=("$@")
[ ${#pairs[@]} -gt 0 ] || pairs=(1998:3005 2414:2609)
work=target/bench/clone
reader() {
  mkdir -p "$work/$1"
  for f in $(git --git-dir="$git_dir" ls-tree --name-only HEAD "audio_data/librispeech_test-other/$1/"); do
    [ -f "$work/$1/$(basename "$f")" ] || git --git-dir="$git_dir" show "HEAD:$f" > "$work/$1/$(basename "$f")"
  done
}
cargo build --release --locked --quiet --bin mediagen
cargo build --release --locked --quiet -p mediagen-pipelines --example clone_dub_bench
bench=target/release/examples/clone_dub_bench
port=18197
MEDIAGEN_SYNC_WAIT_SECONDS=0 start_server $port
auth="Authorization: Bearer $key"
for pair in "${pairs[@]}"; do
  a=${pair%%:*} b=${pair##*:}
  reader "$a"; reader "$b"
  talk=$work/talk-$a-$b
  $bench compose "$talk.wav" "$talk.turns.json" "$work/$a" "$work/$b"
  file=$(curl -sf "http://127.0.0.1:$port/v1/files" -H "$auth" -F "file=@$talk.wav" \
    | python3 -c "import json,sys; print(json.load(sys.stdin)['id'])")
  # Clone mode, and auto mode (the nearest catalog voices) beside it.
  for mode in clone auto; do
    start=$(now)
    python3 bench/dub_ours.py $port "$key" "$file" "$talk.$mode.json" \
      "{\"voiceMode\": \"$mode\", \"keepBackground\": false, \"format\": \"wav\"}" >/dev/null
    took=$(python3 -c "print(round($(now) - $start))")
    url=$(python3 -c "import json,sys; print(json.load(open('$talk.$mode.json'))['result']['audioUrl'])")
    curl -sf "$url" -o "$talk.$mode.wav"
    seconds=$(python3 -c "import wave; w = wave.open('$talk.wav'); print(round(w.getnframes() / w.getframerate()))")
    echo "# $a and $b, voiceMode $mode: $seconds s of conversation, dubbed in $took s"
    $bench judge "$models" "$talk.$mode.json" "$talk.$mode.wav" "$talk.turns.json" "$work/$a" "$work/$b"
  done
done
