#!/usr/bin/env bash
# Makes sure the official client packages the compatibility tests drive
# are installed, unmodified, at pinned versions: OpenAI's `openai`,
# ElevenLabs' `elevenlabs` and `standardwebhooks` (PyPI) into
# target/sdk-venv, OpenAI's `openai` (npm) into target/sdk-node. Prints
# that environment's python.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/sdk-venv
if ! "$venv/bin/python" -c "import openai, elevenlabs, standardwebhooks" 2>/dev/null; then
  echo "ensure-sdk: installing openai, elevenlabs and standardwebhooks into $venv" >&2
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet "openai==3.57.0" "elevenlabs==2.78.0" "standardwebhooks==1.1.0" >&2
fi
node=target/sdk-node
if [ ! -f "$node/node_modules/openai/package.json" ]; then
  echo "ensure-sdk: installing openai (npm) into $node" >&2
  mkdir -p "$node"
  npm install --silent --no-audit --no-fund --prefix "$node" "openai@7.57.0" >&2
fi
echo "$PWD/$venv/bin/python"
