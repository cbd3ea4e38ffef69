#!/usr/bin/env bash
# `make test-long`: what `make test` leaves out, on the build it made (the
# same lint wrapper, so nothing of the workspace is compiled again):
# - the `#[ignore]`d tests (`long: run by make test-long`): 20 minutes of
#   audio transcribed in bounded memory, diarization and the two-speaker
#   dub, workers killed under 200 jobs, voice-likeness checks, the second
#   dubbing direction, every expansion mode;
# - the fault bench (scripts/faults.sh: 300 jobs through database restarts,
#   S3 outages, a full scratch disk and killed API processes; its table);
# - the published contract for 240 s more (make test runs it for 60 s);
# - a round of every fuzz target (10 s each; `make fuzz` runs each for ten
#   minutes), built with the sanitizer's flags as a workspace of its own, at
#   the lowest priority beside the tests.
# CI (.ci/run) runs it after `make test` while time allows.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"

source scripts/test-env.sh
fuzz_log=$(mktemp)
env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS nice -n 19 scripts/fuzz.sh 10 >"$fuzz_log" 2>&1 &
fuzz_pid=$!

source scripts/lint-env.sh
cargo test --workspace --locked --no-run
[ -x target/debug/mediagen ] || { echo "test-long: target/debug/mediagen was not built" >&2; exit 1; }
status=0
cargo test --workspace --locked --no-fail-fast -- --ignored --skip fault_bench || status=$?
drop_test_databases
faults_status=0
scripts/faults.sh || faults_status=$?

contract_status=0
scripts/contract.sh 240 || contract_status=$?
fuzz_status=0
wait "$fuzz_pid" || fuzz_status=$?
cat "$fuzz_log"
rm -f "$fuzz_log"
[ "$faults_status" -eq 0 ] || echo "test-long: the fault bench failed (exit $faults_status)" >&2
[ "$contract_status" -eq 0 ] || echo "test-long: the contract check failed (exit $contract_status)" >&2
[ "$fuzz_status" -eq 0 ] || echo "test-long: the fuzz round failed (exit $fuzz_status)" >&2
[ "$status" -eq 0 ] && [ "$faults_status" -eq 0 ] && [ "$contract_status" -eq 0 ] && [ "$fuzz_status" -eq 0 ]
