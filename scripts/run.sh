#!/usr/bin/env bash
# `make run`: starts the server on SQLite + local storage under ./data.
# The first start creates the operator account and prints its admin key; on
# later starts a new admin key is created and printed here.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=./target/release/mediagen
if [ -f data/mediagen.db ]; then
  key=$($bin admin keys create --level admin --name "make run $(date -u +%FT%TZ)")
  printf '\nAdmin API key (new, shown once):\n\n    %s\n\n' "$key"
fi
exec $bin serve "$@"
