#!/usr/bin/env bash
# Round trip of a language's voices through our recogniser (issue 52): each
# voice says the ten held-out sentences of bench/languages/<lang>.txt and the
# recogniser (`base`) hears them again told the language; prints the error
# rate per voice (characters for Japanese and Chinese, words otherwise) and the neural
# voices' together. The sentences were written for this bench and are used
# by nothing else. Usage: bench/languages.sh [LANG (default ja)] [ENGINE...]
# (default: kokoro, then espeak for comparison). BIN picks the server build
# (default the release build; error rates do not depend on its speed).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
lang=${1:-ja}
shift || true
[ -n "${BIN:-}" ] || cargo build --release --locked --quiet --bin mediagen
mkdir -p target/bench
MEDIAGEN_PREVIEWS_AT_START=false start_server 18310
py=python3
if [ "$lang" = zh ]; then
  # Chinese is scored with both sides in simplified characters and numbers
  # in words (whisper writes either script, and digits).
  py=target/bench/zh-venv/bin/python
  [ -x "$py" ] || { python3 -m venv target/bench/zh-venv; target/bench/zh-venv/bin/pip install --quiet zhconv==1.4.3 cn2an==0.5.24; }
fi
"$py" bench/languages.py http://127.0.0.1:18310 "$key" "$lang" "$@"
