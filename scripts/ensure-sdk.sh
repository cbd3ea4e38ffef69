#!/usr/bin/env bash
# Makes sure the official client packages the compatibility tests drive
# (OpenAI's `openai`, PyPI) are installed, unmodified, into
# target/sdk-venv, and prints that environment's python.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/sdk-venv
if ! "$venv/bin/python" -c "import openai" 2>/dev/null; then
  echo "ensure-sdk: installing openai into $venv" >&2
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet "openai==3.57.0" >&2
fi
echo "$PWD/$venv/bin/python"
