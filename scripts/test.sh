#!/usr/bin/env bash
# `make test`: formatting, lints, then every test on SQLite and PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"

MEDIAGEN_TEST_POSTGRES_URL=$(scripts/ensure-postgres.sh)
export MEDIAGEN_TEST_POSTGRES_URL
echo "test: PostgreSQL tests use ${MEDIAGEN_TEST_POSTGRES_URL//:postgres@/:***@}"
# Databases left behind by interrupted runs.
psql "$MEDIAGEN_TEST_POSTGRES_URL" -qtAc "select datname from pg_database where datname like 'mg_test_%'" \
  | while read -r db; do [ -n "$db" ] && psql "$MEDIAGEN_TEST_POSTGRES_URL" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)"; done

if cargo fmt --version >/dev/null 2>&1; then
  cargo fmt --all -- --check
else
  echo "test: WARNING rustfmt is not installed; formatting not checked"
fi
if cargo clippy --version >/dev/null 2>&1; then
  cargo clippy --all-targets --locked -- -D warnings
else
  echo "test: WARNING clippy is not installed; lints not checked"
fi

# One process per test binary: the integration tests share the loaded
# speech models (they are large) while each test has its own server,
# database and storage.
cargo test --workspace --locked --no-fail-fast

# A short run of every fuzz target (docs/security.md; `make fuzz` runs each
# for ten minutes).
scripts/fuzz.sh 10
