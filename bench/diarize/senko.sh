#!/usr/bin/env bash
# Senko on one WAV file, for `score.py engine` (SENKO_PYTHON: the python of
# a venv where `pip install senko==0.2.2` ran).
exec "${SENKO_PYTHON:-python3}" "$(dirname "$0")/senko_turns.py" "$1" 2>/dev/null
