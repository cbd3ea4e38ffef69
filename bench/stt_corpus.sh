#!/usr/bin/env bash
# Speech-to-text on a corpus made afresh from a seed (bench/stt/corpus.py:
# nine clips from 20 s to 10 min: espeak-ng variants, Kokoro, Piper, dense and
# sparse speech, a music bed, noise, two speakers, Spanish): per clip our
# endpoint's whole-request time, our engine's time alone (stt_bench, warm),
# faster-whisper's (int8, beam 5, 2 threads, the language given to both) and
# both WERs; the geometric mean of the ratios; the clips over 0.8x named.
# Usage: bench/stt_corpus.sh [SEED]   (a random seed is drawn and printed)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
models=${MEDIAGEN_MODELS_DIR:-$PWD/models}
seed=${1:-$RANDOM}
work=target/bench/stt-corpus/$seed
mkdir -p "$work"
stt_peer_and_builds
port=18193
MEDIAGEN_SYNC_WAIT_SECONDS=3600 start_server $port --models-dir "$models"
echo "corpus seed: $seed (bench/stt_corpus.sh $seed makes the same clips)"
python3 bench/stt/corpus.py $port "$key" "$models" "$venv/bin/python" \
  target/release/examples/stt_bench "$work" "$seed"
