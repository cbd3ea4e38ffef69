#!/usr/bin/env bash
# `make test`: formatting, lints, then every test on SQLite and PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"

source scripts/test-env.sh

# The lint gates (rustfmt and clippy are installed by scripts/setup.sh).
# Clippy runs inside the test build below (scripts/lint-env.sh), or here
# where clippy-driver cannot be found.
cargo fmt --all -- --check
# The web console's types and Svelte checks (console/, svelte-check).
(cd console && npm run --silent check)
source scripts/lint-env.sh
if [ "$LINT_IN_BUILD" = 1 ]; then
  echo "test: clippy lints the workspace during the test build (-D warnings)"
else
  cargo clippy --all-targets --locked -- -D warnings
fi

# The test build first (clippy lints inside it), so that the checks below
# can start from its binary while the tests run.
cargo test --workspace --locked --no-run

# The checks run the binary the test build made for the API tests (a
# `cargo build -p mediagen` would resolve other dependency features and
# compile again).
[ -x target/debug/mediagen ] || { echo "test: target/debug/mediagen was not built" >&2; exit 1; }

# Beside the tests, in the background (their output is shown after them):
# - the published contract: schemathesis (coverage, fuzzing and stateful
#   phases, every check) against a fresh server of the debug build, bounded
#   in time (60 s here, 240 s more in `make test-long`) and at a lower
#   priority than the tests (it makes fewer cases when they need the
#   cores); any failure fails the run (docs/api.md);
# - the deployment files (Dockerfile, deploy/compose.yaml, deploy/k8s/)
#   against their schemas and the settings and job kinds of this build;
# - the web console's flows in headless Chromium (scripts/console-test.sh,
#   docs/console.md).
# The fuzz round and the slow model tests are `make test-long`'s.
checks_log=$(mktemp)
(
  status=0
  nice -n 10 scripts/contract.sh 60 || status=$?
  scripts/check-deploy.sh target/debug/mediagen || status=$?
  scripts/console-test.sh target/debug/mediagen || status=$?
  exit "$status"
) >"$checks_log" 2>&1 &
checks_pid=$!

# One process per test binary: the integration tests share the loaded
# speech models (they are large) while each test has its own server,
# database and storage. Two test threads per core: with the slow model
# tests in `make test-long`, a third of the suite's time is tests waiting
# (for a worker, a retry, an expiry), and four threads on two cores took
# the API suite from 131 s to 119 s (docs/benchmarks.md).
threads=$(( $(nproc) * 2 ))
[ "$threads" -gt 8 ] && threads=8
status=0
cargo test --workspace --locked --no-fail-fast -- --test-threads="$threads" || status=$?
drop_test_databases

checks_status=0
wait "$checks_pid" || checks_status=$?
cat "$checks_log"
rm -f "$checks_log"
[ "$checks_status" -eq 0 ] || echo "test: the contract, deployment or console check failed (exit $checks_status)" >&2
[ "$status" -eq 0 ] && [ "$checks_status" -eq 0 ]
