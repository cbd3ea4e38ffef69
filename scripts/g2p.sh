#!/usr/bin/env bash
# A language's phonemizer environment: `scripts/g2p.sh ja` (Japanese) or
# `scripts/g2p.sh zh` (Mandarin) makes a Python virtual environment in
# <models>/g2p-<lang>/venv with the packages scripts/g2p-<lang>.requirements.txt
# pins by SHA-256 (from PyPI with pip; nothing is downloaded at run time).
# The server runs its own script in it (crates/speech/src/tts/g2p_<lang>.py
# with g2p_serve.py) as a supervised process. Re-run safely: done when the
# pins have not changed.
set -euo pipefail
cd "$(dirname "$0")/.."
lang=${1:?usage: scripts/g2p.sh ja|zh}
case "$lang" in ja | zh) ;; *) echo "g2p: no phonemizer for '$lang' (ja, zh)" >&2; exit 2 ;; esac
models=${MEDIAGEN_MODELS_DIR:-./models}
env="$models/g2p-$lang/venv"
req=scripts/g2p-$lang.requirements.txt
script=(crates/speech/src/tts/g2p_"$lang".py crates/speech/src/tts/g2p_serve.py)
stamp=$(sha256sum "$req" | cut -d' ' -f1)
[ "$(cat "$env/.requirements.sha256" 2>/dev/null)" = "$stamp" ] && exit 0
echo "g2p: installing the $lang phonemizer into $env" >&2
rm -rf "$env"
python3 -m venv "$env"
# Packages that come as source only (jaconv, jieba) are built with the
# setuptools pinned here (installed first, checked the same way).
printf 'setuptools==80.9.0 --hash=sha256:062d34222ad13e0cc312a4c02d73f059e86a4acbfbdea8f8f76b28c99f306922\n' > "$env/build.txt"
"$env/bin/pip" install --quiet --no-deps --require-hashes -r "$env/build.txt" >&2
"$env/bin/pip" install --quiet --no-deps --require-hashes --no-build-isolation -r "$req" >&2
# The server's script, started once with nothing to read: it loads its
# packages (and leaves what they cache, jieba's dictionary, in the
# environment) and ends at the end of its input.
"$env/bin/python" -I -c "$(cat "${script[@]}")" < /dev/null
chmod -R a+rX "$env"
echo "$stamp" > "$env/.requirements.sha256"
