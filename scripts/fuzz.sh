#!/usr/bin/env bash
# Fuzzing of the parsers we own (fuzz/, docs/security.md).
#   scripts/fuzz.sh [SECONDS] [TARGET...]   run each target for SECONDS (default 10)
# `make test` runs every target briefly; `make fuzz` runs each for 10 minutes.
# Crashes are written to fuzz/artifacts/<target>/; each becomes a regression test.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"

seconds=${1:-10}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(time_ranges ssml api_key signed_url multipart probe_output)
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz: installing cargo-fuzz"
  cargo install cargo-fuzz --locked --version 0.13.2 >/dev/null
fi
# cargo fuzz passes rustc the sanitizer flags (-Z); the stable compiler
# accepts them this way, so no second toolchain is needed.
export RUSTC_BOOTSTRAP=1
# A short run (make test's) builds unoptimised: half the build time, and
# ten seconds of a slower fuzzer still sweep each parser's shapes; the long
# runs (make fuzz) build optimised.
build=()
[ "$seconds" -lt 60 ] && build=(--dev)
cargo fuzz build "${build[@]}" --fuzz-dir fuzz
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t"
  log=$(mktemp)
  echo "fuzz: $t for ${seconds}s"
  status=0
  cargo fuzz run "${build[@]}" --fuzz-dir fuzz "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- \
    -max_total_time="$seconds" -rss_limit_mb=4096 -timeout=10 -print_final_stats=1 \
    >"$log" 2>&1 || status=$?
  grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|Done)' "$log" || true
  if [ $status -ne 0 ] || [ -n "$(ls -A "fuzz/artifacts/$t" 2>/dev/null)" ]; then
    tail -n 40 "$log" >&2
    echo "fuzz: $t failed (exit $status); crashes, if any, are in fuzz/artifacts/$t" >&2
    rm -f "$log"
    exit 1
  fi
  rm -f "$log"
done
