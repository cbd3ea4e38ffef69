#!/usr/bin/env bash
# `make test`: formatting, lints, then every test on SQLite and PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"

MEDIAGEN_TEST_POSTGRES_URL=$(scripts/ensure-postgres.sh)
export MEDIAGEN_TEST_POSTGRES_URL
echo "test: PostgreSQL tests use ${MEDIAGEN_TEST_POSTGRES_URL//:postgres@/:***@}"
# An S3-compatible server for the storage tests (moto's, from PyPI), stopped
# at the end if this run started it.
MEDIAGEN_TEST_S3_ENDPOINT=$(scripts/ensure-s3.sh)
export MEDIAGEN_TEST_S3_ENDPOINT
[ -f target/moto.pid ] && trap 'kill "$(cat target/moto.pid)" 2>/dev/null; rm -f target/moto.pid' EXIT
echo "test: S3 tests use $MEDIAGEN_TEST_S3_ENDPOINT"
# The official client packages the compatibility tests drive (PyPI).
MEDIAGEN_TEST_PYTHON=$(scripts/ensure-sdk.sh)
export MEDIAGEN_TEST_PYTHON
# Test databases: those of interrupted runs, and at the end those whose
# drop the end of a test process cut short (each test drops its own without
# waiting for it).
drop_test_databases() {
  psql "$MEDIAGEN_TEST_POSTGRES_URL" -qtAc "select datname from pg_database where datname like 'mg_test_%'" \
    | while read -r db; do [ -n "$db" ] && psql "$MEDIAGEN_TEST_POSTGRES_URL" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)"; done
}
drop_test_databases

# The lint gates (rustfmt and clippy are installed by scripts/setup.sh).
# Clippy runs inside the test build below (scripts/lint-env.sh), or here
# where clippy-driver cannot be found.
cargo fmt --all -- --check
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
#   in time; any failure fails the run (docs/api.md);
# - the deployment files (Dockerfile, deploy/compose.yaml, deploy/k8s/)
#   against their schemas and the settings and job kinds of this build;
# - the web console's flows in headless Chromium (scripts/console-test.sh,
#   docs/console.md);
# - a short run of every fuzz target (docs/security.md; `make fuzz` runs
#   each for ten minutes). The fuzz crate is a workspace of its own, built
#   with the sanitizer's flags: not through the lint wrapper. It runs at the
#   lowest priority (its cold build takes minutes, and the tests have
#   waits bounded in time).
# The test suite leaves about a tenth of the two cores idle, and these fill
# it: side by side the API suite took 253 s instead of 209 s and
# schemathesis made 3423 cases in 90 s instead of about 5000, so it has
# 120 s here (4142 cases in a warm run; docs/benchmarks.md).
checks_log=$(mktemp)
(
  status=0
  scripts/contract.sh 120 || status=$?
  scripts/check-deploy.sh target/debug/mediagen || status=$?
  scripts/console-test.sh target/debug/mediagen || status=$?
  exit "$status"
) >"$checks_log" 2>&1 &
checks_pid=$!
fuzz_log=$(mktemp)
env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS nice -n 19 scripts/fuzz.sh 10 >"$fuzz_log" 2>&1 &
fuzz_pid=$!

# One process per test binary: the integration tests share the loaded
# speech models (they are large) while each test has its own server,
# database and storage.
status=0
cargo test --workspace --locked --no-fail-fast || status=$?
drop_test_databases

checks_status=0
wait "$checks_pid" || checks_status=$?
cat "$checks_log"
fuzz_status=0
wait "$fuzz_pid" || fuzz_status=$?
cat "$fuzz_log"
rm -f "$checks_log" "$fuzz_log"
[ "$checks_status" -eq 0 ] || echo "test: the contract, deployment or console check failed (exit $checks_status)" >&2
[ "$fuzz_status" -eq 0 ] || echo "test: the fuzz round failed (exit $fuzz_status)" >&2
[ "$status" -eq 0 ] && [ "$checks_status" -eq 0 ] && [ "$fuzz_status" -eq 0 ]
