# Sourced by scripts/test.sh and scripts/test-long.sh: the services the
# tests talk to, started where none answers, and the clean-up of test
# databases.
MEDIAGEN_TEST_POSTGRES_URL=$(scripts/ensure-postgres.sh)
export MEDIAGEN_TEST_POSTGRES_URL
echo "test: PostgreSQL tests use ${MEDIAGEN_TEST_POSTGRES_URL//:postgres@/:***@}"
# An S3-compatible server for the storage tests (moto's, from PyPI), stopped
# at the end if this run started it.
# Only the shell whose call started it stops it: a script this one runs
# (scripts/faults.sh under scripts/test-long.sh) finds the endpoint exported
# and leaves the server to its caller.
s3_pid_before=$(cat target/moto.pid 2>/dev/null || true)
MEDIAGEN_TEST_S3_ENDPOINT=$(scripts/ensure-s3.sh)
export MEDIAGEN_TEST_S3_ENDPOINT
s3_pid=$(cat target/moto.pid 2>/dev/null || true)
if [ -n "$s3_pid" ] && [ "$s3_pid" != "$s3_pid_before" ]; then
  trap "kill $s3_pid 2>/dev/null || true; rm -f target/moto.pid" EXIT
fi
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
# Servers the tests start as processes (the contract and console checks,
# the process and scale-out tests) make no voice previews at start: each has
# its own storage, and a fresh models directory would have every one of
# them speak every catalog voice. The preview tests turn it on themselves.
export MEDIAGEN_PREVIEWS_AT_START=false
