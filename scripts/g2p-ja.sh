#!/usr/bin/env bash
# The Japanese phonemizer's environment: a Python virtual environment in
# <models>/g2p-ja/venv with the packages scripts/g2p-ja.requirements.txt
# pins by SHA-256 (from PyPI with pip; nothing is downloaded at run time).
# The server runs its own script in it (crates/speech/src/tts/g2p_ja.py) as
# a supervised process. Re-run safely: done when the pins have not changed.
set -euo pipefail
cd "$(dirname "$0")/.."
models=${MEDIAGEN_MODELS_DIR:-./models}
env="$models/g2p-ja/venv"
req=scripts/g2p-ja.requirements.txt
stamp=$(sha256sum "$req" | cut -d' ' -f1)
[ "$(cat "$env/.requirements.sha256" 2>/dev/null)" = "$stamp" ] && exit 0
echo "g2p-ja: installing the Japanese phonemizer into $env" >&2
rm -rf "$env"
python3 -m venv "$env"
# jaconv comes as source only: built with the setuptools pinned here
# (installed first, checked the same way; it builds wheels by itself).
printf 'setuptools==80.9.0 --hash=sha256:062d34222ad13e0cc312a4c02d73f059e86a4acbfbdea8f8f76b28c99f306922\n' > "$env/build.txt"
"$env/bin/pip" install --quiet --no-deps --require-hashes -r "$env/build.txt" >&2
"$env/bin/pip" install --quiet --no-deps --require-hashes --no-build-isolation -r "$req" >&2
echo "$stamp" > "$env/.requirements.sha256"
