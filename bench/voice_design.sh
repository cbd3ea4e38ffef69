#!/usr/bin/env bash
# Voice design (issue 74): for a set of descriptions, the three previews
# each makes (crates/pipelines/examples/design_bench.rs, the job's own
# design and speech), measured: median pitch and speaking rate (what
# "deep", "high", "slowly", "quickly" move), the accent (the lead voice's
# language), how alike the three are to one another against how alike each
# is to itself saying another sentence (GE2E cosine), and the recogniser's
# WER (whisper base) on each preview. Prints a markdown table
# (docs/benchmarks.md, Voice design).
#
# Usage: bench/voice_design.sh
set -euo pipefail
cd "$(dirname "$0")/.."
models=${MEDIAGEN_MODELS_DIR:-$PWD/models}
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
source scripts/test-env.sh >/dev/null
cargo run --release --locked -q -p mediagen-pipelines --example design_bench -- "$models"
