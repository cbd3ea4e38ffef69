#!/usr/bin/env bash
# Neural voice clones of real speakers (issue 49): for each speaker, the
# `voice.clone` job's neural step (crates/pipelines/examples/clone_bench.rs)
# makes a clone from their first utterances (up to 45 s) at a quality's
# time, and the bench judges it on their other utterances, which the job
# never saw: likeness (GE2E cosine) of the clone, of the best stock voice
# and of the WORLD clone, each saying ten sentences none of them was made
# or judged with, and the recogniser's WER on the clone's and the stock
# voice's speech.
#
# The speakers: ten LibriSpeech test-other readers, ten utterances each, as
# github.com/resemble-ai/Resemblyzer keeps them for its demos
# (`audio_data/librispeech_test-other/<speaker>/`; LibriSpeech is CC BY 4.0,
# the repository Apache-2.0), read with git from a checkout or mirror
# (RESEMBLYZER_REPO; the workplace's `fetch` puts one at the default path).
#
# Every English stock voice is also heard on the bench itself and the most
# alike named (`top_stock`, the stricter baseline); `stock` in place of
# SECONDS prints that alone, without cloning.
#
# `rank` in place of SECONDS measures the search's objective instead
# (crates/pipelines/examples/clone_rank.rs): how well it ranks the English
# stock voices and 24 seeded blends of two of them the way this bench does
# (Spearman), heard per sentence or with the sentences joined.
#
# Usage: bench/clone.sh [SECONDS (default 170: `standard`) | stock | rank] [SPEAKER...]
set -euo pipefail
cd "$(dirname "$0")/.."
models=${MEDIAGEN_MODELS_DIR:-$PWD/models}
repo=${RESEMBLYZER_REPO:-/work/.mirror/resemble-ai+Resemblyzer/repo}
git_dir=$repo
[ -d "$repo/.git" ] && git_dir=$repo/.git
seconds=${1:-170}
shift || true
speakers=("$@")
[ ${#speakers[@]} -gt 0 ] || speakers=(1688 1998 2033 2414 2609 3005)
work=target/bench/clone
for s in "${speakers[@]}"; do
  mkdir -p "$work/$s"
  for f in $(git --git-dir="$git_dir" ls-tree --name-only HEAD "audio_data/librispeech_test-other/$s/"); do
    [ -f "$work/$s/$(basename "$f")" ] || git --git-dir="$git_dir" show "HEAD:$f" > "$work/$s/$(basename "$f")"
  done
done
dirs=()
for s in "${speakers[@]}"; do dirs+=("$work/$s"); done
if [ "$seconds" = rank ]; then
  cargo build --release --locked -p mediagen-pipelines --example clone_rank
  exec target/release/examples/clone_rank "$models" 24 "${dirs[@]}"
fi
cargo build --release --locked -p mediagen-pipelines --example clone_bench
target/release/examples/clone_bench "$models" "$seconds" "${dirs[@]}"
