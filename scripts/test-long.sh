#!/usr/bin/env bash
# `make test-long`: the tests `make test` leaves out (`#[ignore]`d: 20
# minutes of audio transcribed in bounded memory), on the build make test
# made (the same lint wrapper, so nothing is compiled again).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
source scripts/lint-env.sh
cargo test --locked -p mediagen --test api -- --ignored
