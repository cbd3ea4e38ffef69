#!/usr/bin/env bash
# Makes sure an S3-compatible server answers for the tests and prints its
# endpoint. Uses MEDIAGEN_TEST_S3_ENDPOINT when set; otherwise starts moto's
# server (PyPI `moto[server]`, installed into target/moto-venv) on
# 127.0.0.1:18292 in the background, its pid in target/moto.pid (the caller
# stops it). Any bucket name works; the tests create their own.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${MEDIAGEN_TEST_S3_ENDPOINT:-}" ]; then echo "$MEDIAGEN_TEST_S3_ENDPOINT"; exit 0; fi
endpoint=http://127.0.0.1:18292
answers() { curl -s -o /dev/null "$endpoint/" 2>/dev/null; }
if ! answers; then
  venv=target/moto-venv
  if [ ! -x "$venv/bin/moto_server" ]; then
    echo "ensure-s3: installing moto[server] into $venv" >&2
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet "moto[server]==5.1.22" >&2
  fi
  nohup "$venv/bin/moto_server" -H 127.0.0.1 -p 18292 >target/moto.log 2>&1 &
  echo $! > target/moto.pid
  for _ in $(seq 1 100); do answers && break; sleep 0.1; done
  answers || { echo "ensure-s3: the S3 server did not start (target/moto.log)" >&2; exit 1; }
fi
echo "$endpoint"
