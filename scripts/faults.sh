#!/usr/bin/env bash
# The fault bench (issue 51; `make test-long` runs it): two API processes
# and three workers by kind on a PostgreSQL of the bench's own and an S3
# bucket behind a proxy that fails, 300 mixed jobs while the database
# restarts, S3 goes away and then sheds load, the workers' scratch disk
# fills, API processes are killed mid-upload and mid-stream and ten clients
# read streams at 1 KB/s. Prints a table of the faults, the jobs' outcomes,
# the retries, the 503s and the recovery times (also written to
# target/faults.md), and fails on any loss. About six minutes.
# The scratch disk is a tmpfs the bench mounts: it needs root (CI runs as
# root); elsewhere that fault is reported as not injected.
# To look into a run: MEDIAGEN_TEST_PROCESS_LOGS=<dir> (a log per process)
# and MEDIAGEN_FAULTS_LOG=warn (their level; `error` by default).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
source scripts/test-env.sh
# The build `make test` made (clippy as the wrapper): nothing compiles again.
source scripts/lint-env.sh
export MEDIAGEN_FAULTS_TABLE="$PWD/target/faults.md"
cargo test --locked -p mediagen --test api -- --ignored --exact \
  fault_bench::nothing_is_lost_through_faults --nocapture
